#!/bin/sh
# check-twins.sh ROOM... - every CUDA file has its C twin, found by name alone.
#
# The rule (kernels/net/net.h, kernels/seg/seg.h): X.cu beside X_ref.c in
# the same room, the C twin doing the same work on the host (for a kernel
# file: the same functions, ref_ for cu_, with the same arguments less the
# stream; for an executor, backend or tuner: the CPU one behind the same
# API); the GPU tests compare each pair. No exceptions: prints each pair,
# and fails on a .cu without X_ref.c, an X_ref.c without X.cu, or a .cu
# outside kernels/.
set -u
cd "$(dirname "$0")/.."
. tests/room-dir.sh

bad=0
for r in "$@"; do
    d=$(room_dir "$r")
    for cu in "$d"/*.cu; do
        [ -f "$cu" ] || continue
        ref=${cu%.cu}_ref.c
        if [ -f "$ref" ]; then
            echo "  $cu <-> $ref"
        else
            echo "check-twins: $cu has no C twin $ref" >&2
            bad=1
        fi
    done
    for ref in "$d"/*_ref.c; do
        [ -f "$ref" ] || continue
        [ -f "${ref%_ref.c}.cu" ] ||
            { echo "check-twins: $ref has no CUDA twin ${ref%_ref.c}.cu" >&2; bad=1; }
    done
done
# GPU code lives under kernels/ alone
stray=$(git ls-files '*.cu' 2>/dev/null | grep -v '^kernels/')
if [ -n "$stray" ]; then
    echo "check-twins: CUDA files outside kernels/: $stray" >&2
    bad=1
fi
if [ "$bad" -ne 0 ]; then
    echo "check-twins: FAILED" >&2
    exit 1
fi
echo "check-twins: clean"

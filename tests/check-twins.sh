#!/bin/sh
# check-twins.sh ROOM... - every CUDA kernel file has its C twin, by name.
#
# The rule (kernels/net/net.h, kernels/seg/seg.h): X.cu beside X_ref.c in the same room, the
# C twin with the same functions (ref_ for cu_) and arguments less the
# stream; the GPU tests compare each pair. Prints each .cu and its twin, and
# fails when a .cu has no X_ref.c or an X_ref.c has no X.cu, unless the .cu
# is listed below with the reason it has none.
set -u
cd "$(dirname "$0")/.."
. tests/room-dir.sh

# the .cu files without a twin, and why (file: reason)
exceptions='
'

bad=0
for r in "$@"; do
    d=$(room_dir "$r")
    for cu in "$d"/*.cu; do
        [ -f "$cu" ] || continue
        ref=${cu%.cu}_ref.c
        why=$(printf '%s\n' "$exceptions" | sed -n "s|^$cu: ||p")
        if [ -f "$ref" ]; then
            [ -n "$why" ] && { echo "check-twins: $cu has a twin $ref but is listed as an exception" >&2; bad=1; }
            echo "  $cu <-> $ref"
        elif [ -n "$why" ]; then
            echo "  $cu (no twin: $why)"
        else
            echo "check-twins: $cu has no C twin $ref (or a reason in tests/check-twins.sh)" >&2
            bad=1
        fi
    done
    for ref in "$d"/*_ref.c; do
        [ -f "$ref" ] || continue
        [ -f "${ref%_ref.c}.cu" ] ||
            { echo "check-twins: $ref has no CUDA twin ${ref%_ref.c}.cu" >&2; bad=1; }
    done
done
for f in $(printf '%s\n' "$exceptions" | sed -n 's/^\([^:]*\):.*/\1/p'); do
    [ -f "$f" ] || { echo "check-twins: an exception names $f, which is gone" >&2; bad=1; }
done
if [ "$bad" -ne 0 ]; then
    echo "check-twins: FAILED" >&2
    exit 1
fi
echo "check-twins: clean"

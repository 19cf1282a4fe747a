#!/bin/sh
# bundle.sh - a relocatable vrseg: dist/vrseg/{bin,lib,models,configs,systemd,
# deploy} with README.md, plus dist/vrseg-bundle.tar.xz (not with BUNDLE_TAR=0). Binaries find their private lib/ through RPATH
# $ORIGIN/../lib, so the tree runs on any x86-64 Linux with glibc >= this
# machine's, NVIDIA driver libraries (libcuda, libnvcuvid) coming from the host.
# Usage: [DIST=dir] [BUNDLE_TAR=0] deploy/bundle.sh [BINDIR] [extra binaries...]
# On the GPU host: tar xJf vrseg-bundle.tar.xz && vrseg/bin/vr-worker info
set -eu
cd "$(dirname "$0")/.."
BINDIR=${1:-bin}
[ $# -gt 0 ] && shift
DIST=${DIST:-dist}   # several engineers may bundle at once: DIST=dist-NAME
OUT=$DIST/vrseg
rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/lib"
command -v patchelf >/dev/null || { apt-get install -y -qq patchelf >/dev/null; }

# What ships: our binaries (plus any given as arguments: test and benchmark
# binaries) and redis-server (for `vrctl run` on hosts without Redis).
for b in "$BINDIR"/* "$@" /usr/bin/redis-server; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    cp -L "$b" "$OUT/bin/"
done
for b in "$OUT"/bin/*; do
    patchelf --set-rpath '$ORIGIN/../lib' "$b"
done

# The shared-library closure, less glibc and the NVIDIA driver's own.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda\.so|libnvcuvid|libnvidia)'
for b in "$OUT"/bin/*; do ldd "$b" 2>/dev/null; done |
    awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
    while read -r name path; do
        echo "$name" | grep -Eq "$skip" && continue
        cp -L "$path" "$OUT/lib/$name"
    done
for l in "$OUT"/lib/*; do patchelf --set-rpath '$ORIGIN' "$l" 2>/dev/null || true; done
cp -r models configs LICENSE NOTICE README.md "$OUT/"
cp -r deploy/systemd "$OUT/systemd"   # the units expect the tree at /opt/vrseg
# what an operator sets up beside the binaries: the Redis users and the
# check of its version, the Grafana dashboard, Prometheus's alerts, the units
mkdir -p "$OUT/deploy"
cp -r deploy/redis-users.acl deploy/redis-users.md deploy/check-redis.sh deploy/grafana \
    deploy/prometheus deploy/systemd "$OUT/deploy/"
du -sh "$OUT" | sed 's/^/bundle: /'
[ "${BUNDLE_TAR:-1}" = 0 ] && exit 0   # the tree alone (tests)
tar -C "$DIST" -cf - vrseg | xz -T2 -6 > "$DIST/vrseg-bundle.tar.xz"
ls -la "$DIST/vrseg-bundle.tar.xz" | awk '{print "bundle:", $9, $5, "bytes"}'

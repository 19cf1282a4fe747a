#!/bin/sh
# check-systemd.sh - `systemd-analyze verify` of deploy/systemd: the two
# vrseg units and the Redis drop-in, loaded the way a host loads them;
# any line it prints fails the check (unknown keys and bad values are only
# warnings to it, exit 0).
#
# It needs no running systemd (CI containers have none as PID 1): verify
# works offline on a --root tree, which holds the units where a host has
# them (etc/systemd/system/), the stock units they order after (a copy of
# /lib/systemd/system, Debian's redis-server.service among them), and the
# binaries their ExecStart names (verify checks those exist): ours at
# /opt/vrseg/bin, as the bundle is unpacked, and redis-server. Units named
# by a path outside --root would be read from inside it instead, so the
# files are copied in and named there. A self-test first breaks a copy and
# expects the warnings, so a silent verify cannot pass the check.
# Usage: tests/check-systemd.sh [BINDIR]
set -eu
cd "$(dirname "$0")/.."
BINDIR=${1:-bin}
SRC=deploy/systemd

command -v systemd-analyze >/dev/null ||
    { echo "check-systemd: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; }
for b in vr-worker vr-controller; do
    [ -x "$BINDIR/$b" ] || { echo "check-systemd: $BINDIR/$b not built (make all)" >&2; exit 1; }
done
[ -f /lib/systemd/system/redis-server.service ] && [ -x /usr/bin/redis-server ] ||
    { echo "check-systemd: Debian's redis-server not installed (make deps)" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# verify_units DIR ROOT: prints what verify says of DIR's units in ROOT.
verify_units() {
    dir=$1 root=$2
    mkdir -p "$root/usr/lib/systemd" "$root/usr/bin" "$root/opt/vrseg/bin" \
             "$root/etc/systemd/system/redis-server.service.d"
    cp -r /lib/systemd/system "$root/usr/lib/systemd/"
    cp /usr/bin/redis-server "$root/usr/bin/"
    cp "$BINDIR/vr-worker" "$BINDIR/vr-controller" "$root/opt/vrseg/bin/"
    cp "$dir"/*.service "$root/etc/systemd/system/"
    cp "$dir/redis-server.service.d/vrseg.conf" "$root/etc/systemd/system/redis-server.service.d/"
    units=""
    for u in "$root"/etc/systemd/system/*.service; do units="$units $u"; done
    # shellcheck disable=SC2086
    systemd-analyze --man=no --root="$root" verify $units redis-server.service 2>&1 ||
        echo "check-systemd: systemd-analyze verify exited $?"
}

# the self-test: a bad value in each file must be reported
mkdir -p "$TMP/bad"
cp -r "$SRC"/* "$TMP/bad/"
sed -i 's/^Restart=on-failure/Restart=sometimes/' "$TMP/bad/vr-controller.service"
sed -i 's/^KillMode=mixed/KillMode=gently/' "$TMP/bad/vr-worker@.service"
sed -i 's/^\[Service\]/[Service]\nNoSuchKey=1/' "$TMP/bad/redis-server.service.d/vrseg.conf"
bad=$(verify_units "$TMP/bad" "$TMP/root-bad")
for want in "restart specifier.*sometimes" "kill mode.*gently" "NoSuchKey"; do
    echo "$bad" | grep -qi "$want" || {
        echo "check-systemd: self-test: verify did not report a broken unit ($want):" >&2
        echo "$bad" >&2
        exit 1
    }
done

out=$(verify_units "$SRC" "$TMP/root")
if [ -n "$out" ]; then
    echo "check-systemd: systemd-analyze verify of $SRC:" >&2
    echo "$out" >&2
    exit 1
fi
echo "check-systemd: $SRC/*.service and the Redis drop-in verify clean ($(systemd-analyze --version | head -1))"

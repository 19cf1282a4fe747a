#!/bin/sh
# install-deps.sh - installs the Debian packages vrseg builds and tests with.
# Quiet and quick when everything is already there; needs root (or sudo)
# otherwise. Set VR_NO_INSTALL=1 to only report what is missing.
#   install-deps.sh          what `make run` needs: build, run, the sample
#   install-deps.sh --test   that plus what only the tests use (`make test`)
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev
libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
libhiredis-dev libjansson-dev libcurl4-openssl-dev libssl-dev libcriterion-dev
redis-server ffmpeg xz-utils opencv-doc procps"
# libmicrohttpd-dev: the webhook test's receiver (tests/t-controller-webhook.c);
# chromium: the report opened headless (tests/t-cli-report.c); prometheus
# (and its promtool): the scrape test (tests/t-controller-prometheus.c); stunnel4
# and openssl: the TLS tunnel recipe (tests/t-dist-sec-tls.c); systemd: its
# systemd-analyze verifies the units (tests/check-systemd.sh)
TEST_PKGS="libmicrohttpd-dev chromium prometheus stunnel4 openssl systemd faketime nginx libnginx-mod-http-dav-ext"
[ "${1:-}" = --test ] && PKGS="$PKGS $TEST_PKGS"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing"
if [ "${VR_NO_INSTALL:-0}" = 1 ]; then
    echo "deps: VR_NO_INSTALL=1: install them by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root or sudo to install:$missing" >&2; exit 1; }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"

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
# python3-venv: moto's venv below (tests/t-dist-s3-out.c's S3 server)
TEST_PKGS="libmicrohttpd-dev chromium prometheus stunnel4 openssl systemd faketime nginx libnginx-mod-http-dav-ext python3-venv"
[ "${1:-}" = --test ] && PKGS="$PKGS $TEST_PKGS"
MOTO=/opt/vrseg-test/moto

# moto_server, the S3-compatible server tests/util-s3.c starts (signatures
# checked with botocore): Debian 12 does not package moto, so pip puts one
# pinned version into its own venv (root or sudo, as apt).
moto_install() {
    [ "${1:-}" = --test ] && [ ! -x "$MOTO/bin/moto_server" ] && ! command -v moto_server >/dev/null &&
        ! ls /root/.pyenv/versions/*/bin/moto_server >/dev/null 2>&1 || return 0
    echo "deps: installing moto[server] 5.2.1 into $MOTO"
    [ "${VR_NO_INSTALL:-0}" = 1 ] && { echo "deps: VR_NO_INSTALL=1: install it by hand" >&2; return 1; }
    S=""; [ "$(id -u)" != 0 ] && S=sudo
    # PyPI may be out of reach (an offline mirror of Debian only): then the
    # S3 suite skips, saying why, and nothing else is held up.
    if $S python3 -m venv "$MOTO" && $S "$MOTO/bin/pip" install -q --timeout 20 'moto[server]==5.2.1'; then
        return 0
    fi
    echo "deps: warning: moto could not be installed (PyPI unreachable?): the S3 tests will skip" >&2
    $S rm -rf "$MOTO"
    return 0
}

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -z "$missing" ]; then moto_install "${1:-}"; exit $?; fi

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
moto_install "${1:-}"
echo "deps: done"

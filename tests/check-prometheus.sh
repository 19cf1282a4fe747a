#!/bin/sh
# check-prometheus.sh - the shipped alert rules (deploy/prometheus) checked
# by Prometheus' own promtool: syntax and expressions (`check rules`), then
# the cases that must fire and must not (`test rules`). The dashboard's
# queries are checked against a real scrape in tests/t-controller-prometheus.c.
set -eu
cd "$(dirname "$0")/../deploy/prometheus"
command -v promtool >/dev/null || {
    echo "check-prometheus: promtool not found (Debian package prometheus: deploy/install-deps.sh --test)" >&2
    exit 1
}
promtool check rules vrseg-alerts.yml >/dev/null
promtool test rules vrseg-alerts.test.yml >/dev/null
echo "check-prometheus: clean (rules checked, alert cases pass)"

#!/bin/sh
# run-sample.sh - what `make run` shows: the bundled sample through vrseg.
set -eu
cd "$(dirname "$0")/.."
mkdir -p out
bin/vr-worker segment-image --profile balanced tests/data/people.jpg out/people-mask.png
echo "wrote out/people-mask.png (mask of tests/data/people.jpg)"

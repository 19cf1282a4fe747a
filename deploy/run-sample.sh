#!/bin/sh
# run-sample.sh - what `make run` shows: the bundled samples through vrseg.
#  1. the main job: a side-by-side stereo clip with people (cut from
#     opencv's vtest.avi) through `vrctl run`: a private Redis, a
#     controller and workers (one per GPU, or CPU workers without one),
#     split into chunks, segmented, encoded and stitched into one matte;
#  2. one photo through `vr-worker segment-image`.
set -eu
cd "$(dirname "$0")/.."
deploy/check-redis.sh   # says what to do about an unfit Redis
mkdir -p out
bin/vrctl run -y tests/data/video/sbs.mkv -o out/sample-sbs-matte.mkv --chunk-seconds 0.5 --workers 2
echo "wrote out/sample-sbs-matte.mkv (matte of tests/data/video/sbs.mkv)"
bin/vr-worker segment-image --profile balanced tests/data/people.jpg out/people-mask.png
echo "wrote out/people-mask.png (mask of tests/data/people.jpg)"

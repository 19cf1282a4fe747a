#!/bin/sh
# quality-made.sh DATA_DIR OUT.mkv [EYE] - docs/QUALITY.md's `made` clip and
# its truth: people at three distances, both eyes, moving, over a background
# with no person in it.
#
# tests/data/people.jpg is pasted at 1/2, 4/15 and 2/15 of the eye's width
# (480x360, 256x192 and 128x96 in a 960 px eye) over an enlarged, blurred
# crop of tests/data/image/vtest-100.jpg that holds road, grass and a tripod
# but no pedestrian (288x288 at (440,288)); each eye EYE x EYE (default 960),
# the pictures moving 2, 4 and 6 px a frame (at any size), the right eye's copies
# 24, 12 and 6 px to the left (near to far); 12 frames at 10 fps, libx264.
#
# The truth, OUT without .mkv + -truth.mkv: the same filter graph run on
# tests/data/people-truth.png (the person mask of people.jpg, made once at
# full size by `vr-worker segment-image --layout mono --profile quality`)
# over black, so each picture's mask is scaled and placed exactly where the
# picture is, 0 elsewhere; FFV1 gray, lossless. Every offset is even, so
# overlay's chroma rounding places the clip's pictures where the truth's are.
# `vrbench-video quality CLIP --truth TRUTH` measures against it. For made8k:
#   ffmpeg -i OUT.mkv -vf scale=8192:4096:flags=bicubic -frames:v 3 made8k.mkv
# (its truth is the 1920x960 one: the tool samples it to the matte's size).
set -e
D=${1:?data dir (tests/data)}; OUT=${2:?output .mkv}; E=${3:-960}
TRUTH=${OUT%.mkv}-truth.mkv
case $E in *[!0-9]*|'') echo "EYE: a number" >&2; exit 2;; esac
[ $((E % 120)) -eq 0 ] || { echo "EYE: a multiple of 120 (even offsets)" >&2; exit 2; }
# everything in 1/120 of the eye (8 px at 960), then doubled where a step is odd
u=$((E / 120))
s() { echo $(($1 * u / 8 / 2 * 2)); }  # $1 px at 960, even, at this eye
graph() { # $1: background input filter, $2: picture input, $3: output format
cat <<EOF
$1,split=2[bgl][bgr];
[1]$2split=6[a0][b0][c0][a1][b1][c1];
[a0]scale=$(s 480):$(s 360)[na];[b0]scale=$(s 256):$(s 192)[nb];[c0]scale=$(s 128):$(s 96)[nc];
[a1]scale=$(s 480):$(s 360)[ra];[b1]scale=$(s 256):$(s 192)[rb];[c1]scale=$(s 128):$(s 96)[rc];
[bgl][na]overlay=x=$(s 40)+2*n:y=$(s 560)$3[l1];[l1][nb]overlay=x=$(s 600)-4*n:y=$(s 300)$3[l2];[l2][nc]overlay=x=$(s 300)+6*n:y=$(s 200)$3[L];
[bgr][ra]overlay=x=$(s 16)+2*n:y=$(s 560)$3[r1];[r1][rb]overlay=x=$(s 588)-4*n:y=$(s 300)$3[r2];[r2][rc]overlay=x=$(s 294)+6*n:y=$(s 200)$3[R];
EOF
}
ffmpeg -v error -y -loop 1 -framerate 10 -t 1.2 -i $D/image/vtest-100.jpg \
    -loop 1 -framerate 10 -t 1.2 -i $D/people.jpg -filter_complex "
$(graph "[0]crop=288:288:440:288,scale=$E:$E,boxblur=4" "" "")
[L][R]hstack,format=yuv420p[v]" -map "[v]" -frames:v 12 -c:v libx264 -crf 18 $OUT
# the truth: planar RGB all along (gray in, gray out: no range conversion)
ffmpeg -v error -y -f lavfi -i "color=c=black:s=${E}x${E}:r=10:d=1.2" \
    -loop 1 -framerate 10 -t 1.2 -i $D/people-truth.png -filter_complex "
$(graph "[0]format=gbrp" "format=gbrp," ":format=gbrp")
[L][R]hstack,format=gray[v]" -map "[v]" -frames:v 12 -c:v ffv1 -level 3 -coder 1 -context 1 $TRUTH

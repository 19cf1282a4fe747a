#!/bin/sh
# quality-made.sh DATA_DIR OUT.mkv - docs/QUALITY.md's `made` clip: people
# at three distances, both eyes, moving. tests/data/people.jpg pasted at
# 480x360, 256x192 and 128x96 over an enlarged, blurred crop of
# tests/data/image/vtest-100.jpg, each eye 960x960, the pictures moving 2,
# 4 and 6 px a frame, the right eye's copies 24, 12 and 6 px to the left
# (near to far); 12 frames at 10 fps, libx264. For `made8k`:
#   ffmpeg -i OUT.mkv -vf scale=8192:4096:flags=bicubic -frames:v 3 made8k.mkv
set -e
D=${1:?data dir (tests/data)}; OUT=${2:?output .mkv}
ffmpeg -v error -y -loop 1 -framerate 10 -t 1.2 -i $D/image/vtest-100.jpg -loop 1 -framerate 10 -t 1.2 -i $D/people.jpg -filter_complex "
[0]crop=480:480:150:60,scale=960:960,boxblur=4,split=2[bgl][bgr];
[1]split=6[a0][b0][c0][a1][b1][c1];
[a0]scale=480:360[na];[b0]scale=256:192[nb];[c0]scale=128:96[nc];
[a1]scale=480:360[ra];[b1]scale=256:192[rb];[c1]scale=128:96[rc];
[bgl][na]overlay=x=40+2*n:y=560[l1];[l1][nb]overlay=x=600-4*n:y=300[l2];[l2][nc]overlay=x=300+6*n:y=200[L];
[bgr][ra]overlay=x=16+2*n:y=560[r1];[r1][rb]overlay=x=588-4*n:y=300[r2];[r2][rc]overlay=x=294+6*n:y=200[R];
[L][R]hstack,format=yuv420p[v]" -map "[v]" -frames:v 12 -c:v libx264 -crf 18 $OUT

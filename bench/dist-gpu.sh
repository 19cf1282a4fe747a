#!/bin/sh
# dist-gpu.sh - the distributed path on one GPU host: an 8192x4096 60 fps
# HEVC SBS clip (closed 1 s GOPs, ~150 Mbit/s) through `vrctl run` with 1..4
# chunk slots per GPU, against one `vr-worker process` of the same file.
# Usage: bench/dist-gpu.sh BINDIR [FRAMES]   (results also under $OUT)
set -u
B=$1
FRAMES=${2:-600}
R=${OUT:-/tmp/vrdist}
W=/tmp/vrdist-work
mkdir -p "$R" "$W"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=${VR_TUNE_CACHE:-/tmp/vr-tune.json}
log() { echo "$@" | tee -a "$R/dist-gpu.txt"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

CLIP=$W/sbs8k.mkv
[ -f "$CLIP" ] || "$B/vrbench-video" gen tests/data/video/mono.mkv "$CLIP" 8192 4096 60 "$FRAMES" 150 | tee -a "$R/dist-gpu.txt"
"$B/vr-worker" tune > /dev/null 2>&1

t0=$(date +%s.%N)
"$B/vr-worker" process --gpu 0 --profile balanced "$CLIP" -o "$W/one.mkv" > "$R/process.log" 2>&1
t1=$(date +%s.%N)
log "process (1 NVDEC session): $FRAMES frames in $(secs "$t0" "$t1") s: $(awk -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", f / (b - a) }') fps"
for n in ${SLOTS:-1 2 3 4}; do
    t0=$(date +%s.%N)
    timeout 240 "$B/vrctl" run "$CLIP" -o "$W/dist$n.mkv" --per-gpu "$n" --chunk-seconds 2 \
        --keep-temp > "$R/run$n.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    log "vrctl run --per-gpu $n: rc $rc, $FRAMES frames in $(secs "$t0" "$t1") s: $(awk -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", f / (b - a) }') fps (wall, incl. split, stitch and start-up)"
    tr '\r' '\n' < "$R/run$n.log" | grep -E "done|fps|error" | tail -3 | tee -a "$R/dist-gpu.txt"
done

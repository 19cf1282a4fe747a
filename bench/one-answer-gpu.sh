#!/bin/sh
# one-answer-gpu.sh - on a GPU host, from a bundle (deploy/bundle.sh with
# gputests, bench_seg and vrbench-video): the GPU tests, the 8K SBS
# segmentation speed, then the fleet against one process on an 8192x4096
# 60 fps HEVC SBS clip: `vrctl run --per-gpu 3 --chunk-seconds 2` and
# `vr-worker process` with a lossless FFV1 matte and with the default
# encoder, compared frame by frame (vrbench-video diff).
# Usage: bench/one-answer-gpu.sh BINDIR [FRAMES]   (results under $OUT)
set -u
B=$1
FRAMES=${2:-300}
R=${OUT:-/tmp/vr-one}
W=/tmp/vr-one-work
mkdir -p "$R" "$W"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=/tmp/vr-tune.json
log() { echo "$@" | tee -a "$R/summary.txt"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

log "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nproc) cores"
timeout 240 "$B/gputests" -j4 > "$R/test-gpu.log" 2>&1
log "test-gpu: $(grep -E 'Synthesis' "$R/test-gpu.log")"
grep -E "^\[FAIL|Assertion" -A3 "$R/test-gpu.log" | head -30 | tee -a "$R/summary.txt"

timeout 120 "$B/bench_seg" --cases 8k --batches 16 --precisions fp16 > "$R/bench-seg.log" 2>&1
log "bench_seg 8K SBS balanced, 16 frames a call:"
tail -8 "$R/bench-seg.log" | tee -a "$R/summary.txt"

CLIP=$W/sbs8k.mkv
"$B/vrbench-video" gen tests/data/video/mono.mkv "$CLIP" 8192 4096 60 "$FRAMES" 150 > "$R/gen.log" 2>&1
log "clip: $(tail -1 "$R/gen.log")"
"$B/vr-worker" tune > "$R/tune.log" 2>&1

echo '{"encoder": "ffv1"}' > "$W/lossless.json"
echo '{}' > "$W/default.json"
for c in lossless default; do
    t0=$(now)
    timeout 200 "$B/vr-worker" process -y --gpu 0 -c "$W/$c.json" "$CLIP" -o "$W/process-$c.mkv" \
        > "$R/process-$c.log" 2>&1
    rc=$?
    t1=$(now)
    log "$c: process rc $rc, $FRAMES frames in $(secs "$t0" "$t1") s"
    timeout 240 "$B/vrctl" run -y "$CLIP" -o "$W/fleet-$c.mkv" --per-gpu 3 --chunk-seconds 2 \
        -c "$W/$c.json" > "$R/fleet-$c.log" 2>&1
    rc=$?
    t2=$(now)
    log "$c: vrctl run --per-gpu 3 rc $rc, $FRAMES frames in $(secs "$t1" "$t2") s"
    tr '\r' '\n' < "$R/fleet-$c.log" | grep -E "layout|warm-up|done in|error" | tail -4 | tee -a "$R/summary.txt"
    log "$c: fleet vs process: $("$B/vrbench-video" diff "$W/process-$c.mkv" "$W/fleet-$c.mkv" 2>&1)"
done
log "done"

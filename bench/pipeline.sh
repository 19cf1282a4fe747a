#!/bin/sh
# pipeline.sh - `make bench-pipeline`: the video pipeline on one GPU.
#
# Makes an 8192x4096 60 fps HEVC SBS clip (~150 Mbit/s) from real footage
# (tests/data/video/mono.mkv, cut from opencv's vtest.avi, scaled into both
# eyes with grain), then measures in one run:
#   decode-only fps (NVDEC, frames kept on the GPU; 1 and 3 sessions),
#   encode-only fps of matte-like frames at the mattes' sizes (libx264),
#   end-to-end fps of `vr-worker process --gpu 0` (fast and balanced
#   profiles) with the per-stage breakdown (p50/p95/p99).
# Usage: bench/pipeline.sh BINDIR   (results also go to $OUT/ when set)
# Env: FRAMES (180), GPU (0), CLIP (reuse an existing clip), STAGES=0 (only
# the end-to-end runs).
set -eu
BIN=${1:-bin}
cd "$(dirname "$0")/.."
FRAMES=${FRAMES:-180}
GPU=${GPU:-0}
RES=${OUT:-/tmp/vrbench}
mkdir -p "$RES"
W=/tmp/vrbench-work
mkdir -p "$W"
CLIP=${CLIP:-$W/sbs8k_FISHEYE190.mkv}
export VR_DATA_DIR=$PWD
log() { echo "$@" | tee -a "$RES/bench-pipeline.txt"; }

log "== bench-pipeline $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores"
[ -f "$CLIP" ] || timeout 150 "$BIN/vrbench-video" gen tests/data/video/mono.mkv "$CLIP" 8192 4096 60 "$FRAMES" 150 | tee -a "$RES/bench-pipeline.txt"

if [ "${STAGES:-1}" = 1 ]; then
log "-- decode only (NVDEC, frames stay in GPU memory)"
for s in 1 3; do timeout 60 "$BIN/vrbench-video" decode "$CLIP" $s | tee -a "$RES/bench-pipeline.txt"; done

log "-- encode only (matte-like frames, libx264 ultrafast, cores shared among instances)"
timeout 60 "$BIN/vrbench-video" encode "$CLIP" 2048 1024 240 1 | tee -a "$RES/bench-pipeline.txt"
for n in 1 2 4; do timeout 60 "$BIN/vrbench-video" encode "$CLIP" 4096 2048 120 $n | tee -a "$RES/bench-pipeline.txt"; done
fi

log "-- end to end: vr-worker process --gpu $GPU (mask output)"
for p in fast balanced; do
    log "profile $p:"
    timeout 120 "$BIN/vr-worker" process -y --gpu "$GPU" --profile "$p" --metrics "$RES/metrics-$p.json" \
        --trace "$RES/trace-$p.json" "$CLIP" -o "$W/matte-$p.mkv" 2>&1 | tee -a "$RES/bench-pipeline.txt" || true
done

[ "${STAGES:-1}" = 1 ] || exit 0
log "-- several worker processes on one GPU at once (how chunks share a GPU: one NVDEC session each)"
for n in 2 3; do
    t0=$(date +%s.%N)
    for i in $(seq 1 $n); do
        timeout 120 "$BIN/vr-worker" process -y --gpu "$GPU" --profile fast "$CLIP" -o "$W/matte-par$i.mkv" \
            > "$W/par$i.log" 2>&1 &
    done
    wait
    t1=$(date +%s.%N)
    grep -h "^frames" "$W"/par*.log | tee -a "$RES/bench-pipeline.txt"
    log "RESULT e2e_fast_${n}proc_fps $(awk -v n=$n -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n * f / (b - a) }') fps aggregate (wall incl. start-up)"
    rm -f "$W"/par*.log
done

#!/bin/sh
# dist-gpu.sh - the distributed path on one GPU host: an 8192x4096 60 fps
# HEVC SBS clip (closed 1 s GOPs, ~150 Mbit/s) through `vrctl run` with 1..4
# chunk slots per GPU, against one `vr-worker process` of the same file;
# each `vrctl run` once with engines rebuilt per chunk (VR_WARM_ENGINE=0)
# and once kept warm (the default), so the two compare in one run.
# Usage: bench/dist-gpu.sh BINDIR [FRAMES]   (results also under $OUT)
#   SLOTS="1 3" WARM="0 1" PROCESS=1 CHUNK=2 choose what runs.
set -u
B=$1
FRAMES=${2:-600}
R=${OUT:-/tmp/vrdist}
W=/tmp/vrdist-work
mkdir -p "$R" "$W"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=${VR_TUNE_CACHE:-/tmp/vr-tune.json}
log() { echo "$@" | tee -a "$R/dist-gpu.txt"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
fps() { awk -v f="$FRAMES" -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", f / (b - a) }'; }

CLIP=$W/sbs8k.mkv
t0=$(date +%s.%N)
[ -f "$CLIP" ] || "$B/vrbench-video" gen tests/data/video/mono.mkv "$CLIP" 8192 4096 60 "$FRAMES" 150 | tee -a "$R/dist-gpu.txt"
log "clip made in $(secs "$t0" "$(date +%s.%N)") s"
"$B/vr-worker" tune > /dev/null 2>&1

if [ "${PROCESS:-1}" = 1 ]; then
    t0=$(date +%s.%N)
    "$B/vr-worker" process -y --gpu 0 --profile balanced "$CLIP" -o "$W/one.mkv" > "$R/process.log" 2>&1
    t1=$(date +%s.%N)
    log "process (1 NVDEC session): $FRAMES frames in $(secs "$t0" "$t1") s: $(fps "$t0" "$t1") fps"
fi
for n in ${SLOTS:-1 2 3 4}; do
    for warm in ${WARM:-0 1}; do
        t0=$(date +%s.%N)
        VR_WARM_ENGINE=$warm timeout 240 "$B/vrctl" run -y "$CLIP" -o "$W/dist$n-$warm.mkv" \
            --per-gpu "$n" --chunk-seconds "${CHUNK:-2}" --keep-temp > "$R/run$n-$warm.log" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        log "vrctl run --per-gpu $n, warm engine $warm: rc $rc, $FRAMES frames in $(secs "$t0" "$t1") s: $(fps "$t0" "$t1") fps (wall, incl. split, stitch and start-up)"
        tr '\r' '\n' < "$R/run$n-$warm.log" | grep -E "done|fps|error" | tail -2 | tee -a "$R/dist-gpu.txt"
        # the workers' own lines: per-chunk fps and how often the engine stayed warm
        kept=$(sed -n 's/^vrctl run: kept \([^ ]*\) .*/\1/p' "$R/run$n-$warm.log" | tail -1)
        if [ -n "$kept" ]; then
            cat "$kept"/*.log > "$R/workers$n-$warm.log" 2>/dev/null
            grep -hE "frames in .* fps|engine built|set-up" "$kept"/*.log | sed 's/^/    /' | tee -a "$R/dist-gpu.txt"
            rm -rf "$kept"
        fi
    done
done

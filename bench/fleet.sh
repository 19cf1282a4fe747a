#!/bin/sh
# fleet.sh - issue 9's benchmark, from a `make bundle` tree on a GPU host.
# Makes an 8192x4096 60 fps HEVC SBS clip (the generator, GEN frames, then
# stream-copied REPEAT times), measures the ceilings in the same run (NVDEC
# decode-only with 7 sessions on GPU 0, the x264 matte encode on every
# core), then `vrctl run` on 1 GPU and on all GPUs while sampling NVDEC and
# SM (nvidia-smi dmon) and CPU (vmstat), and prints for each run its fps,
# the split / stitch figures, the mean use of each resource and the one that
# limits it.
# Usage: bench/fleet.sh BINDIR   (results under $OUT, summary in fleet.txt)
#   GEN=300 REPEAT=8 PER_GPU="auto 6" CHUNK="auto 2" CURVE=1 SERVE=1 choose
#   what runs ("auto": vrctl run's own choice; SERVE=0 skips the serve runs).
set -u
B=$1
GEN=${GEN:-300}
REPEAT=${REPEAT:-8}
R=${OUT:-/tmp/vrfleet}
W=/tmp/vrfleet-work
mkdir -p "$R" "$W"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=${VR_TUNE_CACHE:-/tmp/vr-tune.json}
log() { echo "$@" | tee -a "$R/fleet.txt"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
NGPU=$(nvidia-smi -L | wc -l)
CORES=$(nproc)

log "host: $NGPU x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $CORES cores"
SHORT=$W/short.mkv CLIP=$W/long.mkv
[ -f "$SHORT" ] || "$B/vrbench-video" gen tests/data/video/mono.mkv "$SHORT" 8192 4096 60 "$GEN" 150 \
    | tee -a "$R/fleet.txt"
[ -f "$CLIP" ] || "$B/vrbench-video" repeat "$SHORT" "$CLIP" "$REPEAT" | tee -a "$R/fleet.txt"
FRAMES=$((GEN * REPEAT))
log "clip: $FRAMES frames, $(du -m "$CLIP" | cut -f1) MB"
"$B/vr-worker" tune > "$R/tune.log" 2>&1

# ---- ceilings ----
"$B/vrbench-video" decode "$SHORT" 7 | tee -a "$R/fleet.txt"
if [ "${CURVE:-1}" = 1 ]; then
    # the matte encode (4096x2048, what 8K SBS balanced writes) on the CPU:
    # fps for 1..all cores, and twelve oversubscribed encoders as the fleet
    # ran them before (each with every core's worth of threads)
    for n in 1 2 4 8 16; do
        [ "$n" -le "$CORES" ] || continue
        "$B/vrbench-video" encode "$SHORT" 4096 2048 $((n * 40)) "$n" libx264 ultrafast 1 \
            | tee -a "$R/fleet.txt"
    done
    "$B/vrbench-video" encode "$SHORT" 4096 2048 480 12 libx264 ultrafast "$CORES" | tee -a "$R/fleet.txt"
    "$B/vrbench-video" encode "$SHORT" 4096 2048 480 "$CORES" libx264 ultrafast 1 | tee -a "$R/fleet.txt"
    "$B/vrbench-video" encode "$SHORT" 2048 1024 480 "$CORES" libx264 ultrafast 1 | tee -a "$R/fleet.txt"
fi

# ---- samplers ----
start_samplers() {
    nvidia-smi dmon -s u -d 1 > "$R/$1.dmon" 2>&1 &
    DMON=$!
    vmstat 1 > "$R/$1.vmstat" 2>&1 &
    VMSTAT=$!
}
stop_samplers() {
    kill "$DMON" "$VMSTAT" 2>/dev/null
    wait "$DMON" "$VMSTAT" 2>/dev/null
    # dmon -s u: gpu sm mem enc dec ...; vmstat: us sy id at 13 14 15
    sm=$(awk '!/^#/ && NF > 4 { s += $2; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.dmon")
    dec=$(awk '!/^#/ && NF > 4 { s += $5; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.dmon")
    cpu=$(awk 'NR > 2 { s += $13 + $14; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.vmstat")
    runq=$(awk 'NR > 2 { s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.vmstat")
    limit="none saturated (start-up, split or stitch)"
    [ "$sm" -ge 85 ] && limit="SM"
    [ "$cpu" -ge 85 ] && limit="CPU (the matte encode)"
    [ "$dec" -ge 85 ] && limit="NVDEC"
    log "    means: NVDEC $dec%, SM $sm%, CPU $cpu% (run queue $runq on $CORES cores): limit $limit"
}

# ---- the fleet ----
run_fleet() { # name gpus per_gpu chunk_seconds
    t0=$(now)
    start_samplers "$1"
    pg=""
    [ "$3" = auto ] || pg="--per-gpu $3"
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$2 timeout 580 "$B/vrctl" run "$CLIP" -o "$W/$1.mkv" $pg \
        --chunk-seconds "$4" --keep-temp > "$R/$1.log" 2>&1
    rc=$?
    t1=$(now)
    stop_samplers "$1"
    fps=$(awk -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", f / (b - a) }')
    log "$1: rc $rc, $FRAMES frames in $(secs "$t0" "$t1") s: $fps fps (wall, all in)"
    tr '\r' '\n' < "$R/$1.log" | grep -E ": done in|chunks of|workers:|error|cannot" | tail -4 | sed 's/^/    /' \
        | tee -a "$R/fleet.txt"
    kept=$(sed -n 's/^vrctl run: kept \([^ ]*\) .*/\1/p' "$R/$1.log" | tail -1)
    if [ -n "$kept" ]; then
        grep -hE "first chunk queued|split in|stitched ahead" "$kept/controller.log" \
            | sed 's/^/    /' | tee -a "$R/fleet.txt"
        grep -h "NVENC:" "$kept"/worker-*.log | head -1 | sed 's/^/    /' | tee -a "$R/fleet.txt"
        grep -h "set-up:" "$kept"/worker-*.log | head -3 | sed 's/^/    /' | tee -a "$R/fleet.txt"
        mkdir -p "$R/$1-logs" && cp "$kept"/*.log "$R/$1-logs/"
        rm -rf "$kept"
    fi
    rm -f "$W/$1.mkv"
}

# Long-lived workers as a fleet runs them: redis-server, one vr-controller
# and `vr-worker serve --gpu all` (its own slots per GPU), started before the
# job and kept; the job is timed from `vrctl submit` to the end of `watch`.
run_serve() { # name gpus
    S=$W/serve-$1
    rm -rf "$S" && mkdir -p "$S/storage"
    "$B/redis-server" --port 0 --unixsocket "$S/r.sock" --save '' --appendonly no \
        --dir "$S" > "$S/redis.log" 2>&1 &
    RPID=$!
    U=unix://$S/r.sock
    for _ in $(seq 50); do [ -S "$S/r.sock" ] && break; sleep 0.1; done
    "$B/vr-controller" --redis "$U" --storage "$S/storage" --input-root "$W" --output-root "$S" \
        > "$R/$1-controller.log" 2>&1 &
    CPID=$!
    CUDA_VISIBLE_DEVICES=$2 "$B/vr-worker" serve --redis "$U" --storage "$S/storage" --gpu all \
        > "$R/$1-workers.log" 2>&1 &
    WPID=$!
    sleep 3 # the workers register; their CUDA start is not the job's
    t0=$(now)
    start_samplers "$1"
    id=$("$B/vrctl" submit "$CLIP" -o "$S/out.mkv" --redis "$U" 2> "$R/$1.log")
    timeout 580 "$B/vrctl" watch "$id" --redis "$U" >> "$R/$1.log" 2>&1
    rc=$?
    t1=$(now)
    stop_samplers "$1"
    fps=$(awk -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", f / (b - a) }')
    log "$1: rc $rc, $FRAMES frames in $(secs "$t0" "$t1") s: $fps fps (submit to done)"
    grep -hE "per GPU on|chunks of|stitched ahead" "$R/$1-workers.log" "$R/$1-controller.log" \
        | head -3 | sed 's/^/    /' | tee -a "$R/fleet.txt"
    kill "$WPID" "$CPID" 2>/dev/null
    wait "$WPID" "$CPID" 2>/dev/null
    kill "$RPID" 2>/dev/null
    wait "$RPID" 2>/dev/null
    rm -rf "$S"
}

ALL=$(seq -s, 0 $((NGPU - 1)))
if [ "${SERVE:-1}" = 1 ]; then
    run_serve 1gpu-serve 0
    [ "$NGPU" -gt 1 ] && run_serve "${NGPU}gpu-serve" "$ALL"
fi
for c in ${CHUNK:-auto 2}; do
    for p in ${PER_GPU:-auto 6}; do
        run_fleet "1gpu-per$p-chunk$c" 0 "$p" "$c"
        [ "$NGPU" -gt 1 ] && run_fleet "${NGPU}gpu-per$p-chunk$c" "$ALL" "$p" "$c"
    done
done
log "done"

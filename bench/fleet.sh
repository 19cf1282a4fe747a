#!/bin/sh
# fleet.sh - the fleet benchmark (`make bench-fleet`), from a `make bundle`
# tree on a GPU host. Makes an 8192x4096 60 fps HEVC SBS clip (the
# generator, GEN frames, stream-copied REPEAT times; with audio when the
# generator's source has it), measures the ceilings in the same run (NVDEC
# decode-only with 7 sessions on GPU 0, the x264 matte encode on every
# core), then:
#   - a warm serve fleet (redis-server, one vr-controller, `vr-worker serve
#     --gpu all` started before the job) on 1, 2, 4, ... GPUs (every power
#     of two up to the host's count), the job timed from `vrctl submit` to
#     the end of `watch`;
#   - `vrctl run` with its defaults on all GPUs;
#   - with FRESH=1 (the default), issue 43's warm fleet: a serve fleet of
#     all GPUs started (--warm-from the short clip) right as the first job
#     is submitted, the same job again right after, and again after IDLE
#     (60) s idle; each with the mean time to the first decoded frame of
#     its chunks (the workers' set-up lines);
#   - with FRESH_READY=1 (the default), a fresh fleet whose first job is
#     submitted once every worker has warmed (started ahead of its work),
#     and the same job again;
#   - with LATE=1 (the default, on hosts of 2 or more GPUs), issue 44's
#     late fleet: GPU 0's workers up at submit, the others' 5 s later;
#   - with LONG=1, a 10-minute clip (36 000 frames) on the serve fleet of
#     all GPUs;
# and prints for each run its fps, the scaling against 1 GPU, the plan's
# time and how the job was chunked, the bytes the fleet read and wrote, the
# mean NVDEC / SM / CPU use and the resource that limits it.
# Usage: bench/fleet.sh BINDIR   (the summary in $OUT/fleet.txt, every log and
#   sampler trace in $OUT/fleet-logs.tar.gz)
#   GEN=300 REPEAT=48 LONG=0 RUN=1 FRESH=1 FRESH_READY=1 IDLE=60 GPUS="1 2 4" choose what runs; WARM=1 warms
#   the serve fleet with a job of 1 s chunks (one for every slot) before the
#   timed one; CEIL=0 skips the ceilings; WORKER_ARGS are given to
#   `vr-worker serve` (e.g. "--encode-threads 4"). SLOT_MODES="processes
#   threads" runs the warm serve rows, the FRESH runs and `vrctl run` once per
#   `serve --slot-mode` (rows 2gpu-serve[threads], ...); unset: once, with
#   serve's default mode.
set -u
B=$1
GEN=${GEN:-300}
REPEAT=${REPEAT:-48}
OUTDIR=${OUT:-/tmp/vrfleet}
W=/tmp/vrfleet-work
R=$W/logs
mkdir -p "$OUTDIR" "$W" "$R"
: > "$OUTDIR/fleet.txt"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=${VR_TUNE_CACHE:-/tmp/vr-tune.json}
log() { echo "$@" | tee -a "$OUTDIR/fleet.txt"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
NGPU=$(nvidia-smi -L | wc -l)
CORES=$(nproc)
if [ -z "${GPUS:-}" ]; then
    GPUS=1
    n=2
    while [ "$n" -le "$NGPU" ]; do GPUS="$GPUS $n"; n=$((n * 2)); done
fi

log "host: $NGPU x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $CORES cores"
SHORT=$W/short.mkv CLIP=$W/clip.mkv
[ -f "$SHORT" ] || "$B/vrbench-video" gen tests/data/video/mono.mkv "$SHORT" 8192 4096 60 "$GEN" 150 \
    | tee -a "$OUTDIR/fleet.txt"
[ -f "$CLIP" ] || "$B/vrbench-video" repeat "$SHORT" "$CLIP" "$REPEAT" | tee -a "$OUTDIR/fleet.txt"
FRAMES=$((GEN * REPEAT))
log "clip: $FRAMES frames, $(du -m "$CLIP" | cut -f1) MB"
WARMCLIP=$W/warm.mkv
[ "${WARM:-1}" = 0 ] || [ -f "$WARMCLIP" ] ||
    "$B/vrbench-video" repeat "$SHORT" "$WARMCLIP" $(( (8 * NGPU * 60 + GEN - 1) / GEN + 1 )) > /dev/null
"$B/vr-worker" tune > "$R/tune.log" 2>&1

# ---- ceilings ----
if [ "${CEIL:-1}" = 1 ]; then
    # 7 sessions of 4x the short clip each: their open and first frame are
    # a few per cent of the time, not a third
    CEILCLIP=$W/ceil.mkv
    [ -f "$CEILCLIP" ] || "$B/vrbench-video" repeat "$SHORT" "$CEILCLIP" 4 > /dev/null
    "$B/vrbench-video" decode "$CEILCLIP" 7 | tee -a "$OUTDIR/fleet.txt"
    # one single-threaded encoder a core, 16 frames each at least
    "$B/vrbench-video" encode "$SHORT" 4096 2048 $((CORES * 16 > 480 ? CORES * 16 : 480)) \
        "$CORES" libx264 ultrafast 1 2>&1 |
        tee -a "$OUTDIR/fleet.txt"
fi

# ---- samplers ----
start_samplers() {
    nvidia-smi dmon -s u -d 1 > "$R/$1.dmon" 2>&1 &
    DMON=$!
    vmstat 1 > "$R/$1.vmstat" 2>&1 &
    VMSTAT=$!
}
stop_samplers() { # name gpus: means over the GPUs the run used
    kill "$DMON" "$VMSTAT" 2>/dev/null
    wait "$DMON" "$VMSTAT" 2>/dev/null
    # dmon -s u: gpu sm mem enc dec ...; vmstat: us sy id at 13 14 15
    sm=$(awk -v g="$2" '!/^#/ && NF > 4 && $1 < g { s += $2; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.dmon")
    dec=$(awk -v g="$2" '!/^#/ && NF > 4 && $1 < g { s += $5; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.dmon")
    cpu=$(awk 'NR > 2 { s += $13 + $14; n++ } END { printf "%.0f", n ? s / n : 0 }' "$R/$1.vmstat")
    limit="none saturated (start-up, plan or stitch)"
    [ "$sm" -ge 85 ] && limit="SM"
    [ "$cpu" -ge 85 ] && limit="CPU (the matte encode)"
    [ "$dec" -ge 85 ] && limit="NVDEC"
    MEANS="NVDEC $dec%, SM $sm%, CPU $cpu%: limit $limit"
}

# Bytes read and written by the processes named (/proc/PID/io rchar and
# wchar: what they asked of the kernel, page cache included).
io_sum() { # field pids...
    f=$1
    shift
    for p in "$@"; do sed -n "s/^$f: //p" "/proc/$p/io" 2>/dev/null; done | awk '{ s += $1 } END { print s + 0 }'
}
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1048576 }'; }

BASE_FPS=
report() { # name frames t0 t1 rc
    fps=$(awk -v f="$2" -v a="$3" -v b="$4" 'BEGIN { printf "%.1f", f / (b - a) }')
    BASE_FPS=${BASE_FPS:-$fps}
    scale=$(awk -v a="$fps" -v b="$BASE_FPS" 'BEGIN { printf "%.2f", a / b }')
    log "$1: rc $5, $2 frames in $(secs "$3" "$4") s: $fps fps, x$scale of 1 GPU; $MEANS"
}

# ---- a serve fleet: its redis-server and controller (S, U, RPID, CPID),
# the workers (WPID) started by the caller ----
fleet_up() { # name
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
}
fleet_down() {
    kill "$WPID" "$CPID" 2>/dev/null
    wait "$WPID" "$CPID" 2>/dev/null
    kill "$RPID" 2>/dev/null
    wait "$RPID" 2>/dev/null
    rm -rf "$S"
}

# Waits (90 s at most) until every worker of a serve log has said it is
# ready: warmed, or not warming (N workers per GPU on M GPUs).
wait_ready() { # workers-log
    for _ in $(seq 900); do
        want=$(sed -n 's/.* \([0-9]*\) workers per GPU on \([0-9]*\) GPU.*/\1 \2/p' "$1" | head -1 |
            awk '{ print $1 * $2 }')
        got=$(grep -c ': ready (' "$1")
        [ -n "$want" ] && [ "$got" -ge "$want" ] && return 0
        sleep 0.1
    done
    log "    (not every worker was ready after 90 s: $got of ${want:-?})"
}

# ---- serve --slot-mode: SLOT_MODE (set by the loop below over SLOT_MODES)
# names the rows ("2gpu-serve[threads]") and the files ("2gpu-serve-threads");
# MODE_ARGS are given to `vr-worker serve` ----
SLOT_MODE=
MODE_ARGS=
row_label() { echo "$1${SLOT_MODE:+[$SLOT_MODE]}"; }
row_file() { echo "$1${SLOT_MODE:+-$SLOT_MODE}"; }

# ---- the warm serve fleet ----
run_serve() { # name ngpus clip frames
    label=$(row_label "$1")
    set -- "$(row_file "$1")" "$2" "$3" "$4"
    fleet_up "$1"
    devs=$(seq -s, 0 $(($2 - 1)))
    # shellcheck disable=SC2086
    # --warm-from: every slot makes its decoder before it takes a chunk; the
    # warm job alone reached 10 of 32 slots on 2 GPUs (docs/PERF.md, "2 GPUs
    # against 1 in one run")
    CUDA_VISIBLE_DEVICES=$devs "$B/vr-worker" serve --redis "$U" --storage "$S/storage" \
        --input-root "$W" --gpu all --warm-from "$SHORT" $MODE_ARGS ${WORKER_ARGS:-} \
        > "$R/$1-workers.log" 2>&1 &
    WPID=$!
    wait_ready "$R/$1-workers.log" # the workers warm; their start is not the job's
    if [ "${WARM:-1}" = 1 ]; then # a chunk for slots: engines, x264 warm
        wid=$("$B/vrctl" submit "$WARMCLIP" -o "$S/warm.mkv" --chunk-seconds 1 --redis "$U" 2>> "$R/$1.log")
        timeout 300 "$B/vrctl" watch "$wid" --redis "$U" > /dev/null 2>&1
        rm -f "$S/warm.mkv"
    fi
    pids="$CPID $(pgrep -f "vr-worker serve --redis $U" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    r0=$(io_sum rchar $pids) w0=$(io_sum wchar $pids)
    from=$(wc -l < "$R/$1-workers.log")
    t0=$(now)
    start_samplers "$1"
    id=$("$B/vrctl" submit "$3" -o "$S/out.mkv" --redis "$U" 2> "$R/$1.log")
    timeout 580 "$B/vrctl" watch "$id" --redis "$U" >> "$R/$1.log" 2>&1
    rc=$?
    t1=$(now)
    stop_samplers "$1" "$2"
    # shellcheck disable=SC2086
    r1=$(io_sum rchar $pids) w1=$(io_sum wchar $pids)
    report "$label" "$4" "$t0" "$t1" "$rc"
    log "    first decoded frame, mean per chunk: $(first_decoded "$R/$1-workers.log" "$from")"
    out=$(stat -c %s "$S/out.mkv" 2>/dev/null || echo 0)
    log "    source $(mb "$(stat -c %s "$3")"); the fleet read $(mb $((r1 - r0))), wrote $(mb $((w1 - w0))) (output $(mb "$out"))"
    grep -hE "planned|copy split|split in|per GPU on|chunks of|stitched ahead" \
        "$R/$1-workers.log" "$R/$1-controller.log" | head -5 | sed 's/^/    /' | tee -a "$OUTDIR/fleet.txt"
    fleet_down
}

# ---- issue 43: a fresh fleet's first job, the same again, after idle ----
# The mean "first decoded" of the set-up lines the workers logged after line
# $2 of their log $1 (ms from each chunk's start): the first frame out of
# the decoder after the pre-roll's dropped frames, a warm-up frame of the
# temporal hold as a rule; then "first output decoded", the first frame
# that is output (after the warm-up frames).
# Then where a chunk's time to it goes: the means of the set-up steps (ms
# from the chunk's start), the pre-roll frames decoded only to be dropped,
# and how the chunks' inputs got their decoders.
first_decoded() { # log from-line
    tail -n +"$(($2 + 1))" "$1" | grep ': set-up: ' | awk '
        function num(re,   m) { return match($0, re "[0-9]+") ? substr($0, RSTART + length(re), RLENGTH - length(re)) + 0 : 0 }
        { n++; fd += num("first decoded "); fo += num("first output decoded ")
          io += num("input open "); eo += num("encoder open ")
          bu += num("buffers "); pre += num("pre-roll: "); wu += num("and dropped, ")
          if (/its decoder the last/ || /kept from the last/) kept++; else if (/decoder warmed/) warm++; else new++ }
        END { m = n ? n : 1; printf "%.0f ms over %d chunks (first output frame, after the warm-up: %.0f ms; " \
              "set-up means: input open %.0f, encoder open %.0f, " \
              "buffers %.0f ms; pre-roll %.1f frames decoded and dropped, %.1f warm-up; decoders: %d new, %d kept, " \
              "%d warmed)", fd / m, n, fo / m, io / m, eo / m, bu / m, pre / m, wu / m, new, kept, warm }'
}

run_fresh() { # name ngpus clip frames [ready]
    label=$(row_label "$1")
    ready=${5:-}
    set -- "$(row_file "$1")" "$2" "$3" "$4"
    fleet_up "$1"
    wlog=$R/$1-workers.log
    # the job is submitted as the fleet starts: its start-up, warm-up and
    # the plan overlap, as for a user's first job; with `ready`, once every
    # worker has warmed (a fleet started ahead of its work), timed from
    # the submit
    t0=$(now)
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $(($2 - 1))) "$B/vr-worker" serve --redis "$U" \
        --storage "$S/storage" --input-root "$W" --gpu all --warm-from "$SHORT" \
        $MODE_ARGS ${WORKER_ARGS:-} > "$wlog" 2>&1 &
    WPID=$!
    rows="first again idle"
    if [ -n "$ready" ]; then
        wait_ready "$wlog"
        log "    every worker ready $(secs "$t0" "$(now)") s after the fleet started"
        t0=$(now)
        rows="first again"
    fi
    for k in $rows; do
        if [ "$k" = idle ]; then sleep "${IDLE:-60}"; t0=$(now); fi
        [ "$k" = again ] && t0=$(now)
        from=$(wc -l < "$wlog")
        start_samplers "$1-$k"
        id=$("$B/vrctl" submit "$3" -o "$S/out.mkv" --redis "$U" 2> "$R/$1-$k.log")
        timeout 580 "$B/vrctl" watch "$id" --redis "$U" >> "$R/$1-$k.log" 2>&1
        rc=$?
        t1=$(now)
        stop_samplers "$1-$k" "$2"
        report "$label ($k)" "$4" "$t0" "$t1" "$rc"
        log "    first decoded frame, mean per chunk: $(first_decoded "$wlog" "$from")"
        rm -f "$S/out.mkv"
    done
    grep -hE "warmed for|not warmed" "$wlog" | head -3 | sed 's/^/    /' | tee -a "$OUTDIR/fleet.txt"
    fleet_down
}

# ---- issue 44: one GPU's workers up at submit, the other GPUs' 5 s later ----
# Elastic chunks: the job is planned for the first GPU's slots; the cuts hand
# the late GPUs work. Compare with the warm serve fleet of every GPU.
run_late() { # name ngpus clip frames
    fleet_up "$1"
    CUDA_VISIBLE_DEVICES=0 "$B/vr-worker" serve --redis "$U" --storage "$S/storage" \
        --input-root "$W" --gpu all --warm-from "$SHORT" ${WORKER_ARGS:-} \
        > "$R/$1-workers.log" 2>&1 &
    WPID=$!
    wait_ready "$R/$1-workers.log" # the first GPU's workers register and warm
    t0=$(now)
    start_samplers "$1"
    id=$("$B/vrctl" submit "$3" -o "$S/out.mkv" --redis "$U" 2> "$R/$1.log")
    sleep 5
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$(seq -s, 1 $(($2 - 1))) "$B/vr-worker" serve --redis "$U" \
        --storage "$S/storage" --input-root "$W" --gpu all --warm-from "$SHORT" \
        ${WORKER_ARGS:-} > "$R/$1-late-workers.log" 2>&1 &
    LPID=$!
    timeout 580 "$B/vrctl" watch "$id" --redis "$U" >> "$R/$1.log" 2>&1
    rc=$?
    t1=$(now)
    stop_samplers "$1" "$2"
    report "$1" "$4" "$t0" "$t1" "$rc"
    log "    cuts: $(grep -c ' cut at ' "$R/$1-controller.log")"
    grep -hE "chunks of|planned" "$R/$1-controller.log" | head -2 | sed 's/^/    /' \
        | tee -a "$OUTDIR/fleet.txt"
    kill "$LPID" 2>/dev/null
    wait "$LPID" 2>/dev/null
    fleet_down
}

# ---- vrctl run, everything in one command ----
run_fleet() { # name ngpus
    label=$(row_label "$1")
    set -- "$(row_file "$1")" "$2"
    t0=$(now)
    start_samplers "$1"
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $(($2 - 1))) timeout 580 "$B/vrctl" run -y "$CLIP" \
        -o "$W/$1.mkv" --keep-temp $MODE_ARGS > "$R/$1.log" 2>&1
    rc=$?
    t1=$(now)
    stop_samplers "$1" "$2"
    report "$label" "$FRAMES" "$t0" "$t1" "$rc"
    tr '\r' '\n' < "$R/$1.log" | grep -E ": done in|workers:|into the run|fleet stopped|error|cannot" | tail -4 \
        | sed 's/^/    /' | tee -a "$OUTDIR/fleet.txt"
    kept=$(sed -n 's/^vrctl run: kept \([^ ]*\) .*/\1/p' "$R/$1.log" | tail -1)
    [ -n "$kept" ] && grep -hE "planned|copy split|stitched ahead" "$kept/controller.log" \
        | sed 's/^/    /' | tee -a "$OUTDIR/fleet.txt" && rm -rf "$kept"
    rm -f "$W/$1.mkv"
}

for mode in ${SLOT_MODES:-default}; do
    SLOT_MODE='' MODE_ARGS=''
    [ "$mode" = default ] || { SLOT_MODE=$mode; MODE_ARGS="--slot-mode $mode"; }
    for n in $GPUS; do
        [ "$n" -le "$NGPU" ] && run_serve "${n}gpu-serve" "$n" "$CLIP" "$FRAMES"
    done
    [ "${FRESH:-1}" = 1 ] && run_fresh "${NGPU}gpu-serve-fresh" "$NGPU" "$CLIP" "$FRAMES"
    [ "${FRESH_READY:-1}" = 1 ] && run_fresh "${NGPU}gpu-serve-fresh-ready" "$NGPU" "$CLIP" "$FRAMES" ready
    [ "${RUN:-1}" = 1 ] && run_fleet "${NGPU}gpu-vrctl-run" "$NGPU"
done
SLOT_MODE='' MODE_ARGS=''
[ "${LATE:-1}" = 1 ] && [ "$NGPU" -gt 1 ] && run_late "${NGPU}gpu-serve-late" "$NGPU" "$CLIP" "$FRAMES"
if [ "${LONG:-0}" = 1 ]; then
    LONGCLIP=$W/ten-minutes.mkv
    [ -f "$LONGCLIP" ] || "$B/vrbench-video" repeat "$SHORT" "$LONGCLIP" $((36000 / GEN)) \
        | tee -a "$OUTDIR/fleet.txt"
    run_serve "${NGPU}gpu-serve-10min" "$NGPU" "$LONGCLIP" $((36000 / GEN * GEN))
fi
log "done"
tar -C "$W" -czf "$OUTDIR/fleet-logs.tar.gz" logs

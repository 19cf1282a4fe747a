#!/bin/sh
# alpha.sh - the passthrough benchmark (`make bench-alpha`), from a `make
# bundle` tree on a GPU host: `vrctl run --output alpha` (the picture with
# its matte packed in, re-encoded whole on the CPU where the GPU has no
# NVENC) beside the host's own ceiling for that encode, measured in the same
# run: `vrbench-video encode-picture` of the clip's 8K pictures on every
# core with the pipeline's encoder settings, split into 1, 2, 4, ... encoders
# (the best split is the ceiling). Also the encoder settings a packed output
# could use, each with its fps, bitrate and PSNR against the source.
# Usage: bench/alpha.sh BINDIR   (the summary in $OUT/alpha.txt, logs in
#   $OUT/alpha-logs.tar.gz)
#   GEN=120 REPEAT=5 choose the clip; SPLITS="1 2 4 ..." the encoder counts
#   tried for the ceiling (default every power of two up to the cores) (GEN frames generated, stream-copied
#   REPEAT times); RUNS="auto" lists the runs: "auto" is `vrctl run`'s
#   defaults, any other word is passed to it as options with _ for spaces
#   (e.g. "--per-gpu_4"); QUALITY=0 skips the encoder settings table.
set -u
B=$1
GEN=${GEN:-120}
REPEAT=${REPEAT:-5}
OUTDIR=${OUT:-/tmp/vralpha}
W=/tmp/vralpha-work
R=$W/logs
mkdir -p "$OUTDIR" "$W" "$R"
: > "$OUTDIR/alpha.txt"
export VR_DATA_DIR=$PWD VR_TUNE_CACHE=${VR_TUNE_CACHE:-/tmp/vr-tune.json}
log() { echo "$@" | tee -a "$OUTDIR/alpha.txt"; }
# CPU busy (us + sy) from a vmstat 1 trace: the mean over the whole run, and
# over its working phase (from the first second above half busy to the last)
cpu_busy() {
    awk 'NR > 2 { b[++n] = $13 + $14 } END {
        for (i = 1; i <= n; i++) { s += b[i]; if (b[i] > 50) { if (!f) f = i; l = i } }
        for (i = f; f && i <= l; i++) w += b[i]
        printf "%.0f%% (%.0f%% working)", n ? s / n : 0, f ? w / (l - f + 1) : 0 }' "$1"
}
now() { date +%s.%N; }
NGPU=$(nvidia-smi -L | wc -l)
CORES=$(nproc)
log "host: $NGPU x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $CORES cores, $(date -u +%F)"
SHORT=$W/short_sbs.mkv CLIP=$W/clip_sbs.mkv
[ -f "$SHORT" ] || "$B/vrbench-video" gen tests/data/video/mono.mkv "$SHORT" 8192 4096 60 "$GEN" 150 \
    | tee -a "$OUTDIR/alpha.txt"
[ -f "$CLIP" ] || "$B/vrbench-video" repeat "$SHORT" "$CLIP" "$REPEAT" > /dev/null
FRAMES=$((GEN * REPEAT))
log "clip: $FRAMES frames of 8192x4096 60 fps SBS HEVC, $(du -m "$CLIP" | cut -f1) MB"

# ---- the ceiling: the picture encode alone on every core ----
CEIL=0
SPLITS=${SPLITS:-$(n=1; while [ "$n" -le "$CORES" ]; do printf '%d ' "$n"; n=$((n * 2)); done)}
for n in $SPLITS; do
    vmstat 1 > "$R/ceiling-$n.vmstat" 2>&1 &
    VMSTAT=$!
    line=$("$B/vrbench-video" encode-picture "$SHORT" $((n * 24 > 96 ? n * 24 : 96)) "$n" libx265 ultrafast 2>&1 | head -1)
    kill "$VMSTAT" 2>/dev/null
    wait "$VMSTAT" 2>/dev/null
    log "$line; CPU $(cpu_busy "$R/ceiling-$n.vmstat") busy"
    fps=$(echo "$line" | awk '/^RESULT/ { print $3 }')
    CEIL=$(awk -v a="$CEIL" -v b="${fps:-0}" 'BEGIN { print (b > a) ? b : a }')
done
log "ceiling: $CEIL fps (libx265 ultrafast crf 23, the best split of $CORES cores)"

# ---- what other settings would cost and give ----
if [ "${QUALITY:-1}" = 1 ]; then
    split=$((CORES / 4 > 0 ? CORES / 4 : 1))
    for enc in "libx265 ultrafast 23" "libx265 superfast 23" "libx265 ultrafast 26" \
        "libx264 ultrafast 23" "libx264 superfast 23"; do
        # shellcheck disable=SC2086
        set -- $enc
        "$B/vrbench-video" encode-picture "$SHORT" $((split * 24)) "$split" "$1" "$2" \
            $((CORES / split)) "$3" 2>&1 | grep RESULT | tee -a "$OUTDIR/alpha.txt"
    done
fi

# ---- the product: vrctl run --output alpha ----
# untimed first: the tune cache, the encoder probe and the page cache are
# then warm for every timed run alike
"$B/vrctl" run "$SHORT" -o "$W/warm_alpha.mkv" --output alpha --alpha-area corners -y > "$R/warm.log" 2>&1
rm -f "$W/warm_alpha.mkv"
for run in ${RUNS:-auto}; do
    args=
    [ "$run" = auto ] || args=$(echo "$run" | tr _ ' ')
    vmstat 1 > "$R/$run.vmstat" 2>&1 &
    VMSTAT=$!
    t0=$(now)
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-590}" "$B/vrctl" run "$CLIP" -o "$W/out_alpha.mkv" --output alpha --alpha-area corners -y $args --keep-temp \
        > "$R/$run.log" 2>&1
    rc=$?
    t1=$(now)
    kill "$VMSTAT" 2>/dev/null
    wait "$VMSTAT" 2>/dev/null
    cpu=$(cpu_busy "$R/$run.vmstat")
    fps=$(awk -v f="$FRAMES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", f / (b - a) }')
    log "vrctl run --output alpha ${args:-(defaults)}: rc $rc, $fps fps," \
        "$(awk -v a="$fps" -v c="$CEIL" 'BEGIN { printf "%.0f", (c > 0 ? 100 * a / c : 0) }')% of the" \
        "ceiling, CPU $cpu busy"
    tr '\r' '\n' < "$R/$run.log" | grep -E "chunks of|workers:|encoder|error|cannot" | head -4 \
        | sed 's/^/    /' | tee -a "$OUTDIR/alpha.txt"
    kept=$(sed -n 's/^vrctl run: kept \([^ ]*\) .*/\1/p' "$R/$run.log" | tail -1)
    [ -n "$kept" ] && mkdir -p "$R/$run" && cp "$kept"/*.log "$R/$run/" 2>/dev/null && rm -rf "$kept"
    rm -f "$W/out_alpha.mkv"
done
log "done"
tar -C "$W" -czf "$OUTDIR/alpha-logs.tar.gz" logs

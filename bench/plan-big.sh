#!/bin/sh
# plan-big.sh - how soon a big source runs (`make bench-plan`; CPU only).
# Makes a ~1.2 GB Matroska (and MP4) source by stream-copying a short,
# high-rate clip end to end, then for each: starts a private redis-server,
# one vr-controller and one CPU worker, submits the source and polls
# `vrctl status --json` until a chunk runs. Prints the plan's own time and
# bytes read (the controller's log), the time from `vrctl submit` to the
# first running chunk, and what the job wrote under the storage root by
# then (a range job: nothing; a copy split: the chunks cut so far).
# Usage: bench/plan-big.sh BINDIR [WORKDIR]   CHUNKING=auto|copy
set -u
B=$(cd "$1" && pwd)
W=${2:-/tmp/vrplan-work}
mkdir -p "$W"
export VR_DATA_DIR=${VR_DATA_DIR:-$PWD}
now() { date +%s.%N; }

SHORT=$W/short.mkv
[ -f "$SHORT" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=60 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 10 -c:v libx264 -preset ultrafast \
    -g 60 -keyint_min 60 -sc_threshold 0 -b:v 60M -maxrate 60M -bufsize 60M -pix_fmt yuv420p \
    -c:a aac "$SHORT"
for ext in mkv mp4; do
    BIG=$W/big.$ext
    if [ ! -f "$BIG" ]; then
        times=$(( (1200 << 20) / $(stat -c %s "$SHORT") + 1 ))
        if [ "$ext" = mkv ]; then
            "$B/vrbench-video" repeat "$SHORT" "$BIG" "$times" > /dev/null
        else
            ffmpeg -v error -y -i "$W/big.mkv" -c copy "$BIG"
        fi
    fi
    S=$W/fleet-$ext
    rm -rf "$S" && mkdir -p "$S/storage"
    redis-server --port 0 --unixsocket "$S/r.sock" --save '' --appendonly no --dir "$S" \
        > "$S/redis.log" 2>&1 &
    RPID=$!
    U=unix://$S/r.sock
    for _ in $(seq 50); do [ -S "$S/r.sock" ] && break; sleep 0.1; done
    "$B/vr-controller" --redis "$U" --storage "$S/storage" --input-root "$W" --output-root "$S" \
        > "$S/controller.log" 2>&1 &
    CPID=$!
    "$B/vr-worker" serve --redis "$U" --storage "$S/storage" --input-root "$W" --cpu \
        > "$S/worker.log" 2>&1 &
    WPID=$!
    sleep 2
    t0=$(now)
    id=$("$B/vrctl" submit "$BIG" -o "$S/out.mkv" --redis "$U" --profile fast \
         --chunking "${CHUNKING:-auto}" 2>> "$S/submit.log")
    running=
    for _ in $(seq 600); do
        js=$("$B/vrctl" status "$id" --json --redis "$U" 2>/dev/null)
        r=$(echo "$js" | sed -n 's/.*"chunks_running": *\([0-9]*\).*/\1/p')
        if [ -n "$r" ] && [ "$r" -gt 0 ]; then running=$(now); break; fi
        sleep 0.05
    done
    total=$(echo "$js" | sed -n 's/.*"chunks_total": *\([0-9]*\).*/\1/p')
    written=$(du -sb "$S/storage" | cut -f1)
    size=$(stat -c %s "$BIG")
    echo "$ext: source $((size >> 20)) MB; $(grep -hoE '(planned|split) .*' "$S/controller.log" | head -1)"
    if [ -n "$running" ]; then
        awk -v a="$t0" -v b="$running" -v t="$total" -v w="$written" 'BEGIN {
            printf "    first chunk running %.2f s after submit; chunks_total then %s; storage %.1f MB\n",
                   b - a, t, w / 1048576 }'
    else
        echo "    no chunk ran within 30 s"
    fi
    # where the time went: the submit, the plan, the first chunk taken
    date -d "@$t0" +"    submitted %H:%M:%S.%3N"
    grep -hE "planned|copy split|first chunk queued" "$S/controller.log" | head -2 | cut -c12-23,48-140 | sed 's/^/    /'
    grep -hE "attempt 1" "$S/worker.log" | head -1 | cut -c12-23,41-120 | sed 's/^/    /'
    "$B/vrctl" cancel "$id" --redis "$U" > /dev/null 2>&1
    kill "$WPID" "$CPID" 2>/dev/null
    wait "$WPID" "$CPID" 2>/dev/null
    kill "$RPID" 2>/dev/null
    wait "$RPID" 2>/dev/null
    rm -rf "$S"
done

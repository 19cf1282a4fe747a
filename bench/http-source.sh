#!/bin/sh
# http-source.sh - the planner's index read and a worker's range read over
# loopback HTTP against the local file (`make bench-http`; CPU only; issue 46).
# Makes a long clip (MINUTES, 10 by default: 10 s of 1280x720 60 fps H.264
# at 10 Mbit/s repeated by stream copy, then copied to MP4), starts a
# throwaway nginx on a free loopback port serving it (as tests/util-nginx.c
# does), then runs `vrbench-video source SRC 10` (bench/vrbench_source.c:
# the plan's time and bytes, then every packet read through src_open_input)
# RUNS times on each of: the local file, http://127.0.0.1:PORT/clip.mp4, and
# s3://bench/clip.mp4 signed with SigV4 (VR_S3_ENDPOINT at the same nginx,
# which serves it without checking the signature: the signing's cost).
# Usage: bench/http-source.sh BINDIR [WORKDIR]   MINUTES=10 RUNS=3
set -eu
B=$(cd "$1" && pwd)
W=${2:-/tmp/vrhttp-bench}
MIN=${MINUTES:-10}
RUNS=${RUNS:-3}
mkdir -p "$W/www/bench" "$W/tmp"
W=$(cd "$W" && pwd) # nginx reads its paths from its own prefix otherwise
SHORT=$W/short.mkv
CLIP=$W/www/bench/clip.mp4
[ -f "$SHORT" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=60 -t 10 \
    -c:v libx264 -preset ultrafast -g 60 -keyint_min 60 -sc_threshold 0 -b:v 10M -maxrate 10M \
    -bufsize 10M -pix_fmt yuv420p "$SHORT"
if [ ! -f "$CLIP" ]; then
    "$B/vrbench-video" repeat "$SHORT" "$W/long.mkv" $((MIN * 6)) > /dev/null
    ffmpeg -v error -y -i "$W/long.mkv" -c copy "$CLIP"
    rm -f "$W/long.mkv"
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$W/nginx.conf" <<CONF
user root; daemon off; master_process off; worker_processes 1;
pid $W/nginx.pid; error_log $W/error.log;
events { worker_connections 64; }
http {
  access_log off; client_body_temp_path $W/tmp; proxy_temp_path $W/tmp;
  fastcgi_temp_path $W/tmp; uwsgi_temp_path $W/tmp; scgi_temp_path $W/tmp;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$PORT; root $W/www; }
}
CONF
nginx -c "$W/nginx.conf" &
NPID=$!
trap 'kill $NPID 2>/dev/null' EXIT
up=1
for _ in $(seq 50); do
    curl -sf -o /dev/null -r 0-0 "http://127.0.0.1:$PORT/bench/clip.mp4" && up=0 && break
    sleep 0.1
done
[ "$up" = 0 ] || { echo "nginx did not start: $W/error.log" >&2; exit 1; }
export VR_S3_ENDPOINT=http://127.0.0.1:$PORT AWS_ACCESS_KEY_ID=AKIABENCH AWS_SECRET_ACCESS_KEY=bench
echo "clip: $(du -m "$CLIP" | cut -f1) MB, ${MIN} min; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %T UTC')"
for src in "$CLIP" "http://127.0.0.1:$PORT/bench/clip.mp4" "s3://bench/clip.mp4"; do
    for r in $(seq "$RUNS"); do
        echo "$src run $r: $("$B/vrbench-video" source "$src" 10 | tr '\n' ' ')"
    done
done

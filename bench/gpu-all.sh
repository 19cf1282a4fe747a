#!/bin/sh
# gpu-all.sh - everything issue 3-5 measure on a GPU, in one run, from a
# bundle (deploy/bundle.sh with the test and bench binaries): the GPU tests,
# the network vs PyTorch, whole-frame segmentation, the tuner, the video
# pipeline and a distributed `vrctl run` on the GPU. Used through the lent
# machine's device tool; results go to $OUT (or /tmp/vrgpu).
# Usage: bench/gpu-all.sh BUNDLE_DIR   (run from the repository root)
set -u
B=$1
REPO=$PWD
RES=${OUT:-/tmp/vrgpu}
mkdir -p "$RES"
export VR_DATA_DIR=$REPO VR_BIN_DIR=$B/bin VR_TUNE_CACHE=/tmp/vr-tune.json
step() { echo "== $* ($(date -u +%T))" | tee -a "$RES/summary.txt"; }

step "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
step "test-gpu: every CUDA kernel vs its C twin, engine vs CPU engine"
timeout 180 "$B/bin/gputests" -j4 > "$RES/test-gpu.log" 2>&1
tail -1 "$RES/test-gpu.log" | tee -a "$RES/summary.txt"

step "bench-net: network tiles/s vs PyTorch"
timeout 150 "$B/bin/bench-net" --model models/selfie_segmentation.tflite \
    --json "$RES/bench-net.json" --dump /tmp/bench-net-check --batches 8,64,256 > "$RES/bench-net.log" 2>&1
tail -12 "$RES/bench-net.log"
# PyTorch's fastest modes at batch 64: max-autotune alone compiles for
# ~210 s on an H100, hence the timeout (torch.compile's default mode, the
# slowest compiled one, is left out)
timeout 420 python3 bench/torch_net.py --model models/selfie_segmentation.tflite \
    --check /tmp/bench-net-check --ours "$RES/bench-net.json" --batches 8,64,256 \
    --compile-batches 64 --modes graph,reduce-overhead,max-autotune > "$RES/torch.log" 2>&1
tail -12 "$RES/torch.log" | tee -a "$RES/summary.txt"

step "net-roofline: the network's kernels by hardware counters (ncu)"
timeout 300 bench/net-roofline.sh "$B/bin" 64 > "$RES/net-roofline.log" 2>&1
head -4 "$RES/net-roofline.log" | tee -a "$RES/summary.txt"

step "tune + bench-seg: whole-frame segmentation"
timeout 60 "$B/bin/vr-worker" tune --force > "$RES/tune.log" 2>&1; tail -4 "$RES/tune.log"
timeout 120 "$B/bin/bench_seg" --json "$RES/bench-seg.json" > "$RES/bench-seg.log" 2>&1
tail -20 "$RES/bench-seg.log" | tee -a "$RES/summary.txt"

step "bench-pipeline: 8K60 SBS HEVC -> matte"
STAGES=0 FRAMES=240 timeout 200 bench/pipeline.sh "$B/bin" > "$RES/pipeline.log" 2>&1
grep -E "RESULT|^frames|fps" "$RES/pipeline.log" | tail -12 | tee -a "$RES/summary.txt"

step "vrctl run on the GPU: the 8K clip in 1 s chunks"
timeout 150 "$B/bin/vrctl" run -y /tmp/vrbench-work/sbs8k_FISHEYE190.mkv -o /tmp/vr-dist-out.mkv \
    --chunk-seconds 1 > "$RES/vrctl-run.log" 2>&1
echo "vrctl run rc=$?" | tee -a "$RES/summary.txt"
tail -8 "$RES/vrctl-run.log" | tee -a "$RES/summary.txt"
step done

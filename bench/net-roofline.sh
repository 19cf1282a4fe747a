#!/bin/sh
# net-roofline.sh - the network's roofline by hardware counters on a GPU
# host: Nsight Compute over bench-net's --profile section (each kernel of
# one batch alone, clocks left as they are), summed per plan by
# bench/net_roofline.py. Needs ncu (the CUDA toolkit's Nsight Compute).
# Usage: bench/net-roofline.sh BINDIR [BATCH]   (from the repository root;
#   results under $OUT)
set -u
B=$1
N=${2:-64}
R=${OUT:-/tmp/vr-roofline}
mkdir -p "$R"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,dram__bytes.sum
M=$M,sm__cycles_active.avg.pct_of_peak_sustained_elapsed
M=$M,sm__instruction_throughput.avg.pct_of_peak_sustained_active
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active
# 46 + 21 + 21 kernels a run, ten runs a plan: the profile section only
"$NCU" --clock-control none --launch-count 900 --metrics "$M" --csv --page raw \
    "$B/bench-net" --model models/selfie_segmentation.tflite --batches "$N" --iters 3 \
    --profile "$N" > "$R/ncu.csv" 2> "$R/ncu.err" || { tail -5 "$R/ncu.err"; exit 1; }
python3 bench/net_roofline.py "$R/ncu.csv" --batch "$N" --kernels | tee "$R/roofline.txt"

# bench-net.mk - the network benchmark on the GPU.
#
#   make bench-net    network tiles/s: batch x fp16/fp32 x blocks/fused/unfused, then
#                     the same network in PyTorch (bench/torch_net.py) if
#                     python3 with torch is there; part of `make bench-gpu`
#   make bench-roofline  the network's kernels by hardware counters (Nsight
#                     Compute: DRAM bytes a tile, TB/s, SM active and busy)
#
# The binary builds wherever nvcc is found; it runs only where a GPU is.

BENCH_NET_BIN := $(BUILD)/bench/bench-net
BENCH_NET_JSON ?= $(BUILD)/bench-net.json

ifneq ($(NVCC),)
$(BENCH_NET_BIN): $(BUILD)/bench/bench_net.o $(call lib,seg net tflite media common)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

bench-net: $(BENCH_NET_BIN)
	$(Q)$(BENCH_NET_BIN) --model models/selfie_segmentation.tflite --json $(BENCH_NET_JSON) \
	   --dump $(BUILD)/bench-net-check
	$(Q)if python3 -c 'import torch' 2>/dev/null; then \
	   python3 bench/torch_net.py --model models/selfie_segmentation.tflite \
	     --check $(BUILD)/bench-net-check --ours $(BENCH_NET_JSON); \
	 else echo "bench-net: python3 with torch not found: PyTorch comparison skipped"; fi

bench-roofline: $(BENCH_NET_BIN)
	$(Q)OUT=$(BUILD)/roofline bench/net-roofline.sh $(dir $(BENCH_NET_BIN))
else
bench-net bench-roofline:
	@echo "$@: needs nvcc (and a GPU to run): $(CUDA_MSG)"; exit 1
endif

bench-gpu: bench-net
.PHONY: bench-net bench-roofline

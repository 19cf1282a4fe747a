# gpu.mk - the GPU test binary and the network benchmark (engineer D1's
# part of issue 3; the frame kernels' tests join the same binary).
#
#   make test-gpu     every CUDA kernel vs. its C twin, and the whole network
#                     vs. the CPU network on real images (needs a GPU)
#   make bench-net    network tiles/s: batch x fp16/fp32 x blocks/fused/unfused, then
#                     the same network in PyTorch (bench/torch_net.py) if
#                     python3 with torch is there; part of `make bench-gpu`
#   make bench-roofline  the network's kernels by hardware counters (Nsight
#                     Compute: DRAM bytes a tile, TB/s, SM active and busy)
#
# The binaries build wherever nvcc is found; they run only where a GPU is
# (on the lent machine through the bundle, see docs/notes/cuda-net.md).

GPU_TEST_SRC  := $(wildcard tests/gpu/g-*.c) tests/util-video.c
GPU_TEST_BIN  := $(BUILD)/tests/gputests
BENCH_NET_BIN := $(BUILD)/bench/bench-net
BENCH_NET_JSON ?= $(BUILD)/bench-net.json

ifneq ($(NVCC),)
$(GPU_TEST_BIN): $(call obj,$(GPU_TEST_SRC)) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

$(BENCH_NET_BIN): $(BUILD)/bench/bench_net.o $(call lib,seg net model media common)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

test-gpu: $(GPU_TEST_BIN)
	$(Q)VR_DATA_DIR=$(CURDIR) VR_BIN_DIR=$(abspath $(BINDIR)) $(GPU_TEST_BIN) $(TEST_ARGS)

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
test-gpu bench-net bench-roofline:
	@echo "$@: needs nvcc (and a GPU to run): $(CUDA_MSG)"; exit 1
endif

bench-gpu: bench-net
.PHONY: bench-net bench-roofline

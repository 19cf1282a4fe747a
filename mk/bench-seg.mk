# bench-seg.mk - the whole-frame segmentation benchmark on the GPU (the
# frame kernels' and the engine's GPU tests are tests/gpu/g-seg-*.c, in
# test-gpu.mk's binary).
#
#   make bench-seg    SEG_CUDA throughput from NV12 in device memory: 1080p
#                     mono, 4K/6K/8K side-by-side x batch x fp16/fp32 (table +
#                     JSON); part of `make bench-gpu`
#   BENCH_SEG_ARGS="--cases 8k --batches 16 --precisions fp16" narrows it.

BENCH_SEG_BIN  := $(BUILD)/bench/bench_seg
BENCH_SEG_JSON ?= $(BUILD)/bench-seg.json

ifneq ($(NVCC),)
$(BENCH_SEG_BIN): $(BUILD)/bench/bench_seg.o $(call lib,seg net tflite media common)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

bench-seg: $(BENCH_SEG_BIN)
	$(Q)VR_DATA_DIR=$(CURDIR) $(BENCH_SEG_BIN) --json $(BENCH_SEG_JSON) $(BENCH_SEG_ARGS)
else
bench-seg:
	@echo "$@: needs nvcc (and a GPU to run): $(CUDA_MSG)"; exit 1
endif

bench-gpu: bench-seg
.PHONY: bench-seg

# test-gpu.mk - `make test-gpu`: every CUDA kernel vs. its C twin, the
# whole network vs. the CPU network and the whole engine vs. the CPU engine
# on real images, in one binary (gputests) built from tests/gpu/g-*.c
# (needs a GPU to run).
#
# The binary builds wherever nvcc is found; it runs only where a GPU is
# (on the lent machine through the bundle, see docs/notes/cuda-net.md).

GPU_TEST_SRC  := $(wildcard tests/gpu/g-*.c) tests/util-video.c tests/util-h264.c
GPU_TEST_BIN  := $(BUILD)/tests/gputests

ifneq ($(NVCC),)
$(GPU_TEST_BIN): $(call obj,$(GPU_TEST_SRC)) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

test-gpu: $(GPU_TEST_BIN)
	$(Q)VR_DATA_DIR=$(CURDIR) VR_BIN_DIR=$(abspath $(BINDIR)) $(GPU_TEST_BIN) $(TEST_ARGS)
else
test-gpu:
	@echo "$@: needs nvcc (and a GPU to run): $(CUDA_MSG)"; exit 1
endif

# bench-h264: the matte encoder (kernels/h264, its C twin on the CPU)
# against libx264 ultrafast at the same QP: bytes, luma PSNR, CPU a frame.
#
#   make bench-h264 [H264_QP=25] [H264_FRAMES=30] [H264_GPU=gpu]
#
# The matte: the bundled side-by-side clip through `vr-worker process
# --cpu` with a lossless matte (FFV1), at its own size and scaled to the
# product's 4096x2048 (bicubic: a smooth matte, as an 8K source's is).
# QP 25 is the balanced profile's (crf 23 + 2, media/vio_encode.c).
# H264_GPU=gpu (a CUDA build on a GPU) adds the CUDA encoder's fps and CPU
# a frame on the 4096x2048 matte, and (VR_H264_PROFILE) each stage's GPU
# time a frame: what it takes from the segmentation; then the GPU's fps
# with K encoders at once, as the product's worker slots run them
# (VR_H264_ENCODERS="1 2 4" by default). Prints
# bench/vrbench_h264.c's table for each; numbers in docs/PERF.md.

H264_QP     ?= 25
H264_FRAMES ?= 30
H264_GPU    ?=
BENCH_H264  := $(BINDIR)/vrbench-h264
H264_DIR    := $(BUILD)/bench-h264

$(BENCH_H264): $(BUILD)/bench/vrbench_h264.o $(BUILD)/bench/vrbench_h264_gpus.o $(call lib,h264 common)

$(H264_DIR)/matte-sbs.mkv: $(BINDIR)/vr-worker
	@mkdir -p $(H264_DIR)
	$(Q)echo '{"encoder": "ffv1"}' > $(H264_DIR)/ffv1.json
	$(Q)$(BINDIR)/vr-worker process -y --cpu --profile fast -c $(H264_DIR)/ffv1.json --output mask \
	   tests/data/video/sbs.mkv -o $@ 2> $(H264_DIR)/process.log
$(H264_DIR)/matte-4096x2048.mkv: $(H264_DIR)/matte-sbs.mkv
	$(Q)ffmpeg -v error -y -i $< -vf scale=4096:2048:flags=bicubic,format=gray -c:v ffv1 $@

.PHONY: bench-h264
bench-h264: $(BENCH_H264) $(H264_DIR)/matte-sbs.mkv $(H264_DIR)/matte-4096x2048.mkv
	@echo "bench-h264: $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $$(date -u +%F)"
	$(Q)$(BENCH_H264) $(H264_DIR)/matte-sbs.mkv $(H264_QP) $(H264_FRAMES) 60 60
	$(Q)VR_H264_PROFILE=1 $(BENCH_H264) $(H264_DIR)/matte-4096x2048.mkv $(H264_QP) $(H264_FRAMES) 60 60 $(H264_GPU)

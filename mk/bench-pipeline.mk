# bench-pipeline.mk - `make bench-pipeline`: the video pipeline on the GPU
# (bench/pipeline.sh: an 8192x4096 60 fps HEVC SBS clip made from real
# footage; decode-only, encode-only and end-to-end fps with the stage
# breakdown). vrbench-video is the stage benchmark tool.

# BENCH_VIDEO ($(BINDIR)/vrbench-video) is defined in the Makefile, before
# the mk/*.mk that use it.
$(BENCH_VIDEO): $(BUILD)/bench/vrbench_video.o $(BUILD)/bench/vrbench_repeat.o $(WORKER_LIBS)

.PHONY: bench-video-tool
bench-video-tool: $(BENCH_VIDEO)

bench-pipeline: all $(BENCH_VIDEO)
	$(Q)bench/pipeline.sh $(abspath $(BINDIR))

# bench-video-tool.mk - `make bench-video-tool`: vrbench-video, the video
# pipeline's stage benchmark tool (bench/vrbench_video.c), which
# bench-pipeline, bench-plan and bench-fleet run. Its link recipe is the
# Makefile's rule for binaries. Those targets name it as $$(BENCH_VIDEO)
# (the Makefile turns on .SECONDEXPANSION), so the order in which mk/*.mk
# are read does not matter.
BENCH_VIDEO := $(BINDIR)/vrbench-video

$(BENCH_VIDEO): $(BUILD)/bench/vrbench_video.o $(BUILD)/bench/vrbench_repeat.o \
                $(BUILD)/bench/vrbench_encode_picture.o $(BUILD)/bench/vrbench_quality.o \
                $(BUILD)/bench/vrbench_source.o $(BUILD)/bench/vrbench_preroll.o \
                $(BUILD)/bench/vrbench_stitch.o $(BUILD)/bench/vrbench_quality_people.o \
                $(WORKER_LIBS)

.PHONY: bench-video-tool
bench-video-tool: $(BENCH_VIDEO)

# bench-quality.mk - `make bench-quality`: the matte measures of issue 39
# (vrbench-video quality: holes, false foreground, stereo agreement,
# still-area flicker, tile borders, the detector's people found) per
# profile on the bundled clips, with a contact sheet each, on the CPU
# engine (QUALITY_GPU=N runs the engine on GPU N). The sample is measured
# against fast, made.mkv against its truth matte. Sheets go to
# $(BUILD)/bench-quality/. docs/QUALITY.md says what each measure means.
QUALITY_OUT := $(BUILD)/bench-quality
QUALITY_ENGINE = $(if $(QUALITY_GPU),--gpu $(QUALITY_GPU),--cpu)

.PHONY: bench-quality
bench-quality: $$(BENCH_VIDEO)
	@mkdir -p $(QUALITY_OUT)
	$(Q)VR_DATA_DIR=$(CURDIR) $(BENCH_VIDEO) quality tests/data/video/sbs.mkv $(QUALITY_ENGINE) \
	    --frames 20 --sheet $(QUALITY_OUT)/sbs.png fast balanced quality
	$(Q)VR_DATA_DIR=$(CURDIR) $(BENCH_VIDEO) quality tests/data/video/made.mkv $(QUALITY_ENGINE) \
	    --truth tests/data/video/made-truth.mkv --frames 8 --sheet $(QUALITY_OUT)/made.png \
	    fast balanced quality quality-people

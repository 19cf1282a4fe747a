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

# `make bench-quality-8k`: the same measures at 8K, where the tiles and the
# people tier's zooms run: made drawn at an 8160x4080 frame (EYE 4080 of
# bench/quality-made.sh: its pictures at their own detail, not a 960 clip
# enlarged) against its truth, and the sample enlarged to 8192x4096
# against fast; 3 frames each, mattes 1024 wide. The clips are made once
# into $(QUALITY_OUT)/. ~2.5 min on 2 cores with the CPU engine
# (quality-people ~12 s a frame); QUALITY_GPU=N as above.
QUALITY_8K_MADE := $(QUALITY_OUT)/made4080.mkv
QUALITY_8K_SBS := $(QUALITY_OUT)/sbs8k.mkv

$(QUALITY_8K_MADE):
	@mkdir -p $(QUALITY_OUT)
	$(Q)sh bench/quality-made.sh tests/data $@ 4080

$(QUALITY_8K_SBS): tests/data/video/sbs.mkv
	@mkdir -p $(QUALITY_OUT)
	$(Q)ffmpeg -v error -y -i $< -vf scale=8192:4096:flags=bicubic -frames:v 3 -c:v libx264 \
	    -crf 18 -preset ultrafast $@

.PHONY: bench-quality-8k
bench-quality-8k: $$(BENCH_VIDEO) $(QUALITY_8K_MADE) $(QUALITY_8K_SBS)
	$(Q)VR_DATA_DIR=$(CURDIR) $(BENCH_VIDEO) quality $(QUALITY_8K_MADE) $(QUALITY_ENGINE) \
	    --truth $(QUALITY_8K_MADE:.mkv=-truth.mkv) --frames 3 --width 1024 \
	    --sheet $(QUALITY_OUT)/made4080.png fast balanced quality quality-people
	$(Q)VR_DATA_DIR=$(CURDIR) $(BENCH_VIDEO) quality $(QUALITY_8K_SBS) $(QUALITY_ENGINE) \
	    --frames 3 --width 1024 --sheet $(QUALITY_OUT)/sbs8k.png fast balanced quality \
	    quality-people

# bench-pipeline.mk - `make bench-pipeline`: the video pipeline on the GPU
# (bench/pipeline.sh: an 8192x4096 60 fps HEVC SBS clip made from real
# footage; decode-only, encode-only and end-to-end fps with the stage
# breakdown), run with vrbench-video (mk/bench-video-tool.mk).

bench-pipeline: all $$(BENCH_VIDEO)
	$(Q)bench/pipeline.sh $(abspath $(BINDIR))

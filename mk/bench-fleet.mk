# bench-fleet.mk - `make bench-fleet`: issue 9's benchmark on a GPU host
# (bench/fleet.sh): a long 8K60 SBS clip through `vrctl run` on 1 GPU and on all, with the NVDEC and
# x264 ceilings and the NVDEC / SM / CPU use of each run. On a host without
# the build tools run it from a bundle: bench/fleet.sh vrseg/bin.
.PHONY: bench-fleet
bench-fleet: all $$(BENCH_VIDEO)
	$(Q)bench/fleet.sh $(abspath $(BINDIR))

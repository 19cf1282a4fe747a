# bench-alpha.mk - `make bench-alpha`: issue 30's benchmark on a GPU host
# (bench/alpha.sh): `vrctl run --output alpha` on an 8K60 SBS clip beside
# the host's own ceiling for the picture's CPU encode, measured in the same
# run, and what other encoder settings cost and give (fps, bitrate, PSNR).
# On a host without the build tools run it from a bundle: bench/alpha.sh
# vrseg/bin.
.PHONY: bench-alpha
bench-alpha: all $$(BENCH_VIDEO)
	$(Q)bench/alpha.sh $(abspath $(BINDIR))

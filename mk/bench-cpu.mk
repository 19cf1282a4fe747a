# bench-cpu: the CPU image path, timed (a benchmark, not a test).
#
#   make bench-cpu [BENCH_RUNS=7] [BENCH_CORE=0]
#
# Times whole `vr-worker segment-image` processes pinned to one core
# (taskset), median of BENCH_RUNS: the network alone (--raw, 256x256,
# model load and PNG I/O included) and a full-HD side-by-side frame
# (3840x1080, two 1920x1080 eyes) through the whole engine with the
# balanced profile (JPEG in, PNG out); `vr-worker info` gives the cost of
# starting the process (loading libav*'s shared-library closure). Prints a table and the stage times
# of one more run; numbers go to docs/notes/image-path.md.

BENCH_RUNS ?= 7
BENCH_CORE ?= 0
BENCH_DIR  := $(BUILD)/bench-cpu

BENCH_SBS  := $(BENCH_DIR)/sbs-3840x1080.jpg

# two eyes from the test photos, made once (ffmpeg CLI)
$(BENCH_SBS):
	@mkdir -p $(BENCH_DIR)
	$(Q)ffmpeg -v error -y -i tests/data/image/astronaut-256.png -i tests/data/image/vtest-100.jpg \
	   -filter_complex "[0]scale=1920:1080[a];[1]scale=1920:1080[b];[a][b]hstack,format=rgb24" \
	   -frames:v 1 -q:v 2 $@

bench-cpu: $(BINDIR)/vr-worker $(BENCH_SBS)
	$(Q)bench_one() { \
	   name=$$1; shift; ts=""; \
	   for i in $$(seq $(BENCH_RUNS)); do \
	     t0=$$(date +%s%N); taskset -c $(BENCH_CORE) "$$@" >/dev/null || exit 1; t1=$$(date +%s%N); \
	     ts="$$ts $$(( (t1 - t0) / 1000 ))"; \
	   done; \
	   echo $$ts | tr ' ' '\n' | sort -n | awk -v n="$$name" \
	     '{v[NR]=$$1} END {printf "%-44s %10.1f %10.1f %10.1f\n", n, v[int((NR+1)/2)]/1e3, v[1]/1e3, v[NR]/1e3}'; \
	 }; \
	 echo "bench-cpu: $(BENCH_RUNS) runs each, pinned to core $(BENCH_CORE); $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	 printf "%-44s %10s %10s %10s\n" "case" "median ms" "min ms" "max ms"; \
	 bench_one "process start only (vr-worker info)" $(BINDIR)/vr-worker info; \
	 bench_one "segment-image --raw 256x256" \
	   $(BINDIR)/vr-worker segment-image --raw tests/data/image/astronaut-256.png $(BENCH_DIR)/raw.png; \
	 bench_one "segment-image sbs 3840x1080 (balanced)" \
	   $(BINDIR)/vr-worker segment-image --layout sbs --profile balanced \
	   $(BENCH_SBS) $(BENCH_DIR)/sbs-mask.png; \
	 echo "stage times of one more run of each (VR_LOG=debug):"; \
	 for a in "--raw tests/data/image/astronaut-256.png" \
	          "--layout sbs --profile balanced $(BENCH_SBS)"; do \
	   VR_LOG=debug taskset -c $(BENCH_CORE) $(BINDIR)/vr-worker segment-image $$a \
	     $(BENCH_DIR)/out.png 2>&1 | sed 's/^/  /'; \
	 done

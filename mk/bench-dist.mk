# bench-dist: the distributed path on one machine with CPU workers.
# A longer clip (BENCH_DIST_SECONDS of opencv's vtest.avi at BENCH_DIST_WIDTH,
# keyframe every second, AAC audio) through `vrctl run --cpu --workers N` for
# N in BENCH_DIST_WORKERS: wall time and fps per N (scaling ratio against
# N=1), split and stitch time as a share of the job, and the Redis round
# trips per chunk that the processes count (rq.c) and log when they stop.
BENCH_DIST_SECONDS ?= 60
BENCH_DIST_WIDTH   ?= 640
BENCH_DIST_CHUNK   ?= 2
BENCH_DIST_WORKERS ?= 1 2 3
BENCH_DIST_DIR     := $(BUILD)/bench-dist

.PHONY: bench-dist
bench-dist: all
	@mkdir -p $(BENCH_DIST_DIR)
	$(Q)ffmpeg -v error -y -i /usr/share/doc/opencv-doc/examples/data/vtest.avi \
	   -f lavfi -i sine=frequency=440:sample_rate=48000 -t $(BENCH_DIST_SECONDS) \
	   -map 0:v -map 1:a -vf scale=$(BENCH_DIST_WIDTH):-2 -c:v libx264 -preset ultrafast \
	   -g 10 -keyint_min 10 -sc_threshold 0 -pix_fmt yuv420p -c:a aac -shortest \
	   $(BENCH_DIST_DIR)/clip.mp4
	@echo "bench-dist: $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	@echo "bench-dist: clip $(BENCH_DIST_SECONDS) s at $(BENCH_DIST_WIDTH) px wide, chunks of $(BENCH_DIST_CHUNK) s, profile fast"
	@printf '%-8s %8s %8s %8s %9s %9s %14s %14s\n' workers wall_s fps scaling split_% stitch_% worker_rt/chunk ctl_rt/chunk
	$(Q)base=; for n in $(BENCH_DIST_WORKERS); do \
	  log=$(BENCH_DIST_DIR)/run-$$n.log; \
	  VR_DATA_DIR=$(CURDIR) $(BINDIR)/vrctl run -y $(BENCH_DIST_DIR)/clip.mp4 -o $(BENCH_DIST_DIR)/out-$$n.mp4 \
	     --cpu --workers $$n --profile fast --chunk-seconds $(BENCH_DIST_CHUNK) --keep-temp >$$log 2>&1 \
	     || { tail -20 $$log; exit 1; }; \
	  line=$$(grep ': done in ' $$log); tmp=$$(sed -n 's/.*kept \(\/tmp\/vrctl-run-[^ ]*\).*/\1/p' $$log); \
	  wall=$$(echo "$$line" | sed 's/.*done in \([0-9.]*\) s.*/\1/'); \
	  fps=$$(echo "$$line" | sed 's/.*(\([0-9.]*\) fps.*/\1/'); \
	  split=$$(echo "$$line" | sed -E 's/.*(split|plan) ([0-9.]*) s.*/\2/'); \
	  stitch=$$(echo "$$line" | sed 's/.*stitch \([0-9.]*\) s).*/\1/'); \
	  wrt=$$(cat $$tmp/worker-*.log | sed -n 's/.*round trips: \([0-9]*\) in the pull loop.*over \([0-9]*\) chunks.*/\1 \2/p' | awk '{t+=$$1; c+=$$2} END {printf "%.1f", c ? t/c : 0}'); \
	  chunks=$$(cat $$tmp/worker-*.log | sed -n 's/.*over \([0-9]*\) chunks.*/\1/p' | awk '{c+=$$1} END {print c}'); \
	  crt=$$(sed -n 's/.*round trips: \([0-9]*\) in the loop.*/\1/p' $$tmp/controller.log | awk -v c=$$chunks '{printf "%.1f", c ? $$1/c : 0}'); \
	  base=$${base:-$$fps}; \
	  printf '%-8s %8s %8s %8.2f %8.1f%% %8.1f%% %14s %14s\n' $$n $$wall $$fps \
	     $$(echo "$$fps $$base" | awk '{print $$1/$$2}') $$(echo "$$split $$wall" | awk '{print 100*$$1/$$2}') \
	     $$(echo "$$stitch $$wall" | awk '{print 100*$$1/$$2}') $$wrt $$crt; \
	  rm -rf $$tmp; \
	done

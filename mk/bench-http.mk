# bench-http.mk - `make bench-http`: the planner's index read and a worker's
# range read of a long clip over loopback HTTP (nginx) and s3:// against the
# local file (bench/http-source.sh; CPU only; docs/PERF.md, "Sources over
# HTTP"). MINUTES=N makes the clip N minutes long (10).
.PHONY: bench-http
bench-http: all $$(BENCH_VIDEO)
	$(Q)bench/http-source.sh $(BINDIR) $(BUILD)/bench-http

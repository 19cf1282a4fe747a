# bench-plan.mk - `make bench-plan`: how soon a ~1.2 GB source runs on this
# machine (bench/plan-big.sh): the plan's time and bytes read, submit to the
# first running chunk, and what the job wrote under the storage root by
# then. CPU only.
.PHONY: bench-plan
bench-plan: all $$(BENCH_VIDEO)
	$(Q)bench/plan-big.sh $(BINDIR) $(BUILD)/bench-plan

# libFuzzer targets (clang + libclang-rt): the tflite loader, the job spec
# and chunk task parsers (what anyone who can write Redis hands the
# controller and the workers), the profile/config parser, and the records
# read back from Redis (job hash, chunk hash, webhook delivery, a worker's
# report), and the matte encoder over mask content (its stream decoded by
# libavcodec must equal its reconstruction). Undefined
# behaviour aborts (-fno-sanitize-recover) so UBSan findings fail the run
# too. `make fuzz` (part of `make test`) gives the model loader a third of
# FUZZ_SECONDS and the job, config and record parsers and the encoder a sixth each.
FUZZ_SECONDS ?= 30
FUZZ_CC    ?= clang
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
              -Icommon -Itflite -Iqueue
FUZZ_BASE  := common/err.c common/log.c
# job.c takes a URL source (issue 46): its prefix and path rules
FUZZ_URL   := common/url_root.c
# storage.c names its temps with this process's owner tag (storage_owner.c)
FUZZ_STORAGE := common/storage.c common/storage_owner.c
FUZZ_model_SRC    := fuzz/fuzz_model.c tflite/tflite.c $(FUZZ_STORAGE) $(FUZZ_BASE)
FUZZ_job_spec_SRC := fuzz/fuzz_job_spec.c queue/job.c $(FUZZ_URL) $(FUZZ_STORAGE) $(FUZZ_BASE)
FUZZ_config_SRC   := fuzz/fuzz_config.c common/config.c common/paths.c $(FUZZ_STORAGE) \
                     $(FUZZ_BASE)
FUZZ_records_SRC  := fuzz/fuzz_records.c queue/rq_stats.c queue/rq_report.c queue/rq_notify.c \
                     queue/rq_fleet.c queue/rq_stream.c queue/rq.c queue/rq_scripts.c queue/job.c common/text.c common/metrics.c \
                     queue/rq_claim.c queue/rq_jstate.c common/hmac.c $(FUZZ_URL) $(FUZZ_STORAGE) common/cmdtable.c common/version.c \
                     $(FUZZ_BASE)
FUZZ_h264_SRC     := fuzz/fuzz_h264.c tests/util-h264.c kernels/h264/h264enc.c \
                     kernels/h264/h264enc_gpu.c kernels/h264/h264_mb_ref.c \
                     kernels/h264/h264_cavlc_ref.c $(FUZZ_BASE)
FUZZ_h264_LIBS    := -Ikernels/h264 -Itests $(shell pkg-config --cflags --libs libavcodec libavutil 2>/dev/null)
FUZZ_TARGETS := model job_spec config records h264
FUZZ_BIN = $(BUILD)/fuzz/fuzz_$(1)

$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_BIN,$(t)): $(FUZZ_$(t)_SRC) $(wildcard common/*.h queue/*.h tflite/model.h kernels/h264/*.h)))
$(BUILD)/fuzz/fuzz_%:
	@mkdir -p $(dir $@)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(FUZZ_$*_SRC) $(FUZZ_$*_LIBS) -ljansson -lhiredis -lcrypto -lm

# fuzz_one target seconds seed-dirs...
fuzz_one = \
	mkdir -p $(BUILD)/fuzz/corpus-$(1) && cp -f $(3) $(BUILD)/fuzz/corpus-$(1)/ 2>/dev/null; \
	$(call FUZZ_BIN,$(1)) -max_total_time=$(2) -max_len=300000 -rss_limit_mb=2048 \
	   -print_final_stats=0 $(BUILD)/fuzz/corpus-$(1) > $(BUILD)/fuzz/log-$(1) 2>&1 || \
	   { tail -40 $(BUILD)/fuzz/log-$(1); echo "fuzz: $(1): FAILED"; exit 1; }; \
	grep -E "^Done [0-9]+ runs" $(BUILD)/fuzz/log-$(1) | tail -1 | sed 's/^/fuzz: $(1): /'

# Each target's run is its own goal, so `make -j2 fuzz` (as `make test`
# calls it) fuzzes two at a time: the model loader's third beside the
# others' sixths, 20 s of wall time, not 30; each gets the same seconds.
FUZZ_SECS_model := $(shell expr $(FUZZ_SECONDS) / 3)
FUZZ_SEEDS_model := models/*.tflite tests/data/fuzz-seeds/*.tflite
$(foreach t,job_spec config records h264,$(eval FUZZ_SECS_$(t) := $(shell expr $(FUZZ_SECONDS) / 6)))
FUZZ_SEEDS_job_spec := tests/data/fuzz-seeds/job/*
FUZZ_SEEDS_config := tests/data/fuzz-seeds/config/*
FUZZ_SEEDS_records := tests/data/fuzz-seeds/records/*
FUZZ_SEEDS_h264 := tests/data/fuzz-seeds/h264/*
# the two longest first (the encoder's runs are slow: it overruns its sixth
# on a loaded box), the short ones fill the other lane
FUZZ_RUNS := $(addprefix fuzz-run-,h264 model job_spec config records)
.PHONY: fuzz-start $(FUZZ_RUNS)

fuzz-start: $(foreach t,$(FUZZ_TARGETS),$(call FUZZ_BIN,$(t)))
	@echo "fuzz: the model loader, the job spec / chunk task, config and Redis record parsers, the matte encoder, $(FUZZ_SECONDS) s in all"

$(FUZZ_RUNS): fuzz-run-%: fuzz-start
	$(Q)$(call fuzz_one,$*,$(FUZZ_SECS_$*),$(FUZZ_SEEDS_$*))

fuzz: $(FUZZ_RUNS)
	@echo "fuzz: clean"

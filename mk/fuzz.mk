# libFuzzer target for the tflite loader (clang + libclang-rt). Undefined
# behaviour aborts (-fno-sanitize-recover) so UBSan findings fail the run too.
FUZZ_CC  ?= clang
FUZZ_SRC := fuzz/fuzz_model.c kernels/tflite.c common/err.c common/log.c
FUZZ_BIN := $(BUILD)/fuzz/fuzz_model

$(FUZZ_BIN): $(FUZZ_SRC) kernels/model.h
	@mkdir -p $(dir $@) $(BUILD)/fuzz/corpus
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	   -fno-sanitize-recover=undefined -Icommon -Ikernels -o $@ $(FUZZ_SRC) -lm

fuzz: $(FUZZ_BIN)
	@echo "fuzz: model loader for $(FUZZ_SECONDS) s"
	$(Q)cp -f models/*.tflite tests/data/fuzz-seeds/* $(BUILD)/fuzz/corpus/ 2>/dev/null || true
	$(Q)$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=300000 -rss_limit_mb=2048 \
	   -print_final_stats=0 $(BUILD)/fuzz/corpus >$(BUILD)/fuzz/log 2>&1 || \
	   { tail -40 $(BUILD)/fuzz/log; echo "fuzz: FAILED"; exit 1; }
	@grep -E "^#[0-9]+.*DONE" $(BUILD)/fuzz/log | tail -1 | sed 's/^/fuzz: /'; echo "fuzz: clean"

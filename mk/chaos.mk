# The chaos suite (issue 14): one fault per test against a whole system
# (real redis-server, controller, CPU workers), each ending with lost = 0,
# no chunk committed twice, output identical to a clean run, and the job's
# final state and message. Its own binary, so `make test` stays short:
#
#   make chaos                      build/tests/vrchaos, every chaos_* suite
#   make chaos CHAOS_ARGS='--filter chaos_redis/*'
#
# Criterion runs two tests at a time (-j2) unless CHAOS_ARGS says otherwise.

CHAOS_SRC := $(wildcard tests/chaos/*.c) tests/util-redis.c
CHAOS_BIN := $(BUILD)/tests/vrchaos
CHAOS_ARGS ?= -j2

.PHONY: chaos
$(CHAOS_BIN): $(call obj,$(CHAOS_SRC)) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

chaos: all $(CHAOS_BIN)
	$(Q)VR_DATA_DIR=$(CURDIR) VR_BIN_DIR=$(abspath $(BINDIR)) tests/run-suite.sh $(CHAOS_BIN) $(CHAOS_ARGS)

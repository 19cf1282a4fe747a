# make asan (issue 13): every binary and the CPU test suite built CPU-only
# with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and
# bin-asan/, then the suite run against those binaries (the tests spawn
# vrctl, vr-controller and vr-worker from VR_BIN_DIR, so the processes a
# test starts are sanitized too). Any report fails the run: UBSan does not
# recover, ASan halts at the first error.
#   make asan ASAN_TEST_ARGS='--filter dist_e2e/*'   a part of the suite
# LeakSanitizer is off: libav, hiredis and Criterion keep process-lifetime
# allocations that it reports at exit, and our processes exit through
# paths (execve'd children, SIGKILLed workers) where "still reachable" is
# not a leak; memory growth is checked by the long-video test instead.
ASAN_BUILD := build-asan
ASAN_BIN   := bin-asan
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer
# verify_asan_link_order=0: tests start some processes under faketime, whose
# LD_PRELOAD comes before the ASan runtime (which otherwise refuses to start)
ASAN_ENV   := ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:abort_on_error=0:exitcode=86:verify_asan_link_order=0 \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ASAN_TEST_ARGS ?= -j$(NPROC)

.PHONY: asan
asan:
	@echo "asan: building CPU-only with ASan + UBSan into $(ASAN_BUILD)/ and $(ASAN_BIN)/"
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) CUDA=0 BUILD=$(ASAN_BUILD) BINDIR=$(ASAN_BIN) \
	   CFLAGS="$(ASAN_FLAGS)" all $(ASAN_BUILD)/tests/vrtests
	$(Q)$(ASAN_ENV) VR_DATA_DIR=$(CURDIR) VR_BIN_DIR=$(abspath $(ASAN_BIN)) \
	   tests/run-suite.sh $(ASAN_BUILD)/tests/vrtests $(ASAN_TEST_ARGS)

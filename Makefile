# vrseg - build, test and run.
#
#   make            build bin/vrctl, bin/vr-controller, bin/vr-worker
#   make run        install deps, build, process the bundled sample
#   make test       install deps, check the rooms, the twins and ARCHITECTURE.md's room table, build, check for
#                   circles of files, verify the systemd units, fuzz the model
#                   loader briefly, run every test and the chaos suite
#   make chaos      the chaos suite alone: one fault per test on a whole system (mk/chaos.mk)
#   make architecture   ARCHITECTURE.md's room table against the tree (ARCH_FIX=1 rewrites its shares)
#   make asan       everything CPU-only under ASan + UBSan, the CPU test suite run on it (mk/asan.mk)
#   make test-gpu   CUDA kernels vs. their C twins (needs a GPU)
#   make bench-gpu / bench-roofline / bench-pipeline / bench-cpu   benchmarks (docs/PERF.md)
#   make bundle     relocatable tarball: bin/ + private lib/ (RPATH $ORIGIN/../lib)
#
# V=1 shows commands; DEV=1 adds -Werror; CUDA=0 forces a CPU-only build;
# BUILD=dir BINDIR=dir keep a private build (e.g. one per CUDA setting).

V ?= 0
ifeq ($(V),0)
Q := @
say = @printf '  %-7s %s\n' $(1) $(2)
else
Q :=
say = @:
endif

CC      ?= gcc
BUILD   ?= build
BINDIR  ?= bin
PKGS    := libavformat libavcodec libavutil libswscale libswresample hiredis jansson libcurl libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# CFLAGS from the command line (`make CFLAGS=-O0`) replace -O2 -g only: the
# project's own flags are added with `override`, so they are never lost.
CFLAGS  ?= -O2 -g
override CFLAGS  += -std=gnu11 -Wall -Wextra -MMD -MP -pthread -fno-strict-aliasing -ffp-contract=off
override CFLAGS  += $(PKG_CFLAGS)
ifeq ($(DEV),1)
override CFLAGS  += -Werror
endif
LDLIBS  := -Wl,--as-needed $(PKG_LIBS) -lm -ldl -lpthread
# libmicrohttpd: only the tests' webhook receiver (tests/t-controller-webhook.c)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS   := $(shell pkg-config --libs libmicrohttpd 2>/dev/null)

# `make` alone builds the binaries: the version stamp's rule below would
# otherwise be the first target and so the default.
.DEFAULT_GOAL := all

# ---- version: VERSION, plus `git describe` in a checkout ----
# Only common/version.o sees it; the stamp changes (and rebuilds it) only
# when the string does.
VR_VERSION := $(shell cat VERSION 2>/dev/null || echo unknown)
GIT_DESC   := $(shell git describe --always --dirty 2>/dev/null)
ifneq ($(GIT_DESC),)
VR_VERSION := $(VR_VERSION) (git $(GIT_DESC))
endif
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VR_VERSION)' | cmp -s - $@ || echo '$(VR_VERSION)' > $@
$(BUILD)/common/version.o: $(BUILD)/version.stamp
$(BUILD)/common/version.o: override CFLAGS += -DVR_VERSION='"$(VR_VERSION)"'
.PHONY: FORCE

# ---- CUDA: found or not found ----
# the rooms that hold CUDA kernels (X.cu beside its C twin X_ref.c): all GPU
# code lives under kernels/, one folder a room; every other room is a
# top-level folder of its own name
CU_ROOMS := net seg h264
rdir = $(if $(filter $(CU_ROOMS),$(1)),kernels/$(1),$(1))
CUDA ?= auto
# nvcc on PATH may be a wrapper script (e.g. /usr/local/bin/nvcc), so the
# toolkit home is the first candidate that has the runtime headers.
ifeq ($(CUDA),auto)
NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
else ifeq ($(CUDA),0)
NVCC :=
else
NVCC := $(CUDA)
endif
ifneq ($(NVCC),)
CUDA_HOME := $(firstword $(foreach d,$(patsubst %/bin/nvcc,%,$(realpath $(NVCC)) $(NVCC)) \
               /usr/local/cuda $(sort $(wildcard /usr/local/cuda-*)),\
               $(if $(wildcard $(d)/include/cuda_runtime_api.h),$(d))))
ifeq ($(CUDA_HOME),)
$(warning nvcc at $(NVCC) but no CUDA toolkit headers found: building CPU-only)
NVCC :=
endif
endif
ifneq ($(NVCC),)
CUDA_MSG  := CUDA: found $(NVCC): building kernels/*/*.cu for sm_90 (+PTX)
NVFLAGS   := -O3 -std=c++20 -Xcompiler -fPIC,-Wall \
             -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
             -DVR_HAVE_CUDA=1 -MMD -MP --expt-relaxed-constexpr
override CFLAGS += -DVR_HAVE_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS    += -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -lstdc++
CU_SRC    := $(foreach r,$(CU_ROOMS),$(wildcard kernels/$(r)/*.cu))
else
CUDA_MSG  := CUDA: not found (no nvcc): CPU-only build, --gpu unavailable
CU_SRC    :=
endif

# ---- rooms: one library per folder, one main per binary ----
# A room's files include only its own headers and those of the rooms it
# uses, so a wrong include fails the build; `make check-rooms` says which
# line. The table is the architecture (docs/ARCHITECTURE.md):
ROOMS           := common gpuinfo h264 media queue tflite net seg worker controller cli
USES_common     :=
USES_gpuinfo    := common
USES_h264       := common
USES_media      := common h264
USES_queue      := common
USES_tflite     := common
USES_net        := common tflite
USES_seg        := common tflite net
USES_worker     := common gpuinfo media queue seg
USES_controller := common media queue
USES_cli        := common gpuinfo media queue
# check-rooms (a prerequisite of `all`) holds each file to that; the
# compiler also gets the rooms those rooms use in turn, because a used
# room's header may include its own (kernels/seg/tune.h names net/'s struct
# netcu_opts).
uses_all = $(sort $(foreach u,$(USES_$(1)),$(u) $(call uses_all,$(u))))
ALL_INC := $(addprefix -I,$(foreach r,$(ROOMS),$(call rdir,$(r))) tests bench)
$(foreach r,$(ROOMS),$(eval $(BUILD)/$(call rdir,$(r))/%.o: ROOM_INC := $(addprefix -I,$(foreach u,$(r) $(call uses_all,$(r)),$(call rdir,$(u))))))
$(BUILD)/tests/%.o $(BUILD)/bench/%.o: ROOM_INC := $(ALL_INC)

room_src = $(filter-out $(call rdir,$(1))/main.c,$(wildcard $(call rdir,$(1))/*.c)) $(filter $(call rdir,$(1))/%,$(CU_SRC))
obj = $(patsubst %.c,$(BUILD)/%.o,$(patsubst %.cu,$(BUILD)/%.cu.o,$(1)))
lib = $(foreach r,$(1),$(BUILD)/libvr$(r).a)
$(foreach r,$(ROOMS),$(eval $(call lib,$(r)): $(call obj,$(call room_src,$(r)))))

# what each binary links, dependents first
WORKER_LIBS := $(call lib,worker seg net tflite media h264 queue gpuinfo common)
CTL_LIBS    := $(call lib,controller media h264 queue common)
CLI_LIBS    := $(call lib,cli media h264 queue gpuinfo common)
ALL_LIBS    := $(call lib,cli controller worker seg net tflite media h264 queue gpuinfo common)
# vrbench-video quality's people found is held in the unit suite too
TEST_SRC    := $(wildcard tests/t-*.c tests/util-*.c) bench/vrbench_quality_people.c

BINS := $(BINDIR)/vrctl $(BINDIR)/vr-controller $(BINDIR)/vr-worker
TEST_BIN := $(BUILD)/tests/vrtests

.PHONY: all deps test-deps run test test-unit fuzz test-gpu bench-gpu bench-pipeline bench-cpu bundle clean cuda-msg check-rooms check-twins check-circles architecture
all: cuda-msg check-rooms $(BINS)

cuda-msg:
	@echo "$(CUDA_MSG)"

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) $(ROOM_INC) -c $< -o $@

$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(NVFLAGS) $(ROOM_INC) -c $< -o $@

$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BINDIR)/vr-worker: $(BUILD)/worker/main.o $(WORKER_LIBS)
$(BINDIR)/vr-controller: $(BUILD)/controller/main.o $(CTL_LIBS)
$(BINDIR)/vrctl: $(BUILD)/cli/main.o $(CLI_LIBS)
$(BINDIR)/%:
	@mkdir -p $(BINDIR)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -Wl,-rpath,'$$ORIGIN/../lib'

# A stamp: `make test` reaches it four times (itself, then `all` for the
# build, the unit suite and the chaos suite); it checks again when a file it
# reads, a folder's list of files or the room table (Makefile) changed.
CHECK_ROOMS_DIRS := $(foreach r,$(ROOMS),$(call rdir,$(r))) tests tests/gpu
CHECK_ROOMS_IN := $(CHECK_ROOMS_DIRS) \
    $(foreach d,$(CHECK_ROOMS_DIRS),$(wildcard $(d)/*.c $(d)/*.h $(d)/*.cu $(d)/*.cuh)) \
    tests/check-rooms.sh tests/room-dir.sh Makefile
check-rooms: $(BUILD)/check-rooms.ok
	@:
$(BUILD)/check-rooms.ok: $(CHECK_ROOMS_IN)
	@mkdir -p $(dir $@)
	$(Q)$(foreach r,$(ROOMS),USES_$(r)="$(USES_$(r))") tests/check-rooms.sh $(ROOMS)
	@touch $@

# every CUDA kernel file X.cu beside its C twin X_ref.c (kernels/net/net.h)
check-twins:
	$(Q)tests/check-twins.sh $(CU_ROOMS)

# docs/ARCHITECTURE.md's room table from the tree: each room's share of the
# lines, its USES_ (tests/architecture.sh; ARCH_FIX=1 rewrites the shares)
architecture:
	$(Q)$(foreach r,$(ROOMS),USES_$(r)="$(USES_$(r))") tests/architecture.sh $(ROOMS)

# no circle of files inside a room (which file calls which: nm of the objects)
check-circles: $(call lib,$(ROOMS)) $(BINS)
	$(Q)tests/check-circles.sh $(BUILD) $(ROOMS)

# ---- tests ----
$(TEST_BIN): $(call obj,$(TEST_SRC)) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS) -lcriterion

deps:
	@deploy/install-deps.sh

NPROC := $(shell nproc 2>/dev/null || echo 2)
test-deps:
	@deploy/install-deps.sh --test

test: test-deps
	$(Q)$(MAKE) --no-print-directory check-rooms
	$(Q)$(MAKE) --no-print-directory check-twins
	$(Q)$(MAKE) --no-print-directory architecture
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) all $(TEST_BIN)
	$(Q)$(MAKE) --no-print-directory check-circles
	$(Q)$(MAKE) --no-print-directory check-systemd
	$(Q)$(MAKE) --no-print-directory check-prometheus
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) fuzz
	$(Q)$(MAKE) --no-print-directory test-unit
	$(Q)$(MAKE) --no-print-directory chaos

# Criterion's jobs for the unit suite, on any box (a -jN in TEST_ARGS, read
# after it, wins). Its tests mostly wait (leases, heartbeats, the
# frame-delay hooks, a 30 s idle gap): at -j2 a 2-core box was half idle,
# 946 s of CPU in 987 s of wall (docs/notes/test-time.md, "Sixth pass").
TEST_JOBS ?= 4
test-unit: all $(TEST_BIN)
	$(Q)VR_DATA_DIR=$(CURDIR) VR_BIN_DIR=$(abspath $(BINDIR)) tests/run-suite.sh $(TEST_BIN) -j$(TEST_JOBS) $(TEST_ARGS)

run: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) all
	$(Q)deploy/run-sample.sh

# mk/<target>.mk: one file per target (or family), each defining what it
# uses; a prerequisite that another file defines is written $$(VAR), which
# second expansion reads once every file is in.
.SECONDEXPANSION:
-include mk/*.mk

clean:
	rm -rf $(BUILD) $(BINDIR) dist

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

bundle: all
	$(Q)deploy/bundle.sh $(BINDIR)

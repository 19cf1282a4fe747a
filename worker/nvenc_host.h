/*
 * nvenc_host.h - whether this host's GPUs have NVENC, learned once per
 * host and driver rather than by every worker process: libavcodec learns it
 * only by opening an encoder, ~0.5 s alone and several seconds when a dozen
 * workers create their CUDA contexts at once, and an H100 or H200 has none
 * (NVML's encoder query answers "supported" there, so it cannot tell).
 */
#ifndef VR_NVENC_HOST_H
#define VR_NVENC_HOST_H

#include <stddef.h>

/* 1 when NVENC is present or unknown (the encoder is then tried), 0 when
 * this GPU model and driver are known to have none. The first worker to
 * ask probes under an exclusive lock and records the answer beside the
 * tune cache (nvenc.txt, keyed "GPU name|driver"); the others wait for the
 * lock and read it. `how` (may be NULL) gets a short static reason. */
int nvenc_host_available(int gpu, const char **how);

/* What the host's memo says of GPU `gpu` (NVML index) without probing:
 * 1 has NVENC, 0 has none, -1 not recorded yet or unknown (no NVML).
 * `ident` (may be NULL) gets "GPU name|driver" when NVML answers. */
int nvenc_host_recorded(int gpu, char *ident, size_t n);

#endif

/*
 * seg_backend.h - the engine's two backends' entry points, each found in
 * its file: seg_cpu_create in seg_backend_ref.c (the C twins), the
 * seg_cuda_* functions in seg_backend.cu (CUDA; only built with nvcc).
 * seg.c picks one (seg_create); the auto-tuner (tune.cu) builds CUDA
 * engines with a given network variant; benchmarks read the device bytes.
 * Engines made here are freed with seg_free() (seg.h).
 */
#ifndef VR_SEG_BACKEND_H
#define VR_SEG_BACKEND_H

#include "seg.h"
#include "vr_err.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU backend (seg_backend_ref.c). */
int seg_cpu_create(const struct seg_opts *o, struct seg **out, vr_err *err);

#ifdef VR_HAVE_CUDA
/* The CUDA backend (seg_backend.cu). Frames and masks may be in device
 * memory (on_device) or host memory. */
int seg_cuda_create(const struct seg_opts *o, struct seg **out, vr_err *err);

/* seg_cuda_create() with the network variant given instead of read from
 * the tune cache (max_batch is set by the engine): what the auto-tuner
 * times. */
struct netcu_opts;
int seg_cuda_create_variant(const struct seg_opts *o, const struct netcu_opts *net,
                            struct seg **out, vr_err *err);

/* Bytes of device memory a SEG_CUDA engine holds (its buffers plus the
 * network's); 0 for any other engine. For benchmarks and `vr-worker info`. */
size_t seg_cuda_device_bytes(const struct seg *s);
#endif

#ifdef __cplusplus
}
#endif

#endif

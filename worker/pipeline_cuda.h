/*
 * pipeline_cuda.h - the few CUDA runtime calls the pipeline makes (device
 * check, pinned host buffers, device masks, the mask download), kept in one
 * file so that pipeline.c builds without CUDA. Without VR_HAVE_CUDA every
 * function fails with VR_ENOTBUILT (or does nothing for the free functions).
 */
#ifndef VR_PIPELINE_CUDA_H
#define VR_PIPELINE_CUDA_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

/* Checks that GPU `gpu` exists without creating a CUDA context (so NVDEC
 * can open the device's primary context first, with its flags). Returns 0,
 * VR_ECUDA "no NVIDIA GPU found" (no device or no driver), VR_EINVAL (no
 * such index) or VR_ENOTBUILT. */
int pcuda_check(int gpu, vr_err *err);

/* Selects GPU `gpu`; VR_ECUDA "no CUDA device" when there is none, or
 * VR_ENOTBUILT in a CPU-only build. Writes its PCI bus id (for NVML). */
int pcuda_init(int gpu, char *pci_bus_id, size_t n, vr_err *err);

/* GPU `gpu`'s PCI bus id ("0000:17:00.0"), which names the device whatever
 * CUDA_VISIBLE_DEVICES makes its index, without creating a context. 0, or
 * <0 (buf "") without CUDA or such a device. */
int pcuda_pci_id(int gpu, char *buf, size_t n);

/* Makes `gpu` current on the calling thread (the runtime's current device
 * is per thread); no-op without CUDA. */
void pcuda_bind(int gpu);

/* Pinned host memory (page-locked, for fast async copies); pcuda_host_free
 * accepts NULL. */
int pcuda_host_alloc(void **p, size_t bytes, vr_err *err);
void pcuda_host_free(void *p);

/* Device memory, pitched: *pitch receives the row stride. */
int pcuda_dev_alloc2d(void **p, size_t *pitch, int w, int h, vr_err *err);
void pcuda_dev_free(void *p);

/* A stream of the pipeline's own (a cudaStream_t): each pipeline has one,
 * so that several in one process (`serve --slot-mode threads`) neither
 * wait on nor free each other's. pcuda_stream_free accepts NULL. */
int pcuda_stream_new(void **stream, vr_err *err);
void pcuda_stream_free(void *stream);

/* Copies a w x h byte image from the device to the host on `stream`
 * (pcuda_stream_new) and waits for it. */
int pcuda_d2h(void *stream, void *dst, size_t dpitch, const void *src, size_t spitch, int w,
              int h, vr_err *err);

/* Device memory the process holds now (cudaMemGetInfo total - free: whole
 * device), bytes; 0 when unknown. */
uint64_t pcuda_mem_used(void);


#endif

/*
 * nvml.h - GPU utilisation and memory through NVML, loaded at run time with
 * dlopen("libnvidia-ml.so.1") so the binaries neither link against nor need
 * the driver's library: where it is absent, nvml_open says so and callers
 * report "unknown".
 */
#ifndef VR_NVML_H
#define VR_NVML_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

struct vr_nvml;

/* Opens the GPU named by `pci_bus_id` (as cudaDeviceGetPCIBusId writes it;
 * NVML's index order can differ from CUDA's) or, when NULL, by NVML index
 * `index`. Returns 0, or VR_ENOTSUP when NVML or the GPU is unavailable. */
int nvml_open(const char *pci_bus_id, int index, struct vr_nvml **out, vr_err *err);

/* One sample: GPU utilisation over NVML's last period (percent) and device
 * memory in use (bytes, whole device). Returns 0 or VR_EIO. */
int nvml_sample(struct vr_nvml *n, unsigned *util_pct, uint64_t *mem_used);

/* Whether the GPU has a video encoder (NVENC), from NVML's encoder
 * capacity query, without opening one: 1 yes, 0 no (NVML says the query is
 * not supported: H100, H200, A100), -1 unknown (no NVML, another error).
 * *nvml_rc (may be NULL) gets NVML's return code. */
int nvml_has_encoder(struct vr_nvml *n, int *nvml_rc);

/* "GPU name|driver version" (e.g. "NVIDIA H100 80GB HBM3|580.159.04"):
 * what a host-wide memo of the GPU's abilities is keyed by. 0 or VR_EIO. */
int nvml_identity(struct vr_nvml *n, char *buf, size_t len);

/* Shuts NVML down and frees *n, clearing it; accepts NULL. */
void nvml_close(struct vr_nvml **n);

#endif

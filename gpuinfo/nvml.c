/*
 * nvml.c - the few NVML calls we need, resolved with dlsym so that a host
 * without the NVIDIA driver (CI) still runs every binary (see nvml.h).
 */
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the NVML ABI subset (nvml.h from the driver, stable since 2012) ---- */

typedef void *nvml_dev;
struct nvml_util { unsigned gpu, memory; };
struct nvml_mem { unsigned long long total, free, used; };

struct vr_nvml {
    void *lib;
    nvml_dev dev;
    int (*shutdown)(void);
    int (*util)(nvml_dev, struct nvml_util *);
    int (*mem)(nvml_dev, struct nvml_mem *);
    int (*enc_capacity)(nvml_dev, int, unsigned *); /* optional */
    int (*name)(nvml_dev, char *, unsigned);         /* optional */
    int (*driver)(char *, unsigned);                  /* optional */
};

#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ENCODER_QUERY_H264 0

int nvml_open(const char *pci_bus_id, int index, struct vr_nvml **out, vr_err *err)
{
    *out = NULL;
    struct vr_nvml *n = calloc(1, sizeof *n);
    if (!n)
        return vr_err_set(err, VR_ENOMEM, "nvml: out of memory");
    int rc = VR_ENOTSUP;
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        vr_err_set(err, rc, "nvml: libnvidia-ml.so.1 not found: GPU utilisation unknown");
        goto fail;
    }
    int (*init)(void) = (int (*)(void))dlsym(n->lib, "nvmlInit_v2");
    int (*by_idx)(unsigned, nvml_dev *) =
        (int (*)(unsigned, nvml_dev *))dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    int (*by_pci)(const char *, nvml_dev *) =
        (int (*)(const char *, nvml_dev *))dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    n->shutdown = (int (*)(void))dlsym(n->lib, "nvmlShutdown");
    n->util = (int (*)(nvml_dev, struct nvml_util *))dlsym(n->lib, "nvmlDeviceGetUtilizationRates");
    n->mem = (int (*)(nvml_dev, struct nvml_mem *))dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
    n->enc_capacity = (int (*)(nvml_dev, int, unsigned *))dlsym(n->lib,
                                                               "nvmlDeviceGetEncoderCapacity");
    n->name = (int (*)(nvml_dev, char *, unsigned))dlsym(n->lib, "nvmlDeviceGetName");
    n->driver = (int (*)(char *, unsigned))dlsym(n->lib, "nvmlSystemGetDriverVersion");
    if (!init || !by_idx || !by_pci || !n->shutdown || !n->util || !n->mem) {
        vr_err_set(err, rc, "nvml: libnvidia-ml.so.1 lacks the expected functions");
        goto fail;
    }
    if (init() != 0) {
        n->shutdown = NULL;
        vr_err_set(err, rc, "nvml: nvmlInit failed (no driver or no GPU)");
        goto fail;
    }
    int r = pci_bus_id ? by_pci(pci_bus_id, &n->dev) : by_idx((unsigned)index, &n->dev);
    if (r != 0) {
        vr_err_set(err, rc, "nvml: GPU %s not found (NVML error %d)",
                   pci_bus_id ? pci_bus_id : "by index", r);
        goto fail;
    }
    *out = n;
    return 0;
fail:
    nvml_close(&n);
    return rc;
}

int nvml_sample(struct vr_nvml *n, unsigned *util_pct, uint64_t *mem_used)
{
    struct nvml_util u;
    struct nvml_mem m;
    if (!n || n->util(n->dev, &u) != 0 || n->mem(n->dev, &m) != 0)
        return VR_EIO;
    *util_pct = u.gpu;
    *mem_used = m.used;
    return 0;
}

int nvml_has_encoder(struct vr_nvml *n, int *nvml_rc)
{
    unsigned cap = 0;
    int r = n && n->enc_capacity ? n->enc_capacity(n->dev, NVML_ENCODER_QUERY_H264, &cap) : -1;
    if (nvml_rc)
        *nvml_rc = r;
    if (r == 0)
        return 1;
    return r == NVML_ERROR_NOT_SUPPORTED ? 0 : -1;
}

int nvml_identity(struct vr_nvml *n, char *buf, size_t len)
{
    char name[96], drv[80];
    if (!n || !n->name || !n->driver || n->name(n->dev, name, sizeof name) != 0 ||
        n->driver(drv, sizeof drv) != 0)
        return VR_EIO;
    snprintf(buf, len, "%s|%s", name, drv);
    return 0;
}

void nvml_close(struct vr_nvml **np)
{
    struct vr_nvml *n = np ? *np : NULL;
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    if (n->lib)
        dlclose(n->lib);
    free(n);
    *np = NULL;
}

/*
 * pipeline_cuda.c - CUDA runtime calls for the pipeline (see
 * pipeline_cuda.h); stubs in CPU-only builds.
 */
#include "pipeline_cuda.h"

#ifdef VR_HAVE_CUDA
#include <cuda_runtime_api.h>


int pcuda_check(int gpu, vr_err *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    /* Without a driver cudart says "CUDA driver version is insufficient";
     * what the user has to know is that there is no GPU to use. */
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || (e == cudaSuccess && !count))
        return vr_err_set(err, VR_ECUDA, "no NVIDIA GPU found (%s): use --cpu",
                          e == cudaErrorInsufficientDriver ? "no NVIDIA driver loaded" : "no device");
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "no CUDA device: %s: use --cpu", cudaGetErrorString(e));
    if (gpu < 0 || gpu >= count)
        return vr_err_set(err, VR_EINVAL, "--gpu %d: this host has %d CUDA device(s)", gpu, count);
    return 0;
}

int pcuda_init(int gpu, char *pci_bus_id, size_t n, vr_err *err)
{
    int rc = pcuda_check(gpu, err);
    if (rc < 0)
        return rc;
    cudaError_t e = cudaSetDevice(gpu);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "GPU %d: %s", gpu, cudaGetErrorString(e));
    if (pci_bus_id && n && cudaDeviceGetPCIBusId(pci_bus_id, (int)n, gpu) != cudaSuccess)
        pci_bus_id[0] = '\0';
    return 0;
}

int pcuda_stream_new(void **stream, vr_err *err)
{
    cudaStream_t st = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    *stream = e == cudaSuccess ? (void *)st : NULL;
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "cannot create a stream: %s", cudaGetErrorString(e));
    return 0;
}

void pcuda_stream_free(void *stream)
{
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
}

int pcuda_pci_id(int gpu, char *buf, size_t n)
{
    if (!n)
        return -1;
    buf[0] = '\0';
    if (cudaDeviceGetPCIBusId(buf, (int)n, gpu) != cudaSuccess) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}

void pcuda_bind(int gpu)
{
    cudaSetDevice(gpu);
}

int pcuda_host_alloc(void **p, size_t bytes, vr_err *err)
{
    cudaError_t e = cudaMallocHost(p, bytes);
    if (e != cudaSuccess) {
        *p = NULL;
        return vr_err_set(err, VR_ENOMEM, "cannot pin %zu bytes of host memory: %s", bytes,
                          cudaGetErrorString(e));
    }
    return 0;
}

void pcuda_host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

int pcuda_dev_alloc2d(void **p, size_t *pitch, int w, int h, vr_err *err)
{
    cudaError_t e = cudaMallocPitch(p, pitch, (size_t)w, (size_t)h);
    if (e != cudaSuccess) {
        *p = NULL;
        return vr_err_set(err, VR_ECUDA, "cannot allocate a %dx%d device buffer: %s", w, h,
                          cudaGetErrorString(e));
    }
    return 0;
}

void pcuda_dev_free(void *p)
{
    if (p)
        cudaFree(p);
}

int pcuda_d2h(void *stream, void *dst, size_t dpitch, const void *src, size_t spitch, int w,
              int h, vr_err *err)
{
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, (size_t)w, (size_t)h,
                                      cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "mask download failed: %s", cudaGetErrorString(e));
    return 0;
}

uint64_t pcuda_mem_used(void)
{
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    return (uint64_t)(tot - fr);
}


#else /* CPU-only build */

int pcuda_check(int gpu, vr_err *err)
{
    return vr_err_set(err, VR_ENOTBUILT, "--gpu %d: this vr-worker was built without CUDA (no nvcc): use --cpu", gpu);
}

int pcuda_init(int gpu, char *pci_bus_id, size_t n, vr_err *err)
{
    (void)pci_bus_id;
    (void)n;
    return pcuda_check(gpu, err);
}

int pcuda_host_alloc(void **p, size_t bytes, vr_err *err)
{
    (void)bytes;
    *p = NULL;
    return vr_err_set(err, VR_ENOTBUILT, "built without CUDA");
}

void pcuda_bind(int gpu) { (void)gpu; }

int pcuda_pci_id(int gpu, char *buf, size_t n)
{
    (void)gpu;
    if (n)
        buf[0] = '\0';
    return -1;
}
void pcuda_host_free(void *p) { (void)p; }

int pcuda_dev_alloc2d(void **p, size_t *pitch, int w, int h, vr_err *err)
{
    (void)pitch;
    (void)w;
    (void)h;
    *p = NULL;
    return vr_err_set(err, VR_ENOTBUILT, "built without CUDA");
}

void pcuda_dev_free(void *p) { (void)p; }

int pcuda_stream_new(void **stream, vr_err *err)
{
    *stream = NULL;
    return vr_err_set(err, VR_ENOTBUILT, "built without CUDA");
}

void pcuda_stream_free(void *stream) { (void)stream; }

int pcuda_d2h(void *stream, void *dst, size_t dpitch, const void *src, size_t spitch, int w,
              int h, vr_err *err)
{
    (void)stream;
    (void)dst; (void)dpitch; (void)src; (void)spitch; (void)w; (void)h;
    return vr_err_set(err, VR_ENOTBUILT, "built without CUDA");
}

uint64_t pcuda_mem_used(void) { return 0; }

#endif

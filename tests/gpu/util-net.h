/*
 * util-net.h - helpers of the network-kernel GPU tests (tests/gpu/g-net-*.c):
 * fresh random data (seeded from the clock, seed logged),
 * float16 rounding on the host, device buffers in float32 or float16 that
 * are poisoned (all bits set: NaN in both) before every kernel runs, and a
 * comparison that fails on any non-finite or out-of-tolerance element.
 * Header-only (static functions) so each test file stands alone.
 */
#ifndef VR_G_NET_UTIL_H
#define VR_G_NET_UTIL_H

#include "ops_cuda.h"
#include "vio_image.h"

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GN_CUDA(call)                                                              \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        cr_assert(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));     \
    } while (0)

static uint64_t gn_rng;
static inline void gn_seed(const char *test)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    gn_rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ 0x9e3779b97f4a7c15ull;
    cr_log_info("%s: seed %llu", test, (unsigned long long)gn_rng);
}
static inline uint32_t gn_u32(void)
{
    gn_rng ^= gn_rng << 13;
    gn_rng ^= gn_rng >> 7;
    gn_rng ^= gn_rng << 17;
    return (uint32_t)(gn_rng >> 16);
}
static inline float gn_unif(float lo, float hi)
{
    return lo + (hi - lo) * (float)(gn_u32() & 0xffffff) / (float)0x1000000;
}

/* float <-> binary16 through the compiler's _Float16 (round to nearest). */
static inline vr_half gn_f2h(float x)
{
    _Float16 h = (_Float16)x;
    vr_half b;
    memcpy(&b, &h, 2);
    return b;
}
static inline float gn_h2f(vr_half b)
{
    _Float16 h;
    memcpy(&h, &b, 2);
    return (float)h;
}

/* A host float32 array of `count` random values in [lo, hi); with f16 the
 * values are rounded to float16 so the C twin sees exactly what the GPU
 * reads. Caller frees. */
static inline float *gn_random(size_t count, float lo, float hi, int f16)
{
    float *p = malloc(count * sizeof *p);
    cr_assert(p);
    for (size_t i = 0; i < count; i++) {
        p[i] = gn_unif(lo, hi);
        if (f16)
            p[i] = gn_h2f(gn_f2h(p[i]));
    }
    return p;
}

/* Device copy of host floats, stored as float16 when f16. */
static inline void *gn_up(const float *h, size_t count, int f16)
{
    void *d = NULL;
    size_t es = f16 ? 2 : 4;
    GN_CUDA(cudaMalloc(&d, count * es + 16));
    if (f16) {
        vr_half *t = malloc(count * 2 + 2);
        cr_assert(t);
        for (size_t i = 0; i < count; i++)
            t[i] = gn_f2h(h[i]);
        GN_CUDA(cudaMemcpy(d, t, count * 2, cudaMemcpyHostToDevice));
        free(t);
    } else {
        GN_CUDA(cudaMemcpy(d, h, count * 4, cudaMemcpyHostToDevice));
    }
    return d;
}

/* Device output buffer, poisoned: every bit set is NaN in float32 and
 * float16 alike. */
static inline void *gn_poisoned(size_t count, int f16)
{
    void *d = NULL;
    GN_CUDA(cudaMalloc(&d, count * (f16 ? 2 : 4) + 16));
    GN_CUDA(cudaMemset(d, 0xff, count * (f16 ? 2 : 4)));
    return d;
}

/* Synchronises, then downloads into a new host float array. */
static inline float *gn_down(const void *d, size_t count, int f16)
{
    GN_CUDA(cudaDeviceSynchronize());
    float *h = malloc(count * sizeof *h + 4);
    cr_assert(h);
    if (f16) {
        vr_half *t = malloc(count * 2 + 2);
        cr_assert(t);
        GN_CUDA(cudaMemcpy(t, d, count * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++)
            h[i] = gn_h2f(t[i]);
        free(t);
    } else {
        GN_CUDA(cudaMemcpy(h, d, count * 4, cudaMemcpyDeviceToHost));
    }
    return h;
}

/* Every element finite and |got - want| <= atol + rtol * |want|. Returns the
 * largest absolute error. */
static inline float gn_compare(const char *what, const float *got, const float *want,
                               size_t count, float rtol, float atol)
{
    float worst = 0.0f;
    for (size_t i = 0; i < count; i++) {
        cr_assert(isfinite(got[i]), "%s: element %zu not written or not finite (%g, want %g)",
                  what, i, got[i], want[i]);
        float d = fabsf(got[i] - want[i]);
        cr_assert(d <= atol + rtol * fabsf(want[i]),
                  "%s: element %zu: got %.7g, want %.7g (diff %.3g)", what, i, got[i],
                  want[i], d);
        if (d > worst)
            worst = d;
    }
    return worst;
}

/* Tolerances: float32 kernels differ from the C twin only by summation order
 * and FMA; float16 ones also by the rounding of the stored output. */
#define GN_RTOL32 1e-5f
#define GN_ATOL32 2e-5f
#define GN_RTOL16 2e-3f
#define GN_ATOL16 2e-3f

/* A kernel's output d (count values, float16 when f16) against its twin's
 * want, at that dtype's tolerance (the float32 one times k32, for kernels
 * whose sums run longer than one op's); logs and returns the largest
 * difference. */
static inline float gn_check(const char *what, size_t case_i, const void *d, const float *want,
                             size_t count, int f16, float k32)
{
    float *got = gn_down(d, count, f16);
    float worst = gn_compare(what, got, want, count, f16 ? GN_RTOL16 : k32 * GN_RTOL32,
                             f16 ? GN_ATOL16 : k32 * GN_ATOL32);
    cr_log_info("%s case %zu f16=%d: max abs diff %.3g", what, case_i, f16, worst);
    free(got);
    return worst;
}

/* cudaFree of every pointer in p (NULL ones included: a no-op). */
static inline void gn_free_device(const void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cudaFree((void *)p[i]);
}

/* The test data's root: $VR_DATA_DIR, else the working directory. */
static inline const char *gn_data_dir(void)
{
    const char *d = getenv("VR_DATA_DIR");
    return d && *d ? d : ".";
}

/* Fills `dst` ([h][w][3] floats in [0,1]) from a real image: the centre
 * crop, nearest-sampled if the image is smaller. */
static inline void gn_load_tile(const char *rel, int h, int w, float *dst)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", gn_data_dir(), rel);
    struct vio_image *img = NULL;
    vr_err err = { 0 };
    cr_assert_eq(vio_image_read(path, &img, &err), 0, "%s", err.msg);
    int x0 = img->w > w ? (img->w - w) / 2 : 0, y0 = img->h > h ? (img->h - h) / 2 : 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sy = img->h >= h ? y0 + y : y * img->h / h;
            int sx = img->w >= w ? x0 + x : x * img->w / w;
            const uint8_t *p = img->data + (size_t)sy * img->linesize + 3 * sx;
            for (int c = 0; c < 3; c++)
                dst[((size_t)y * w + x) * 3 + c] = p[c] / 255.0f;
        }
    vio_image_free(&img);
}

#endif

/*
 * frame_temporal.cu - the temporal filter's CUDA twin (frame_temporal.h
 * gives the rule; the C twin is frame_temporal.c).
 *
 * Two kernels per call: the lumas of the batch's frames with each frame's
 * sum of absolute change (integer atomics, so the sums are exact and the
 * same as the C twin's in any order), then the filter, where a thread owns
 * one pixel and walks the batch's frames in order, deciding cuts from the
 * sums exactly as temporal_cut() does on the host.
 */
#include "frame_temporal.h"

#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

static int ft_check(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "temporal %s: %s", what, cudaGetErrorString(e));
    return 0;
}

/* ---- lumas and change sums ---- */

struct ft_frames {
    const uint8_t *y0[FRAME_CU_MAX_FRAMES];
    int ls0[FRAME_CU_MAX_FRAMES];
};

/* The luma sample of a source row at column sx (the C twin's rule). */
static __device__ __forceinline__ uint8_t ft_luma(const uint8_t *row, int fmt, int sx)
{
    if (fmt == SEG_PIX_RGB24) {
        const uint8_t *px = row + 3 * (size_t)sx;
        return (uint8_t)((77u * px[0] + 150u * px[1] + 29u * px[2] + 128u) >> 8);
    }
    if (fmt == SEG_PIX_P010)
        return (uint8_t)(((const uint16_t *)row)[sx] >> 8);
    return row[sx];
}

#define FT_LUMA_THREADS 256

/* grid: x = column blocks, y = row groups. Frames outer, rows inner: each
 * thread keeps its column's source x (one division per launch), and each
 * block adds its frame sums with one atomic per frame, not one per warp
 * (thousands of warps on 16 addresses serialised). Sizes fit 32-bit math:
 * (2 * 16384 + 1) * 16384 < 2^31. */
__global__ void __launch_bounds__(FT_LUMA_THREADS)
k_temporal_luma(const __grid_constant__ ft_frames f, int n, int fmt, int sw, int sh, int w, int h,
                uint8_t *__restrict__ y, const uint8_t *__restrict__ prev_y,
                unsigned long long *__restrict__ sad)
{
    __shared__ unsigned warp_sum[FT_LUMA_THREADS / 32];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const bool in = x < w;
    const int sx = in ? ((2 * x + 1) * sw) / (2 * w) : 0;
    const size_t plane = (size_t)w * h;
    for (int j = 0; j < n; j++) {
        unsigned d = 0;
        for (int oy = blockIdx.y; in && oy < h; oy += gridDim.y) {
            const int sy = ((2 * oy + 1) * sh) / (2 * h);
            const size_t p = (size_t)oy * w + x;
            const int v = ft_luma(f.y0[j] + (size_t)sy * f.ls0[j], fmt, sx);
            y[j * plane + p] = (uint8_t)v;
            const int last = j > 0 ? y[(j - 1) * plane + p] : prev_y ? prev_y[p] : v;
            d += (unsigned)(v > last ? v - last : last - v);
        }
        for (int o = 16; o > 0; o >>= 1)
            d += __shfl_down_sync(0xffffffffu, d, o);
        if ((threadIdx.x & 31) == 0)
            warp_sum[threadIdx.x >> 5] = d;
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long t = 0;
            for (int k = 0; k < FT_LUMA_THREADS / 32; k++)
                t += warp_sum[k];
            if (t)
                atomicAdd(&sad[j], t);
        }
        __syncthreads();
    }
}

extern "C" int frame_temporal_luma_cuda(const struct temporal_opts *o,
                                        const struct temporal_state *s,
                                        const struct frame_batch *fb, int src_w, int src_h,
                                        uint8_t *y,
                                        const uint8_t *ring_y, unsigned long long *sad,
                                        cudaStream_t st, vr_err *err)
{
    if (fb->n < 1 || fb->n > FRAME_CU_MAX_FRAMES || o->w < 1 || o->h < 1)
        return vr_err_set(err, VR_EINVAL, "temporal: %d frames of %dx%d", fb->n, o->w, o->h);
    ft_frames f;
    for (int j = 0; j < fb->n; j++) {
        f.y0[j] = fb->data[j][0];
        f.ls0[j] = fb->linesize[j][0];
    }
    const uint8_t *prev = s->have > 0 ? ring_y + (size_t)s->head * o->w * o->h : NULL;
    if (cudaMemsetAsync(sad, 0, sizeof *sad * fb->n, st) != cudaSuccess)
        return ft_check("sums", err);
    dim3 grid((o->w + FT_LUMA_THREADS - 1) / FT_LUMA_THREADS, o->h < 128 ? o->h : 128);
    k_temporal_luma<<<grid, FT_LUMA_THREADS, 0, st>>>(f, fb->n, fb->fmt, src_w, src_h, o->w, o->h,
                                                      y, prev, sad);
    return ft_check("luma", err);
}

/* ---- the filter ---- */

struct ft_params {
    float weight[TEMPORAL_MAX_FRAMES];
    unsigned long long cut_sad;
    int still, slots, have, head, w, h, n;
    uint8_t *mask[FRAME_CU_MAX_FRAMES];
    int ls[FRAME_CU_MAX_FRAMES];
};

/* A thread owns V consecutive pixels of a row (V = 4: every mask, luma
 * and window access one 4-byte word; V = 1 where rows are not 4-aligned)
 * and walks the batch's frames in order. The byte-a-thread version moved
 * 32 bytes a warp instruction and ran at half the copy bandwidth. Each
 * pixel's arithmetic is the C twin's, in its order. */
template <int V>
__global__ void __launch_bounds__(256)
k_temporal(const __grid_constant__ ft_params a, const uint8_t *__restrict__ y,
           const unsigned long long *__restrict__ sad, uint8_t *__restrict__ ring_m,
           uint8_t *__restrict__ ring_y)
{
    typedef typename std::conditional<V == 4, uchar4, uchar1>::type vec;
    const int p = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (p >= a.w * a.h)
        return;
    const size_t plane = (size_t)a.w * a.h;
    const int px = p % a.w, py = p / a.w;
    int have = a.have, head = a.head;
    for (int j = 0; j < a.n; j++) {
        if (have > 0 && a.cut_sad && sad[j] > a.cut_sad)
            have = 0;
        vec *m = reinterpret_cast<vec *>(a.mask[j] + (size_t)py * a.ls[j] + px);
        const vec rawv = *m, ycv = *reinterpret_cast<const vec *>(y + j * plane + p);
        const uint8_t *raw = reinterpret_cast<const uint8_t *>(&rawv);
        const uint8_t *yc = reinterpret_cast<const uint8_t *>(&ycv);
        float acc[V], wsum[V];
#pragma unroll
        for (int k = 0; k < V; k++) {
            acc[k] = (float)raw[k];
            wsum[k] = 1.0f;
        }
        for (int i = 1, slot = head; i <= have; i++, slot = slot ? slot - 1 : a.slots - 1) {
            const vec yiv = *reinterpret_cast<const vec *>(ring_y + slot * plane + p);
            const vec miv = *reinterpret_cast<const vec *>(ring_m + slot * plane + p);
            const uint8_t *yi = reinterpret_cast<const uint8_t *>(&yiv);
            const uint8_t *mi = reinterpret_cast<const uint8_t *>(&miv);
#pragma unroll
            for (int k = 0; k < V; k++) {
                int d = yc[k] > yi[k] ? yc[k] - yi[k] : yi[k] - yc[k];
                if (d <= a.still) {
                    acc[k] = __fadd_rn(acc[k], __fmul_rn(a.weight[i], (float)mi[k]));
                    wsum[k] = __fadd_rn(wsum[k], a.weight[i]);
                }
            }
        }
        vec outv;
        uint8_t *out = reinterpret_cast<uint8_t *>(&outv);
#pragma unroll
        for (int k = 0; k < V; k++)
            out[k] = (uint8_t)(int)__fadd_rn(__fdiv_rn(acc[k], wsum[k]), 0.5f);
        *m = outv;
        head = head + 1 < a.slots ? head + 1 : 0;
        *reinterpret_cast<vec *>(ring_m + head * plane + p) = rawv;
        *reinterpret_cast<vec *>(ring_y + head * plane + p) = ycv;
        if (have < a.slots)
            have++;
    }
}

extern "C" int frame_temporal_cuda(const struct temporal_opts *o, const struct temporal_state *s,
                                   int n, const struct frame_masks *masks, const uint8_t *y,
                                   const unsigned long long *sad, uint8_t *ring_m,
                                   uint8_t *ring_y, cudaStream_t st, vr_err *err)
{
    if (o->frames < 2)
        return 0;
    if (n < 1 || n > FRAME_CU_MAX_FRAMES)
        return vr_err_set(err, VR_EINVAL, "temporal: %d frames", n);
    ft_params a;
    for (int i = 0; i < TEMPORAL_MAX_FRAMES; i++)
        a.weight[i] = o->weight[i];
    a.cut_sad = o->cut_sad;
    a.still = o->still;
    a.slots = o->frames - 1;
    a.have = s->have;
    a.head = s->head;
    a.w = o->w;
    a.h = o->h;
    a.n = n;
    for (int j = 0; j < n; j++) {
        a.mask[j] = masks->data[j];
        a.ls[j] = masks->linesize[j];
    }
    /* 4 pixels a thread where every row of every buffer starts 4-aligned */
    int v4 = o->w % 4 == 0 && ((uintptr_t)y & 3) == 0 && ((uintptr_t)ring_m & 3) == 0 &&
             ((uintptr_t)ring_y & 3) == 0;
    for (int j = 0; j < n; j++)
        v4 &= a.ls[j] % 4 == 0 && ((uintptr_t)a.mask[j] & 3) == 0;
    const int pix = o->w * o->h, per = v4 ? 4 : 1, threads = (pix + per - 1) / per;
    if (v4)
        k_temporal<4><<<(threads + 255) / 256, 256, 0, st>>>(a, y, sad, ring_m, ring_y);
    else
        k_temporal<1><<<(threads + 255) / 256, 256, 0, st>>>(a, y, sad, ring_m, ring_y);
    return ft_check("filter", err);
}

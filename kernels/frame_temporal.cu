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
 * pixel's arithmetic is the C twin's, in its order.
 *
 * The window lives in registers for the batch, newest first (hist[0] =
 * the previous frame): read from the ring once at the start, the frames
 * written back once at the end. Reading and writing the ring at every
 * frame moved 13 bytes a pixel a frame at 4 window frames (117 MB a frame
 * at 8K SBS, 0.048 ms at 80% of the copy bandwidth); now 3 and a share of
 * the ring's 16. */
#define FT_AHEAD 4

template <int V>
__global__ void __launch_bounds__(256)
k_temporal(const __grid_constant__ ft_params a, const uint8_t *__restrict__ y,
           const unsigned long long *__restrict__ sad, uint8_t *__restrict__ ring_m,
           uint8_t *__restrict__ ring_y)
{
    /* V pixels as one word; byte k = pixel k (little-endian) */
    typedef typename std::conditional<V == 4, uint32_t, uint8_t>::type word;
    constexpr int S = TEMPORAL_MAX_FRAMES - 1;   /* ring slots at most */
    const int p = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (p >= a.w * a.h)
        return;
    const size_t plane = (size_t)a.w * a.h;
    const int px = p % a.w, py = p / a.w;
    int have = a.have;
    /* still as 4 bytes (a difference of bytes is at most 255; below 0
     * nothing is still) */
    const uint32_t still4 = (uint32_t)min(max(a.still, 0), 255) * 0x01010101u;
    uint32_t hy[S], hm[S];
#pragma unroll
    for (int i = 0; i < S; i++)
        if (i < have) {
            const int slot = (a.head - i + a.slots) % a.slots;
            hy[i] = *reinterpret_cast<const word *>(ring_y + slot * plane + p);
            hm[i] = *reinterpret_cast<const word *>(ring_m + slot * plane + p);
        }
    /* FT_AHEAD frames' words loaded before the first is filtered: the
     * loads of the next frames no longer wait behind this frame's store */
    for (int j0 = 0; j0 < a.n; j0 += FT_AHEAD) {
        uint32_t raws[FT_AHEAD], ycs[FT_AHEAD];
#pragma unroll
        for (int q = 0; q < FT_AHEAD; q++)
            if (j0 + q < a.n) {
                raws[q] = *reinterpret_cast<const word *>(a.mask[j0 + q] +
                                                          (size_t)py * a.ls[j0 + q] + px);
                ycs[q] = *reinterpret_cast<const word *>(y + (j0 + q) * plane + p);
            }
#pragma unroll
        for (int q = 0; q < FT_AHEAD; q++) {
            const int j = j0 + q;
            if (j >= a.n)
                break;
            if (have > 0 && a.cut_sad && sad[j] > a.cut_sad)
                have = 0;
            const uint32_t raw = raws[q], yc = ycs[q];
            float acc[V], wsum[V];
#pragma unroll
            for (int k = 0; k < V; k++) {
                acc[k] = (float)((raw >> 8 * k) & 0xffu);
                wsum[k] = 1.0f;
            }
#pragma unroll
            for (int i = 1; i <= S; i++) {
                if (i > have)
                    break;
                /* per byte: |yc - y_i| <= still, four at a time (SIMD) */
                const uint32_t still =
                    a.still >= 0 ? __vcmpleu4(__vabsdiffu4(yc, hy[i - 1]), still4) : 0u;
#pragma unroll
                for (int k = 0; k < V; k++) {
                    if (still >> 8 * k & 1u) {
                        const float mi = (float)((hm[i - 1] >> 8 * k) & 0xffu);
                        acc[k] = __fadd_rn(acc[k], __fmul_rn(a.weight[i], mi));
                        wsum[k] = __fadd_rn(wsum[k], a.weight[i]);
                    }
                }
            }
            uint32_t out = 0;
#pragma unroll
            for (int k = 0; k < V; k++)
                out |= (uint32_t)(int)__fadd_rn(__fdiv_rn(acc[k], wsum[k]), 0.5f) << 8 * k;
            *reinterpret_cast<word *>(a.mask[j] + (size_t)py * a.ls[j] + px) = (word)out;
#pragma unroll
            for (int i = S - 1; i > 0; i--) {
                hy[i] = hy[i - 1];
                hm[i] = hm[i - 1];
            }
            hy[0] = yc;
            hm[0] = raw;
            if (have < a.slots)
                have++;
        }
    }
    /* the ring as frame-by-frame updates leave it: the last min(n, slots)
     * frames, the newest at head + n */
    const int head = (a.head + a.n) % a.slots;
#pragma unroll
    for (int i = 0; i < S; i++)
        if (i < a.n && i < a.slots) {
            const int slot = (head - i + a.slots) % a.slots;
            *reinterpret_cast<word *>(ring_y + slot * plane + p) = (word)hy[i];
            *reinterpret_cast<word *>(ring_m + slot * plane + p) = (word)hm[i];
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

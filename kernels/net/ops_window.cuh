/*
 * ops_window.cuh - device helpers of the kernels that keep a window of an
 * intermediate map in shared memory (ops_pwdw.cu, ops_tail.cu): one input
 * value times a row of staged weights, and the depthwise taps of four
 * channels of one output pixel. Private to those .cu files.
 */
#ifndef VR_OPS_WINDOW_CUH
#define VR_OPS_WINDOW_CUH

#include "ops_cuda_dev.cuh"

/* acc[o] += w[o] * v for N outputs; w 16-byte aligned shared memory. */
template <int N>
__device__ __forceinline__ void fma_row(float (&acc)[N], const float *w, float v)
{
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
#pragma unroll
    for (int o4 = 0; o4 < N / 4; o4++) {
        const float4 x = w4[o4];
        acc[4 * o4] = fmaf(x.x, v, acc[4 * o4]);
        acc[4 * o4 + 1] = fmaf(x.y, v, acc[4 * o4 + 1]);
        acc[4 * o4 + 2] = fmaf(x.z, v, acc[4 * o4 + 2]);
        acc[4 * o4 + 3] = fmaf(x.w, v, acc[4 * o4 + 3]);
    }
}

/* acc[o] += sum over k < 8 of w[k][o] * v[k]: 8 inputs of a 1x1 conv,
 * weights [8][N]. */
template <int N>
__device__ __forceinline__ void fma_rows8(float (&acc)[N], const float *w, const float v[8])
{
#pragma unroll
    for (int k = 0; k < 8; k++)
        fma_row(acc, w + k * N, v[k]);
}

/* acc[j] += t[j] * w[j] for 4 channels, t and w 16-byte aligned. */
__device__ __forceinline__ void dw_tap4(float acc[4], const float *tp, const float *wp)
{
    const float4 t = *reinterpret_cast<const float4 *>(tp);
    const float4 w = *reinterpret_cast<const float4 *>(wp);
    acc[0] = fmaf(t.x, w.x, acc[0]);
    acc[1] = fmaf(t.y, w.y, acc[1]);
    acc[2] = fmaf(t.z, w.z, acc[2]);
    acc[3] = fmaf(t.w, w.w, acc[3]);
}

/* Depthwise taps (geometry g) of channels cq..cq+3 of the output pixel at
 * (by, bx) of a block whose window T (16-byte aligned) has rw columns and
 * pixel stride ts (a multiple of 4); wd [kh][kw][c] in shared memory. acc
 * holds the bias on entry. K > 0: a K x K kernel of stride S compiled in
 * (the taps unrolled); K = 0: g's, at run time. */
template <int K, int S>
__device__ __forceinline__ void dw_taps4(float acc[4], const float *T, int rw, int ts,
                                         const float *wd, int c, const struct conv_geom &g,
                                         int by, int bx, int cq)
{
    if constexpr (K > 0) {
        const float *t0 = T + ((by * S) * rw + bx * S) * ts + cq;
#pragma unroll
        for (int ky = 0; ky < K; ky++)
#pragma unroll
            for (int kx = 0; kx < K; kx++)
                dw_tap4(acc, t0 + (ky * rw + kx) * ts, wd + (ky * K + kx) * c + cq);
    } else {
        for (int ky = 0; ky < g.kh; ky++)
            for (int kx = 0; kx < g.kw; kx++)
                dw_tap4(acc, T + ((by * g.sh + ky) * rw + bx * g.sw + kx) * ts + cq,
                        wd + (ky * g.kw + kx) * c + cq);
    }
}

#endif

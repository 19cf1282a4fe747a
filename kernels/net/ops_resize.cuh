/*
 * ops_resize.cuh - TFLite's RESIZE_BILINEAR arithmetic for the kernels that
 * resize a map where they read it (k_resize, the pointwise conv's resize on
 * load, the decoder tail's deferred skip sum, the squeeze-excite pool of a
 * deferred map). One copy, so every path gives the resize kernel's bits.
 * Private to the kernels' .cu files.
 */
#ifndef VR_OPS_RESIZE_CUH
#define VR_OPS_RESIZE_CUH

#include "ops_cuda_dev.cuh"

/* Source pixels per output pixel: in / out, or (in - 1) / (out - 1) with
 * align_corners (TFLite). */
__host__ __device__ __forceinline__ float rs_scale(int in, int out, int align_corners)
{
    return (align_corners && out > 1) ? (float)(in - 1) / (float)(out - 1)
                                      : (float)in / (float)out;
}

/* The two source rows (or columns) of output row o and the weight of hi. */
__device__ __forceinline__ void rs_coord(int o, float scale, int half, int size, int *lo,
                                         int *hi, float *frac)
{
    float v = half ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    float fl = floorf(v);
    *lo = max((int)fl, 0);
    *hi = min((int)ceilf(v), size - 1);
    *frac = v - (float)*lo;
}

/* Output pixel (oy, ox)'s four source pixels and their weights. */
struct rs_taps {
    int y0, y1, x0, x1;
    float w00, w01, w10, w11;   /* w01: row y0, column x1 */
};

/* ... from its rows' and columns' rs_coord results. */
__device__ __forceinline__ rs_taps rs_taps_from(int y0, int y1, float fy, int x0, int x1,
                                                float fx)
{
    rs_taps t;
    t.y0 = y0; t.y1 = y1; t.x0 = x0; t.x1 = x1;
    t.w00 = (1.0f - fy) * (1.0f - fx);
    t.w01 = (1.0f - fy) * fx;
    t.w10 = fy * (1.0f - fx);
    t.w11 = fy * fx;
    return t;
}

__device__ __forceinline__ rs_taps rs_taps_of(int oy, int ox, float sy, float sx, int half,
                                              int ih, int iw)
{
    int y0, y1, x0, x1;
    float fy, fx;
    rs_coord(oy, sy, half, ih, &y0, &y1, &fy);
    rs_coord(ox, sx, half, iw, &x0, &x1, &fx);
    return rs_taps_from(y0, y1, fy, x0, x1, fx);
}

/* The blend of the four taps: the weights once a pixel, then four
 * multiply-adds a channel (the C twin's three products a tap differ by
 * rounding only). */
__device__ __forceinline__ float rs_blend(float v00, float v01, float v10, float v11,
                                          const rs_taps &t)
{
    return fmaf(v11, t.w11, fmaf(v01, t.w01, fmaf(v10, t.w10, v00 * t.w00)));
}

/* 8 channels from c8 of the pixel with taps t of the resize of image
 * [ih][iw][c] at `img` (an element index into `src`, f16 saying its type). */
__device__ __forceinline__ void rs_load8(const void *src, int f16, size_t img, int iw, int c,
                                         int c8, const rs_taps &t, float v[8])
{
    float v00[8], v01[8], v10[8], v11[8];
    ldx8(src, f16, img + ((size_t)t.y0 * iw + t.x0) * c + c8, v00);
    ldx8(src, f16, img + ((size_t)t.y0 * iw + t.x1) * c + c8, v01);
    ldx8(src, f16, img + ((size_t)t.y1 * iw + t.x0) * c + c8, v10);
    ldx8(src, f16, img + ((size_t)t.y1 * iw + t.x1) * c + c8, v11);
#pragma unroll
    for (int j = 0; j < 8; j++)
        v[j] = rs_blend(v00[j], v01[j], v10[j], v11[j], t);
}

#endif

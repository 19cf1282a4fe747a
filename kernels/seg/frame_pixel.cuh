/*
 * frame_pixel.cuh - one source pixel of a frame (colour conversion of
 * NV12 / P010 / YUV420P / RGB24, frame_ref.h's range rules) and the box
 * sums of the area resampling, pixel by pixel: the device helpers of
 * frame_sample.cu's kernels. Private to it.
 */
#ifndef VR_FRAME_PIXEL_CUH
#define VR_FRAME_PIXEL_CUH

#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>


/* ---- colour: one source pixel ---- */

/* The planes of frame `i` of a batch. */
struct fview {
    const uint8_t *d0, *d1, *d2;
    int l0, l1, l2;
    int full_range;
};

static __device__ __forceinline__ fview fview_of(const frame_batch &fb, int i)
{
    fview v;
    v.d0 = fb.data[i][0];
    v.d1 = fb.data[i][1];
    v.d2 = fb.data[i][2];
    v.l0 = fb.linesize[i][0];
    v.l1 = fb.linesize[i][1];
    v.l2 = fb.linesize[i][2];
    v.full_range = fb.full_range;
    return v;
}

/* Normalised Y', Cb, Cr of pixel (x, y) (frame_ref.h's range rules; the
 * divisions become multiplications by the reciprocal: within 1 ulp). */
template <int FMT>
static __device__ __forceinline__ void yuv_at(const fview &f, int x, int y, float &Y,
                                              float &cb, float &cr)
{
    const int cx = x >> 1, cy = y >> 1;
    float y0, u0, v0, k;
    if (FMT == SEG_PIX_NV12) {
        const uint8_t *uv = f.d1 + (size_t)cy * f.l1 + 2 * cx;
        y0 = __ldg(f.d0 + (size_t)y * f.l0 + x);
        uchar2 c = __ldg((const uchar2 *)uv);
        u0 = c.x;
        v0 = c.y;
        k = 1.0f;
    } else if (FMT == SEG_PIX_P010) {
        const uint16_t *yp = (const uint16_t *)(f.d0 + (size_t)y * f.l0) + x;
        const ushort2 *uv = (const ushort2 *)(f.d1 + (size_t)cy * f.l1) + cx;
        y0 = (float)(__ldg(yp) >> 6);
        ushort2 c = __ldg(uv);
        u0 = (float)(c.x >> 6);
        v0 = (float)(c.y >> 6);
        k = 4.0f;
    } else { /* YUV420P */
        y0 = __ldg(f.d0 + (size_t)y * f.l0 + x);
        u0 = __ldg(f.d1 + (size_t)cy * f.l1 + cx);
        v0 = __ldg(f.d2 + (size_t)cy * f.l2 + cx);
        k = 1.0f;
    }
    if (f.full_range) {
        const float s = 1.0f / (255.0f * k);
        Y = y0 * s;
        cb = (u0 - 128.0f * k) * s;
        cr = (v0 - 128.0f * k) * s;
    } else {
        const float sy = 1.0f / (219.0f * k), sc = 1.0f / (224.0f * k);
        Y = (y0 - 16.0f * k) * sy;
        cb = (u0 - 128.0f * k) * sc;
        cr = (v0 - 128.0f * k) * sc;
    }
}

/* clamp to [0, 1]: one FADD.SAT / FMUL.SAT where it follows arithmetic */
static __device__ __forceinline__ float clamp01(float v)
{
    return __saturatef(v);
}

/* Y' (unclamped) of pixel (x, y) of a YUV frame. */
template <int FMT>
static __device__ __forceinline__ float luma_raw(const fview &f, int x, int y)
{
    if (FMT == SEG_PIX_P010) {
        float y0 = (float)(__ldg((const uint16_t *)(f.d0 + (size_t)y * f.l0) + x) >> 6);
        return f.full_range ? y0 * (1.0f / 1020.0f) : (y0 - 64.0f) * (1.0f / 876.0f);
    }
    float y0 = __ldg(f.d0 + (size_t)y * f.l0 + x);
    return f.full_range ? y0 * (1.0f / 255.0f) : (y0 - 16.0f) * (1.0f / 219.0f);
}

/* The BT.709 colour offsets R-Y', G-Y', B-Y' of chroma sample (cx, cy). */
template <int FMT>
static __device__ __forceinline__ void chroma_at(const fview &f, int cx, int cy, float &dr,
                                                 float &dg, float &db)
{
    float u0, v0, k;
    if (FMT == SEG_PIX_NV12) {
        uchar2 c = __ldg((const uchar2 *)(f.d1 + (size_t)cy * f.l1) + cx);
        u0 = c.x;
        v0 = c.y;
        k = 1.0f;
    } else if (FMT == SEG_PIX_P010) {
        ushort2 c = __ldg((const ushort2 *)(f.d1 + (size_t)cy * f.l1) + cx);
        u0 = (float)(c.x >> 6);
        v0 = (float)(c.y >> 6);
        k = 4.0f;
    } else {
        u0 = __ldg(f.d1 + (size_t)cy * f.l1 + cx);
        v0 = __ldg(f.d2 + (size_t)cy * f.l2 + cx);
        k = 1.0f;
    }
    const float sc = f.full_range ? 1.0f / (255.0f * k) : 1.0f / (224.0f * k);
    const float cb = (u0 - 128.0f * k) * sc, cr = (v0 - 128.0f * k) * sc;
    dr = 1.5748f * cr;
    dg = -0.187324f * cb - 0.468124f * cr;
    db = 1.8556f * cb;
}

template <int FMT>
static __device__ __forceinline__ void rgb_at(const fview &f, int x, int y, float &r,
                                              float &g, float &b)
{
    if (FMT == SEG_PIX_RGB24) {
        const uint8_t *p = f.d0 + (size_t)y * f.l0 + 3 * x;
        r = __ldg(p) * (1.0f / 255.0f);
        g = __ldg(p + 1) * (1.0f / 255.0f);
        b = __ldg(p + 2) * (1.0f / 255.0f);
        return;
    }
    float Y, cb, cr;
    yuv_at<FMT>(f, x, y, Y, cb, cr);
    r = clamp01(Y + 1.5748f * cr);
    g = clamp01(Y - 0.187324f * cb - 0.468124f * cr);
    b = clamp01(Y + 1.8556f * cb);
}

template <int FMT>
static __device__ __forceinline__ float luma_at(const fview &f, int x, int y)
{
    if (FMT == SEG_PIX_RGB24) {
        const uint8_t *p = f.d0 + (size_t)y * f.l0 + 3 * x;
        return (0.2126f * __ldg(p) + 0.7152f * __ldg(p + 1) + 0.0722f * __ldg(p + 2))
               * (1.0f / 255.0f);
    }
    if (FMT == SEG_PIX_NV12 || FMT == SEG_PIX_YUV420P) {
        /* luma needs no chroma: skip its loads */
        float y0 = __ldg(f.d0 + (size_t)y * f.l0 + x);
        return clamp01(f.full_range ? y0 * (1.0f / 255.0f) : (y0 - 16.0f) * (1.0f / 219.0f));
    }
    float y0 = (float)(__ldg((const uint16_t *)(f.d0 + (size_t)y * f.l0) + x) >> 6);
    return clamp01(f.full_range ? y0 * (1.0f / 1020.0f) : (y0 - 64.0f) * (1.0f / 876.0f));
}

/* ---- resampling (frame_ref.h's rule) ---- */

static __device__ __forceinline__ bool is_area(int rw, int rh, int dw, int dh)
{
    return 2LL * rw > 3LL * dw || 2LL * rh > 3LL * dh;
}

/* 32-bit unsigned arithmetic gives the C twin's 64-bit result: o, r, d are
 * at most 16384 (seg.c's SEG_MAX_DIM), so (o+1)*r < 2^29. A 64-bit division
 * is a long software routine on the GPU; this is a few instructions. */
static __device__ __forceinline__ void area_span(int o, int r, int d, int &a, int &b)
{
    a = (int)((unsigned)o * (unsigned)r / (unsigned)d);
    b = (int)((unsigned)(o + 1) * (unsigned)r / (unsigned)d);
    if (b <= a)
        b = a + 1;
}

/* u8 / 10-bit sample -> float without I2F (a quarter-rate instruction on
 * sm_90): the sample as the mantissa of 2^23, minus 2^23. Exact. */
static __device__ __forceinline__ float u2f(unsigned v)
{
    return __uint_as_float(0x4B000000u | v) - 8388608.0f;
}

/* The colour offsets of one chroma sample as the area sums use them:
 * dg = G - Y'; R and B are fused into the per-pixel FMAs (add_rgb). */
struct chroma_off {
    float cb, cr, dg;
};

/* u, v: the chroma samples as exact floats; sc, oc: the range's scale and
 * offset. Written as the FMAs ptxas made of the earlier `1.5748f * cr`
 * form (multiplications fused into the adds that follow), so every path
 * gives the same bits: __fmul_rn keeps dg's product unfused. */
static __device__ __forceinline__ chroma_off chroma_offsets(float u, float v, float sc,
                                                            float oc)
{
    chroma_off c;
    c.cb = fmaf(u, sc, oc);
    c.cr = fmaf(v, sc, oc);
    c.dg = fmaf(c.cb, -0.187324f, __fmul_rn(c.cr, -0.468124f));
    return c;
}

/* Adds pixel (Y', c) to the R, G, B sums (each clamped to [0, 1] first). */
static __device__ __forceinline__ void add_rgb(float Y, const chroma_off &c, float &s0,
                                               float &s1, float &s2)
{
    s0 += clamp01(fmaf(c.cr, 1.5748f, Y));
    s1 += clamp01(Y + c.dg);
    s2 += clamp01(fmaf(c.cb, 1.8556f, Y));
}

/* Sums of R, G, B over the box [x0, x1) x [y0, y1) (frame pixels) of a
 * 4:2:0 frame. The two pixels of a chroma sample share its colour offsets,
 * so each row runs as: a lone odd first pixel, then even-aligned pairs (one
 * chroma load and conversion per pair), then a lone last pixel: the same
 * trip counts for all threads of a warp up to one pair. Per pixel: a load,
 * a conversion, 3 saturating adds and 3 adds. NV12 boxes of aligned frames
 * take area_sum_nv12 below instead. */
template <int FMT>
static __device__ __forceinline__ void area_sum_yuv(const fview &f, int x0, int x1, int y0,
                                                    int y1, float &s0, float &s1, float &s2)
{
    const float k = FMT == SEG_PIX_P010 ? 4.0f : 1.0f;
    const float sy = f.full_range ? 1.0f / (255.0f * k) : 1.0f / (219.0f * k);
    const float oy = f.full_range ? 0.0f : -16.0f * k * sy;
    const float sc = f.full_range ? 1.0f / (255.0f * k) : 1.0f / (224.0f * k);
    const float oc = -128.0f * k * sc;
    for (int y = y0; y < y1; y++) {
        const uint8_t *yrow = f.d0 + (size_t)y * f.l0;
        const uint8_t *c1 = f.d1 + (size_t)(y >> 1) * f.l1;
        const uint8_t *c2 = FMT == SEG_PIX_YUV420P ? f.d2 + (size_t)(y >> 1) * f.l2 : nullptr;
        int x = x0;
        while (x < x1) {
            const int cx = x >> 1;
            float u, v;
            if (FMT == SEG_PIX_NV12) {
                uchar2 c = __ldg((const uchar2 *)c1 + cx);
                u = u2f(c.x);
                v = u2f(c.y);
            } else if (FMT == SEG_PIX_P010) {
                ushort2 c = __ldg((const ushort2 *)c1 + cx);
                u = u2f(c.x >> 6);
                v = u2f(c.y >> 6);
            } else {
                u = u2f(__ldg(c1 + cx));
                v = u2f(__ldg(c2 + cx));
            }
            const chroma_off c = chroma_offsets(u, v, sc, oc);
            /* this chroma sample covers x and, when x is even, x + 1 */
            const int n = ((x & 1) || x + 1 >= x1) ? 1 : 2;
            for (int i = 0; i < n; i++, x++) {
                const float yv = FMT == SEG_PIX_P010
                                     ? u2f(__ldg((const uint16_t *)yrow + x) >> 6)
                                     : u2f(__ldg(yrow + x));
                add_rgb(fmaf(yv, sy, oy), c, s0, s1, s2);
            }
        }
    }
}

#endif

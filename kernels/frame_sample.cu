/*
 * frame_sample.cu - the CUDA frame kernels that read the frame itself:
 * preprocess (colour conversion + resize + normalise into the network's
 * NHWC batch, for every tile of every eye of every frame in one launch),
 * luma at work size (the guided filter's guide), and the refinement that
 * writes the output masks (guided apply or bilinear upsample, fused with the
 * over all frames of a call; the temporal filter is frame_temporal.cu). The C twins are in
 * frame_ref.c; frame_ref.h spells out the sampling rules followed here.
 *
 * Frames come as NVDEC leaves them (NV12, P010 planes in device memory) or
 * as RGB24 / YUV420P; the pixel format is a template parameter so the inner
 * loops carry no format switch. One thread per output pixel (preprocess,
 * luma) or per 4 horizontally adjacent output pixels (refine, so the mask is
 * written in 32-bit words); neighbouring threads read neighbouring source
 * pixels, so the box reads coalesce.
 */
#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <string.h>

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

/* ---- NV12 area sums from 32-bit words ---- */

/* Words of a row one box reads: a box starting anywhere in its first word
 * and up to NV12_MAX_BOX pixels wide. Wider boxes take area_sum_yuv. */
#define NV12_WORDS 5
#define NV12_MAX_BOX (4 * NV12_WORDS - 3)

/* Byte b of w as the float 2^23 + byte: u2f's first half, one PRMT. */
static __device__ __forceinline__ float byte_2p23(uint32_t w, int b)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440 + b));
}

/* Pixel b of luma word w as the float 2^23 + byte when byte b of ex is
 * 0x4B, as about -3.4e7 when it is 0xCB (a pixel outside the box: its
 * clamped terms are all +0.0f, which leaves a sum unchanged). One PRMT:
 * bytes 1 and 2 replicate the sign of ex's byte b (prmt's selector msb,
 * which __byte_perm masks off, hence the inline PTX). */
static __device__ __forceinline__ float luma_2p23(uint32_t w, uint32_t ex, int b)
{
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;"
        : "=r"(d)
        : "r"(w), "r"(ex), "r"((4 + b) << 12 | (12 + b) << 8 | (12 + b) << 4 | b));
    return __uint_as_float(d);
}

/* luma_2p23's exponent bytes, per word of a window whose pixels [lo, hi)
 * are the box. */
static __device__ __forceinline__ void box_exponents(int lo, int hi, uint32_t ex[NV12_WORDS])
{
#pragma unroll
    for (int k = 0; k < NV12_WORDS; k++) {
        ex[k] = 0x4B4B4B4Bu;
#pragma unroll
        for (int b = 0; b < 4; b++)
            if (4 * k + b < lo || 4 * k + b >= hi)
                ex[k] |= 0x80u << 8 * b;
    }
}

/* Whether area_sum_nv12 may read frame f by aligned words: planes and rows
 * 4-byte aligned, so a word holding one pixel of a row lies in its pitch. */
static __device__ __forceinline__ bool nv12_words_ok(const fview &f)
{
    return (((uintptr_t)f.d0 | (uintptr_t)f.d1 | (unsigned)f.l0 | (unsigned)f.l1) & 3) == 0;
}

/* area_sum_yuv<NV12> bit for bit, for boxes up to NV12_MAX_BOX wide in
 * frames nv12_words_ok accepts. A box row is read as the aligned words
 * covering it (luma words and the chroma words right below them: the UV
 * bytes of pixel x sit at byte x & ~1 of its chroma row), and each chroma
 * row's offsets are converted once for the two luma rows that share it.
 * Pixels of the window outside the box add exactly +0.0f to the sums
 * (luma_2p23), so all indexing is fixed at compile time and the window
 * stays in registers; the sums see the same terms in the same order as
 * area_sum_yuv. */
static __device__ __forceinline__ void area_sum_nv12(const fview &f, int x0, int x1, int y0,
                                                     int y1, float &s0, float &s1, float &s2)
{
    constexpr int NP = 4 * NV12_WORDS; /* pixels of the window */
    const float sy = f.full_range ? 1.0f / 255.0f : 1.0f / 219.0f;
    const float oy = f.full_range ? 0.0f : -16.0f * sy;
    const float sc = f.full_range ? 1.0f / 255.0f : 1.0f / 224.0f;
    const float oc = -128.0f * sc;
    const int wb = x0 & ~3, lo = x0 - wb, hi = x1 - wb; /* the box: window pixels [lo, hi) */
    const int nw = (hi + 3) >> 2;                      /* words the box touches */
    uint32_t ex[NV12_WORDS];
    box_exponents(lo, hi, ex);
    /* the window's first word in luma row y and in its chroma row; walked
     * down the box, so each load is a base register plus a constant */
    const uint8_t *lrow = f.d0 + (size_t)y0 * f.l0 + wb;
    const uint8_t *crow = f.d1 + (size_t)(y0 >> 1) * f.l1 + wb;
    for (int y = y0; y < y1;) {
        const int yn = min(y1, (y | 1) + 1); /* rows [y, yn) share chroma row y >> 1 */
        /* opaque to the compiler, which would otherwise rebuild each
         * predicated load's address from the row index */
        asm("" : "+l"(lrow), "+l"(crow));
        const uint32_t *cw = (const uint32_t *)crow, *lw = (const uint32_t *)lrow;
        /* row yn - 1: row y again when it is alone (read, not used) */
        const uint32_t *lw2 = (const uint32_t *)(lrow + (yn - 1 - y) * f.l0);
        uint32_t cv[NV12_WORDS], l1v[NV12_WORDS], l2v[NV12_WORDS];
        /* all loads first, so they are in flight together */
#pragma unroll
        for (int k = 0; k < NV12_WORDS; k++)
            if (k < nw) { /* words past nw are never read */
                cv[k] = __ldg(cw + k);
                l1v[k] = __ldg(lw + k);
                l2v[k] = __ldg(lw2 + k);
            }
        chroma_off c[NP / 2]; /* per pixel pair of the window */
#pragma unroll
        for (int k = 0; k < NV12_WORDS; k++) {
            if (k >= nw)
                break;
#pragma unroll
            for (int p = 0; p < 2; p++)
                c[2 * k + p] = chroma_offsets(byte_2p23(cv[k], 2 * p) - 8388608.0f,
                                              byte_2p23(cv[k], 2 * p + 1) - 8388608.0f, sc, oc);
        }
        for (int r = y; r < yn; r++) {
#pragma unroll
            for (int k = 0; k < NV12_WORDS; k++) {
                if (k >= nw)
                    break;
                const uint32_t w = r == y ? l1v[k] : l2v[k];
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const int j = 4 * k + b;
                    add_rgb(fmaf(luma_2p23(w, ex[k], b) - 8388608.0f, sy, oy), c[j >> 1], s0,
                            s1, s2);
                }
            }
        }
        lrow += (yn - y) * f.l0;
        crow += f.l1;
        y = yn;
    }
}

/* ---- NV12 luma from 32-bit words ---- */

/* luma_at<NV12>'s range as luma_term applies it to 2^23 + y: off is 2^23,
 * plus 16 in limited range (so p - off is y - 16, exactly). */
struct luma_range {
    float off, scale;
};

static __device__ __forceinline__ luma_range luma_range_of(const fview &f)
{
    luma_range r;
    r.off = f.full_range ? 8388608.0f : 8388624.0f;
    r.scale = f.full_range ? 1.0f / 255.0f : 1.0f / 219.0f;
    asm("" : "+f"(r.off), "+f"(r.scale)); /* else rebuilt inside the row loops */
    return r;
}

/* luma_at<NV12> of the pixel p = 2^23 + y (byte_2p23, luma_2p23) to the
 * bit: one FADD and one FMUL.SAT, as its I2F, FADD, FMUL and FADD.SAT. */
static __device__ __forceinline__ float luma_term(float p, const luma_range &r)
{
    return clamp01((p - r.off) * r.scale);
}

/* Whether the luma plane of f may be read by aligned words. */
static __device__ __forceinline__ bool luma_words_ok(const fview &f)
{
    return (((uintptr_t)f.d0 | (unsigned)f.l0) & 3) == 0;
}

/* The sum of luma_at<NV12> over the box [x0, x1) x [y0, y1), up to
 * NV12_MAX_BOX wide, in a frame luma_words_ok accepts, bit for bit as the
 * byte loop of sample_luma: a box row is read as the aligned words covering
 * it; the window's pixels outside the box add +0.0f (luma_2p23). */
static __device__ __forceinline__ float luma_box_nv12(const fview &f, int x0, int x1, int y0,
                                                      int y1)
{
    const luma_range lr = luma_range_of(f);
    const int wb = x0 & ~3, hi = x1 - wb; /* the box: window pixels [x0 - wb, hi) */
    const int nw = (hi + 3) >> 2;        /* words the box touches */
    uint32_t ex[NV12_WORDS];
    box_exponents(x0 - wb, hi, ex);
    const uint8_t *row = f.d0 + (size_t)y0 * f.l0 + wb;
    float s = 0.0f;
    for (int y = y0; y < y1; y++, row += f.l0) {
        asm("" : "+l"(row)); /* as in area_sum_nv12: loads off one base */
        const uint32_t *w = (const uint32_t *)row;
        uint32_t v[NV12_WORDS];
#pragma unroll
        for (int k = 0; k < NV12_WORDS; k++)
            if (k == 0 || k < nw) /* nw >= 1: saying so keeps word 0 unbranched */
                v[k] = __ldg(w + k);
#pragma unroll
        for (int k = 0; k < NV12_WORDS; k++) {
            if (k > 0 && k >= nw)
                break;
#pragma unroll
            for (int b = 0; b < 4; b++)
                s += luma_term(luma_2p23(v[k], ex[k], b), lr);
        }
    }
    return s;
}

/* RGB of rect r resampled to dw x dh at output pixel (ox, oy). */
template <int FMT>
static __device__ __forceinline__ void sample_rgb(const fview &f, frame_rect r, int dw,
                                                  int dh, bool area, int ox, int oy,
                                                  float v[3])
{
    if (area) {
        int x0, x1, y0, y1;
        area_span(ox, r.w, dw, x0, x1);
        area_span(oy, r.h, dh, y0, y1);
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
        if (FMT == SEG_PIX_RGB24) {
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++) {
                    float a, b, c;
                    rgb_at<FMT>(f, r.x + x, r.y + y, a, b, c);
                    s0 += a;
                    s1 += b;
                    s2 += c;
                }
        } else if (FMT == SEG_PIX_NV12 && x1 - x0 <= NV12_MAX_BOX && nv12_words_ok(f)) {
            area_sum_nv12(f, r.x + x0, r.x + x1, r.y + y0, r.y + y1, s0, s1, s2);
        } else {
            area_sum_yuv<FMT>(f, r.x + x0, r.x + x1, r.y + y0, r.y + y1, s0, s1, s2);
        }
        float inv = 1.0f / (float)((x1 - x0) * (y1 - y0));
        v[0] = s0 * inv;
        v[1] = s1 * inv;
        v[2] = s2 * inv;
        return;
    }
    int xa, xb, ya, yb;
    float tx, ty;
    fcu_taps(ox, r.w, dw, &xa, &xb, &tx);
    fcu_taps(oy, r.h, dh, &ya, &yb, &ty);
    float q[4][3];
    rgb_at<FMT>(f, r.x + xa, r.y + ya, q[0][0], q[0][1], q[0][2]);
    rgb_at<FMT>(f, r.x + xb, r.y + ya, q[1][0], q[1][1], q[1][2]);
    rgb_at<FMT>(f, r.x + xa, r.y + yb, q[2][0], q[2][1], q[2][2]);
    rgb_at<FMT>(f, r.x + xb, r.y + yb, q[3][0], q[3][1], q[3][2]);
#pragma unroll
    for (int c = 0; c < 3; c++) {
        float top = fcu_lerp(q[0][c], q[1][c], tx);
        float bot = fcu_lerp(q[2][c], q[3][c], tx);
        v[c] = fcu_lerp(top, bot, ty);
    }
}

/* Luma of rect r resampled to dw x dh at output pixel (ox, oy). */
template <int FMT>
static __device__ __forceinline__ float sample_luma(const fview &f, frame_rect r, int dw,
                                                    int dh, bool area, int ox, int oy)
{
    if (area) {
        int x0, x1, y0, y1;
        area_span(ox, r.w, dw, x0, x1);
        area_span(oy, r.h, dh, y0, y1);
        float s = 0.0f;
        if (FMT == SEG_PIX_NV12 && x1 - x0 <= NV12_MAX_BOX && luma_words_ok(f))
            s = luma_box_nv12(f, r.x + x0, r.x + x1, r.y + y0, r.y + y1);
        else
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++)
                    s += luma_at<FMT>(f, r.x + x, r.y + y);
        return s * (1.0f / (float)((x1 - x0) * (y1 - y0)));
    }
    int xa, xb, ya, yb;
    float tx, ty;
    fcu_taps(ox, r.w, dw, &xa, &xb, &tx);
    fcu_taps(oy, r.h, dh, &ya, &yb, &ty);
    float top = fcu_lerp(luma_at<FMT>(f, r.x + xa, r.y + ya), luma_at<FMT>(f, r.x + xb, r.y + ya), tx);
    float bot = fcu_lerp(luma_at<FMT>(f, r.x + xa, r.y + yb), luma_at<FMT>(f, r.x + xb, r.y + yb), tx);
    return fcu_lerp(top, bot, ty);
}

/* ---- (1) preprocess ---- */

/* grid: x = pixels of one tile / block, y = tile, z = frame. */
template <int FMT>
__global__ void __launch_bounds__(256)
k_preprocess(const __grid_constant__ frame_batch fb, const frame_rect *__restrict__ rects,
             int tpf, int mw, int mh, float *__restrict__ out)
{
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= mw * mh)
        return;
    const int tile = blockIdx.y, fr = blockIdx.z;
    const frame_rect r = rects[tile];
    const fview f = fview_of(fb, fr);
    const int ox = pix % mw, oy = pix / mw;
    float v[3];
    sample_rgb<FMT>(f, r, mw, mh, is_area(r.w, r.h, mw, mh), ox, oy, v);
    float *o = out + (((size_t)fr * tpf + tile) * mw * mh + pix) * 3;
    o[0] = v[0];
    o[1] = v[1];
    o[2] = v[2];
}

#define FMT_DISPATCH(fmt, KERNEL, ...)                                              \
    switch (fmt) {                                                                  \
    case SEG_PIX_RGB24: KERNEL<SEG_PIX_RGB24><<<__VA_ARGS__; break;                 \
    case SEG_PIX_NV12: KERNEL<SEG_PIX_NV12><<<__VA_ARGS__; break;                   \
    case SEG_PIX_P010: KERNEL<SEG_PIX_P010><<<__VA_ARGS__; break;                   \
    default: KERNEL<SEG_PIX_YUV420P><<<__VA_ARGS__; break;                          \
    }

extern "C" int frame_preprocess_batch_cuda(const struct frame_batch *fb,
                                           const struct frame_rect *rects,
                                           int tiles_per_frame, int mw, int mh, float *out,
                                           cudaStream_t st, vr_err *err)
{
    if (fb->n < 1 || fb->n > FRAME_CU_MAX_FRAMES || tiles_per_frame < 1 || mw < 1 || mh < 1)
        return vr_err_set(err, VR_EINVAL, "preprocess: %d frames x %d tiles of %dx%d",
                          fb->n, tiles_per_frame, mw, mh);
    dim3 grid((mw * mh + 255) / 256, tiles_per_frame, fb->n);
    FMT_DISPATCH(fb->fmt, k_preprocess, grid, 256, 0, st>>>(*fb, rects, tiles_per_frame, mw, mh, out));
    return fcu_check("preprocess", err);
}

/* ---- luma at work size ---- */

/* grid: x = work pixels / block, y = eye, z = frame. */
template <int FMT>
__global__ void __launch_bounds__(256)
k_luma(const __grid_constant__ frame_batch fb, const __grid_constant__ frame_cu_plan p,
       float *__restrict__ out)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= e.work_w * e.work_h)
        return;
    const int fr = blockIdx.z;
    const fview f = fview_of(fb, fr);
    const int ox = pix % e.work_w, oy = pix / e.work_w;
    out[(size_t)fr * p.work_per_frame + e.work_off + pix] =
        sample_luma<FMT>(f, e.eye, e.work_w, e.work_h,
                         is_area(e.eye.w, e.eye.h, e.work_w, e.work_h), ox, oy);
}

extern "C" int frame_luma_batch_cuda(const struct frame_batch *fb,
                                     const struct frame_cu_plan *p, float *out,
                                     cudaStream_t st, vr_err *err)
{
    dim3 grid((p->max_work + 255) / 256, p->n_eyes, fb->n);
    FMT_DISPATCH(fb->fmt, k_luma, grid, 256, 0, st>>>(*fb, *p, out));
    return fcu_check("luma", err);
}

/* ---- (3) refine, over the frames of a call ---- */

#define RPX 4 /* output pixels per thread, one 32-bit store */

/* Whether the RPX area boxes [x0[k], x1[k]) are 2 pixels wide and side by
 * side (the 2:1 shrink of an 8K side-by-side frame's eyes): then they cover
 * 2 * RPX consecutive pixels, two aligned words a row (luma_pairs_nv12). */
static __device__ __forceinline__ bool boxes_paired(const int x0[RPX], const int x1[RPX])
{
    bool ok = true;
#pragma unroll
    for (int k = 0; k < RPX; k++)
        ok = ok && x0[k] == x0[0] + 2 * k && x1[k] == x0[k] + 2;
    return ok;
}

/* The luma sums of RPX output pixels whose boxes boxes_paired accepts:
 * frame pixels [x, x + 2 * RPX) of rows [y0, y1), x a multiple of 4 in a
 * plane luma_words_ok accepts. Bit for bit the byte loop of k_refine (the
 * same terms in the same order per sum), from RPX / 2 words a row instead
 * of 2 * RPX byte loads. */
static __device__ __forceinline__ void luma_pairs_nv12(const fview &f, int x, int y0, int y1,
                                                       float s[RPX])
{
    const luma_range lr = luma_range_of(f);
#pragma unroll
    for (int k = 0; k < RPX; k++)
        s[k] = 0.0f;
    const uint32_t *row = (const uint32_t *)(f.d0 + (size_t)y0 * f.l0 + x);
    for (int y = y0; y < y1; y++, row = (const uint32_t *)((const uint8_t *)row + f.l0)) {
        uint32_t w[RPX / 2];
#pragma unroll
        for (int i = 0; i < RPX / 2; i++)
            w[i] = __ldg(row + i);
#pragma unroll
        for (int j = 0; j < 2 * RPX; j++)
            s[j >> 1] += luma_term(byte_2p23(w[j >> 2], j & 3), lr);
    }
}

/* grid: x = groups of RPX pixels of a row / block, y = output row, z = eye.
 * Each thread walks the frames of the call, reusing its taps. */
template <int FMT, bool GUIDED>
__global__ void __launch_bounds__(128)
k_refine(const float *__restrict__ a, const float *__restrict__ b,
         const __grid_constant__ frame_batch fb, const __grid_constant__ frame_cu_plan p,
         const __grid_constant__ frame_masks m)
{
    const frame_cu_eye &e = p.e[blockIdx.z];
    const int dw = e.out.w, dh = e.out.h, w = e.work_w, h = e.work_h;
    const int oy = blockIdx.y;
    const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * RPX;
    if (oy >= dh || ox0 >= dw)
        return;
    const int np = dw - ox0 < RPX ? dw - ox0 : RPX;

    /* taps into the work images, shared by all frames */
    int ya, yb;
    float ty;
    fcu_taps(oy, h, dh, &ya, &yb, &ty);
    int xa[RPX], xb[RPX];
    float tx[RPX];
#pragma unroll
    for (int k = 0; k < RPX; k++)
        fcu_taps(ox0 + (k < np ? k : 0), w, dw, &xa[k], &xb[k], &tx[k]);

    const bool area = is_area(e.eye.w, e.eye.h, dw, dh);
    const bool direct = e.eye.w == dw && e.eye.h == dh;
    /* where each output pixel samples the frame's luma: the same for every
     * frame, so computed once (area boxes, or bilinear taps) */
    int lx0[RPX], lx1[RPX], ly0 = 0, ly1 = 0;
    float ltx[RPX], lty = 0.0f, linv[RPX]; /* linv: 1 / pixels of an area box */
    if (GUIDED && !direct) {
        if (area)
            area_span(oy, e.eye.h, dh, ly0, ly1);
        else
            fcu_taps(oy, e.eye.h, dh, &ly0, &ly1, &lty);
#pragma unroll
        for (int k = 0; k < RPX; k++) {
            const int ox = ox0 + (k < np ? k : 0);
            if (area) {
                area_span(ox, e.eye.w, dw, lx0[k], lx1[k]);
                linv[k] = 1.0f / (float)((lx1[k] - lx0[k]) * (ly1 - ly0));
            } else {
                fcu_taps(ox, e.eye.w, dw, &lx0[k], &lx1[k], &ltx[k]);
            }
        }
    }
    /* NV12 boxes read by words where every frame of the call allows */
    const bool paired = FMT == SEG_PIX_NV12 && GUIDED && area && np == RPX &&
                        boxes_paired(lx0, lx1) && ((e.eye.x + lx0[0]) & 3) == 0;
    for (int fr = 0; fr < fb.n; fr++) {
        const fview f = fview_of(fb, fr);
        const size_t base = (size_t)fr * p.work_per_frame + e.work_off;
        const float *a0 = a + base + (size_t)ya * w, *a1 = a + base + (size_t)yb * w;
        const float *b0 = b + base + (size_t)ya * w, *b1 = b + base + (size_t)yb * w;
        /* rows and taps opaque, per frame: each tap's address is then one
         * IMAD.WIDE off its row (not a 64-bit index shared by a and b, or
         * 64-bit taps held across the frames, 27 more registers) */
        static_assert(RPX == 4, "the asm below names each tap");
        int ia[RPX], ib[RPX];
#pragma unroll
        for (int k = 0; k < RPX; k++) {
            ia[k] = xa[k];
            ib[k] = xb[k];
        }
        asm("" : "+l"(a0), "+l"(a1), "+l"(b0), "+l"(b1), "+r"(ia[0]), "+r"(ia[1]), "+r"(ia[2]),
                 "+r"(ia[3]), "+r"(ib[0]), "+r"(ib[1]), "+r"(ib[2]), "+r"(ib[3]));
        /* the guide: the frame's luma at each output pixel */
        float I[RPX];
        if (GUIDED && paired && luma_words_ok(f)) {
            luma_pairs_nv12(f, e.eye.x + lx0[0], e.eye.y + ly0, e.eye.y + ly1, I);
#pragma unroll
            for (int k = 0; k < RPX; k++)
                I[k] *= linv[k];
        } else if (GUIDED) {
#pragma unroll
            for (int k = 0; k < RPX; k++) {
                const int ox = ox0 + (k < np ? k : 0);
                if (direct) {
                    I[k] = luma_at<FMT>(f, e.eye.x + ox, e.eye.y + oy);
                } else if (area) {
                    float sum = 0.0f;
                    for (int y = ly0; y < ly1; y++)
                        for (int x = lx0[k]; x < lx1[k]; x++)
                            sum += luma_at<FMT>(f, e.eye.x + x, e.eye.y + y);
                    I[k] = sum * linv[k];
                } else {
                    const int X = e.eye.x, Y = e.eye.y;
                    float top = fcu_lerp(luma_at<FMT>(f, X + lx0[k], Y + ly0),
                                         luma_at<FMT>(f, X + lx1[k], Y + ly0), ltx[k]);
                    float bot = fcu_lerp(luma_at<FMT>(f, X + lx0[k], Y + ly1),
                                         luma_at<FMT>(f, X + lx1[k], Y + ly1), ltx[k]);
                    I[k] = fcu_lerp(top, bot, lty);
                }
            }
        }
        uint8_t v[RPX];
#pragma unroll
        for (int k = 0; k < RPX; k++) {
            float at = fcu_lerp(__ldg(a0 + ia[k]), __ldg(a0 + ib[k]), tx[k]);
            float ab = fcu_lerp(__ldg(a1 + ia[k]), __ldg(a1 + ib[k]), tx[k]);
            float av = fcu_lerp(at, ab, ty);
            if (GUIDED) {
                float bt = fcu_lerp(__ldg(b0 + ia[k]), __ldg(b0 + ib[k]), tx[k]);
                float bb = fcu_lerp(__ldg(b1 + ia[k]), __ldg(b1 + ib[k]), tx[k]);
                float bv = fcu_lerp(bt, bb, ty);
                v[k] = fcu_to_u8(__fadd_rn(__fmul_rn(av, I[k]), bv));
            } else {
                v[k] = fcu_to_u8(av);
            }
        }
        uint8_t *dst = m.data[fr] + (size_t)(e.out.y + oy) * m.linesize[fr] + e.out.x + ox0;
        if (np == RPX && ((uintptr_t)dst & 3) == 0)
            *(uint32_t *)dst = v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24;
        else
            for (int k = 0; k < np; k++)
                dst[k] = v[k];
    }
}

template <bool G>
static void launch_refine(int fmt, dim3 grid, int threads, cudaStream_t st, const float *a,
                          const float *b, const frame_batch &fb, const frame_cu_plan &p,
                          const frame_masks &m)
{
    switch (fmt) {
    case SEG_PIX_RGB24:
        k_refine<SEG_PIX_RGB24, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    case SEG_PIX_NV12:
        k_refine<SEG_PIX_NV12, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    case SEG_PIX_P010:
        k_refine<SEG_PIX_P010, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    default:
        k_refine<SEG_PIX_YUV420P, G><<<grid, threads, 0, st>>>(a, b, fb, p, m);
        break;
    }
}

extern "C" int frame_refine_batch_cuda(const float *a, const float *b, int guided,
                                       const struct frame_batch *fb,
                                       const struct frame_cu_plan *p,
                                       const struct frame_masks *masks, cudaStream_t st,
                                       vr_err *err)
{
    int max_w = 0, max_h = 0;
    for (int i = 0; i < p->n_eyes; i++) {
        max_w = p->e[i].out.w > max_w ? p->e[i].out.w : max_w;
        max_h = p->e[i].out.h > max_h ? p->e[i].out.h : max_h;
    }
    if (max_h > 65535)
        return vr_err_set(err, VR_EINVAL, "refine: %d rows", max_h);
    const int threads = 128;
    dim3 grid((max_w + threads * RPX - 1) / (threads * RPX), max_h, p->n_eyes);
    if (guided)
        launch_refine<true>(fb->fmt, grid, threads, st, a, b, *fb, *p, *masks);
    else
        launch_refine<false>(fb->fmt, grid, threads, st, a, b, *fb, *p, *masks);
    return fcu_check("refine", err);
}

/* ---- twins (one frame) ---- */

extern "C" void frame_batch_one(struct frame_batch *fb, const struct seg_frame *f)
{
    fb->n = 1;
    fb->fmt = f->fmt;
    fb->full_range = f->full_range;
    for (int i = 0; i < 3; i++) {
        fb->data[0][i] = f->data[i];
        fb->linesize[0][i] = f->linesize[i];
    }
}

extern "C" int frame_preprocess_cuda(const struct seg_frame *f, const struct frame_rect *rects,
                                     int n, int mw, int mh, float *out, cudaStream_t st,
                                     vr_err *err)
{
    struct frame_batch fb;
    frame_batch_one(&fb, f);
    return frame_preprocess_batch_cuda(&fb, rects, n, mw, mh, out, st, err);
}

/* A one-eye plan whose eye is `rect` and whose work (or output) is dw x dh. */
static void one_eye(struct frame_cu_plan *p, struct frame_rect rect, int ww, int wh,
                    int dw, int dh)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = 1;
    p->e[0].eye = rect;
    p->e[0].out = (struct frame_rect){ 0, 0, dw, dh };
    p->e[0].work_w = ww;
    p->e[0].work_h = wh;
    p->work_per_frame = (size_t)ww * wh;
    p->max_work = ww * wh;
    p->max_out = dw * dh;
}

extern "C" int frame_luma_cuda(const struct seg_frame *f, struct frame_rect rect, int dw,
                               int dh, float *out, cudaStream_t st, vr_err *err)
{
    struct frame_batch fb;
    struct frame_cu_plan p;
    frame_batch_one(&fb, f);
    one_eye(&p, rect, dw, dh, dw, dh);
    return frame_luma_batch_cuda(&fb, &p, out, st, err);
}

extern "C" int frame_guided_apply_cuda(const float *a, const float *b, int w, int h,
                                       const struct seg_frame *f, struct frame_rect rect,
                                       uint8_t *dst, int dst_linesize, int dw, int dh,
                                       cudaStream_t st, vr_err *err)
{
    struct frame_batch fb;
    struct frame_cu_plan p;
    struct frame_masks m;
    frame_batch_one(&fb, f);
    one_eye(&p, rect, w, h, dw, dh);
    m.data[0] = dst;
    m.linesize[0] = dst_linesize;
    return frame_refine_batch_cuda(a, b, 1, &fb, &p, &m, st, err);
}

extern "C" int frame_upsample_bilinear_cuda(const float *mask, int w, int h, uint8_t *dst,
                                            int dst_linesize, int dw, int dh,
                                            cudaStream_t st, vr_err *err)
{
    /* the bilinear path reads no frame: a dummy RGB24 view of the right size */
    struct frame_batch fb;
    struct frame_cu_plan p;
    struct frame_masks m;
    memset(&fb, 0, sizeof fb);
    fb.n = 1;
    fb.fmt = SEG_PIX_RGB24;
    one_eye(&p, (struct frame_rect){ 0, 0, dw, dh }, w, h, dw, dh);
    m.data[0] = dst;
    m.linesize[0] = dst_linesize;
    return frame_refine_batch_cuda(mask, mask, 0, &fb, &p, &m, st, err);
}

/* ---- plan view ---- */

extern "C" void frame_cu_plan_make(const struct tile_plan *tp, struct frame_cu_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = tp->n_eyes;
    for (int i = 0; i < tp->n_eyes; i++) {
        const struct tile_eye *te = &tp->eye[i];
        struct frame_cu_eye *e = &p->e[i];
        e->eye = te->eye;
        e->out = te->out;
        e->work_w = te->work_w;
        e->work_h = te->work_h;
        e->tile0 = p->tiles_per_frame;
        e->ntiles = te->n;
        e->work_off = p->work_per_frame;
        p->tiles_per_frame += te->n;
        p->work_per_frame += (size_t)te->work_w * te->work_h;
        if (te->work_w * te->work_h > p->max_work)
            p->max_work = te->work_w * te->work_h;
        if (te->out.w * te->out.h > p->max_out)
            p->max_out = te->out.w * te->out.h;
    }
}

/*
 * frame_words.cuh - NV12 box sums read as aligned 32-bit words (the 8K
 * preprocess, the guide's luma, the refine's luma boxes): the same terms
 * in the same order as the pixel-by-pixel sums of frame_pixel.cuh, pixels
 * of a word outside the box made exact +0 terms. Private to
 * frame_sample.cu.
 */
#ifndef VR_FRAME_WORDS_CUH
#define VR_FRAME_WORDS_CUH

#include "frame_pixel.cuh"


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
template <int NW = NV12_WORDS>
static __device__ __forceinline__ void box_exponents(int lo, int hi, uint32_t ex[NW])
{
#pragma unroll
    for (int k = 0; k < NW; k++) {
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

/* The window pixels area_sum_nv12 must visit for every area box of rect
 * r shrunk to d pixels (r wider than d): a box is at most ceil(r / d)
 * wide and starts at most 3 pixels into its first word; exactly r / d
 * from pixel 0 when every box starts on a word. The 2x2 grid tiles of an
 * 8K eye (9-10 pixel boxes) need 13 of the 16 pixels of 4 words. */
static __device__ __forceinline__ int window_pixels(int rx, int rw, int d)
{
    const int wide = (rw + d - 1) / d;
    return rw % d == 0 && wide % 4 == 0 && rx % 4 == 0 ? wide : wide + 3;
}

/* The box of area_sum_nv12<NV12_FOLD_BOX, true> (FOLD below). */
#define NV12_FOLD_BOX 16

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

/* area_sum_yuv<NV12> bit for bit, for boxes up to NV12_MAX_BOX wide in
 * frames nv12_words_ok accepts. A box row is read as the aligned words
 * covering it (luma words and the chroma words right below them: the UV
 * bytes of pixel x sit at byte x & ~1 of its chroma row), and each chroma
 * row's offsets are converted once for the two luma rows that share it.
 * Pixels of the window outside the box add exactly +0.0f to the sums
 * (luma_2p23), so all indexing is fixed at compile time and the window
 * stays in registers; the sums see the same terms in the same order as
 * area_sum_yuv. NP: the window's pixels (window_pixels; at most
 * 4 * NV12_WORDS): a warp visits NP, not 4 words, when no box reaches
 * further.
 *
 * FOLD: the box is 16 wide from a word, its rows [y0, y0 + 2 * half) with
 * half even; l4 also gets luma_box_nv12 of its four quarters (top left,
 * top right, bottom left, bottom right), each the same terms in the same
 * order: the guide's luma at twice the tile's size read in the same pass. */
template <int NP, bool FOLD>
static __device__ __forceinline__ void area_sum_nv12(const fview &f, int x0, int x1, int y0,
                                                     int y1, float &s0, float &s1, float &s2,
                                                     float l4[4] = nullptr, int half = 0)
{
    constexpr int NW = (NP + 3) / 4;   /* words of the window */
    static_assert(NP <= 4 * NV12_WORDS && (!FOLD || NP == NV12_FOLD_BOX), "window");
    const float sy = f.full_range ? 1.0f / 255.0f : 1.0f / 219.0f;
    const float oy = f.full_range ? 0.0f : -16.0f * sy;
    const float sc = f.full_range ? 1.0f / 255.0f : 1.0f / 224.0f;
    const float oc = -128.0f * sc;
    const int wb = x0 & ~3, lo = x0 - wb, hi = x1 - wb; /* the box: window pixels [lo, hi) */
    const int nw = (hi + 3) >> 2;                      /* words the box touches */
    uint32_t ex[NW];
    box_exponents<NW>(lo, hi, ex);
    luma_range lr;
    float la = 0.0f, lb = 0.0f; /* FOLD: the left and right quarters of this half */
    if (FOLD)
        lr = luma_range_of(f);
    /* the window's first word in luma row y and in its chroma row; walked
     * down the box, so each load is a base register plus a constant */
    const uint8_t *lrow = f.d0 + (size_t)y0 * f.l0 + wb;
    const uint8_t *crow = f.d1 + (size_t)(y0 >> 1) * f.l1 + wb;
    for (int y = y0; y < y1;) {
        const int yn = min(y1, (y | 1) + 1); /* rows [y, yn) share chroma row y >> 1 */
        if (FOLD && y - y0 == half) { /* on to the bottom quarters (half is even) */
            l4[0] = la;
            l4[1] = lb;
            la = lb = 0.0f;
        }
        /* opaque to the compiler, which would otherwise rebuild each
         * predicated load's address from the row index */
        asm("" : "+l"(lrow), "+l"(crow));
        const uint32_t *cw = (const uint32_t *)crow, *lw = (const uint32_t *)lrow;
        /* row yn - 1: row y again when it is alone (read, not used) */
        const uint32_t *lw2 = (const uint32_t *)(lrow + (yn - 1 - y) * f.l0);
        uint32_t cv[NW], l1v[NW], l2v[NW];
        /* all loads first, so they are in flight together */
#pragma unroll
        for (int k = 0; k < NW; k++)
            if (k < nw) { /* words past nw are never read */
                cv[k] = __ldg(cw + k);
                l1v[k] = __ldg(lw + k);
                l2v[k] = __ldg(lw2 + k);
            }
        chroma_off c[(NP + 1) / 2]; /* per pixel pair of the window */
#pragma unroll
        for (int k = 0; k < NW; k++) {
            if (k >= nw)
                break;
#pragma unroll
            for (int p = 0; p < 2; p++)
                if (4 * k + 2 * p < NP)
                    c[2 * k + p] = chroma_offsets(byte_2p23(cv[k], 2 * p) - 8388608.0f,
                                                  byte_2p23(cv[k], 2 * p + 1) - 8388608.0f,
                                                  sc, oc);
        }
        for (int r = y; r < yn; r++) {
#pragma unroll
            for (int k = 0; k < NW; k++) {
                if (k >= nw)
                    break;
                const uint32_t w = r == y ? l1v[k] : l2v[k];
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const int j = 4 * k + b;
                    if (j >= NP) /* outside every box */
                        break;
                    const float p = luma_2p23(w, ex[k], b);
                    add_rgb(fmaf(p - 8388608.0f, sy, oy), c[j >> 1], s0, s1, s2);
                    if (FOLD) {
                        if (k < NW / 2)
                            la += luma_term(p, lr);
                        else
                            lb += luma_term(p, lr);
                    }
                }
            }
        }
        lrow += (yn - y) * f.l0;
        crow += f.l1;
        y = yn;
    }
    if (FOLD) {
        l4[2] = la;
        l4[3] = lb;
    }
}

#endif

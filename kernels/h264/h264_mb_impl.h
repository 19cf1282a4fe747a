/*
 * h264_mb_impl.h - stage 1 of the matte encoder for one MB: predict,
 * transform, quantise and reconstruct (h264_ref.h). One source for both
 * twins: the C loops of h264_mb_ref.c and the CUDA kernels of h264_mb.cu
 * (a thread an MB) include it, so the arithmetic is the same by
 * construction and the GPU tests compare the orchestration (wavefront,
 * memory, launches) byte for byte.
 *
 * The reconstruction is the standard decoder's, integer for integer (ITU-T
 * H.264 8.5: flat scaling lists, so a level's scale is LevelScale << qP/6;
 * the Intra 16x16 DC through the inverse Hadamard and its rounding; the
 * inverse transform rows first, then columns, + 32 >> 6): the encoder's
 * reference is then the decoder's, frame after frame, with no drift. The
 * forward side (transform, quantiser rounding, mode choice) is free and
 * kept simple.
 */
#ifndef VR_H264_MB_IMPL_H
#define VR_H264_MB_IMPL_H

#include "h264_dev.h"
#include "h264_qpel_impl.h"
#include "h264_ref.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

H264_DEV static inline int h264_abs(int v) { return v < 0 ? -v : v; }

/* ---- tables ---- */

/* The 4x4 frame zigzag: scan index -> raster index (y*4+x). */
H264_TABLE uint8_t ZZ[16] = { 0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15 };

/* Quantiser multipliers and dequantiser scales by qP % 6, for the three
 * position classes: both coordinates even, both odd, else. */
H264_TABLE int MF[6][3] = { { 13107, 5243, 8066 }, { 11916, 4660, 7490 },
                              { 10082, 4194, 6554 }, { 9362, 3647, 5825 },
                              { 8192, 3355, 5243 },  { 7282, 2893, 4559 } };
H264_TABLE int DQ[6][3] = { { 10, 16, 13 }, { 11, 18, 14 }, { 13, 20, 16 },
                              { 14, 23, 18 }, { 16, 25, 20 }, { 18, 29, 23 } };

H264_DEV static int pos_class(int r)
{
    int x = r & 3, y = r >> 2;
    return !(x & 1) && !(y & 1) ? 0 : (x & 1) && (y & 1) ? 1 : 2;
}

H264_DEV static uint8_t clip255(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

H264_DEV static int clamp_level(int v)
{
    return v > H264_MAX_LEVEL ? H264_MAX_LEVEL : v < -H264_MAX_LEVEL ? -H264_MAX_LEVEL : v;
}

/* ---- transforms ---- */

/* The forward core transform of a 4x4 residual (raster), in place. */
H264_DEV static void fdct4(int *b)
{
    for (int i = 0; i < 4; i++) { /* rows */
        int *r = b + 4 * i;
        int s03 = r[0] + r[3], d03 = r[0] - r[3], s12 = r[1] + r[2], d12 = r[1] - r[2];
        r[0] = s03 + s12;
        r[1] = 2 * d03 + d12;
        r[2] = s03 - s12;
        r[3] = d03 - 2 * d12;
    }
    for (int i = 0; i < 4; i++) { /* columns */
        int *c = b + i;
        int s03 = c[0] + c[12], d03 = c[0] - c[12], s12 = c[4] + c[8], d12 = c[4] - c[8];
        c[0] = s03 + s12;
        c[4] = 2 * d03 + d12;
        c[8] = s03 - s12;
        c[12] = d03 - 2 * d12;
    }
}

/* The decoder's inverse transform (8.5.12.2) of scaled coefficients d
 * (raster), added to pred (stride pls) into out (stride ols), clipped. */
H264_DEV static void idct4_add2(const int *d, const uint8_t *pred, int pls, uint8_t *out, int ols)
{
    int t[16];
    for (int i = 0; i < 4; i++) { /* each row */
        const int *r = d + 4 * i;
        int e = r[0] + r[2], f = r[0] - r[2], g = (r[1] >> 1) - r[3], h = r[1] + (r[3] >> 1);
        t[4 * i + 0] = e + h;
        t[4 * i + 1] = f + g;
        t[4 * i + 2] = f - g;
        t[4 * i + 3] = e - h;
    }
    for (int j = 0; j < 4; j++) { /* then each column */
        int e = t[j] + t[8 + j], f = t[j] - t[8 + j];
        int g = (t[4 + j] >> 1) - t[12 + j], h = t[4 + j] + (t[12 + j] >> 1);
        int v[4] = { e + h, f + g, f - g, e - h };
        for (int i = 0; i < 4; i++)
            out[i * ols + j] = clip255(pred[i * pls + j] + ((v[i] + 32) >> 6));
    }
}

/* The 4x4 Hadamard (its own inverse up to scale), in place. */
H264_DEV static void hadamard4(int *b)
{
    for (int i = 0; i < 4; i++) {
        int *r = b + 4 * i;
        int s01 = r[0] + r[1], d01 = r[0] - r[1], s23 = r[2] + r[3], d23 = r[2] - r[3];
        r[0] = s01 + s23;
        r[1] = s01 - s23;
        r[2] = d01 - d23;
        r[3] = d01 + d23;
    }
    for (int j = 0; j < 4; j++) {
        int *c = b + j;
        int s01 = c[0] + c[4], d01 = c[0] - c[4], s23 = c[8] + c[12], d23 = c[8] - c[12];
        c[0] = s01 + s23;
        c[4] = s01 - s23;
        c[8] = d01 - d23;
        c[12] = d01 + d23;
    }
}

/* level = sign(w) * ((|w| * mf + f) >> qbits), clamped. The rounding f
 * (code_residual): a third of a step for intra (x264's), half a step
 * (round to nearest) for P MBs. A P MB predicts from the last frame's
 * reconstruction, noise included; with x264's inter deadzone (f = 1/6) a
 * residual under 5/6 of a step is dropped, so that noise stays and grows
 * from P frame to P frame until the next IDR (x264 escapes it with intra
 * MBs in P frames, which this design has not). Round to nearest bounds each
 * coefficient's error by half a step in every frame: +1.3 to +2.7 dB on the
 * bench's mattes for 12-16% more bytes (docs/PERF.md, sixth pass). */
H264_DEV static int quant(int w, int mf, int f, int qbits)
{
    int a = w < 0 ? -w : w;
    int l = (int)(((int64_t)a * mf + f) >> qbits);
    return clamp_level(w < 0 ? -l : l);
}

/* ---- one 16x16 residual ---- */

/* Codes src - pred of one MB (src and rec stride ls, pred pls): P16 (intra == 0, every
 * coefficient in its 4x4 block) or I16 (DC through the Hadamard). Fills
 * m's levels, cbp and nc, and writes the reconstruction into rec. Returns
 * whether any level is nonzero. */
H264_DEV static int code_residual(const uint8_t *src, const uint8_t *pred, int pls, uint8_t *rec,
                                  int ls, int qp, int intra, struct h264_mb *m)
{
    const int q6 = qp / 6, qm = qp % 6, qbits = 15 + q6;
    const int f = intra ? (1 << qbits) / 3 : 1 << (qbits - 1);
    int coef[16][16]; /* [block raster][coefficient raster] */
    int any = 0;
    memset(m->lv, 0, sizeof m->lv);
    memset(m->dc, 0, sizeof m->dc);
    memset(m->nc, 0, sizeof m->nc);
    m->cbp = 0;
    for (int b = 0; b < 16; b++) {
        int bx = (b & 3) * 4, by = (b >> 2) * 4;
        for (int i = 0; i < 16; i++) {
            int o = (by + (i >> 2)) * ls + bx + (i & 3);
            coef[b][i] = src[o] - pred[(by + (i >> 2)) * pls + bx + (i & 3)];
        }
        fdct4(coef[b]);
        for (int k = intra ? 1 : 0; k < 16; k++) {
            int r = ZZ[k];
            int l = quant(coef[b][r], MF[qm][pos_class(r)], f, qbits);
            m->lv[b][k] = (int16_t)l;
            if (l)
                m->nc[b]++;
        }
    }
    if (intra) {
        int dc[16];
        for (int b = 0; b < 16; b++)
            dc[b] = coef[b][0];
        hadamard4(dc);
        for (int k = 0; k < 16; k++) {
            int r = ZZ[k];
            int l = quant(dc[r] / 2, MF[qm][0], 2 * f, qbits + 1);
            m->dc[k] = (int16_t)l;
            any |= l != 0;
        }
        int ac = 0;
        for (int b = 0; b < 16; b++)
            ac |= m->nc[b] != 0;
        m->cbp = ac ? 15 : 0;
        any |= ac;
    } else {
        for (int b = 0; b < 16; b++)
            if (m->nc[b])
                m->cbp |= (uint8_t)(1 << (((b >> 3) << 1) | ((b & 3) >> 1)));
        any = m->cbp != 0;
    }
    /* reconstruction, as the decoder does it */
    int dcy[16] = { 0 };
    if (intra) {
        int c[16];
        for (int k = 0; k < 16; k++)
            c[ZZ[k]] = m->dc[k];
        hadamard4(c);
        for (int r = 0; r < 16; r++)
            dcy[r] = (c[r] * DQ[qm][0] * (1 << q6) + 2) >> 2;
    }
    for (int b = 0; b < 16; b++) {
        int bx = (b & 3) * 4, by = (b >> 2) * 4;
        int d[16] = { 0 };
        for (int k = intra ? 1 : 0; k < 16; k++) {
            int r = ZZ[k];
            d[r] = m->lv[b][k] * DQ[qm][pos_class(r)] * (1 << q6);
        }
        if (intra)
            d[0] = dcy[b];
        size_t o = (size_t)by * ls + bx;
        idct4_add2(d, pred + (size_t)by * pls + bx, pls, rec + o, ls);
    }
    return any;
}

/* ---- stage 1: P frames ---- */

/* Whether the 16x16 blocks a and b (stride ls) are equal; on the GPU a row
 * is one 16-byte load where b is 16-byte aligned too (a always is). */
H264_DEV static int mb_equal(const uint8_t *a, const uint8_t *b, size_t ls)
{
    for (int y = 0; y < 16; y++) {
#ifdef __CUDACC__
        if (!((uintptr_t)b & 15)) {
            uint4 u = *(const uint4 *)(a + y * ls), v = *(const uint4 *)(b + y * ls);
            if (u.x != v.x || u.y != v.y || u.z != v.z || u.w != v.w)
                return 0;
            continue;
        }
        for (int x = 0; x < 16; x++)
            if (a[y * ls + x] != b[y * ls + x])
                return 0;
#else
        if (memcmp(a + y * ls, b + y * ls, 16))
            return 0;
#endif
    }
    return 1;
}

/* dst (16-byte aligned rows) from src (aligned or not), 16x16. */
H264_DEV static void mb_copy(uint8_t *dst, const uint8_t *src, size_t ls)
{
    for (int y = 0; y < 16; y++) {
#ifdef __CUDACC__
        if (!((uintptr_t)src & 15)) {
            *(uint4 *)(dst + y * ls) = *(const uint4 *)(src + y * ls);
            continue;
        }
        for (int x = 0; x < 16; x++)
            dst[y * ls + x] = src[y * ls + x];
#else
        memcpy(dst + y * ls, src + y * ls, 16);
#endif
    }
}

/* Stage 1b for one MB against its prediction pred (stride pls): ref at the
 * vector when it is whole-pel (frac 0), else its quarter-pel interpolation
 * (inter_mb's, in a buffer). The GPU's k_inter (h264_mb.cu) makes the same
 * decisions with a 4x4 block a lane, its fractional prediction left in the
 * MB's place of rec by k_search. */
H264_DEV static void inter_mb_pred(const struct h264_frame *fr, int mx, int my, const uint8_t *pred,
                                   int pls, int frac)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    size_t o = (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    int ps[2], pp[2];
    mv_pred(fr, mx, my, 1, ps, 0);
    const int can_skip = ps[0] == m->mv[0] && ps[1] == m->mv[1];
    m->mode = 0;
    m->mvd[0] = m->mvd[1] = 0;
    /* an MB equal to its prediction (most of a matte: the inside and the
     * outside of people) codes to no level at all: P_Skip without the
     * transform when its vector is P_Skip's. Its neighbours read only its
     * counts (stage 3) and vector. */
    if (can_skip && !frac && mb_equal(fr->src + o, pred, (size_t)fr->ls)) {
        m->type = H264_MB_SKIP;
        m->cbp = 0;
        m->sad = 0;
        memset(m->nc, 0, sizeof m->nc);
        mb_copy(fr->rec + o, pred, (size_t)fr->ls);
        return;
    }
    m->type = H264_MB_P16;
    unsigned sad = 0; /* stage 1c's bar */
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            sad += (unsigned)h264_abs(fr->src[o + (size_t)y * fr->ls + x] - pred[(size_t)y * pls + x]);
    /* kept for candidates only (intra_p_candidate): 0 says "final" to the
     * GPU's wavefront, which then need not wait for the MB */
    m->sad = code_residual(fr->src + o, pred, pls, fr->rec + o, fr->ls, fr->qp, 0, m) ? sad : 0;
    if (!m->sad && can_skip) {
        /* nothing coded: the decoder copies the prediction, as P_Skip */
        m->type = H264_MB_SKIP;
        if (!frac)
            mb_copy(fr->rec + o, pred, (size_t)fr->ls);
        else
            for (int y = 0; y < 16; y++)
                memcpy(fr->rec + o + (size_t)y * fr->ls, pred + (size_t)y * pls, 16);
        return;
    }
    mv_pred(fr, mx, my, 0, pp, 0);
    m->mvd[0] = (int16_t)(m->mv[0] - pp[0]);
    m->mvd[1] = (int16_t)(m->mv[1] - pp[1]);
}

/* Stage 1b for one MB in the C twin (h264_mv_impl.h: its vector is final,
 * and so are its neighbours'). */
H264_DEV static void inter_mb(const struct h264_frame *fr, int mx, int my)
{
    const struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    size_t o = (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    const uint8_t *pred = fr->ref + o + (ptrdiff_t)(m->mv[1] >> 2) * fr->ls + (m->mv[0] >> 2);
    uint8_t qbuf[256];
    const int frac = ((m->mv[0] | m->mv[1]) & 3) != 0;
    if (frac) {
        qpel_block(fr, mx, my, m->mv[0], m->mv[1], qbuf);
        pred = qbuf;
    }
    inter_mb_pred(fr, mx, my, pred, frac ? 16 : fr->ls, frac);
}

/* ---- stage 1: IDR, Intra 16x16 ---- */

/* The prediction of `mode` from the reconstructed neighbours of the MB at
 * rec (stride ls) into p[256]; 0 when the mode needs a neighbour the MB
 * does not have. */
/* The DC prediction's value from the reconstructed neighbours of the MB
 * at rec (stride ls). */
H264_DEV static int dc16(const uint8_t *rec, int ls, int has_left, int has_top)
{
    int s = 0, v = 128;
    if (has_left)
        for (int y = 0; y < 16; y++)
            s += rec[(ptrdiff_t)y * ls - 1];
    if (has_top)
        for (int x = 0; x < 16; x++)
            s += rec[x - ls];
    if (has_left && has_top)
        v = (s + 16) >> 5;
    else if (has_left || has_top)
        v = (s + 8) >> 4;
    return v;
}

/* The plane prediction's parameters (8.3.3.4; both neighbours needed):
 * pixel (x, y) is clip255((a + b * (x - 7) + c * (y - 7) + 16) >> 5). */
H264_DEV static void plane16(const uint8_t *rec, int ls, int *a, int *b, int *c)
{
    const uint8_t *top = rec - ls;
    int H = 0, V = 0;
    for (int i = 0; i < 8; i++) {
        H += (i + 1) * (top[8 + i] - top[6 - i]);
        V += (i + 1) * (rec[(ptrdiff_t)(8 + i) * ls - 1] - rec[(ptrdiff_t)(6 - i) * ls - 1]);
    }
    *a = 16 * (rec[(ptrdiff_t)15 * ls - 1] + top[15]);
    *b = (5 * H + 32) >> 6;
    *c = (5 * V + 32) >> 6;
}

H264_DEV static int predict16(const uint8_t *rec, int ls, int has_left, int has_top, int mode, uint8_t *p)
{
    const uint8_t *top = rec - ls;
    switch (mode) {
    case 0: /* vertical */
        if (!has_top)
            return 0;
        for (int y = 0; y < 16; y++)
            memcpy(p + 16 * y, top, 16);
        return 1;
    case 1: /* horizontal */
        if (!has_left)
            return 0;
        for (int y = 0; y < 16; y++)
            memset(p + 16 * y, rec[(ptrdiff_t)y * ls - 1], 16);
        return 1;
    case 2: /* DC */
        memset(p, dc16(rec, ls, has_left, has_top), 256);
        return 1;
    default: { /* plane (8.3.3.4) */
        if (!has_left || !has_top)
            return 0;
        int a, b, c;
        plane16(rec, ls, &a, &b, &c);
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                p[16 * y + x] = clip255((a + b * (x - 7) + c * (y - 7) + 16) >> 5);
        return 1;
    }
    }
}

/* Intra 16x16 for the MB at (mx, my) with the cheapest available
 * prediction by SAD, when that SAD + 4 lambda is below bar (a P MB's inter
 * SAD, stage 1c; ~0u: always, an IDR). Returns whether it coded it. */
H264_DEV static int intra_mb_bar(const struct h264_frame *fr, int mx, int my, unsigned bar)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    size_t o = (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    uint8_t pred[256], best[256];
    unsigned best_sad = ~0u;
    int best_mode = 2;
    for (int mode = 0; mode < 4; mode++) {
        if (!predict16(fr->rec + o, fr->ls, mx > 0, slice_has_top(fr, my), mode, pred))
            continue;
        unsigned sad = 0;
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                sad += (unsigned)h264_abs(fr->src[o + (size_t)y * fr->ls + x] - pred[16 * y + x]);
        if (sad < best_sad) {
            best_sad = sad;
            best_mode = mode;
            memcpy(best, pred, sizeof best);
        }
    }
    if (bar != ~0u && best_sad + 4u * MV_LAMBDA[fr->qp] >= bar)
        return 0;
    m->type = H264_MB_I16;
    m->mode = (uint8_t)best_mode;
    m->mv[0] = m->mv[1] = m->mvd[0] = m->mvd[1] = 0; /* the next P frame's search starts at 0 */
    /* coded in a 16-wide window: the prediction is 16 wide */
    uint8_t s16[256], r16[256];
    for (int y = 0; y < 16; y++)
        memcpy(s16 + 16 * y, fr->src + o + (size_t)y * fr->ls, 16);
    code_residual(s16, best, 16, r16, 16, fr->qp, 1, m);
    for (int y = 0; y < 16; y++)
        memcpy(fr->rec + o + (size_t)y * fr->ls, r16 + 16 * y, 16);
    return 1;
}

H264_DEV static void intra_mb(const struct h264_frame *fr, int mx, int my)
{
    intra_mb_bar(fr, mx, my, ~0u);
}

/* ---- stages 1c and 1d: Intra 16x16 in P frames ---- */

/* Whether stage 1c may turn the MB intra: P16 with levels (an MB the
 * inter prediction codes to nothing stays inter). */
H264_DEV static inline int intra_p_candidate(const struct h264_mb *m)
{
    return m->type == H264_MB_P16 && m->cbp;
}

/* Stage 1d for one MB (every MB's type final): an inter MB's P_Skip
 * decision and mvd with its intra neighbours' vectors unavailable. */
H264_DEV static void pfix_mb(const struct h264_frame *fr, int mx, int my)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    if (m->type == H264_MB_I16)
        return;
    int ps[2], pp[2];
    mv_pred(fr, mx, my, 1, ps, 1);
    m->mvd[0] = m->mvd[1] = 0;
    if (!m->cbp && ps[0] == m->mv[0] && ps[1] == m->mv[1]) {
        m->type = H264_MB_SKIP;
        return;
    }
    m->type = H264_MB_P16;
    mv_pred(fr, mx, my, 0, pp, 1);
    m->mvd[0] = (int16_t)(m->mv[0] - pp[0]);
    m->mvd[1] = (int16_t)(m->mv[1] - pp[1]);
}

/* ---- stage 0 for one pixel ---- */

H264_DEV static inline void load_px(const struct h264_frame *f, const uint8_t *y, int yls, int w,
                                    int h, int px, int py)
{
    int sx = px < w ? px : w - 1, sy = py < h ? py : h - 1;
    f->src[(size_t)py * f->ls + px] = y[(size_t)sy * yls + sx];
}

#endif

/*
 * h264_cavlc_impl.h - stages 3 and 5 of the matte encoder for one MB: its
 * CAVLC codewords, its pack (h264_ref.h). One source for the C twin
 * (h264_cavlc_ref.c) and the CUDA kernels (h264_cavlc.cu), as
 * h264_mb_impl.h is.
 *
 * Every MB's codewords depend only on its own decisions and its left and
 * top neighbours' total_coeff (nC, ITU-T H.264 9.2.1), all known after
 * stage 1, so each MB is written alone into its own buffer; the prefix sum
 * places them. The tables are the standard's (9-5, 9-7, 9-9, 9-10) and the
 * inter coded_block_pattern mapping (9-4, 4:2:0).
 */
#ifndef VR_H264_CAVLC_IMPL_H
#define VR_H264_CAVLC_IMPL_H

#include "h264_bits.h"
#include "h264_dev.h"
#include "h264_ref.h"
#include "h264_slice_impl.h"

#include <stddef.h>
#include <stdint.h>

/* ---- tables ---- */

/* coeff_token by nC class (0-1, 2-3, 4-7, 8+), index total_coeff*4 + trailing_ones */
H264_TABLE uint8_t CT_LEN[4][4 * 17] = {
    { 1,  0,  0,  0,  6,  2,  0,  0,  8,  6,  3,  0,  9,  8,  7,  5,  10, 9,  8,  6,
      11, 10, 9,  7,  13, 11, 10, 8,  13, 13, 11, 9,  13, 13, 13, 10, 14, 14, 13, 11,
      14, 14, 14, 13, 15, 15, 14, 14, 15, 15, 15, 14, 16, 15, 15, 15, 16, 16, 16, 15,
      16, 16, 16, 16, 16, 16, 16, 16 },
    { 2,  0,  0,  0,  6,  2,  0,  0,  6,  5,  3,  0,  7,  6,  6,  4,  8,  6,  6,  4,
      8,  7,  7,  5,  9,  8,  8,  6,  11, 9,  9,  6,  11, 11, 11, 7,  12, 11, 11, 9,
      12, 12, 12, 11, 12, 12, 12, 11, 13, 13, 13, 12, 13, 13, 13, 13, 13, 14, 13, 13,
      14, 14, 14, 13, 14, 14, 14, 14 },
    { 4,  0,  0,  0,  6,  4,  0,  0,  6,  5,  4,  0,  6,  5,  5,  4,  7,  5,  5,  4,
      7,  5,  5,  4,  7,  6,  6,  4,  7,  6,  6,  4,  8,  7,  7,  5,  8,  8,  7,  6,
      9,  8,  8,  7,  9,  9,  8,  8,  9,  9,  9,  8,  10, 9,  9,  9,  10, 10, 10, 10,
      10, 10, 10, 10, 10, 10, 10, 10 },
};
H264_TABLE uint8_t CT_BITS[3][4 * 17] = {
    { 1,  0,  0,  0, 5,  1,  0,  0, 7,  4,  1,  0, 7,  6,  5,  3, 7,  6,  5,  3,
      7,  6,  5,  4, 15, 6,  5,  4, 11, 14, 5,  4, 8,  10, 13, 4, 15, 14, 9,  4,
      11, 10, 13, 12, 15, 14, 9, 12, 11, 10, 13, 8, 15, 1,  9,  12, 11, 14, 13, 8,
      7,  10, 9,  12, 4,  6,  5, 8 },
    { 3,  0,  0,  0, 11, 2,  0,  0, 7,  7,  3,  0, 7,  10, 9,  5, 7,  6,  5,  4,
      4,  6,  5,  6, 7,  6,  5,  8, 15, 6,  5,  4, 11, 14, 13, 4, 15, 10, 9,  4,
      11, 14, 13, 12, 8, 10, 9,  8, 15, 14, 13, 12, 11, 10, 9, 12, 7,  11, 6,  8,
      9,  8,  10, 1,  7,  6,  5,  4 },
    { 15, 0,  0,  0,  15, 14, 0,  0, 11, 15, 13, 0, 8,  12, 14, 12, 15, 10, 11, 11,
      11, 8,  9,  10, 9,  14, 13, 9, 8,  10, 9,  8, 15, 14, 13, 13, 11, 14, 10, 12,
      15, 10, 13, 12, 11, 14, 9, 12, 8,  10, 13, 8, 13, 7,  9,  12, 9,  12, 11, 10,
      5,  8,  7,  6,  1,  4,  3,  2 },
};

/* total_zeros by total_coeff - 1 (4x4 blocks) */
H264_TABLE uint8_t TZ_LEN[15][16] = {
    { 1, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 9 }, { 3, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6 },
    { 4, 3, 3, 3, 4, 4, 3, 3, 4, 5, 5, 6, 5, 6 },       { 5, 3, 4, 4, 3, 3, 3, 4, 3, 4, 5, 5, 5 },
    { 4, 4, 4, 3, 3, 3, 3, 3, 4, 5, 4, 5 },             { 6, 5, 3, 3, 3, 3, 3, 3, 4, 3, 6 },
    { 6, 5, 3, 3, 3, 2, 3, 4, 3, 6 },                   { 6, 4, 5, 3, 2, 2, 3, 3, 6 },
    { 6, 6, 4, 2, 2, 3, 2, 5 },                         { 5, 5, 3, 2, 2, 2, 4 },
    { 4, 4, 3, 3, 1, 3 },                               { 4, 4, 2, 1, 3 },
    { 3, 3, 1, 2 },                                     { 2, 2, 1 },
    { 1, 1 },
};
H264_TABLE uint8_t TZ_BITS[15][16] = {
    { 1, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 1 }, { 7, 6, 5, 4, 3, 5, 4, 3, 2, 3, 2, 3, 2, 1, 0 },
    { 5, 7, 6, 5, 4, 3, 4, 3, 2, 3, 2, 1, 1, 0 },       { 3, 7, 5, 4, 6, 5, 4, 3, 3, 2, 2, 1, 0 },
    { 5, 4, 3, 7, 6, 5, 4, 3, 2, 1, 1, 0 },             { 1, 1, 7, 6, 5, 4, 3, 2, 1, 1, 0 },
    { 1, 1, 5, 4, 3, 3, 2, 1, 1, 0 },                   { 1, 1, 1, 3, 3, 2, 2, 1, 0 },
    { 1, 0, 1, 3, 2, 1, 1, 1 },                         { 1, 0, 1, 3, 2, 1, 1 },
    { 0, 1, 1, 2, 1, 3 },                               { 0, 1, 1, 1, 1 },
    { 0, 1, 1, 1 },                                     { 0, 1, 1 },
    { 0, 1 },
};

/* run_before by min(zerosLeft, 7) - 1 */
H264_TABLE uint8_t RB_LEN[7][16] = {
    { 1, 1 }, { 1, 2, 2 }, { 2, 2, 2, 2 }, { 2, 2, 2, 3, 3 }, { 2, 2, 3, 3, 3, 3 },
    { 2, 3, 3, 3, 3, 3, 3 }, { 3, 3, 3, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11 },
};
H264_TABLE uint8_t RB_BITS[7][16] = {
    { 1, 0 }, { 1, 1, 0 }, { 3, 2, 1, 0 }, { 3, 2, 1, 1, 0 }, { 3, 2, 3, 2, 1, 0 },
    { 3, 0, 1, 3, 2, 5, 4 }, { 7, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
};

/* coded_block_pattern (luma bits, chroma 0) -> codeNum, inter MBs */
H264_TABLE uint8_t CBP_INTER[16] = { 0, 2, 3, 7, 4, 8, 17, 13, 5, 18, 9, 14, 10, 15, 16, 11 };

/* ---- one residual block (9.2) ---- */

/* coef[0..n-1] in scan order (n = 16, or 15 for I16 AC), with nC. */
H264_DEV static void write_block(struct h264_bw *w, const int16_t *coef, int n, int nc)
{
    int lev[16], run[16], tc = 0, tz = 0, i = n - 1;
    while (i >= 0 && !coef[i])
        i--;
    for (; i >= 0; i--) { /* highest frequency first */
        if (coef[i]) {
            lev[tc] = coef[i];
            run[tc++] = 0;
        } else {
            run[tc - 1]++;
            tz++;
        }
    }
    int t1 = 0;
    while (t1 < tc && t1 < 3 && (lev[t1] == 1 || lev[t1] == -1))
        t1++;
    int k = tc * 4 + t1;
    if (nc >= 8)
        h264_put(w, tc ? (uint32_t)(((tc - 1) << 2) | t1) : 3u, 6);
    else {
        int t = nc < 2 ? 0 : nc < 4 ? 1 : 2;
        h264_put(w, CT_BITS[t][k], CT_LEN[t][k]);
    }
    if (!tc)
        return;
    for (i = 0; i < t1; i++)
        h264_put(w, lev[i] < 0, 1);
    int sl = tc > 10 && t1 < 3 ? 1 : 0;
    for (i = t1; i < tc; i++) {
        int l = lev[i], a = l < 0 ? -l : l;
        int code = l > 0 ? 2 * l - 2 : -2 * l - 1;
        if (i == t1 && t1 < 3)
            code -= 2; /* this level cannot be +-1 */
        if (sl == 0 && code < 14) {
            h264_put(w, 1, code + 1);
        } else if (sl == 0 && code < 30) {
            h264_put(w, 1, 15);
            h264_put(w, (uint32_t)(code - 14), 4);
        } else if (sl == 0) {
            h264_put(w, 1, 16);
            h264_put(w, (uint32_t)(code - 30), 12);
        } else if (code < (15 << sl)) {
            h264_put(w, 1, (code >> sl) + 1);
            h264_put(w, (uint32_t)code & ((1u << sl) - 1), sl);
        } else {
            h264_put(w, 1, 16);
            h264_put(w, (uint32_t)(code - (15 << sl)), 12);
        }
        if (sl == 0)
            sl = 1;
        if (a > (3 << (sl - 1)) && sl < 6)
            sl++;
    }
    if (tc < n)
        h264_put(w, TZ_BITS[tc - 1][tz], TZ_LEN[tc - 1][tz]);
    for (i = 0; i < tc - 1 && tz > 0; i++) {
        int t = (tz < 7 ? tz : 7) - 1;
        h264_put(w, RB_BITS[t][run[i]], RB_LEN[t][run[i]]);
        tz -= run[i];
    }
}

/* ---- stage 3 ---- */

/* nC of block (bx, by) of the MB at (mx, my): the mean of the left and top
 * blocks' total_coeff where both exist, else the one that does, else 0. */
H264_DEV static int block_nc(const struct h264_frame *f, int mx, int my, int bx, int by)
{
    const struct h264_mb *m = &f->mb[my * f->mbw + mx];
    int na = -1, nb = -1;
    if (bx > 0)
        na = m->nc[by * 4 + bx - 1];
    else if (mx > 0)
        na = (m - 1)->nc[by * 4 + 3];
    if (by > 0)
        nb = m->nc[(by - 1) * 4 + bx];
    else if (slice_has_top(f, my))
        nb = (m - f->mbw)->nc[12 + bx];
    if (na >= 0 && nb >= 0)
        return (na + nb + 1) >> 1;
    return na >= 0 ? na : nb >= 0 ? nb : 0;
}

/* The skipped MBs just before MB i in slice k: stage 2's run (the
 * frame's) cut at the slice's first MB. i may be the MB after slice k
 * (n after the last): slice k's last skip run. */
H264_DEV static uint32_t slice_run(const struct h264_frame *f, int i, int k)
{
    uint32_t first = (uint32_t)slice_first_row(f, k) * (uint32_t)f->mbw;
    uint32_t r = f->run[i];
    return r < (uint32_t)i - first ? r : (uint32_t)i - first;
}

H264_DEV static void cavlc_mb(const struct h264_frame *f, int idr, int i)
{
    const struct h264_mb *m = &f->mb[i];
    int mx = i % f->mbw, my = i / f->mbw;
    struct h264_bw w = { f->bits + (size_t)i * H264_MB_MAX_BYTES, H264_MB_MAX_BYTES, 0, 0,
                         0, 0, f->byte_writer };
    if (m->type == H264_MB_SKIP) {
        f->nbits[i] = 0;
        return;
    }
    if (m->type == H264_MB_I16) {
        if (!idr) /* an I16 MB in a P slice: its skip run, mb_type 5 + the I slice's */
            h264_ue(&w, slice_run(f, i, slice_of_row(f, my)));
        h264_ue(&w, (idr ? 1u : 6u) + m->mode + (m->cbp ? 12u : 0u));
        h264_ue(&w, 0); /* intra_chroma_pred_mode: DC, 128 everywhere */
        h264_se(&w, 0); /* mb_qp_delta */
        write_block(&w, m->dc, 16, block_nc(f, mx, my, 0, 0));
        if (m->cbp)
            for (int b8 = 0; b8 < 4; b8++)
                for (int b4 = 0; b4 < 4; b4++) {
                    int bx = (b8 & 1) * 2 + (b4 & 1), by = (b8 >> 1) * 2 + (b4 >> 1);
                    write_block(&w, m->lv[by * 4 + bx] + 1, 15, block_nc(f, mx, my, bx, by));
                }
    } else {
        if (!idr)
            h264_ue(&w, slice_run(f, i, slice_of_row(f, my)));
        h264_ue(&w, 0); /* P_L0_16x16; ref_idx absent: one reference */
        h264_se(&w, m->mvd[0]); /* mvd x, y (stage 1b) */
        h264_se(&w, m->mvd[1]);
        h264_ue(&w, CBP_INTER[m->cbp]);
        if (m->cbp)
            h264_se(&w, 0);
        for (int b8 = 0; b8 < 4; b8++) {
            if (!(m->cbp & (1 << b8)))
                continue;
            for (int b4 = 0; b4 < 4; b4++) {
                int bx = (b8 & 1) * 2 + (b4 & 1), by = (b8 >> 1) * 2 + (b4 >> 1);
                write_block(&w, m->lv[by * 4 + bx], 16, block_nc(f, mx, my, bx, by));
            }
        }
    }
    h264_flush(&w); /* the GPU's word writer: its last bits */
    f->nbits[i] = w.bit;
}

/* ---- stage 4b: the slices' places ---- */

/* Slice k's bits: header, MBs, last skip run (a P slice), stop bit. */
H264_DEV static uint64_t slice_bits(const struct h264_frame *f, int idr, int k)
{
    int first = slice_first_row(f, k) * f->mbw, end = slice_first_row(f, k + 1) * f->mbw;
    uint64_t b = f->hdr_bits + (uint64_t)ue_len((uint32_t)first) + f->pos[end] - f->pos[first];
    uint32_t run = idr ? 0 : slice_run(f, end, k);
    return b + (run ? (uint64_t)ue_len(run) : 0) + 1;
}

/* f->sbyte: each slice begins on a byte (its NAL unit's RBSP). One thread. */
H264_DEV static void slices_place(const struct h264_frame *f, int idr)
{
    uint64_t at = 0;
    for (int k = 0; k < f->slices; k++) {
        f->sbyte[k] = at;
        at += (slice_bits(f, idr, k) + 7) / 8;
    }
    f->sbyte[f->slices] = at;
}

/* ---- stage 5 ---- */

/* nb bits of src OR-ed into out from bit `at`; a byte shared with a
 * neighbour is OR-ed atomically on the GPU (h264_or8). */
H264_DEV static void or_bits(uint8_t *out, uint64_t at, const uint8_t *src, uint32_t nb)
{
    int sh = (int)(at & 7);
    uint64_t d = at >> 3;
    uint32_t whole = nb >> 3, rest = nb & 7;
    for (uint32_t k = 0; k < whole; k++) {
        h264_or8(out, d + k, (uint8_t)(src[k] >> sh));
        if (sh)
            h264_or8(out, d + k + 1, (uint8_t)(src[k] << (8 - sh)));
    }
    if (rest) {
        uint8_t last = (uint8_t)(src[whole] & (0xFF00u >> rest));
        h264_or8(out, d + whole, (uint8_t)(last >> sh));
        if (sh + (int)rest > 8)
            h264_or8(out, d + whole + 1, (uint8_t)(last << (8 - sh)));
    }
}

/* MB i's bits at its place: its slice's first byte, the header's room,
 * then its offset among the slice's MBs. */
H264_DEV static void pack_mb(const struct h264_frame *f, uint8_t *out, int i)
{
    int k = slice_of_row(f, i / f->mbw), first = slice_first_row(f, k) * f->mbw;
    uint64_t at = f->sbyte[k] * 8 + f->hdr_bits + (uint64_t)ue_len((uint32_t)first) + f->pos[i] -
                  f->pos[first];
    or_bits(out, at, f->bits + (size_t)i * H264_MB_MAX_BYTES, f->nbits[i]);
}

/* Slice k's end after its last MB: its last skip run (a P slice) and the
 * stop bit (rbsp_slice_trailing_bits; the zeros after it are cleared). */
H264_DEV static void pack_slice_end(const struct h264_frame *f, uint8_t *out, int idr, int k)
{
    int first = slice_first_row(f, k) * f->mbw, end = slice_first_row(f, k + 1) * f->mbw;
    uint64_t at = f->sbyte[k] * 8 + f->hdr_bits + (uint64_t)ue_len((uint32_t)first) + f->pos[end] -
                  f->pos[first];
    uint8_t b[8] = { 0 };
    struct h264_bw w = { b, sizeof b, 0, 0, 0, 0, f->byte_writer };
    uint32_t run = idr ? 0 : slice_run(f, end, k);
    if (run)
        h264_ue(&w, run);
    h264_put(&w, 1, 1);
    h264_flush(&w);
    or_bits(out, at, b, w.bit);
}

#endif

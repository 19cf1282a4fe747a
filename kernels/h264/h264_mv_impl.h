/*
 * h264_mv_impl.h - the matte encoder's motion vectors for one MB of a P
 * frame: the integer-pel search (stage 1a) and the standard's predictions
 * of a vector from the neighbours' (stage 1b), one source for the C twin
 * (h264_mb_ref.c) and the CUDA kernels (h264_mb.cu), as h264_mb_impl.h is.
 *
 * No MB depends on another one of the same frame during the search: each
 * MB searches its own vector against the reference's reconstruction, from
 * the zero vector and its own vector of the frame before (f->mb still holds
 * it). Stage 1b then reads the neighbours' final vectors: the P16x16
 * median prediction (ITU-T H.264 8.4.1.3) for the mvd, and P_Skip's
 * predicted vector (8.4.1.1), an MB being P_Skip only when its vector is
 * that one. Every vector keeps the 16x16 block inside the coded picture
 * (the padded frame), so the decoder's edge extension never comes in, and
 * the search here is whole pixels; h264_qpel_impl.h then refines each
 * MB's vector to a quarter pel (still reading only the reference).
 *
 * On the GPU a warp searches an MB with search_mb's decisions but a step's
 * candidates at once (h264_mb.cu, search_mb_warp: the cheapest, the first
 * of equals in candidate order, as the strict "<" here in order); the
 * twin runs search_mb, whose h264_sad16 sums the 256 pixels itself.
 */
#ifndef VR_H264_MV_IMPL_H
#define VR_H264_MV_IMPL_H

#include "h264_dev.h"
#include "h264_ref.h"
#include "h264_slice_impl.h"

#include <stddef.h>
#include <stdint.h>

/* x264's lambda for SAD by QP (its lambda_tab): a vector's bits cost this
 * much SAD, so a vector off zero must pay for its mvd. */
H264_TABLE uint8_t MV_LAMBDA[52] = { 1, 1, 1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
                                     1, 1, 1,  2,  2,  2,  2,  3,  3,  3,  4,  4,  4,
                                     5, 6, 6,  7,  8,  9,  10, 11, 13, 14, 16, 18, 20,
                                     23, 25, 29, 32, 36, 40, 45, 51, 57, 64, 72, 81, 91 };

/* The SAD of the 16x16 blocks a and b (stride ls). */
H264_DEV static unsigned h264_sad16(const uint8_t *a, const uint8_t *b, int ls)
{
    unsigned s = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            int d = a[(ptrdiff_t)y * ls + x] - b[(ptrdiff_t)y * ls + x];
            s += (unsigned)(d < 0 ? -d : d);
        }
    return s;
}

/* Bits of se(v). */
H264_DEV static int se_bits(int v)
{
    unsigned x = (v > 0 ? 2u * (unsigned)v - 1 : 2u * (unsigned)(-v)) + 1;
    int len = 0;
    while ((x >> len) > 1)
        len++;
    return 2 * len + 1;
}

/* The cost of the integer vector (vx, vy) for the MB at (mx, my): SAD +
 * lambda x the bits of its mvd against zero; ~0u outside the search range
 * or when the block would leave the coded picture. */
H264_DEV static unsigned mv_cost(const struct h264_frame *fr, int mx, int my, int vx, int vy,
                                 int lambda)
{
    int px = mx * 16 + vx, py = my * 16 + vy;
    if (vx < -H264_SEARCH || vx > H264_SEARCH || vy < -H264_SEARCH || vy > H264_SEARCH ||
        px < 0 || py < 0 || px > fr->mbw * 16 - 16 || py > fr->mbh * 16 - 16)
        return ~0u;
    const uint8_t *s = fr->src + (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    const uint8_t *r = fr->ref + (size_t)py * fr->ls + (size_t)px;
    return h264_sad16(s, r, fr->ls) +
           (unsigned)lambda * (unsigned)(se_bits(4 * vx) + se_bits(4 * vy));
}

/* Stage 1a for one MB: its vector into m->mv (quarter-pel). The zero
 * vector when the MB equals the reference there (most of a matte); else
 * the cheaper of zero and the MB's last vector, refined by 8-point steps of
 * 4, 2 and 1 pixels, then 4-point steps of 1 while they gain. A candidate
 * replaces the best only when strictly cheaper: ties keep the earlier. */
H264_DEV static void search_mb(const struct h264_frame *fr, int mx, int my)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    const int lambda = MV_LAMBDA[fr->qp];
    unsigned best = mv_cost(fr, mx, my, 0, 0, lambda);
    int bx = 0, by = 0;
    if (best != 2u * (unsigned)lambda) { /* SAD 0 at zero: nothing can beat it */
        int lx = m->mv[0] / 4, ly = m->mv[1] / 4;
        if (lx || ly) {
            unsigned c = mv_cost(fr, mx, my, lx, ly, lambda);
            if (c < best) {
                best = c;
                bx = lx;
                by = ly;
            }
        }
        for (int step = 4; step; step >>= 1) {
            int cx = bx, cy = by;
            for (int k = 0; k < 8; k++) {
                const int dx[8] = { -1, 0, 1, -1, 1, -1, 0, 1 }, dy[8] = { -1, -1, -1, 0, 0, 1, 1, 1 };
                int vx = cx + step * dx[k], vy = cy + step * dy[k];
                unsigned c = mv_cost(fr, mx, my, vx, vy, lambda);
                if (c < best) {
                    best = c;
                    bx = vx;
                    by = vy;
                }
            }
        }
        for (int it = 0; it < H264_SEARCH; it++) {
            int cx = bx, cy = by;
            for (int k = 0; k < 4; k++) {
                int vx = cx + (k == 0 ? -1 : k == 1 ? 1 : 0), vy = cy + (k == 2 ? -1 : k == 3 ? 1 : 0);
                unsigned c = mv_cost(fr, mx, my, vx, vy, lambda);
                if (c < best) {
                    best = c;
                    bx = vx;
                    by = vy;
                }
            }
            if (bx == cx && by == cy)
                break;
        }
    }
    m->mv[0] = (int16_t)(4 * bx);
    m->mv[1] = (int16_t)(4 * by);
}

/* ---- stage 1b: the predictions (every MB of a P frame is inter, ref 0) ---- */

H264_DEV static int median3(int a, int b, int c)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : c > hi ? hi : c;
}

/* The predicted vector of the MB at (mx, my) into p[2]: P_Skip's when skip
 * (8.4.1.1: zero without a left or top neighbour, or when either has the
 * zero vector), else P16x16's (8.4.1.3): the median of the left (A), top
 * (B) and top-right (C; the top-left D where C is outside) vectors; B and C
 * are A when neither exists and A does; where exactly one has the MB's
 * reference, its vector; a missing one counts as zero in the median.
 * intra: the neighbours' types are final (stage 1d), and an I16 one is
 * there with refIdx -1 and a zero vector (intra_mb clears it); else every
 * neighbour is inter (stage 1b: their types are still being decided). */
H264_DEV static void mv_pred(const struct h264_frame *fr, int mx, int my, int skip, int *p,
                             int intra)
{
    const struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    const int16_t z[2] = { 0, 0 };
    const int top = slice_has_top(fr, my); /* B, C and D lie in row my - 1 */
    const struct h264_mb *na = mx > 0 ? m - 1 : NULL, *nb = top ? m - fr->mbw : NULL;
    const struct h264_mb *nc = top && mx + 1 < fr->mbw ? m - fr->mbw + 1 : NULL;
    const int16_t *a = na ? na->mv : z, *b = nb ? nb->mv : z;
    /* refIdx 0: available and inter */
    int ra = na && !(intra && na->type == H264_MB_I16), rb = nb && !(intra && nb->type == H264_MB_I16);
    if (skip && (!na || !nb || (ra && !a[0] && !a[1]) || (rb && !b[0] && !b[1]))) {
        p[0] = p[1] = 0;
        return;
    }
    if (!nc && mx > 0 && top) /* D stands for C */
        nc = m - fr->mbw - 1;
    const int16_t *c = nc ? nc->mv : z;
    int rc = nc && !(intra && nc->type == H264_MB_I16);
    if (!nb && !nc && na) {
        b = c = a;
        rb = rc = ra;
    }
    if (ra + rb + rc == 1) {
        const int16_t *o = ra ? a : rb ? b : c;
        p[0] = o[0];
        p[1] = o[1];
        return;
    }
    for (int k = 0; k < 2; k++)
        p[k] = median3(a[k], b[k], c[k]);
}

#endif

/*
 * h264_qpel_impl.h - quarter-pel motion for the matte encoder's P MBs: the
 * standard's luma interpolation (ITU-T H.264 8.4.2.2.1, integer for
 * integer: the 6-tap half samples b, h, j and the averaged quarter ones,
 * coordinates clamped to the coded picture as the decoder clamps them) and
 * the refinement of an MB's whole-pel vector to a quarter pel. One source
 * for the C twin (h264_mb_ref.c) and the CUDA kernels (h264_mb.cu), as
 * h264_mv_impl.h is.
 *
 * Why: a matte's soft edges are ramps that move by fractions of a pixel,
 * and a whole-pel copy of the reference also copies its quantisation noise;
 * the half samples are low-pass (the 6-tap filter), so a fractional vector
 * both follows the edge and leaves less noise for the residual to carry
 * from frame to frame (docs/notes/h264.md "P").
 *
 * The half samples around an MB are computed once (struct h264_qpel, the
 * block +-1 pixel); every quarter sample is then one of them or the
 * rounded mean of two (Table 8-12). Still no MB reads another's work: the
 * refinement reads only the reference and the MB's own source.
 */
#ifndef VR_H264_QPEL_IMPL_H
#define VR_H264_QPEL_IMPL_H

#include "h264_mv_impl.h"

/* The samples G (whole), b (half, right), h (half, down) and j (half,
 * both) at (x0 + u, y0 + v) for u, v in -1 .. QN - 2, index (v + 1) * QN +
 * u + 1; b1, the horizontal 6-tap sums (8-241) of rows v = -3 .. QN + 1,
 * index (v + 3) * QN + u + 1, from which b and j are made; w, the
 * reference's pixels the taps read, (x0 - 3 + i, y0 - 3 + j) at j * QW + i,
 * clamped to the coded picture once. */
enum { QN = 20, QW = QN + 5 };
struct __attribute__((aligned(16))) h264_qpel { /* aligned: the GPU reads s as words */
    uint8_t s[4][QN * QN]; /* G, b, h, j */
    int16_t b1[(QN + 5) * QN];
    uint8_t w[QW * QW];
};

H264_DEV static inline int qref(const struct h264_frame *fr, int x, int y)
{
    const int w = fr->mbw * 16, h = fr->mbh * 16;
    x = x < 0 ? 0 : x >= w ? w - 1 : x;
    y = y < 0 ? 0 : y >= h ? h - 1 : y;
    return fr->ref[(size_t)y * fr->ls + x];
}

H264_DEV static inline int clip1(int v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* The 6-tap sum across c[0] .. c[d] (d 1: along a row of w; QW: down a
 * column), c the window's sample at (x, y). */
H264_DEV static inline int tap6(const uint8_t *c, int d)
{
    return c[-2 * d] - 5 * c[-d] + 20 * c[0] + 20 * c[d] - 5 * c[2 * d] + c[3 * d];
}

#ifdef __CUDACC__
#define QPEL_SYNC(lanes)                                                                         \
    do {                                                                                         \
        if ((lanes) == 32)                                                                       \
            __syncwarp();                                                                        \
    } while (0)
#else
#define QPEL_SYNC(lanes) ((void)0)
#endif

/* q around (x0, y0), positions lane, lane + lanes, ... of each pass: a
 * lane's share on the GPU (lanes 32: the warp syncs between the passes).
 * The window first: the taps then read it, not the clamped reference
 * (25 x 25 loads, where they were ~5800 for an MB). */
H264_DEV static void qpel_fill(const struct h264_frame *fr, int x0, int y0, struct h264_qpel *q,
                               int lane, int lanes)
{
    for (int k = lane; k < QW * QW; k += lanes)
        q->w[k] = (uint8_t)qref(fr, x0 - 3 + k % QW, y0 - 3 + k / QW);
    QPEL_SYNC(lanes);
    for (int k = lane; k < (QN + 5) * QN; k += lanes) /* (x0 + k % QN - 1, y0 + k / QN - 3) */
        q->b1[k] = (int16_t)tap6(q->w + (k / QN) * QW + k % QN + 2, 1);
    QPEL_SYNC(lanes);
    for (int k = lane; k < QN * QN; k += lanes) { /* (x0 + k % QN - 1, y0 + k / QN - 1) */
        const uint8_t *g = q->w + (k / QN + 2) * QW + k % QN + 2;
        const int16_t *c = q->b1 + k + 2 * QN; /* b1 at the same place */
        int j1 = c[-2 * QN] - 5 * c[-QN] + 20 * c[0] + 20 * c[QN] - 5 * c[2 * QN] + c[3 * QN];
        q->s[0][k] = *g;
        q->s[1][k] = (uint8_t)clip1((c[0] + 16) >> 5);
        q->s[2][k] = (uint8_t)clip1((tap6(g, QW) + 16) >> 5);
        q->s[3][k] = (uint8_t)clip1((j1 + 512) >> 10);
    }
    QPEL_SYNC(lanes);
}

/* Table 8-12 as the two samples averaged for (xFrac, yFrac) = (fx, fy):
 * plane (0 G, 1 b, 2 h, 3 j) and offset (+1 in x: bit 2, +1 in y: bit 3);
 * a whole or half sample is itself twice. */
H264_TABLE uint8_t QPEL_PAIR[16][2] = {
    { 0, 0 }, { 0, 1 },  { 1, 1 }, { 4, 1 },  /* G a b c */
    { 0, 2 }, { 1, 2 },  { 1, 3 }, { 1, 6 },  /* d e f g (g: b, h right) */
    { 2, 2 }, { 2, 3 },  { 3, 3 }, { 3, 6 },  /* h i j k (k: j, h right) */
    { 8, 2 }, { 2, 9 },  { 3, 9 }, { 6, 9 },  /* n p q r (p q r: b below) */
};

/* The prediction's sample at (u, v) of the MB (planes around its whole-pel
 * position) for the fraction (fx, fy). */
H264_DEV static inline int qpel_at(const struct h264_qpel *q, int u, int v, int fx, int fy)
{
    const uint8_t *p = QPEL_PAIR[fy * 4 + fx];
    int a = p[0], b = p[1];
    int sa = q->s[a & 3][(v + 1 + (a >> 3)) * QN + u + 1 + ((a >> 2) & 1)];
    int sb = q->s[b & 3][(v + 1 + (b >> 3)) * QN + u + 1 + ((b >> 2) & 1)];
    return (sa + sb + 1) >> 1;
}

/* Whether the quarter-pel vector (qx, qy) is in range for the MB at (mx,
 * my), its block (and the next pixel where fractional) inside the picture. */
H264_DEV static int qpel_valid(const struct h264_frame *fr, int mx, int my, int qx, int qy)
{
    int px = mx * 16 + (qx >> 2), py = my * 16 + (qy >> 2);
    return qx >= -4 * H264_SEARCH && qx <= 4 * H264_SEARCH && qy >= -4 * H264_SEARCH &&
           qy <= 4 * H264_SEARCH && px >= 0 && py >= 0 &&
           px + ((qx & 3) != 0) <= fr->mbw * 16 - 16 && py + ((qy & 3) != 0) <= fr->mbh * 16 - 16;
}

/* The SAD of the MB's source against the prediction at (qx, qy), q filled
 * around the whole-pel (ix, iy) (MB-relative, pixels). */
H264_DEV static unsigned qpel_sad(const struct h264_frame *fr, int mx, int my, const struct h264_qpel *q,
                                  int ix, int iy, int qx, int qy)
{
    const uint8_t *s = fr->src + (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    const int du = (qx >> 2) - ix, dv = (qy >> 2) - iy, fx = qx & 3, fy = qy & 3;
    unsigned sad = 0;
    for (int i = 0; i < 256; i++) {
        int x = i & 15, y = i >> 4;
        int d = s[(size_t)y * fr->ls + x] - qpel_at(q, x + du, y + dv, fx, fy);
        sad += (unsigned)(d < 0 ? -d : d);
    }
    return sad;
}

/* The refinement of the whole-pel vector (4 bx, 4 by): the 8 half-pel
 * points around it, then the 8 quarter-pel points around the best, each
 * by SAD + lambda x mvd bits against zero (search_mb's cost); a candidate
 * replaces the best only when strictly cheaper. The vector, quarter-pel,
 * into v[2]. The C twin's (the GPU's: subpel_mb_warp in h264_mb.cu, the
 * same decisions, a step's candidates at once). */
H264_DEV static void subpel_mb(const struct h264_frame *fr, int mx, int my, int bx, int by,
                               struct h264_qpel *q, int *v)
{
    const int lambda = MV_LAMBDA[fr->qp];
    int qx = 4 * bx, qy = 4 * by;
    v[0] = qx;
    v[1] = qy;
    const uint8_t *s = fr->src + (size_t)my * 16 * fr->ls + (size_t)mx * 16;
    const uint8_t *r = fr->ref + (size_t)(my * 16 + by) * fr->ls + (size_t)(mx * 16 + bx);
    unsigned sad = 0;
    for (int i = 0; i < 256; i++) {
        int d = s[(size_t)(i >> 4) * fr->ls + (i & 15)] - r[(size_t)(i >> 4) * fr->ls + (i & 15)];
        sad += (unsigned)(d < 0 ? -d : d);
    }
    if (!sad) /* nothing can beat it */
        return;
    qpel_fill(fr, mx * 16 + bx, my * 16 + by, q, 0, 1);
    unsigned best = sad + (unsigned)lambda * (unsigned)(se_bits(qx) + se_bits(qy));
    for (int step = 2; step; step >>= 1) {
        int cx = qx, cy = qy;
        for (int k = 0; k < 8; k++) {
            const int dx[8] = { -1, 0, 1, -1, 1, -1, 0, 1 }, dy[8] = { -1, -1, -1, 0, 0, 1, 1, 1 };
            int vx = cx + step * dx[k], vy = cy + step * dy[k];
            if (!qpel_valid(fr, mx, my, vx, vy))
                continue;
            unsigned c = qpel_sad(fr, mx, my, q, bx, by, vx, vy) +
                         (unsigned)lambda * (unsigned)(se_bits(vx) + se_bits(vy));
            if (c < best) {
                best = c;
                qx = vx;
                qy = vy;
            }
        }
    }
    v[0] = qx;
    v[1] = qy;
}

/* Stage 1a for one MB in the C twin: search_mb's whole-pel vector, then
 * its quarter-pel refinement (the GPU: search_mb_warp, then
 * subpel_mb_warp). */
H264_DEV static void search_qpel_mb(const struct h264_frame *fr, int mx, int my)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    struct h264_qpel q;
    int v[2];
    search_mb(fr, mx, my);
    subpel_mb(fr, mx, my, m->mv[0] / 4, m->mv[1] / 4, &q, v);
    m->mv[0] = (int16_t)v[0];
    m->mv[1] = (int16_t)v[1];
}

/* The 16x16 prediction at the fractional vector (qx, qy) into p[256]. */
H264_DEV static void qpel_block(const struct h264_frame *fr, int mx, int my, int qx, int qy,
                                uint8_t *p)
{
    struct h264_qpel q;
    qpel_fill(fr, mx * 16 + (qx >> 2), my * 16 + (qy >> 2), &q, 0, 1);
    for (int i = 0; i < 256; i++)
        p[i] = (uint8_t)qpel_at(&q, i & 15, i >> 4, qx & 3, qy & 3);
}

#endif

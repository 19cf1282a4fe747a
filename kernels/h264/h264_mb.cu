/*
 * h264_mb.cu - stages 0 and 1 of the matte encoder as CUDA kernels (twins
 * of h264_mb_ref.c): a thread a pixel for the load; a P frame's motion
 * search (h264_mv_impl.h, h264_qpel_impl.h) a warp an MB, then its per-MB
 * code of h264_mb_impl.h 16 lanes an MB, a 4x4 block a lane; an IDR's MBs
 * a warp an MB, a warp a row of MBs in one launch, a row waiting on the
 * one above (an MB predicts from its left, top and top-left neighbours;
 * k_intra_rows): the wavefront is 383 MBs long at 4096x2048 in one slice
 * (mbw + rows a slice - 1 with slices, each slice's from its own top), so
 * an MB's latency is the IDR's (a thread an MB took 28 ms an IDR on an H200; an
 * anti-diagonal a launch 2.8 ms). The warps' arithmetic is inter_mb's and
 * intra_mb's with the helpers of h264_mb_impl.h, split over lanes: the
 * four predictions' SADs 8 pixels a lane, then a 4x4 block a lane
 * (transform, quantiser, reconstruction), the DC's Hadamard on lane 0;
 * g_h264_encode holds its bytes to the C twin's. A P frame's intra
 * candidates (intra in P) run as a dataflow instead (k_intra_cands): a
 * candidate waits only for its candidate neighbours.
 */
#include "h264_cuda.h"
#include "h264_mb_impl.h"

static int launched(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: %s: %s", what, cudaGetErrorString(e));
    return 0;
}

__global__ static void k_load(struct h264_frame f, const uint8_t *y, int yls, int w, int h)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y;
    if (px < f.mbw * 16)
        load_px(&f, y, yls, w, h, px, py);
}

enum { SEARCH_WARPS = 4 }; /* MBs (warps) a block */
#define FULL_MASK 0xffffffffu

/* The SAD of the source rows s (4 rows of 16 pixels, 4 words each) against
 * the reference's 4 rows from (px, py): aligned words, shifted into place. */
__device__ static unsigned sad_4rows(const uint32_t *s, const uint8_t *ref, int ls, int px, int py)
{
    const int sh = (px & 3) * 8;
    unsigned sad = 0;
    for (int r = 0; r < 4; r++) {
        const uint32_t *w = (const uint32_t *)(ref + (size_t)(py + r) * ls + (px & ~3));
        uint32_t a[5];
        for (int i = 0; i < 4; i++)
            a[i] = w[i];
        a[4] = sh ? w[4] : 0; /* a fifth word only when unaligned: it is then inside the row */
        for (int i = 0; i < 4; i++)
            sad += __vsadu4(s[4 * r + i], __funnelshift_r(a[i], a[i + 1], sh));
    }
    return sad;
}

/* mv_cost of the vector (vx, vy) of candidate g (lane group g, 4 lanes of 4
 * rows each; q the lane's quarter), valid where the candidate exists; then
 * over the warp, the least (cost << 3 | g): the cheapest candidate, the
 * first in candidate order of equals (search_mb's strict "<" in order).
 * ~0u when no candidate is valid. */
__device__ static unsigned cand_min(const struct h264_frame *fr, const uint32_t *s, int mx, int my,
                                    int vx, int vy, int valid, int lambda, int g, int q)
{
    int px = mx * 16 + vx, py = my * 16 + vy;
    valid = valid && vx >= -H264_SEARCH && vx <= H264_SEARCH && vy >= -H264_SEARCH &&
            vy <= H264_SEARCH && px >= 0 && py >= 0 && px <= fr->mbw * 16 - 16 &&
            py <= fr->mbh * 16 - 16;
    unsigned sad = valid ? sad_4rows(s, fr->ref, fr->ls, px, py + 4 * q) : 0;
    sad += __shfl_xor_sync(FULL_MASK, sad, 1);
    sad += __shfl_xor_sync(FULL_MASK, sad, 2);
    unsigned key = valid ? (sad + (unsigned)lambda * (unsigned)(se_bits(4 * vx) + se_bits(4 * vy))) << 3 |
                               (unsigned)g
                         : ~0u;
    for (int off = 4; off < 32; off <<= 1)
        key = min(key, __shfl_xor_sync(FULL_MASK, key, off));
    return key;
}

/* subpel_mb by a warp, the same decisions: the whole-pel cost best at (bx,
 * by) is search_mb_warp's, its half samples filled a share a lane; then
 * each step's 8 candidates at once, 4 lanes a candidate (s: the lane's 4
 * source rows, as cand_min's), the least (cost << 3 | candidate) over the
 * warp: the first in order of the cheapest, which replaces the best only
 * when strictly cheaper (subpel_mb's "<" in order). */
__device__ static void subpel_mb_warp(const struct h264_frame *fr, int mx, int my, int bx, int by,
                                      unsigned best, const uint32_t *s, struct h264_qpel *q,
                                      int lane, int *v)
{
    const int lambda = MV_LAMBDA[fr->qp];
    int qx = 4 * bx, qy = 4 * by;
    v[0] = qx;
    v[1] = qy;
    if (best == (unsigned)lambda * (unsigned)(se_bits(qx) + se_bits(qy))) /* SAD 0 */
        return;
    qpel_fill(fr, mx * 16 + bx, my * 16 + by, q, lane, 32);
    const int g = lane >> 2, r0 = (lane & 3) * 4;
    const int gx = g < 3 ? g - 1 : g == 3 ? -1 : g == 4 ? 1 : g - 6, gy = g < 3 ? -1 : g < 5 ? 0 : 1;
    for (int step = 2; step; step >>= 1) {
        const int vx = qx + step * gx, vy = qy + step * gy;
        const int valid = qpel_valid(fr, mx, my, vx, vy);
        unsigned sad = 0;
        if (valid) {
            const int du = (vx >> 2) - bx, dv = (vy >> 2) - by, fx = vx & 3, fy = vy & 3;
            const uint8_t *p = QPEL_PAIR[fy * 4 + fx];
            const int a = p[0], b = p[1];
            /* the rows' 16 samples of both planes as words: aligned
             * loads (a plane is 4-byte aligned, QN a multiple of 4, the
             * fifth word still inside the plane), shifted into place */
            const int ea = (r0 + dv + 1 + (a >> 3)) * QN + du + 1 + ((a >> 2) & 1);
            const int eb = (r0 + dv + 1 + (b >> 3)) * QN + du + 1 + ((b >> 2) & 1);
            const uint32_t *pa = (const uint32_t *)q->s[a & 3] + (ea >> 2);
            const uint32_t *pb = (const uint32_t *)q->s[b & 3] + (eb >> 2);
            const int sa = (ea & 3) * 8, sb = (eb & 3) * 8;
            for (int r = 0; r < 4; r++) {
                uint32_t xa[5], xb[5];
                for (int k = 0; k < 5; k++) {
                    xa[k] = pa[r * (QN / 4) + k];
                    xb[k] = pb[r * (QN / 4) + k];
                }
                for (int w = 0; w < 4; w++) /* (a + b + 1) >> 1 */
                    sad += __vsadu4(s[4 * r + w], __vavgu4(__funnelshift_r(xa[w], xa[w + 1], sa),
                                                           __funnelshift_r(xb[w], xb[w + 1], sb)));
            }
        }
        sad += __shfl_xor_sync(FULL_MASK, sad, 1);
        sad += __shfl_xor_sync(FULL_MASK, sad, 2);
        unsigned key = valid ? (sad + (unsigned)lambda * (unsigned)(se_bits(vx) + se_bits(vy))) << 3 |
                                   (unsigned)g
                             : ~0u;
        for (int off = 4; off < 32; off <<= 1)
            key = min(key, __shfl_xor_sync(FULL_MASK, key, off));
        if (key != ~0u && (key >> 3) < best) {
            const int w = (int)(key & 7);
            best = key >> 3;
            qx += step * (w < 3 ? w - 1 : w == 3 ? -1 : w == 4 ? 1 : w - 6);
            qy += step * (w < 3 ? -1 : w < 5 ? 0 : 1);
        }
    }
    v[0] = qx;
    v[1] = qy;
}

/* Stage 1a, one MB a warp: search_mb's decisions (h264_mv_impl.h, the C
 * twin's) with each step's candidates at once, 4 lanes a candidate, the
 * source MB in registers: the chain of dependent SADs is a step long, not
 * a candidate long. The zero vector first, 8 pixels a lane. */
__device__ static void search_mb_warp(const struct h264_frame *fr, int mx, int my, int lane,
                                      struct h264_qpel *qs)
{
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    const int ls = fr->ls, lambda = MV_LAMBDA[fr->qp];
    const size_t o = (size_t)my * 16 * ls + (size_t)mx * 16;
    const uint8_t *src = fr->src + o;
    const int zy = lane >> 1, zx = (lane & 1) * 8;
    uint2 za = *(const uint2 *)(src + (size_t)zy * ls + zx);
    uint2 zb = *(const uint2 *)(fr->ref + o + (size_t)zy * ls + zx);
    unsigned sad = __vsadu4(za.x, zb.x) + __vsadu4(za.y, zb.y);
    for (int off = 16; off; off >>= 1)
        sad += __shfl_xor_sync(FULL_MASK, sad, off);
    unsigned best = sad + 2u * (unsigned)lambda; /* se_bits(0) twice */
    int bx = 0, by = 0;
    uint32_t s[16];
    if (sad) { /* SAD 0 at zero: nothing can beat it */
        const int g = lane >> 2, q = lane & 3;
        for (int r = 0; r < 4; r++) {
            uint4 v = *(const uint4 *)(src + (size_t)(4 * q + r) * ls);
            s[4 * r] = v.x;
            s[4 * r + 1] = v.y;
            s[4 * r + 2] = v.z;
            s[4 * r + 3] = v.w;
        }
        int lx = m->mv[0] / 4, ly = m->mv[1] / 4;
        if (lx || ly) {
            unsigned k = cand_min(fr, s, mx, my, lx, ly, g == 0, lambda, g, q);
            if (k != ~0u && (k >> 3) < best) {
                best = k >> 3;
                bx = lx;
                by = ly;
            }
        }
        /* search_mb's 8 points in order: the 3x3 square less its centre */
        const int sq = g < 4 ? g : g + 1, sx = sq % 3 - 1, sy = sq / 3 - 1;
        for (int step = 4; step; step >>= 1) {
            int cx = bx, cy = by;
            unsigned k = cand_min(fr, s, mx, my, cx + step * sx, cy + step * sy, 1, lambda, g, q);
            if (k != ~0u && (k >> 3) < best) {
                int w = (int)(k & 7), wq = w < 4 ? w : w + 1;
                best = k >> 3;
                bx = cx + step * (wq % 3 - 1);
                by = cy + step * (wq / 3 - 1);
            }
        }
        /* its 4-point steps: left, right, up, down */
        const int ddx = g == 0 ? -1 : g == 1 ? 1 : 0, ddy = g == 2 ? -1 : g == 3 ? 1 : 0;
        for (int it = 0; it < H264_SEARCH; it++) {
            int cx = bx, cy = by;
            unsigned k = cand_min(fr, s, mx, my, cx + ddx, cy + ddy, g < 4, lambda, g, q);
            if (k == ~0u || (k >> 3) >= best)
                break;
            int w = (int)(k & 7);
            best = k >> 3;
            bx = cx + (w == 0 ? -1 : w == 1 ? 1 : 0);
            by = cy + (w == 2 ? -1 : w == 3 ? 1 : 0);
        }
    }
    /* then its quarter pel (h264_qpel_impl.h), a share of each SAD a lane */
    int v[2];
    subpel_mb_warp(fr, mx, my, bx, by, best, s, qs, lane, v);
    /* a fractional vector's prediction into the MB's place of rec, from
     * the half samples in shared memory (v is within a pixel of (bx, by)):
     * k_inter codes against it there, and needs no
     * interpolation (nor its 2.6 KB a thread) of its own */
    if ((v[0] | v[1]) & 3) {
        const int du = (v[0] >> 2) - bx, dv = (v[1] >> 2) - by, fx = v[0] & 3, fy = v[1] & 3;
        uint8_t *d = fr->rec + (size_t)my * 16 * fr->ls + (size_t)mx * 16;
        for (int i = lane; i < 256; i += 32)
            d[(size_t)(i >> 4) * fr->ls + (i & 15)] = (uint8_t)qpel_at(qs, (i & 15) + du, (i >> 4) + dv, fx, fy);
    }
    __syncwarp(); /* every lane has read the last vector */
    if (lane == 0) {
        m->mv[0] = (int16_t)v[0];
        m->mv[1] = (int16_t)v[1];
    }
}

/* Stage 1a: a warp an MB. */
__global__ static void k_search(struct h264_frame f)
{
    __shared__ struct h264_qpel qs[SEARCH_WARPS]; /* a warp's half samples */
    int i = blockIdx.x * SEARCH_WARPS + (threadIdx.x >> 5);
    if (i < f.mbw * f.mbh) /* the whole warp alike */
        search_mb_warp(&f, i % f.mbw, i / f.mbw, threadIdx.x & 31, &qs[threadIdx.x >> 5]);
}

/* Stage 1b, 16 lanes an MB (two a warp), a 4x4 block a lane:
 * inter_mb_pred's decisions and code_residual's P16 arithmetic (the
 * twin's, h264_mb_impl.h), a fractional vector's prediction left in rec by
 * k_search. A thread an MB ran an MB's 16 blocks one after the other, and a
 * warp waited for its slowest MB (0.16-0.18 ms a P frame at 4096x2048). */
__global__ static void k_inter(struct h264_frame f)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x, i = t >> 4, b = t & 15;
    const unsigned half = (threadIdx.x & 16) ? 0xffff0000u : 0x0000ffffu;
    if (i >= f.mbw * f.mbh) /* the MB's 16 lanes leave together */
        return;
    const int mx = i % f.mbw, my = i / f.mbw, ls = f.ls, bx = (b & 3) * 4, by = (b >> 2) * 4;
    struct h264_mb *m = &f.mb[i];
    const int mv0 = m->mv[0], mv1 = m->mv[1], frac = ((mv0 | mv1) & 3) != 0;
    const size_t o = (size_t)my * 16 * ls + (size_t)mx * 16;
    const uint8_t *pred = frac ? f.rec + o : f.ref + o + (ptrdiff_t)(mv1 >> 2) * ls + (mv0 >> 2);
    uint8_t *rec = f.rec + o + (size_t)by * ls + bx;
    uint8_t p[16];
    int c[16], eq = 1;
    for (int k = 0; k < 16; k++) {
        p[k] = pred[(size_t)(by + (k >> 2)) * ls + bx + (k & 3)];
        c[k] = f.src[o + (size_t)(by + (k >> 2)) * ls + bx + (k & 3)] - p[k];
        eq &= c[k] == 0;
    }
    int ps[2];
    mv_pred(&f, mx, my, 1, ps, 0);
    const int can_skip = ps[0] == mv0 && ps[1] == mv1;
    if (b == 0) {
        m->mode = 0;
        m->mvd[0] = m->mvd[1] = 0;
    }
    if (__all_sync(half, can_skip && !frac && eq)) { /* the MB equals its prediction */
        m->nc[b] = 0;
        if (b == 0) {
            m->type = H264_MB_SKIP;
            m->cbp = 0;
            m->sad = 0;
        }
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 4; k++)
                rec[(size_t)r * ls + k] = p[4 * r + k];
        return;
    }
    unsigned sad = 0; /* stage 1c's bar (inter_mb_pred's m->sad) */
    for (int k = 0; k < 16; k++)
        sad += (unsigned)h264_abs(c[k]);
    for (int off = 8; off; off >>= 1)
        sad += __shfl_xor_sync(half, sad, off);
    const int q6 = f.qp / 6, qm = f.qp % 6, qbits = 15 + q6, rf = 1 << (qbits - 1);
    fdct4(c);
    int d[16], nc = 0;
    for (int k = 0; k < 16; k++) {
        const int r = ZZ[k], l = quant(c[r], MF[qm][pos_class(r)], rf, qbits);
        m->lv[b][k] = (int16_t)l;
        nc += l != 0;
        d[r] = l * DQ[qm][pos_class(r)] * (1 << q6);
    }
    m->nc[b] = (uint8_t)nc;
    m->dc[b] = 0;
    unsigned cbp = nc ? 1u << (((b >> 3) << 1) | ((b & 3) >> 1)) : 0;
    for (int off = 8; off; off >>= 1)
        cbp |= __shfl_xor_sync(half, cbp, off);
    idct4_add2(d, p, 4, rec, ls);
    if (b == 0) {
        m->cbp = (uint8_t)cbp;
        m->sad = cbp ? sad : 0; /* inter_mb_pred's: kept for candidates only */
        if (!cbp && can_skip) { /* nothing coded: the decoder copies the prediction */
            m->type = H264_MB_SKIP;
        } else {
            int pp[2];
            m->type = H264_MB_P16;
            mv_pred(&f, mx, my, 0, pp, 0);
            m->mvd[0] = (int16_t)(mv0 - pp[0]);
            m->mvd[1] = (int16_t)(mv1 - pp[1]);
        }
    }
}

enum { INTRA_WARPS = 4 }; /* MBs (warps) a block */

/* Pixel (x, y) of an Intra 16x16 prediction (predict16's, one pixel): dc
 * the DC value, a b c the plane's parameters. */
__device__ static inline int pred_px(int mode, int x, int y, const uint8_t *top,
                                     const uint8_t *rec, int ls, int dc, int a, int b, int c)
{
    switch (mode) {
    case 0: return top[x];
    case 1: return rec[(ptrdiff_t)y * ls - 1];
    case 2: return dc;
    default: return clip255((a + b * (x - 7) + c * (y - 7) + 16) >> 5);
    }
}

/* code_residual(intra) of an I16x16 MB, both intra kernels' last step:
 * lane < 16 holds its 4x4 block's residual c (raster) against pred; the AC
 * levels a lane, the DC by lane 0, the MB's fields, the reconstruction at
 * fr->rec + o. */
__device__ __forceinline__ static void i16_code(const struct h264_frame *fr, int mx, int my,
                                                int lane, int *c, int best, const uint8_t *pred,
                                                int *dcs, int *dcy, size_t o)
{
    const int ls = fr->ls;
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    const int q6 = fr->qp / 6, qm = fr->qp % 6, qbits = 15 + q6, f = (1 << qbits) / 3;
    const int bx = (lane & 3) * 4, by = ((lane >> 2) & 3) * 4;
    int lv[16], nc = 0;
    if (lane < 16) {
        fdct4(c);
        lv[0] = 0;
        m->lv[lane][0] = 0;
        for (int k = 1; k < 16; k++) {
            int r = ZZ[k];
            lv[k] = quant(c[r], MF[qm][pos_class(r)], f, qbits);
            m->lv[lane][k] = (int16_t)lv[k];
            nc += lv[k] != 0;
        }
        m->nc[lane] = (uint8_t)nc;
        dcs[lane] = c[0];
    }
    int ac = __any_sync(FULL_MASK, nc != 0);
    __syncwarp();
    if (lane == 0) { /* the DC: Hadamard, quantiser, and back as the decoder does */
        int d[16], cc[16];
        for (int r = 0; r < 16; r++)
            d[r] = dcs[r];
        hadamard4(d);
        for (int k = 0; k < 16; k++) {
            int r = ZZ[k];
            int l = quant(d[r] / 2, MF[qm][0], 2 * f, qbits + 1);
            m->dc[k] = (int16_t)l;
            cc[r] = l;
        }
        hadamard4(cc);
        for (int r = 0; r < 16; r++)
            dcy[r] = (cc[r] * DQ[qm][0] * (1 << q6) + 2) >> 2;
        m->type = H264_MB_I16;
        m->mode = (uint8_t)best;
        m->mv[0] = m->mv[1] = m->mvd[0] = m->mvd[1] = 0; /* intra_mb's */
        m->cbp = ac ? 15 : 0;
    }
    __syncwarp();
    if (lane < 16) {
        int d[16] = { 0 };
        for (int k = 1; k < 16; k++) {
            int r = ZZ[k];
            d[r] = lv[k] * DQ[qm][pos_class(r)] * (1 << q6);
        }
        d[0] = dcy[lane];
        idct4_add2(d, pred + by * 16 + bx, 16, fr->rec + o + (size_t)by * ls + bx, ls);
    }
}

/* intra_mb_bar by one warp: pred[256] (the chosen prediction), dcs[16] and
 * dcy[16] are the warp's shared scratch; the reconstructed neighbours are
 * read at rec (stride rls: the MB's pixel (0, 0), so rec[-rls] is the top
 * row and rec[y * rls - 1] the left column), their copy in shared memory.
 * bar: ~0u (an IDR) or the P MB's inter SAD, to beat by 4 lambda. */
__device__ static void intra_mb_warp(const struct h264_frame *fr, int mx, int my, int lane,
                                     uint8_t *pred, int *dcs, int *dcy, const uint8_t *rec,
                                     int rls, unsigned bar)
{
    const int ls = fr->ls;
    const size_t o = (size_t)my * 16 * ls + (size_t)mx * 16;
    const uint8_t *src = fr->src + o, *top = rec - rls;
    const int hl = mx > 0, ht = slice_has_top(fr, my);
    /* DC and plane parameters (predict16's), on every lane alike */
    int dc = dc16(rec, rls, hl, ht), pa = 0, pb = 0, pc = 0;
    if (hl && ht)
        plane16(rec, rls, &pa, &pb, &pc);
    /* the cheapest available mode by SAD, the first of equals (intra_mb's) */
    const int py = lane >> 1, px0 = (lane & 1) * 8;
    unsigned best_sad = ~0u;
    int best = 2;
    for (int mode = 0; mode < 4; mode++) {
        if ((mode == 0 && !ht) || (mode == 1 && !hl) || (mode == 3 && !(hl && ht)))
            continue;
        unsigned sad = 0;
        for (int k = 0; k < 8; k++)
            sad += (unsigned)h264_abs(src[(size_t)py * ls + px0 + k] -
                                      pred_px(mode, px0 + k, py, top, rec, rls, dc, pa, pb, pc));
        for (int off = 16; off; off >>= 1)
            sad += __shfl_xor_sync(FULL_MASK, sad, off);
        if (sad < best_sad) {
            best_sad = sad;
            best = mode;
        }
    }
    if (bar != ~0u && best_sad + 4u * MV_LAMBDA[fr->qp] >= bar) /* every lane alike */
        return;
    for (int k = 0; k < 8; k++)
        pred[py * 16 + px0 + k] = (uint8_t)pred_px(best, px0 + k, py, top, rec, rls, dc, pa, pb, pc);
    __syncwarp();
    /* code_residual(intra): a 4x4 block a lane of the first 16 */
    const int bx = (lane & 3) * 4, by = ((lane >> 2) & 3) * 4;
    int c[16];
    if (lane < 16)
        for (int i = 0; i < 16; i++) {
            int yy = by + (i >> 2), xx = bx + (i & 3);
            c[i] = src[(size_t)yy * ls + xx] - pred[yy * 16 + xx];
        }
    i16_code(fr, mx, my, lane, c, best, pred, dcs, dcy, o);
}

/* The MB's source for intra_mb_lanes, loaded before the MB waits on its
 * neighbours (nothing in the launch writes src), so no load of it is on
 * the wavefront's chain: row lane >> 1 from pixel (lane & 1) * 8 (the
 * modes' SADs), and the 4x4 block lane & 15's rows (the transform). */
struct intra_src {
    uint2 row;
    uint32_t blk[4];
};

__device__ static inline void intra_src_load(const struct h264_frame *fr, int mx, int my, int lane,
                                             struct intra_src *s)
{
    const int ls = fr->ls; /* mbw * 16: every row 16-byte aligned */
    const uint8_t *src = fr->src + (size_t)my * 16 * ls + (size_t)mx * 16;
    s->row = *(const uint2 *)(src + (size_t)(lane >> 1) * ls + (lane & 1) * 8);
    const int bx = (lane & 3) * 4, by = ((lane >> 2) & 3) * 4;
    for (int r = 0; r < 4; r++)
        s->blk[r] = *(const uint32_t *)(src + (size_t)(by + r) * ls + bx);
}

/* The wavefronts' fences with the new kernels: a release before a count or
 * flag is published, an acquire after it is read (the message-passing
 * pattern of the PTX memory model; __threadfence is fence.sc, costlier,
 * and on the chain of every step twice). */
__device__ static inline void fence_acq_rel(void) { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

/* Byte k (0..3) of a little-endian word. */
__device__ static inline int byte_of(uint32_t v, int k) { return (int)((v >> (8 * k)) & 255u); }

/* intra_mb_warp's decisions and arithmetic with less on the chain of an
 * MB's latency: the source from registers (intra_src, loaded before the
 * wait), the four modes' SADs summed together (one 5-step shuffle
 * reduction of four sums, not four in a row). Returns whether the MB was
 * coded (an IDR's always; a candidate's when it beat bar). */
__device__ static int intra_mb_lanes(const struct h264_frame *fr, int mx, int my, int lane,
                                     const struct intra_src *s, uint8_t *pred, int *dcs, int *dcy,
                                     const uint8_t *rec, int rls, unsigned bar)
{
    const int ls = fr->ls;
    const size_t o = (size_t)my * 16 * ls + (size_t)mx * 16;
    const uint8_t *top = rec - rls;
    const int hl = mx > 0, ht = slice_has_top(fr, my);
    /* the modes each MB may use: V, H, DC, plane (predict16's) */
    const unsigned avail = (ht ? 1u : 0u) | (hl ? 2u : 0u) | 4u | (hl && ht ? 8u : 0u);
    int dc = dc16(rec, rls, hl, ht), pa = 0, pb = 0, pc = 0;
    if (hl && ht)
        plane16(rec, rls, &pa, &pb, &pc);
    const int py = lane >> 1, px0 = (lane & 1) * 8;
    unsigned sad[4] = { 0, 0, 0, 0 };
    for (int k = 0; k < 8; k++) {
        const int v = byte_of(k < 4 ? s->row.x : s->row.y, k & 3);
        for (int mode = 0; mode < 4; mode++)
            if (avail >> mode & 1) /* the same on every lane */
                sad[mode] += (unsigned)h264_abs(v - pred_px(mode, px0 + k, py, top, rec, rls, dc, pa, pb, pc));
    }
    for (int off = 16; off; off >>= 1)
        for (int mode = 0; mode < 4; mode++)
            sad[mode] += __shfl_xor_sync(FULL_MASK, sad[mode], off);
    /* the cheapest available mode by SAD, the first of equals (intra_mb's) */
    unsigned best_sad = ~0u;
    int best = 2;
    for (int mode = 0; mode < 4; mode++)
        if ((avail >> mode & 1) && sad[mode] < best_sad) {
            best_sad = sad[mode];
            best = mode;
        }
    if (bar != ~0u && best_sad + 4u * MV_LAMBDA[fr->qp] >= bar) /* every lane alike */
        return 0;
    for (int k = 0; k < 8; k++)
        pred[py * 16 + px0 + k] = (uint8_t)pred_px(best, px0 + k, py, top, rec, rls, dc, pa, pb, pc);
    __syncwarp();
    /* code_residual(intra): a 4x4 block a lane of the first 16 */
    const int bx = (lane & 3) * 4, by = ((lane >> 2) & 3) * 4;
    int c[16];
    if (lane < 16)
        for (int i = 0; i < 16; i++)
            c[i] = byte_of(s->blk[i >> 2], i & 3) - pred[(by + (i >> 2)) * 16 + bx + (i & 3)];
    i16_code(fr, mx, my, lane, c, best, pred, dcs, dcy, o);
    return 1;
}

/* The IDR's MBs (p 0), or a P frame's MBs that may turn intra (p 1,
 * stage 1c), a warp a row of MBs, left to right: an MB predicts from its
 * left (the warp's own last MB), top and top-left neighbours, so row my's
 * MB mx waits until row my - 1 has done mx + 1 MBs (prog[my - 1], a count
 * published after the MB's pixels, fenced). In a P frame only candidates
 * (intra_p_candidate, found 32 at a time by ballot) are visited: the other
 * MBs' reconstructions are final since k_inter, so a row publishes mx
 * before it waits for its candidate mx, and a candidate waits for the row
 * above only where the MB above or above left is a candidate too (its
 * sad, nonzero for candidates only, is not written during the launch).
 * A slice's top row waits for no row (h264_slice_impl.h). One launch: the wavefront's 383 steps at
 * 4096x2048 are an MB's latency each, not a launch each. A block takes its
 * rows by ticket (prog[mbh]) in the order blocks start, so a row waits
 * only on rows already running. The neighbours are read from L2 (__ldcg:
 * another SM wrote them during the launch) into nb, 17 x 17 (top-left,
 * top row; left column below). */
__global__ static void k_intra_rows(struct h264_frame f, int *prog, int p, int lanes)
{
    __shared__ uint8_t pred[INTRA_WARPS][256];
    __shared__ int dcs[INTRA_WARPS][16], dcy[INTRA_WARPS][16];
    __shared__ uint8_t nb[INTRA_WARPS][17 * 17];
    __shared__ int ticket;
    if (threadIdx.x == 0)
        ticket = atomicAdd(&prog[f.mbh], 1);
    __syncthreads();
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, my = ticket * INTRA_WARPS + w;
    if (my >= f.mbh) /* the whole warp leaves together */
        return;
    const int ls = f.ls;
    const int top = slice_has_top(&f, my); /* a slice's top row waits for no row */
    const volatile int *above = top ? prog + my - 1 : NULL;
    int done_above = 0;
    for (int x0 = 0; x0 < f.mbw; x0 += 32) {
        const int xl = x0 + lane;
        unsigned todo = __ballot_sync(FULL_MASK, xl < f.mbw &&
                                                     (!p || intra_p_candidate(&f.mb[my * f.mbw + xl])));
        while (todo) {
            const int mx = x0 + __ffs(todo) - 1;
            todo &= todo - 1;
            const uint8_t *o = f.rec + (size_t)my * 16 * ls + (size_t)mx * 16;
            struct intra_src s;
            if (lanes) /* before the wait: off the wavefront's chain */
                intra_src_load(&f, mx, my, lane, &s);
            if (p && lane == 0)
                atomicExch(&prog[my], mx); /* the MBs before mx are final */
            /* in a P frame only a candidate above (or above left) is
             * not final yet (k_inter left sad 0 in every other MB, and
             * stage 1c never writes it) */
            const int wait = above && (!p || __ldcg(&f.mb[(my - 1) * f.mbw + mx].sad) ||
                                       (mx > 0 && __ldcg(&f.mb[(my - 1) * f.mbw + mx - 1].sad)));
            if (wait && done_above < mx + 1) {
                if (lane == 0)
                    while ((done_above = *above) < mx + 1)
                        ;
                done_above = __shfl_sync(FULL_MASK, done_above, 0);
                if (lanes) /* the count read before the pixels */
                    fence_acq_rel();
                else
                    __threadfence();
            }
            /* lane l < 17: the top row's pixel l - 1; lanes 17..31 the left
             * column's rows 0..14, lane 0 its row 15 */
            if (top && lane < 17 && (lane > 0 || mx > 0))
                nb[w][lane] = __ldcg(o - ls - 1 + lane);
            const int ly = lane >= 17 ? lane - 17 : lane == 0 ? 15 : -1;
            if (mx > 0 && ly >= 0)
                nb[w][(ly + 1) * 17] = __ldcg(o + (size_t)ly * ls - 1);
            __syncwarp();
            const unsigned bar = p ? f.mb[my * f.mbw + mx].sad : ~0u;
            if (lanes)
                intra_mb_lanes(&f, mx, my, lane, &s, pred[w], dcs[w], dcy[w], nb[w] + 18, 17, bar);
            else
                intra_mb_warp(&f, mx, my, lane, pred[w], dcs[w], dcy[w], nb[w] + 18, 17, bar);
            if (lanes) /* this lane's pixels before the count */
                fence_acq_rel();
            else
                __threadfence();
            __syncwarp();
            if (lane == 0)
                atomicExch(&prog[my], mx + 1);
        }
    }
    if (p && lane == 0)
        atomicExch(&prog[my], f.mbw);
}

enum { CAND_RUN = 8 }; /* MBs of a row a ticket of k_intra_cands */


/* Stage 1c (intra in P) as a dataflow: a candidate waits only for the
 * candidates among its left, top and top-left neighbours (the others'
 * reconstructions are final since k_inter), each on its own flag, not
 * for every candidate of the row above up to it, nor for the candidates
 * before it in its row (k_intra_rows walks a row's ~35 candidates one
 * after another: its chain at 4096x2048 was 180-200 candidates long, the
 * dependencies' 70-130; docs/PERF.md, eleventh pass). A warp takes runs of
 * CAND_RUN MBs of a row by ticket (prog[mbh]) in raster order and codes
 * their candidates left to right with intra_mb_lanes; done[i] (prog + mbh
 * + 1, mbw * mbh ints cleared before the launch) says MB i's
 * reconstruction is final, published after its pixels, fenced. A
 * candidate waits only on MBs of earlier tickets, which running warps
 * hold: the earliest unfinished candidate never waits, so the launch
 * cannot deadlock whatever the GPU keeps resident. The pixels of
 * neighbours that are not candidates are loaded before the wait, the
 * source one candidate ahead. The decisions are intra_mb_bar's, from the
 * same neighbours' same pixels: the result is the twin's raster order's. */
__global__ static void k_intra_cands(struct h264_frame f, int *prog)
{
    __shared__ uint8_t pred[INTRA_WARPS][256];
    __shared__ int dcs[INTRA_WARPS][16], dcy[INTRA_WARPS][16];
    __shared__ uint8_t nb[INTRA_WARPS][17 * 17];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, ls = f.ls, mbw = f.mbw;
    const int runs = (mbw + CAND_RUN - 1) / CAND_RUN, n = runs * f.mbh;
    int *const done = prog + f.mbh + 1;
    for (;;) {
        int t = 0;
        if (lane == 0)
            t = atomicAdd(&prog[f.mbh], 1);
        t = __shfl_sync(FULL_MASK, t, 0);
        if (t >= n) /* the whole warp leaves together */
            return;
        const int my = t / runs, x0 = t % runs * CAND_RUN, xl = x0 + lane;
        const struct h264_mb *row = f.mb + (size_t)my * mbw;
        const int cand = lane < CAND_RUN && xl < mbw && intra_p_candidate(&row[xl]);
        const unsigned todo0 = __ballot_sync(FULL_MASK, cand);
        if (!todo0)
            continue;
        const unsigned mysad = cand ? row[xl].sad : 0; /* the bar lane j's MB must beat */
        /* which neighbours are candidates: sad is nonzero in candidates
         * only, and nothing writes it during the launch. above: bit b the
         * MB above x0 - 1 + b; left: the MB left of the run */
        const int top = slice_has_top(&f, my), xa = x0 - 1 + lane;
        const unsigned above = __ballot_sync(FULL_MASK, top && lane <= CAND_RUN && xa >= 0 && xa < mbw &&
                                                            f.mb[(size_t)(my - 1) * mbw + xa].sad != 0);
        const int left = x0 > 0 && row[x0 - 1].sad != 0;
        /* each candidate's source loaded one candidate ahead (src is
         * read only): the next MB's loads wait on nothing of this one's */
        struct intra_src s, next;
        intra_src_load(&f, x0 + __ffs(todo0) - 1, my, lane, &next);
        for (unsigned todo = todo0; todo; todo &= todo - 1) {
            const int j = __ffs(todo) - 1, mx = x0 + j, i = my * mbw + mx;
            s = next;
            if (todo & (todo - 1))
                intra_src_load(&f, x0 + __ffs(todo & (todo - 1)) - 1, my, lane, &next);
            const uint8_t *o = f.rec + (size_t)my * 16 * ls + (size_t)mx * 16;
            /* neighbours another warp may still be coding (the left one
             * inside the run, if a candidate, this warp has coded) */
            const int wl = mx == x0 && left, wt = (above >> (j + 1)) & 1, wtl = (above >> j) & 1;
            /* lane l < 17: the top row's pixel l - 1 (lane 0: the top-left
             * MB's); lanes 17..31 the left column's rows 0..14, lane 0 its
             * row 15. Each loaded now if its MB is final, else after the wait */
            const int ly = lane >= 17 ? lane - 17 : lane == 0 ? 15 : -1;
            const int gt = top && lane < 17 && (lane > 0 || mx > 0), pt = lane == 0 ? wtl : wt;
            const int gl = mx > 0 && ly >= 0;
            __syncwarp(); /* the last MB's reads of nb are over */
            if (gt && !pt)
                nb[w][lane] = __ldcg(o - ls - 1 + lane);
            if (gl && !wl)
                nb[w][(ly + 1) * 17] = __ldcg(o + (size_t)ly * ls - 1);
            if (wl || wt || wtl) { /* the whole warp alike */
                const int d = lane == 0 && wl ? i - 1 : lane == 1 && wt ? i - mbw : lane == 2 && wtl ? i - mbw - 1 : -1;
                if (d >= 0)
                    while (!*(volatile int *)&done[d])
                        ;
                __syncwarp();
                fence_acq_rel(); /* the flags read before the pixels */
                if (gt && pt)
                    nb[w][lane] = __ldcg(o - ls - 1 + lane);
                if (gl && wl)
                    nb[w][(ly + 1) * 17] = __ldcg(o + (size_t)ly * ls - 1);
            }
            __syncwarp();
            const int coded = intra_mb_lanes(&f, mx, my, lane, &s, pred[w], dcs[w], dcy[w], nb[w] + 18,
                                             17, __shfl_sync(FULL_MASK, mysad, j));
            if (coded)
                fence_acq_rel(); /* this lane's pixels before the flag */
            __syncwarp();
            if (lane == 0)
                atomicExch(&done[i], 1);
        }
    }
}

/* Stage 1d: a thread an MB (every MB's type final after k_intra_rows). */
__global__ static void k_pfix(struct h264_frame f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.mbw * f.mbh)
        pfix_mb(&f, i % f.mbw, i / f.mbw);
}

extern "C" int cu_h264_load(const struct h264_frame *f, const uint8_t *y, int yls, int w, int h,
                            cudaStream_t s, vr_err *err)
{
    dim3 g((unsigned)(f->mbw * 16 + 255) / 256, (unsigned)f->mbh * 16);
    k_load<<<g, 256, 0, s>>>(*f, y, yls, w, h);
    return launched("load", err);
}

extern "C" int cu_h264_search(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_search<<<(n + SEARCH_WARPS - 1) / SEARCH_WARPS, 32 * SEARCH_WARPS, 0, s>>>(*f);
    return launched("search", err);
}

extern "C" int cu_h264_inter(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_inter<<<(n + 7) / 8, 128, 0, s>>>(*f);
    return launched("inter", err);
}

extern "C" int cu_h264_intra(const struct h264_frame *f, int *prog, int lanes, cudaStream_t s,
                             vr_err *err)
{
    cudaError_t e = cudaMemsetAsync(prog, 0, (size_t)(f->mbh + 1) * sizeof *prog, s);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: intra: %s", cudaGetErrorString(e));
    int blocks = (f->mbh + INTRA_WARPS - 1) / INTRA_WARPS;
    k_intra_rows<<<blocks, 32 * INTRA_WARPS, 0, s>>>(*f, prog, 0, lanes);
    return launched("intra", err);
}

extern "C" int cu_h264_intra_p(const struct h264_frame *f, int *prog, int lanes, cudaStream_t s,
                               vr_err *err)
{
    size_t words = (size_t)f->mbh + 1 + (lanes ? (size_t)f->mbw * f->mbh : 0);
    cudaError_t e = cudaMemsetAsync(prog, 0, words * sizeof *prog, s);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "matte encoder: intra in P: %s", cudaGetErrorString(e));
    if (lanes) {
        int n = (f->mbw + CAND_RUN - 1) / CAND_RUN * f->mbh;
        k_intra_cands<<<(n + INTRA_WARPS - 1) / INTRA_WARPS, 32 * INTRA_WARPS, 0, s>>>(*f, prog);
    } else {
        int blocks = (f->mbh + INTRA_WARPS - 1) / INTRA_WARPS;
        k_intra_rows<<<blocks, 32 * INTRA_WARPS, 0, s>>>(*f, prog, 1, 0);
    }
    return launched("intra in P", err);
}

extern "C" int cu_h264_pfix(const struct h264_frame *f, cudaStream_t s, vr_err *err)
{
    int n = f->mbw * f->mbh;
    k_pfix<<<(n + 127) / 128, 128, 0, s>>>(*f);
    return launched("P fix", err);
}

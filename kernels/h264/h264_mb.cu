/*
 * h264_mb.cu - stages 0 and 1 of the matte encoder as CUDA kernels (twins
 * of h264_mb_ref.c): a thread a pixel for the load; a P frame's motion
 * search (h264_mv_impl.h) a warp an MB, then its per-MB code of
 * h264_mb_impl.h a thread an MB; an IDR's MBs one anti-diagonal a
 * launch (an MB predicts from its left, top and top-left neighbours), a
 * warp an MB: the wavefront is 383 launches long at 4096x2048, so an MB's
 * latency is the IDR's (a thread an MB took 28 ms an IDR on an H200).
 * The warp's arithmetic is intra_mb's with the helpers of h264_mb_impl.h,
 * split over lanes: the four predictions' SADs 8 pixels a lane, then a 4x4
 * block a lane (transform, quantiser, reconstruction), the DC's Hadamard
 * on lane 0; g_h264_encode holds its bytes to the C twin's.
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

/* Stage 1a: a warp an MB (search_mb's SADs over the lanes). */
__global__ static void k_search(struct h264_frame f)
{
    int i = blockIdx.x * SEARCH_WARPS + (threadIdx.x >> 5);
    if (i < f.mbw * f.mbh) /* the whole warp alike */
        search_mb(&f, i % f.mbw, i / f.mbw, threadIdx.x & 31);
}

__global__ static void k_inter(struct h264_frame f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.mbw * f.mbh)
        inter_mb(&f, i % f.mbw, i / f.mbw);
}

enum { INTRA_WARPS = 4 }; /* MBs (warps) a block */
#define FULL_MASK 0xffffffffu

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

/* intra_mb by one warp: pred[256] (the chosen prediction), dcs[16] and
 * dcy[16] are the warp's shared scratch. */
__device__ static void intra_mb_warp(const struct h264_frame *fr, int mx, int my, int lane,
                                     uint8_t *pred, int *dcs, int *dcy)
{
    const int ls = fr->ls;
    const size_t o = (size_t)my * 16 * ls + (size_t)mx * 16;
    const uint8_t *rec = fr->rec + o, *src = fr->src + o, *top = rec - ls;
    const int hl = mx > 0, ht = my > 0;
    /* DC and plane parameters (predict16's), on every lane alike */
    int dc = dc16(rec, ls, hl, ht), pa = 0, pb = 0, pc = 0;
    if (hl && ht)
        plane16(rec, ls, &pa, &pb, &pc);
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
                                      pred_px(mode, px0 + k, py, top, rec, ls, dc, pa, pb, pc));
        for (int off = 16; off; off >>= 1)
            sad += __shfl_xor_sync(FULL_MASK, sad, off);
        if (sad < best_sad) {
            best_sad = sad;
            best = mode;
        }
    }
    for (int k = 0; k < 8; k++)
        pred[py * 16 + px0 + k] = (uint8_t)pred_px(best, px0 + k, py, top, rec, ls, dc, pa, pb, pc);
    __syncwarp();
    /* code_residual(intra): a 4x4 block a lane of the first 16 */
    struct h264_mb *m = &fr->mb[my * fr->mbw + mx];
    const int q6 = fr->qp / 6, qm = fr->qp % 6, qbits = 15 + q6, f = (1 << qbits) / 3;
    const int bx = (lane & 3) * 4, by = ((lane >> 2) & 3) * 4;
    int lv[16], nc = 0;
    if (lane < 16) {
        int c[16];
        for (int i = 0; i < 16; i++) {
            int yy = by + (i >> 2), xx = bx + (i & 3);
            c[i] = src[(size_t)yy * ls + xx] - pred[yy * 16 + xx];
        }
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

__global__ static void k_intra_warp(struct h264_frame f, int d, int y0, int n)
{
    __shared__ uint8_t pred[INTRA_WARPS][256];
    __shared__ int dcs[INTRA_WARPS][16], dcy[INTRA_WARPS][16];
    int w = threadIdx.x >> 5, j = blockIdx.x * INTRA_WARPS + w;
    if (j >= n) /* the whole warp leaves together */
        return;
    int my = y0 + j;
    intra_mb_warp(&f, d - my, my, threadIdx.x & 31, pred[w], dcs[w], dcy[w]);
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
    k_inter<<<(n + 63) / 64, 64, 0, s>>>(*f);
    return launched("inter", err);
}

extern "C" int cu_h264_intra(const struct h264_frame *f, int d, cudaStream_t s, vr_err *err)
{
    /* the diagonal's rows: my from max(0, d - mbw + 1) to min(d, mbh - 1) */
    int y0 = d - f->mbw + 1 > 0 ? d - f->mbw + 1 : 0, y1 = d < f->mbh - 1 ? d : f->mbh - 1;
    int n = y1 - y0 + 1;
    if (n <= 0)
        return 0;
    k_intra_warp<<<(n + INTRA_WARPS - 1) / INTRA_WARPS, 32 * INTRA_WARPS, 0, s>>>(*f, d, y0, n);
    return launched("intra", err);
}

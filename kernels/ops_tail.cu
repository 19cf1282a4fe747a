/*
 * ops_tail.cu - a decoder stage in one kernel (cu_tail, ops_fused.h):
 * prologue + 1x1 conv, depthwise with the conv's output as residual, then
 * either the 2x2 stride-2 transpose conv and its activation, straight to
 * the network's output (the last stage), or the next stage's 1x1 conv (the
 * stages before: that conv runs on this map and is resized after, as
 * RS_AFTER in net_cuda.cu). Before it these were three kernels writing and
 * re-reading two full-size maps (128x128x16 a tile at the last stage); here
 * the 1x1 conv's output lives in shared memory for a 16x16 block of the map
 * plus a one-pixel ring (recomputed by the neighbouring blocks: 27% more
 * 1x1 work, none of the traffic).
 *
 * One thread block of 256 threads per 16x16 block of one image (channel
 * counts compiled in: tl_shapes):
 *   1. t = 1x1 conv of the prologue, for the 18x18 pixels (zero outside
 *      the map: the depthwise conv's SAME padding pads t, not its input);
 *      the prologue's sum operand may be a small map resized here (a
 *      deferred resize: the decoder's upsampled maps are never written)
 *   2. thread per pixel: the depthwise taps, bias, activations, residual
 *   3. the same thread: its 2x2 output pixels of the transpose conv, or
 *      its pixel of the 1x1 conv.
 * Float32 arithmetic; the inputs and the output in the dtypes `dt` names.
 */
extern "C" {
#include "model.h"
}
#include "ops_resize.cuh"
#include "ops_window.cuh"

#define TL_B 16                 /* block of the map a thread block computes */
#define TL_R (TL_B + 2)         /* with the one-pixel ring */
#define TL_THREADS (TL_B * TL_B)
#define TL_MAX_COUT 4

struct tl_k {
    struct cu_tail_args a;
    int oh, ow;                 /* output map of the transpose conv */
    unsigned dt;
    float b_sy, b_sx;           /* b's resize scales, when b_rs_h */
};

/* u . w over C channels, w 16-byte aligned in shared memory. */
template <int C>
__device__ __forceinline__ float tl_dot(const float (&u)[C], const float *w)
{
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
    float acc = 0.0f;
#pragma unroll
    for (int c4 = 0; c4 < C / 4; c4++) {
        const float4 v = w4[c4];
        acc = fmaf(u[4 * c4], v.x, acc);
        acc = fmaf(u[4 * c4 + 1], v.y, acc);
        acc = fmaf(u[4 * c4 + 2], v.z, acc);
        acc = fmaf(u[4 * c4 + 3], v.w, acc);
    }
    return acc;
}

/* Channel counts are template arguments (CIN in, C of t): every loop
 * unrolls to straight code with no guards. A generic version with runtime
 * counts was 105 KB of code and ran at a quarter of this speed. Four
 * thread blocks an SM (64 registers, no spills): left free, the compiler
 * takes 122 registers for the resize on load and halves the blocks in
 * flight. (Staging the small map's window in shared memory instead was
 * slower: 0.152 vs 0.129 ms at batch 64.) */
template <int CIN, int C, int PW>
__global__ void __launch_bounds__(TL_THREADS, 3) k_tail(const tl_k p)
{
    /* row stride C + 4: 16-byte aligned pixels, and 8 consecutive pixels'
     * 16-byte accesses on distinct banks (C + 1, with scalar accesses, made
     * the kernel shared-memory bound) */
    constexpr int TS = C + 4;
    __shared__ __align__(16) float T[TL_R * TL_R * TS];
    __shared__ __align__(16) float Wp[CIN * C];   /* [ci][o] */
    __shared__ __align__(16) float Wd[9 * C];
    __shared__ __align__(16) float Wt[(PW ? PW : TL_MAX_COUT * 4) * C];
    __shared__ __align__(16) float Bp[C], Bd[C];
    const struct cu_tail_args &a = p.a;
    const int tid = threadIdx.x, n = blockIdx.z;
    const int y0 = blockIdx.y * TL_B, x0 = blockIdx.x * TL_B;
    for (int i = tid; i < C * CIN; i += TL_THREADS)
        Wp[(i % CIN) * C + i / CIN] = __ldg(a.wp + i);
    for (int i = tid; i < C; i += TL_THREADS) {
        Bp[i] = a.bp ? __ldg(a.bp + i) : 0.0f;
        Bd[i] = a.bd ? __ldg(a.bd + i) : 0.0f;
    }
    for (int i = tid; i < a.k * a.k * C; i += TL_THREADS)
        Wd[i] = __ldg(a.wd + i);
    for (int i = tid; i < a.cout * (PW ? 1 : 4) * C; i += TL_THREADS)
        Wt[i] = __ldg(a.wt + i);
    const int a16 = (p.dt & CU_DT_IN0) != 0, s16 = (p.dt & CU_DT_IN1) != 0,
              b16 = (p.dt & CU_DT_IN2) != 0, o16 = (p.dt & CU_DT_OUT) != 0;
    const size_t bimg = (size_t)n * a.b_rs_h * a.b_rs_w * CIN;
    __syncthreads();

    /* 1. t on the block and its ring */
    for (int i = tid; i < TL_R * TL_R; i += TL_THREADS) {
        const int y = y0 + i / TL_R - 1, x = x0 + i % TL_R - 1;
        float *t = T + i * TS;
        if (y < 0 || y >= a.h || x < 0 || x >= a.w) {
#pragma unroll
            for (int o = 0; o < C; o += 4)
                *reinterpret_cast<float4 *>(t + o) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const size_t px = ((size_t)n * a.h + y) * a.w + x;
        const rs_taps tp = a.b_rs_h ? rs_taps_of(y, x, p.b_sy, p.b_sx, a.b_rs_half, a.b_rs_h,
                                                 a.b_rs_w)
                                    : rs_taps{};
        float acc[C];
#pragma unroll
        for (int o = 0; o < C; o++)
            acc[o] = Bp[o];
#pragma unroll
        for (int q = 0; q < CIN / 8; q++) {
            float v[8], sc[8], b[8];
            ldx8(a.a, a16, px * CIN + q * 8, v);
            if (a.a_scale) {
                ldx8(a.a_scale, s16, (size_t)n * CIN + q * 8, sc);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    v[k] *= sc[k];
            }
            if (a.b) {
                if (a.b_rs_h)
                    rs_load8(a.b, b16, bimg, a.b_rs_w, CIN, q * 8, tp, b);
                else
                    ldx8(a.b, b16, px * CIN + q * 8, b);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    v[k] += b[k];
            }
            fma_rows8(acc, Wp + q * 8 * C, v);
        }
        act_vec(acc, a.act_p1);
        act_vec(acc, a.act_p2);
#pragma unroll
        for (int o = 0; o < C; o += 4)
            *reinterpret_cast<float4 *>(t + o) = make_float4(acc[o], acc[o + 1], acc[o + 2],
                                                             acc[o + 3]);
    }
    __syncthreads();

    /* 2. depthwise + residual, 3. transpose conv: a thread per pixel */
    const int py = tid / TL_B, px = tid % TL_B, y = y0 + py, x = x0 + px;
    if (y >= a.h || x >= a.w)
        return;
    const int r = a.k / 2;
    float u[C];
#pragma unroll
    for (int ch = 0; ch < C; ch++)
        u[ch] = Bd[ch];
    for (int ky = 0; ky < a.k; ky++)
        for (int kx = 0; kx < a.k; kx++) {
            const float4 *t4 = reinterpret_cast<const float4 *>(
                T + ((py + 1 + ky - r) * TL_R + px + 1 + kx - r) * TS);
            const float4 *w4 = reinterpret_cast<const float4 *>(Wd + (ky * a.k + kx) * C);
#pragma unroll
            for (int c4 = 0; c4 < C / 4; c4++) {
                const float4 w = w4[c4], t = t4[c4];
                u[4 * c4] = fmaf(t.x, w.x, u[4 * c4]);
                u[4 * c4 + 1] = fmaf(t.y, w.y, u[4 * c4 + 1]);
                u[4 * c4 + 2] = fmaf(t.z, w.z, u[4 * c4 + 2]);
                u[4 * c4 + 3] = fmaf(t.w, w.w, u[4 * c4 + 3]);
            }
        }
    const float *tc = T + ((py + 1) * TL_R + px + 1) * TS;
    act_vec(u, a.act_d1);
    act_vec(u, a.act_d2);
#pragma unroll
    for (int ch = 0; ch < C; ch++)
        u[ch] += tc[ch];
    act_vec(u, a.act_d3);
    if constexpr (PW > 0) {   /* the next stage's 1x1 conv */
        float o[PW ? PW : 1];
#pragma unroll
        for (int oc = 0; oc < PW; oc++)
            o[oc] = tl_dot<C>(u, Wt + oc * C) + __ldg(a.bt + oc);
        const size_t px_out = (((size_t)n * a.h + y) * a.w + x) * PW;
#pragma unroll
        for (int q = 0; q < PW / 8; q++)
            stx8(a.out, o16, px_out + q * 8, o + q * 8);
    } else {   /* the transpose conv: this pixel's 2x2 outputs */
        for (int q = 0; q < 4; q++) {
            const int oy = 2 * y + (q >> 1), ox = 2 * x + (q & 1);
            if (oy >= p.oh || ox >= p.ow)
                continue;
            for (int oc = 0; oc < a.cout; oc++) {
                const float v = act_small(tl_dot<C>(u, Wt + (oc * 4 + q) * C) +
                                          __ldg(a.bt + oc), a.act_t);
                stx1(a.out, o16, (((size_t)n * p.oh + oy) * p.ow + ox) * a.cout + oc, v);
            }
        }
    }
}

/* The compiled channel counts: cin, c, and the 1x1 conv's cout (0: the
 * transpose conv, any cout up to TL_MAX_COUT). */
static const int tl_shapes[][3] = { { 16, 16, 0 }, { 8, 8, 0 }, { 16, 16, 16 }, { 24, 24, 16 } };

static int tl_shape(const struct cu_tail_args *a)
{
    for (int i = 0; i < (int)(sizeof tl_shapes / sizeof tl_shapes[0]); i++)
        if (a->cin == tl_shapes[i][0] && a->c == tl_shapes[i][1] &&
            (a->pw ? a->cout : 0) == tl_shapes[i][2])
            return i;
    return -1;
}

extern "C" int cu_tail_ok(const struct cu_tail_args *a)
{
    return a && a->n >= 1 && a->h >= 1 && a->w >= 1 && tl_shape(a) >= 0 &&
           (a->k == 1 || a->k == 3) &&
           a->cout >= 1 && (a->pw || a->cout <= TL_MAX_COUT) && a->wp && a->wd && a->wt &&
           a->bt;
}

extern "C" int cu_tail_dt(const struct cu_tail_args *a, unsigned dt, cudaStream_t s)
{
    if (!cu_tail_ok(a) || !a->a || !a->out ||
        (size_t)a->n * a->h * a->w * (a->cin > a->c ? a->cin : a->c) > 0x7fffffffu ||
        (size_t)a->n * 4 * a->h * a->w * a->cout > 0x7fffffffu)
        return VR_EINVAL;
    struct conv_geom g = { .n = a->n, .ih = a->h, .iw = a->w, .cin = a->c, .cout = a->cout,
                           .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1 };
    op_tconv_geom(&g, MPAD_SAME);
    if (!a->pw && (g.pad_top || g.pad_left))
        return VR_EINVAL;
    if (a->b_rs_h > 0 && (a->b_rs_w <= 0 || (size_t)a->n * a->b_rs_h * a->b_rs_w * a->cin >
                                                  0x7fffffffu))
        return VR_EINVAL;
    tl_k k = { *a, g.oh, g.ow, dt, rs_scale(a->b_rs_h, a->h, a->b_rs_align),
               rs_scale(a->b_rs_w, a->w, a->b_rs_align) };
    dim3 grid((a->w + TL_B - 1) / TL_B, (a->h + TL_B - 1) / TL_B, a->n);
    switch (tl_shape(a)) {
    case 0: k_tail<16, 16, 0><<<grid, TL_THREADS, 0, s>>>(k); break;
    case 1: k_tail<8, 8, 0><<<grid, TL_THREADS, 0, s>>>(k); break;
    case 2: k_tail<16, 16, 16><<<grid, TL_THREADS, 0, s>>>(k); break;
    default: k_tail<24, 24, 16><<<grid, TL_THREADS, 0, s>>>(k); break;
    }
    return cu_check_launch();
}

extern "C" int cu_tail(const struct cu_tail_args *a, int f16, cudaStream_t s)
{
    return cu_tail_dt(a, f16 ? CU_DT_ALL : 0, s);
}

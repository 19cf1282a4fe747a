/*
 * ops_tail.cu - a decoder stage in one kernel (cu_tail, ops_fused.h):
 * prologue + 1x1 conv, depthwise with the conv's output as residual, then
 * either the 2x2 stride-2 transpose conv and its activation, straight to
 * the network's output (the last stage), or the next stage's 1x1 conv (the
 * stages before: that conv runs on this map and is resized after, as
 * NETPLAN_RS_AFTER in net_plan.c). Before it these were three kernels writing and
 * re-reading two full-size maps (128x128x16 a tile at the last stage); here
 * the 1x1 conv's output lives in shared memory for a 16x16 block of the map
 * plus a one-pixel ring (recomputed by the neighbouring blocks: 27% more
 * 1x1 work, none of the traffic).
 *
 * One thread block of 256 threads per 16x16 block of one image (channel
 * counts compiled in: tl_shapes; the network's dtype mixes too):
 *   1. t = 1x1 conv of the prologue, for the 18x18 pixels (zero outside
 *      the map: the depthwise conv's SAME padding pads t, not its input);
 *      the prologue's sum operand may be a small map resized here (a
 *      deferred resize: the decoder's upsampled maps are never written).
 *      Up to 16 input channels the conv runs on the tensor cores.
 *   2. thread per pixel: the depthwise taps, bias, activations, residual
 *   3. the same thread: its 2x2 output pixels of the transpose conv, or
 *      its pixel of the 1x1 conv.
 * Float32 arithmetic; the inputs and the output in the dtypes `dt` names.
 * At batch 64 (H100) the last stage took 0.129 ms; the tensor cores, the
 * compiled 3x3 taps and the transpose conv's four dots before its stores
 * took it to 0.113 (ncu: 34.5 -> 28.1 M warp instructions a half batch;
 * what is left waits on the prologue's loads).
 */
extern "C" {
#include "model.h"
}
#include "ops_mma.cuh"
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

/* u[c] += depthwise taps (K x K, K = 1 or 3) of T around block pixel (py,
 * px); compiled per K: the runtime tap loop and its index arithmetic were
 * a sixth of the kernel's instructions (ncu source counters). */
template <int K, int C, int TS>
__device__ __forceinline__ void tl_depthwise(float (&u)[C], const float *T, const float *Wd,
                                             int py, int px)
{
#pragma unroll
    for (int ky = 0; ky < K; ky++)
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const float4 *t4 = reinterpret_cast<const float4 *>(
                T + ((py + 1 + ky - K / 2) * TL_R + px + 1 + kx - K / 2) * TS);
            const float4 *w4 = reinterpret_cast<const float4 *>(Wd + (ky * K + kx) * C);
#pragma unroll
            for (int c4 = 0; c4 < C / 4; c4++) {
                const float4 w = w4[c4], t = t4[c4];
                u[4 * c4] = fmaf(t.x, w.x, u[4 * c4]);
                u[4 * c4 + 1] = fmaf(t.y, w.y, u[4 * c4 + 1]);
                u[4 * c4 + 2] = fmaf(t.z, w.z, u[4 * c4 + 2]);
                u[4 * c4 + 3] = fmaf(t.w, w.w, u[4 * c4 + 3]);
            }
        }
}

/* The transpose conv's activation: the sigmoid of the segmentation output
 * inline (act_small calls out for it), act_f's arithmetic. */
__device__ __forceinline__ float tl_act_t(float x, int act)
{
    return act == CU_ACT_LOGISTIC ? 1.0f / (1.0f + expf(-x)) : act_small(x, act);
}

/* The dtype bits: compiled in (DT >= 0: the network's combinations, the
 * runtime branches of every load and store gone) or read at run time. */
template <int DT>
__device__ __forceinline__ unsigned tl_dtype(unsigned dt)
{
    return DT >= 0 ? (unsigned)DT : dt;
}

/* p + i elements, p float16 or float32. */
__device__ __forceinline__ const void *tl_at(const void *p, int f16, size_t i)
{
    return f16 ? (const void *)((const __half *)p + i) : (const void *)((const float *)p + i);
}

/* The block's prologue inputs in shared memory: the resize's source rows
 * and columns of the window's rows and columns (rs_coord once each, not
 * once a pixel), and the image's a_scale. */
struct tl_pro {
    int2 ry[TL_R], rx[TL_R];
    float fy[TL_R], fx[TL_R];
    float sc[32];
};

template <int CIN>
__device__ __forceinline__ void tl_pro_stage(const tl_k &p, unsigned dt, int n, int y0, int x0,
                                             tl_pro &s)
{
    const struct cu_tail_args &a = p.a;
    const int tid = threadIdx.x;
    if (a.b_rs_h && tid < 2 * TL_R) {
        const int r = tid % TL_R, row = tid < TL_R;
        int lo, hi;
        float f;
        if (row)
            rs_coord(y0 - 1 + r, p.b_sy, a.b_rs_half, a.b_rs_h, &lo, &hi, &f);
        else
            rs_coord(x0 - 1 + r, p.b_sx, a.b_rs_half, a.b_rs_w, &lo, &hi, &f);
        (row ? s.ry : s.rx)[r] = make_int2(lo, hi);
        (row ? s.fy : s.fx)[r] = f;
    }
    if (a.a_scale && tid >= 64 && tid < 64 + CIN)
        s.sc[tid - 64] = ldx1(a.a_scale, (dt & CU_DT_IN1) != 0, (size_t)n * CIN + tid - 64);
}

/* Channels q*8..q*8+7 of the prologue at window pixel (r, c) = map pixel
 * (y, x): a * a_scale + b, b resized on load when small. */
template <int CIN>
__device__ __forceinline__ void tl_prologue8(const tl_k &p, unsigned dt, int n, int y, int x,
                                             int r, int c, const tl_pro &s, int q, float v[8])
{
    const struct cu_tail_args &a = p.a;
    const int a16 = (dt & CU_DT_IN0) != 0, b16 = (dt & CU_DT_IN2) != 0;
    const unsigned pix = (unsigned)(y * a.w + x);
    ldx8(tl_at(a.a, a16, (size_t)n * a.h * a.w * CIN), a16, pix * CIN + q * 8, v);
    if (a.a_scale)
#pragma unroll
        for (int k = 0; k < 8; k++)
            v[k] *= s.sc[q * 8 + k];
    if (a.b) {
        float b[8];
        if (a.b_rs_h) {
            const rs_taps tp = rs_taps_from(s.ry[r].x, s.ry[r].y, s.fy[r], s.rx[c].x,
                                            s.rx[c].y, s.fx[c]);
            rs_load8(tl_at(a.b, b16, (size_t)n * a.b_rs_h * a.b_rs_w * CIN), b16, 0, a.b_rs_w,
                     CIN, q * 8, tp, b);
        } else {
            ldx8(tl_at(a.b, b16, (size_t)n * a.h * a.w * CIN), b16, pix * CIN + q * 8, b);
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
            v[k] += b[k];
    }
}

/* Channel counts are template arguments (CIN in, C of t): every loop
 * unrolls to straight code with no guards. A generic version with runtime
 * counts was 105 KB of code and ran at a quarter of this speed. Three
 * thread blocks an SM (80 registers). (Staging the small map's window in
 * shared memory was slower: 0.152 vs 0.129 ms at batch 64.)
 *
 * Step 1 with CIN <= 16 (the last stages) runs the 1x1 conv on the tensor
 * cores (ops_mma.cuh, in place in T): a thread an 8-channel group of a
 * pixel computes the prologue into T, then each warp converts 16 pixels.
 * On the CUDA cores a thread a pixel took half the kernel's instructions
 * (ncu source counters at 128x128x16: 17 of 34 M a batch of 32). The
 * 24-channel stage keeps the CUDA-core loop: its window would need 48 KB. */
template <int CIN, int C, int PW, int DT>
__global__ void __launch_bounds__(TL_THREADS, CIN <= 16 ? 4 : 3) k_tail(const tl_k p)
{
    constexpr bool MMA = CIN <= 16;
    constexpr int KP = 16;                              /* the MMA's K, CIN padded */
    constexpr int RN = TL_R * TL_R;                     /* window pixels */
    constexpr int RP = MMA ? (RN + 15) / 16 * 16 : RN;  /* as MMA rows */
    /* row stride: 16-byte aligned pixels, and 8 consecutive pixels' 16-byte
     * accesses on distinct banks (C + 1, with scalar accesses, made the
     * kernel shared-memory bound); with MMA, room for the prologue's KP */
    constexpr int TS = (MMA && KP > C ? KP : C) + 4;
    __shared__ __align__(16) float T[RP * TS];
    __shared__ __align__(16) float Wp[MMA ? 4 : CIN * C];   /* [ci][o] */
    __shared__ __align__(16) __half Wh[MMA ? C * (KP + 8) : 8], Wl[MMA ? C * (KP + 8) : 8];
    __shared__ float Msk[MMA ? RP : 1];
    __shared__ __align__(16) float Wd[9 * C];
    __shared__ __align__(16) float Wt[(PW ? PW : TL_MAX_COUT * 4) * C];
    __shared__ __align__(16) float Bp[C], Bd[C];
    __shared__ tl_pro pro;
    const struct cu_tail_args &a = p.a;
    const unsigned dt = tl_dtype<DT>(p.dt);
    const int tid = threadIdx.x, n = blockIdx.z;
    const int y0 = blockIdx.y * TL_B, x0 = blockIdx.x * TL_B;
    if constexpr (MMA)
        mma_stage_hilo(a.wp, NULL, C, CIN, KP, 8, Wh, Wl, TL_THREADS);
    else
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
    const int o16 = (dt & CU_DT_OUT) != 0;
    tl_pro_stage<CIN>(p, dt, n, y0, x0, pro);
    __syncthreads();

    /* 1. t on the block and its ring */
    if constexpr (MMA) {
        for (int it = tid; it < RP * (KP / 8); it += TL_THREADS) {
            const int i = it / (KP / 8), q = it % (KP / 8), r = i / TL_R, c = i % TL_R;
            const int y = y0 + r - 1, x = x0 + c - 1;
            const bool in = i < RN && y >= 0 && y < a.h && x >= 0 && x < a.w;
            float v[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
            if (in && q * 8 < CIN)
                tl_prologue8<CIN>(p, dt, n, y, x, r, c, pro, q, v);
            if (q == 0)
                Msk[i] = in ? 1.0f : 0.0f;
            st8(T + i * TS + q * 8, v);
        }
        __syncthreads();
        mma_conv1x1<1, TL_THREADS, 8>(T, TS, KP, Wh, Wl, C, Bp, Msk, a.act_p1, a.act_p2, T, TS,
                                      RP);
    } else {
        for (int i = tid; i < RN; i += TL_THREADS) {
            const int r = i / TL_R, c = i % TL_R, y = y0 + r - 1, x = x0 + c - 1;
            float *t = T + i * TS;
            if (y < 0 || y >= a.h || x < 0 || x >= a.w) {
#pragma unroll
                for (int o = 0; o < C; o += 4)
                    *reinterpret_cast<float4 *>(t + o) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                continue;
            }
            float acc[C];
#pragma unroll
            for (int o = 0; o < C; o++)
                acc[o] = Bp[o];
#pragma unroll
            for (int q = 0; q < CIN / 8; q++) {
                float v[8];
                tl_prologue8<CIN>(p, dt, n, y, x, r, c, pro, q, v);
                fma_rows8(acc, Wp + q * 8 * C, v);
            }
            act_vec(acc, a.act_p1);
            act_vec(acc, a.act_p2);
#pragma unroll
            for (int o = 0; o < C; o += 4)
                *reinterpret_cast<float4 *>(t + o) = make_float4(acc[o], acc[o + 1], acc[o + 2],
                                                                 acc[o + 3]);
        }
    }
    __syncthreads();

    /* 2. depthwise + residual, 3. transpose conv: a thread per pixel */
    const int py = tid / TL_B, px = tid % TL_B, y = y0 + py, x = x0 + px;
    if (y >= a.h || x >= a.w)
        return;
    float u[C];
#pragma unroll
    for (int ch = 0; ch < C; ch++)
        u[ch] = Bd[ch];
    if (a.k == 3)
        tl_depthwise<3, C, TS>(u, T, Wd, py, px);
    else
        tl_depthwise<1, C, TS>(u, T, Wd, py, px);
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
    } else {   /* the transpose conv: this pixel's 2x2 outputs, the four dots first */
        const bool inside = 2 * y + 1 < p.oh && 2 * x + 1 < p.ow;
        const size_t img = (size_t)n * p.oh * p.ow * a.cout;
        const unsigned o0 = ((unsigned)(2 * y) * p.ow + 2 * x) * a.cout;
        for (int oc = 0; oc < a.cout; oc++) {
            const float bt = __ldg(a.bt + oc);
            float v[4];
#pragma unroll
            for (int q = 0; q < 4; q++)
                v[q] = tl_act_t(tl_dot<C>(u, Wt + (oc * 4 + q) * C) + bt, a.act_t);
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (inside || (2 * y + (q >> 1) < p.oh && 2 * x + (q & 1) < p.ow))
                    stx1(a.out, o16,
                         img + o0 + ((q >> 1) * p.ow + (q & 1)) * a.cout + oc, v[q]);
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
    /* dtypes compiled in for the network's: float32 (fp16 = 0, and the
     * stages before the last at fp16 = 1), the small sum float16 (the last
     * stage at fp16 = 1); any other at run time */
#define TL_DT(CIN, C, PW)                                                        \
    do {                                                                       \
        if (dt == 0)                                                           \
            k_tail<CIN, C, PW, 0><<<grid, TL_THREADS, 0, s>>>(k);            \
        else if (dt == CU_DT_IN2 && PW == 0)                                   \
            k_tail<CIN, C, PW, PW ? -1 : (int)CU_DT_IN2><<<grid, TL_THREADS, 0, s>>>(k); \
        else                                                                   \
            k_tail<CIN, C, PW, -1><<<grid, TL_THREADS, 0, s>>>(k);           \
    } while (0)
    switch (tl_shape(a)) {
    case 0: TL_DT(16, 16, 0); break;
    case 1: TL_DT(8, 8, 0); break;
    case 2: TL_DT(16, 16, 16); break;
    default: TL_DT(24, 24, 16); break;
    }
#undef TL_DT
    return cu_check_launch();
}

extern "C" int cu_tail(const struct cu_tail_args *a, int f16, cudaStream_t s)
{
    return cu_tail_dt(a, f16 ? CU_DT_ALL : 0, s);
}

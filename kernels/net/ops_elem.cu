/*
 * ops_elem.cu - CUDA element-wise, resampling and pooling ops of the
 * network (ops_cuda.h): activations, ADD / MUL with per-channel broadcast,
 * RESIZE_BILINEAR, AVERAGE_POOL_2D, MEAN, and the fused squeeze-excite chain
 * (global mean -> 1x1 convs on the pooled vector -> activations), float32 and
 * float16 activations.
 *
 * C twins (ops_elem_ref.c): ref_relu, ref_hard_swish, ref_logistic,
 * ref_add, ref_mul, ref_resize_bilinear, ref_avgpool, ref_mean_hw, ref_se.
 * Kernels first, then launchers; every launcher checks
 * cudaGetLastError() and returns a VR_E* code.
 *
 * Where the channel count allows, each thread moves 8 values with one
 * 16-byte access (8 halves) so a warp reads whole cache lines.
 */
#include "ops_resize.cuh"

#include <string.h>

#define CU_THREADS 256

static unsigned grid_for(size_t work)
{
    unsigned b = cu_blocks(work, CU_THREADS);
    return b > 132u * 64u ? 132u * 64u : b;
}

/* ---- unary activations with dtype conversion ---- */

template <typename TI, typename TO, int VW>
__global__ void k_unary(int act, const TI *in, TO *out, size_t count)
{
    size_t nv = count / VW;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nv;
         i += (size_t)gridDim.x * blockDim.x) {
        if (VW == 8) {
            float v[8];
            ld8(in + i * 8, v);
            act_vec(v, act);
            st8(out + i * 8, v);
        } else {
            st1(out + i, act_f(ld1(in + i), act));
        }
    }
}

/* ---- ADD / MUL with per-(n, c) broadcast of b ---- */

template <int VW, bool MUL>
__global__ void k_binary(int hwc, int c, const void *a, const void *b, int b_full,
                         int act, void *out, size_t count, unsigned dt)
{
    const int fa = dt & CU_DT_IN0, fb = dt & CU_DT_IN1, fo = dt & CU_DT_OUT;
    const unsigned nv = (unsigned)(count / VW);   /* < 2^31: launcher */
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < nv;
         i += gridDim.x * blockDim.x) {
        unsigned e = i * VW;
        unsigned be = b_full ? e : (e / (unsigned)hwc) * c + (e % (unsigned)c);
        float x[VW], y[VW];
        if (VW == 8) {
            ldx8(a, fa, e, x);
            ldx8(b, fb, be, y);
        } else {
            x[0] = ldx1(a, fa, e);
            y[0] = ldx1(b, fb, be);
        }
#pragma unroll
        for (int j = 0; j < VW; j++)
            x[j] = MUL ? x[j] * y[j] : x[j] + y[j];
        act_vec(x, act);
        if (VW == 8)
            stx8(out, fo, e, x);
        else
            stx1(out, fo, e, x[0]);
    }
}

/* ---- RESIZE_BILINEAR, TFLite's reference arithmetic ---- */

template <int VW>
__global__ void k_resize(int n, int ih, int iw, int c, const void *in, int oh, int ow,
                         float sy, float sx, int half_pixel, int act1, int act2, void *out,
                         unsigned dt)
{
    const int fi = dt & CU_DT_IN0, fo = dt & CU_DT_OUT;
    const unsigned ng = c / VW;
    const unsigned total = (unsigned)n * oh * ow * ng;   /* < 2^31: launcher */
    for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        int c0 = (int)(idx % ng) * VW;
        unsigned pix = idx / ng;
        int ox = (int)(pix % (unsigned)ow);
        unsigned t = pix / (unsigned)ow;
        int oy = (int)(t % (unsigned)oh);
        int b = (int)(t / (unsigned)oh);
        const rs_taps tp = rs_taps_of(oy, ox, sy, sx, half_pixel, ih, iw);
        const size_t img = (size_t)b * ih * iw * c;
        float r[VW];
        if (VW == 8) {
            rs_load8(in, fi, img, iw, c, c0, tp, r);
        } else {
            const size_t base = img + c0;
            r[0] = rs_blend(ldx1(in, fi, base + ((size_t)tp.y0 * iw + tp.x0) * c),
                            ldx1(in, fi, base + ((size_t)tp.y0 * iw + tp.x1) * c),
                            ldx1(in, fi, base + ((size_t)tp.y1 * iw + tp.x0) * c),
                            ldx1(in, fi, base + ((size_t)tp.y1 * iw + tp.x1) * c), tp);
        }
        act_vec(r, act1);
        act_vec(r, act2);
        if (VW == 8)
            stx8(out, fo, (size_t)pix * c + c0, r);
        else
            stx1(out, fo, (size_t)pix * c + c0, r[0]);
    }
}

/* ---- AVERAGE_POOL_2D (general window; in-bounds taps only) ---- */

__global__ void k_avgpool(struct conv_geom g, const void *in, void *out, unsigned dt)
{
    const int fi = dt & CU_DT_IN0, fo = dt & CU_DT_OUT;
    size_t total = (size_t)g.n * g.oh * g.ow * g.cout;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int ch = (int)(idx % g.cout);
        size_t pix = idx / g.cout;
        int ox = (int)(pix % g.ow);
        size_t t = pix / g.ow;
        int oy = (int)(t % g.oh);
        int n = (int)(t / g.oh);
        int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        int fy0 = max(0, -iy0), fy1 = min(g.kh, g.ih - iy0);
        int fx0 = max(0, -ix0), fx1 = min(g.kw, g.iw - ix0);
        float s = 0.0f;
        for (int fy = fy0; fy < fy1; fy++)
            for (int fx = fx0; fx < fx1; fx++)
                s += ldx1(in, fi, (((size_t)n * g.ih + iy0 + fy) * g.iw + ix0 + fx) * g.cin + ch);
        int cnt = (fy1 - fy0) * (fx1 - fx0);
        stx1(out, fo, idx, act_f(cnt > 0 ? s / (float)cnt : 0.0f, g.act));
    }
}

/* ---- squeeze-excite chain: one block per image ---- */

#define SE_THREADS 1024
struct se_k {
    int h, w, c, n_layers;
    const void *in, *in2;
    struct cu_se_layer l[CU_SE_MAX_LAYERS];
    void *out;
    unsigned dt;
    const float *part2;   /* in2's sums [n][parts2][c] instead of in2 */
    int parts2;
    int rs_h, rs_w, rs_half;   /* in is the small map of a deferred resize (RS) */
    float rs_sy, rs_sx;
};

/* The weight each of the `in` source rows (or columns) has in the sum of
 * the resize to `out` rows: the sum of its taps' weights over the output
 * rows, in output order (deterministic). Only outputs within two source
 * pixels' reach are visited. */
__device__ void se_rs_weights(int out, int in, float scale, int half, float *w)
{
    for (int i = threadIdx.x; i < in; i += SE_THREADS) {
        int o0 = 0, o1 = out - 1;
        if (scale > 0.0f) {
            o0 = max(o0, (int)floorf(((float)i - 1.5f) / scale) - 1);
            o1 = min(o1, (int)ceilf(((float)i + 1.5f) / scale) + 1);
        }
        float s = 0.0f;
        for (int o = o0; o <= o1; o++) {
            int lo, hi;
            float f;
            rs_coord(o, scale, half, in, &lo, &hi, &f);
            s += (lo == i ? 1.0f - f : 0.0f) + (hi == i ? f : 0.0f);
        }
        w[i] = s;
    }
}

/* VW channels of a map from element e. */
template <int VW>
__device__ __forceinline__ void se_load(const void *m, int f16, size_t e, float (&x)[VW])
{
    if (VW == 8)
        ldx8(m, f16, e, x);
    else
        x[0] = ldx1(m, f16, e);
}

template <int VW, bool RS>
__global__ void __launch_bounds__(SE_THREADS) k_se(struct se_k k)
{
    const int fi = k.dt & CU_DT_IN0, f2 = k.dt & CU_DT_IN1, fo = k.dt & CU_DT_OUT;
    __shared__ float part[8192];   /* R rows x c partial sums: R * c <= 8 * SE_THREADS */
    __shared__ float v[CU_SE_MAX_CH], t[CU_SE_MAX_CH];
    __shared__ float wy[RS ? CU_SE_MAX_RS : 1], wx[RS ? CU_SE_MAX_RS : 1];
    const int tid = threadIdx.x;
    const int ng = k.c / VW;
    const int R = ng >= SE_THREADS ? 1 : SE_THREADS / ng;   /* pixel rows in parallel */
    const size_t hw = (size_t)k.h * k.w;
    const int iw = RS ? k.rs_w : k.w;
    const size_t ihw = RS ? (size_t)k.rs_h * k.rs_w : hw;   /* pixels read */
    const size_t in = (size_t)blockIdx.x * ihw * k.c;
    if (RS) {
        se_rs_weights(k.h, k.rs_h, k.rs_sy, k.rs_half, wy);
        se_rs_weights(k.w, k.rs_w, k.rs_sx, k.rs_half, wx);
        __syncthreads();
    }

    for (int task = tid; task < ng * R; task += SE_THREADS) {
        int gi = task % ng, r = task / ng;
        float acc[VW];
#pragma unroll
        for (int j = 0; j < VW; j++)
            acc[j] = 0.0f;
#pragma unroll 4
        for (size_t p = r; p < ihw; p += R) {
            float x[VW];
            se_load<VW>(k.in, fi, in + p * k.c + gi * VW, x);
            if (RS) {
                const unsigned q = (unsigned)p;   /* < 2^31: the map's size */
                const float wgt = wy[q / (unsigned)iw] * wx[q % (unsigned)iw];
#pragma unroll
                for (int j = 0; j < VW; j++)
                    acc[j] = fmaf(x[j], wgt, acc[j]);
            } else {
#pragma unroll
                for (int j = 0; j < VW; j++)
                    acc[j] += x[j];
            }
            if (!RS && k.in2) {
                se_load<VW>(k.in2, f2, in + p * k.c + gi * VW, x);
#pragma unroll
                for (int j = 0; j < VW; j++)
                    acc[j] += x[j];
            }
        }
        if (RS && k.in2) {   /* in2 at the pooled size: its own pass */
            const size_t in2 = (size_t)blockIdx.x * hw * k.c;
#pragma unroll 4
            for (size_t p = r; p < hw; p += R) {
                float x[VW];
                se_load<VW>(k.in2, f2, in2 + p * k.c + gi * VW, x);
#pragma unroll
                for (int j = 0; j < VW; j++)
                    acc[j] += x[j];
            }
        }
#pragma unroll
        for (int j = 0; j < VW; j++)
            part[r * k.c + gi * VW + j] = acc[j];
    }
    __syncthreads();
    for (int ch = tid; ch < k.c; ch += SE_THREADS) {
        float s = 0.0f;
        for (int r = 0; r < R; r++)
            s += part[r * k.c + ch];
        for (int q = 0; q < k.parts2; q++)
            s += k.part2[((size_t)blockIdx.x * k.parts2 + q) * k.c + ch];
        v[ch] = s / (float)hw;
    }
    __syncthreads();
    int c = k.c;
    for (int l = 0; l < k.n_layers; l++) {
        const struct cu_se_layer L = k.l[l];
        /* one warp per output: lanes stride the weight row (coalesced),
         * then a shuffle reduction */
        const int warp = tid >> 5, lane = tid & 31;
        for (int co = warp; co < L.cout; co += SE_THREADS / 32) {
            const float *wr = L.w + (size_t)co * L.cin;
            float acc = 0.0f;
            for (int ci = lane; ci < L.cin; ci += 32)
                acc = fmaf(v[ci], wr[ci], acc);
#pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane == 0)
                t[co] = act_f(act_f(acc + (L.bias ? L.bias[co] : 0.0f), L.act1), L.act2);
        }
        __syncthreads();
        for (int co = tid; co < L.cout; co += SE_THREADS)
            v[co] = t[co];
        __syncthreads();
        c = L.cout;
    }
    for (int ch = tid; ch < c; ch += SE_THREADS)
        stx1(k.out, fo, (size_t)blockIdx.x * c + ch, v[ch]);
}

/* ---- launchers ---- */

extern "C" int cu_unary_x(int act, const void *in, int in_f16, void *out, int out_f16,
                          size_t count, cudaStream_t s)
{
    if (!in || !out)
        return VR_EINVAL;
    if (count == 0)
        return 0;
    int v8 = count % 8 == 0 && cu_aligned16(in) && cu_aligned16(out);
    size_t work = v8 ? count / 8 : count;
    unsigned grid = grid_for(work);
#define UN(TI, TO)                                                                      \
    do {                                                                                \
        if (v8)                                                                         \
            k_unary<TI, TO, 8><<<grid, CU_THREADS, 0, s>>>(act, (const TI *)in, (TO *)out, count); \
        else                                                                            \
            k_unary<TI, TO, 1><<<grid, CU_THREADS, 0, s>>>(act, (const TI *)in, (TO *)out, count); \
    } while (0)
    if (in_f16 && out_f16)
        UN(__half, __half);
    else if (in_f16)
        UN(__half, float);
    else if (out_f16)
        UN(float, __half);
    else
        UN(float, float);
#undef UN
    return cu_check_launch();
}

extern "C" int cu_relu(const float *in, float *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_RELU, in, 0, out, 0, count, s); }
extern "C" int cu_hard_swish(const float *in, float *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_HSWISH, in, 0, out, 0, count, s); }
extern "C" int cu_logistic(const float *in, float *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_LOGISTIC, in, 0, out, 0, count, s); }
extern "C" int cu_relu_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_RELU, in, 1, out, 1, count, s); }
extern "C" int cu_hard_swish_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_HSWISH, in, 1, out, 1, count, s); }
extern "C" int cu_logistic_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s)
{ return cu_unary_x(CU_ACT_LOGISTIC, in, 1, out, 1, count, s); }

extern "C" int cu_binary_dt(int mul, int n, int h, int w, int c, const void *a,
                            const void *b, int b_full, int act, void *out, unsigned dt,
                            cudaStream_t s)
{
    if (n <= 0 || h <= 0 || w <= 0 || c <= 0 || !a || !b || !out)
        return VR_EINVAL;
    size_t count = (size_t)n * h * w * c;
    if (count > 0x7fffffffu)
        return VR_EINVAL;
    int hwc = h * w * c;
    int v8 = c % 8 == 0 && cu_aligned16(a) && cu_aligned16(b) && cu_aligned16(out);
    unsigned g8 = grid_for(count / 8), g1 = grid_for(count);
    if (v8 && mul)
        k_binary<8, true><<<g8, CU_THREADS, 0, s>>>(hwc, c, a, b, b_full, act, out, count, dt);
    else if (v8)
        k_binary<8, false><<<g8, CU_THREADS, 0, s>>>(hwc, c, a, b, b_full, act, out, count, dt);
    else if (mul)
        k_binary<1, true><<<g1, CU_THREADS, 0, s>>>(hwc, c, a, b, b_full, act, out, count, dt);
    else
        k_binary<1, false><<<g1, CU_THREADS, 0, s>>>(hwc, c, a, b, b_full, act, out, count, dt);
    return cu_check_launch();
}

extern "C" int cu_add(int n, int h, int w, int c, const float *a, const float *b,
                      int b_full, int act, float *out, cudaStream_t s)
{ return cu_binary_dt(0, n, h, w, c, a, b, b_full, act, out, 0, s); }
extern "C" int cu_mul(int n, int h, int w, int c, const float *a, const float *b,
                      int b_full, int act, float *out, cudaStream_t s)
{ return cu_binary_dt(1, n, h, w, c, a, b, b_full, act, out, 0, s); }
extern "C" int cu_add_h(int n, int h, int w, int c, const vr_half *a, const vr_half *b,
                        int b_full, int act, vr_half *out, cudaStream_t s)
{ return cu_binary_dt(0, n, h, w, c, a, b, b_full, act, out, CU_DT_ALL, s); }
extern "C" int cu_mul_h(int n, int h, int w, int c, const vr_half *a, const vr_half *b,
                        int b_full, int act, vr_half *out, cudaStream_t s)
{ return cu_binary_dt(1, n, h, w, c, a, b, b_full, act, out, CU_DT_ALL, s); }

extern "C" int cu_resize_bilinear_dt(int n, int ih, int iw, int c, const void *in, int oh,
                                     int ow, int align_corners, int half_pixel, int act1,
                                     int act2, void *out, unsigned dt, cudaStream_t s)
{
    if (n <= 0 || ih <= 0 || iw <= 0 || c <= 0 || oh <= 0 || ow <= 0 || !in || !out ||
        (size_t)n * oh * ow * c > 0x7fffffffu || (size_t)n * ih * iw * c > 0x7fffffffu)
        return VR_EINVAL;
    const float sy = rs_scale(ih, oh, align_corners), sx = rs_scale(iw, ow, align_corners);
    size_t pix = (size_t)n * oh * ow;
    if (c % 8 == 0 && cu_aligned16(in) && cu_aligned16(out))
        k_resize<8><<<grid_for(pix * (c / 8)), CU_THREADS, 0, s>>>(
            n, ih, iw, c, in, oh, ow, sy, sx, half_pixel, act1, act2, out, dt);
    else
        k_resize<1><<<grid_for(pix * c), CU_THREADS, 0, s>>>(
            n, ih, iw, c, in, oh, ow, sy, sx, half_pixel, act1, act2, out, dt);
    return cu_check_launch();
}

extern "C" int cu_resize_bilinear(int n, int ih, int iw, int c, const float *in,
                                  int oh, int ow, int align_corners,
                                  int half_pixel_centers, float *out, cudaStream_t s)
{ return cu_resize_bilinear_dt(n, ih, iw, c, in, oh, ow, align_corners, half_pixel_centers, CU_ACT_NONE, CU_ACT_NONE, out, 0, s); }
extern "C" int cu_resize_bilinear_h(int n, int ih, int iw, int c, const vr_half *in,
                                    int oh, int ow, int align_corners,
                                    int half_pixel_centers, vr_half *out, cudaStream_t s)
{ return cu_resize_bilinear_dt(n, ih, iw, c, in, oh, ow, align_corners, half_pixel_centers, CU_ACT_NONE, CU_ACT_NONE, out, CU_DT_ALL, s); }

extern "C" int cu_avgpool_dt(const struct conv_geom *g, const void *in, void *out,
                             unsigned dt, cudaStream_t s)
{
    if (!g || g->n <= 0 || g->oh <= 0 || g->ow <= 0 || g->cout <= 0 || g->cin != g->cout ||
        g->sh <= 0 || g->sw <= 0 || !in || !out)
        return VR_EINVAL;
    size_t total = (size_t)g->n * g->oh * g->ow * g->cout;
    k_avgpool<<<grid_for(total), CU_THREADS, 0, s>>>(*g, in, out, dt);
    return cu_check_launch();
}

extern "C" int cu_avgpool(const struct conv_geom *g, const float *in, float *out, cudaStream_t s)
{ return cu_avgpool_dt(g, in, out, 0, s); }
extern "C" int cu_avgpool_h(const struct conv_geom *g, const vr_half *in, vr_half *out, cudaStream_t s)
{ return cu_avgpool_dt(g, in, out, CU_DT_ALL, s); }

extern "C" int cu_se(const struct cu_se_args *p, int f16, cudaStream_t s)
{
    return cu_se_dt(p, f16 ? CU_DT_ALL : 0, s);
}

extern "C" int cu_se_dt(const struct cu_se_args *p, unsigned dt, cudaStream_t s)
{
    if (!p || p->n <= 0 || p->h <= 0 || p->w <= 0 || p->c <= 0 || p->c > CU_SE_MAX_CH ||
        p->n_layers < 0 || p->n_layers > CU_SE_MAX_LAYERS || !p->in || !p->out)
        return VR_EINVAL;
    struct se_k k;
    k.h = p->h; k.w = p->w; k.c = p->c; k.n_layers = p->n_layers;
    k.in = p->in; k.in2 = p->in2_part ? NULL : p->in2; k.out = p->out; k.dt = dt;
    k.part2 = p->in2_part;
    k.parts2 = p->in2_part ? p->in2_parts : 0;
    if (p->in2_part && p->in2_parts < 1)
        return VR_EINVAL;
    int c = p->c;
    for (int l = 0; l < p->n_layers; l++) {
        const struct cu_se_layer *L = &p->l[l];
        if (L->cin != c || L->cout <= 0 || L->cout > CU_SE_MAX_CH || !L->w)
            return VR_EINVAL;
        k.l[l] = *L;
        c = L->cout;
    }
    k.rs_h = k.rs_w = k.rs_half = 0;
    k.rs_sy = k.rs_sx = 0.0f;
    if (p->in_rs_h > 0) {
        if (p->in_rs_w <= 0 || p->in_rs_h > CU_SE_MAX_RS || p->in_rs_w > CU_SE_MAX_RS)
            return VR_EINVAL;
        k.rs_h = p->in_rs_h;
        k.rs_w = p->in_rs_w;
        k.rs_half = p->in_rs_half;
        k.rs_sy = rs_scale(p->in_rs_h, p->h, p->in_rs_align);
        k.rs_sx = rs_scale(p->in_rs_w, p->w, p->in_rs_align);
    }
    int v8 = p->c % 8 == 0 && cu_aligned16(p->in) && (!k.in2 || cu_aligned16(k.in2));
    /* part[] holds R rows of c partial sums: R * c <= 2048 */
    if (v8 && k.rs_h)
        k_se<8, true><<<p->n, SE_THREADS, 0, s>>>(k);
    else if (v8)
        k_se<8, false><<<p->n, SE_THREADS, 0, s>>>(k);
    else if (k.rs_h)
        k_se<1, true><<<p->n, SE_THREADS, 0, s>>>(k);
    else
        k_se<1, false><<<p->n, SE_THREADS, 0, s>>>(k);
    return cu_check_launch();
}

extern "C" int cu_mean_hw(int n, int h, int w, int c, const float *in, float *out, cudaStream_t s)
{
    struct cu_se_args a;
    memset(&a, 0, sizeof a);
    a.n = n; a.h = h; a.w = w; a.c = c; a.in = in; a.out = out;
    return cu_se(&a, 0, s);
}
extern "C" int cu_mean_hw_h(int n, int h, int w, int c, const vr_half *in, vr_half *out, cudaStream_t s)
{
    struct cu_se_args a;
    memset(&a, 0, sizeof a);
    a.n = n; a.h = h; a.w = w; a.c = c; a.in = in; a.out = out;
    return cu_se(&a, 1, s);
}

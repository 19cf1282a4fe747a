/*
 * ops_conv.cu - CUDA convolutions of the network: any CONV_2D, the fused
 * 1x1 (pointwise) conv, the depthwise conv and mediapipe's transpose conv,
 * float32 and float16 activations (ops_cuda.h).
 *
 * C references: ref_conv2d, ref_dwconv2d, ref_tconv_bias (ops_ref.c) and
 * ref_pointwise, ref_dw_fused, ref_tconv_x (ops_fused_ref.c). Layout per
 * file: kernels, then launchers; each launcher checks the geometry it takes,
 * launches, and returns VR_ECUDA if cudaGetLastError() reports a failure.
 *
 * The maps are small (16x16..128x128) with 16..128 channels, so every kernel
 * here is bound by memory traffic and latency, not arithmetic: the pointwise
 * kernel stages a tile of pixels and the whole weight matrix in shared
 * memory once per block, applies the squeeze-excite scale / residual add on
 * the way in and the activations / scale / residual on the way out, so each
 * activation makes one trip through device memory.
 */
#include "ops_cuda_dev.cuh"

/* ---- generic CONV_2D: one thread per output pixel, 8 outputs at a time ---- */

template <typename TI, typename TO, bool SMEM>
__global__ void k_conv2d(struct conv_geom g, const TI *__restrict__ in,
                         const float *__restrict__ w, const float *__restrict__ b,
                         int act1, int act2, TO *__restrict__ out)
{
    extern __shared__ float sw[];
    const float *W = w;
    const int ks = g.kh * g.kw * g.cin;   /* weights per output channel */
    if (SMEM) {
        /* every thread of a warp reads the same weight: a broadcast */
        for (int i = threadIdx.x; i < g.cout * ks; i += blockDim.x)
            sw[i] = w[i];
        __syncthreads();
        W = sw;
    }
    size_t npix = (size_t)g.n * g.oh * g.ow;
    for (size_t pix = (size_t)blockIdx.x * blockDim.x + threadIdx.x; pix < npix;
         pix += (size_t)gridDim.x * blockDim.x) {
        int ox = (int)(pix % g.ow);
        size_t t = pix / g.ow;
        int oy = (int)(t % g.oh);
        int n = (int)(t / g.oh);
        int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        const TI *inb = in + (size_t)n * g.ih * g.iw * g.cin;
        TO *o = out + pix * g.cout;
        for (int co0 = 0; co0 < g.cout; co0 += 8) {
            int nc = min(8, g.cout - co0);
            float acc[8];
#pragma unroll
            for (int j = 0; j < 8; j++)
                acc[j] = (j < nc && b) ? b[co0 + j] : 0.0f;
            for (int ky = 0; ky < g.kh; ky++) {
                int iy = iy0 + ky * g.dh;
                if (iy < 0 || iy >= g.ih)
                    continue;
                for (int kx = 0; kx < g.kw; kx++) {
                    int ix = ix0 + kx * g.dw;
                    if (ix < 0 || ix >= g.iw)
                        continue;
                    const TI *ip = inb + ((size_t)iy * g.iw + ix) * g.cin;
                    const float *wp = W + (size_t)co0 * ks + (ky * g.kw + kx) * g.cin;
                    for (int ci = 0; ci < g.cin; ci++) {
                        float x = ld1(ip + ci);
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            if (j < nc)
                                acc[j] += x * wp[(size_t)j * ks + ci];
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (j < nc)
                    st1(o + co0 + j, act_f(act_f(acc[j], act1), act2));
        }
    }
}

/* ---- pointwise (1x1) conv with fused prologue / epilogue ---- */

struct pw_k {
    int npix, hw, cin, cout, P, S;   /* P pixels per block; S = P + 4 row stride */
    const void *a, *as, *b;
    const float *w, *bias;
    int act1, act2;
    const void *es, *res;
    int act3;
    void *out;
};

#define PW_PX 4   /* pixels per thread */

template <typename T>
__global__ void __launch_bounds__(512) k_pointwise(struct pw_k k)
{
    extern __shared__ float sm[];
    float *xs = sm;                    /* [cin][S]: staged inputs, channel-major */
    float *ws = sm + (size_t)k.cin * k.S;   /* [cin][cout]: transposed weights */
    const T *A = (const T *)k.a, *AS = (const T *)k.as, *B = (const T *)k.b;
    const int tid = threadIdx.x, nt = blockDim.x;
    const size_t gp0 = (size_t)blockIdx.x * k.P;

    for (int i = tid; i < k.cin * k.cout; i += nt) {
        int co = i / k.cin, ci = i - co * k.cin;
        ws[ci * k.cout + co] = k.w[i];
    }
    if ((k.cin & 7) == 0) {
        const int c8n = k.cin >> 3;
        for (int i = tid; i < k.P * c8n; i += nt) {
            int p = i / c8n, c8 = (i - p * c8n) << 3;
            size_t gp = gp0 + p;
            float v[8];
            if (gp < (size_t)k.npix) {
                ld8(A + gp * k.cin + c8, v);
                if (AS) {
                    float s[8];
                    ld8(AS + (gp / k.hw) * k.cin + c8, s);
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        v[j] *= s[j];
                }
                if (B) {
                    float s[8];
                    ld8(B + gp * k.cin + c8, s);
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        v[j] += s[j];
                }
            } else {
#pragma unroll
                for (int j = 0; j < 8; j++)
                    v[j] = 0.0f;
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
                xs[(c8 + j) * k.S + p] = v[j];
        }
    } else {
        for (int i = tid; i < k.P * k.cin; i += nt) {
            int p = i / k.cin, ci = i - p * k.cin;
            size_t gp = gp0 + p;
            float v = 0.0f;
            if (gp < (size_t)k.npix) {
                v = ld1(A + gp * k.cin + ci);
                if (AS)
                    v *= ld1(AS + (gp / k.hw) * k.cin + ci);
                if (B)
                    v += ld1(B + gp * k.cin + ci);
            }
            xs[ci * k.S + p] = v;
        }
    }
    __syncthreads();

    const int nch = k.cout >> 3;
    const int chunk = tid % nch, pg = tid / nch;
    const int co0 = chunk << 3;
    float acc[PW_PX][8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        float bj = k.bias ? k.bias[co0 + j] : 0.0f;
#pragma unroll
        for (int p = 0; p < PW_PX; p++)
            acc[p][j] = bj;
    }
    const float *xp = xs + pg * PW_PX;
    const float *wp = ws + co0;
#pragma unroll 4
    for (int ci = 0; ci < k.cin; ci++) {
        float4 x = *reinterpret_cast<const float4 *>(xp + ci * k.S);
        float4 w0 = *reinterpret_cast<const float4 *>(wp + ci * k.cout);
        float4 w1 = *reinterpret_cast<const float4 *>(wp + ci * k.cout + 4);
        float xv[4] = {x.x, x.y, x.z, x.w};
        float wv[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
        for (int p = 0; p < PW_PX; p++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                acc[p][j] = fmaf(xv[p], wv[j], acc[p][j]);
    }

    const T *ES = (const T *)k.es, *R = (const T *)k.res;
    T *O = (T *)k.out;
#pragma unroll
    for (int p = 0; p < PW_PX; p++) {
        size_t gp = gp0 + pg * PW_PX + p;
        if (gp >= (size_t)k.npix)
            break;
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = act_f(act_f(acc[p][j], k.act1), k.act2);
        if (ES) {
            float s[8];
            ld8(ES + (gp / k.hw) * k.cout + co0, s);
#pragma unroll
            for (int j = 0; j < 8; j++)
                v[j] *= s[j];
        }
        if (R) {
            float r[8];
            ld8(R + gp * k.cout + co0, r);
#pragma unroll
            for (int j = 0; j < 8; j++)
                v[j] = act_f(v[j] + r[j], k.act3);
        }
        st8(O + gp * k.cout + co0, v);
    }
}

/* ---- depthwise conv with fused epilogue ---- */

template <typename T, int VW>
__global__ void k_dwconv(struct conv_geom g, int mult, const T *__restrict__ in,
                         const float *__restrict__ w, const float *__restrict__ b,
                         int act2, const T *__restrict__ res, int act3,
                         T *__restrict__ out)
{
    const int ng = g.cout / VW;
    size_t total = (size_t)g.n * g.oh * g.ow * ng;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int c0 = (int)(idx % ng) * VW;
        size_t pix = idx / ng;
        int ox = (int)(pix % g.ow);
        size_t t = pix / g.ow;
        int oy = (int)(t % g.oh);
        int n = (int)(t / g.oh);
        int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        const T *inb = in + (size_t)n * g.ih * g.iw * g.cin;
        float acc[VW];
#pragma unroll
        for (int j = 0; j < VW; j++)
            acc[j] = b ? b[c0 + j] : 0.0f;
        for (int ky = 0; ky < g.kh; ky++) {
            int iy = iy0 + ky * g.dh;
            if (iy < 0 || iy >= g.ih)
                continue;
            for (int kx = 0; kx < g.kw; kx++) {
                int ix = ix0 + kx * g.dw;
                if (ix < 0 || ix >= g.iw)
                    continue;
                const T *ip = inb + ((size_t)iy * g.iw + ix) * g.cin;
                const float *wp = w + (ky * g.kw + kx) * g.cout + c0;
                if (VW == 8) {
                    float x[8], wv[8];
                    ld8(ip + c0, x);
                    ld8(wp, wv);
#pragma unroll
                    for (int j = 0; j < VW; j++)
                        acc[j] = fmaf(x[j % 8], wv[j % 8], acc[j]);
                } else {
#pragma unroll
                    for (int j = 0; j < VW; j++)
                        acc[j] += ld1(ip + (c0 + j) / mult) * wp[j];
                }
            }
        }
        T *o = out + pix * g.cout + c0;
        float v[VW];
#pragma unroll
        for (int j = 0; j < VW; j++)
            v[j] = act_f(act_f(acc[j], g.act), act2);
        if (res) {
            float r[VW];
            if (VW == 8) {
                ld8(res + pix * g.cout + c0, r);
            } else {
#pragma unroll
                for (int j = 0; j < VW; j++)
                    r[j] = ld1(res + pix * g.cout + c0 + j);
            }
#pragma unroll
            for (int j = 0; j < VW; j++)
                v[j] = act_f(v[j] + r[j], act3);
        }
        if (VW == 8) {
            st8(o, v);
        } else {
#pragma unroll
            for (int j = 0; j < VW; j++)
                st1(o + j, v[j]);
        }
    }
}

/* ---- Convolution2DTransposeBias + activation ---- */

template <typename TI, typename TO>
__global__ void k_tconv(struct conv_geom g, const TI *__restrict__ in,
                        const float *__restrict__ w, const float *__restrict__ b,
                        int act, int vec, TO *__restrict__ out)
{
    size_t total = (size_t)g.n * g.oh * g.ow * g.cout;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int co = (int)(idx % g.cout);
        size_t pix = idx / g.cout;
        int ox = (int)(pix % g.ow);
        size_t t = pix / g.ow;
        int oy = (int)(t % g.oh);
        int n = (int)(t / g.oh);
        float acc = b ? b[co] : 0.0f;
        for (int ky = 0; ky < g.kh; ky++) {
            int ty = oy + g.pad_top - ky;
            if (ty < 0 || ty % g.sh)
                continue;
            int iy = ty / g.sh;
            if (iy >= g.ih)
                continue;
            for (int kx = 0; kx < g.kw; kx++) {
                int tx = ox + g.pad_left - kx;
                if (tx < 0 || tx % g.sw)
                    continue;
                int ix = tx / g.sw;
                if (ix >= g.iw)
                    continue;
                const TI *ip = in + (((size_t)n * g.ih + iy) * g.iw + ix) * g.cin;
                const float *wp = w + (((size_t)co * g.kh + ky) * g.kw + kx) * g.cin;
                int ci = 0;
                if (vec) {
                    for (; ci < g.cin; ci += 8) {
                        float x[8], wv[8];
                        ld8(ip + ci, x);
                        ld8(wp + ci, wv);
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            acc = fmaf(x[j], wv[j], acc);
                    }
                }
                for (; ci < g.cin; ci++)
                    acc += ld1(ip + ci) * wp[ci];
            }
        }
        st1(out + idx, act_f(acc, act));
    }
}

/* ---- launchers ---- */

#define CU_THREADS 256
/* Grid-stride kernels: enough blocks to fill an H100 several times over. */
static unsigned grid_for(size_t work)
{
    unsigned b = cu_blocks(work, CU_THREADS);
    return b > 132u * 64u ? 132u * 64u : b;
}

static int geom_ok(const struct conv_geom *g)
{
    return g && g->n > 0 && g->ih > 0 && g->iw > 0 && g->cin > 0 && g->oh > 0 &&
           g->ow > 0 && g->cout > 0 && g->kh > 0 && g->kw > 0 && g->sh > 0 &&
           g->sw > 0 && g->dh > 0 && g->dw > 0;
}

template <typename TI, typename TO>
static int launch_conv2d(const struct conv_geom *g, const void *in, const float *w,
                         const float *b, int act1, int act2, void *out, cudaStream_t s)
{
    size_t wbytes = (size_t)g->cout * g->kh * g->kw * g->cin * sizeof(float);
    size_t npix = (size_t)g->n * g->oh * g->ow;
    if (wbytes <= 48 * 1024)
        k_conv2d<TI, TO, true><<<grid_for(npix), CU_THREADS, wbytes, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    else
        k_conv2d<TI, TO, false><<<grid_for(npix), CU_THREADS, 0, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    return cu_check_launch();
}

extern "C" int cu_conv2d_x(const struct conv_geom *g, const void *in, int in_f16,
                           const float *w, const float *b, int act1, int act2,
                           void *out, int out_f16, cudaStream_t s)
{
    if (!geom_ok(g) || !in || !w || !out)
        return VR_EINVAL;
    if (in_f16 && out_f16)
        return launch_conv2d<__half, __half>(g, in, w, b, act1, act2, out, s);
    if (in_f16)
        return launch_conv2d<__half, float>(g, in, w, b, act1, act2, out, s);
    if (out_f16)
        return launch_conv2d<float, __half>(g, in, w, b, act1, act2, out, s);
    return launch_conv2d<float, float>(g, in, w, b, act1, act2, out, s);
}

extern "C" int cu_conv2d(const struct conv_geom *g, const float *in, const float *w,
                         const float *b, float *out, cudaStream_t s)
{
    return cu_conv2d_x(g, in, 0, w, b, g ? g->act : 0, CU_ACT_NONE, out, 0, s);
}

extern "C" int cu_conv2d_h(const struct conv_geom *g, const vr_half *in, const float *w,
                           const float *b, vr_half *out, cudaStream_t s)
{
    return cu_conv2d_x(g, in, 1, w, b, g ? g->act : 0, CU_ACT_NONE, out, 1, s);
}

#define PW_MAX_SMEM (200 * 1024)
static int pw_prepared;

extern "C" int cu_ops_prepare(void)
{
    if (pw_prepared)
        return 0;
    cudaError_t a = cudaFuncSetAttribute(k_pointwise<__half>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, PW_MAX_SMEM);
    cudaError_t b = cudaFuncSetAttribute(k_pointwise<float>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, PW_MAX_SMEM);
    if (a != cudaSuccess || b != cudaSuccess) {
        cudaGetLastError();
        return VR_ECUDA;
    }
    pw_prepared = 1;
    return 0;
}

extern "C" int cu_pointwise(const struct cu_pw_args *p, int f16, cudaStream_t s)
{
    if (!p || p->n <= 0 || p->hw <= 0 || p->cin <= 0 || p->cin > 1024 ||
        p->cout <= 0 || p->cout > 1024 || (p->cout & 7) || !p->a || !p->w || !p->out)
        return VR_EINVAL;
    size_t npix = (size_t)p->n * p->hw;
    if (npix > 0x7fffffffu)
        return VR_EINVAL;
    /* 8-wide accesses need 16-byte aligned rows */
    if (!cu_aligned16(p->a) || !cu_aligned16(p->out) || !cu_aligned16(p->w) ||
        (p->b && !cu_aligned16(p->b)) || (p->res && !cu_aligned16(p->res)) ||
        (p->e_scale && !cu_aligned16(p->e_scale)) || (p->a_scale && !cu_aligned16(p->a_scale)))
        return VR_EINVAL;
    int P = 128;
    while (P > 16 && (P / PW_PX) * (p->cout / 8) > 256)
        P /= 2;
    size_t smem;
    for (;;) {
        smem = ((size_t)p->cin * (P + 4) + (size_t)p->cin * p->cout) * sizeof(float);
        if (smem <= 96 * 1024 || P <= 16)
            break;
        P /= 2;
    }
    int threads = (P / PW_PX) * (p->cout / 8);
    if (smem > PW_MAX_SMEM || threads > 512)
        return VR_EINVAL;
    if (smem > 48 * 1024 && cu_ops_prepare() < 0)
        return VR_ECUDA;
    struct pw_k k = {(int)npix, p->hw, p->cin, p->cout, P, P + 4, p->a, p->a_scale,
                     p->b, p->w, p->bias, p->act1, p->act2, p->e_scale, p->res,
                     p->act3, p->out};
    unsigned blocks = cu_blocks(npix, (unsigned)P);
    if (f16)
        k_pointwise<__half><<<blocks, threads, smem, s>>>(k);
    else
        k_pointwise<float><<<blocks, threads, smem, s>>>(k);
    return cu_check_launch();
}

template <typename T>
static int launch_dw(const struct cu_dw_args *p, cudaStream_t s)
{
    const struct conv_geom *g = &p->g;
    int mult = g->cout / g->cin;
    size_t pix = (size_t)g->n * g->oh * g->ow;
    if (mult == 1 && (g->cout & 7) == 0 && cu_aligned16(p->in) && cu_aligned16(p->out) &&
        cu_aligned16(p->w) && (!p->res || cu_aligned16(p->res)))
        k_dwconv<T, 8><<<grid_for(pix * (g->cout / 8)), CU_THREADS, 0, s>>>(
            *g, 1, (const T *)p->in, p->w, p->bias, p->act2, (const T *)p->res, p->act3,
            (T *)p->out);
    else
        k_dwconv<T, 1><<<grid_for(pix * g->cout), CU_THREADS, 0, s>>>(
            *g, mult, (const T *)p->in, p->w, p->bias, p->act2, (const T *)p->res, p->act3,
            (T *)p->out);
    return cu_check_launch();
}

extern "C" int cu_dw_fused(const struct cu_dw_args *p, int f16, cudaStream_t s)
{
    if (!p || !geom_ok(&p->g) || !p->in || !p->w || !p->out || p->g.cout % p->g.cin)
        return VR_EINVAL;
    return f16 ? launch_dw<__half>(p, s) : launch_dw<float>(p, s);
}

extern "C" int cu_dwconv2d(const struct conv_geom *g, const float *in, const float *w,
                           const float *b, float *out, cudaStream_t s)
{
    if (!g)
        return VR_EINVAL;
    struct cu_dw_args a = {*g, in, w, b, CU_ACT_NONE, NULL, CU_ACT_NONE, out};
    return cu_dw_fused(&a, 0, s);
}

extern "C" int cu_dwconv2d_h(const struct conv_geom *g, const vr_half *in, const float *w,
                             const float *b, vr_half *out, cudaStream_t s)
{
    if (!g)
        return VR_EINVAL;
    struct cu_dw_args a = {*g, in, w, b, CU_ACT_NONE, NULL, CU_ACT_NONE, out};
    return cu_dw_fused(&a, 1, s);
}

extern "C" int cu_tconv_x(const struct conv_geom *g, const void *in, int in_f16,
                          const float *w, const float *b, int act, void *out,
                          int out_f16, cudaStream_t s)
{
    if (!geom_ok(g) || !in || !w || !out)
        return VR_EINVAL;
    size_t total = (size_t)g->n * g->oh * g->ow * g->cout;
    unsigned grid = grid_for(total);
    /* 8-wide loads only where every row starts 16-byte aligned */
    int vec = (g->cin & 7) == 0 && cu_aligned16(in) && cu_aligned16(w);
    if (in_f16 && out_f16)
        k_tconv<__half, __half><<<grid, CU_THREADS, 0, s>>>(*g, (const __half *)in, w, b, act, vec, (__half *)out);
    else if (in_f16)
        k_tconv<__half, float><<<grid, CU_THREADS, 0, s>>>(*g, (const __half *)in, w, b, act, vec, (float *)out);
    else if (out_f16)
        k_tconv<float, __half><<<grid, CU_THREADS, 0, s>>>(*g, (const float *)in, w, b, act, vec, (__half *)out);
    else
        k_tconv<float, float><<<grid, CU_THREADS, 0, s>>>(*g, (const float *)in, w, b, act, vec, (float *)out);
    return cu_check_launch();
}

extern "C" int cu_tconv_bias(const struct conv_geom *g, const float *in, const float *w,
                             const float *b, float *out, cudaStream_t s)
{
    return cu_tconv_x(g, in, 0, w, b, CU_ACT_NONE, out, 0, s);
}

extern "C" int cu_tconv_bias_h(const struct conv_geom *g, const vr_half *in, const float *w,
                               const float *b, vr_half *out, cudaStream_t s)
{
    return cu_tconv_x(g, in, 1, w, b, CU_ACT_NONE, out, 1, s);
}

/*
 * ops_conv.cu - CUDA convolutions of the network: any CONV_2D, the
 * depthwise conv and mediapipe's transpose conv, float32 and float16
 * activations (ops_cuda.h). The fused 1x1 conv is ops_pointwise.cu.
 *
 * C twins (ops_conv_ref.c): ref_conv2d, ref_dwconv2d, ref_tconv_bias,
 * ref_dw_fused, ref_tconv_x. Layout per
 * file: kernels, then launchers; each launcher checks the geometry it takes,
 * launches, and returns VR_ECUDA if cudaGetLastError() reports a failure.
 *
 * The maps are small (16x16..128x128) with 16..128 channels, so every kernel
 * here is bound by memory traffic and latency, not arithmetic.
 */
#include "ops_resize.cuh"

/* ---- generic CONV_2D: one thread per output pixel, 8 outputs at a time ---- */

template <typename TI, typename TO, bool SMEM, int CG>
__global__ void k_conv2d(struct conv_geom g, const TI *__restrict__ in,
                         const float *__restrict__ w, const float *__restrict__ b,
                         int act1, int act2, TO *__restrict__ out)
{
    extern __shared__ float sw[];
    const int ks = g.kh * g.kw * g.cin;   /* weights per output channel */
    if (SMEM) {
        /* transposed to [tap][ci][cout]: a thread's 8 outputs are 2 float4
         * loads, the same for every thread of the warp (a broadcast) */
        for (int i = threadIdx.x; i < g.cout * ks; i += blockDim.x) {
            int co = i / ks, r = i - co * ks;
            sw[r * g.cout + co] = w[i];
        }
        __syncthreads();
    }
    /* sizes are checked < 2^31 by the launcher: 32-bit index arithmetic */
    const unsigned npix = (unsigned)g.n * g.oh * g.ow;
    for (unsigned pix = blockIdx.x * blockDim.x + threadIdx.x; pix < npix;
         pix += gridDim.x * blockDim.x) {
        int ox = (int)(pix % (unsigned)g.ow);
        unsigned t = pix / (unsigned)g.ow;
        int oy = (int)(t % (unsigned)g.oh);
        int n = (int)(t / (unsigned)g.oh);
        int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        const TI *inb = in + (size_t)n * g.ih * g.iw * g.cin;
        TO *o = out + (size_t)pix * g.cout;
        /* CG outputs a pass: 16 when they divide cout, so each input is
         * loaded once for all 16 output channels of the first layer */
        for (int co0 = 0; co0 < g.cout; co0 += CG) {
            int nc = min(CG, g.cout - co0);
            float acc[CG];
#pragma unroll
            for (int j = 0; j < CG; j++)
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
                    const int tap = (ky * g.kw + kx) * g.cin;
                    for (int ci = 0; ci < g.cin; ci++) {
                        float x = ld1(ip + ci);
                        if (SMEM && nc == CG && (g.cout & 3) == 0) {
                            const float *wp = sw + (tap + ci) * g.cout + co0;
#pragma unroll
                            for (int q = 0; q < CG / 4; q++) {
                                float4 w4 = *reinterpret_cast<const float4 *>(wp + 4 * q);
                                acc[4 * q] = fmaf(x, w4.x, acc[4 * q]);
                                acc[4 * q + 1] = fmaf(x, w4.y, acc[4 * q + 1]);
                                acc[4 * q + 2] = fmaf(x, w4.z, acc[4 * q + 2]);
                                acc[4 * q + 3] = fmaf(x, w4.w, acc[4 * q + 3]);
                            }
                        } else {
#pragma unroll
                            for (int j = 0; j < CG; j++)
                                if (j < nc)
                                    acc[j] += x * (SMEM ? sw[(tap + ci) * g.cout + co0 + j]
                                                        : w[(size_t)(co0 + j) * ks + tap + ci]);
                        }
                    }
                }
            }
            float v[CG];
#pragma unroll
            for (int j = 0; j < CG; j++)
                v[j] = acc[j];
            act_vec(v, act1);
            act_vec(v, act2);
            if (nc == CG && (g.cout & 7) == 0) {
#pragma unroll
                for (int q = 0; q < CG / 8; q++)
                    st8(o + co0 + 8 * q, v + 8 * q);   /* aligned: checked by the launcher */
            } else {
#pragma unroll
                for (int j = 0; j < CG; j++)
                    if (j < nc)
                        st1(o + co0 + j, v[j]);
            }
        }
    }
}

/* ---- CONV_2D with few output pixels and weights past shared memory:
 * one thread an output value (the Pose landmark model's heads, 2x2x192 ->
 * 195 and 117 a crop: k_conv2d's thread a pixel summed 150 000 products
 * alone, 6.3 and 3.8 ms of the model's 12.8 at 4 crops, H200). The sum in
 * k_conv2d's order, so the bits are the same. ---- */

template <typename TI, typename TO>
__global__ void k_conv2d_oc(struct conv_geom g, const TI *__restrict__ in,
                            const float *__restrict__ w, const float *__restrict__ b,
                            int act1, int act2, TO *__restrict__ out)
{
    const int ks = g.kh * g.kw * g.cin;
    const unsigned total = (unsigned)g.n * g.oh * g.ow * g.cout;   /* < 2^31: launcher */
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        const unsigned pix = i / (unsigned)g.cout;
        const int co = (int)(i - pix * (unsigned)g.cout);
        const int ox = (int)(pix % (unsigned)g.ow);
        const unsigned t = pix / (unsigned)g.ow;
        const int oy = (int)(t % (unsigned)g.oh), n = (int)(t / (unsigned)g.oh);
        const int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        const TI *inb = in + (size_t)n * g.ih * g.iw * g.cin;
        const float *wp = w + (size_t)co * ks;
        float acc = b ? b[co] : 0.0f;
        for (int ky = 0; ky < g.kh; ky++) {
            const int iy = iy0 + ky * g.dh;
            if (iy < 0 || iy >= g.ih)
                continue;
            for (int kx = 0; kx < g.kw; kx++) {
                const int ix = ix0 + kx * g.dw;
                if (ix < 0 || ix >= g.iw)
                    continue;
                const TI *ip = inb + ((size_t)iy * g.iw + ix) * g.cin;
                const float *wt = wp + (ky * g.kw + kx) * g.cin;
                for (int ci = 0; ci < g.cin; ci++)
                    acc = fmaf(ld1(ip + ci), __ldg(wt + ci), acc);
            }
        }
        st1(out + (size_t)pix * g.cout + co, act_small(act_small(acc, act1), act2));
    }
}

/* ---- depthwise conv with fused epilogue ---- */

template <int VW>
__global__ void k_dwconv(struct conv_geom g, int mult, const void *__restrict__ in,
                         const float *__restrict__ w, const float *__restrict__ b,
                         int act2, const void *__restrict__ res, int act3,
                         void *__restrict__ out, unsigned dt)
{
    const int fi = dt & CU_DT_IN0, fr = dt & CU_DT_RES, fo = dt & CU_DT_OUT;
    const unsigned ng = g.cout / VW;
    const unsigned total = (unsigned)g.n * g.oh * g.ow * ng;   /* < 2^31: launcher */
    for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        int c0 = (int)(idx % ng) * VW;
        unsigned pix = idx / ng;
        int ox = (int)(pix % (unsigned)g.ow);
        unsigned t = pix / (unsigned)g.ow;
        int oy = (int)(t % (unsigned)g.oh);
        int n = (int)(t / (unsigned)g.oh);
        int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        const size_t inb = (size_t)n * g.ih * g.iw * g.cin;
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
                const size_t ip = inb + ((size_t)iy * g.iw + ix) * g.cin;
                const float *wp = w + (ky * g.kw + kx) * g.cout + c0;
                if (VW == 8) {
                    float x[8], wv[8];
                    ldx8(in, fi, ip + c0, x);
                    ld8(wp, wv);
#pragma unroll
                    for (int j = 0; j < VW; j++)
                        acc[j] = fmaf(x[j % 8], wv[j % 8], acc[j]);
                } else {
#pragma unroll
                    for (int j = 0; j < VW; j++)
                        acc[j] += ldx1(in, fi, ip + (c0 + j) / mult) * wp[j];
                }
            }
        }
        const size_t o = (size_t)pix * g.cout + c0;
        float v[VW];
#pragma unroll
        for (int j = 0; j < VW; j++)
            v[j] = acc[j];
        act_vec(v, g.act);
        act_vec(v, act2);
        if (res) {
            float r[VW];
            if (VW == 8) {
                ldx8(res, fr, o, r);
            } else {
#pragma unroll
                for (int j = 0; j < VW; j++)
                    r[j] = ldx1(res, fr, o + j);
            }
#pragma unroll
            for (int j = 0; j < VW; j++)
                v[j] += r[j];
            act_vec(v, act3);
        }
        if (VW == 8) {
            stx8(out, fo, o, v);
        } else {
#pragma unroll
            for (int j = 0; j < VW; j++)
                stx1(out, fo, o + j, v[j]);
        }
    }
}

/* ---- Convolution2DTransposeBias + activation ---- */

template <typename TI, typename TO>
__global__ void k_tconv(struct conv_geom g, const TI *__restrict__ in,
                        const float *__restrict__ w, const float *__restrict__ b,
                        int act, int vec, TO *__restrict__ out)
{
    const unsigned total = (unsigned)g.n * g.oh * g.ow * g.cout;   /* < 2^31: launcher */
    for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        int co = (int)(idx % (unsigned)g.cout);
        unsigned pix = idx / (unsigned)g.cout;
        int ox = (int)(pix % (unsigned)g.ow);
        unsigned t = pix / (unsigned)g.ow;
        int oy = (int)(t % (unsigned)g.oh);
        int n = (int)(t / (unsigned)g.oh);
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

/* Non-overlapping case (kernel == stride, no crop; the model's 2x2 stride
 * 2): one thread per input pixel and output channel writes its kh x kw
 * outputs, so each input is read once instead of kh*kw times. */
template <typename TI, typename TO>
__global__ void k_tconv_nov(struct conv_geom g, const TI *__restrict__ in,
                            const float *__restrict__ w, const float *__restrict__ b,
                            int act, int vec, TO *__restrict__ out)
{
    const unsigned total = (unsigned)g.n * g.ih * g.iw * g.cout;   /* < 2^31: launcher */
    for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += gridDim.x * blockDim.x) {
        int co = (int)(idx % (unsigned)g.cout);
        unsigned pix = idx / (unsigned)g.cout;
        int ix = (int)(pix % (unsigned)g.iw);
        unsigned t = pix / (unsigned)g.iw;
        int iy = (int)(t % (unsigned)g.ih);
        int n = (int)(t / (unsigned)g.ih);
        const TI *ip = in + (size_t)pix * g.cin;
        float bias = b ? b[co] : 0.0f;
        for (int ky = 0; ky < g.kh; ky++)
            for (int kx = 0; kx < g.kw; kx++) {
                const float *wp = w + (((size_t)co * g.kh + ky) * g.kw + kx) * g.cin;
                float acc = bias;
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
                int oy = iy * g.sh + ky, ox = ix * g.sw + kx;
                if (oy < g.oh && ox < g.ow)
                    st1(out + (((size_t)n * g.oh + oy) * g.ow + ox) * g.cout + co,
                        act_f(acc, act));
            }
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
    /* every kernel indexes with 32-bit arithmetic: outputs and inputs < 2^31 */
    return g && (size_t)g->n * g->oh * g->ow * g->cout < 0x7fffffffu &&
           (size_t)g->n * g->ih * g->iw * g->cin < 0x7fffffffu && g->n > 0 && g->ih > 0 && g->iw > 0 && g->cin > 0 && g->oh > 0 &&
           g->ow > 0 && g->cout > 0 && g->kh > 0 && g->kw > 0 && g->sh > 0 &&
           g->sw > 0 && g->dh > 0 && g->dw > 0;
}

template <typename TI, typename TO>
static int launch_conv2d(const struct conv_geom *g, const void *in, const float *w,
                         const float *b, int act1, int act2, void *out, cudaStream_t s)
{
    size_t wbytes = (size_t)g->cout * g->kh * g->kw * g->cin * sizeof(float);
    size_t npix = (size_t)g->n * g->oh * g->ow;
    if (!cu_aligned16(out) && g->cout % 8 == 0)
        return VR_EINVAL;   /* 16-byte stores need an aligned output */
    unsigned grid = grid_for(npix);
    if (wbytes <= 48 * 1024 && g->cout % 16 == 0)
        k_conv2d<TI, TO, true, 16><<<grid, CU_THREADS, wbytes, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    else if (wbytes <= 48 * 1024)
        k_conv2d<TI, TO, true, 8><<<grid, CU_THREADS, wbytes, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    else if (npix < (size_t)CU_THREADS * 132)   /* fewer pixels than fill an H100 */
        k_conv2d_oc<TI, TO><<<grid_for(npix * g->cout), CU_THREADS, 0, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    else
        k_conv2d<TI, TO, false, 8><<<grid, CU_THREADS, 0, s>>>(
            *g, (const TI *)in, w, b, act1, act2, (TO *)out);
    return cu_check_launch();
}

extern "C" int cu_conv2d_x(const struct conv_geom *g, const void *in, int in_f16,
                           const float *w, const float *b, int act1, int act2,
                           void *out, int out_f16, cudaStream_t s)
{
    if (!geom_ok(g) || !in || !w || !out)
        return VR_EINVAL;
    if (cu_stem_ok(g, out))   /* the network's first layer: ops_stem.cu */
        return cu_stem(g, in, in_f16, w, b, act1, act2, out, out_f16, NULL, s);
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

static int launch_dw(const struct cu_dw_args *p, unsigned dt, cudaStream_t s)
{
    const struct conv_geom *g = &p->g;
    int mult = g->cout / g->cin;
    size_t pix = (size_t)g->n * g->oh * g->ow;
    if (mult == 1 && (g->cout & 7) == 0 && cu_aligned16(p->in) && cu_aligned16(p->out) &&
        cu_aligned16(p->w) && (!p->res || cu_aligned16(p->res)))
        k_dwconv<8><<<grid_for(pix * (g->cout / 8)), CU_THREADS, 0, s>>>(
            *g, 1, p->in, p->w, p->bias, p->act2, p->res, p->act3, p->out, dt);
    else
        k_dwconv<1><<<grid_for(pix * g->cout), CU_THREADS, 0, s>>>(
            *g, mult, p->in, p->w, p->bias, p->act2, p->res, p->act3, p->out, dt);
    return cu_check_launch();
}

extern "C" int cu_dw_fused_dt(const struct cu_dw_args *p, unsigned dt, cudaStream_t s)
{
    if (!p || !geom_ok(&p->g) || !p->in || !p->w || !p->out || p->g.cout % p->g.cin)
        return VR_EINVAL;
    return launch_dw(p, dt, s);
}

extern "C" int cu_dw_fused(const struct cu_dw_args *p, int f16, cudaStream_t s)
{
    return cu_dw_fused_dt(p, f16 ? CU_DT_ALL : 0, s);
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
    if (g->kh == g->sh && g->kw == g->sw && g->pad_top == 0 && g->pad_left == 0 &&
        (size_t)g->n * g->ih * g->iw * g->cout < 0x7fffffffu) {
        unsigned gn = grid_for((size_t)g->n * g->ih * g->iw * g->cout);
        if (in_f16 && out_f16)
            k_tconv_nov<__half, __half><<<gn, CU_THREADS, 0, s>>>(*g, (const __half *)in, w, b, act, vec, (__half *)out);
        else if (in_f16)
            k_tconv_nov<__half, float><<<gn, CU_THREADS, 0, s>>>(*g, (const __half *)in, w, b, act, vec, (float *)out);
        else if (out_f16)
            k_tconv_nov<float, __half><<<gn, CU_THREADS, 0, s>>>(*g, (const float *)in, w, b, act, vec, (__half *)out);
        else
            k_tconv_nov<float, float><<<gn, CU_THREADS, 0, s>>>(*g, (const float *)in, w, b, act, vec, (float *)out);
        return cu_check_launch();
    }
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

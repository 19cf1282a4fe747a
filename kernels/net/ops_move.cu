/*
 * ops_move.cu - CUDA kernels of the ops the pose tier's models add (PAD,
 * DEPTH_TO_SPACE, MAX_POOL_2D, CONCATENATION; ops_cuda.h), float32, one
 * thread an output value. Their C twins are ops_move_ref.c, with the same
 * arguments less the stream; tests/gpu/g-net-ops-move.c compares them.
 * The GPU network runs them (net_plan_move.c plans their steps,
 * net_exec.cu launches these).
 */
#include "ops_cuda.h"
#include "model.h"
#include "ops_cuda_dev.cuh"

#include <float.h>

#define MV_THREADS 256

static unsigned mv_grid(size_t work)
{
    unsigned b = cu_blocks(work, MV_THREADS);
    return b > 132u * 64u ? 132u * 64u : b;
}

#define MV_LOOP(i, total) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
         i += (size_t)gridDim.x * blockDim.x)

__global__ void k_pad(int h, int w, int c, const float *in, int ph0, int pw0, int pc0,
                      int oh, int ow, int oc, float *out, size_t total)
{
    MV_LOOP(i, total) {
        const int k = (int)(i % oc);
        size_t r = i / oc;
        const int x = (int)(r % ow) - pw0;
        r /= ow;
        const int y = (int)(r % oh) - ph0;
        const size_t b = r / oh;
        const int ck = k - pc0;
        out[i] = (y >= 0 && y < h && x >= 0 && x < w && ck >= 0 && ck < c)
                     ? in[((b * h + y) * w + x) * c + ck]
                     : 0.0f;
    }
}

__global__ void k_depth_to_space(int h, int w, int c, int bs, const float *in, float *out,
                                 size_t total)
{
    const int oc = c / (bs * bs), ow = w * bs, oh = h * bs;
    MV_LOOP(i, total) {
        const int k = (int)(i % oc);
        size_t r = i / oc;
        const int ox = (int)(r % ow);
        r /= ow;
        const int oy = (int)(r % oh);
        const size_t b = r / oh;
        const int y = oy / bs, dy = oy % bs, x = ox / bs, dx = ox % bs;
        out[i] = in[((b * h + y) * w + x) * c + (dy * bs + dx) * oc + k];
    }
}

/* op_act's clamp (ops_ref.h): NONE keeps values within +-FLT_MAX. */
__device__ __forceinline__ float mv_act(float x, int act)
{
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (act == MACT_RELU) lo = 0.0f;
    else if (act == MACT_RELU_N1_TO_1) { lo = -1.0f; hi = 1.0f; }
    else if (act == MACT_RELU6) { lo = 0.0f; hi = 6.0f; }
    else if (act == MACT_TANH) return tanhf(x);
    return x < lo ? lo : (x > hi ? hi : x);
}

__global__ void k_maxpool(struct conv_geom g, const float *in, float *out, size_t total)
{
    const int c = g.cin;
    MV_LOOP(i, total) {
        const int k = (int)(i % c);
        size_t r = i / c;
        const int ox = (int)(r % g.ow);
        r /= g.ow;
        const int oy = (int)(r % g.oh);
        const size_t b = r / g.oh;
        const int iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
        float m = -FLT_MAX;
        for (int fy = 0; fy < g.kh; fy++)
            for (int fx = 0; fx < g.kw; fx++) {
                const int iy = iy0 + fy, ix = ix0 + fx;
                if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw)
                    continue;
                const float v = in[((b * g.ih + iy) * g.iw + ix) * c + k];
                if (m < v)
                    m = v;
            }
        out[i] = mv_act(m, g.act);
    }
}

__global__ void k_concat3(const float *a, int ia, const float *b, int ib, const float *c,
                          int ic, float *out, size_t total)
{
    const size_t row = (size_t)ia + ib + ic;
    MV_LOOP(i, total) {
        const size_t o = i / row;
        const int j = (int)(i % row);
        out[i] = j < ia ? a[o * ia + j]
               : j < ia + ib ? b[o * ib + (j - ia)]
               : c[o * ic + (j - ia - ib)];
    }
}

/* ---- launchers ---- */

extern "C" int cu_pad(int n, int h, int w, int c, const float *in, int ph0, int ph1, int pw0,
                      int pw1, int pc0, int pc1, float *out, cudaStream_t s)
{
    if (n < 1 || h < 1 || w < 1 || c < 1 || ph0 < 0 || ph1 < 0 || pw0 < 0 || pw1 < 0 ||
        pc0 < 0 || pc1 < 0 || !in || !out)
        return VR_EINVAL;
    const int oh = h + ph0 + ph1, ow = w + pw0 + pw1, oc = c + pc0 + pc1;
    const size_t total = (size_t)n * oh * ow * oc;
    k_pad<<<mv_grid(total), MV_THREADS, 0, s>>>(h, w, c, in, ph0, pw0, pc0, oh, ow, oc, out,
                                                total);
    return cu_check_launch();
}

extern "C" int cu_depth_to_space(int n, int h, int w, int c, int bs, const float *in,
                                 float *out, cudaStream_t s)
{
    if (n < 1 || h < 1 || w < 1 || bs < 1 || c < bs * bs || c % (bs * bs) || !in || !out)
        return VR_EINVAL;
    const size_t total = (size_t)n * h * w * c;
    k_depth_to_space<<<mv_grid(total), MV_THREADS, 0, s>>>(h, w, c, bs, in, out, total);
    return cu_check_launch();
}

extern "C" int cu_maxpool(const struct conv_geom *g, const float *in, float *out,
                          cudaStream_t s)
{
    if (!g || g->n <= 0 || g->oh <= 0 || g->ow <= 0 || g->cin <= 0 || g->cin != g->cout ||
        g->sh <= 0 || g->sw <= 0 || !in || !out)
        return VR_EINVAL;
    const size_t total = (size_t)g->n * g->oh * g->ow * g->cout;
    k_maxpool<<<mv_grid(total), MV_THREADS, 0, s>>>(*g, in, out, total);
    return cu_check_launch();
}

extern "C" int cu_concat3(int outer, const float *a, int ia, const float *b, int ib,
                          const float *c, int ic, float *out, cudaStream_t s)
{
    if (outer < 1 || ia < 1 || ib < 1 || ic < 0 || !a || !b || (ic && !c) || !out)
        return VR_EINVAL;
    const size_t total = (size_t)outer * ((size_t)ia + ib + ic);
    k_concat3<<<mv_grid(total), MV_THREADS, 0, s>>>(a, ia, b, ib, c, ic, out, total);
    return cu_check_launch();
}

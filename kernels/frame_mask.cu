/*
 * frame_mask.cu - the CUDA frame kernels that work on masks at work size:
 * tile blending (network outputs into each eye's work mask), the
 * low-resolution half of the fast guided filter (box means and the a, b
 * coefficients). The C twins
 * are in frame_ref.c and frame_ref.h gives the rules.
 *
 * Work images are small (512 x 512 per eye in the balanced profile), so
 * these kernels are about launches, not bytes: each covers every frame and
 * eye of a call in one grid (x: pixels, y: eye, z: frame). Sums run in the
 * C twin's order with explicit rounding steps (no FMA contraction), so the
 * results match the C twins to the bit or within an ulp.
 */
#include "frame_cuda.h"

#include <cuda_runtime.h>
#include <string.h>

/* ---- (2) blend ---- */

static __device__ __forceinline__ float ramp(float u, float feather, int lo, int hi)
{
    if (feather <= 0.0f || !(lo || hi))
        return 1.0f;
    float d = 1.0f;
    if (lo && u < d)
        d = u;
    if (hi && __fsub_rn(1.0f, u) < d)
        d = __fsub_rn(1.0f, u);
    float w = __fdiv_rn(d, feather);
    return w < 1e-3f ? 1e-3f : (w > 1.0f ? 1.0f : w);
}

static __device__ __forceinline__ float tile_sample(const float *t, int mw, int mh, float sx,
                                                    float sy)
{
    sx = sx < 0.0f ? 0.0f : (sx > (float)(mw - 1) ? (float)(mw - 1) : sx);
    sy = sy < 0.0f ? 0.0f : (sy > (float)(mh - 1) ? (float)(mh - 1) : sy);
    int x0 = (int)sx, y0 = (int)sy;
    int x1 = x0 + 1 < mw ? x0 + 1 : mw - 1;
    int y1 = y0 + 1 < mh ? y0 + 1 : mh - 1;
    float tx = __fsub_rn(sx, (float)x0), ty = __fsub_rn(sy, (float)y0);
    float a = __ldg(t + (size_t)y0 * mw + x0), b = __ldg(t + (size_t)y0 * mw + x1);
    float c = __ldg(t + (size_t)y1 * mw + x0), d = __ldg(t + (size_t)y1 * mw + x1);
    return fcu_lerp(fcu_lerp(a, b, tx), fcu_lerp(c, d, tx), ty);
}

__global__ void __launch_bounds__(256)
k_blend(const float *__restrict__ tiles, int mw, int mh, const frame_tile *__restrict__ td,
        const __grid_constant__ frame_cu_plan p, float *__restrict__ out)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= e.work_w * e.work_h)
        return;
    const int fr = blockIdx.z;
    const float px = (float)(pix % e.work_w) + 0.5f, py = (float)(pix / e.work_w) + 0.5f;
    float sw = 0.0f, sv = 0.0f, floor_v = 0.0f;
    for (int i = e.tile0; i < e.tile0 + e.ntiles; i++) {
        const frame_tile t = td[i];
        if (!(px >= t.x && px < __fadd_rn(t.x, t.w) && py >= t.y && py < __fadd_rn(t.y, t.h)))
            continue;
        float u = __fdiv_rn(__fsub_rn(px, t.x), t.w), v = __fdiv_rn(__fsub_rn(py, t.y), t.h);
        float w = __fmul_rn(__fmul_rn(t.weight,
                                      ramp(u, t.feather, t.edges & FRAME_EDGE_L, t.edges & FRAME_EDGE_R)),
                            ramp(v, t.feather, t.edges & FRAME_EDGE_T, t.edges & FRAME_EDGE_B));
        const float *src = tiles + ((size_t)fr * p.tiles_per_frame + i) * mw * mh;
        float val = tile_sample(src, mw, mh, __fsub_rn(__fmul_rn(u, (float)mw), 0.5f),
                                __fsub_rn(__fmul_rn(v, (float)mh), 0.5f));
        if (t.edges & FRAME_TILE_FLOOR) {
            floor_v = fmaxf(floor_v, __fsub_rn(__fmul_rn(2.0f, val), 1.0f));
            continue;
        }
        sw = __fadd_rn(sw, w);
        sv = __fadd_rn(sv, __fmul_rn(w, val));
    }
    out[(size_t)fr * p.work_per_frame + e.work_off + pix] =
        fmaxf(sw > 0.0f ? __fdiv_rn(sv, sw) : 0.0f, floor_v);
}

extern "C" int frame_blend_batch_cuda(const float *tiles, int n, int mw, int mh,
                                      const struct frame_tile *tile,
                                      const struct frame_cu_plan *p, float *out,
                                      cudaStream_t st, vr_err *err)
{
    if (n < 1 || n > 65535)
        return vr_err_set(err, VR_EINVAL, "blend: %d frames", n);
    dim3 grid((p->max_work + 255) / 256, p->n_eyes, n);
    k_blend<<<grid, 256, 0, st>>>(tiles, mw, mh, tile, *p, out);
    return fcu_check("blend", err);
}

/* ---- (3) guided coefficients ---- */

/* Where pixel `pix` of eye e of frame fr lives in a work-layout plane. */
static __device__ __forceinline__ size_t widx(const frame_cu_plan &p, const frame_cu_eye &e,
                                              int fr, int pix)
{
    return (size_t)fr * p.work_per_frame + e.work_off + pix;
}

/* Horizontal box sums (C's first pass: t = sum / count, window clipped).
 * NIN = 2 (I, p): outputs I, p, I*p, I*I; NIN = 1 pair (a0, b0): 2 outputs. */
template <int MODE>
__global__ void __launch_bounds__(256)
k_hbox(const float *__restrict__ x0, const float *__restrict__ x1, float *o0, float *o1,
       float *o2, float *o3, const __grid_constant__ frame_cu_plan p, int r)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int w = e.work_w;
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= w * e.work_h)
        return;
    const int fr = blockIdx.z, x = pix % w;
    const size_t row = widx(p, e, fr, pix - x);
    const int a = x - r < 0 ? 0 : x - r, b = x + r >= w ? w - 1 : x + r;
    const float cnt = (float)(b - a + 1);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int k = a; k <= b; k++) {
        float u = __ldg(x0 + row + k), v = __ldg(x1 + row + k);
        s0 = __fadd_rn(s0, u);
        s1 = __fadd_rn(s1, v);
        if (MODE == 4) {
            s2 = __fadd_rn(s2, __fmul_rn(u, v));
            s3 = __fadd_rn(s3, __fmul_rn(u, u));
        }
    }
    const size_t i = row + x;
    o0[i] = __fdiv_rn(s0, cnt);
    o1[i] = __fdiv_rn(s1, cnt);
    if (MODE == 4) {
        o2[i] = __fdiv_rn(s2, cnt);
        o3[i] = __fdiv_rn(s3, cnt);
    }
}

/* Vertical box means (C's second pass: sum in row order, times 1/count).
 * MODE 4: the four means give a0 = cov/(var+eps), b0 = mean_p - a0*mean_I
 * into o0, o1. MODE 2: the means of a0, b0 are the outputs a, b. */
template <int MODE>
__global__ void __launch_bounds__(256)
k_vbox(const float *__restrict__ t0, const float *__restrict__ t1,
       const float *__restrict__ t2, const float *__restrict__ t3, float *o0, float *o1,
       const __grid_constant__ frame_cu_plan p, int r, float eps)
{
    const frame_cu_eye &e = p.e[blockIdx.y];
    const int w = e.work_w, h = e.work_h;
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= w * h)
        return;
    const int fr = blockIdx.z, x = pix % w, y = pix / w;
    const size_t base = widx(p, e, fr, 0);
    const int a = y - r < 0 ? 0 : y - r, b = y + r >= h ? h - 1 : y + r;
    const float inv = __fdiv_rn(1.0f, (float)(b - a + 1));
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int k = a; k <= b; k++) {
        const size_t i = base + (size_t)k * w + x;
        s0 = __fadd_rn(s0, __ldg(t0 + i));
        s1 = __fadd_rn(s1, __ldg(t1 + i));
        if (MODE == 4) {
            s2 = __fadd_rn(s2, __ldg(t2 + i));
            s3 = __fadd_rn(s3, __ldg(t3 + i));
        }
    }
    const size_t i = base + pix;
    if (MODE == 4) {
        float mI = __fmul_rn(s0, inv), mp = __fmul_rn(s1, inv);
        float mIp = __fmul_rn(s2, inv), mII = __fmul_rn(s3, inv);
        float cov = __fsub_rn(mIp, __fmul_rn(mI, mp));
        float var = __fsub_rn(mII, __fmul_rn(mI, mI));
        float a0 = __fdiv_rn(cov, __fadd_rn(var, eps));
        o0[i] = a0;
        o1[i] = __fsub_rn(mp, __fmul_rn(a0, mI));
    } else {
        o0[i] = __fmul_rn(s0, inv);
        o1[i] = __fmul_rn(s1, inv);
    }
}

extern "C" int frame_guided_coeffs_batch_cuda(const float *I, const float *p, int n,
                                              const struct frame_cu_plan *pl, int r,
                                              float eps, float *a, float *b, float *scratch,
                                              cudaStream_t st, vr_err *err)
{
    if (n < 1 || n > 65535 || r < 0)
        return vr_err_set(err, VR_EINVAL, "guided: %d frames, radius %d", n, r);
    const size_t np = (size_t)n * pl->work_per_frame;
    float *t0 = scratch, *t1 = t0 + np, *t2 = t1 + np, *t3 = t2 + np;
    float *a0 = t3 + np, *b0 = a0 + np;
    dim3 grid((pl->max_work + 255) / 256, pl->n_eyes, n);
    k_hbox<4><<<grid, 256, 0, st>>>(I, p, t0, t1, t2, t3, *pl, r);
    k_vbox<4><<<grid, 256, 0, st>>>(t0, t1, t2, t3, a0, b0, *pl, r, eps);
    k_hbox<2><<<grid, 256, 0, st>>>(a0, b0, t0, t1, NULL, NULL, *pl, r);
    k_vbox<2><<<grid, 256, 0, st>>>(t0, t1, NULL, NULL, a, b, *pl, r, eps);
    return fcu_check("guided coefficients", err);
}

/* ---- twins (one image) ---- */

static void one_image(struct frame_cu_plan *p, int w, int h)
{
    memset(p, 0, sizeof *p);
    p->n_eyes = 1;
    p->e[0].work_w = w;
    p->e[0].work_h = h;
    p->e[0].eye = (struct frame_rect){ 0, 0, w, h };
    p->e[0].out = p->e[0].eye;
    p->work_per_frame = (size_t)w * h;
    p->max_work = w * h;
    p->max_out = w * h;
}

extern "C" int frame_blend_cuda(const float *tiles, int n, int mw, int mh,
                                const struct frame_tile *tile, int ww, int wh, float *out,
                                cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan p;
    one_image(&p, ww, wh);
    p.e[0].ntiles = n;
    p.tiles_per_frame = n;
    return frame_blend_batch_cuda(tiles, 1, mw, mh, tile, &p, out, st, err);
}

extern "C" int frame_guided_coeffs_cuda(const float *I, const float *p, int w, int h, int r,
                                        float eps, float *a, float *b, float *scratch,
                                        cudaStream_t st, vr_err *err)
{
    struct frame_cu_plan pl;
    one_image(&pl, w, h);
    return frame_guided_coeffs_batch_cuda(I, p, 1, &pl, r, eps, a, b, scratch, st, err);
}

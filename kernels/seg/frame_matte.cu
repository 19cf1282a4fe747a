/*
 * frame_matte.cu - the clean-up of an eye's work mask between the blend and
 * the refinement, on the GPU: the whole pass bounding the tiles before the
 * blend (k_gate_claim, k_gate_apply), a second model's whole pass fused into
 * the blended mask (k_fuse) and its close/open (k_minmax, eight separable
 * passes). The C twins and why are in
 * frame_matte_ref.c; frame_ref.h states the rules. Max, min, an integer sum
 * and the twin's float steps rounded one by one give the same bits.
 */
#include "frame_cuda.h"

/* ---- gate ---- */

static __device__ __forceinline__ int gate_index(int i, int m, float t0, float tl, int n)
{
    float px = __fadd_rn(t0, __fmul_rn(__fdiv_rn((float)i + 0.5f, (float)m), tl));
    int k = (int)__fmul_rn(__fdiv_rn(px, (float)n), (float)m);
    return k < 0 ? 0 : (k > m - 1 ? m - 1 : k);
}

/* One thread a tile pixel (blockIdx.y: the tile): the dilated whole pass
 * into d, the pixel's claim summed into sums[tile] (integers: any order). */
static __global__ void k_gate_claim(const float *__restrict__ tiles, int n, int mw, int mh,
                                    const frame_tile *__restrict__ tile, int ww, int wh, int r,
                                    float *__restrict__ d, unsigned long long *sums)
{
    const int t = blockIdx.y, k = blockIdx.x * blockDim.x + threadIdx.x;
    const size_t np = (size_t)mw * mh;
    long long claim = 0;
    if (k < (int)np) {
        const frame_tile tt = tile[t];
        const float *whole = tiles + (size_t)(n - 1) * np;
        int x = k % mw, y = k / mw;
        int cx = gate_index(x, mw, tt.x, tt.w, ww), cy = gate_index(y, mh, tt.y, tt.h, wh);
        int x0 = max(cx - r, 0), x1 = min(cx + r, mw - 1);
        int y0 = max(cy - r, 0), y1 = min(cy + r, mh - 1);
        float m = 0.0f;
        for (int yy = y0; yy <= y1; yy++)
            for (int xx = x0; xx <= x1; xx++) {
                float v = whole[(size_t)yy * mw + xx];
                m = v > m ? v : m;
            }
        d[(size_t)t * np + k] = m;
        claim = max((int)fcu_to_u8(tiles[(size_t)t * np + k]) - (int)fcu_to_u8(m), 0);
    }
    /* warp sum, then one atomic a warp */
    for (int o = 16; o > 0; o >>= 1)
        claim += __shfl_down_sync(0xffffffffu, claim, o);
    if ((threadIdx.x & 31) == 0 && claim)
        atomicAdd(&sums[t], (unsigned long long)claim);
}

static __global__ void k_gate_apply(float *__restrict__ tiles, int mw, int mh,
                                    const float *__restrict__ d,
                                    const unsigned long long *__restrict__ sums)
{
    const int t = blockIdx.y, k = blockIdx.x * blockDim.x + threadIdx.x;
    const size_t np = (size_t)mw * mh;
    if (k >= (int)np)
        return;
    float c = __fdiv_rn(__ll2float_rn((long long)sums[t]), (float)(255 * mw * mh));
    float trust = __fsub_rn(1.0f, __fdiv_rn(__fsub_rn(c, FRAME_GATE_SLACK), FRAME_GATE_SPAN));
    trust = trust < 0.0f ? 0.0f : (trust > 1.0f ? 1.0f : trust);
    float g = __fdiv_rn(__fsub_rn(d[(size_t)t * np + k], FRAME_GATE_LO),
                        FRAME_GATE_HI - FRAME_GATE_LO);
    g = g < trust ? trust : g;
    g = g > 1.0f ? 1.0f : g;
    float *o = &tiles[(size_t)t * np + k];
    *o = *o < g ? *o : g;
}

extern "C" int frame_gate_cuda(float *tiles, int n, int mw, int mh, const struct frame_tile *tile,
                               int ww, int wh, int r, float *scratch, unsigned long long *sums,
                               cudaStream_t st, vr_err *err)
{
    if (n < 2)
        return 0;
    cudaError_t e = cudaMemsetAsync(sums, 0, (size_t)(n - 1) * sizeof *sums, st);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "gate: %s", cudaGetErrorString(e));
    dim3 g((unsigned)((mw * mh + 255) / 256), (unsigned)(n - 1));
    k_gate_claim<<<g, 256, 0, st>>>(tiles, n, mw, mh, tile, ww, wh, r, scratch, sums);
    k_gate_apply<<<g, 256, 0, st>>>(tiles, mw, mh, scratch, sums);
    return fcu_check("gate", err);
}

/* ---- fuse ---- */

static __global__ void k_fuse(const float *__restrict__ p, int mw, int mh, int ww, int wh,
                              float *__restrict__ work)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= ww || y >= wh)
        return;
    float u = __fdiv_rn((float)x + 0.5f, (float)ww), v = __fdiv_rn((float)y + 0.5f, (float)wh);
    float sx = __fsub_rn(__fmul_rn(u, (float)mw), 0.5f), sy = __fsub_rn(__fmul_rn(v, (float)mh), 0.5f);
    sx = sx < 0.0f ? 0.0f : (sx > (float)(mw - 1) ? (float)(mw - 1) : sx);
    sy = sy < 0.0f ? 0.0f : (sy > (float)(mh - 1) ? (float)(mh - 1) : sy);
    int x0 = (int)sx, y0 = (int)sy;
    int x1 = x0 + 1 < mw ? x0 + 1 : mw - 1, y1 = y0 + 1 < mh ? y0 + 1 : mh - 1;
    float tx = __fsub_rn(sx, (float)x0), ty = __fsub_rn(sy, (float)y0);
    float top = fcu_lerp(p[(size_t)y0 * mw + x0], p[(size_t)y0 * mw + x1], tx);
    float bot = fcu_lerp(p[(size_t)y1 * mw + x0], p[(size_t)y1 * mw + x1], tx);
    float f = __fsub_rn(__fmul_rn(2.0f, fcu_lerp(top, bot, ty)), 1.0f);
    float *o = &work[(size_t)y * ww + x];
    *o = *o > f ? *o : f;
}

extern "C" int frame_fuse_cuda(const float *p, int mw, int mh, int ww, int wh, float *work,
                               cudaStream_t st, vr_err *err)
{
    dim3 b(32, 8), g((unsigned)((ww + 31) / 32), (unsigned)((wh + 7) / 8));
    k_fuse<<<g, b, 0, st>>>(p, mw, mh, ww, wh, work);
    return fcu_check("fuse", err);
}

/* ---- morph ---- */

static __global__ void k_minmax(const float *__restrict__ in, float *__restrict__ out, int w,
                                int h, int r, int is_max, int dx)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    int p = dx ? x : y, len = dx ? w : h;
    int a = max(p - r, 0), b = min(p + r, len - 1);
    float m = in[(size_t)y * w + x];
    for (int k = a; k <= b; k++) {
        float v = dx ? in[(size_t)y * w + k] : in[(size_t)k * w + x];
        m = is_max ? (v > m ? v : m) : (v < m ? v : m);
    }
    out[(size_t)y * w + x] = m;
}

extern "C" int frame_morph_cuda(float *work, int w, int h, int r, float *scratch,
                                cudaStream_t st, vr_err *err)
{
    if (r <= 0)
        return 0;
    static const int order[4] = { 1, 0, 0, 1 }; /* close, then open */
    dim3 b(32, 8), g((unsigned)((w + 31) / 32), (unsigned)((h + 7) / 8));
    for (int i = 0; i < 4; i++) {
        k_minmax<<<g, b, 0, st>>>(work, scratch, w, h, r, order[i], 1);
        k_minmax<<<g, b, 0, st>>>(scratch, work, w, h, r, order[i], 0);
    }
    return fcu_check("morph", err);
}

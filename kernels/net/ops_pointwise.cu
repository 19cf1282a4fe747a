/*
 * ops_pointwise.cu - the fused 1x1 (pointwise) conv (cu_pointwise_dt,
 * ops_cuda.h; C twin ref_pointwise, ops_pointwise_ref.c): prologue x * a_scale
 * + b (b optionally a small map resized on load), the conv, bias,
 * activations, an excite scale, a residual and a third activation, so each
 * activation makes one trip through device memory. A block stages a tile of
 * P pixels and the weights in shared memory once.
 *
 * Input channels in multiples of 8 (every 1x1 conv of the selfie models)
 * take k_pw_mma: the conv on the tensor cores (ops_mma.cuh, float32 as
 * float16 hi + lo), the tile's results through shared memory to the
 * epilogue. k_pointwise, on the CUDA cores (a thread 8 outputs of 1 or 4
 * pixels), takes the rest; it was 20% of the network at batch 64 (H100).
 * Steps whose weights do not fit in shared memory (the Pose models' 80->480
 * up to 1152->192; the selfie models have none) take k_pw_gemm, a tiled
 * product with the weights staged a slice at a time. Which kernel and tile a step gets is
 * ops_pw_tile.h's arithmetic, which the planner's tests share.
 */
#include "ops_mma.cuh"
#include "ops_pw_tile.h"
#include "ops_resize.cuh"

/* ---- pointwise (1x1) conv with fused prologue / epilogue ---- */

struct pw_k {
    int npix, hw, cin, cout, P, S;   /* P pixels per block; S = P + 4 row stride */
    const void *a, *as, *b;
    const float *w, *bias;
    int act1, act2;
    const void *es, *res;
    int act3;
    void *out;
    unsigned dt;                     /* CU_DT_* bits: which buffers are __half */
    int rs_h, rs_w, out_w;           /* resize-on-load source (rs_h > 0) */
    float rs_sy, rs_sx;
    int rs_half;
};

/* Input channels c8..c8+7 of global pixel gp through the prologue:
 * a (or a resized on load) * a_scale + b; zeros past the last pixel. */
__device__ __forceinline__ void pw_in8(const pw_k &k, unsigned gp, int c8, float v[8])
{
    const int fa = k.dt & CU_DT_IN0, fs = k.dt & CU_DT_IN1, fb = k.dt & CU_DT_IN2;
    const unsigned hw = (unsigned)k.hw;
    if (gp < (unsigned)k.npix && k.rs_h > 0) {
        /* the upsampled input, sampled here instead of written */
        unsigned n = gp / hw, pi = gp - n * hw;
        const rs_taps tp = rs_taps_of((int)(pi / (unsigned)k.out_w),
                                      (int)(pi % (unsigned)k.out_w), k.rs_sy, k.rs_sx,
                                      k.rs_half, k.rs_h, k.rs_w);
        rs_load8(k.a, fa, (size_t)n * k.rs_h * k.rs_w * k.cin, k.rs_w, k.cin, c8, tp, v);
    } else if (gp < (unsigned)k.npix) {
        ldx8(k.a, fa, (size_t)gp * k.cin + c8, v);
    }
    if (gp < (unsigned)k.npix) {
        if (k.as)
            mul_ldx8(k.as, fs, (size_t)(gp / hw) * k.cin + c8, v);
        if (k.b)
            add_ldx8(k.b, fb, (size_t)gp * k.cin + c8, v);
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = 0.0f;
    }
}

/* Outputs co0..co0+7 of global pixel gp (the conv plus bias in v) through
 * the epilogue: activations, excite scale, residual, activation, stored. */
__device__ __forceinline__ void pw_out8(const pw_k &k, unsigned gp, int co0, float (&v)[8])
{
    const int fe = k.dt & CU_DT_IN3, fr = k.dt & CU_DT_RES, fo = k.dt & CU_DT_OUT;
    const unsigned hw = (unsigned)k.hw;
    act_vec(v, k.act1);
    act_vec(v, k.act2);
    if (k.es)
        mul_ldx8(k.es, fe, (size_t)(gp / hw) * k.cout + co0, v);
    if (k.res) {
        add_ldx8(k.res, fr, (size_t)gp * k.cout + co0, v);
        act_vec(v, k.act3);
    }
    stx8(k.out, fo, (size_t)gp * k.cout + co0, v);
}

/* Any cin (the launcher sends multiples of 8 to k_pw_mma): the inputs
 * staged channel-major, a thread 8 outputs of PX pixels: 4 on big maps
 * (fewer shared-memory loads per multiply-add), 1 on small ones (more
 * threads and blocks in flight). */
template <int PX>
__global__ void __launch_bounds__(512) k_pointwise(struct pw_k k)
{
    const int PW_PX = PX;
    extern __shared__ float sm[];
    float *xs = sm;                    /* [cin][S]: staged inputs, channel-major */
    float *ws = sm + (size_t)k.cin * k.S;   /* [cin][cout]: transposed weights */
    const int fa = k.dt & CU_DT_IN0, fs = k.dt & CU_DT_IN1, fb = k.dt & CU_DT_IN2;
    const int tid = threadIdx.x, nt = blockDim.x;
    const unsigned gp0 = blockIdx.x * (unsigned)k.P;   /* npix < 2^31: launcher */
    const unsigned hw = (unsigned)k.hw;

    for (int i = tid; i < k.cin * k.cout; i += nt) {
        int co = i / k.cin, ci = i - co * k.cin;
        ws[ci * k.cout + co] = k.w[i];
    }
    for (int i = tid; i < k.P * k.cin; i += nt) {
        int p = i / k.cin, ci = i - p * k.cin;
        unsigned gp = gp0 + p;
        float v = 0.0f;
        if (gp < (unsigned)k.npix) {
            v = ldx1(k.a, fa, (size_t)gp * k.cin + ci);
            if (k.as)
                v *= ldx1(k.as, fs, (size_t)(gp / hw) * k.cin + ci);
            if (k.b)
                v += ldx1(k.b, fb, (size_t)gp * k.cin + ci);
        }
        xs[ci * k.S + p] = v;
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
        float xv[PX];
        if (PX == 4) {
            float4 x = *reinterpret_cast<const float4 *>(xp + ci * k.S);
            xv[0] = x.x; xv[PX > 1 ? 1 : 0] = x.y; xv[PX > 2 ? 2 : 0] = x.z;
            xv[PX > 3 ? 3 : 0] = x.w;
        } else {
#pragma unroll
            for (int p = 0; p < PX; p++)
                xv[p] = xp[ci * k.S + p];
        }
        float4 w0 = *reinterpret_cast<const float4 *>(wp + ci * k.cout);
        float4 w1 = *reinterpret_cast<const float4 *>(wp + ci * k.cout + 4);
        float wv[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
        for (int p = 0; p < PW_PX; p++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                acc[p][j] = fmaf(xv[p], wv[j], acc[p][j]);
    }

#pragma unroll
    for (int p = 0; p < PW_PX; p++) {
        unsigned gp = gp0 + pg * PW_PX + p;
        if (gp >= (unsigned)k.npix)
            break;
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = acc[p][j];
        pw_out8(k, gp, co0, v);
    }
}

/* The conv on the tensor cores, for cin a multiple of 8 (kp: cin padded
 * to 16). Shared memory: the P-pixel tile row-major [P][kp + 4] (zero
 * channels past cin), the results [P][cout + 4], the weights as hi / lo
 * halves [cout][kp + 8], the bias. A thread an 8-channel group of a pixel
 * stages; each warp converts 16-pixel rows of the tile (mma_conv1x1, KS
 * k-steps compiled; 0: any); then a thread an 8-channel group of a pixel
 * runs the epilogue. */
#define PWM_THREADS 256

template <int KS>
__global__ void __launch_bounds__(PWM_THREADS) k_pw_mma(struct pw_k k)
{
    extern __shared__ float4 pwm_sm4[];
    const int kp = (k.cin + 15) & ~15, xs = kp + 4, ts = k.cout + 4;
    float *X = reinterpret_cast<float *>(pwm_sm4), *T = X + k.P * xs, *Bp = T + k.P * ts;
    __half *Wh = reinterpret_cast<__half *>(Bp + k.cout), *Wl = Wh + k.cout * (kp + 8);
    const int tid = threadIdx.x;
    const unsigned gp0 = blockIdx.x * (unsigned)k.P;   /* npix < 2^31: launcher */

    mma_stage_hilo(k.w, NULL, k.cout, k.cin, kp, 8, Wh, Wl, PWM_THREADS);
    for (int i = tid; i < k.cout; i += PWM_THREADS)
        Bp[i] = k.bias ? k.bias[i] : 0.0f;
    const int c8n = kp >> 3, cin8 = k.cin >> 3;
    for (int i = tid; i < k.P * c8n; i += PWM_THREADS) {
        const int p = i / c8n, q = i - p * c8n;
        float v[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
        if (q < cin8)
            pw_in8(k, gp0 + p, q * 8, v);
        float4 *x4 = reinterpret_cast<float4 *>(X + p * xs + q * 8);
        x4[0] = make_float4(v[0], v[1], v[2], v[3]);
        x4[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
    __syncthreads();
    mma_conv1x1<KS, PWM_THREADS, 8>(X, xs, kp, Wh, Wl, k.cout, Bp, NULL, CU_ACT_NONE,
                                    CU_ACT_NONE, T, ts, k.P);
    __syncthreads();

    const int nch = k.cout >> 3;
    for (int i = tid; i < k.P * nch; i += PWM_THREADS) {
        const int p = i / nch, co0 = (i - p * nch) << 3;
        const unsigned gp = gp0 + p;
        if (gp >= (unsigned)k.npix)
            continue;
        const float4 *t4 = reinterpret_cast<const float4 *>(T + p * ts + co0);
        const float4 lo = t4[0], hi = t4[1];
        float v[8] = { lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w };
        pw_out8(k, gp, co0, v);
    }
}

/* Weights too big for shared memory (cin a multiple of 8): a tiled
 * product, 32 * TM pixels x PWG_BN output channels a block, the input
 * channels in slices of PWG_BK staged in shared memory (inputs through the
 * prologue, channel-major; weights transposed), a thread TM pixels x 8
 * channels, so a weight read from shared memory serves TM pixels and an
 * input 8 channels. Each output is the bias, then fmaf over the input
 * channels in order: the C twin's sum. (It replaced a kernel that read
 * every weight from L1 / L2 once a pixel: 41-58 GB/s on the detector's
 * 14x14 and 7x7 steps, 43 ms of its 43 ms at 145 crops, H200.) */
#define PWG_BK 16
#define PWG_BN 64
#define PWG_THREADS 256

template <int TM>
__global__ void __launch_bounds__(PWG_THREADS) k_pw_gemm(struct pw_k k)
{
    const int BM = 32 * TM;
    __shared__ __align__(16) float xs[PWG_BK][32 * TM + 4];   /* [channel][pixel] */
    __shared__ __align__(16) float ws[PWG_BK][PWG_BN + 4];    /* [channel][output] */
    const int tid = threadIdx.x, tx = tid & 7, ty = tid >> 3;
    const unsigned gp0 = blockIdx.x * (unsigned)BM;            /* npix < 2^31: launcher */
    const int cb = blockIdx.y * PWG_BN, co0 = cb + tx * 8;
    float acc[TM][8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const float bj = k.bias && co0 < k.cout ? __ldg(k.bias + co0 + j) : 0.0f;
#pragma unroll
        for (int p = 0; p < TM; p++)
            acc[p][j] = bj;
    }
    for (int k0 = 0; k0 < k.cin; k0 += PWG_BK) {
        for (int i = tid; i < BM * 2; i += PWG_THREADS) {
            const int p = i >> 1, h = (i & 1) * 8;
            float v[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
            if (k0 + h < k.cin)
                pw_in8(k, gp0 + p, k0 + h, v);
#pragma unroll
            for (int j = 0; j < 8; j++)
                xs[h + j][p] = v[j];
        }
        {
            /* 64 outputs x 4 groups of 4 channels: one float4 a thread
             * (cin a multiple of 8, so a group is whole or past the end) */
            const int co = tid >> 2, q = (tid & 3) * 4;
            float4 w = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (cb + co < k.cout && k0 + q < k.cin)
                w = __ldg(reinterpret_cast<const float4 *>(k.w + (size_t)(cb + co) * k.cin + k0 + q));
            ws[q][co] = w.x;
            ws[q + 1][co] = w.y;
            ws[q + 2][co] = w.z;
            ws[q + 3][co] = w.w;
        }
        __syncthreads();
        const int kn = k.cin - k0 < PWG_BK ? k.cin - k0 : PWG_BK;
        for (int c = 0; c < kn; c++) {
            float xv[TM];
#pragma unroll
            for (int p = 0; p < TM; p++)
                xv[p] = xs[c][ty * TM + p];
            const float4 w0 = *reinterpret_cast<const float4 *>(&ws[c][tx * 8]);
            const float4 w1 = *reinterpret_cast<const float4 *>(&ws[c][tx * 8 + 4]);
            const float wv[8] = { w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w };
#pragma unroll
            for (int p = 0; p < TM; p++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[p][j] = fmaf(xv[p], wv[j], acc[p][j]);
        }
        __syncthreads();
    }
    if (co0 >= k.cout)
        return;
#pragma unroll
    for (int p = 0; p < TM; p++) {
        const unsigned gp = gp0 + ty * TM + p;
        if (gp >= (unsigned)k.npix)
            break;
        pw_out8(k, gp, co0, acc[p]);
    }
}

/* k_pw_gemm's launch: 128-pixel tiles, 64 where those would leave most
 * SMs idle (under 66 blocks: the landmark model at 1-4 crops, where a
 * block's time is the step's). More blocks of fewer pixels do not pay
 * otherwise: each weight read from shared memory then serves fewer pixels,
 * and that bounds it. On the detector at 81 crops (H200) the 14x14 and 7x7
 * steps took 0.11 and 0.10 ms with 128 (250 and 96 blocks for 132 SMs),
 * 0.17 and 0.13 with 64, and the net 6.8 ms against 7.4 when 64 came in
 * under two blocks an SM. */
static int pw_gemm_launch(const struct pw_k &k, cudaStream_t s)
{
    const unsigned ny = (unsigned)(k.cout + PWG_BN - 1) / PWG_BN;
    const unsigned n4 = cu_blocks((size_t)k.npix, 128);
    if ((size_t)n4 * ny >= 66)
        k_pw_gemm<4><<<dim3(n4, ny), PWG_THREADS, 0, s>>>(k);
    else
        k_pw_gemm<2><<<dim3(cu_blocks((size_t)k.npix, 64), ny), PWG_THREADS, 0, s>>>(k);
    return cu_check_launch();
}

/* per process (the attributes hold for the context, which a process's
 * workers share: serve --slot-mode threads); threads racing to set them
 * set the same values */
static int pw_prepared;

extern "C" int cu_ops_prepare(void)
{
    if (__atomic_load_n(&pw_prepared, __ATOMIC_ACQUIRE))
        return 0;
    const void *const kernels[] = {
        (const void *)k_pointwise<4>, (const void *)k_pointwise<1>, (const void *)k_pw_mma<0>,
        (const void *)k_pw_mma<1>,    (const void *)k_pw_mma<2>,    (const void *)k_pw_mma<3>,
        (const void *)k_pw_mma<4>,    (const void *)k_pw_mma<5>,    (const void *)k_pw_mma<6>,
        (const void *)k_pw_mma<8>,
    };
    cudaError_t e = cudaSuccess;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0] && e == cudaSuccess; i++)
        e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 PW_MAX_SMEM);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return VR_ECUDA;
    }
    __atomic_store_n(&pw_prepared, 1, __ATOMIC_RELEASE);
    return 0;
}

/* The kernel's arguments for tiles of P pixels; nonzero when p's resize
 * on load is not one it takes. */
static int pw_args(const struct cu_pw_args *p, unsigned dt, int P, struct pw_k *k)
{
    *k = (struct pw_k){ (int)((size_t)p->n * p->hw), p->hw, p->cin, p->cout, P, P + 4, p->a,
                        p->a_scale, p->b, p->w, p->bias, p->act1, p->act2, p->e_scale, p->res,
                        p->act3, p->out, dt, 0, 0, 0, 0.0f, 0.0f, 0 };
    if (p->rs_h > 0) {
        /* resize on load: 8-wide channel groups only, output map given */
        if ((p->cin & 7) || p->rs_w <= 0 || p->out_h <= 0 || p->out_w <= 0 ||
            (size_t)p->out_h * p->out_w != (size_t)p->hw ||
            (size_t)p->n * p->rs_h * p->rs_w * p->cin > 0x7fffffffu)
            return VR_EINVAL;
        k->rs_h = p->rs_h;
        k->rs_w = p->rs_w;
        k->out_w = p->out_w;
        k->rs_sy = rs_scale(p->rs_h, p->out_h, p->rs_align);
        k->rs_sx = rs_scale(p->rs_w, p->out_w, p->rs_align);
        k->rs_half = p->rs_half;
    }
    return 0;
}

/* cin a multiple of 8: k_pw_mma on the tile ops_pw_tile.h chose. */
static int pw_mma_launch(const struct cu_pw_args *p, unsigned dt, const struct pw_tile *t,
                         cudaStream_t s)
{
    const size_t npix = (size_t)p->n * p->hw, smem = t->smem;
    const int P = t->P;
    struct pw_k k;
    if (pw_args(p, dt, P, &k))
        return VR_EINVAL;
    if (smem > 48 * 1024 && cu_ops_prepare() < 0)
        return VR_ECUDA;
    const unsigned blocks = cu_blocks(npix, (unsigned)P);
#define PWM(KS) k_pw_mma<KS><<<blocks, PWM_THREADS, smem, s>>>(k)
    switch ((p->cin + 15) / 16) {
    case 1: PWM(1); break;
    case 2: PWM(2); break;
    case 3: PWM(3); break;
    case 4: PWM(4); break;
    case 5: PWM(5); break;
    case 6: PWM(6); break;
    case 8: PWM(8); break;
    default: PWM(0); break;
    }
#undef PWM
    return cu_check_launch();
}

extern "C" int cu_pointwise(const struct cu_pw_args *p, int f16, cudaStream_t s)
{
    return cu_pointwise_dt(p, f16 ? CU_DT_ALL : 0, s);
}

extern "C" int cu_pointwise_dt(const struct cu_pw_args *p, unsigned dt, cudaStream_t s)
{
    if (!p || p->n <= 0 || p->hw <= 0 || !p->a || !p->w || !p->out)
        return VR_EINVAL;
    size_t npix = (size_t)p->n * p->hw;
    struct pw_tile t;
    if (npix > 0x7fffffffu || pw_tile_of(p->cin, p->cout, npix, &t))
        return VR_EINVAL;
    /* 8-wide accesses need 16-byte aligned rows */
    if (!cu_aligned16(p->a) || !cu_aligned16(p->out) || !cu_aligned16(p->w) ||
        (p->b && !cu_aligned16(p->b)) || (p->res && !cu_aligned16(p->res)) ||
        (p->e_scale && !cu_aligned16(p->e_scale)) || (p->a_scale && !cu_aligned16(p->a_scale)))
        return VR_EINVAL;
    if (t.kind == PW_MMA)
        return pw_mma_launch(p, dt, &t, s);
    struct pw_k k;
    if (pw_args(p, dt, t.P, &k))
        return VR_EINVAL;
    if (t.kind == PW_GLOBAL)
        return pw_gemm_launch(k, s);
    if (t.smem > 48 * 1024 && cu_ops_prepare() < 0)
        return VR_ECUDA;
    unsigned blocks = cu_blocks(npix, (unsigned)t.P);
    if (t.PX == 4)
        k_pointwise<4><<<blocks, t.threads, t.smem, s>>>(k);
    else
        k_pointwise<1><<<blocks, t.threads, t.smem, s>>>(k);
    return cu_check_launch();
}

/*
 * ops_block.cu - chained inverted-residual blocks in one kernel
 * (cu_ir_chain, ops_fused.h): one thread block per image runs every block
 * of the chain with the running map x, the expanded map e and the staged
 * weights in shared memory, so between two blocks nothing goes to device
 * memory. Before it, each block was four kernels (expand, depthwise,
 * squeeze-excite, project) writing and re-reading 16x16x128 maps, each a
 * single wave of small thread blocks: the bottleneck ran at 0.39 TB/s
 * (notes/cuda-net.md).
 *
 * Phases of a block, separated by __syncthreads():
 *   expand   e = x . we^T on the tensor cores (mma.sync m16n8k16): each
 *            float32 operand split into float16 hi + lo, three products,
 *            float32 accumulation; 16 pixels x 32 outputs a warp
 *   depthwise in place on e: each thread computes whole rows of a channel
 *            into registers, then all write after a barrier; row sums of
 *            the result go to a scratch table (fixed order: deterministic)
 *   squeeze  channel means -> FC (warp per output) -> FC (thread per output)
 *   project  x (+)= (e * v) . wp^T on the tensor cores, the SE scale v
 *            folded into the staged weights
 * Arithmetic float32-class throughout; only the chain's input and output
 * may be float16. Rows of x and e are padded (IR_PAD), staged weights too
 * (IR_WPAD), to spread a fragment's rows over the shared-memory banks.
 */
#include "ops_mma.cuh"

#define IR_THREADS 512
#define IR_WARPS (IR_THREADS / 32)
#define IR_MAX_W 16         /* map width: a thread's row of outputs in registers */
#define IR_DW_PAIRS 2       /* (channel, row) pairs a thread holds in one pass */
#define IR_PAD 4            /* float row padding of x and e */
#define IR_WPAD 8           /* half row padding of the staged weights */

struct ir_k {
    int h, w, c, n_blocks;
    int ce_max, cs_max, wbuf;   /* widest expansion and squeeze; weight buffer floats */
    const void *in;
    void *out;
    unsigned dt;
    struct cu_ir_block b[CU_IR_MAX_BLOCKS];
};

/* One output of a 1x1 conv with any activations (a call: rare). */
__device__ __noinline__ void ir_store_rare(float *d, float v, int act1, int act2, int residual,
                                           int act3)
{
    v = act_f(act_f(v, act1), act2);
    *d = residual ? act_f(v + *d, act3) : v;
}

/* The outputs of an mma tile (rows p, p + 8; columns o, o + 1 of each of
 * the NB groups of 8) with ACT after the bias, then the residual. */
template <int NB, int ACT>
__device__ __forceinline__ void ir_epilogue(const float acc[NB][4], float *D, int ds, int p,
                                            int o, const float *bias, int residual)
{
#pragma unroll
    for (int j = 0; j < NB; j++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int oo = o + 8 * j + (r & 1);
            float *d = D + (p + (r >> 1) * 8) * ds + oo;
            float v = acc[j][r] + bias[oo];
            if (ACT == CU_ACT_HSWISH)
                v = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
            *d = residual ? v + *d : v;
        }
}

/* 1x1 conv on the tensor cores: D[p][o] = act2(act1(A[p][.] . W[o][.] +
 * bias[o])) (then + D's old value and act3 with `residual`) for hw pixels,
 * K inputs (a multiple of 16), N outputs (of 8 * NB). A is float32 in
 * shared memory; each product is split into float16 parts, hi*hi + hi*lo +
 * lo*hi, accumulated in float32 (m16n8k16): float32-class results, where
 * plain float16 inputs would move the mask by ~0.03. A warp computes 16
 * pixels x 8*NB outputs at a time. */
template <int NB>
__device__ __forceinline__ void ir_gemm(const float *A, int as, int K, const __half *Wh,
                                        const __half *Wl, int N, const float *bias, int act1,
                                        int act2, float *D, int ds, int hw, int residual,
                                        int act3)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, ks = K + IR_WPAD;
    const int mt = hw / 16, units = mt * (N / (8 * NB));
    for (int u = threadIdx.x >> 5; u < units; u += IR_WARPS) {
        const int m0 = (u % mt) * 16, n0 = (u / mt) * 8 * NB;
        float acc[NB][4];
#pragma unroll
        for (int j = 0; j < NB; j++)
            acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
        for (int k0 = 0; k0 < K; k0 += 16) {
            const float *a0 = A + (m0 + g) * as + k0 + 2 * t;
            uint32_t ah[4], al[4];
            mma_split_a(a0, a0 + 8 * as, ah, al);
#pragma unroll
            for (int j = 0; j < NB; j++) {
                const int off = (n0 + 8 * j + g) * ks + k0 + 2 * t;
                const uint32_t bh0 = *reinterpret_cast<const uint32_t *>(Wh + off);
                const uint32_t bh1 = *reinterpret_cast<const uint32_t *>(Wh + off + 8);
                const uint32_t bl0 = *reinterpret_cast<const uint32_t *>(Wl + off);
                const uint32_t bl1 = *reinterpret_cast<const uint32_t *>(Wl + off + 8);
                mma_16816(acc[j], al, bh0, bh1);
                mma_16816(acc[j], ah, bl0, bl1);
                mma_16816(acc[j], ah, bh0, bh1);
            }
        }
        const int fast = act1 == CU_ACT_NONE && (!residual || act3 == CU_ACT_NONE);
        if (fast && act2 == CU_ACT_NONE)
            ir_epilogue<NB, CU_ACT_NONE>(acc, D, ds, m0 + g, n0 + 2 * t, bias, residual);
        else if (fast && act2 == CU_ACT_HSWISH)
            ir_epilogue<NB, CU_ACT_HSWISH>(acc, D, ds, m0 + g, n0 + 2 * t, bias, residual);
        else
#pragma unroll
            for (int j = 0; j < NB; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    const int p = m0 + g + (r >> 1) * 8, o = n0 + 8 * j + 2 * t + (r & 1);
                    ir_store_rare(D + p * ds + o, acc[j][r] + bias[o], act1, act2, residual,
                                  act3);
                }
    }
}

/* The GEMM with the widest output group N allows. */
__device__ __forceinline__ void ir_conv1x1(const float *A, int as, int K, const __half *Wh,
                                           const __half *Wl, int N, const float *bias, int act1,
                                           int act2, float *D, int ds, int hw, int residual,
                                           int act3)
{
    if (N % 32 == 0)
        ir_gemm<4>(A, as, K, Wh, Wl, N, bias, act1, act2, D, ds, hw, residual, act3);
    else
        ir_gemm<2>(A, as, K, Wh, Wl, N, bias, act1, act2, D, ds, hw, residual, act3);
}

/* Depthwise K x K, stride 1, SAME, in place on E [h*w][es] (ce channels),
 * weights wd [K*K][ce] and bias bd [ce] in shared memory. Each pass takes
 * a range of channels, at most IR_DW_PAIRS (channel, row) pairs a thread,
 * whole output rows in registers (few enough that loads can run ahead);
 * the pass's writes wait for a barrier, and the next pass reads other
 * channels only, so it may start before they land. Writes each channel's
 * row sums to rows [h][ce] for the pool. */
/* The thread's j-th (channel, row) pair of a pass over channels c0.. (nc of
 * them); 0 when the thread has no j-th pair. */
__device__ __forceinline__ int ir_pair(int j, int c0, int nc, int pairs, int *ch, int *y)
{
    const int u = threadIdx.x + j * IR_THREADS;
    *ch = c0 + u % nc;
    *y = u / nc;
    return u < pairs;
}

template <int K>
__device__ __forceinline__ void ir_depthwise(float *E, int es, int ce, int h, int w,
                                             const float *wd, const float *bd, int act1,
                                             int act2, float *rows)
{
    int passes = 1;     /* the fewest with every pass's pairs held at once */
    while ((ce + passes - 1) / passes * h > IR_DW_PAIRS * IR_THREADS)
        passes++;
    const int cp = (ce + passes - 1) / passes;
    for (int c0 = 0; c0 < ce; c0 += cp) {
        const int nc = ce - c0 < cp ? ce - c0 : cp, pairs = nc * h;
        float out[IR_DW_PAIRS][IR_MAX_W];
#pragma unroll
        for (int j = 0; j < IR_DW_PAIRS; j++) {
            int ch, y;
            if (!ir_pair(j, c0, nc, pairs, &ch, &y))
                continue;
            const float b = bd[ch];
#pragma unroll
            for (int x = 0; x < IR_MAX_W; x++)
                out[j][x] = b;
#pragma unroll
            for (int ky = 0; ky < K; ky++) {
                const int yy = y + ky - K / 2;
                if (yy < 0 || yy >= h)
                    continue;
                float row[IR_MAX_W + K - 1];
#pragma unroll
                for (int xx = 0; xx < IR_MAX_W + K - 1; xx++) {
                    const int sx = xx - K / 2;
                    row[xx] = sx >= 0 && sx < w ? E[(yy * w + sx) * es + ch] : 0.0f;
                }
#pragma unroll
                for (int kx = 0; kx < K; kx++) {
                    const float wv = wd[(ky * K + kx) * ce + ch];
#pragma unroll
                    for (int x = 0; x < IR_MAX_W; x++)
                        out[j][x] = fmaf(row[x + kx], wv, out[j][x]);
                }
            }
        }
        __syncthreads();    /* this pass's channels are read: write them in place */
#pragma unroll
        for (int j = 0; j < IR_DW_PAIRS; j++) {
            int ch, y;
            if (!ir_pair(j, c0, nc, pairs, &ch, &y))
                continue;
            float *e = E + y * w * es + ch;
#pragma unroll
            for (int x = 0; x < IR_MAX_W; x++)
                if (x < w)
                    e[x * es] = out[j][x];
            float sum = 0.0f;     /* activations in a rolled loop: small code */
#pragma unroll 1
            for (int x = 0; x < w; x++) {
                const float v = act_small(act_small(e[x * es], act1), act2);
                e[x * es] = v;
                sum += v;
            }
            rows[y * ce + ch] = sum;
        }
    }
}

/* Squeeze-excite vector v [ce] from the row sums [h][ce]; s1 [cs] scratch.
 * Warp per output in both layers. Each lane's weights are loaded before
 * the mean is summed: read one after another, their latency (device memory
 * or L2, since shared memory leaves L1 small) was most of this phase. */
#define IR_SE_J 2       /* first-layer outputs a warp: cs <= 32 */
#define IR_SE_Q 4       /* inputs a lane in the first layer: ce <= 128 */
#define IR_SE_C 8       /* second-layer outputs a warp: ce <= 128 */
__device__ __forceinline__ void ir_squeeze(const struct cu_ir_block &B, const float *rows, int h,
                                           int hw, float *mean, float *s1, float *v)
{
    const int ce = B.ce, cs = B.cs, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float w1r[IR_SE_J][IR_SE_Q], w2r[IR_SE_C], b1r[IR_SE_J], b2r[IR_SE_C];
#pragma unroll
    for (int i = 0; i < IR_SE_J; i++) {
        const int j = warp + i * IR_WARPS;
        b1r[i] = j < cs && B.b1 ? __ldg(B.b1 + j) : 0.0f;
#pragma unroll
        for (int q = 0; q < IR_SE_Q; q++) {
            const int ch = lane + 32 * q;
            w1r[i][q] = j < cs && ch < ce ? __ldg(B.w1 + j * ce + ch) : 0.0f;
        }
    }
#pragma unroll
    for (int i = 0; i < IR_SE_C; i++) {
        const int ch = warp + i * IR_WARPS;
        b2r[i] = ch < ce && B.b2 ? __ldg(B.b2 + ch) : 0.0f;
        w2r[i] = ch < ce && lane < cs ? __ldg(B.w2 + ch * cs + lane) : 0.0f;
    }
    for (int ch = tid; ch < ce; ch += IR_THREADS) {
        float s = 0.0f;
        for (int y = 0; y < h; y++)
            s += rows[y * ce + ch];
        mean[ch] = s / (float)hw;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < IR_SE_J; i++) {
        const int j = warp + i * IR_WARPS;
        float acc = 0.0f;
#pragma unroll
        for (int q = 0; q < IR_SE_Q; q++)
            if (lane + 32 * q < ce)
                acc = fmaf(mean[lane + 32 * q], w1r[i][q], acc);
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, m);
        if (lane == 0 && j < cs)
            s1[j] = act_small(act_small(acc + b1r[i], B.act_r1), B.act_r2);
    }
    __syncthreads();
    const float s1l = lane < cs ? s1[lane] : 0.0f;
#pragma unroll
    for (int i = 0; i < IR_SE_C; i++) {
        const int ch = warp + i * IR_WARPS;
        float acc = s1l * w2r[i];
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, m);
        if (lane == 0 && ch < ce)
            v[ch] = act_small(act_small(acc + b2r[i], B.act_s1), B.act_s2);
    }
}

__global__ void __launch_bounds__(IR_THREADS, 1) k_ir_chain(const ir_k p)
{
    extern __shared__ float4 sm4[];
    float *sm = reinterpret_cast<float *>(sm4);
    const int hw = p.h * p.w, c = p.c, xs = c + IR_PAD, tid = threadIdx.x;
    float *X = sm;
    float *E = X + hw * xs;
    float *W = E + hw * (p.ce_max + IR_PAD);
    float *mean = W + p.wbuf, *v = mean + p.ce_max, *s1 = v + p.ce_max;
    float *be = s1 + p.cs_max, *bd = be + p.ce_max, *bp = bd + p.ce_max;   /* biases */
    const size_t base = (size_t)blockIdx.x * hw * c;
    const int in16 = (p.dt & CU_DT_IN0) != 0, out16 = (p.dt & CU_DT_OUT) != 0;

    for (int i = tid; i < hw * c; i += IR_THREADS)
        X[(i / c) * xs + i % c] = ldx1(p.in, in16, base + i);
    for (int bi = 0; bi < p.n_blocks; bi++) {
        const struct cu_ir_block &B = p.b[bi];
        const int ce = B.ce, es = ce + IR_PAD, kk = B.k * B.k;
        __half *Wh = reinterpret_cast<__half *>(W), *Wl = Wh + ce * (c + IR_WPAD);
        mma_stage_hilo(B.we, NULL, ce, c, c, IR_WPAD, Wh, Wl, IR_THREADS);
        for (int i = tid; i < ce; i += IR_THREADS) {
            be[i] = B.be ? __ldg(B.be + i) : 0.0f;
            bd[i] = B.bd ? __ldg(B.bd + i) : 0.0f;
        }
        for (int i = tid; i < c; i += IR_THREADS)
            bp[i] = B.bp ? __ldg(B.bp + i) : 0.0f;
        __syncthreads();
        ir_conv1x1(X, xs, c, Wh, Wl, ce, be, B.act_e1, B.act_e2, E, es, hw, 0, 0);
        __syncthreads();
        for (int i = tid; i < kk * ce; i += IR_THREADS)
            W[i] = __ldg(B.wd + i);
        __syncthreads();
        float *rows = W + kk * ce;
        switch (B.k) {
        case 3: ir_depthwise<3>(E, es, ce, p.h, p.w, W, bd, B.act_d1, B.act_d2, rows); break;
        default: ir_depthwise<5>(E, es, ce, p.h, p.w, W, bd, B.act_d1, B.act_d2, rows); break;
        }
        __syncthreads();
        ir_squeeze(B, rows, p.h, hw, mean, s1, v);
        __syncthreads();
        Wl = Wh + c * (ce + IR_WPAD);
        mma_stage_hilo(B.wp, v, c, ce, ce, IR_WPAD, Wh, Wl, IR_THREADS);
        __syncthreads();
        ir_conv1x1(E, es, ce, Wh, Wl, c, bp, B.act_p1, B.act_p2, X, xs, hw, B.residual,
                   B.act3);
        __syncthreads();
    }
    for (int i = tid; i < hw * c; i += IR_THREADS)
        stx1(p.out, out16, base + i, X[(i / c) * xs + i % c]);
}

/* Shared memory the kernel needs for this chain, in bytes, or 0 when the
 * kernel cannot take its geometry. */
static size_t ir_smem(const struct cu_ir_args *a, int *ce_max, int *cs_max, int *wbuf)
{
    const int hw = a->h * a->w, c = a->c;
    if (a->n_blocks < 1 || a->n_blocks > CU_IR_MAX_BLOCKS || a->w > IR_MAX_W || hw % 16 ||
        c < 16 || c % 16 || c > 256)
        return 0;
    int cm = 0, csm = 0, wb = 0;
    for (int i = 0; i < a->n_blocks; i++) {
        const struct cu_ir_block *b = &a->b[i];
        if (b->ce < 16 || b->ce % 16 || b->ce > 32 * IR_SE_Q || b->cs > 32 ||
            a->h > IR_DW_PAIRS * IR_THREADS ||
            (b->k != 3 && b->k != 5) || b->cs < 1 ||
            b->cs > CU_SE_MAX_CH || !b->we || !b->wd || !b->w1 || !b->w2 || !b->wp)
            return 0;
        cm = b->ce > cm ? b->ce : cm;
        csm = b->cs > csm ? b->cs : csm;
        /* float16 hi + lo weights of either 1x1 conv; depthwise weights and
         * the row sums */
        const int need[3] = { b->ce * (c + IR_WPAD), c * (b->ce + IR_WPAD),
                              (b->k * b->k + a->h) * b->ce };
        for (int j = 0; j < 3; j++)
            wb = need[j] > wb ? need[j] : wb;
    }
    wb = (wb + 3) & ~3;
    *ce_max = cm;
    *cs_max = csm;
    *wbuf = wb;
    /* x, e, weights, mean + v + s1, biases */
    size_t floats = (size_t)hw * (c + IR_PAD) + (size_t)hw * (cm + IR_PAD) + wb +
                    2 * (size_t)cm + csm + 2 * (size_t)cm + c;
    return floats * sizeof(float);
}

static size_t ir_optin_max(void)
{
    /* asked once a process (of one GPU, or GPUs of one kind); threads of a
     * process (serve --slot-mode threads) racing here store the same value */
    static int max_optin = -1;
    int v = __atomic_load_n(&max_optin, __ATOMIC_RELAXED);
    if (v < 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
                cudaSuccess) {
            cudaGetLastError();
            v = 48 * 1024;
        }
        __atomic_store_n(&max_optin, v, __ATOMIC_RELAXED);
    }
    return (size_t)v;
}

extern "C" size_t cu_ir_smem(const struct cu_ir_args *a)
{
    int cm, csm, wb;
    size_t need = a ? ir_smem(a, &cm, &csm, &wb) : 0;
    return need && need <= ir_optin_max() ? need : 0;
}

extern "C" int cu_ir_chain_dt(const struct cu_ir_args *a, unsigned dt, cudaStream_t s)
{
    if (!a || a->n < 1 || !a->in || !a->out)
        return VR_EINVAL;
    ir_k k;
    const size_t smem = ir_smem(a, &k.ce_max, &k.cs_max, &k.wbuf);
    if (!smem || smem > ir_optin_max() || (size_t)a->n * a->h * a->w * a->c > 0x7fffffffu)
        return VR_EINVAL;
    /* per device context, and not a stream operation: safe while capturing */
    if (cudaFuncSetAttribute(k_ir_chain, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem) != cudaSuccess) {
        cudaGetLastError();
        return VR_ECUDA;
    }
    k.h = a->h; k.w = a->w; k.c = a->c; k.n_blocks = a->n_blocks;
    k.in = a->in; k.out = a->out; k.dt = dt;
    memcpy(k.b, a->b, sizeof k.b);
    k_ir_chain<<<a->n, IR_THREADS, smem, s>>>(k);
    return cu_check_launch();
}

extern "C" int cu_ir_chain(const struct cu_ir_args *a, int f16, cudaStream_t s)
{
    return cu_ir_chain_dt(a, f16 ? CU_DT_ALL : 0, s);
}

/*
 * ops_pwdw.cu - a 1x1 conv and the depthwise conv after it in one kernel
 * (cu_pwdw, ops_fused.h). The 1x1 conv's output - in the selfie encoder
 * 128x128x16, 64x64x72, 32x32x88 and 32x32x96 maps, 1.2 to 1.5 MB a tile
 * in float32 - was written and read back once; here it lives in shared
 * memory for the window one block of the output needs (the window's ring is
 * computed by both neighbouring blocks: 13-50% more 1x1 work, none of the
 * traffic).
 *
 * k_pwdw: one thread block of 256 threads per OB x OB block of the output
 * of one image, OB = 8, or 4 where the window of 8 would not fit:
 *   0. the input window to shared memory (x: a thread a pixel, 8 channels a
 *      load; pixels and channels zero-padded to multiples of 16)
 *   1. t = 1x1 conv on the window on the tensor cores (ops_mma.cuh), a
 *      warp 16 window pixels and all outputs; zero outside the map (the
 *      depthwise SAME padding pads t)
 *   2. the depthwise taps, a thread 4 channels of one output pixel at a time.
 * The first version ran the 1x1 conv on the CUDA cores, a thread 8 outputs
 * of a pixel with per-element index divisions: issue-bound (ncu: 0.73
 * warps issued a cycle a scheduler), 0.27 ms of the network's 1.1 at batch
 * 64. Pixels of t are c + 4 floats apart: 16-byte aligned, and 8
 * consecutive pixels' 16-byte accesses fall on distinct banks.
 */
#include "ops_mma.cuh"
#include "ops_window.cuh"

#define PD_THREADS 256
#define PD_MAX_K 5
#define PD_MAX_S 2
#define PD_SMEM_MAX (100 * 1024)   /* two thread blocks an SM */
#define PD_XPAD 4                   /* float row padding of the staged window */
#define PD_WPAD 8                   /* half row padding of the staged 1x1 weights */

static __host__ __device__ inline int pd_up16(int v) { return (v + 15) & ~15; }

struct pd_k {
    struct cu_pwdw_args a;
    int ob, rh, rw;             /* output block side; window rows, columns */
    unsigned dt;
};

/* The depthwise weights (as is) and both biases to shared memory; all
 * `nthreads` threads of the block call it. */
__device__ __forceinline__ void pd_stage_dw(const struct cu_pwdw_args &a, int c, float *Wd,
                                            float *Bp, float *Bd, int nthreads)
{
    for (int i = threadIdx.x; i < a.g.kh * a.g.kw * c; i += nthreads)
        Wd[i] = __ldg(a.wd + i);
    for (int i = threadIdx.x; i < c; i += nthreads) {
        Bp[i] = a.bp ? __ldg(a.bp + i) : 0.0f;
        Bd[i] = a.bd ? __ldg(a.bd + i) : 0.0f;
    }
}

/* Channels cq..cq+3 of output pixel (oy, ox) = block pixel (by, bx):
 * depthwise taps on the window T (K x K, stride S compiled in; K = 0: g's),
 * bias, activations, stored. */
template <int K, int S>
__device__ __forceinline__ void pd_out4(const struct cu_pwdw_args &a, const float *T, int rw,
                                        int ts, const float *Wd, const float *Bd, int c, int by,
                                        int bx, int oy, int ox, int cq, int n, int out16)
{
    const struct conv_geom &g = a.g;
    float acc[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        acc[j] = Bd[cq + j];
    dw_taps4<K, S>(acc, T, rw, ts, Wd, c, g, by, bx, cq);
    act_vec(acc, g.act);
    act_vec(acc, a.act_d2);
    const size_t o = (((size_t)n * g.oh + oy) * g.ow + ox) * c + cq;
    if (out16) {
        __half2 h[2] = { __floats2half2_rn(acc[0], acc[1]), __floats2half2_rn(acc[2], acc[3]) };
        *reinterpret_cast<uint2 *>((__half *)a.out + o) = *reinterpret_cast<const uint2 *>(h);
    } else {
        *reinterpret_cast<float4 *>((float *)a.out + o) =
            make_float4(acc[0], acc[1], acc[2], acc[3]);
    }
}

template <int K, int S>
__global__ void __launch_bounds__(PD_THREADS) k_pwdw(const pd_k p)
{
    extern __shared__ float4 pd_sm4[];
    const struct cu_pwdw_args &a = p.a;
    const struct conv_geom &g = a.g;
    const int c = g.cin, cin = a.cin, kp = pd_up16(cin), xs = kp + PD_XPAD, ts = c + 4;
    const int tid = threadIdx.x, win = p.rh * p.rw, winp = pd_up16(win), n = blockIdx.z;
    /* layout: see pd_plan */
    float *Wd = reinterpret_cast<float *>(pd_sm4), *Bp = Wd + g.kh * g.kw * c, *Bd = Bp + c;
    float *mask = Bd + c, *X = mask + winp, *T = X + winp * xs;
    __half *Wh = reinterpret_cast<__half *>(T + winp * ts), *Wl = Wh + c * (kp + PD_WPAD);
    const int oy0 = blockIdx.y * p.ob, ox0 = blockIdx.x * p.ob;
    const int iy0 = oy0 * g.sh - g.pad_top, ix0 = ox0 * g.sw - g.pad_left;
    const int in16 = (p.dt & CU_DT_IN0) != 0, out16 = (p.dt & CU_DT_OUT) != 0;

    /* the window, a thread a pixel */
    const int vec = (cin & 7) == 0 && ((uintptr_t)a.in & 15) == 0;   /* 16-byte loads */
    const int dr = PD_THREADS / p.rw, dc = PD_THREADS % p.rw;   /* row, column steps */
    int wr = tid / p.rw, wc = tid % p.rw;
    for (int pix = tid; pix < winp; pix += PD_THREADS, wr += dr + (wc + dc >= p.rw),
             wc += dc - (wc + dc >= p.rw ? p.rw : 0)) {
        const int y = iy0 + wr, x = ix0 + wc;
        const int in = pix < win && y >= 0 && y < g.ih && x >= 0 && x < g.iw;
        const size_t src = in ? (((size_t)n * g.ih + y) * g.iw + x) * cin : 0;
        float *xr = X + pix * xs;
        mask[pix] = in ? 1.0f : 0.0f;
        for (int c8 = 0; c8 < kp; c8 += 8) {
            float v[8];
            if (in && vec && c8 < cin) {
                ldx8(a.in, in16, src + c8, v);
            } else {
#pragma unroll
                for (int j = 0; j < 8; j++)
                    v[j] = in && c8 + j < cin ? ldx1(a.in, in16, src + c8 + j) : 0.0f;
            }
            st8(xr + c8, v);
        }
    }
    mma_stage_hilo(a.wp, NULL, c, cin, kp, PD_WPAD, Wh, Wl, PD_THREADS);
    pd_stage_dw(a, c, Wd, Bp, Bd, PD_THREADS);
    __syncthreads();

    if (kp == 16)
        mma_conv1x1<1, PD_THREADS, PD_WPAD>(X, xs, kp, Wh, Wl, c, Bp, mask, a.act_p1,
                                              a.act_p2, T, ts, winp);
    else if (kp == 32)
        mma_conv1x1<2, PD_THREADS, PD_WPAD>(X, xs, kp, Wh, Wl, c, Bp, mask, a.act_p1,
                                              a.act_p2, T, ts, winp);
    else
        mma_conv1x1<0, PD_THREADS, PD_WPAD>(X, xs, kp, Wh, Wl, c, Bp, mask, a.act_p1,
                                              a.act_p2, T, ts, winp);
    __syncthreads();

    /* work item u = (block pixel pq, channel quad q); (pq, q) stepped, not
     * divided out of u each time (runtime divisors: a third of the loop) */
    const int c4 = c / 4, dq = PD_THREADS % c4, dp = PD_THREADS / c4;
    const int obl = __popc(p.ob - 1);   /* ob is a power of two */
    int q = tid % c4, pq = tid / c4;
    for (int u = tid; u < p.ob * p.ob * c4; u += PD_THREADS) {
        const int by = pq >> obl, bx = pq & (p.ob - 1), oy = oy0 + by, ox = ox0 + bx;
        if (oy < g.oh && ox < g.ow)
            pd_out4<K, S>(a, T, p.rw, ts, Wd, Bd, c, by, bx, oy, ox, q * 4, n, out16);
        q += dq;
        pq += dp + (q >= c4);
        q -= q >= c4 ? c4 : 0;
    }
}

/* The selfie encoder's first pair (cin = c = 16, 3x3) and 8-channel ones:
 * channel counts compiled in, 8x8 blocks, 256 (128) threads. The window
 * goes to shared memory an 8-channel group a thread, the 1x1 conv runs on
 * it in place on the tensor cores (mma_conv1x1, K padded to 16), then a
 * thread takes 4 channels of an output pixel. With the 1x1 conv on the
 * CUDA cores (a thread all c outputs of a window pixel) it was 0.070 ms of
 * the network's 0.92 at batch 64, half its instructions that loop. */
#define PQ_B 8
#define PQ_R ((PQ_B - 1) * PD_MAX_S + 3)
#define PQ_KP 16
#define PQ_WIN ((PQ_R * PQ_R + 15) / 16 * 16)   /* window pixels as MMA rows */

template <int C>
__global__ void __launch_bounds__(PQ_B * PQ_B * (C / 4)) k_pwdw_sq(const pd_k p)
{
    constexpr int NT = PQ_B * PQ_B * (C / 4), TS = (C > PQ_KP ? C : PQ_KP) + 4;
    __shared__ __align__(16) float T[PQ_WIN * TS];
    __shared__ float Msk[PQ_WIN];
    __shared__ __align__(16) __half Wh[C * (PQ_KP + PD_WPAD)], Wl[C * (PQ_KP + PD_WPAD)];
    __shared__ __align__(16) float Wd[9 * C];
    __shared__ __align__(16) float Bp[C], Bd[C];
    const struct cu_pwdw_args &a = p.a;
    const struct conv_geom &g = a.g;
    const int tid = threadIdx.x, n = blockIdx.z;
    const int oy0 = blockIdx.y * PQ_B, ox0 = blockIdx.x * PQ_B;
    const int iy0 = oy0 * g.sh - g.pad_top, ix0 = ox0 * g.sw - g.pad_left;
    const int win = p.rh * p.rw, winp = (win + 15) / 16 * 16;
    mma_stage_hilo(a.wp, NULL, C, C, PQ_KP, PD_WPAD, Wh, Wl, NT);
    pd_stage_dw(a, C, Wd, Bp, Bd, NT);

    const int in16 = (p.dt & CU_DT_IN0) != 0, out16 = (p.dt & CU_DT_OUT) != 0;
    /* a thread's items step by NT / 2 pixels: rows and columns stepped */
    const int dr = NT / 2 / p.rw, dc = NT / 2 % p.rw, q = tid & 1;
    int wr = (tid >> 1) / p.rw, wc = (tid >> 1) % p.rw;
    for (int i = tid >> 1; i < winp; i += NT / 2, wr += dr + (wc + dc >= p.rw),
             wc += dc - (wc + dc >= p.rw ? p.rw : 0)) {
        const int y = iy0 + wr, x = ix0 + wc;
        const bool in = i < win && y >= 0 && y < g.ih && x >= 0 && x < g.iw;
        float v[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
        if (in && q * 8 < C)
            ldx8(a.in, in16, (((size_t)n * g.ih + y) * g.iw + x) * C + q * 8, v);
        if (q == 0)
            Msk[i] = in ? 1.0f : 0.0f;
        st8(T + i * TS + q * 8, v);
    }
    __syncthreads();
    mma_conv1x1<1, NT, PD_WPAD>(T, TS, PQ_KP, Wh, Wl, C, Bp, Msk, a.act_p1, a.act_p2, T, TS,
                                winp);
    __syncthreads();

    const int pq = tid / (C / 4), cq = (tid % (C / 4)) * 4;
    const int by = pq / PQ_B, bx = pq % PQ_B, oy = oy0 + by, ox = ox0 + bx;
    if (oy >= g.oh || ox >= g.ow)
        return;
    if (g.kh == 3 && g.kw == 3 && g.sh == 2 && g.sw == 2)
        pd_out4<3, 2>(a, T, p.rw, TS, Wd, Bd, C, by, bx, oy, ox, cq, n, out16);
    else
        pd_out4<0, 0>(a, T, p.rw, TS, Wd, Bd, C, by, bx, oy, ox, cq, n, out16);
}

/* Output block side and shared memory for a, or 0 when it does not fit. */
static size_t pd_plan(const struct cu_pwdw_args *a, int *ob, int *rh, int *rw)
{
    const struct conv_geom *g = &a->g;
    const size_t c = g->cin, kp = pd_up16(a->cin);
    for (int b = 8; b >= 4; b /= 2) {
        const int h = (b - 1) * g->sh + g->kh, w = (b - 1) * g->sw + g->kw;
        const size_t winp = pd_up16(h * w);
        /* k_pwdw's layout: Wd, Bp, Bd, mask, x, t (floats), Wh, Wl (halves) */
        const size_t floats = (size_t)g->kh * g->kw * c + 2 * c + winp + winp * (kp + PD_XPAD) +
                              winp * (c + 4) + c * (kp + PD_WPAD);
        if (floats * sizeof(float) <= PD_SMEM_MAX) {
            *ob = b; *rh = h; *rw = w;
            return floats * sizeof(float);
        }
    }
    return 0;
}

extern "C" int cu_pwdw_ok(const struct cu_pwdw_args *a)
{
    const struct conv_geom *g = a ? &a->g : NULL;
    int ob, rh, rw;
    return a && g->cin >= 8 && g->cin % 8 == 0 && g->cout == g->cin && a->cin >= 1 &&
           a->cin <= 256 && g->n >= 1 && g->ih >= 1 && g->iw >= 1 && g->kh >= 1 &&
           g->kh <= PD_MAX_K && g->kw >= 1 && g->kw <= PD_MAX_K && g->sh >= 1 &&
           g->sh <= PD_MAX_S && g->sw >= 1 && g->sw <= PD_MAX_S && g->dh == 1 && g->dw == 1 &&
           g->oh >= 1 && g->ow >= 1 && g->pad_top >= 0 && g->pad_left >= 0 &&
           g->pad_top < g->kh && g->pad_left < g->kw && a->wp && a->wd &&
           pd_plan(a, &ob, &rh, &rw) > 0;
}

template <int K, int S>
static int pd_launch(const pd_k &k, dim3 grid, size_t smem, cudaStream_t s)
{
    /* per device context, and not a stream operation: safe while capturing */
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(k_pwdw<K, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             PD_SMEM_MAX) != cudaSuccess) {
        cudaGetLastError();
        return VR_ECUDA;
    }
    k_pwdw<K, S><<<grid, PD_THREADS, smem, s>>>(k);
    return 0;
}

extern "C" int cu_pwdw_dt(const struct cu_pwdw_args *a, unsigned dt, cudaStream_t s)
{
    if (!cu_pwdw_ok(a) || !a->in || !a->out ||
        (size_t)a->g.n * a->g.ih * a->g.iw * (a->cin > a->g.cin ? a->cin : a->g.cin) >
            0x7fffffffu)
        return VR_EINVAL;
    pd_k k = { *a, 0, 0, 0, dt };
    if (a->cin == a->g.cin && (a->cin == 16 || a->cin == 8) && a->g.kh <= 3 && a->g.kw <= 3) {
        k.ob = PQ_B;
        k.rh = (PQ_B - 1) * a->g.sh + a->g.kh;
        k.rw = (PQ_B - 1) * a->g.sw + a->g.kw;
        dim3 grid((a->g.ow + PQ_B - 1) / PQ_B, (a->g.oh + PQ_B - 1) / PQ_B, a->g.n);
        if (a->cin == 16)
            k_pwdw_sq<16><<<grid, PQ_B * PQ_B * 4, 0, s>>>(k);
        else
            k_pwdw_sq<8><<<grid, PQ_B * PQ_B * 2, 0, s>>>(k);
        return cu_check_launch();
    }
    const size_t smem = pd_plan(a, &k.ob, &k.rh, &k.rw);
    dim3 grid((a->g.ow + k.ob - 1) / k.ob, (a->g.oh + k.ob - 1) / k.ob, a->g.n);
    const struct conv_geom *g = &a->g;
    const int sq = g->kh == g->kw && g->sh == g->sw ? g->kh * 10 + g->sh : 0;
    /* the selfie encoder's depthwise geometries compiled in */
    int rc = sq == 32 ? pd_launch<3, 2>(k, grid, smem, s)
             : sq == 31 ? pd_launch<3, 1>(k, grid, smem, s)
             : sq == 52 ? pd_launch<5, 2>(k, grid, smem, s)
                        : pd_launch<0, 0>(k, grid, smem, s);
    if (rc)
        return rc;
    return cu_check_launch();
}

extern "C" int cu_pwdw(const struct cu_pwdw_args *a, int f16, cudaStream_t s)
{
    return cu_pwdw_dt(a, f16 ? CU_DT_ALL : 0, s);
}

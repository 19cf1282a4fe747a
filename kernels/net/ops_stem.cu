/*
 * ops_stem.cu - the network's first layer: CONV_2D from the RGB tile,
 * 3 input channels, 3x3, stride 2, 16 outputs, any padding.
 *
 * C twin: ref_stem (ops_stem_ref.c), ref_conv2d's arithmetic plus the pool
 * sums; cu_conv2d_x sends this geometry here. A thread block computes a 16x32 block of the output:
 *   0. the input window (33 x 65 pixels x 3 channels) to shared memory,
 *      xs[ci][row][parity][col]: split by column parity, so the stride-2
 *      taps of consecutive pixels are consecutive words. A thread a column
 *      of the window (its 33 loads issued before its stores), the address
 *      one add a row; the float32 weights as float16 hi / lo halves.
 *   1. the conv as a GEMM on the tensor cores (ops_mma.cuh): M = the 512
 *      pixels, K = the 27 taps in the generic conv's order (ky, kx, ci),
 *      padded to 32, N = 16. A warp takes 4 m-tiles of 16 pixels (a row
 *      of 16 columns); a lane's 8 taps of each pixel sit at 8 fixed offsets
 *      from the pixel in xs, and the weights' fragments stay in registers.
 *      Inputs and weights split into float16 hi + lo, three products
 *      (~1e-6 from float32 arithmetic; two for float16 inputs, lo = 0).
 *   2. bias, activations, stored; the pool sums.
 * The previous kernel summed the taps on the CUDA cores, 2 pixels x 16
 * channels a thread: ncu on an H100 (32 tiles of 256x256) counted 24.2 M
 * warp instructions (the 14 M FMAs and their operand loads), 80 registers
 * with spills, issue-bound at 0.57 warps issued a cycle a scheduler,
 * 56 us, 10% of the network. The tensor cores take the FMAs; what is left
 * is the window's loads and the output's stores (62-64 registers, no
 * spills: 4 blocks an SM). Summation order: the tensor cores' (bias
 * first, then the taps k-step by k-step), not the generic kernel's tap by
 * tap: results differ from it by float32 rounding.
 *
 * With `pool`, each thread block also writes the sums of its output pixels
 * (as stored) per channel, pool[n][block][16] in a fixed order: the decoder's
 * squeeze-excite pool over this map then adds 32 numbers a channel instead
 * of reading 1 MB a tile again (cu_se_args.in2_part).
 */
#include "ops_mma.cuh"

#define STEM_CIN CU_STEM_CIN       /* ops_fused.h: shared with the twin */
#define STEM_COUT CU_STEM_COUT
#define STEM_TAPS (9 * STEM_CIN)
#define STEM_KP 32                    /* taps padded to two k-steps of 16 */
#define STEM_WPAD 8                   /* half row padding of the staged weights */
#define STEM_TH CU_STEM_TH            /* output rows a block: 8 warps x 2 */
#define STEM_TW CU_STEM_TW            /* output columns a block: 2 m-tiles */
#define STEM_WR (2 * STEM_TH + 1)     /* input window rows */
#define STEM_WC (2 * STEM_TW + 1)     /* input window columns */
#define STEM_WQ (STEM_WC * STEM_CIN)  /* floats of one window row */
#define STEM_HC (STEM_TW + 1)         /* columns of one parity */
#define STEM_RS (2 * STEM_HC)         /* xs: floats a row */
/* floats a channel: 7 past the window rows, so that a warp's 8 reads of
 * a pixel row (4 taps x 8 pixels each) take 11 bank wavefronts, not 24 */
#define STEM_CS (STEM_WR * STEM_RS + 7)
#define STEM_THREADS 256

/* The input window's float at channel ci, row r, column c. */
__device__ __forceinline__ int stem_at(int ci, int r, int c)
{
    return ci * STEM_CS + r * STEM_RS + (c & 1) * STEM_HC + (c >> 1);
}

/* Tap k's float in xs, from the pixel's top-left (ky = kx = ci = 0). */
__device__ __forceinline__ int stem_tap(int k)
{
    const int tap = k / STEM_CIN, ci = k - tap * STEM_CIN, ky = tap / 3, kx = tap - ky * 3;
    return k < STEM_TAPS ? stem_at(ci, ky, kx) : 0;
}

/* Stores the pair (a, b) at p and leaves in a, b the values as stored. */
__device__ __forceinline__ void stem_st2(float *p, float &a, float &b)
{
    *reinterpret_cast<float2 *>(p) = make_float2(a, b);
}
__device__ __forceinline__ void stem_st2(__half *p, float &a, float &b)
{
    const __half2 h = __floats2half2_rn(a, b);
    *reinterpret_cast<__half2 *>(p) = h;
    const float2 f = __half22float2(h);
    a = f.x;
    b = f.y;
}

template <typename TI, typename TO>
__global__ void __launch_bounds__(STEM_THREADS, 4)
k_stem(struct conv_geom g, const TI *__restrict__ in, const float *__restrict__ w,
       const float *__restrict__ b, int act1, int act2, TO *__restrict__ out,
       float *__restrict__ pool)
{
    __shared__ float xs[STEM_CIN * STEM_CS];
    __shared__ __align__(16) __half wh[STEM_COUT * (STEM_KP + STEM_WPAD)];
    __shared__ __align__(16) __half wl[STEM_COUT * (STEM_KP + STEM_WPAD)];
    __shared__ float bs[STEM_COUT];
    __shared__ float warp_sum[STEM_THREADS / 32][STEM_COUT];
    const int tid = threadIdx.x, n = blockIdx.z;
    const int oy0 = blockIdx.y * STEM_TH, ox0 = blockIdx.x * STEM_TW;
    const int iy0 = oy0 * 2 - g.pad_top, ix0 = ox0 * 2 - g.pad_left;

    /* 0. a thread a column q of the window rows (a row's 65 pixels x 3
     * channels are contiguous in memory): all 33 loads before the first
     * store, so their latencies overlap */
    if (tid < STEM_WQ) {
        const int col = tid / STEM_CIN, ci = tid - col * STEM_CIN, ix = ix0 + col;
        const size_t rs = (size_t)g.iw * STEM_CIN;
        const bool in_col = ix >= 0 && ix < g.iw;
        const TI *p = in + (size_t)n * g.ih * rs + ci +
                      ((long long)iy0 * (long long)rs + ix * STEM_CIN);
        float v[STEM_WR];
#pragma unroll
        for (int r = 0; r < STEM_WR; r++, p += rs)
            v[r] = in_col && (unsigned)(iy0 + r) < (unsigned)g.ih ? ld1(p) : 0.0f;
        float *dst = xs + stem_at(ci, 0, col);
#pragma unroll
        for (int r = 0; r < STEM_WR; r++)
            dst[r * STEM_RS] = v[r];
    }
    mma_stage_hilo(w, NULL, STEM_COUT, STEM_TAPS, STEM_KP, STEM_WPAD, wh, wl, STEM_THREADS);
    if (tid < STEM_COUT)
        bs[tid] = b ? b[tid] : 0.0f;
    __syncthreads();

    /* 1. lane (gr, t) of the fragments (ops_pwdw.cu pd_conv1x1): A rows gr
     * and gr + 8 (pixels), columns 2t, 2t+1, 2t+8, 2t+9 of each k-step (taps);
     * C columns (channels) 2t, 2t+1 of each n-tile */
    const int lane = tid & 31, warp = tid >> 5, gr = lane >> 2, t = lane & 3;
    constexpr int WS = STEM_KP + STEM_WPAD;
    uint32_t bh[2][2][2], bl[2][2][2];   /* [k-step][n-tile][reg] */
#pragma unroll
    for (int ks = 0; ks < 2; ks++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const int o = (8 * nt + gr) * WS + 16 * ks + 2 * t;
            bh[ks][nt][0] = *reinterpret_cast<const uint32_t *>(wh + o);
            bh[ks][nt][1] = *reinterpret_cast<const uint32_t *>(wh + o + 8);
            bl[ks][nt][0] = *reinterpret_cast<const uint32_t *>(wl + o);
            bl[ks][nt][1] = *reinterpret_cast<const uint32_t *>(wl + o + 8);
        }
    float bias[2][2];
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++)
            bias[nt][e] = bs[8 * nt + 2 * t + e];
    /* the lane's 8 taps (slot s: k-step s >> 2, column 2t + 0, 1, 8, 9) as
     * offsets in xs from the warp's first pixel row; taps 27..31 read 0 */
    int xo[8];
#pragma unroll
    for (int s = 0; s < 8; s++)
        xo[s] = stem_tap(16 * (s >> 2) + 2 * t + (s & 1) + 8 * ((s >> 1) & 1)) +
                2 * (2 * warp) * STEM_RS + gr;
    const bool k24 = 24 + 2 * t < STEM_TAPS, k25 = 25 + 2 * t < STEM_TAPS;

    float psum[2][2] = { { 0.0f, 0.0f }, { 0.0f, 0.0f } };   /* [n-tile][e]: pool */
#pragma unroll
    for (int r = 0; r < 2; r++)           /* output row 2 * warp + r */
#pragma unroll
        for (int h = 0; h < 2; h++) {     /* columns 16h .. 16h + 15 */
            const int m0 = 2 * r * STEM_RS + 16 * h;
            float acc[2][4];
#pragma unroll
            for (int nt = 0; nt < 2; nt++) {
                acc[nt][0] = acc[nt][2] = bias[nt][0];
                acc[nt][1] = acc[nt][3] = bias[nt][1];
            }
#pragma unroll
            for (int ks = 0; ks < 2; ks++) {
                float a[2][4];   /* [pixel row gr, gr + 8][slot] */
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int s = 0; s < 4; s++)
                        a[i][s] = xs[xo[4 * ks + s] + m0 + 8 * i];
                if (ks == 1) {
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        a[i][2] = k24 ? a[i][2] : 0.0f;
                        a[i][3] = k25 ? a[i][3] : 0.0f;
                    }
                }
                uint32_t ah[4], al[4];
                mma_split(make_float2(a[0][0], a[0][1]), ah[0], al[0]);
                mma_split(make_float2(a[1][0], a[1][1]), ah[1], al[1]);
                mma_split(make_float2(a[0][2], a[0][3]), ah[2], al[2]);
                mma_split(make_float2(a[1][2], a[1][3]), ah[3], al[3]);
#pragma unroll
                for (int nt = 0; nt < 2; nt++) {
                    if (sizeof(TI) == 4)   /* float16 inputs: al = 0 */
                        mma_16816(acc[nt], al, bh[ks][nt][0], bh[ks][nt][1]);
                    mma_16816(acc[nt], ah, bl[ks][nt][0], bl[ks][nt][1]);
                    mma_16816(acc[nt], ah, bh[ks][nt][0], bh[ks][nt][1]);
                }
            }

            /* 2. pixels (oy, ox) and (oy, ox + 8), channels 8nt + 2t + e */
            float v[8];
#pragma unroll
            for (int j = 0; j < 8; j++)
                v[j] = acc[j >> 2][j & 3];
            act_vec(v, act1);
            act_vec(v, act2);
            const int oy = oy0 + 2 * warp + r, ox = ox0 + 16 * h + gr;
            if (oy >= g.oh)
                continue;
            TO *o = out + (((size_t)n * g.oh + oy) * g.ow + ox) * STEM_COUT + 2 * t;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                if (ox + 8 * i >= g.ow)
                    continue;
#pragma unroll
                for (int nt = 0; nt < 2; nt++) {
                    float &v0 = v[4 * nt + 2 * i], &v1 = v[4 * nt + 2 * i + 1];
                    stem_st2(o + 8 * i * STEM_COUT + 8 * nt, v0, v1);
                    psum[nt][0] += v0;
                    psum[nt][1] += v1;
                }
            }
        }

    if (!pool)
        return;
    /* the block's channel sums: a lane's pixels in the order above, the
     * lanes of a warp (same t) by a shuffle tree, the warps in order */
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float s = psum[nt][e];
#pragma unroll
            for (int off = 4; off < 32; off <<= 1)
                s += __shfl_xor_sync(0xffffffffu, s, off);
            if (gr == 0)
                warp_sum[warp][8 * nt + 2 * t + e] = s;
        }
    __syncthreads();
    if (tid < STEM_COUT) {
        float s = 0.0f;
        for (int k = 0; k < STEM_THREADS / 32; k++)
            s += warp_sum[k][tid];
        pool[((size_t)n * gridDim.x * gridDim.y + blockIdx.y * gridDim.x + blockIdx.x) *
                 STEM_COUT + tid] = s;
    }
}

extern "C" int cu_stem_ok(const struct conv_geom *g, const void *out)
{
    return g && g->cin == STEM_CIN && g->cout == STEM_COUT && g->kh == 3 && g->kw == 3 &&
           g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->n <= 65535 &&
           cu_aligned16(out);
}

extern "C" int cu_stem_parts(const struct conv_geom *g)
{
    return ((g->ow + STEM_TW - 1) / STEM_TW) * ((g->oh + STEM_TH - 1) / STEM_TH);
}

extern "C" int cu_stem(const struct conv_geom *g, const void *in, int in_f16, const float *w,
                       const float *b, int act1, int act2, void *out, int out_f16, float *pool,
                       cudaStream_t s)
{
    if (!cu_stem_ok(g, out) || !in || !w)
        return VR_EINVAL;
    dim3 grid((unsigned)(g->ow + STEM_TW - 1) / STEM_TW, (unsigned)(g->oh + STEM_TH - 1) / STEM_TH,
              (unsigned)g->n);
#define STEM(TI, TO) \
    k_stem<TI, TO><<<grid, STEM_THREADS, 0, s>>>(*g, (const TI *)in, w, b, act1, act2, (TO *)out, \
                                                 pool)
    if (in_f16 && out_f16)
        STEM(__half, __half);
    else if (in_f16)
        STEM(__half, float);
    else if (out_f16)
        STEM(float, __half);
    else
        STEM(float, float);
#undef STEM
    return cu_check_launch();
}

/*
 * ops_stem.cu - the network's first layer: CONV_2D from the RGB tile,
 * 3 input channels, 3x3, stride 2, 16 outputs, any padding.
 *
 * C twin: ref_conv2d (ops_ref.c), the generic conv's; cu_conv2d_x sends
 * this geometry here. The generic kernel gave each thread one output pixel
 * and read its 27 inputs from device memory with strided scalar loads; it
 * took 0.11 ms for a batch of 64 tiles against ~0.03 ms of memory traffic.
 * Here a thread block stages the input window of a 16x32 output block in
 * shared memory with coalesced loads, split by column parity so that the
 * stride-2 taps of a warp read consecutive words, and each thread computes
 * two output pixels (16 channels each) per weight load. Taps are summed in
 * the generic kernel's order (ky, kx, ci), outside-the-map taps as zeros.
 *
 * With `pool`, each thread block also writes the sums of its output pixels
 * (as stored) per channel, pool[n][block][16] in a fixed order: the decoder's
 * squeeze-excite pool over this map then adds 32 numbers a channel instead
 * of reading 1 MB a tile again (cu_se_args.in2_part).
 */
#include "ops_cuda_dev.cuh"

#define STEM_CIN 3
#define STEM_COUT 16
#define STEM_TAPS (9 * STEM_CIN)
#define STEM_TH 16                    /* output rows a block: 8 warps x 2 */
#define STEM_TW 32                    /* output columns a block: one per lane */
#define STEM_WR (2 * STEM_TH + 1)     /* input window rows */
#define STEM_WC (2 * STEM_TW + 1)     /* input window columns */
#define STEM_HC (STEM_TW + 1)         /* columns of one parity */
#define STEM_WIN (STEM_WR * STEM_WC * STEM_CIN)
#define STEM_THREADS 256
#define STEM_LOADS ((STEM_WIN + STEM_THREADS - 1) / STEM_THREADS)

/* v as a TO buffer holds it. */
template <typename TO>
__device__ __forceinline__ float stored_value(float v)
{
    return sizeof(TO) == 2 ? __half2float(__float2half_rn(v)) : v;
}

/* The thread block's channel sums of its outputs (a thread's two pixels,
 * those inside the map, as stored) to dst[16]: each warp's by a shuffle
 * tree, then the warps' in order (the same bits every run). */
template <typename TO>
__device__ __forceinline__ void stem_pool(const float (&acc)[2][STEM_COUT], bool in0, bool in1,
                                          float *dst)
{
    __shared__ float warp_sum[STEM_THREADS / 32][STEM_COUT];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int j = 0; j < STEM_COUT; j++) {
        float v = (in0 ? stored_value<TO>(acc[0][j]) : 0.0f) +
                  (in1 ? stored_value<TO>(acc[1][j]) : 0.0f);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0)
            warp_sum[warp][j] = v;
    }
    __syncthreads();
    if (threadIdx.x < STEM_COUT) {
        float s = 0.0f;
        for (int k = 0; k < STEM_THREADS / 32; k++)
            s += warp_sum[k][threadIdx.x];
        dst[threadIdx.x] = s;
    }
}

template <typename TI, typename TO>
__global__ void __launch_bounds__(STEM_THREADS, 3) k_stem(struct conv_geom g, const TI *__restrict__ in,
                                              const float *__restrict__ w,
                                              const float *__restrict__ b, int act1, int act2,
                                              TO *__restrict__ out, float *__restrict__ pool)
{
    __shared__ float xs[STEM_CIN][STEM_WR][2][STEM_HC];
    __shared__ __align__(16) float ws[STEM_TAPS][STEM_COUT];   /* [tap][cout]: broadcasts */
    __shared__ float bs[STEM_COUT];
    const int tid = threadIdx.x, n = blockIdx.z;
    const int oy0 = blockIdx.y * STEM_TH, ox0 = blockIdx.x * STEM_TW;
    const int iy0 = oy0 * 2 - g.pad_top, ix0 = ox0 * 2 - g.pad_left;
    const TI *inb = in + (size_t)n * g.ih * g.iw * STEM_CIN;

    for (int i = tid; i < STEM_TAPS * STEM_COUT; i += STEM_THREADS) {
        int co = i / STEM_TAPS;
        ws[i - co * STEM_TAPS][co] = w[i];
    }
    if (tid < STEM_COUT)
        bs[tid] = b ? b[tid] : 0.0f;
    /* row by row, each row's 65 pixels x 3 channels contiguous in memory;
     * all of a thread's loads issued before the first store, so their
     * latencies overlap (a load-store loop waited for each in turn) */
    float v[STEM_LOADS];
#pragma unroll
    for (int k = 0; k < STEM_LOADS; k++) {
        int i = tid + k * STEM_THREADS;
        int r = i / (STEM_WC * STEM_CIN), q = i - r * (STEM_WC * STEM_CIN);
        int col = q / STEM_CIN, ci = q - col * STEM_CIN;
        int iy = iy0 + r, ix = ix0 + col;
        v[k] = i < STEM_WIN && iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw
                   ? ld1(inb + ((size_t)iy * g.iw + ix) * STEM_CIN + ci) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < STEM_LOADS; k++) {
        int i = tid + k * STEM_THREADS;
        int r = i / (STEM_WC * STEM_CIN), q = i - r * (STEM_WC * STEM_CIN);
        int col = q / STEM_CIN, ci = q - col * STEM_CIN;
        if (i < STEM_WIN)
            xs[ci][r][col & 1][col >> 1] = v[k];
    }
    __syncthreads();

    const int tx = tid & 31, ty = tid >> 5;   /* pixels (ty, tx) and (ty + 8, tx) */
    float acc[2][STEM_COUT];
#pragma unroll
    for (int j = 0; j < STEM_COUT; j++)
        acc[0][j] = acc[1][j] = bs[j];
#pragma unroll
    for (int ky = 0; ky < 3; ky++)
#pragma unroll
        for (int kx = 0; kx < 3; kx++)
#pragma unroll
            for (int ci = 0; ci < STEM_CIN; ci++) {
                float x0 = xs[ci][2 * ty + ky][kx & 1][tx + (kx >> 1)];
                float x1 = xs[ci][2 * (ty + 8) + ky][kx & 1][tx + (kx >> 1)];
                const float4 *wp =
                    reinterpret_cast<const float4 *>(ws[(ky * 3 + kx) * STEM_CIN + ci]);
#pragma unroll
                for (int q = 0; q < STEM_COUT / 4; q++) {
                    float4 w4 = wp[q];
                    acc[0][4 * q] = fmaf(x0, w4.x, acc[0][4 * q]);
                    acc[0][4 * q + 1] = fmaf(x0, w4.y, acc[0][4 * q + 1]);
                    acc[0][4 * q + 2] = fmaf(x0, w4.z, acc[0][4 * q + 2]);
                    acc[0][4 * q + 3] = fmaf(x0, w4.w, acc[0][4 * q + 3]);
                    acc[1][4 * q] = fmaf(x1, w4.x, acc[1][4 * q]);
                    acc[1][4 * q + 1] = fmaf(x1, w4.y, acc[1][4 * q + 1]);
                    acc[1][4 * q + 2] = fmaf(x1, w4.z, acc[1][4 * q + 2]);
                    acc[1][4 * q + 3] = fmaf(x1, w4.w, acc[1][4 * q + 3]);
                }
            }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int oy = oy0 + ty + 8 * h, ox = ox0 + tx;
        if (oy >= g.oh || ox >= g.ow)
            continue;
        act_vec(acc[h], act1);
        act_vec(acc[h], act2);
        TO *o = out + (((size_t)n * g.oh + oy) * g.ow + ox) * STEM_COUT;
        st8(o, acc[h]);
        st8(o + 8, acc[h] + 8);
    }
    if (pool)
        stem_pool<TO>(acc, oy0 + ty < g.oh && ox0 + tx < g.ow,
                      oy0 + ty + 8 < g.oh && ox0 + tx < g.ow,
                      pool + ((size_t)n * gridDim.x * gridDim.y + blockIdx.y * gridDim.x +
                              blockIdx.x) * STEM_COUT);
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

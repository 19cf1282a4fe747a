/*
 * ops_mma.cuh - the tensor-core primitives of the convs that keep their
 * input in shared memory (ops_block.cu, ops_pwdw.cu, ops_stem.cu,
 * ops_tail.cu, ops_pointwise.cu). A float32 operand is split into float16
 * hi + lo parts and three m16n8k16 products (hi*hi + hi*lo + lo*hi)
 * accumulate in float32: ~1e-6 from float32 arithmetic, where plain
 * float16 inputs would move the mask by ~0.03. Private to the kernels'
 * .cu files.
 */
#ifndef VR_OPS_MMA_CUH
#define VR_OPS_MMA_CUH

#include "ops_cuda_dev.cuh"

#include <cuda_fp16.h>

/* x = hi + lo, both float16: the pair carries ~22 bits of x's 24. */
__device__ __forceinline__ void mma_split(float2 x, uint32_t &hi, uint32_t &lo)
{
    const __half2 h = __floats2half2_rn(x.x, x.y);
    const float2 hf = __half22float2(h);
    const __half2 l = __floats2half2_rn(x.x - hf.x, x.y - hf.y);
    hi = *reinterpret_cast<const uint32_t *>(&h);
    lo = *reinterpret_cast<const uint32_t *>(&l);
}

/* The A fragment of a 16x16 tile as hi / lo parts: rows a0 (g) and a1
 * (g + 8) of the tile, each at this lane's column 2t (float32). */
__device__ __forceinline__ void mma_split_a(const float *a0, const float *a1, uint32_t ah[4],
                                            uint32_t al[4])
{
    mma_split(*reinterpret_cast<const float2 *>(a0), ah[0], al[0]);
    mma_split(*reinterpret_cast<const float2 *>(a1), ah[1], al[1]);
    mma_split(*reinterpret_cast<const float2 *>(a0 + 8), ah[2], al[2]);
    mma_split(*reinterpret_cast<const float2 *>(a1 + 8), ah[3], al[3]);
}

/* Stages w [n][k] (float32, times scale[k] if given) in shared memory as
 * float16 hi and lo parts [n][kp + pad] (columns k..kp-1 zero; the pad
 * spreads a fragment's rows over the banks): the B operands of the split
 * products. All `nthreads` threads of the block call it. */
__device__ __forceinline__ void mma_stage_hilo(const float *w, const float *scale, int n, int k,
                                               int kp, int pad, __half *wh, __half *wl,
                                               int nthreads)
{
    const int ks = kp + pad;
    for (int i = threadIdx.x; i < n * kp; i += nthreads) {
        const int r = i / kp, col = i - r * kp;
        float v = col < k ? __ldg(w + r * k + col) : 0.0f;
        if (scale && col < k)
            v *= scale[col];
        const __half hi = __float2half_rn(v);
        wh[r * ks + col] = hi;
        wl[r * ks + col] = __float2half_rn(v - __half2float(hi));
    }
}

__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* T[p][o] = mask[p] ? act2(act1(X[p] . w[o] + bp[o])) : 0 for the winp
 * (a multiple of 16) pixels of X (row stride xs floats, kp columns, those
 * past the input's channels zero), w staged by mma_stage_hilo with row pad
 * WPAD: a warp takes 16 pixels, splits their inputs into float16 fragments
 * once (KS k-steps of 16; KS = 0: any kp, re-split for each group of 8
 * outputs) and runs every group of outputs. With KS > 0, T may be X (same
 * stride): a warp has read all of its rows before it writes them. NT:
 * the block's threads. mask NULL: every pixel. */
template <int KS, int NT, int WPAD>
__device__ __forceinline__ void mma_conv1x1(const float *X, int xs, int kp, const __half *Wh,
                                            const __half *Wl, int c, const float *Bp,
                                            const float *mask, int act1, int act2, float *T,
                                            int ts, int winp)
{
    constexpr int KR = KS > 0 ? KS : 1;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, ws = kp + WPAD;
    for (int m0 = (threadIdx.x >> 5) * 16; m0 < winp; m0 += (NT / 32) * 16) {
        uint32_t ah[KR][4], al[KR][4];
        const float *a0 = X + (m0 + g) * xs + 2 * t, *a1 = a0 + 8 * xs;
        if (KS > 0) {
#pragma unroll
            for (int k = 0; k < KR; k++)
                mma_split_a(a0 + 16 * k, a1 + 16 * k, ah[k], al[k]);
            __syncwarp();
        }
        const float m_lo = mask ? mask[m0 + g] : 1.0f, m_hi = mask ? mask[m0 + g + 8] : 1.0f;
        for (int n0 = 0; n0 < c; n0 += 8) {
            float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            const int ks_n = KS > 0 ? KS : kp / 16;
#pragma unroll
            for (int k = 0; k < ks_n; k++) {
                const int kk = KS > 0 ? k : 0;
                if (KS == 0)
                    mma_split_a(a0 + 16 * k, a1 + 16 * k, ah[0], al[0]);
                const int off = (n0 + g) * ws + 16 * k + 2 * t;
                const uint32_t bh0 = *reinterpret_cast<const uint32_t *>(Wh + off);
                const uint32_t bh1 = *reinterpret_cast<const uint32_t *>(Wh + off + 8);
                const uint32_t bl0 = *reinterpret_cast<const uint32_t *>(Wl + off);
                const uint32_t bl1 = *reinterpret_cast<const uint32_t *>(Wl + off + 8);
                mma_16816(acc, al[kk], bh0, bh1);
                mma_16816(acc, ah[kk], bl0, bl1);
                mma_16816(acc, ah[kk], bh0, bh1);
            }
            /* the activations' switches once for the 4 values; rows g and
             * g + 8 get columns o, o + 1 as one 8-byte store each */
            const int o = n0 + 2 * t;
            const float2 b = *reinterpret_cast<const float2 *>(Bp + o);
            float v[4] = { acc[0] + b.x, acc[1] + b.y, acc[2] + b.x, acc[3] + b.y };
            act_vec(v, act1);
            act_vec(v, act2);
            *reinterpret_cast<float2 *>(T + (m0 + g) * ts + o) =
                m_lo != 0.0f ? make_float2(v[0], v[1]) : make_float2(0.0f, 0.0f);
            *reinterpret_cast<float2 *>(T + (m0 + g + 8) * ts + o) =
                m_hi != 0.0f ? make_float2(v[2], v[3]) : make_float2(0.0f, 0.0f);
        }
    }
}

#endif

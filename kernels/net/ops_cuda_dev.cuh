/*
 * ops_cuda_dev.cuh - device helpers shared by the kernels of ops_*.cu:
 * loads and stores of float / __half activations one, two or eight at a
 * time (8 halves = one 16-byte access), the activations, and the launcher's
 * error check. Private to the kernels' .cu files.
 */
#ifndef VR_OPS_CUDA_DEV_CUH
#define VR_OPS_CUDA_DEV_CUH

/* the C headers carry no extern "C" of their own */
extern "C" {
#include "ops_ref.h"
#include "vr_err.h"
}
#include "ops_cuda.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* ---- loads and stores, float32 arithmetic ---- */

__device__ __forceinline__ float ld1(const float *p) { return *p; }
__device__ __forceinline__ float ld1(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ void st1(float *p, float v) { *p = v; }
__device__ __forceinline__ void st1(__half *p, float v) { *p = __float2half_rn(v); }

/* 8 consecutive values; p must be 16-byte aligned for __half, 16 for float. */
__device__ __forceinline__ void ld8(const float *p, float v[8])
{
    float4 a = *reinterpret_cast<const float4 *>(p);
    float4 b = *reinterpret_cast<const float4 *>(p + 4);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
__device__ __forceinline__ void ld8(const __half *p, float v[8])
{
    uint4 u = *reinterpret_cast<const uint4 *>(p);
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 f = __half22float2(h[k]);
        v[2 * k] = f.x;
        v[2 * k + 1] = f.y;
    }
}
__device__ __forceinline__ void st8(float *p, const float v[8])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    *reinterpret_cast<float4 *>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void st8(__half *p, const float v[8])
{
    uint4 u;
    __half2 *h = reinterpret_cast<__half2 *>(&u);
#pragma unroll
    for (int k = 0; k < 4; k++)
        h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
    *reinterpret_cast<uint4 *>(p) = u;
}

/* Runtime-typed access: `f16` says whether p holds __half or float. The
 * flag is uniform across a launch, so the branch costs nothing measurable
 * in these memory-bound kernels and lets one tensor be float32 while its
 * neighbours are float16 (the network's mixed precision). */
__device__ __forceinline__ float ldx1(const void *p, int f16, size_t i)
{
    return f16 ? ld1((const __half *)p + i) : ld1((const float *)p + i);
}
__device__ __forceinline__ void ldx8(const void *p, int f16, size_t i, float v[8])
{
    if (f16)
        ld8((const __half *)p + i, v);
    else
        ld8((const float *)p + i, v);
}
/* v[j] *= (mul_ldx8) or += (add_ldx8) the 8 values of p from element i
 * (the prologue's and epilogue's scale and add terms). */
__device__ __forceinline__ void mul_ldx8(const void *p, int f16, size_t i, float v[8])
{
    float s[8];
    ldx8(p, f16, i, s);
#pragma unroll
    for (int j = 0; j < 8; j++)
        v[j] *= s[j];
}
__device__ __forceinline__ void add_ldx8(const void *p, int f16, size_t i, float v[8])
{
    float s[8];
    ldx8(p, f16, i, s);
#pragma unroll
    for (int j = 0; j < 8; j++)
        v[j] += s[j];
}
__device__ __forceinline__ void stx1(void *p, int f16, size_t i, float v)
{
    if (f16)
        st1((__half *)p + i, v);
    else
        st1((float *)p + i, v);
}
__device__ __forceinline__ void stx8(void *p, int f16, size_t i, const float v[8])
{
    if (f16)
        st8((__half *)p + i, v);
    else
        st8((float *)p + i, v);
}

/* ---- activations (enum cu_act) ---- */

__device__ __forceinline__ float act_f(float x, int act)
{
    switch (act) {
    case CU_ACT_NONE: return x;
    case CU_ACT_RELU: return fmaxf(x, 0.0f);
    case CU_ACT_RELU_N1_TO_1: return fminf(fmaxf(x, -1.0f), 1.0f);
    case CU_ACT_RELU6: return fminf(fmaxf(x, 0.0f), 6.0f);
    case CU_ACT_TANH: return tanhf(x);
    case CU_ACT_HSWISH: return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case CU_ACT_LOGISTIC: return 1.0f / (1.0f + expf(-x));
    default: return x;
    }
}

/* The same, small: the common activations inline, the rest a call. act_f
 * inlined at every output of an unrolled loop made the block-chain kernel
 * 614 KB of code, and instruction fetch, not the arithmetic, set its pace
 * (0.34 instructions a cycle); use this one inside unrolled loops. */
__device__ __noinline__ static float act_rare(float x, int act)
{
    return act_f(x, act);
}

__device__ __forceinline__ float act_small(float x, int act)
{
    if (act == CU_ACT_NONE)
        return x;
    if (act == CU_ACT_RELU)
        return fmaxf(x, 0.0f);
    if (act == CU_ACT_HSWISH)
        return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    return act_rare(x, act);
}

/* act over N values held in registers, the switch taken once: small code
 * where N separate act_small calls would each carry their own branches. */
template <int N>
__device__ __forceinline__ void act_vec(float (&v)[N], int act)
{
    switch (act) {
    case CU_ACT_NONE:
        break;
    case CU_ACT_RELU:
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = fmaxf(v[i], 0.0f);
        break;
    case CU_ACT_HSWISH:
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = v[i] * fminf(fmaxf(v[i] + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
        break;
    default:
        for (int i = 0; i < N; i++)
            v[i] = act_rare(v[i], act);
    }
}

/* ---- launch helpers ---- */

static inline int cu_check_launch(void)
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : VR_ECUDA;
}

static inline unsigned cu_blocks(size_t work, unsigned threads)
{
    size_t b = (work + threads - 1) / threads;
    return b > 0x7fffffffu ? 0x7fffffffu : (unsigned)(b ? b : 1);
}

static inline int cu_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

#endif

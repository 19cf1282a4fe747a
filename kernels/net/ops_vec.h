/*
 * ops_vec.h - the small inline helpers the reference ops share (no
 * functions of their own, no state): four floats as a GNU C vector (SSE2
 * at -O2 on x86-64, NEON on arm64; no intrinsics) and TFLite's activation
 * range and clamp, as ops_conv_ref.c and ops_elem_ref.c use them.
 */
#ifndef VR_OPS_VEC_H
#define VR_OPS_VEC_H

#include "model.h"

#include <float.h>
#include <string.h>

typedef float v4 __attribute__((vector_size(16)));

static inline v4 ld4(const float *p)
{
    v4 v;
    memcpy(&v, p, sizeof v); /* unaligned load */
    return v;
}

static inline void st4(float *p, v4 v)
{
    memcpy(p, &v, sizeof v);
}

static inline v4 splat4(float x)
{
    return (v4){ x, x, x, x };
}

typedef int vi4 __attribute__((vector_size(16)));

/* m ? a : b per lane, m from a vector comparison (all ones or zero). */
static inline v4 vsel(vi4 m, v4 a, v4 b)
{
    return (v4)(((vi4)a & m) | ((vi4)b & ~m));
}

/* clampf() per lane, NaN passing through as there. */
static inline v4 vclamp(v4 x, v4 lo, v4 hi)
{
    const v4 y = vsel(x < lo, lo, x);
    return vsel(hi < y, hi, y);
}

/* TFLite's CalculateActivationRange for float: NONE clamps to [lowest,
 * max], so infinities become +-FLT_MAX exactly as there. (TFLite's CPU
 * kernels treat a fused TANH the same way; every op here applies tanhf
 * for it instead, as op_act() documents.) */
static inline void act_range(int act, float *lo, float *hi)
{
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (act == MACT_RELU) {
        *lo = 0.f;
    } else if (act == MACT_RELU6) {
        *lo = 0.f;
        *hi = 6.f;
    } else if (act == MACT_RELU_N1_TO_1) {
        *lo = -1.f;
        *hi = 1.f;
    }
}

/* std::min(std::max(x, lo), hi) with std::max(a, b) = a < b ? b : a. */
static inline float clampf(float x, float lo, float hi)
{
    float y = x < lo ? lo : x;
    return hi < y ? hi : y;
}

#endif

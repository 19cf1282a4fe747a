/*
 * ops_act.c - the activations every reference op applies: tflite's fused
 * ones (op_act, ops_ref.h) and the fused kernels' extended set
 * (ref_act_ext, ops_fused.h: hard-swish and logistic besides). Not a twin
 * of a kernel file: the CUDA kernels apply them in their device helpers
 * (ops_cuda_dev.cuh).
 */
#include "ops_fused.h"
#include "ops_ref.h"
#include "ops_vec.h"

#include <math.h>

float op_act(float x, int act)
{
    if (act == MACT_TANH)
        return tanhf(x);
    float lo, hi;
    act_range(act, &lo, &hi);
    return clampf(x, lo, hi);
}

float ref_act_ext(float x, int act)
{
    switch (act) {
    case CU_ACT_HSWISH: {
        float r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        return x * r / 6.0f;
    }
    case CU_ACT_LOGISTIC:
        return 1.0f / (1.0f + expf(-x));
    default:
        return op_act(x, act);
    }
}

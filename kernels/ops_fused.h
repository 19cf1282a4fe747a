/*
 * ops_fused.h - the fused ops of the GPU network, as argument structs shared
 * by their CUDA kernels (ops_cuda.h) and their plain-C twins
 * (ops_fused_ref.c). The twins are compositions of the ops_ref.h functions:
 * they define what each fused kernel must compute. No CUDA types here, so the
 * CPU-only build compiles the twins too.
 *
 * Pointers are caller-owned; the C twins take float32 host memory, the CUDA
 * kernels device memory of the dtype their `f16` flag names.
 */
#ifndef VR_OPS_FUSED_H
#define VR_OPS_FUSED_H

#include "ops_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Activations the fused kernels apply: tflite's fused ones (enum model_act
 * values 0..4) plus the stand-alone activation ops. */
enum cu_act {
    CU_ACT_NONE = 0, CU_ACT_RELU = 1, CU_ACT_RELU_N1_TO_1 = 2,
    CU_ACT_RELU6 = 3, CU_ACT_TANH = 4,
    CU_ACT_HSWISH = 16, CU_ACT_LOGISTIC = 17
};

/* 1x1 stride-1 convolution with fused prologue and epilogue, for
 * [n][hw][cin] -> [n][hw][cout] (cout a multiple of 8, as in every pointwise
 * conv of the selfie models):
 *   a'  = a, or with rs_h > 0 the RESIZE_BILINEAR of a ([n][rs_h][rs_w][cin])
 *         to the output map out_h x out_w (hw = out_h * out_w), computed as
 *         ref_resize_bilinear does, never written (needs cin % 8 == 0)
 *   x   = a' * a_scale[n][ci] (if a_scale) + b (if b)
 *   v   = act2(act1(w . x + bias))
 *   v   = v * e_scale[n][co] (if e_scale); v = act3(v + res) (if res)
 * w is OHWI [cout][1][1][cin]. All activation buffers have the dtype of
 * `f16`. */
struct cu_pw_args {
    int n, hw, cin, cout;
    const void *a, *a_scale, *b;
    const float *w, *bias;
    int act1, act2;
    const void *e_scale, *res;
    int act3;
    void *out;
    int rs_h, rs_w;             /* resize source size; 0 = no resize */
    int out_h, out_w;           /* output map (with rs_h > 0) */
    int rs_align, rs_half;      /* align_corners, half_pixel_centers */
};

/* Depthwise conv (depth multiplier 1) with fused epilogue:
 * out = act3(act2(act1(dw(in) + bias)) + res) (res optional, same shape as
 * out). */
struct cu_dw_args {
    struct conv_geom g;
    const void *in;
    const float *w, *bias;
    int act2;
    const void *res;
    int act3;
    void *out;
};

/* Squeeze-excite style chain, one block per image: global mean over H,W of
 * in [n][h][w][c] (of in + in2 when in2, a same-shape tensor, is given:
 * the mean is linear, so an ADD feeding the pool never needs writing), then up to CU_SE_MAX_LAYERS fully connected layers
 * (1x1 convs on a 1x1 map), each out = act2(act1(w . v + b)); out is
 * [n][cout of the last layer] (or [n][c] with no layer), dtype of `f16`. */
#define CU_SE_MAX_LAYERS 3
#define CU_SE_MAX_CH 1024
struct cu_se_layer { int cin, cout; const float *w, *bias; int act1, act2; };
struct cu_se_args {
    int n, h, w, c;
    const void *in, *in2;
    int n_layers;
    struct cu_se_layer l[CU_SE_MAX_LAYERS];
    void *out;
};

/* C twins of the fused kernels (ops_fused_ref.c), float32 host memory. */
float ref_act_ext(float x, int act);
void ref_pointwise(const struct cu_pw_args *p);
void ref_dw_fused(const struct cu_dw_args *p);
void ref_se(const struct cu_se_args *p);
void ref_tconv_x(const struct conv_geom *g, const float *in, const float *w,
                 const float *b, int act, float *out);

#ifdef __cplusplus
}
#endif

#endif

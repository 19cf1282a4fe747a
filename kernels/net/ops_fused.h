/*
 * ops_fused.h - the fused ops of the GPU network, as argument structs shared
 * by their CUDA kernels (ops_cuda.h) and their plain-C twins (the X_ref.c
 * beside each X.cu). The twins are compositions of the ops_ref.h functions:
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
 * the mean is linear, so an ADD feeding the pool never needs writing), then
 * up to CU_SE_MAX_LAYERS fully connected layers
 * (1x1 convs on a 1x1 map), each out = act2(act1(w . v + b)); out is
 * [n][cout of the last layer] (or [n][c] with no layer), dtype of `f16`. */
#define CU_SE_MAX_LAYERS 3
#define CU_SE_MAX_CH 1024
#define CU_SE_MAX_RS 1024   /* a deferred resize's small map: rows, columns */
struct cu_se_layer { int cin, cout; const float *w, *bias; int act1, act2; };
struct cu_se_args {
    int n, h, w, c;
    const void *in, *in2;
    int n_layers;
    struct cu_se_layer l[CU_SE_MAX_LAYERS];
    void *out;
    /* in2's sums given instead of in2 (the GPU kernel only; else NULL):
     * float [n][in2_parts][c], summed in part order (cu_stem's pool) */
    const float *in2_part;
    int in2_parts;
    /* in_rs_h > 0: `in` is a [n][in_rs_h][in_rs_w][c] map and the pool is
     * over its bilinear resize to h x w (TFLite's rule, in_rs_align /
     * in_rs_half), never written: the mean is linear, so each small pixel
     * weighs what its taps sum to. in2 (or its sums) stays h x w. */
    int in_rs_h, in_rs_w, in_rs_align, in_rs_half;
};

/* Chained inverted-residual blocks (MobileNetV3's bottleneck) on a small
 * map, one thread block per image with every tensor in shared memory. With
 * x the running [h][w][c] map, each block in order computes
 *   e = act_e2(act_e1(x . we + be))               1x1, c -> ce
 *   d = act_d2(act_d1(dw(e) + bd))                depthwise k x k, stride 1,
 *                                                 SAME, multiplier 1
 *   v = act_s2(act_s1(w2 . act_r2(act_r1(w1 . mean_hw(d) + b1)) + b2))
 *                                                 squeeze-excite, [ce]
 *   y = act_p2(act_p1((d * v) . wp + bp))         1x1, ce -> c
 *   x = residual ? act3(y + x) : y
 * Weights in the model's layouts: we, w1, w2, wp OHWI [cout][1][1][cin],
 * wd [1][k][k][ce]; biases may be NULL. Activations are CU_ACT_* (act_*1
 * the convs' own model_act). in and out are [n][h][w][c], the dtypes of
 * the launcher's flags (float32 in the twin). */
#define CU_IR_MAX_BLOCKS 8
struct cu_ir_block {
    int ce, k, cs;
    const float *we, *be; int act_e1, act_e2;
    const float *wd, *bd; int act_d1, act_d2;
    const float *w1, *b1; int act_r1, act_r2;
    const float *w2, *b2; int act_s1, act_s2;
    const float *wp, *bp; int act_p1, act_p2;
    int residual, act3;
};
struct cu_ir_args {
    int n, h, w, c;
    const void *in;
    void *out;
    int n_blocks;
    struct cu_ir_block b[CU_IR_MAX_BLOCKS];
};

/* A decoder stage in one kernel (the last one, or with `pw` one before it
 * and the next stage's 1x1 conv): per pixel of an h x w map,
 *   x = a * a_scale[n][.] (if a_scale) + b (if b)      prologue, cin channels
 *   t = act_p2(act_p1(x . wp + bp))                    1x1, cin -> c
 *   u = act_d3(act_d2(act_d1(dw(t) + bd)) + t)         depthwise k x k,
 *                                                      stride 1, SAME
 *   out = act_t(tconv(u) + bt)                         Convolution2DTransposeBias
 *                                                      2x2, stride 2, c -> cout
 * out is [n][2h][2w][cout]; wp OHWI [c][1][1][cin], wd [1][k][k][c], wt
 * [cout][2][2][c]. */
struct cu_tail_args {
    int n, h, w, cin, c, k, cout;
    const void *a, *a_scale, *b;
    const float *wp, *bp; int act_p1, act_p2;
    const float *wd, *bd; int act_d1, act_d2, act_d3;
    const float *wt, *bt; int act_t;
    void *out;
    /* b_rs_h > 0: b is a [n][b_rs_h][b_rs_w][cin] map, bilinearly resized
     * to h x w where it is read (TFLite's rule, b_rs_align / b_rs_half) */
    int b_rs_h, b_rs_w, b_rs_align, b_rs_half;
    /* pw > 0: a stage before the last, ending in a 1x1 conv instead of the
     * transpose conv: out [n][h][w][cout] = u . wt + bt with wt OHWI
     * [cout][1][1][c], no activation (act_t unused) */
    int pw;
};

/* A 1x1 conv and the depthwise conv after it, the conv's output never
 * written: t = act_p2(act_p1(in . wp + bp)) (cin -> c), out =
 * act_d2(dw(t)) with g the depthwise geometry (g.act its own activation,
 * any stride, padding from op_conv_geom; g.n, g.cin = g.cout = c). wp OHWI
 * [c][1][1][cin], wd [1][kh][kw][c]. */
struct cu_pwdw_args {
    struct conv_geom g;
    int cin;
    const void *in;
    const float *wp, *bp; int act_p1, act_p2;
    const float *wd, *bd; int act_d2;
    void *out;
};

/* C twins of the fused kernels, float32 host memory: ref_act_ext in
 * ops_act.c, ref_pointwise in ops_pointwise_ref.c, ref_dw_fused and
 * ref_tconv_x in ops_conv_ref.c, ref_se in ops_elem_ref.c. */
float ref_act_ext(float x, int act);
void ref_pointwise(const struct cu_pw_args *p);
void ref_dw_fused(const struct cu_dw_args *p);
/* 0, or VR_ENOMEM when the resize of a deferred `in` cannot be held. */
int ref_se(const struct cu_se_args *p);
/* The twin of the block chain, built from the twins above; 0, or VR_ENOMEM
 * when its scratch cannot be allocated, VR_EINVAL for a bad geometry. */
int ref_ir_chain(const struct cu_ir_args *p);
/* The twin of the decoder tail (ops_tail_ref.c); 0, VR_ENOMEM or VR_EINVAL. */
int ref_tail(const struct cu_tail_args *p);
/* The twin of the pointwise + depthwise kernel (ops_pwdw_ref.c); 0,
 * VR_ENOMEM or VR_EINVAL. */
int ref_pwdw(const struct cu_pwdw_args *p);
void ref_tconv_x(const struct conv_geom *g, const float *in, const float *w,
                 const float *b, int act, float *out);

/* The network's first conv, the stem kernel's (ops_stem.cu, cu_stem) twin
 * (ops_stem_ref.c): 3 -> 16 channels, 3x3, stride 2, any padding, no
 * dilation; out = act2(act1(conv(in) + b)) with ref_conv2d's arithmetic.
 * With `pool` (else NULL) it also writes the per-channel sums of each
 * CU_STEM_TH x CU_STEM_TW block of the output (blocks row-major),
 * pool[n][ref_stem_parts(g)][16], which a later squeeze-excite pool over
 * this map reads (cu_se_args.in2_part). ref_stem_ok says whether the
 * geometry is the stem's (and `out` 16-byte aligned, as the kernel
 * needs); ref_stem returns VR_EINVAL when it is not. */
#define CU_STEM_CIN 3
#define CU_STEM_COUT 16
#define CU_STEM_TH 16   /* output rows a block */
#define CU_STEM_TW 32   /* output columns a block */
int ref_stem_ok(const struct conv_geom *g, const void *out);
int ref_stem_parts(const struct conv_geom *g);
int ref_stem(const struct conv_geom *g, const float *in, const float *w, const float *b,
             int act1, int act2, float *out, float *pool);

#ifdef __cplusplus
}
#endif

#endif

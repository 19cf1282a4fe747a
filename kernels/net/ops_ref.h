/*
 * ops_ref.h - the plain-C reference of every network op (float32, NHWC,
 * batched over n). These are the "C twins": the --cpu backend runs them, and
 * every CUDA kernel in kernels/net/ops_cuda.h has the same arguments (plus a
 * cudaStream_t) and is checked against them. Semantics are TensorFlow Lite's
 * reference kernels, exactly: SAME/VALID padding, strides, dilation, fused
 * activations, AVERAGE_POOL_2D counting only in-bounds taps,
 * RESIZE_BILINEAR's align_corners / half_pixel_centers, and mediapipe's
 * Convolution2DTransposeBias.
 *
 * Each lives in the X_ref.c beside the kernel file X.cu of its CUDA twin
 * (ops_conv_ref.c, ops_elem_ref.c); the activations are ops_act.c.
 *
 * Buffers are caller-owned, never aliased unless stated, and fully written.
 */
#ifndef VR_OPS_REF_H
#define VR_OPS_REF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Geometry of a convolution-like op, filled by op_conv_geom(). */
struct conv_geom {
    int n;                 /* batch */
    int ih, iw, cin;       /* input */
    int oh, ow, cout;      /* output */
    int kh, kw;            /* kernel */
    int sh, sw;            /* strides */
    int dh, dw;            /* dilations (1 = none) */
    int pad_top, pad_left; /* leading padding (trailing is implied) */
    int act;               /* enum model_act */
};

/* Fills output size and padding from TFLite's rules for `padding`
 * (enum model_padding): SAME gives ceil(in/stride), VALID
 * ceil((in - (k-1)*d) / stride), 0 when the window does not fit;
 * pad_top = max(needed, 0) / 2, so an odd total pads one more row at the
 * end. Reads ih, iw, kh, kw, sh, sw, dh and dw. */
void op_conv_geom(struct conv_geom *g, int padding);

/* Output size and cropping of mediapipe's Convolution2DTransposeBias, from
 * g->ih/iw, kh/kw, sh/sw and `padding`: with total = SAME ?
 * max(0, k - (in-1) % s - 1) : 0, out = s*(in-1) + k - total and the
 * leading crop pad_* = total / 2 (for the model's 2x2 stride 2 kernel and an
 * even input, out = in*s; an odd input gives in*s - 1). */
void op_tconv_geom(struct conv_geom *g, int padding);

/* Applies a fused activation (enum model_act) to one value: the clamp of
 * TFLite's ActivationFunctionWithMinMax to [-FLT_MAX, FLT_MAX] (NONE, so
 * infinities become +-FLT_MAX), [0, FLT_MAX], [-1, 1] or [0, 6]; NaN passes
 * through. MACT_TANH applies tanhf; note that TFLite's own CPU
 * kernels ignore a fused TANH (CalculateActivationRange leaves it
 * unclamped), which is why net_create() refuses models that use it. */
float op_act(float x, int act);

/* CONV_2D. w: OHWI [cout][kh][kw][cin]; b: [cout] or NULL. */
void ref_conv2d(const struct conv_geom *g, const float *in, const float *w,
                const float *b, float *out);

/* Repacks CONV_2D weights from OHWI [cout][kh][kw][cin] to HWIO
 * [kh][kw][cin][cout], so the output-channel loop is contiguous. dst has
 * cout*kh*kw*cin floats, caller-owned; src and dst must not alias. */
void op_pack_hwio(const float *w_ohwi, int cout, int kh, int kw, int cin,
                  float *w_hwio);

/* CONV_2D with HWIO weights (op_pack_hwio): the CPU engine's fast path
 * (1x1 stride 1 as a GEMM in 4x8 register tiles; other shapes gather 4
 * interior pixels into a stack patch of at most 18 KiB). Sums in the same
 * order as ref_conv2d (taps fy, fx, ic from 0.0f, then bias, then
 * activation), so both agree bit for bit unless the compiler contracts
 * multiply-adds into FMA differently in the two. */
void ref_conv2d_hwio(const struct conv_geom *g, const float *in, const float *w_hwio,
                     const float *b, float *out);

/* DEPTHWISE_CONV_2D. cout = cin * depth_multiplier; w: [1][kh][kw][cout]. */
void ref_dwconv2d(const struct conv_geom *g, const float *in, const float *w,
                  const float *b, float *out);

/* AVERAGE_POOL_2D (kh,kw = filter size; cin == cout; dh, dw unused): the
 * sum of the in-bounds taps divided by their count, then g->act. A window
 * with no tap in bounds (TFLite fails the op) gives act(0). */
void ref_avgpool(const struct conv_geom *g, const float *in, float *out);

/* MEAN over H and W: out [n][c]. */
void ref_mean_hw(int n, int h, int w, int c, const float *in, float *out);

/* Element-wise, `count` values; in == out allowed. */
void ref_relu(const float *in, float *out, size_t count);
void ref_hard_swish(const float *in, float *out, size_t count); /* x*relu6(x+3)/6 */
void ref_logistic(const float *in, float *out, size_t count);

/* ADD / MUL of a [n][h][w][c] by b, which is either the same shape
 * (b_full != 0) or one value per (n, c) broadcast over H,W
 * (b_full == 0, b is [n][c]). Fused activation `act`. out may alias a. */
void ref_add(int n, int h, int w, int c, const float *a, const float *b,
             int b_full, int act, float *out);
void ref_mul(int n, int h, int w, int c, const float *a, const float *b,
             int b_full, int act, float *out);

/* RESIZE_BILINEAR [n][ih][iw][c] -> [n][oh][ow][c]. */
void ref_resize_bilinear(int n, int ih, int iw, int c, const float *in,
                         int oh, int ow, int align_corners,
                         int half_pixel_centers, float *out);

/* mediapipe Convolution2DTransposeBias: out = bias + sum of in * w scattered
 * with stride; w: OHWI [cout][kh][kw][cin]; b: [cout] (required); g->oh/ow
 * are the output size and g->pad_* the cropped leading rows/cols, as
 * op_tconv_geom() fills them. g->act is ignored (the op has none). */
void ref_tconv_bias(const struct conv_geom *g, const float *in, const float *w,
                    const float *b, float *out);

/* ---- the pose tier's ops (ops_move_ref.c) ---- */

/* PAD with zeros: [n][h][w][c] -> [n][h+ph0+ph1][w+pw0+pw1][c+pc0+pc1]. */
void ref_pad(int n, int h, int w, int c, const float *in, int ph0, int ph1, int pw0,
             int pw1, int pc0, int pc1, float *out);

/* DEPTH_TO_SPACE (TFLite's DCR order): [n][h][w][c] -> [n][h*bs][w*bs][c/(bs*bs)],
 * output (y*bs+dy, x*bs+dx, k) = input (y, x, (dy*bs+dx)*c/(bs*bs) + k). */
void ref_depth_to_space(int n, int h, int w, int c, int bs, const float *in, float *out);

/* MAX_POOL_2D (geometry as ref_avgpool's): the largest in-bounds tap, then
 * g->act; NaN taps are skipped as std::max does in TFLite's kernel. */
void ref_maxpool(const struct conv_geom *g, const float *in, float *out);

/* CONCATENATION of up to three inputs: `outer` rows, each row the ia values
 * of a, then ib of b, then ic of c (c may be NULL when ic == 0). */
void ref_concat3(int outer, const float *a, int ia, const float *b, int ib, const float *c,
                 int ic, float *out);

#ifdef __cplusplus
}
#endif

#endif

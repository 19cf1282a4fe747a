/*
 * ops_cuda.h - the CUDA twin of every op in ops_ref.h, plus the fused kernels
 * the GPU network (net_exec.cu) runs.
 *
 * Each plain op takes the same arguments as its C twin in ops_ref.h plus a
 * cudaStream_t; every pointer is DEVICE memory, caller-owned, fully written,
 * never aliased unless ops_ref.h allows it. Every op has a float32 variant
 * (same name as the twin, cu_ instead of ref_) and a float16 variant (_h):
 * activations stored as IEEE binary16 (vr_half, the bits of CUDA's __half),
 * loaded two or eight at a time (half2 / 16-byte vectors), arithmetic and
 * accumulation in float32. Weights and biases are always float32: they are
 * small and read from shared memory or L1.
 *
 * The fused kernels (second half) have C twins (ops_fused.h, in the X_ref.c
 * beside each X.cu) with the same argument structs, built from the ops_ref.h functions, so a harness can
 * compare them the same way (tests/gpu/).
 *
 * Every launcher returns 0 or a VR_E* code: VR_EINVAL for a geometry the
 * kernel cannot take, VR_ECUDA when the launch failed (cudaGetLastError()).
 * Launches are asynchronous; faults inside a kernel surface at the caller's
 * next synchronisation. Launchers are safe to call during stream capture.
 */
#ifndef VR_OPS_CUDA_H
#define VR_OPS_CUDA_H

#include "ops_ref.h"
#include "ops_fused.h"

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* IEEE 754 binary16, bit-compatible with CUDA's __half. */
typedef uint16_t vr_half;

/* Raises the shared-memory limit of the kernels that may use more than
 * 48 KB. Call once per process and device before capturing a graph (the
 * launchers do it themselves on first use otherwise). Returns 0 or
 * VR_ECUDA. */
int cu_ops_prepare(void);

/* ---- plain ops: float32 ---- */

int cu_conv2d(const struct conv_geom *g, const float *in, const float *w,
              const float *b, float *out, cudaStream_t s);
int cu_dwconv2d(const struct conv_geom *g, const float *in, const float *w,
                const float *b, float *out, cudaStream_t s);
int cu_avgpool(const struct conv_geom *g, const float *in, float *out, cudaStream_t s);
/* the pose tier's ops (ops_move.cu), float32 only yet */
int cu_pad(int n, int h, int w, int c, const float *in, int ph0, int ph1, int pw0, int pw1,
           int pc0, int pc1, float *out, cudaStream_t s);
int cu_depth_to_space(int n, int h, int w, int c, int bs, const float *in, float *out,
                      cudaStream_t s);
int cu_maxpool(const struct conv_geom *g, const float *in, float *out, cudaStream_t s);
int cu_concat3(int outer, const float *a, int ia, const float *b, int ib, const float *c,
               int ic, float *out, cudaStream_t s);
int cu_mean_hw(int n, int h, int w, int c, const float *in, float *out, cudaStream_t s);
int cu_relu(const float *in, float *out, size_t count, cudaStream_t s);
int cu_hard_swish(const float *in, float *out, size_t count, cudaStream_t s);
int cu_logistic(const float *in, float *out, size_t count, cudaStream_t s);
int cu_add(int n, int h, int w, int c, const float *a, const float *b,
           int b_full, int act, float *out, cudaStream_t s);
int cu_mul(int n, int h, int w, int c, const float *a, const float *b,
           int b_full, int act, float *out, cudaStream_t s);
int cu_resize_bilinear(int n, int ih, int iw, int c, const float *in,
                       int oh, int ow, int align_corners,
                       int half_pixel_centers, float *out, cudaStream_t s);
int cu_tconv_bias(const struct conv_geom *g, const float *in, const float *w,
                  const float *b, float *out, cudaStream_t s);

/* ---- plain ops: float16 activations ---- */

int cu_conv2d_h(const struct conv_geom *g, const vr_half *in, const float *w,
                const float *b, vr_half *out, cudaStream_t s);
int cu_dwconv2d_h(const struct conv_geom *g, const vr_half *in, const float *w,
                  const float *b, vr_half *out, cudaStream_t s);
int cu_avgpool_h(const struct conv_geom *g, const vr_half *in, vr_half *out, cudaStream_t s);
int cu_mean_hw_h(int n, int h, int w, int c, const vr_half *in, vr_half *out, cudaStream_t s);
int cu_relu_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s);
int cu_hard_swish_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s);
int cu_logistic_h(const vr_half *in, vr_half *out, size_t count, cudaStream_t s);
int cu_add_h(int n, int h, int w, int c, const vr_half *a, const vr_half *b,
             int b_full, int act, vr_half *out, cudaStream_t s);
int cu_mul_h(int n, int h, int w, int c, const vr_half *a, const vr_half *b,
             int b_full, int act, vr_half *out, cudaStream_t s);
int cu_resize_bilinear_h(int n, int ih, int iw, int c, const vr_half *in,
                         int oh, int ow, int align_corners,
                         int half_pixel_centers, vr_half *out, cudaStream_t s);
int cu_tconv_bias_h(const struct conv_geom *g, const vr_half *in, const float *w,
                    const float *b, vr_half *out, cudaStream_t s);

/* ---- mixed precision and fused kernels ----
 * `in_f16` / `out_f16` say whether a buffer holds vr_half (1) or float (0);
 * the network's input and output are float32 while its activations may be
 * float16, so the first and last kernels convert on the fly. */

/* Any CONV_2D with fused activations: out = act2(act1(conv(in) + b)). */
int cu_conv2d_x(const struct conv_geom *g, const void *in, int in_f16,
                const float *w, const float *b, int act1, int act2,
                void *out, int out_f16, cudaStream_t s);
/* The same for the network's first layer (3 -> 16 channels, 3x3, stride 2,
 * 16-byte aligned output), which cu_conv2d_x sends here: ops_stem.cu. With
 * `pool` (else NULL) it also writes each thread block's per-channel sums of
 * its outputs as stored, pool [n][cu_stem_parts(g)][16], for a later
 * squeeze-excite pool over this map (cu_se_args.in2_part). */
int cu_stem_ok(const struct conv_geom *g, const void *out);
int cu_stem_parts(const struct conv_geom *g);
int cu_stem(const struct conv_geom *g, const void *in, int in_f16, const float *w,
            const float *b, int act1, int act2, void *out, int out_f16, float *pool,
            cudaStream_t s);

/* Element-wise activation (CU_ACT_*) with dtype conversion; in == out allowed
 * when the dtypes match. */
int cu_unary_x(int act, const void *in, int in_f16, void *out, int out_f16,
               size_t count, cudaStream_t s);

/* Per-operand dtypes for mixed precision: bit set = that buffer holds
 * vr_half, clear = float. IN0 is the main input (pointwise a, depthwise /
 * resize / pool / squeeze-excite input, ADD/MUL a), IN1 the second
 * (pointwise a_scale, ADD/MUL b), IN2 the pointwise b, IN3 its e_scale.
 * The plain `f16` launchers below pass all bits or none. */
#define CU_DT_IN0 1u
#define CU_DT_IN1 2u
#define CU_DT_IN2 4u
#define CU_DT_IN3 8u
#define CU_DT_RES 16u
#define CU_DT_OUT 32u
#define CU_DT_ALL 63u

int cu_pointwise_dt(const struct cu_pw_args *p, unsigned dt, cudaStream_t s);
int cu_dw_fused_dt(const struct cu_dw_args *p, unsigned dt, cudaStream_t s);
int cu_se_dt(const struct cu_se_args *p, unsigned dt, cudaStream_t s);
int cu_binary_dt(int mul, int n, int h, int w, int c, const void *a, const void *b,
                 int b_full, int act, void *out, unsigned dt, cudaStream_t s);
/* ... then out = act2(act1(resized)) */
int cu_resize_bilinear_dt(int n, int ih, int iw, int c, const void *in, int oh, int ow,
                          int align_corners, int half_pixel_centers, int act1, int act2,
                          void *out, unsigned dt, cudaStream_t s);
int cu_avgpool_dt(const struct conv_geom *g, const void *in, void *out, unsigned dt,
                  cudaStream_t s);

/* Fused kernels: see ops_fused.h for what each computes. */
int cu_pointwise(const struct cu_pw_args *p, int f16, cudaStream_t s);
int cu_dw_fused(const struct cu_dw_args *p, int f16, cudaStream_t s);
int cu_se(const struct cu_se_args *p, int f16, cudaStream_t s);

/* Chained inverted-residual blocks (ops_fused.h), one thread block per
 * image, every tensor of the chain in shared memory: IN0 and OUT of `dt`
 * apply. cu_ir_smem gives the shared memory the chain needs on the current
 * device, or 0 when the kernel cannot take it (map wider than 16, h * w or
 * c not a multiple of 16, ce not a multiple of 16 or over 128, cs over 32,
 * kernel size other than 3 or 5, or too big for the device's shared
 * memory); the launchers then return VR_EINVAL. */
size_t cu_ir_smem(const struct cu_ir_args *a);
int cu_ir_chain(const struct cu_ir_args *a, int f16, cudaStream_t s);
int cu_ir_chain_dt(const struct cu_ir_args *a, unsigned dt, cudaStream_t s);

/* The decoder tail (ops_fused.h) in one kernel, a 16x16 block of the map a
 * thread block: IN0 = a, IN1 = a_scale, IN2 = b, OUT of `dt` apply.
 * cu_tail_ok says whether the kernel takes the geometry (cin = c = 16 or
 * 8, k 1 or 3, cout up to 4, the transpose conv's weights and bias given);
 * the launchers return VR_EINVAL otherwise. */
int cu_tail_ok(const struct cu_tail_args *a);
int cu_tail(const struct cu_tail_args *a, int f16, cudaStream_t s);
int cu_tail_dt(const struct cu_tail_args *a, unsigned dt, cudaStream_t s);

/* A 1x1 conv and the depthwise conv after it (ops_fused.h) in one kernel,
 * an 8x8 (or 4x4) block of the output a thread block: IN0 and OUT of `dt`
 * apply. cu_pwdw_ok says whether the kernel takes the geometry (c a
 * multiple of 8, cin up to 256, depthwise up to 5x5, stride 1 or 2, no
 * dilation, the window in 100 KB of shared memory). */
int cu_pwdw_ok(const struct cu_pwdw_args *a);
int cu_pwdw(const struct cu_pwdw_args *a, int f16, cudaStream_t s);
int cu_pwdw_dt(const struct cu_pwdw_args *a, unsigned dt, cudaStream_t s);

/* Convolution2DTransposeBias then activation `act` (CU_ACT_LOGISTIC for the
 * network's last op), with dtype conversion. */
int cu_tconv_x(const struct conv_geom *g, const void *in, int in_f16,
               const float *w, const float *b, int act, void *out, int out_f16,
               cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif

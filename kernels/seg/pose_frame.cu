/*
 * pose_frame.cu - the CUDA twins of the pose tier's pixel steps
 * (pose_frame.h; C twins in pose_frame_ref.c). Each float op is spelled
 * with its rounding (__fadd_rn, __fmul_rn, __fdiv_rn) so nvcc contracts
 * nothing into an FMA and the bits are the C twin's; the ROI's cosine and
 * sine come from the host's libm, as the twin's do. One thread an output
 * pixel; all launches small (at most 256x256 or the work mask).
 */
#include "frame_cuda.h" /* first: the C headers with C linkage; fcu_to_u8, fcu_check */
extern "C" {
#include "pose_frame.h"
}

#include <math.h>

static __global__ void k_pic_u8(const float *in, size_t n, uint8_t *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fcu_to_u8(in[i]);
}

extern "C" int pose_pic_u8_cuda(const float *in, size_t n, uint8_t *out, cudaStream_t st,
                                vr_err *err)
{
    if (n == 0)
        return 0;
    k_pic_u8<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(in, n, out);
    return fcu_check("pose_pic_u8", err);
}

/* ---- the detector's letterbox ---- */

/* sample_clamped of the twin. */
static __device__ float sample_clamped(const uint8_t *rgb, int w, int h, int ls, float x,
                                       float y, int c)
{
    x = fminf(fmaxf(x, 0.0f), (float)(w - 1));
    y = fminf(fmaxf(y, 0.0f), (float)(h - 1));
    const int x0 = (int)x, y0 = (int)y;
    const int x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
    const float fx = __fsub_rn(x, (float)x0), fy = __fsub_rn(y, (float)y0);
    const uint8_t *r0 = rgb + (size_t)y0 * ls, *r1 = rgb + (size_t)y1 * ls;
    const float top = __fadd_rn((float)r0[x0 * 3 + c],
                                __fmul_rn(fx, (float)(r0[x1 * 3 + c] - r0[x0 * 3 + c])));
    const float bot = __fadd_rn((float)r1[x0 * 3 + c],
                                __fmul_rn(fx, (float)(r1[x1 * 3 + c] - r1[x0 * 3 + c])));
    return __fadd_rn(top, __fmul_rn(fy, __fsub_rn(bot, top)));
}

static __global__ void k_letterbox(const uint8_t *rgb, int w, int h, int ls, float scale,
                                   float ox, float oy, float xe, float ye, float *in)
{
    const int S = POSE_DET_SIZE;
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= S || y >= S)
        return;
    float *px = in + ((size_t)y * S + x) * 3;
    const float xc = (float)x + 0.5f, yc = (float)y + 0.5f;
    const int inside = xc >= ox && xc < xe && yc >= oy && yc < ye;
    const float sx = __fsub_rn(__fdiv_rn(__fsub_rn(xc, ox), scale), 0.5f);
    const float sy = __fsub_rn(__fdiv_rn(__fsub_rn(yc, oy), scale), 0.5f);
    for (int c = 0; c < 3; c++)
        px[c] = inside ? __fsub_rn(__fdiv_rn(sample_clamped(rgb, w, h, ls, sx, sy, c), 127.5f),
                                   1.0f)
                       : -1.0f;
}

extern "C" int pose_letterbox_cuda(const uint8_t *rgb, int w, int h, int linesize, float *in,
                                   cudaStream_t st, vr_err *err)
{
    float scale, ox, oy;
    pose_letterbox_fit(w, h, &scale, &ox, &oy);
    const float xe = ox + (float)w * scale, ye = oy + (float)h * scale; /* host: as the twin */
    const dim3 blk(32, 8), grd((POSE_DET_SIZE + 31) / 32, (POSE_DET_SIZE + 7) / 8);
    k_letterbox<<<grd, blk, 0, st>>>(rgb, w, h, linesize, scale, ox, oy, xe, ye, in);
    return fcu_check("pose_letterbox", err);
}

/* ---- a person's ROI to the landmark model's input ---- */

/* sample_black of the twin. */
static __device__ float sample_black(const uint8_t *rgb, int w, int h, int ls, float x, float y,
                                     int c)
{
    const int x0 = (int)floorf(x), y0 = (int)floorf(y);
    const float fx = __fsub_rn(x, (float)x0), fy = __fsub_rn(y, (float)y0);
    float v = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            const int xx = x0 + i, yy = y0 + j;
            if (xx < 0 || yy < 0 || xx >= w || yy >= h)
                continue;
            const float wt = __fmul_rn(i ? fx : __fsub_rn(1.0f, fx), j ? fy : __fsub_rn(1.0f, fy));
            v = __fadd_rn(v, __fmul_rn(wt, (float)rgb[(size_t)yy * ls + xx * 3 + c]));
        }
    return v;
}

static __global__ void k_roi_sample(const uint8_t *rgb, int w, int h, int ls, float cx,
                                    float cy, float size, float c, float s, float *in)
{
    const int S = POSE_SEG_SIZE;
    const int u = blockIdx.x * blockDim.x + threadIdx.x, v = blockIdx.y * blockDim.y + threadIdx.y;
    if (u >= S || v >= S)
        return;
    const float du = __fmul_rn(__fsub_rn(__fdiv_rn((float)u + 0.5f, (float)S), 0.5f), size);
    const float dv = __fmul_rn(__fsub_rn(__fdiv_rn((float)v + 0.5f, (float)S), 0.5f), size);
    const float x = __fsub_rn(__fadd_rn(cx, __fmul_rn(du, c)), __fmul_rn(dv, s));
    const float y = __fadd_rn(__fadd_rn(cy, __fmul_rn(du, s)), __fmul_rn(dv, c));
    float *px = in + ((size_t)v * S + u) * 3;
    for (int k = 0; k < 3; k++)
        px[k] = __fdiv_rn(sample_black(rgb, w, h, ls, __fsub_rn(x, 0.5f), __fsub_rn(y, 0.5f), k),
                          255.0f);
}

extern "C" int pose_roi_sample_cuda(const uint8_t *rgb, int w, int h, int linesize,
                                    const struct pose_roi *roi, float *in, cudaStream_t st,
                                    vr_err *err)
{
    const float c = cosf(roi->angle), s = sinf(roi->angle); /* the host's libm, as the twin */
    const dim3 blk(32, 8), grd(POSE_SEG_SIZE / 32, POSE_SEG_SIZE / 8);
    k_roi_sample<<<grd, blk, 0, st>>>(rgb, w, h, linesize, roi->cx, roi->cy, roi->size, c, s, in);
    return fcu_check("pose_roi_sample", err);
}

/* ---- the mask ---- */

static __global__ void k_sigmoid(const float *logit, size_t n, float *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-logit[i])));
}

extern "C" int pose_sigmoid_cuda(const float *logit, size_t n, float *out, cudaStream_t st,
                                 vr_err *err)
{
    if (n == 0)
        return 0;
    k_sigmoid<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(logit, n, out);
    return fcu_check("pose_sigmoid", err);
}

static __global__ void k_paste(float cx, float cy, float size, float c, float s,
                               const float *roi_mask, float weight, int w, int h, float *mask)
{
    const int S = POSE_SEG_SIZE;
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    const float dx = __fsub_rn((float)x + 0.5f, cx), dy = __fsub_rn((float)y + 0.5f, cy);
    const float u = __fadd_rn(__fdiv_rn(__fadd_rn(__fmul_rn(dx, c), __fmul_rn(dy, s)), size), 0.5f);
    const float v =
        __fadd_rn(__fdiv_rn(__fadd_rn(__fmul_rn(-dx, s), __fmul_rn(dy, c)), size), 0.5f);
    if (!(u >= 0 && u < 1 && v >= 0 && v < 1))
        return;
    const float mu = __fsub_rn(__fmul_rn(u, (float)S), 0.5f);
    const float mv = __fsub_rn(__fmul_rn(v, (float)S), 0.5f);
    const int u0 = (int)floorf(mu), v0 = (int)floorf(mv);
    const float fu = __fsub_rn(mu, (float)u0), fv = __fsub_rn(mv, (float)v0);
    float val = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            const int uu = u0 + i < 0 ? 0 : (u0 + i >= S ? S - 1 : u0 + i);
            const int vv = v0 + j < 0 ? 0 : (v0 + j >= S ? S - 1 : v0 + j);
            const float wt = __fmul_rn(i ? fu : __fsub_rn(1.0f, fu), j ? fv : __fsub_rn(1.0f, fv));
            val = __fadd_rn(val, __fmul_rn(wt, roi_mask[(size_t)vv * S + uu]));
        }
    val = __fmul_rn(val, weight);
    float *m = &mask[(size_t)y * w + x];
    if (val > *m)
        *m = val;
}

extern "C" int pose_paste_cuda(const struct pose_roi *roi, const float *roi_mask, float weight,
                               int w, int h, float *mask, cudaStream_t st, vr_err *err)
{
    if (w < 1 || h < 1)
        return 0;
    const float c = cosf(roi->angle), s = sinf(roi->angle); /* the host's libm, as the twin */
    const dim3 blk(32, 8), grd((unsigned)(w + 31) / 32, (unsigned)(h + 7) / 8);
    k_paste<<<grd, blk, 0, st>>>(roi->cx, roi->cy, roi->size, c, s, roi_mask, weight, w, h, mask);
    return fcu_check("pose_paste", err);
}

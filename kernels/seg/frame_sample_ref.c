/*
 * frame_sample_ref.c - the C twins of frame_sample.cu, the frame kernels
 * that read the frame: preprocess, luma, the guided filter's apply and the
 * bilinear refine (see frame_ref.h for the exact sampling rules, which the
 * CUDA twins follow too; the blend and the guided coefficients are
 * frame_mask_ref.c). Written for clarity first and for a CPU that runs the
 * --cpu backend second: rows are walked in order and per-row work (box
 * bounds, bilinear taps) is hoisted out of the inner loops.
 */
#include "frame_ref.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- colour: one source pixel to RGB / luma in [0,1] ---- */

static inline float clamp01(float v)
{
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

/* Reads Y, Cb, Cr of pixel (x, y) as normalised floats (Y' in [0,1]-ish,
 * chroma centred on 0), per the range rules in frame_ref.h. */
static inline void yuv_at(const struct seg_frame *f, int x, int y,
                          float *yy, float *cb, float *cr)
{
    int cx = x >> 1, cy = y >> 1;
    float Y, U, V, k;
    switch (f->fmt) {
    case SEG_PIX_NV12: {
        const uint8_t *uv = f->data[1] + (size_t)cy * f->linesize[1] + 2 * cx;
        Y = f->data[0][(size_t)y * f->linesize[0] + x];
        U = uv[0];
        V = uv[1];
        k = 1.0f;
        break;
    }
    case SEG_PIX_P010: {
        const uint8_t *yp = f->data[0] + (size_t)y * f->linesize[0] + 2 * x;
        const uint8_t *uv = f->data[1] + (size_t)cy * f->linesize[1] + 4 * cx;
        Y = (float)((yp[0] | yp[1] << 8) >> 6);
        U = (float)((uv[0] | uv[1] << 8) >> 6);
        V = (float)((uv[2] | uv[3] << 8) >> 6);
        k = 4.0f;
        break;
    }
    default: /* SEG_PIX_YUV420P */
        Y = f->data[0][(size_t)y * f->linesize[0] + x];
        U = f->data[1][(size_t)cy * f->linesize[1] + cx];
        V = f->data[2][(size_t)cy * f->linesize[2] + cx];
        k = 1.0f;
        break;
    }
    if (f->full_range) {
        *yy = Y / (255.0f * k);
        *cb = (U - 128.0f * k) / (255.0f * k);
        *cr = (V - 128.0f * k) / (255.0f * k);
    } else {
        *yy = (Y - 16.0f * k) / (219.0f * k);
        *cb = (U - 128.0f * k) / (224.0f * k);
        *cr = (V - 128.0f * k) / (224.0f * k);
    }
}

static inline void rgb_at(const struct seg_frame *f, int x, int y, float rgb[3])
{
    if (f->fmt == SEG_PIX_RGB24) {
        const uint8_t *p = f->data[0] + (size_t)y * f->linesize[0] + 3 * x;
        rgb[0] = p[0] * (1.0f / 255.0f);
        rgb[1] = p[1] * (1.0f / 255.0f);
        rgb[2] = p[2] * (1.0f / 255.0f);
        return;
    }
    float Y, cb, cr;
    yuv_at(f, x, y, &Y, &cb, &cr);
    rgb[0] = clamp01(Y + 1.5748f * cr);
    rgb[1] = clamp01(Y - 0.187324f * cb - 0.468124f * cr);
    rgb[2] = clamp01(Y + 1.8556f * cb);
}

static inline float luma_at(const struct seg_frame *f, int x, int y)
{
    if (f->fmt == SEG_PIX_RGB24) {
        const uint8_t *p = f->data[0] + (size_t)y * f->linesize[0] + 3 * x;
        return (0.2126f * p[0] + 0.7152f * p[1] + 0.0722f * p[2]) * (1.0f / 255.0f);
    }
    float Y, cb, cr;
    yuv_at(f, x, y, &Y, &cb, &cr);
    return clamp01(Y);
}

/* ---- resampling rule ---- */

enum frame_resample frame_resample_mode(int rw, int rh, int dw, int dh)
{
    return (2 * (long long)rw > 3 * (long long)dw || 2 * (long long)rh > 3 * (long long)dh)
               ? FRAME_AREA : FRAME_BILINEAR;
}

/* Area box [*a, *b) of output index o when r source pixels map to d. */
static inline void area_span(int o, int r, int d, int *a, int *b)
{
    *a = (int)((long long)o * r / d);
    *b = (int)((long long)(o + 1) * r / d);
    if (*b <= *a)
        *b = *a + 1;
}

/* Bilinear taps of output index o (half-pixel centres, clamped to the rect). */
static inline void bilin_taps(int o, int r, int d, int *i0, int *i1, float *t)
{
    float f = ((float)o + 0.5f) * (float)r / (float)d - 0.5f;
    if (f < 0.0f)
        f = 0.0f;
    if (f > (float)(r - 1))
        f = (float)(r - 1);
    int i = (int)f;
    *i0 = i;
    *i1 = i + 1 < r ? i + 1 : r - 1;
    *t = f - (float)i;
}

/* Samples channel values of rect at output pixel (ox, oy): nch = 3 gives RGB
 * into v[0..2], nch = 1 gives luma into v[0]. */
static void sample_px(const struct seg_frame *f, struct frame_rect r, int dw, int dh,
                      enum frame_resample mode, int ox, int oy, int nch, float *v)
{
    float px[3];
    if (mode == FRAME_AREA) {
        int x0, x1, y0, y1;
        area_span(ox, r.w, dw, &x0, &x1);
        area_span(oy, r.h, dh, &y0, &y1);
        float s[3] = { 0, 0, 0 };
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) {
                if (nch == 3) {
                    rgb_at(f, r.x + x, r.y + y, px);
                    s[0] += px[0];
                    s[1] += px[1];
                    s[2] += px[2];
                } else {
                    s[0] += luma_at(f, r.x + x, r.y + y);
                }
            }
        float inv = 1.0f / (float)((x1 - x0) * (y1 - y0));
        for (int c = 0; c < nch; c++)
            v[c] = s[c] * inv;
        return;
    }
    int xa, xb, ya, yb;
    float tx, ty;
    bilin_taps(ox, r.w, dw, &xa, &xb, &tx);
    bilin_taps(oy, r.h, dh, &ya, &yb, &ty);
    float q[4][3];
    int xs[4] = { xa, xb, xa, xb }, ys[4] = { ya, ya, yb, yb };
    for (int k = 0; k < 4; k++) {
        if (nch == 3)
            rgb_at(f, r.x + xs[k], r.y + ys[k], q[k]);
        else
            q[k][0] = luma_at(f, r.x + xs[k], r.y + ys[k]);
    }
    for (int c = 0; c < nch; c++) {
        float top = q[0][c] + (q[1][c] - q[0][c]) * tx;
        float bot = q[2][c] + (q[3][c] - q[2][c]) * tx;
        v[c] = top + (bot - top) * ty;
    }
}

/* ---- (1) preprocess ---- */

void frame_preprocess_ref(const struct seg_frame *f, const struct frame_rect *rects,
                          int n, int mw, int mh, float *out)
{
    for (int i = 0; i < n; i++) {
        struct frame_rect r = rects[i];
        enum frame_resample mode = frame_resample_mode(r.w, r.h, mw, mh);
        float *o = out + (size_t)i * mw * mh * 3;
        for (int y = 0; y < mh; y++)
            for (int x = 0; x < mw; x++)
                sample_px(f, r, mw, mh, mode, x, y, 3, o + ((size_t)y * mw + x) * 3);
    }
}

void frame_luma_ref(const struct seg_frame *f, struct frame_rect rect,
                    int dw, int dh, float *out)
{
    enum frame_resample mode = frame_resample_mode(rect.w, rect.h, dw, dh);
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            sample_px(f, rect, dw, dh, mode, x, y, 1, out + (size_t)y * dw + x);
}

/* ---- (3) guided upsample: apply (the coefficients: frame_mask_ref.c) ---- */

void frame_guided_apply_ref(const float *a, const float *b, int w, int h,
                            const struct seg_frame *f, struct frame_rect rect,
                            uint8_t *dst, int dst_linesize, int dw, int dh)
{
    enum frame_resample mode = frame_resample_mode(rect.w, rect.h, dw, dh);
    int direct = rect.w == dw && rect.h == dh; /* I_out is the frame's own luma */
    for (int y = 0; y < dh; y++) {
        int ya, yb;
        float ty;
        bilin_taps(y, h, dh, &ya, &yb, &ty);
        const float *ar0 = a + (size_t)ya * w, *ar1 = a + (size_t)yb * w;
        const float *br0 = b + (size_t)ya * w, *br1 = b + (size_t)yb * w;
        uint8_t *o = dst + (size_t)y * dst_linesize;
        for (int x = 0; x < dw; x++) {
            int xa, xb;
            float tx;
            bilin_taps(x, w, dw, &xa, &xb, &tx);
            float at = ar0[xa] + (ar0[xb] - ar0[xa]) * tx;
            float ab = ar1[xa] + (ar1[xb] - ar1[xa]) * tx;
            float bt = br0[xa] + (br0[xb] - br0[xa]) * tx;
            float bb = br1[xa] + (br1[xb] - br1[xa]) * tx;
            float av = at + (ab - at) * ty, bv = bt + (bb - bt) * ty;
            float I;
            if (direct)
                I = luma_at(f, rect.x + x, rect.y + y);
            else
                sample_px(f, rect, dw, dh, mode, x, y, 1, &I);
            o[x] = frame_to_u8(av * I + bv);
        }
    }
}

void frame_upsample_bilinear_ref(const float *mask, int w, int h,
                                 uint8_t *dst, int dst_linesize, int dw, int dh)
{
    for (int y = 0; y < dh; y++) {
        int ya, yb;
        float ty;
        bilin_taps(y, h, dh, &ya, &yb, &ty);
        const float *r0 = mask + (size_t)ya * w, *r1 = mask + (size_t)yb * w;
        uint8_t *o = dst + (size_t)y * dst_linesize;
        for (int x = 0; x < dw; x++) {
            int xa, xb;
            float tx;
            bilin_taps(x, w, dw, &xa, &xb, &tx);
            float t = r0[xa] + (r0[xb] - r0[xa]) * tx;
            float bo = r1[xa] + (r1[xb] - r1[xa]) * tx;
            o[x] = frame_to_u8(t + (bo - t) * ty);
        }
    }
}

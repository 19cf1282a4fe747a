/*
 * pose_frame_ref.c - the C twins of the pose tier's pixel steps
 * (pose_frame.h): what the CPU engine runs, and what pose_frame.cu must
 * give bit for bit (the sigmoid within 1e-6).
 */
#include "pose_frame.h"

#include "frame_ref.h"

#include <math.h>

void pose_pic_u8_ref(const float *in, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = frame_to_u8(in[i]);
}

/* Bilinear sample of channel c at (x, y) in picture pixels (centres at
 * integers), edges clamped. */
static float sample_clamped(const uint8_t *rgb, int w, int h, int ls, float x, float y, int c)
{
    x = fminf(fmaxf(x, 0.0f), (float)(w - 1));
    y = fminf(fmaxf(y, 0.0f), (float)(h - 1));
    const int x0 = (int)x, y0 = (int)y;
    const int x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
    const float fx = x - (float)x0, fy = y - (float)y0;
    const uint8_t *r0 = rgb + (size_t)y0 * ls, *r1 = rgb + (size_t)y1 * ls;
    const float top = (float)r0[x0 * 3 + c] + fx * (float)(r0[x1 * 3 + c] - r0[x0 * 3 + c]);
    const float bot = (float)r1[x0 * 3 + c] + fx * (float)(r1[x1 * 3 + c] - r1[x0 * 3 + c]);
    return top + fy * (bot - top);
}

void pose_letterbox_ref(const uint8_t *rgb, int w, int h, int linesize, float *in)
{
    const int S = POSE_DET_SIZE;
    float scale, ox, oy;
    pose_letterbox_fit(w, h, &scale, &ox, &oy);
    const float xe = ox + (float)w * scale, ye = oy + (float)h * scale;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            float *px = in + ((size_t)y * S + x) * 3;
            const float xc = (float)x + 0.5f, yc = (float)y + 0.5f;
            const int inside = xc >= ox && xc < xe && yc >= oy && yc < ye;
            const float sx = (xc - ox) / scale - 0.5f, sy = (yc - oy) / scale - 0.5f;
            for (int c = 0; c < 3; c++)
                px[c] = inside ? sample_clamped(rgb, w, h, linesize, sx, sy, c) / 127.5f - 1.0f
                               : -1.0f;
        }
}

/* Bilinear sample of channel c at (x, y), taps outside the picture black. */
static float sample_black(const uint8_t *rgb, int w, int h, int ls, float x, float y, int c)
{
    const int x0 = (int)floorf(x), y0 = (int)floorf(y);
    const float fx = x - (float)x0, fy = y - (float)y0;
    float v = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            const int xx = x0 + i, yy = y0 + j;
            if (xx < 0 || yy < 0 || xx >= w || yy >= h)
                continue;
            v += ((i ? fx : 1 - fx) * (j ? fy : 1 - fy)) * (float)rgb[(size_t)yy * ls + xx * 3 + c];
        }
    return v;
}

void pose_roi_sample_ref(const uint8_t *rgb, int w, int h, int linesize,
                         const struct pose_roi *roi, float *in)
{
    const int S = POSE_SEG_SIZE;
    const float c = cosf(roi->angle), s = sinf(roi->angle);
    for (int v = 0; v < S; v++)
        for (int u = 0; u < S; u++) {
            const float du = (((float)u + 0.5f) / (float)S - 0.5f) * roi->size;
            const float dv = (((float)v + 0.5f) / (float)S - 0.5f) * roi->size;
            const float x = roi->cx + du * c - dv * s, y = roi->cy + du * s + dv * c;
            float *px = in + ((size_t)v * S + u) * 3;
            for (int k = 0; k < 3; k++)
                px[k] = sample_black(rgb, w, h, linesize, x - 0.5f, y - 0.5f, k) / 255.0f;
        }
}

void pose_sigmoid_ref(const float *logit, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 1.0f / (1.0f + expf(-logit[i]));
}

void pose_paste_ref(const struct pose_roi *roi, const float *roi_mask, float weight, int w,
                    int h, float *mask)
{
    const int S = POSE_SEG_SIZE;
    const float c = cosf(roi->angle), s = sinf(roi->angle);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            /* the pixel's centre back into the ROI's mask pixels */
            const float dx = (float)x + 0.5f - roi->cx, dy = (float)y + 0.5f - roi->cy;
            const float u = (dx * c + dy * s) / roi->size + 0.5f;
            const float v = (-dx * s + dy * c) / roi->size + 0.5f;
            if (!(u >= 0 && u < 1 && v >= 0 && v < 1))
                continue;
            const float mu = u * (float)S - 0.5f, mv = v * (float)S - 0.5f;
            const int u0 = (int)floorf(mu), v0 = (int)floorf(mv);
            const float fu = mu - (float)u0, fv = mv - (float)v0;
            float val = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    const int uu = u0 + i < 0 ? 0 : (u0 + i >= S ? S - 1 : u0 + i);
                    const int vv = v0 + j < 0 ? 0 : (v0 + j >= S ? S - 1 : v0 + j);
                    val += ((i ? fu : 1 - fu) * (j ? fv : 1 - fv)) * roi_mask[(size_t)vv * S + uu];
                }
            val *= weight;
            float *m = &mask[(size_t)y * w + x];
            if (val > *m)
                *m = val;
        }
}

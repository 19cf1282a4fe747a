/*
 * frame_mask_ref.c - the C twins of frame_mask.cu: the kernels that work on
 * the network's tiles and the eye's mask, not the frame: the feathered
 * blend of the tiles into the eye's work-size mask and the guided filter's
 * coefficients (box means). frame_ref.h states the rules, which the CUDA
 * twins follow too; the reading of the frame is frame_sample_ref.c.
 */
#include "frame_ref.h"

#include <math.h>
#include <stddef.h>

/* ---- (2) blend ---- */

/* What a value says where only sureness counts: the whole pass's floor
 * and a FRAME_TILE_SURE tile (frame_ref.h). */
static inline float sure_value(float v)
{
    return fmaxf(2.0f * v - 1.0f, 0.0f);
}

/* A tile's favor factor: its value, lifted to at least the floor. */
static inline float favor_factor(float floor, float v)
{
    return floor + (1.0f - floor) * v;
}

static inline float ramp(float u, float feather, int lo_edge, int hi_edge)
{
    if (feather <= 0.0f || !(lo_edge || hi_edge))
        return 1.0f;
    float d = 1.0f;
    if (lo_edge && u < d)
        d = u;
    if (hi_edge && 1.0f - u < d)
        d = 1.0f - u;
    float w = d / feather;
    return w < 1e-3f ? 1e-3f : (w > 1.0f ? 1.0f : w);
}

void frame_blend_ref(const float *tiles, int n, int mw, int mh,
                     const struct frame_tile *tile, int ww, int wh, float *out)
{
    for (int y = 0; y < wh; y++) {
        float py = (float)y + 0.5f;
        for (int x = 0; x < ww; x++) {
            float px = (float)x + 0.5f;
            float sw = 0.0f, sv = 0.0f, floor_v = 0.0f;
            for (int i = 0; i < n; i++) {
                const struct frame_tile *t = &tile[i];
                if (!(px >= t->x && px < t->x + t->w && py >= t->y && py < t->y + t->h))
                    continue;
                float u = (px - t->x) / t->w, v = (py - t->y) / t->h;
                float w = t->weight
                          * ramp(u, t->feather, t->edges & FRAME_EDGE_L, t->edges & FRAME_EDGE_R)
                          * ramp(v, t->feather, t->edges & FRAME_EDGE_T, t->edges & FRAME_EDGE_B);
                float val = frame_tile_sample(tiles + (size_t)i * mw * mh, mw, mh,
                                        u * (float)mw - 0.5f, v * (float)mh - 0.5f);
                if (t->edges & (FRAME_TILE_FLOOR | FRAME_TILE_SURE))
                    val = sure_value(val);
                if (t->edges & FRAME_TILE_FLOOR) {
                    floor_v = fmaxf(floor_v, val);
                    continue;
                }
                const float fv = favor_factor(t->favor_floor, val);
                for (int k = 0; k < t->favor; k++)
                    w *= fv;
                sw += w;
                sv += w * val;
            }
            out[(size_t)y * ww + x] = fmaxf(sw > 0.0f ? sv / sw : 0.0f, floor_v);
        }
    }
}

/* ---- (3) guided filter: coefficients ---- */

/* Box mean with radius r, window clipped to the image: separable running
 * sums (horizontal into tmp, vertical into out). in and out may not alias. */
static void box_mean(const float *in, float *out, float *tmp, int w, int h, int r)
{
    for (int y = 0; y < h; y++) {
        const float *row = in + (size_t)y * w;
        float *t = tmp + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            int a = x - r < 0 ? 0 : x - r, b = x + r >= w ? w - 1 : x + r;
            float s = 0.0f;
            for (int k = a; k <= b; k++)
                s += row[k];
            t[x] = s / (float)(b - a + 1);
        }
    }
    for (int y = 0; y < h; y++) {
        int a = y - r < 0 ? 0 : y - r, b = y + r >= h ? h - 1 : y + r;
        float inv = 1.0f / (float)(b - a + 1);
        float *o = out + (size_t)y * w;
        for (int x = 0; x < w; x++)
            o[x] = 0.0f;
        for (int k = a; k <= b; k++) {
            const float *t = tmp + (size_t)k * w;
            for (int x = 0; x < w; x++)
                o[x] += t[x];
        }
        for (int x = 0; x < w; x++)
            o[x] *= inv;
    }
}

void frame_guided_coeffs_ref(const float *I, const float *p, int w, int h,
                             int r, float eps, float *a, float *b, float *scratch)
{
    size_t np = (size_t)w * h;
    float *mI = scratch, *mp = scratch + np, *mIp = scratch + 2 * np;
    float *mII = scratch + 3 * np, *tmp = scratch + 4 * np, *prod = scratch + 5 * np;

    box_mean(I, mI, tmp, w, h, r);
    box_mean(p, mp, tmp, w, h, r);
    for (size_t i = 0; i < np; i++)
        prod[i] = I[i] * p[i];
    box_mean(prod, mIp, tmp, w, h, r);
    for (size_t i = 0; i < np; i++)
        prod[i] = I[i] * I[i];
    box_mean(prod, mII, tmp, w, h, r);
    /* a0, b0 overwrite mIp, mII, which are no longer needed */
    for (size_t i = 0; i < np; i++) {
        float cov = mIp[i] - mI[i] * mp[i];
        float var = mII[i] - mI[i] * mI[i];
        float a0 = cov / (var + eps);
        mIp[i] = a0;
        mII[i] = mp[i] - a0 * mI[i];
    }
    box_mean(mIp, a, tmp, w, h, r);
    box_mean(mII, b, tmp, w, h, r);
}

/* ---- (3b) guided filter: held to the edge band ---- */

/* Mean of x over the (2r+1)^2 window at (cx, cy) clipped to the image:
 * summed row by row, left to right, then divided by the count (the CUDA
 * twin's order, term for term). */
static float window_mean(const float *x, int w, int h, int cx, int cy, int r)
{
    const int y0 = cy - r < 0 ? 0 : cy - r, y1 = cy + r >= h ? h - 1 : cy + r;
    const int x0 = cx - r < 0 ? 0 : cx - r, x1 = cx + r >= w ? w - 1 : cx + r;
    float s = 0.0f;
    for (int y = y0; y <= y1; y++)
        for (int k = x0; k <= x1; k++)
            s += x[(size_t)y * w + k];
    return s / (float)((y1 - y0 + 1) * (x1 - x0 + 1));
}

void frame_guided_band_ref(const float *p, int w, int h, int r, int rbox, float *a, float *b,
                           float *band)
{
    if (r <= 0)
        return;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float mx = p[(size_t)y * w + x], mn = mx;
            for (int yy = y - 1 < 0 ? 0 : y - 1; yy <= y + 1 && yy < h; yy++)
                for (int xx = x - 1 < 0 ? 0 : x - 1; xx <= x + 1 && xx < w; xx++) {
                    const float v = p[(size_t)yy * w + xx];
                    mx = v > mx ? v : mx;
                    mn = v < mn ? v : mn;
                }
            const float e = (mx - mn) * FRAME_BAND_GAIN;
            band[(size_t)y * w + x] = e < 1.0f ? e : 1.0f;
        }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const float wgt = window_mean(band, w, h, x, y, r);
            const float flat = window_mean(p, w, h, x, y, rbox);
            const size_t i = (size_t)y * w + x;
            a[i] = wgt * a[i];
            b[i] = wgt * b[i] + (1.0f - wgt) * flat;
        }
}

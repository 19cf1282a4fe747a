/*
 * frame_stereo_ref.c - the C twin of frame_stereo.cu: the eyes' disparity
 * per row band and each eye's work mask fused with the other's warped by
 * it (frame_stereo.h states the rule and why).
 */
#include "frame_stereo.h"

#include "frame_ref.h"

#include <string.h>

/* Columns where either mask is a person in rows [y0, y1): *emin..*emax. */
static void band_span(const float *ml, const float *mr, int w, int y0, int y1, int *emin,
                      int *emax)
{
    *emin = w;
    *emax = -1;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            if (ml[i] >= 0.5f || mr[i] >= 0.5f) {
                *emin = x < *emin ? x : *emin;
                *emax = x > *emax ? x : *emax;
            }
        }
}

static int band_disparity(const uint8_t *ql, const uint8_t *qr, int w, int y0, int y1,
                          int emin, int emax)
{
    const int dmax = frame_stereo_dmax(w), rows = (y1 - y0 + 1) / 2;
    int best = 0;
    unsigned long long best_sad = 0, best_n = 0;
    for (int k = 0; k <= 2 * dmax; k++) {
        int d = frame_stereo_shift(k), x0, x1;
        if (!frame_stereo_cols(emin, emax, w, dmax, d, &x0, &x1))
            continue;
        unsigned long long sad = 0, n = (unsigned long long)rows * (x1 - x0);
        for (int y = y0; y < y1; y += 2) {
            const uint8_t *l = ql + (size_t)y * w, *r = qr + (size_t)y * w;
            for (int x = x0; x < x1; x++)
                sad += (unsigned)(l[x] > r[x - d] ? l[x] - r[x - d] : r[x - d] - l[x]);
        }
        if (!best_n || sad * best_n < best_sad * n) {
            best = d;
            best_sad = sad;
            best_n = n;
        }
    }
    return best_sad > (unsigned long long)FRAME_STEREO_MAX_SAD * best_n ? FRAME_STEREO_NONE : best;
}

void frame_stereo_ref(float *ml, float *mr, const float *yl, const float *yr, int w, int h,
                      int bands, float *scratch, int *disp)
{
    const size_t np = (size_t)w * h;
    float *sl = scratch, *sr = scratch + np;
    uint8_t *ql = (uint8_t *)(scratch + 2 * np), *qr = ql + np;
    memcpy(sl, ml, np * sizeof *sl);
    memcpy(sr, mr, np * sizeof *sr);
    for (size_t i = 0; i < np; i++) {
        ql[i] = frame_to_u8(yl[i]);
        qr[i] = frame_to_u8(yr[i]);
    }
    for (int b = 0; b < bands; b++) {
        int y0, y1, emin, emax, d = 0;
        frame_stereo_rows(h, bands, b, &y0, &y1);
        if (disp)
            disp[b] = 0;
        if (y1 <= y0)
            continue;
        band_span(sl, sr, w, y0, y1, &emin, &emax);
        if (emax >= 0)
            d = band_disparity(ql, qr, w, y0, y1, emin, emax);
        if (disp)
            disp[b] = d;
        for (int y = y0; y < y1; y++) {
            const size_t row = (size_t)y * w;
            for (int x = 0; x < w; x++) {
                if (x - d >= 0 && x - d < w) {
                    ml[row + x] = frame_stereo_fuse(sl[row + x], sr[row + x - d]);
                }
                if (x + d >= 0 && x + d < w) {
                    mr[row + x] = frame_stereo_fuse(sr[row + x], sl[row + x + d]);
                }
            }
        }
    }
}

void frame_stereo_out_ref(uint8_t *ml, uint8_t *mr, int ls, int w, int h, int work_w,
                          int bands, const int *disp)
{
    for (int y = 0; y < h; y++) {
        const int d = frame_stereo_scale(disp[frame_stereo_band(h, bands, y)], work_w, w);
        uint8_t *l = ml + (size_t)y * ls, *r = mr + (size_t)y * ls;
        const int x0 = d > 0 ? d : 0, x1 = d < 0 ? w + d : w; /* x - d inside */
        for (int x = x0; x < x1; x++)
            l[x] = r[x - d] = frame_stereo_fuse_u8(l[x], r[x - d]);
    }
}

/*
 * seg_quality_truth.c - bringing a truth matte (or the luma) to the size
 * of the mattes measured against it (seg_quality.h).
 */
#include "seg_quality.h"

void quality_plane_at(const uint8_t *src, int ls, int sw, int sh, uint8_t *out, int w, int h)
{
    for (int y = 0; y < h; y++) {
        int y0 = (int)((long long)y * sh / h), y1 = (int)((long long)(y + 1) * sh / h);
        if (y1 <= y0)
            y1 = y0 + 1;
        for (int x = 0; x < w; x++) {
            int x0 = (int)((long long)x * sw / w), x1 = (int)((long long)(x + 1) * sw / w);
            if (x1 <= x0)
                x1 = x0 + 1;
            unsigned long s = 0, n = 0;
            for (int r = y0; r < y1; r++)
                for (int c = x0; c < x1; c++, n++)
                    s += src[(size_t)r * ls + c];
            out[(size_t)y * w + x] = (uint8_t)((s + n / 2) / n);
        }
    }
}

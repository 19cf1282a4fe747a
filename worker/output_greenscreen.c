/*
 * output_greenscreen.c - the colour frame composited over a key colour by
 * the matte: out = frame * a + key * (1 - a), per plane in BT.709 limited-
 * range YUV, chroma weighted by the mean matte of its 2x2 pixels.
 */
#include "output_kinds.h"

/* pure green (0,255,0) in BT.709 limited range */
#define KEY_Y 173
#define KEY_U 42
#define KEY_V 26

static inline uint8_t mix(int v, int key, int a)
{
    return (uint8_t)((v * a + key * (255 - a) + 127) / 255);
}

void output_greenscreen_compose(const struct output_plan *p, const AVFrame *src,
                                const uint8_t *mask, int mask_ls, AVFrame *dst)
{
    int w = p->enc_w, h = p->enc_h;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = src->data[0] + (size_t)y * src->linesize[0];
        const uint8_t *m = mask + (size_t)y * mask_ls;
        uint8_t *d = dst->data[0] + (size_t)y * dst->linesize[0];
        for (int x = 0; x < w; x++)
            d[x] = mix(s[x], KEY_Y, m[x]);
    }
    for (int y = 0; y < h / 2; y++) {
        const uint8_t *m0 = mask + (size_t)(2 * y) * mask_ls, *m1 = m0 + mask_ls;
        const uint8_t *su = src->data[1] + (size_t)y * src->linesize[1];
        const uint8_t *sv = src->data[2] + (size_t)y * src->linesize[2];
        uint8_t *du = dst->data[1] + (size_t)y * dst->linesize[1];
        uint8_t *dv = dst->data[2] + (size_t)y * dst->linesize[2];
        for (int x = 0; x < w / 2; x++) {
            int a = (m0[2 * x] + m0[2 * x + 1] + m1[2 * x] + m1[2 * x + 1] + 2) / 4;
            du[x] = mix(su[x], KEY_U, a);
            dv[x] = mix(sv[x], KEY_V, a);
        }
    }
}

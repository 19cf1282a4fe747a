/*
 * ops_move_ref.c - the C twins of ops_move.cu: the ops the pose tier's
 * models (MediaPipe Pose) add, which move values rather than compute them:
 * PAD with zeros, DEPTH_TO_SPACE, MAX_POOL_2D and CONCATENATION (RESHAPE
 * needs no kernel: the same values in the same order). TensorFlow Lite's
 * reference semantics; float32 NHWC, batched over n (ops_ref.h).
 */
#include "ops_ref.h"

#include <float.h>
#include <string.h>

void ref_pad(int n, int h, int w, int c, const float *in, int ph0, int ph1, int pw0,
             int pw1, int pc0, int pc1, float *out)
{
    const int oh = h + ph0 + ph1, ow = w + pw0 + pw1, oc = c + pc0 + pc1;
    memset(out, 0, (size_t)n * oh * ow * oc * sizeof *out);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                memcpy(out + (((size_t)b * oh + y + ph0) * ow + x + pw0) * oc + pc0,
                       in + (((size_t)b * h + y) * w + x) * c, (size_t)c * sizeof *in);
}

void ref_depth_to_space(int n, int h, int w, int c, int bs, const float *in, float *out)
{
    const int oc = c / (bs * bs), ow = w * bs;
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int dy = 0; dy < bs; dy++)
                    for (int dx = 0; dx < bs; dx++)
                        /* input channel (dy*bs + dx)*oc + k -> pixel (y*bs+dy, x*bs+dx) */
                        memcpy(out + (((size_t)b * h * bs + y * bs + dy) * ow + x * bs + dx) * oc,
                               in + (((size_t)b * h + y) * w + x) * c + (dy * bs + dx) * oc,
                               (size_t)oc * sizeof *in);
}

void ref_maxpool(const struct conv_geom *g, const float *in, float *out)
{
    const int c = g->cin;
    for (int b = 0; b < g->n; b++)
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++)
                for (int k = 0; k < c; k++) {
                    const int iy0 = oy * g->sh - g->pad_top, ix0 = ox * g->sw - g->pad_left;
                    float m = -FLT_MAX; /* a window with no tap in bounds gives act(lowest) */
                    for (int fy = 0; fy < g->kh; fy++)
                        for (int fx = 0; fx < g->kw; fx++) {
                            const int iy = iy0 + fy, ix = ix0 + fx;
                            if (iy < 0 || iy >= g->ih || ix < 0 || ix >= g->iw)
                                continue;
                            const float v = in[(((size_t)b * g->ih + iy) * g->iw + ix) * c + k];
                            if (m < v) /* std::max(m, v): a NaN tap is skipped */
                                m = v;
                        }
                    out[(((size_t)b * g->oh + oy) * g->ow + ox) * c + k] = op_act(m, g->act);
                }
}

void ref_concat3(int outer, const float *a, int ia, const float *b, int ib, const float *c,
                 int ic, float *out)
{
    const size_t row = (size_t)ia + ib + ic;
    for (int o = 0; o < outer; o++) {
        float *dst = out + (size_t)o * row;
        memcpy(dst, a + (size_t)o * ia, (size_t)ia * sizeof *a);
        memcpy(dst + ia, b + (size_t)o * ib, (size_t)ib * sizeof *b);
        if (ic)
            memcpy(dst + ia + ib, c + (size_t)o * ic, (size_t)ic * sizeof *c);
    }
}

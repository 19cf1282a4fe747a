/*
 * ops_pointwise_ref.c - the C twin of ops_pointwise.cu: the fused pointwise
 * (1x1) conv (ref_pointwise, ops_fused.h), in the simplest loops: the
 * input resized on the fly when it is deferred, scaled, offset, the conv,
 * two activations, an output scale and a residual. The GPU test harness
 * (tests/gpu/) compares them on random inputs. float32, host memory.
 */
#include "ops_fused.h"
#include "ops_ref.h"

#include <math.h>
#include <stddef.h>

/* ---- the fused pointwise conv ---- */

/* TFLite's ResizeBilinear coordinate: lower / upper source index and the
 * scaled position (as interp_values in ops_elem_ref.c). */
static void rs_coord(int v, float scale, int half, int size, float *pos, int *lo, int *hi)
{
    *pos = half ? ((float)v + 0.5f) * scale - 0.5f : (float)v * scale;
    float fl = floorf(*pos);
    *lo = fl > 0 ? (int)fl : 0;
    int up = (int)ceilf(*pos);
    *hi = up < size - 1 ? up : size - 1;
}

/* Input value ci of output pixel i of image n (resized when rs_h > 0). */
static float pw_input(const struct cu_pw_args *p, int n, int i, int ci)
{
    const float *a = p->a;
    if (p->rs_h <= 0)
        return a[((size_t)n * p->hw + i) * p->cin + ci];
    float hs = (float)p->rs_h / (float)p->out_h, ws = (float)p->rs_w / (float)p->out_w;
    if (p->rs_align && p->out_h > 1)
        hs = (float)(p->rs_h - 1) / (float)(p->out_h - 1);
    if (p->rs_align && p->out_w > 1)
        ws = (float)(p->rs_w - 1) / (float)(p->out_w - 1);
    int y = i / p->out_w, x = i % p->out_w, y0, y1, x0, x1;
    float iy, ix;
    rs_coord(y, hs, p->rs_half, p->rs_h, &iy, &y0, &y1);
    rs_coord(x, ws, p->rs_half, p->rs_w, &ix, &x0, &x1);
    float dy = iy - (float)y0, dx = ix - (float)x0;
    const float *base = a + (size_t)n * p->rs_h * p->rs_w * p->cin + ci;
    float v00 = base[((size_t)y0 * p->rs_w + x0) * p->cin];
    float v10 = base[((size_t)y1 * p->rs_w + x0) * p->cin];
    float v01 = base[((size_t)y0 * p->rs_w + x1) * p->cin];
    float v11 = base[((size_t)y1 * p->rs_w + x1) * p->cin];
    return v00 * (1 - dy) * (1 - dx) + v10 * dy * (1 - dx) + v01 * (1 - dy) * dx +
           v11 * dy * dx;
}

void ref_pointwise(const struct cu_pw_args *p)
{
    const float *as = p->a_scale, *b = p->b;
    const float *es = p->e_scale, *res = p->res;
    float *out = p->out;
    for (int n = 0; n < p->n; n++)
        for (int i = 0; i < p->hw; i++) {
            size_t px = (size_t)n * p->hw + i;
            for (int co = 0; co < p->cout; co++) {
                float acc = p->bias ? p->bias[co] : 0.0f;
                for (int ci = 0; ci < p->cin; ci++) {
                    float x = pw_input(p, n, i, ci);
                    if (as)
                        x *= as[(size_t)n * p->cin + ci];
                    if (b)
                        x += b[px * p->cin + ci];
                    acc += x * p->w[(size_t)co * p->cin + ci];
                }
                float v = ref_act_ext(ref_act_ext(acc, p->act1), p->act2);
                if (es)
                    v *= es[(size_t)n * p->cout + co];
                if (res)
                    v = ref_act_ext(v + res[px * p->cout + co], p->act3);
                out[px * p->cout + co] = v;
            }
        }
}

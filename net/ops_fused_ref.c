/*
 * ops_fused_ref.c - plain-C twins of the fused GPU kernels (ops_fused.h).
 *
 * Each twin states, in the simplest loops or as a composition of the
 * ops_ref.h ops, what its CUDA kernel (ops_pointwise.cu, ops_conv.cu,
 * ops_elem.cu) must compute; the GPU test harness (tests/gpu/) compares
 * them on random inputs. float32, host memory; only ref_se allocates (a deferred resize).
 */
#include "ops_fused.h"
#include "ops_ref.h"
#include "vr_err.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* ---- activations ---- */

float ref_act_ext(float x, int act)
{
    switch (act) {
    case CU_ACT_HSWISH: {
        float r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        return x * r / 6.0f;
    }
    case CU_ACT_LOGISTIC:
        return 1.0f / (1.0f + expf(-x));
    default:
        return op_act(x, act);
    }
}

/* ---- fused kernels' twins ---- */

/* TFLite's ResizeBilinear coordinate: lower / upper source index and the
 * scaled position (as ops_ref.c). */
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

void ref_dw_fused(const struct cu_dw_args *p)
{
    /* g.act is a model_act the twin op applies; the extended ones follow. */
    ref_dwconv2d(&p->g, p->in, p->w, p->bias, p->out);
    size_t count = (size_t)p->g.n * p->g.oh * p->g.ow * p->g.cout;
    float *out = p->out;
    const float *res = p->res;
    for (size_t i = 0; i < count; i++) {
        float v = ref_act_ext(out[i], p->act2);
        if (res)
            v = ref_act_ext(v + res[i], p->act3);
        out[i] = v;
    }
}

int ref_se(const struct cu_se_args *p)
{
    const float *in2 = p->in2;
    const float *in = p->in;
    float *out = p->out, *resized = NULL;
    float v[CU_SE_MAX_CH], t[CU_SE_MAX_CH];
    size_t hw = (size_t)p->h * p->w;
    if (p->in_rs_h > 0) {   /* the deferred resize, written out here */
        resized = malloc(hw * p->n * p->c * sizeof(float));
        if (!resized)
            return VR_ENOMEM;
        ref_resize_bilinear(p->n, p->in_rs_h, p->in_rs_w, p->c, in, p->h, p->w,
                            p->in_rs_align, p->in_rs_half, resized);
        in = resized;
    }
    for (int n = 0; n < p->n; n++) {
        for (int c = 0; c < p->c; c++) {
            float s = 0.0f;
            for (size_t i = 0; i < hw; i++)
                s += in[((size_t)n * hw + i) * p->c + c] +
                     (in2 ? in2[((size_t)n * hw + i) * p->c + c] : 0.0f);
            v[c] = s / (float)hw;
        }
        int c = p->c;
        for (int l = 0; l < p->n_layers; l++) {
            const struct cu_se_layer *L = &p->l[l];
            for (int co = 0; co < L->cout; co++) {
                float acc = L->bias ? L->bias[co] : 0.0f;
                for (int ci = 0; ci < L->cin; ci++)
                    acc += v[ci] * L->w[(size_t)co * L->cin + ci];
                t[co] = ref_act_ext(ref_act_ext(acc, L->act1), L->act2);
            }
            c = L->cout;
            for (int k = 0; k < c; k++)
                v[k] = t[k];
        }
        for (int k = 0; k < c; k++)
            out[(size_t)n * c + k] = v[k];
    }
    free(resized);
    return 0;
}

void ref_tconv_x(const struct conv_geom *g, const float *in, const float *w,
                 const float *b, int act, float *out)
{
    ref_tconv_bias(g, in, w, b, out);
    size_t count = (size_t)g->n * g->oh * g->ow * g->cout;
    for (size_t i = 0; i < count; i++)
        out[i] = ref_act_ext(out[i], act);
}

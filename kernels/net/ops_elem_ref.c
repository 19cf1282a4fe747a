/*
 * ops_elem_ref.c - the C twins of ops_elem.cu: AVERAGE_POOL_2D, MEAN,
 * the element-wise activations, ADD/MUL, RESIZE_BILINEAR (ops_ref.h) and
 * the squeeze-excite block (ref_se, ops_fused.h). Each follows TensorFlow
 * Lite's reference kernel down to the order of its floating-point sums (as
 * ops_conv_ref.c says), vectorised over contiguous channels in blocks of 8.
 */
#include "ops_fused.h"
#include "ops_ref.h"
#include "ops_vec.h"
#include "vr_err.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* ---- AVERAGE_POOL_2D and MEAN (reference/pooling.h, reduce.h) ---- */

void ref_avgpool(const struct conv_geom *g, const float *in, float *out)
{
    const int c = g->cin, act = g->act;
    float lo, hi;
    act_range(act, &lo, &hi);
    for (int n = 0; n < g->n; n++) {
        const float *inb = in + (size_t)n * g->ih * g->iw * c;
        for (int oy = 0; oy < g->oh; oy++) {
            const int iy0 = oy * g->sh - g->pad_top;
            const int fy0 = iy0 < 0 ? -iy0 : 0;
            const int fy1 = g->kh < g->ih - iy0 ? g->kh : g->ih - iy0;
            for (int ox = 0; ox < g->ow; ox++) {
                const int ix0 = ox * g->sw - g->pad_left;
                const int fx0 = ix0 < 0 ? -ix0 : 0;
                const int fx1 = g->kw < g->iw - ix0 ? g->kw : g->iw - ix0;
                float *o = out + (((size_t)n * g->oh + oy) * g->ow + ox) * c;
                /* The count of in-bounds taps, as a float like TFLite's. */
                const float count =
                    (float)((fy1 > fy0 ? fy1 - fy0 : 0) * (fx1 > fx0 ? fx1 - fx0 : 0));
                int c0 = 0;
                for (; c0 + 8 <= c; c0 += 8) {
                    v4 s0 = splat4(0.f), s1 = s0;
                    for (int fy = fy0; fy < fy1; fy++)
                        for (int fx = fx0; fx < fx1; fx++) {
                            const float *ip =
                                inb + ((size_t)(iy0 + fy) * g->iw + ix0 + fx) * c + c0;
                            s0 += ld4(ip);
                            s1 += ld4(ip + 4);
                        }
                    float t[8];
                    st4(t, s0);
                    st4(t + 4, s1);
                    /* No tap in bounds: TFLite fails the op; we write act(0). */
                    for (int j = 0; j < 8; j++)
                        o[c0 + j] = act == MACT_TANH
                                        ? tanhf(count > 0.f ? t[j] / count : 0.f)
                                        : clampf(count > 0.f ? t[j] / count : 0.f, lo, hi);
                }
                for (; c0 < c; c0++) {
                    float total = 0.f;
                    for (int fy = fy0; fy < fy1; fy++)
                        for (int fx = fx0; fx < fx1; fx++)
                            total += inb[((size_t)(iy0 + fy) * g->iw + ix0 + fx) * c + c0];
                    o[c0] = act == MACT_TANH ? tanhf(count > 0.f ? total / count : 0.f)
                                             : clampf(count > 0.f ? total / count : 0.f, lo, hi);
                }
            }
        }
    }
}

void ref_mean_hw(int n, int h, int w, int c, const float *in, float *out)
{
    const size_t hw = (size_t)h * w;
    for (int b = 0; b < n; b++) {
        const float *inb = in + (size_t)b * hw * c;
        float *o = out + (size_t)b * c;
        int c0 = 0;
        for (; c0 + 8 <= c; c0 += 8) {
            v4 s0 = splat4(0.f), s1 = s0;
            for (size_t p = 0; p < hw; p++) {
                s0 += ld4(inb + p * c + c0);
                s1 += ld4(inb + p * c + c0 + 4);
            }
            float t[8];
            st4(t, s0);
            st4(t + 4, s1);
            for (int j = 0; j < 8; j++)
                o[c0 + j] = t[j] / (float)(h * w);
        }
        for (; c0 < c; c0++) {
            float total = 0.f;
            for (size_t p = 0; p < hw; p++)
                total += inb[p * c + c0];
            o[c0] = total / (float)(h * w);
        }
    }
}

/* ---- element-wise ---- */

void ref_relu(const float *in, float *out, size_t count)
{
    /* reference_ops::Relu: x < 0 ? 0 : x (NaN stays NaN) */
    size_t i = 0;
    const v4 zero = splat4(0.f);
    for (; i + 4 <= count; i += 4) {
        const v4 x = ld4(in + i);
        st4(out + i, vsel(x < zero, zero, x));
    }
    for (; i < count; i++)
        out[i] = in[i] < 0.f ? 0.f : in[i];
}

void ref_hard_swish(const float *in, float *out, size_t count)
{
    /* reference_ops::HardSwish: in * min(6, max(0, in + 3)) / 6, with
     * std::max(0, r) = 0 < r ? r : 0 and std::min(6, r) = r < 6 ? r : 6. */
    size_t i = 0;
    const v4 zero = splat4(0.f), three = splat4(3.f), six = splat4(6.f);
    for (; i + 4 <= count; i += 4) {
        const v4 x = ld4(in + i);
        v4 r = x + three;
        r = vsel(zero < r, r, zero);
        r = vsel(r < six, r, six);
        st4(out + i, x * r / six);
    }
    for (; i < count; i++) {
        const float x = in[i];
        float r = x + 3.f;
        r = 0.f < r ? r : 0.f;
        r = r < 6.f ? r : 6.f;
        out[i] = x * r / 6.f;
    }
}

void ref_logistic(const float *in, float *out, size_t count)
{
    /* reference_ops::Logistic, with its cut-offs. */
    const float upper = 16.619047164916992188f, lower = -9.f;
    for (size_t i = 0; i < count; i++) {
        const float x = in[i];
        if (x > upper)
            out[i] = 1.f;
        else if (x < lower)
            out[i] = expf(x);
        else
            out[i] = 1.f / (1.f + expf(-x));
    }
}

/* ADD (op 0) or MUL (op 1) then clamp; b full or per-(n, c). */
static void binary(int n, int h, int w, int c, const float *a, const float *b, int b_full,
                   int act, int mul, float *out)
{
    float lo, hi;
    act_range(act, &lo, &hi);
    const size_t hw = (size_t)h * w;
    if (act == MACT_TANH) {
        /* Never in a model net_exec_ref.c accepts; kept consistent with op_act. */
        for (int bi = 0; bi < n; bi++)
            for (size_t p = 0; p < hw; p++)
                for (int ci = 0; ci < c; ci++) {
                    const size_t i = ((size_t)bi * hw + p) * c + ci;
                    const float y = b_full ? b[i] : b[(size_t)bi * c + ci];
                    out[i] = tanhf(mul ? a[i] * y : a[i] + y);
                }
        return;
    }
    for (int bi = 0; bi < n; bi++) {
        for (size_t p = 0; p < hw; p++) {
            const size_t base = ((size_t)bi * hw + p) * c;
            const float *ap = a + base;
            const float *bp = b_full ? b + base : b + (size_t)bi * c;
            float *op = out + base;
            const v4 vlo = splat4(lo), vhi = splat4(hi);
            int ci = 0;
            if (mul) {
                for (; ci + 4 <= c; ci += 4)
                    st4(op + ci, vclamp(ld4(ap + ci) * ld4(bp + ci), vlo, vhi));
                for (; ci < c; ci++)
                    op[ci] = clampf(ap[ci] * bp[ci], lo, hi);
            } else {
                for (; ci + 4 <= c; ci += 4)
                    st4(op + ci, vclamp(ld4(ap + ci) + ld4(bp + ci), vlo, vhi));
                for (; ci < c; ci++)
                    op[ci] = clampf(ap[ci] + bp[ci], lo, hi);
            }
        }
    }
}

void ref_add(int n, int h, int w, int c, const float *a, const float *b, int b_full,
             int act, float *out)
{
    binary(n, h, w, c, a, b, b_full, act, 0, out);
}

void ref_mul(int n, int h, int w, int c, const float *a, const float *b, int b_full,
             int act, float *out)
{
    binary(n, h, w, c, a, b, b_full, act, 1, out);
}

/* ---- RESIZE_BILINEAR (reference/resize_bilinear.h) ---- */

static void interp_values(int value, float scale, int half_pixel_centers, int input_size,
                          float *scaled, int *lower, int *upper)
{
    if (half_pixel_centers)
        *scaled = ((float)value + 0.5f) * scale - 0.5f;
    else
        *scaled = (float)value * scale;
    const int fl = (int)floorf(*scaled), ce = (int)ceilf(*scaled);
    *lower = fl > 0 ? fl : 0;
    *upper = ce < input_size - 1 ? ce : input_size - 1;
}

void ref_resize_bilinear(int n, int ih, int iw, int c, const float *in, int oh, int ow,
                         int align_corners, int half_pixel_centers, float *out)
{
    float hs = (float)ih / (float)oh, ws = (float)iw / (float)ow;
    if (align_corners && oh > 1)
        hs = (float)(ih - 1) / (float)(oh - 1);
    if (align_corners && ow > 1)
        ws = (float)(iw - 1) / (float)(ow - 1);
    for (int b = 0; b < n; b++) {
        const float *inb = in + (size_t)b * ih * iw * c;
        for (int y = 0; y < oh; y++) {
            float iy;
            int y0, y1;
            interp_values(y, hs, half_pixel_centers, ih, &iy, &y0, &y1);
            const float dy = iy - (float)y0;
            for (int x = 0; x < ow; x++) {
                float ix;
                int x0, x1;
                interp_values(x, ws, half_pixel_centers, iw, &ix, &x0, &x1);
                const float dx = ix - (float)x0;
                const float *p00 = inb + ((size_t)y0 * iw + x0) * c;
                const float *p10 = inb + ((size_t)y1 * iw + x0) * c;
                const float *p01 = inb + ((size_t)y0 * iw + x1) * c;
                const float *p11 = inb + ((size_t)y1 * iw + x1) * c;
                float *o = out + (((size_t)b * oh + y) * ow + x) * c;
                /* Same products in the same order per lane as below. */
                const v4 vdy = splat4(dy), vdx = splat4(dx);
                const v4 vey = splat4(1 - dy), vex = splat4(1 - dx);
                int ci = 0;
                for (; ci + 4 <= c; ci += 4)
                    st4(o + ci, ld4(p00 + ci) * vey * vex + ld4(p10 + ci) * vdy * vex +
                                    ld4(p01 + ci) * vey * vdx + ld4(p11 + ci) * vdy * vdx);
                for (; ci < c; ci++)
                    o[ci] = p00[ci] * (1 - dy) * (1 - dx) + p10[ci] * dy * (1 - dx) +
                            p01[ci] * (1 - dy) * dx + p11[ci] * dy * dx;
            }
        }
    }
}

/* ---- squeeze-excite (the fused kernel cu_se) ---- */

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

/*
 * util-model-ops.c - a model's ops run one at a time with the ops_ref.h references, for the tests
 * that check a fused twin against the ops it stands for (see util-model-ops.h). Test code: a
 * mismatch is a Criterion assert naming the op, so the test stops where the model surprised it.
 */
#include "util-model-ops.h"

#include "ops_ref.h"
#include "paths.h"
#include "vr_err.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

struct model *umo_load(const char *rel_path, int want_ops)
{
    char path[1024];
    cr_assert_eq(vr_data_path(rel_path, path, sizeof path), 0, "%s not found", rel_path);
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load(path, &m, &e), 0, "%s: %s", path, e.msg);
    cr_assert_eq(m->n_ops, want_ops, "not the model this test knows");
    return m;
}

const float *umo_bias(const struct model *m, const struct model_op *o)
{
    return o->n_in > 2 && o->in[2] >= 0 ? m->tensors[o->in[2]].data : NULL;
}

float *umo_random(size_t count, float lo, float hi, uint32_t *seed)
{
    float *x = malloc((count ? count : 1) * sizeof(float));
    cr_assert(x, "umo_random: out of memory for %zu floats", count);
    for (size_t i = 0; i < count; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        x[i] = lo + (float)(*seed >> 8) / (float)(1u << 24) * (hi - lo);
    }
    return x;
}

/* Checks a conv-like op's computed output size against the model's. */
static void check_size(int i, const struct model_op *o, const struct conv_geom *g,
                       const struct model_tensor *yt)
{
    cr_assert(g->oh == yt->shape[1] && g->ow == yt->shape[2],
              "op %d (%s): output size %dx%d, the model says %dx%d", i, model_op_name(o->kind),
              g->oh, g->ow, yt->shape[1], yt->shape[2]);
}

/* MUL / ADD: the full map first, the other the same size or one value per channel. */
static void run_eltwise(const struct model *m, int i, int n, float **buf, float *y)
{
    const struct model_op *o = &m->ops[i];
    const struct model_tensor *xt = &m->tensors[o->in[0]], *bt = &m->tensors[o->in[1]];
    const float *a = buf[o->in[0]], *b = buf[o->in[1]];
    cr_assert(b, "op %d: second input not computed", i);
    if (bt->count > xt->count) {
        const float *t = a; a = b; b = t;
        xt = bt, bt = &m->tensors[o->in[0]];
    }
    int full = bt->count == xt->count;
    cr_assert(full || bt->count == (size_t)xt->shape[3],
              "op %d (%s): %zu values against a map of %zu, neither full nor per channel", i,
              model_op_name(o->kind), bt->count, xt->count);
    (o->kind == MOP_ADD ? ref_add : ref_mul)(n, xt->shape[1], xt->shape[2], xt->shape[3], a, b,
                                            full, o->act, y);
}

float *umo_run(const struct model *m, int first, int last, int n, float **buf)
{
    cr_assert(first >= 0 && first <= last && last < m->n_ops && n > 0 && buf,
              "umo_run: ops %d..%d on batch %d is no range of the model's %d ops, or no buf",
              first, last, n, m->n_ops);
    for (int i = first; i <= last; i++) {
        const struct model_op *o = &m->ops[i];
        const struct model_tensor *xt = &m->tensors[o->in[0]], *yt = &m->tensors[o->out];
        const struct model_tensor *w = o->n_in > 1 && o->in[1] >= 0 ? &m->tensors[o->in[1]] : NULL;
        const float *a = buf[o->in[0]];
        cr_assert(a && !buf[o->out], "op %d: input not computed or output computed twice", i);
        const size_t count = (size_t)n * yt->count;
        float *y = buf[o->out] = malloc(count * sizeof(float));
        cr_assert(y, "op %d: out of memory for %zu floats", i, count);
        struct conv_geom g = { .n = n, .ih = xt->shape[1], .iw = xt->shape[2],
                               .cin = xt->shape[3], .sh = o->stride_h, .sw = o->stride_w,
                               .dh = o->dilation_h, .dw = o->dilation_w, .act = o->act };
        switch (o->kind) {
        case MOP_CONV_2D:
        case MOP_DEPTHWISE_CONV_2D: {
            int dw = o->kind == MOP_DEPTHWISE_CONV_2D;
            cr_assert(w && w->data, "op %d (%s): no constant weights", i, model_op_name(o->kind));
            g.cout = dw ? w->shape[3] : w->shape[0], g.kh = w->shape[1], g.kw = w->shape[2];
            op_conv_geom(&g, o->padding);
            check_size(i, o, &g, yt);
            (dw ? ref_dwconv2d : ref_conv2d)(&g, a, w->data, umo_bias(m, o), y);
            break;
        }
        case MOP_TRANSPOSE_CONV_BIAS:
            cr_assert(w && w->data, "op %d (%s): no constant weights", i, model_op_name(o->kind));
            g.cout = w->shape[0], g.kh = w->shape[1], g.kw = w->shape[2];
            op_tconv_geom(&g, o->padding);
            check_size(i, o, &g, yt);
            ref_tconv_bias(&g, a, w->data, umo_bias(m, o), y);
            break;
        case MOP_AVERAGE_POOL_2D:
            g.cout = g.cin, g.kh = o->filter_h, g.kw = o->filter_w, g.dh = g.dw = 1;
            op_conv_geom(&g, o->padding);
            check_size(i, o, &g, yt);
            ref_avgpool(&g, a, y);
            break;
        case MOP_HARD_SWISH:
            ref_hard_swish(a, y, count);
            break;
        case MOP_RELU:
            ref_relu(a, y, count);
            break;
        case MOP_LOGISTIC:
            ref_logistic(a, y, count);
            break;
        case MOP_MUL:
        case MOP_ADD:
            run_eltwise(m, i, n, buf, y);
            break;
        default:
            cr_assert_fail("op %d: %s is not one umo_run runs", i, model_op_name(o->kind));
        }
    }
    return buf[m->ops[last].out];
}

void umo_free_outputs(const struct model *m, int first, int last, float **buf)
{
    for (int i = first; i <= last; i++) {
        free(buf[m->ops[i].out]);
        buf[m->ops[i].out] = NULL;
    }
}

double umo_compare(const float *got, const float *want, size_t count, double atol, double rtol,
                   double *worst)
{
    double max_diff = 0, w = 0;
    for (size_t i = 0; i < count; i++) {
        cr_assert(isfinite(got[i]) && isfinite(want[i]), "element %zu not finite", i);
        double d = fabs((double)got[i] - want[i]), tol = atol + rtol * fabs(want[i]);
        cr_assert(d <= tol, "element %zu: got %.9g want %.9g", i, got[i], want[i]);
        max_diff = fmax(max_diff, d);
        w = fmax(w, d / tol);
    }
    if (worst)
        *worst = w;
    return max_diff;
}

/*
 * t-net-graph.c - the executor's paths the shipped models do not take,
 * on a small graph built in memory (struct model, as model_load() would
 * give it): a MEAN without keep_dims ([1,c] output), a MUL whose FIRST
 * operand is the per-channel one (swapped), ADD with constant operands of
 * one value per channel and of the full shape (expanded over the batch),
 * a 3x3 stride-2 conv with a fused activation, a downscaling resize, a
 * tconv with stride 3 > kernel 2, and an output with 2 channels (channel 0
 * copied out); batch 2. The result is compared with the same ops called
 * directly.
 */
#include "model.h"
#include "net.h"
#include "ops_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 8, W = 8, C = 8 };

/* Tensors of the graph. */
enum {
    T_IN, T_W0, T_B0, T_A0, T_AX, T_MEAN, T_GATE, T_K8, T_ADD1, T_KFULL, T_ADD2, T_W1,
    T_B1, T_A1, T_UP, T_W2, T_B2, T_OUT, T_COUNT
};

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.f - 1.f;
}

static void tensor(struct model *m, int t, int rank, const int *shape, unsigned *seed)
{
    struct model_tensor *x = &m->tensors[t];
    snprintf(x->name, sizeof x->name, "t%d", t);
    x->rank = rank;
    x->count = 1;
    for (int i = 0; i < rank; i++) {
        x->shape[i] = shape[i];
        x->count *= (size_t)shape[i];
    }
    if (seed) {
        x->data = malloc(x->count * sizeof(float));
        cr_assert(x->data);
        for (size_t i = 0; i < x->count; i++)
            x->data[i] = frand(seed) * 0.5f;
    }
}

static struct model_op op(enum model_op_kind k, int a, int b, int c, int out)
{
    struct model_op o = { .kind = k, .in = { a, b, c }, .out = out, .stride_h = 1,
                          .stride_w = 1, .dilation_h = 1, .dilation_w = 1 };
    o.n_in = c >= 0 ? 3 : b >= 0 ? 2 : 1;
    return o;
}

static struct model *build(void)
{
    unsigned s = 4242;
    struct model *m = calloc(1, sizeof *m);
    cr_assert(m);
    m->n_tensors = T_COUNT;
    m->tensors = calloc(T_COUNT, sizeof *m->tensors);
    m->ops = calloc(16, sizeof *m->ops);
    cr_assert(m->tensors && m->ops);
    tensor(m, T_IN, 4, (int[]){ 1, H, W, 3 }, NULL);
    tensor(m, T_W0, 4, (int[]){ C, 3, 3, 3 }, &s);          /* 3x3 stride 2 */
    tensor(m, T_B0, 1, (int[]){ C }, &s);
    tensor(m, T_A0, 4, (int[]){ 1, H / 2, W / 2, C }, NULL);
    tensor(m, T_AX, 1, (int[]){ 2 }, NULL);                 /* axes (unused) */
    tensor(m, T_MEAN, 2, (int[]){ 1, C }, NULL);            /* keep_dims = 0 */
    tensor(m, T_GATE, 4, (int[]){ 1, H / 2, W / 2, C }, NULL);
    tensor(m, T_K8, 1, (int[]){ C }, &s);
    tensor(m, T_ADD1, 4, (int[]){ 1, H / 2, W / 2, C }, NULL);
    tensor(m, T_KFULL, 4, (int[]){ 1, H / 2, W / 2, C }, &s);
    tensor(m, T_ADD2, 4, (int[]){ 1, H / 2, W / 2, C }, NULL);
    tensor(m, T_UP, 4, (int[]){ 1, 3, 3, C }, NULL);         /* resize 4x4 -> 3x3 */
    tensor(m, T_W1, 4, (int[]){ 4, 1, 1, C }, &s);           /* 1x1 8 -> 4 */
    tensor(m, T_B1, 1, (int[]){ 4 }, &s);
    tensor(m, T_A1, 4, (int[]){ 1, 3, 3, 4 }, NULL);
    tensor(m, T_W2, 4, (int[]){ 2, 2, 2, 4 }, &s);           /* tconv 2x2 stride 3 */
    tensor(m, T_B2, 1, (int[]){ 2 }, &s);
    tensor(m, T_OUT, 4, (int[]){ 1, H, W, 2 }, NULL);        /* 3*(3-1) + 2 = 8 */
    int n = 0;
    struct model_op o = op(MOP_CONV_2D, T_IN, T_W0, T_B0, T_A0);
    o.stride_h = o.stride_w = 2;
    o.act = MACT_RELU6;
    m->ops[n++] = o;
    m->ops[n++] = op(MOP_MEAN, T_A0, T_AX, -1, T_MEAN);
    m->ops[n++] = op(MOP_MUL, T_MEAN, T_A0, -1, T_GATE);    /* per-channel operand first */
    o = op(MOP_ADD, T_GATE, T_K8, -1, T_ADD1);
    o.act = MACT_RELU_N1_TO_1;
    m->ops[n++] = o;
    m->ops[n++] = op(MOP_ADD, T_ADD1, T_KFULL, -1, T_ADD2);
    o = op(MOP_RESIZE_BILINEAR, T_ADD2, -1, -1, T_UP);
    o.out_h = o.out_w = 3;
    o.align_corners = 1;
    m->ops[n++] = o;
    m->ops[n++] = op(MOP_CONV_2D, T_UP, T_W1, T_B1, T_A1);
    /* Stride 3 with a 2x2 kernel leaves every third row and column to the
     * bias alone. */
    o = op(MOP_TRANSPOSE_CONV_BIAS, T_A1, T_W2, T_B2, T_OUT);
    o.stride_h = o.stride_w = 3;
    o.padding = MPAD_SAME;
    m->ops[n++] = o;
    m->n_ops = n;
    m->input = T_IN;
    m->output = T_OUT;
    m->in_h = H;
    m->in_w = W;
    m->in_c = 3;
    m->out_c = 2;
    return m;
}

/* The same graph, op by op, one item. */
static void direct(const struct model *m, const float *in, float *out)
{
    enum { P = (H / 2) * (W / 2) * C };
    float a0[P], mean[C], gate[P], add1[P], add2[P], up[3 * 3 * C], a1[3 * 3 * 4],
        y[H * W * 2];
    struct conv_geom g = { .n = 1, .ih = H, .iw = W, .cin = 3, .cout = C, .kh = 3, .kw = 3,
                           .sh = 2, .sw = 2, .dh = 1, .dw = 1, .act = MACT_RELU6 };
    op_conv_geom(&g, MPAD_SAME);
    ref_conv2d(&g, in, m->tensors[T_W0].data, m->tensors[T_B0].data, a0);
    ref_mean_hw(1, H / 2, W / 2, C, a0, mean);
    ref_mul(1, H / 2, W / 2, C, a0, mean, 0, MACT_NONE, gate);
    ref_add(1, H / 2, W / 2, C, gate, m->tensors[T_K8].data, 0, MACT_RELU_N1_TO_1, add1);
    ref_add(1, H / 2, W / 2, C, add1, m->tensors[T_KFULL].data, 1, MACT_NONE, add2);
    ref_resize_bilinear(1, H / 2, W / 2, C, add2, 3, 3, 1, 0, up);
    g = (struct conv_geom){ .n = 1, .ih = 3, .iw = 3, .cin = C, .cout = 4, .kh = 1, .kw = 1,
                            .sh = 1, .sw = 1, .dh = 1, .dw = 1 };
    op_conv_geom(&g, MPAD_SAME);
    ref_conv2d(&g, up, m->tensors[T_W1].data, m->tensors[T_B1].data, a1);
    g = (struct conv_geom){ .n = 1, .ih = 3, .iw = 3, .cin = 4, .cout = 2, .kh = 2, .kw = 2,
                            .sh = 3, .sw = 3, .dh = 1, .dw = 1 };
    op_tconv_geom(&g, MPAD_SAME);
    cr_assert_eq(g.oh, H);
    cr_assert_eq(g.ow, W);
    ref_tconv_bias(&g, a1, m->tensors[T_W2].data, m->tensors[T_B2].data, y);
    /* rows/cols 2 and 5 get no tap: the bias alone */
    cr_assert_eq(y[(2 * W + 0) * 2], m->tensors[T_B2].data[0]);
    for (int p = 0; p < H * W; p++)
        out[p] = y[2 * p];
}

Test(net_graph, untaken_paths_match_direct_calls)
{
    struct model *m = build();
    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert_eq(net_create(m, 2, &net, &e), 0, "%s", e.msg);
    unsigned s = 7;
    float in[2 * H * W * 3], out[2 * H * W], want[H * W];
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        in[i] = frand(&s) + 0.5f;
    cr_assert_eq(net_run(net, in, 2, out, &e), 0, "%s", e.msg);
    for (int k = 0; k < 2; k++) {
        direct(m, in + k * H * W * 3, want);
        for (int p = 0; p < H * W; p++)
            cr_assert(fabsf(out[k * H * W + p] - want[p]) <= 1e-6f * (1 + fabsf(want[p])),
                      "item %d pixel %d: net %.9g, direct %.9g", k, p, out[k * H * W + p],
                      want[p]);
    }
    /* The two items differ, so the constants were expanded, not shared
     * wrongly, and the gate is per item. */
    cr_assert(memcmp(out, out + H * W, sizeof want) != 0);
    net_free(&net);
    model_free(&m);
}

Test(net_graph, rejects_unbroadcastable_and_bad_output)
{
    struct model *m = build();
    struct net *net = NULL;
    vr_err e = { 0 };
    /* A constant of the wrong length for ADD. */
    m->tensors[T_K8].shape[0] = 5;
    m->tensors[T_K8].count = 5;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_ENOTSUP);
    cr_assert(strstr(e.msg, "ADD") && strstr(e.msg, "5 values"), "%s", e.msg);
    m->tensors[T_K8].shape[0] = C;
    m->tensors[T_K8].count = C;
    /* A graph output smaller than the input: no mask of the input's size. */
    m->output = T_A1; /* 3x3 */
    cr_assert_eq(net_create(m, 1, &net, &e), VR_ENOTSUP);
    cr_assert(strstr(e.msg, "mask"), "%s", e.msg);
    m->output = T_OUT;
    /* Declared shape disagreeing with the op (the tconv gives 8). */
    m->tensors[T_OUT].shape[1] = H + 1;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "Convolution2DTransposeBias") && strstr(e.msg, "in the file"),
              "%s", e.msg);
    m->tensors[T_OUT].shape[1] = H;
    cr_assert_eq(net_create(m, 1, &net, &e), 0, "%s", e.msg);
    net_free(&net);
    model_free(&m);
}

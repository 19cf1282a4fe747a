/*
 * t-net-ops-pwdw.c - ref_pwdw (ops_fused.h), the C twin of the 1x1 + depthwise
 * kernel, against the tflite ops it stands for: the real selfie model's four
 * encoder pairs (1x1 conv, its activation, depthwise conv, its activation),
 * run one op at a time with the plain ops_ref.h references (umo_run,
 * util-model-ops.c), then as one ref_pwdw call built from the same weights.
 * Then the twin's argument checks.
 */
#include "model.h"
#include "ops_fused.h"
#include "util-model-ops.h"
#include "vr_err.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>

#define MODEL "models/selfie_segmentation.tflite"
#define N 2

/* First op of each pair (1x1 conv, activation, depthwise, activation) and
 * the activation after each conv, as the planner absorbs them. */
static const struct { int op, act_p, act_d; } pairs[] = {
    { 2, CU_ACT_RELU, CU_ACT_RELU },     /* 128x128: 16 -> 16, 3x3 stride 2 */
    { 13, CU_ACT_RELU, CU_ACT_RELU },    /* 64x64: 16 -> 72, 3x3 stride 2 */
    { 18, CU_ACT_RELU, CU_ACT_RELU },    /* 32x32: 24 -> 88, 3x3 stride 1 */
    { 24, CU_ACT_HSWISH, CU_ACT_HSWISH }, /* 32x32: 24 -> 96, 5x5 stride 2 */
};

static enum model_op_kind act_kind(int act)
{
    return act == CU_ACT_RELU ? MOP_RELU : MOP_HARD_SWISH;
}

Test(net_ops_pwdw, real_pairs_equal_the_tflite_ops)
{
    struct model *m = umo_load(MODEL, 136);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const struct model_op *o = &m->ops[pairs[i].op];
        cr_assert(o[0].kind == MOP_CONV_2D && o[1].kind == act_kind(pairs[i].act_p) &&
                  o[2].kind == MOP_DEPTHWISE_CONV_2D && o[3].kind == act_kind(pairs[i].act_d),
                  "ops %d..%d are not a 1x1 conv and a depthwise conv", pairs[i].op,
                  pairs[i].op + 3);
        const struct model_tensor *x = &m->tensors[o[0].in[0]];
        const struct model_tensor *wp = &m->tensors[o[0].in[1]], *wd = &m->tensors[o[2].in[1]];
        const struct model_tensor *y = &m->tensors[o[3].out];
        cr_assert(wp->shape[1] == 1 && wp->shape[2] == 1, "op %d is not 1x1", pairs[i].op);
        struct cu_pwdw_args a = {
            .g = { .n = N, .ih = x->shape[1], .iw = x->shape[2], .cin = wp->shape[0],
                   .cout = wp->shape[0], .kh = wd->shape[1], .kw = wd->shape[2],
                   .sh = o[2].stride_h, .sw = o[2].stride_w, .dh = 1, .dw = 1,
                   .act = o[2].act },
            .cin = x->shape[3], .wp = wp->data, .bp = umo_bias(m, &o[0]),
            .act_p1 = o[0].act, .act_p2 = pairs[i].act_p,
            .wd = wd->data, .bd = umo_bias(m, &o[2]), .act_d2 = pairs[i].act_d,
        };
        op_conv_geom(&a.g, o[2].padding);
        cr_assert(a.g.oh == y->shape[1] && a.g.ow == y->shape[2]);

        uint32_t s = 777 + (uint32_t)i;
        float *in = umo_random((size_t)N * x->count, -2.f, 2.f, &s);
        const size_t count = (size_t)N * y->count;
        float *got = malloc(count * sizeof(float));
        float **buf = calloc((size_t)m->n_tensors, sizeof *buf);
        cr_assert(got && buf);
        buf[o[0].in[0]] = in;
        const float *want = umo_run(m, pairs[i].op, pairs[i].op + 3, N, buf);
        a.in = in;
        a.out = got;
        cr_assert_eq(ref_pwdw(&a), 0);
        double worst = 0, d = umo_compare(got, want, count, 5e-5, 1e-4, &worst);
        cr_log_info("pw+dw ops %d..%d vs tflite ops: max |diff| %.3g (%.2f of the tolerance)",
                    pairs[i].op, pairs[i].op + 3, d, worst);
        umo_free_outputs(m, pairs[i].op, pairs[i].op + 3, buf);
        free(buf);
        free(in);
        free(got);
    }
    model_free(&m);
}

Test(net_ops_pwdw, bad_arguments_are_refused)
{
    float w[64] = { 0 }, out[64];
    struct cu_pwdw_args ok = {
        .g = { .n = 1, .ih = 2, .iw = 2, .cin = 4, .cout = 4, .kh = 3, .kw = 3, .sh = 1,
               .sw = 1, .dh = 1, .dw = 1 },
        .cin = 4, .in = w, .wp = w, .wd = w, .out = out,
    };
    op_conv_geom(&ok.g, MPAD_SAME);
    cr_assert_eq(ref_pwdw(&ok), 0);
    struct cu_pwdw_args bad = ok;
    bad.in = NULL;
    cr_assert_eq(ref_pwdw(&bad), VR_EINVAL);
    bad = ok;
    bad.wd = NULL;
    cr_assert_eq(ref_pwdw(&bad), VR_EINVAL);
    bad = ok;
    bad.g.cout = 8;                         /* depthwise multiplier 1 only */
    cr_assert_eq(ref_pwdw(&bad), VR_EINVAL);
    bad = ok;
    bad.cin = 0;
    cr_assert_eq(ref_pwdw(&bad), VR_EINVAL);
    cr_assert_eq(ref_pwdw(NULL), VR_EINVAL);
}

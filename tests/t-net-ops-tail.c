/*
 * t-net-ops-tail.c - ref_tail (ops_fused.h), the C twin of the decoder-tail
 * kernel, against the tflite ops it stands for: the real selfie model's last
 * stage (ops 127..135: SE scale, skip ADD, 1x1 conv, depthwise residual,
 * transpose conv, sigmoid) run one op at a time with the plain ops_ref.h
 * references (umo_run, util-model-ops.c), then as one ref_tail call built
 * from the same weights. The twin is composed from the fused twins, so this
 * checks that the fusion means what the model's ops mean. Then the tail's
 * argument checks.
 */
#include "model.h"
#include "ops_fused.h"
#include "util-model-ops.h"
#include "vr_err.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define MODEL "models/selfie_segmentation.tflite"
#define FIRST_OP 127     /* the SE scale MUL */
#define N_OPS 9
#define N 2              /* batch: more than one image, so per-image indexing is tested */
#define HW 128
#define C 16

/* The tail's ops, in order: [2] pointwise, [4] depthwise, [7] tconv. */
static const enum model_op_kind kinds[N_OPS] = {
    MOP_MUL, MOP_ADD, MOP_CONV_2D, MOP_RELU, MOP_DEPTHWISE_CONV_2D, MOP_RELU, MOP_ADD,
    MOP_TRANSPOSE_CONV_BIAS, MOP_LOGISTIC,
};

static int has_in(const struct model_op *o, int t)
{
    return o->in[0] == t || (o->n_in > 1 && o->in[1] == t);
}

Test(net_ops_tail, real_decoder_tail_equals_the_tflite_ops)
{
    struct model *m = umo_load(MODEL, 136);
    const struct model_op *o = &m->ops[FIRST_OP];
    for (int j = 0; j < N_OPS; j++)
        cr_assert_eq(o[j].kind, kinds[j], "op %d is %s, want %s", FIRST_OP + j,
                     model_op_name(o[j].kind), model_op_name(kinds[j]));
    /* The dataflow ref_tail hard-wires: a straight chain, except that op 128
     * adds the external skip b and op 133 adds the ReLU'd pointwise output
     * to the ReLU'd depthwise output (the depthwise residual). */
    cr_assert(has_in(&o[1], o[0].out) && has_in(&o[6], o[3].out) && has_in(&o[6], o[5].out));
    for (int j = 2; j < N_OPS; j++)
        cr_assert(j == 6 || o[j].in[0] == o[j - 1].out, "op %d: not fed by op %d",
                  FIRST_OP + j, FIRST_OP + j - 1);
    const struct model_tensor *wp = &m->tensors[o[2].in[1]], *wd = &m->tensors[o[4].in[1]];
    const struct model_tensor *wt = &m->tensors[o[7].in[1]];
    cr_assert(wp->shape[0] == C && wp->shape[1] == 1 && wp->shape[2] == 1 && wp->shape[3] == C);
    cr_assert(wd->shape[1] == 3 && wd->shape[2] == 3 && wd->shape[3] == C &&
              o[4].stride_h == 1 && o[4].stride_w == 1 && o[4].padding == MPAD_SAME,
              "depthwise is not 3x3 stride 1 SAME");
    cr_assert(wt->shape[0] == 1 && wt->shape[1] == 2 && wt->shape[2] == 2 && wt->shape[3] == C &&
              o[7].stride_h == 2 && o[7].stride_w == 2 && o[7].padding == MPAD_SAME,
              "tconv is not 2x2 stride 2 SAME to one channel");

    /* The three external tensors: the MUL's map and scale, the ADD's skip. */
    int ta = o[0].in[0], ts = o[0].in[1];
    if (m->tensors[ts].count > m->tensors[ta].count) {
        int t = ta; ta = ts; ts = t;
    }
    int tb = o[1].in[0] == o[0].out ? o[1].in[1] : o[1].in[0];
    const struct model_tensor *at = &m->tensors[ta], *bt = &m->tensors[tb];
    cr_assert(at->shape[1] == HW && at->shape[2] == HW && at->shape[3] == C);
    cr_assert(m->tensors[ts].count == C && bt->count == at->count);
    const size_t map = (size_t)N * HW * HW * C, count = (size_t)N * 2 * HW * 2 * HW;
    uint32_t s = 12345;
    float *a = umo_random(map, -2.f, 2.f, &s), *scale = umo_random((size_t)N * C, 0.f, 1.f, &s);
    float *b = umo_random(map, -2.f, 2.f, &s), *got = malloc(count * sizeof(float));
    float **buf = calloc((size_t)m->n_tensors, sizeof *buf);
    cr_assert(got && buf);
    buf[ta] = a, buf[ts] = scale, buf[tb] = b;
    const float *want = umo_run(m, FIRST_OP, FIRST_OP + N_OPS - 1, N, buf);

    struct cu_tail_args p = {
        .n = N, .h = HW, .w = HW, .cin = C, .c = C, .k = 3, .cout = 1,
        .a = a, .a_scale = scale, .b = b,
        .wp = wp->data, .bp = umo_bias(m, &o[2]), .act_p1 = o[2].act, .act_p2 = CU_ACT_RELU,
        .wd = wd->data, .bd = umo_bias(m, &o[4]), .act_d1 = o[4].act, .act_d2 = CU_ACT_RELU,
        .act_d3 = o[6].act,
        .wt = wt->data, .bt = umo_bias(m, &o[7]), .act_t = CU_ACT_LOGISTIC, .out = got,
    };
    cr_assert_eq(ref_tail(&p), 0);

    double worst, max_diff = umo_compare(got, want, count, 5e-5, 1e-4, &worst);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < count; i++)
        lo = fmin(lo, got[i]), hi = fmax(hi, got[i]);
    /* A saturated sigmoid (all 0 or all 1) would make the comparison empty. */
    cr_assert_gt(hi - lo, 0.01, "the tail's output is constant (%g..%g)", lo, hi);
    cr_log_info("tail vs tflite ops: max |diff| %.3g (%.2f of the tolerance) over %zu values; "
                "output %.3g..%.3g", max_diff, worst, count, lo, hi);
    umo_free_outputs(m, FIRST_OP, FIRST_OP + N_OPS - 1, buf);
    free(buf); free(a); free(scale); free(b); free(got);
    model_free(&m);
}

Test(net_ops_tail, bad_arguments_are_refused)
{
    /* A tiny valid tail first, so each refusal below is the one change. */
    static float zeros[64], a[32], out[32];
    struct cu_tail_args ok = { .n = 1, .h = 2, .w = 2, .cin = 4, .c = 4, .k = 3, .cout = 1,
                               .a = a, .wp = zeros, .wd = zeros, .wt = zeros, .bt = zeros,
                               .out = out };
    cr_assert_eq(ref_tail(&ok), 0);

    struct cu_tail_args p = ok;
    p.a = NULL;
    cr_assert_eq(ref_tail(&p), VR_EINVAL, "NULL a");
    p = ok, p.wp = NULL;
    cr_assert_eq(ref_tail(&p), VR_EINVAL, "NULL wp");
    p = ok, p.bt = NULL;
    cr_assert_eq(ref_tail(&p), VR_EINVAL, "NULL bt (the tconv's bias is required)");
    p = ok, p.k = 2;
    cr_assert_eq(ref_tail(&p), VR_EINVAL, "even k");
    p = ok, p.n = 0;
    cr_assert_eq(ref_tail(&p), VR_EINVAL, "n 0");
}

/*
 * t-ops-block.c - ref_ir_chain (ops_fused.h), the C twin of the chained
 * inverted-residual block kernel, against the tflite ops it stands for: the
 * four 16x16x32 bottleneck blocks of the real selfie model (ops 35..82) run
 * one op at a time with the plain ops_ref.h references, then as one chain
 * built from the same weights. The twin is built from the fused twins, so
 * this checks that the fusion means what the model's ops mean. Then the
 * chain's argument checks.
 */
#include "model.h"
#include "ops_fused.h"
#include "ops_ref.h"
#include "paths.h"
#include "vr_err.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define MODEL "models/selfie_segmentation.tflite"
#define FIRST_OP 35      /* first op of the first block */
#define N_BLOCKS 4
#define BLOCK_OPS 12
#define N 2              /* batch: the chain runs one image per thread block */
#define HW 16
#define C 32

/* One block's ops, in order; [0] expand, [2] depthwise, [5] and [7] the
 * squeeze-excite convs, [10] project. */
static const enum model_op_kind kinds[BLOCK_OPS] = {
    MOP_CONV_2D, MOP_HARD_SWISH, MOP_DEPTHWISE_CONV_2D, MOP_HARD_SWISH, MOP_AVERAGE_POOL_2D,
    MOP_CONV_2D, MOP_RELU, MOP_CONV_2D, MOP_LOGISTIC, MOP_MUL, MOP_CONV_2D, MOP_ADD,
};
static const int want_ce[N_BLOCKS] = { 128, 128, 96, 96 }, want_cs[N_BLOCKS] = { 32, 32, 24, 24 };

/* ---- the per-op reference ---- */

static const float *bias(const struct model *m, const struct model_op *o)
{
    return o->n_in > 2 && o->in[2] >= 0 ? m->tensors[o->in[2]].data : NULL;
}

/* Runs ops [first, last] with the ops_ref.h functions, a buffer per tensor
 * id (batch N of the model's N=1 shapes); x is the first op's input.
 * Returns the last op's output, which the caller frees. */
static float *run_ops(const struct model *m, int first, int last, const float *x)
{
    float **buf = calloc((size_t)m->n_tensors, sizeof *buf);
    cr_assert(buf);
    buf[m->ops[first].in[0]] = (float *)x;
    for (int i = first; i <= last; i++) {
        const struct model_op *o = &m->ops[i];
        const struct model_tensor *xt = &m->tensors[o->in[0]], *yt = &m->tensors[o->out];
        const struct model_tensor *w = o->n_in > 1 && o->in[1] >= 0 ? &m->tensors[o->in[1]] : NULL;
        const float *a = buf[o->in[0]];
        cr_assert(a && !buf[o->out], "op %d: input not computed or output computed twice", i);
        const size_t count = N * yt->count;
        float *y = buf[o->out] = malloc(count * sizeof(float));
        cr_assert(y);
        struct conv_geom g = { .n = N, .ih = xt->shape[1], .iw = xt->shape[2],
                               .cin = xt->shape[3], .sh = o->stride_h, .sw = o->stride_w,
                               .dh = o->dilation_h, .dw = o->dilation_w, .act = o->act };
        if (o->kind == MOP_CONV_2D || o->kind == MOP_DEPTHWISE_CONV_2D) {
            int dw = o->kind == MOP_DEPTHWISE_CONV_2D;
            g.cout = dw ? w->shape[3] : w->shape[0], g.kh = w->shape[1], g.kw = w->shape[2];
            op_conv_geom(&g, o->padding);
            cr_assert(g.oh == yt->shape[1] && g.ow == yt->shape[2], "op %d: output size", i);
            (dw ? ref_dwconv2d : ref_conv2d)(&g, a, w->data, bias(m, o), y);
        } else if (o->kind == MOP_AVERAGE_POOL_2D) {
            g.cout = g.cin, g.kh = o->filter_h, g.kw = o->filter_w, g.dh = g.dw = 1;
            op_conv_geom(&g, o->padding);
            cr_assert(g.oh == yt->shape[1] && g.ow == yt->shape[2], "op %d: output size", i);
            ref_avgpool(&g, a, y);
        } else if (o->kind == MOP_HARD_SWISH) {
            ref_hard_swish(a, y, count);
        } else if (o->kind == MOP_RELU) {
            ref_relu(a, y, count);
        } else if (o->kind == MOP_LOGISTIC) {
            ref_logistic(a, y, count);
        } else {
            /* MUL / ADD: the full map first, the other full or [1][1][c]. */
            const float *b = buf[o->in[1]];
            const struct model_tensor *bt = &m->tensors[o->in[1]];
            cr_assert(b, "op %d: second input not computed", i);
            if (bt->count > xt->count) {
                const float *t = a; a = b; b = t;
                xt = bt, bt = &m->tensors[o->in[0]];
            }
            int full = bt->count == xt->count;
            (o->kind == MOP_ADD ? ref_add : ref_mul)(N, xt->shape[1], xt->shape[2],
                                                    xt->shape[3], a, b, full, o->act, y);
        }
    }
    float *out = buf[m->ops[last].out];
    for (int i = first; i < last; i++)
        free(buf[m->ops[i].out]);
    free(buf);
    return out;
}

/* ---- the chain from the same weights ---- */

/* Fills block b from its ops, checking the pattern the chain assumes. */
static void block_from(const struct model *m, const struct model_op *o, int b,
                       struct cu_ir_block *blk)
{
    for (int j = 0; j < BLOCK_OPS; j++)
        cr_assert_eq(o[j].kind, kinds[j], "op %d is %s, want %s", FIRST_OP + BLOCK_OPS * b + j,
                     model_op_name(o[j].kind), model_op_name(kinds[j]));
    const struct model_tensor *wd = &m->tensors[o[2].in[1]];
    cr_assert(wd->shape[1] == 5 && wd->shape[2] == 5 && o[2].stride_h == 1 &&
              o[2].padding == MPAD_SAME, "block %d: depthwise is not 5x5 stride 1 SAME", b);
    cr_assert(o[4].filter_h == HW && o[4].filter_w == HW, "block %d: pool is not global", b);
    cr_assert(o[11].in[0] == o[0].in[0] || o[11].in[1] == o[0].in[0],
              "block %d: ADD does not add the block input", b);
    *blk = (struct cu_ir_block){
        .ce = m->tensors[o[0].in[1]].shape[0], .k = wd->shape[1],
        .cs = m->tensors[o[5].in[1]].shape[0],
        .we = m->tensors[o[0].in[1]].data, .be = bias(m, &o[0]),
        .act_e1 = o[0].act, .act_e2 = CU_ACT_HSWISH,
        .wd = wd->data, .bd = bias(m, &o[2]), .act_d1 = o[2].act, .act_d2 = CU_ACT_HSWISH,
        .w1 = m->tensors[o[5].in[1]].data, .b1 = bias(m, &o[5]),
        .act_r1 = o[5].act, .act_r2 = CU_ACT_RELU,
        .w2 = m->tensors[o[7].in[1]].data, .b2 = bias(m, &o[7]),
        .act_s1 = o[7].act, .act_s2 = CU_ACT_LOGISTIC,
        .wp = m->tensors[o[10].in[1]].data, .bp = bias(m, &o[10]),
        .act_p1 = o[10].act, .act_p2 = CU_ACT_NONE,
        .residual = 1, .act3 = CU_ACT_NONE,
    };
    cr_assert(blk->ce == want_ce[b] && blk->cs == want_cs[b], "block %d: ce %d cs %d", b,
              blk->ce, blk->cs);
}

Test(ops_block, real_bottleneck_equals_the_tflite_ops)
{
    char path[1024];
    cr_assert_eq(vr_data_path(MODEL, path, sizeof path), 0, MODEL " not found");
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load(path, &m, &e), 0, "%s: %s", path, e.msg);
    cr_assert_eq(m->n_ops, 136, "not the model this test knows");
    const struct model_tensor *xt = &m->tensors[m->ops[FIRST_OP].in[0]];
    cr_assert(xt->shape[1] == HW && xt->shape[2] == HW && xt->shape[3] == C);

    const size_t count = (size_t)N * HW * HW * C;
    float *x = malloc(count * sizeof(float)), *got = malloc(count * sizeof(float));
    cr_assert(x && got);
    uint32_t s = 12345;
    for (size_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 24) * 4.f - 2.f;
    }
    float *want = run_ops(m, FIRST_OP, FIRST_OP + N_BLOCKS * BLOCK_OPS - 1, x);

    struct cu_ir_args p = { .n = N, .h = HW, .w = HW, .c = C, .in = x, .out = got,
                            .n_blocks = N_BLOCKS };
    for (int b = 0; b < N_BLOCKS; b++)
        block_from(m, &m->ops[FIRST_OP + BLOCK_OPS * b], b, &p.b[b]);
    cr_assert_eq(ref_ir_chain(&p), 0);

    double max_diff = 0, worst = 0, max_moved = 0; /* worst: diff / tolerance */
    for (size_t i = 0; i < count; i++) {
        cr_assert(isfinite(got[i]) && isfinite(want[i]), "element %zu not finite", i);
        double d = fabs((double)got[i] - want[i]), tol = 5e-5 + 1e-4 * fabs(want[i]);
        cr_assert(d <= tol, "element %zu: got %.9g want %.9g", i, got[i], want[i]);
        max_diff = fmax(max_diff, d);
        worst = fmax(worst, d / tol);
        max_moved = fmax(max_moved, fabs((double)got[i] - x[i]));
    }
    /* Four blocks that left x as it was would make the comparison empty. */
    cr_assert_gt(max_moved, 0.1, "the blocks did not change the input");
    cr_log_info("ir chain vs tflite ops: max |diff| %.3g (%.2f of the tolerance) over %zu "
                "values; max |y - x| %.3g", max_diff, worst, count, max_moved);
    free(x); free(got); free(want);
    model_free(&m);
}

Test(ops_block, bad_arguments_are_refused)
{
    /* A tiny valid chain first, so each refusal below is the one change. */
    static float zeros[128], in[32], out[32];
    struct cu_ir_block blk = { .ce = 8, .k = 3, .cs = 8, .we = zeros, .wd = zeros,
                               .w1 = zeros, .w2 = zeros, .wp = zeros, .residual = 1 };
    struct cu_ir_args ok = { .n = 1, .h = 2, .w = 2, .c = 8, .in = in, .out = out,
                             .n_blocks = 1, .b = { blk } };
    cr_assert_eq(ref_ir_chain(&ok), 0);

    struct cu_ir_args p = ok;
    p.n_blocks = 0;
    cr_assert_eq(ref_ir_chain(&p), VR_EINVAL, "n_blocks 0");
    p.n_blocks = CU_IR_MAX_BLOCKS + 1;
    cr_assert_eq(ref_ir_chain(&p), VR_EINVAL, "n_blocks > CU_IR_MAX_BLOCKS");
    for (int j = 0; j < 5; j++) {
        p = ok;
        const float **w[5] = { &p.b[0].we, &p.b[0].wd, &p.b[0].w1, &p.b[0].w2, &p.b[0].wp };
        *w[j] = NULL;
        cr_assert_eq(ref_ir_chain(&p), VR_EINVAL, "weight %d NULL", j);
    }
    p = ok;
    p.b[0].k = 4;
    cr_assert_eq(ref_ir_chain(&p), VR_EINVAL, "even k");
    p = ok;
    p.in = NULL;
    cr_assert_eq(ref_ir_chain(&p), VR_EINVAL, "NULL in");
}

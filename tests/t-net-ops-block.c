/*
 * t-net-ops-block.c - ref_ir_chain (ops_fused.h), the C twin of the chained
 * inverted-residual block kernel, against the tflite ops it stands for: the
 * four 16x16x32 bottleneck blocks of the real selfie model (ops 35..82) run
 * one op at a time with the plain ops_ref.h references (umo_run,
 * util-model-ops.c), then as one chain built from the same weights. The twin
 * is built from the fused twins, so this checks that the fusion means what
 * the model's ops mean. Then the chain's argument checks.
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
        .we = m->tensors[o[0].in[1]].data, .be = umo_bias(m, &o[0]),
        .act_e1 = o[0].act, .act_e2 = CU_ACT_HSWISH,
        .wd = wd->data, .bd = umo_bias(m, &o[2]), .act_d1 = o[2].act, .act_d2 = CU_ACT_HSWISH,
        .w1 = m->tensors[o[5].in[1]].data, .b1 = umo_bias(m, &o[5]),
        .act_r1 = o[5].act, .act_r2 = CU_ACT_RELU,
        .w2 = m->tensors[o[7].in[1]].data, .b2 = umo_bias(m, &o[7]),
        .act_s1 = o[7].act, .act_s2 = CU_ACT_LOGISTIC,
        .wp = m->tensors[o[10].in[1]].data, .bp = umo_bias(m, &o[10]),
        .act_p1 = o[10].act, .act_p2 = CU_ACT_NONE,
        .residual = 1, .act3 = CU_ACT_NONE,
    };
    cr_assert(blk->ce == want_ce[b] && blk->cs == want_cs[b], "block %d: ce %d cs %d", b,
              blk->ce, blk->cs);
}

Test(net_ops_block, real_bottleneck_equals_the_tflite_ops)
{
    struct model *m = umo_load(MODEL, 136);
    const struct model_tensor *xt = &m->tensors[m->ops[FIRST_OP].in[0]];
    cr_assert(xt->shape[1] == HW && xt->shape[2] == HW && xt->shape[3] == C);

    const size_t count = (size_t)N * HW * HW * C;
    uint32_t s = 12345;
    float *x = umo_random(count, -2.f, 2.f, &s), *got = malloc(count * sizeof(float));
    float **buf = calloc((size_t)m->n_tensors, sizeof *buf);
    cr_assert(got && buf);
    buf[m->ops[FIRST_OP].in[0]] = x;
    const int last = FIRST_OP + N_BLOCKS * BLOCK_OPS - 1;
    const float *want = umo_run(m, FIRST_OP, last, N, buf);

    struct cu_ir_args p = { .n = N, .h = HW, .w = HW, .c = C, .in = x, .out = got,
                            .n_blocks = N_BLOCKS };
    for (int b = 0; b < N_BLOCKS; b++)
        block_from(m, &m->ops[FIRST_OP + BLOCK_OPS * b], b, &p.b[b]);
    cr_assert_eq(ref_ir_chain(&p), 0);

    double worst, max_diff = umo_compare(got, want, count, 5e-5, 1e-4, &worst), max_moved = 0;
    for (size_t i = 0; i < count; i++)
        max_moved = fmax(max_moved, fabs((double)got[i] - x[i]));
    /* Four blocks that left x as it was would make the comparison empty. */
    cr_assert_gt(max_moved, 0.1, "the blocks did not change the input");
    cr_log_info("ir chain vs tflite ops: max |diff| %.3g (%.2f of the tolerance) over %zu "
                "values; max |y - x| %.3g", max_diff, worst, count, max_moved);
    umo_free_outputs(m, FIRST_OP, last, buf);
    free(buf); free(x); free(got);
    model_free(&m);
}

Test(net_ops_block, bad_arguments_are_refused)
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

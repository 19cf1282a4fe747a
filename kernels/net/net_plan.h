/*
 * net_plan.h - the GPU network's plan, in plain C: the model's op list
 * turned into kernel steps once, fused where a kernel takes the geometry,
 * ordered, each materialised tensor given a dtype and an offset in one
 * reused activation arena, each constant tensor an offset in one weight
 * block. No CUDA call: the GPU executor (net_exec.cu) runs what the plan
 * says, and the CPU build compiles and tests the planner
 * (tests/t-net-plan.c).
 *
 * Stages (netplan_create):
 *   1. one step per model op, with the best single-op kernel of ops_cuda.h
 *      (a 1x1 stride-1 conv is the pointwise kernel, a global average pool
 *      or MEAN the squeeze-excite kernel with no layer);
 *   2. with opts.fused, passes that merge a step into its producer or
 *      consumer when the tensor between them has that one consumer:
 *      global pool -> 1x1 convs on the pooled vector -> activations become
 *      one squeeze-excite step; a stand-alone activation joins the conv /
 *      depthwise / transpose conv before it; a per-channel MUL and a
 *      same-shape ADD after a pointwise conv become its epilogue; a
 *      per-channel MUL and/or a same-shape ADD before a pointwise conv
 *      become its prologue; an ADD after a depthwise conv its epilogue. A
 *      merged step runs at the place of its last member, where every input
 *      it reads has been written.
 *      With opts.fused == 2, more passes give whole stages one kernel
 *      each where the kernel takes the geometry (struct netplan_fit): a
 *      run of inverted-residual blocks (NETPLAN_IR, ops_block.cu), a
 *      decoder stage (NETPLAN_TAIL, ops_tail.cu), a pointwise conv and the
 *      depthwise after it (NETPLAN_PWDW, ops_pwdw.cu); a 1x1 conv on an
 *      upsampled map runs on the small map before the resize
 *      (NETPLAN_RS_AFTER), and where only pools and decoder stages read
 *      the upsampled map, they resize it as they read (NETPLAN_RS_DEFER);
 *   3. each materialised tensor's dtype (set_precision), then liveness
 *      over the ordered steps gives it an offset in one arena sized for
 *      arena_batch tiles (best fit reuse); a split plan (opts.split) has
 *      two arenas of half the batch each;
 *   4. each constant tensor a step reads, an offset in the weight block
 *      (float32, 256-byte aligned).
 */
#ifndef VR_NET_PLAN_H
#define VR_NET_PLAN_H

#include "model.h"
#include "ops_fused.h"
#include "vr_err.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a step runs. */
enum netplan_kind {
    NETPLAN_DEAD, NETPLAN_CONV, NETPLAN_PW, NETPLAN_DW, NETPLAN_SE, NETPLAN_UNARY,
    NETPLAN_ADD, NETPLAN_MUL, NETPLAN_RESIZE, NETPLAN_AVGPOOL, NETPLAN_TCONV,
    NETPLAN_IR, NETPLAN_TAIL, NETPLAN_PWDW,
    /* the pose tier's ops (ops_move.cu): float32 operands only, never fused */
    NETPLAN_PAD, NETPLAN_D2S, NETPLAN_MAXPOOL, NETPLAN_RESHAPE, NETPLAN_CONCAT
};

/* A pointwise step's resize (netplan_step.rs). */
#define NETPLAN_RS_LOAD 1    /* x is resized to the output map as the conv loads it */
#define NETPLAN_RS_AFTER 2   /* the conv runs on x, its result is resized after */
#define NETPLAN_RS_DEFER 3   /* the conv runs on x, its readers resize as they read */

#define NETPLAN_ALIGN(x) (((x) + 255) & ~(size_t)255)

struct netplan_se_layer { int wt, bt, cin, cout, act1, act2; };

/* One inverted-residual block of a NETPLAN_IR step: constant tensor ids and
 * activations (cu_ir_block's fields). */
struct netplan_ir_blk {
    int ce, k, cs, residual, act3;
    int we, be, ae1, ae2, wd, bd, ad1, ad2, w1, b1, ar1, ar2, w2, b2, as1, as2, wp, bp, ap1, ap2;
};

/* The decoder stage of a NETPLAN_TAIL step: constant tensor ids and activations
 * (cu_tail_args' fields; pw: it ends in a 1x1 conv, wt and bt). */
struct netplan_tail { int c, k, cout, wp, bp, ap1, ap2, wd, bd, ad1, ad2, ad3, wt, bt, at, pw; };

/* The 1x1 conv a NETPLAN_PWDW step runs before its depthwise conv. */
struct netplan_pwdw { int wp, bp, ap1, ap2; };

/* A NETPLAN_PAD, NETPLAN_D2S or NETPLAN_CONCAT step's parameters (model_op's). */
struct netplan_move {
    int pad[6];         /* PAD: before/after along H, W, C */
    int bs;             /* DEPTH_TO_SPACE: block size */
    int axis;           /* CONCATENATION: 1 H, 2 W, 3 C (NHWC) */
    int x3;             /* CONCATENATION: the third input, or -1 */
    int outer;          /* CONCATENATION: rows before the axis, a tile (times n at run) */
    int inner[3];       /* CONCATENATION: each input's values a row (0: none) */
};

struct netplan_step {
    int kind;
    int pos;            /* model op index of the last member: execution order */
    int op;             /* first model op (for messages) */
    int x, x2;          /* main input; ADD/MUL second (b) operand */
    int a_scale, bsum;  /* pointwise prologue: x * a_scale[n][c] + bsum */
    int e_scale, res;   /* epilogue: * e_scale[n][c], + res */
    int out;
    struct conv_geom g; /* per tile (n = 1); n is set at run */
    int wt, bt;         /* weight / bias constant tensors, -1 = none */
    int act1, act2, act3;
    int b_full;
    int align, half;    /* RESIZE_BILINEAR, or a pointwise's resize-on-load */
    int rs;             /* pointwise: x is resized to the output map on load (1), or the
                         * conv runs on x and its result is resized (2, NETPLAN_RS_AFTER), or
                         * its readers resize it (3, NETPLAN_RS_DEFER) */
    int n_layers;
    struct netplan_se_layer l[CU_SE_MAX_LAYERS];
    int n_ir;           /* NETPLAN_IR: blocks of the chain */
    struct netplan_ir_blk ir[CU_IR_MAX_BLOCKS];
    struct netplan_tail tail; /* NETPLAN_TAIL */
    struct netplan_pwdw pwdw; /* NETPLAN_PWDW: the 1x1 conv; g, wt, bt, act1, act2: the depthwise's */
    int pool;           /* NETPLAN_CONV (the stem kernel): also writes its pool sums (pool_from_stem) */
    int x2_pool;        /* NETPLAN_SE: x2's sums come from those */
    struct netplan_move mv;   /* NETPLAN_PAD, NETPLAN_D2S, NETPLAN_CONCAT */
};

struct netplan_tens {
    int h, w, c;        /* per tile */
    size_t off;         /* byte offset in the activation arena */
    int placed;
    int f16;            /* stored as float16 (else float32) */
    int rs_h, rs_w, rs_align, rs_half;   /* rs_h > 0: stored as the small map whose
                                          * bilinear resize it is (NETPLAN_RS_DEFER) */
};

/* Which stage kernels take which geometry: the GPU's answers (ops_cuda.h:
 * cu_stem_ok, cu_stem_parts, cu_ir_smem, cu_tail_ok, cu_pwdw_ok), which
 * depend on the kernels' tiles and the device's shared memory. Only
 * opts.fused == 2 asks; each must be set then. */
struct netplan_fit {
    int (*stem_ok)(const struct conv_geom *g, const void *out);
    int (*stem_parts)(const struct conv_geom *g);
    size_t (*ir_smem)(const struct cu_ir_args *a);   /* 0: refused */
    int (*tail_ok)(const struct cu_tail_args *a);
    int (*pwdw_ok)(const struct cu_pwdw_args *a);
};

/* The plan's knobs (netcu_opts' planning half). */
struct netplan_opts {
    int max_batch;       /* tiles per run, 1..4096 */
    int fp16;            /* 0, 1 or 2: netcu_opts.fp16 */
    int fused;           /* 0, 1 or 2: netcu_opts.fused */
    int write_resized;   /* netcu_opts.write_resized */
    int split;           /* 1: batches of 2+ run as two halves, one arena each */
    int all_outputs;     /* 1: every graph output (model.h's outputs[]) is kept whole in
                          * the arena, float32, live to the end, for the caller to copy
                          * out (netcu_run_outputs); no one-channel output is required;
                          * split must be 0 */
};

struct netplan {
    const struct model *m;
    struct netplan_opts o;
    struct netplan_fit fit;
    struct netplan_tens *t;    /* [m->n_tensors] */
    struct netplan_step *st;   /* [m->n_ops]: step i starts as op i; NETPLAN_DEAD once absorbed */
    int *order;                /* live steps, in execution order */
    int n_order;
    size_t *w_off;             /* [m->n_tensors]: byte offset in the weight block, or SIZE_MAX */
    size_t w_bytes;            /* the weight block */
    size_t rs_off, rs_bytes;   /* RS_AFTER steps' small-map result, at the arena's end */
    size_t pool_off;           /* then the stem's pool sums: [arena_batch][pool_parts][16] */
    int pool_parts;
    int arena_batch;           /* images an arena holds */
    size_t arena_bytes;        /* one arena */
    size_t act_bytes;          /* all arenas (two when split) */
};

/* Plans model `m` (which must outlive the plan) for opts `o`; `fit` may be
 * NULL when o->fused < 2. On success *out is the caller's (netplan_free).
 * Errors name the op or tensor the planner cannot take. */
int netplan_create(const struct model *m, const struct netplan_opts *o,
                   const struct netplan_fit *fit, struct netplan **out, vr_err *err);

/* Accepts NULL and half-built plans; clears *p. */
void netplan_free(struct netplan **p);

/* The tensors step s reads, in in[] (x, x2, a_scale, bsum, e_scale, res, or
 * for NETPLAN_CONCAT x, x2, mv.x3: those present); returns how many. */
int netplan_step_inputs(const struct netplan_step *s, int in[6]);

/* 1 when tensor t is a graph output the plan keeps (all_outputs). */
int netplan_is_output(const struct netplan *plan, int t);

/* Reads of tensor t by the plan's live steps, plus 1 when it is a graph
 * output (the network's output or one all_outputs keeps). */
int netplan_uses(const struct netplan *plan, int t);

/* Bytes a tile of tensor T takes as stored. */
size_t netplan_tile_bytes(const struct netplan_tens *T);

/* The chain kernel's arguments for a NETPLAN_IR step, with the weights at
 * `w` + w_off[t] (the device's weight block when running; NULL: the
 * model's host data, for the fit check); in, out and n are left to the
 * caller. */
void netplan_ir_fill(const struct netplan *plan, const struct netplan_step *s,
                     const unsigned char *w, struct cu_ir_args *a);

/* The pose tier's ops (net_plan_move.c), inside the planner: whether a
 * model op kind is one; its step (stage 1); then, after the precision is
 * set, every tensor a move step reads or writes, and every kept graph
 * output, made float32. */
int netplan_is_move(int model_kind);
int netplan_move_op(struct netplan *plan, int i, vr_err *err);
void netplan_move_f32(struct netplan *plan);

/* Fusion (opts.fused >= 1, before the others): a PAD of zeros along H and
 * W whose every reader is a CONV_2D or DEPTHWISE_CONV_2D reading it as its
 * input is folded into them: each reads the unpadded map with the pad
 * added to its leading padding, and the kernels skip the taps outside the
 * map (fmaf(0, w, acc) is acc), so the padded copy is never written. The
 * Pose detector's eight pads (six before its strided depthwise convs: 10%
 * of its time at 81 crops, H200) go, and the 1x1 conv before each strided
 * one may then join it (fuse_pw_dw). */
void netplan_fold_pads(struct netplan *plan);

/* A step kind in words ("pointwise"), and opts.fused ("blocks"). */
const char *netplan_kind_name(int kind);
const char *netplan_fused_name(int fused);

/* With VR_NETCU_DUMP=1 in the environment, prints the plan to stderr: one
 * line a kernel. */
void netplan_dump(const struct netplan *plan);

#ifdef __cplusplus
}
#endif

#endif

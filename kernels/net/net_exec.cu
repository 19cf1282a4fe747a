/*
 * net_exec.cu - the network on the GPU (net_cuda.h): runs the plan of
 * net_plan.h (steps, fusion, dtypes, arena and weight offsets, made once by
 * netcu_create with this GPU's answers to which stage kernel takes which
 * geometry), with the weights uploaded once and the activations in one
 * device arena, replaying one CUDA graph per batch size.
 *
 * Running (netcu_run) enqueues the steps, or with opts.use_graph captures
 * them once per batch size on a private stream and replays the graph on the
 * caller's stream; a call with other input/output pointers re-captures and
 * updates the executable graph in place (cudaGraphExecUpdate). A net made
 * for 32+ tiles has two arenas of half the batch, and runs each batch as
 * two halves on two streams (enqueue_split).
 *
 * Activations are float32, float16, or mixed (opts.fp16 = 1, see
 * net_plan.c's set_precision); every kernel takes each operand's dtype at
 * run time, the network input and output stay float32.
 *
 * C twin: net_exec_ref.c, the CPU executor (net.h): the same model, the
 * same tiles, through the ops' C twins; g_net_cuda compares the two.
 */
/* the C headers carry no extern "C" of their own */
extern "C" {
#include "log.h"
#include "model.h"
#include "ops_ref.h"
#include "vr_err.h"
}
#include "cuda_capture.h" /* has its own extern "C" */
#include "net_cuda.h"
#include "net_plan.h"
#include "ops_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gslot {
    cudaGraphExec_t exec;
    const void *in;     /* pointers the graph was captured with */
    void *out;
};

struct netcu {
    struct netcu_opts o;
    struct netplan *p;      /* the plan: steps, order, dtypes, offsets */
    unsigned char *d_w;     /* the weight block (p->w_bytes) */
    unsigned char *d_act;   /* the arenas (p->act_bytes) */
    cudaStream_t cap;       /* capture stream */
    cudaStream_t side;      /* a split batch's second half */
    cudaEvent_t fork, join;
    struct gslot *graphs;   /* [max_batch + 1] */
    /* VR_NETCU_PROFILE=1 (without use_graph): per-step event times */
    cudaEvent_t *prof_ev;   /* [n_order + 1] */
    double *prof_ms;        /* [n_order], summed over runs */
    int prof_runs, prof_batch;
};

/* ---- weights (plan stage 4: the offsets are the plan's) ---- */

static int upload_weights(struct netcu *net, vr_err *err)
{
    const size_t top = net->p->w_bytes;
    cudaError_t e = cudaMalloc((void **)&net->d_w, top ? top : 256);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "netcu: cannot allocate %zu bytes of weights: %s",
                          top, cudaGetErrorString(e));
    for (int t = 0; t < net->p->m->n_tensors; t++) {
        if (net->p->w_off[t] == SIZE_MAX)
            continue;
        const struct model_tensor *T = &net->p->m->tensors[t];
        e = cudaMemcpy(net->d_w + net->p->w_off[t], T->data, T->count * sizeof(float),
                       cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            return vr_err_set(err, VR_ECUDA, "netcu: cannot upload weights: %s",
                              cudaGetErrorString(e));
    }
    return 0;
}

/* ---- running ---- */

struct ctx {
    struct netcu *net;
    const float *in;
    float *out;
    int n;
    size_t arena;   /* byte offset of the arena this call uses (a split batch's half) */
};

/* Where tensor t lives on the device (the call's input and output, else
 * its slice of the call's activation arena); NULL for t < 0 (an absent operand). */
static void *tensor_ptr(const struct ctx *c, int t)
{
    const struct model *m = c->net->p->m;
    if (t < 0)
        return NULL;
    if (t == m->input)
        return (void *)c->in;
    if (t == m->output && !c->net->p->o.all_outputs)
        return c->out;
    return c->net->d_act + c->arena + c->net->p->t[t].off;
}

/* 1 when tensor t is stored as float16 (set_precision), 0 float32 or absent. */
static int tensor_f16(const struct ctx *c, int t)
{
    return t >= 0 && c->net->p->t[t].f16;
}

/* Constant tensor t (weights, biases) in the uploaded weight block. */
static const float *weights(const struct ctx *c, int t)
{
    return t < 0 ? NULL : (const float *)(c->net->d_w + c->net->p->w_off[t]);
}

/* The dtype bits of a fused kernel's operands (CU_DT_*): which are float16. */
static unsigned dtype_bits(const struct ctx *c, int in0, int in1, int in2, int in3, int res,
                           int out)
{
    return (tensor_f16(c, in0) ? CU_DT_IN0 : 0) | (tensor_f16(c, in1) ? CU_DT_IN1 : 0) |
           (tensor_f16(c, in2) ? CU_DT_IN2 : 0) | (tensor_f16(c, in3) ? CU_DT_IN3 : 0) |
           (tensor_f16(c, res) ? CU_DT_RES : 0) | (tensor_f16(c, out) ? CU_DT_OUT : 0);
}

/* Where a step writes: its output (stored small for NETPLAN_RS_DEFER), or for
 * NETPLAN_RS_AFTER the float32 scratch resized after. */
static void *step_out(const struct ctx *c, const struct netplan_step *s)
{
    return s->rs == NETPLAN_RS_AFTER ? (void *)(c->net->d_act + c->arena + c->net->p->rs_off)
                             : tensor_ptr(c, s->out);
}

/* Its dtype bits: the scratch is float32. */
static unsigned step_out_dt(const struct ctx *c, const struct netplan_step *s)
{
    return dtype_bits(c, -1, -1, -1, -1, -1, s->rs == NETPLAN_RS_AFTER ? -1 : s->out);
}

/* Then, for NETPLAN_RS_AFTER, the scratch (cout channels) resized into the output
 * with the step's activations. */
static int resize_after(const struct ctx *c, const struct netplan_step *s, int cout,
                        cudaStream_t st)
{
    if (s->rs != NETPLAN_RS_AFTER)
        return 0;
    const struct netplan_tens *x = &c->net->p->t[s->x], *y = &c->net->p->t[s->out];
    return cu_resize_bilinear_dt(c->n, x->h, x->w, cout, step_out(c, s), y->h, y->w,
                                 s->align, s->half, s->act1, s->act2, tensor_ptr(c, s->out),
                                 dtype_bits(c, -1, -1, -1, -1, -1, s->out), st);
}

/* A NETPLAN_RS_AFTER or NETPLAN_RS_DEFER pointwise step: the 1x1 conv on the small map. */
static int run_pointwise_rs_after(const struct ctx *c, const struct netplan_step *s,
                                  cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x];
    struct cu_pw_args a = {
        .n = c->n, .hw = x->h * x->w, .cin = s->g.cin, .cout = s->g.cout,
        .a = tensor_ptr(c, s->x), .w = weights(c, s->wt), .bias = weights(c, s->bt),
        .act1 = CU_ACT_NONE, .act2 = CU_ACT_NONE, .act3 = CU_ACT_NONE, .out = step_out(c, s),
    };
    int rc = cu_pointwise_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, -1) | step_out_dt(c, s),
                             st);
    return rc < 0 ? rc : resize_after(c, s, s->g.cout, st);
}

static int run_pointwise(const struct ctx *c, const struct netplan_step *s, cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x], *y = &c->net->p->t[s->out];
    if (s->rs == NETPLAN_RS_AFTER || s->rs == NETPLAN_RS_DEFER)
        return run_pointwise_rs_after(c, s, st);
    struct cu_pw_args a = {
        .n = c->n, .hw = y->h * y->w, .cin = s->g.cin, .cout = s->g.cout,
        .a = tensor_ptr(c, s->x), .a_scale = tensor_ptr(c, s->a_scale),
        .b = tensor_ptr(c, s->bsum),
        .w = weights(c, s->wt), .bias = weights(c, s->bt),
        .act1 = s->act1, .act2 = s->act2,
        .e_scale = tensor_ptr(c, s->e_scale), .res = tensor_ptr(c, s->res),
        .act3 = s->act3,
        .out = tensor_ptr(c, s->out),
        .rs_h = s->rs ? x->h : 0, .rs_w = s->rs ? x->w : 0,
        .out_h = y->h, .out_w = y->w,
        .rs_align = s->align, .rs_half = s->half,
    };
    return cu_pointwise_dt(&a, dtype_bits(c, s->x, s->a_scale, s->bsum, s->e_scale, s->res, s->out),
                           st);
}

static int run_depthwise(const struct ctx *c, const struct netplan_step *s, struct conv_geom g,
                         cudaStream_t st)
{
    g.act = s->act1;
    struct cu_dw_args a = {
        .g = g, .in = tensor_ptr(c, s->x),
        .w = weights(c, s->wt), .bias = weights(c, s->bt),
        .act2 = s->act2, .res = tensor_ptr(c, s->res), .act3 = s->act3,
        .out = tensor_ptr(c, s->out),
    };
    return cu_dw_fused_dt(&a, dtype_bits(c, s->x, -1, -1, -1, s->res, s->out), st);
}

static int run_squeeze_excite(const struct ctx *c, const struct netplan_step *s, cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x];
    struct cu_se_args a = {
        .n = c->n, .h = x->h, .w = x->w, .c = x->c,
        .in = tensor_ptr(c, s->x), .in2 = tensor_ptr(c, s->x2),
        .n_layers = s->n_layers,
        .l = {},
        .out = tensor_ptr(c, s->out),
        .in2_part = s->x2_pool ? (const float *)(c->net->d_act + c->arena + c->net->p->pool_off)
                               : NULL,
        .in2_parts = s->x2_pool ? c->net->p->pool_parts : 0,
        .in_rs_h = x->rs_h, .in_rs_w = x->rs_w, .in_rs_align = x->rs_align,
        .in_rs_half = x->rs_half,
    };
    for (int l = 0; l < s->n_layers; l++) {
        const struct netplan_se_layer *L = &s->l[l];
        a.l[l] = (struct cu_se_layer){ .cin = L->cin, .cout = L->cout, .w = weights(c, L->wt),
                                       .bias = weights(c, L->bt), .act1 = L->act1,
                                       .act2 = L->act2 };
    }
    return cu_se_dt(&a, dtype_bits(c, s->x, s->x2, -1, -1, -1, s->out), st);
}

static int run_ir_chain(const struct ctx *c, const struct netplan_step *s, cudaStream_t st)
{
    struct cu_ir_args a;
    netplan_ir_fill(c->net->p, s, c->net->d_w, &a);
    a.n = c->n;
    a.in = tensor_ptr(c, s->x);
    a.out = tensor_ptr(c, s->out);
    return cu_ir_chain_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, s->out), st);
}

/* A decoder stage; one ending in a 1x1 conv runs at the small map's size
 * (NETPLAN_RS_AFTER or NETPLAN_RS_DEFER, as run_pointwise_rs_after). */
static int run_tail(const struct ctx *c, const struct netplan_step *s, cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x];
    const struct netplan_tail *t = &s->tail;
    struct cu_tail_args a = {
        .n = c->n, .h = x->h, .w = x->w, .cin = x->c, .c = t->c, .k = t->k, .cout = t->cout,
        .a = tensor_ptr(c, s->x), .a_scale = tensor_ptr(c, s->a_scale),
        .b = tensor_ptr(c, s->bsum),
        .wp = weights(c, t->wp), .bp = weights(c, t->bp), .act_p1 = t->ap1, .act_p2 = t->ap2,
        .wd = weights(c, t->wd), .bd = weights(c, t->bd), .act_d1 = t->ad1,
        .act_d2 = t->ad2, .act_d3 = t->ad3,
        .wt = weights(c, t->wt), .bt = weights(c, t->bt), .act_t = t->at,
        .out = step_out(c, s), .pw = t->pw,
    };
    if (s->bsum >= 0) {   /* a deferred resize (NETPLAN_RS_DEFER) */
        const struct netplan_tens *b = &c->net->p->t[s->bsum];
        a.b_rs_h = b->rs_h;
        a.b_rs_w = b->rs_w;
        a.b_rs_align = b->rs_align;
        a.b_rs_half = b->rs_half;
    }
    int rc = cu_tail_dt(&a, dtype_bits(c, s->x, s->a_scale, s->bsum, -1, -1, -1) |
                                step_out_dt(c, s), st);
    return rc < 0 ? rc : resize_after(c, s, t->cout, st);
}

static int run_pwdw(const struct ctx *c, const struct netplan_step *s, struct conv_geom g,
                    cudaStream_t st)
{
    g.act = s->act1;
    struct cu_pwdw_args a = {
        .g = g, .cin = c->net->p->t[s->x].c, .in = tensor_ptr(c, s->x),
        .wp = weights(c, s->pwdw.wp), .bp = weights(c, s->pwdw.bp),
        .act_p1 = s->pwdw.ap1, .act_p2 = s->pwdw.ap2,
        .wd = weights(c, s->wt), .bd = weights(c, s->bt), .act_d2 = s->act2,
        .out = tensor_ptr(c, s->out),
    };
    return cu_pwdw_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, s->out), st);
}

/* The pose tier's ops (ops_move.cu): float32 operands (the plan keeps
 * them so), the batch's n tiles at once; RESHAPE is a copy. */
static int run_move(const struct ctx *c, const struct netplan_step *s, struct conv_geom g,
                    cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x];
    const float *in = (const float *)tensor_ptr(c, s->x);
    float *out = (float *)tensor_ptr(c, s->out);
    const int n = c->n;
    const int *pd = s->mv.pad;
    switch (s->kind) {
    case NETPLAN_PAD:
        return cu_pad(n, x->h, x->w, x->c, in, pd[0], pd[1], pd[2], pd[3], pd[4], pd[5], out, st);
    case NETPLAN_D2S:
        return cu_depth_to_space(n, x->h, x->w, x->c, s->mv.bs, in, out, st);
    case NETPLAN_MAXPOOL:
        return cu_maxpool(&g, in, out, st);
    case NETPLAN_RESHAPE:
        return cudaMemcpyAsync(out, in, netplan_tile_bytes(x) * n, cudaMemcpyDeviceToDevice,
                               st) == cudaSuccess ? 0 : VR_ECUDA;
    case NETPLAN_CONCAT:
        return cu_concat3(n * s->mv.outer, in, s->mv.inner[0],
                          (const float *)tensor_ptr(c, s->x2), s->mv.inner[1],
                          (const float *)tensor_ptr(c, s->mv.x3), s->mv.inner[2], out, st);
    default:
        return VR_EINVAL;
    }
}

static int run_step(const struct ctx *c, const struct netplan_step *s, cudaStream_t st)
{
    const struct netplan_tens *x = &c->net->p->t[s->x];
    const int n = c->n;
    const unsigned io = dtype_bits(c, s->x, -1, -1, -1, -1, s->out);
    struct conv_geom g = s->g;
    g.n = n;
    switch (s->kind) {
    case NETPLAN_CONV:
        if (s->pool)
            return cu_stem(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                           weights(c, s->bt), s->act1, s->act2, tensor_ptr(c, s->out),
                           tensor_f16(c, s->out),
                           (float *)(c->net->d_act + c->arena + c->net->p->pool_off), st);
        return cu_conv2d_x(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                           weights(c, s->bt), s->act1, s->act2, tensor_ptr(c, s->out),
                           tensor_f16(c, s->out), st);
    case NETPLAN_PW:
        return run_pointwise(c, s, st);
    case NETPLAN_DW:
        return run_depthwise(c, s, g, st);
    case NETPLAN_SE:
        return run_squeeze_excite(c, s, st);
    case NETPLAN_IR:
        return run_ir_chain(c, s, st);
    case NETPLAN_TAIL:
        return run_tail(c, s, st);
    case NETPLAN_PWDW:
        return run_pwdw(c, s, g, st);
    case NETPLAN_UNARY:
        return cu_unary_x(s->act1, tensor_ptr(c, s->x), tensor_f16(c, s->x), tensor_ptr(c, s->out),
                          tensor_f16(c, s->out), (size_t)n * x->h * x->w * x->c, st);
    case NETPLAN_ADD:
    case NETPLAN_MUL:
        return cu_binary_dt(s->kind == NETPLAN_MUL, n, x->h, x->w, x->c, tensor_ptr(c, s->x),
                            tensor_ptr(c, s->x2), s->b_full, s->act1, tensor_ptr(c, s->out),
                            dtype_bits(c, s->x, s->x2, -1, -1, -1, s->out), st);
    case NETPLAN_RESIZE: {
        const struct netplan_tens *y = &c->net->p->t[s->out];
        return cu_resize_bilinear_dt(n, x->h, x->w, x->c, tensor_ptr(c, s->x), y->h, y->w,
                                     s->align, s->half, CU_ACT_NONE, CU_ACT_NONE,
                                     tensor_ptr(c, s->out), io, st);
    }
    case NETPLAN_AVGPOOL:
        return cu_avgpool_dt(&g, tensor_ptr(c, s->x), tensor_ptr(c, s->out), io, st);
    case NETPLAN_TCONV:
        return cu_tconv_x(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                          weights(c, s->bt), s->act1, tensor_ptr(c, s->out),
                          tensor_f16(c, s->out), st);
    case NETPLAN_PAD:
    case NETPLAN_D2S:
    case NETPLAN_MAXPOOL:
    case NETPLAN_RESHAPE:
    case NETPLAN_CONCAT:
        return run_move(c, s, g, st);
    default:
        return VR_EINVAL;
    }
}

static int enqueue(const struct ctx *c, cudaStream_t st, vr_err *err)
{
    struct netcu *net = c->net;
    if (net->prof_ev)
        cudaEventRecord(net->prof_ev[0], st);
    for (int k = 0; k < c->net->p->n_order; k++) {
        const struct netplan_step *s = &c->net->p->st[c->net->p->order[k]];
        int rc = run_step(c, s, st);
        if (net->prof_ev)
            cudaEventRecord(net->prof_ev[k + 1], st);
        if (rc < 0) {
            cudaError_t e = cudaGetLastError();
            return vr_err_set(err, rc, "netcu: op %d (%s step, batch %d): %s", s->op,
                              netplan_kind_name(s->kind), c->n,
                              rc == VR_ECUDA ? cudaGetErrorString(e)
                                             : "the kernel cannot take this geometry");
        }
    }
    if (net->prof_ev && cudaEventSynchronize(net->prof_ev[net->p->n_order]) == cudaSuccess) {
        for (int k = 0; k < net->p->n_order; k++) {
            float ms = 0.0f;
            cudaEventElapsedTime(&ms, net->prof_ev[k], net->prof_ev[k + 1]);
            net->prof_ms[k] += ms;
        }
        net->prof_runs++;
        net->prof_batch = c->n;
    }
    return 0;
}

/* Prints the per-step profile (stderr): each step's mean time, its share,
 * and the bytes it must move at least (its inputs and output once). */
static void prof_report(const struct netcu *net)
{
    if (!net->prof_runs)
        return;
    double total = 0;
    for (int k = 0; k < net->p->n_order; k++)
        total += net->prof_ms[k];
    fprintf(stderr, "netcu profile (%s, fp16=%d, batch %d, %d runs): %.3f ms a run\n",
            netplan_fused_name(net->o.fused), net->o.fp16, net->prof_batch, net->prof_runs,
            total / net->prof_runs);
    for (int k = 0; k < net->p->n_order; k++) {
        const struct netplan_step *s = &net->p->st[net->p->order[k]];
        int in[6], ni = netplan_step_inputs(s, in);
        double bytes = 0;
        for (int j = 0; j <= ni; j++) {
            int t = j < ni ? in[j] : s->out;
            bytes += (double)netplan_tile_bytes(&net->p->t[t]);
        }
        bytes *= net->prof_batch;
        double ms = net->prof_ms[k] / net->prof_runs;
        const struct netplan_tens *y = &net->p->t[s->out];
        fprintf(stderr, "  %3d %-14s -> %3dx%3dx%3d %8.4f ms %5.1f%% %7.2f MB %7.0f GB/s\n", k,
                netplan_kind_name(s->kind), y->h, y->w, y->c, ms, 100.0 * net->prof_ms[k] / total,
                bytes / 1e6, ms > 0 ? bytes / ms / 1e6 : 0.0);
    }
}

/* ---- public API ---- */

/* The batch in two halves on two streams (fork / join events, captured
 * into one graph alike): each image's arithmetic is the same, and the
 * halves' latency-bound kernels (the small maps, the block chain's one
 * thread block a tile) fill each other's idle SMs. */
static int enqueue_split(const struct ctx *c, cudaStream_t st, vr_err *err)
{
    struct netcu *net = c->net;
    if (!net->p->o.split || c->n < 2)
        return enqueue(c, st, err);
    const int n1 = (c->n + 1) / 2;
    const struct netplan_tens *ti = &net->p->t[net->p->m->input],
                              *to = &net->p->t[net->p->m->output];
    struct ctx a = *c, b = *c;
    a.n = n1;
    b.n = c->n - n1;
    b.arena = c->arena + net->p->arena_bytes;
    b.in = c->in + (size_t)n1 * ti->h * ti->w * ti->c;
    b.out = c->out + (size_t)n1 * to->h * to->w * to->c;
    cudaError_t e;
    if ((e = cudaEventRecord(net->fork, st)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(net->side, net->fork, 0)) != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "netcu: cannot fork the batch: %s", cudaGetErrorString(e));
    int rc = enqueue(&a, st, err);
    int rc2 = enqueue(&b, net->side, err);
    if ((e = cudaEventRecord(net->join, net->side)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(st, net->join, 0)) != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "netcu: cannot join the batch: %s", cudaGetErrorString(e));
    return rc < 0 ? rc : rc2;
}

static int create(const struct model *m, const struct netcu_opts *o, int all_outputs,
                  struct netcu **out, vr_err *err)
{
    int rc;
    cudaError_t e;
    *out = NULL;
    if (!o)
        return vr_err_set(err, VR_EINVAL, "netcu: no options");
    const char *pe = getenv("VR_NETCU_PROFILE");   /* per-step events, one stream */
    const int profiling = pe && *pe && *pe != '0' && !o->use_graph;
    const struct netplan_opts po = {
        .max_batch = o->max_batch, .fp16 = o->fp16, .fused = o->fused,
        .write_resized = o->write_resized,
        .split = !o->one_stream && o->max_batch >= 32 && !profiling && !all_outputs,
        .all_outputs = all_outputs,
    };
    const struct netplan_fit fit = { cu_stem_ok, cu_stem_parts, cu_ir_smem, cu_tail_ok,
                                     cu_pwdw_ok };
    struct netcu *net = (struct netcu *)calloc(1, sizeof *net);
    if (!net)
        return vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
    net->o = *o;
    if ((rc = netplan_create(m, &po, &fit, &net->p, err)) < 0)
        goto fail;
    net->graphs = (struct gslot *)calloc(o->max_batch + 1, sizeof *net->graphs);
    if (!net->graphs) {
        rc = vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
        goto fail;
    }
    netplan_dump(net->p);
    if ((rc = upload_weights(net, err)) < 0)
        goto fail;
    e = cudaMalloc((void **)&net->d_act, net->p->act_bytes ? net->p->act_bytes : 256);
    if (e != cudaSuccess) {
        rc = vr_err_set(err, VR_ECUDA, "netcu: cannot allocate %zu MiB of activations "
                        "(max_batch %d): %s", net->p->act_bytes >> 20, o->max_batch,
                        cudaGetErrorString(e));
        goto fail;
    }
    if ((e = cudaStreamCreateWithFlags(&net->side, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&net->fork, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&net->join, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&net->cap, cudaStreamNonBlocking)) != cudaSuccess) {
        rc = vr_err_set(err, VR_ECUDA, "netcu: cannot create a stream: %s",
                        cudaGetErrorString(e));
        goto fail;
    }
    cu_ops_prepare();
    if (profiling) {
        net->prof_ev = (cudaEvent_t *)calloc(net->p->n_order + 1, sizeof *net->prof_ev);
        net->prof_ms = (double *)calloc(net->p->n_order, sizeof *net->prof_ms);
        if (!net->prof_ev || !net->prof_ms) {
            rc = vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
            goto fail;
        }
        for (int k = 0; k <= net->p->n_order; k++)
            cudaEventCreate(&net->prof_ev[k]);
    }
    log_debug("netcu: %d ops -> %d kernels (%s, %s), activations %zu KiB, weights %zu KiB",
              m->n_ops, net->p->n_order, netplan_fused_name(o->fused),
              o->fp16 ? "fp16" : "fp32", net->p->act_bytes >> 10, net->p->w_bytes >> 10);
    *out = net;
    return 0;
fail:
    netcu_free(&net);
    return rc;
}

int netcu_create(const struct model *m, const struct netcu_opts *o, struct netcu **out,
                 vr_err *err)
{
    return create(m, o, 0, out, err);
}

int netcu_create_outputs(const struct model *m, const struct netcu_opts *o,
                         struct netcu **out, vr_err *err)
{
    return create(m, o, 1, out, err);
}

size_t netcu_output_count(const struct netcu *net, int k)
{
    if (!net || !net->p->o.all_outputs || k < 0 || k >= net->p->m->n_outputs)
        return 0;
    const struct netplan_tens *T = &net->p->t[net->p->m->outputs[k]];
    return (size_t)T->h * T->w * T->c;
}

/* cuda_capture's callback: c's steps on the capture stream. */
static int enqueue_captured(void *c, cudaStream_t cap, vr_err *err)
{
    return enqueue_split((const struct ctx *)c, cap, err);
}

/* Enqueues the plan for n tiles (d_out: the one output, NULL for a net of
 * all outputs), through the batch size's graph when use_graph. */
static int launch(struct netcu *net, const float *d_in, int n, float *d_out, cudaStream_t st,
                  vr_err *err)
{
    struct ctx c = {net, d_in, d_out, n, 0};
    if (!net->o.use_graph)
        return enqueue_split(&c, st, err);
    struct gslot *g = &net->graphs[n];
    cudaError_t e;
    if (!g->exec || g->in != d_in || g->out != d_out) {
        cudaGraph_t graph = NULL; /* tried again if another thread spoils it */
        int rc = cuda_capture(net->cap, enqueue_captured, &c, "netcu", &graph, err);
        if (rc < 0)
            return rc;
        if (g->exec) {
            cudaGraphExecUpdateResultInfo info;
            if (cudaGraphExecUpdate(g->exec, graph, &info) != cudaSuccess) {
                cudaGetLastError();
                cudaGraphExecDestroy(g->exec);
                g->exec = NULL;
            }
        }
        if (!g->exec && (e = cudaGraphInstantiate(&g->exec, graph, 0)) != cudaSuccess) {
            cudaGraphDestroy(graph);
            g->exec = NULL;
            return vr_err_set(err, VR_ECUDA, "netcu: cannot instantiate the graph: %s",
                              cudaGetErrorString(e));
        }
        cudaGraphDestroy(graph);
        g->in = d_in;
        g->out = d_out;
    }
    if ((e = cudaGraphLaunch(g->exec, st)) != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "netcu: graph launch failed: %s",
                          cudaGetErrorString(e));
    return 0;
}

int netcu_run(struct netcu *net, const float *d_in, int n, float *d_out, void *stream,
              vr_err *err)
{
    if (!net || !d_in || !d_out || n < 1 || n > net->o.max_batch)
        return vr_err_set(err, VR_EINVAL, "netcu: batch %d out of 1..%d", n,
                          net ? net->o.max_batch : 0);
    if (net->p->o.all_outputs)
        return vr_err_set(err, VR_EINVAL, "netcu_run: a net made by netcu_create_outputs");
    return launch(net, d_in, n, d_out, (cudaStream_t)stream, err);
}

/* The outputs stay in the arena, float32 (the plan keeps them to the end),
 * and are copied out after the steps, outside any graph: the caller's
 * buffers may change from call to call without a new capture. */
int netcu_run_outputs(struct netcu *net, const float *d_in, int n, float *const *d_outs,
                      void *stream, vr_err *err)
{
    if (!net || !d_in || !d_outs || n < 1 || n > net->o.max_batch)
        return vr_err_set(err, VR_EINVAL, "netcu: batch %d out of 1..%d", n,
                          net ? net->o.max_batch : 0);
    if (!net->p->o.all_outputs)
        return vr_err_set(err, VR_EINVAL, "netcu_run_outputs: a net made by netcu_create");
    const struct model *m = net->p->m;
    for (int k = 0; k < m->n_outputs; k++)
        if (!d_outs[k])
            return vr_err_set(err, VR_EINVAL, "netcu_run_outputs: no buffer for output %d", k);
    cudaStream_t st = (cudaStream_t)stream;
    int rc = launch(net, d_in, n, NULL, st, err);
    for (int k = 0; rc == 0 && k < m->n_outputs; k++) {
        const struct netplan_tens *T = &net->p->t[m->outputs[k]];
        cudaError_t e = cudaMemcpyAsync(d_outs[k], net->d_act + T->off,
                                        netplan_tile_bytes(T) * n, cudaMemcpyDeviceToDevice, st);
        if (e != cudaSuccess)
            rc = vr_err_set(err, VR_ECUDA, "netcu: cannot copy output %d: %s", k,
                            cudaGetErrorString(e));
    }
    return rc;
}

size_t netcu_device_bytes(const struct netcu *net)
{
    return net ? net->p->w_bytes + net->p->act_bytes : 0;
}

int netcu_kernels(const struct netcu *net)
{
    int k = 0;
    for (int i = 0; net && i < net->p->n_order; i++)
        k += 1 + (net->p->st[net->p->order[i]].rs == NETPLAN_RS_AFTER);   /* conv + resize */
    return k;
}

void netcu_free(struct netcu **pnet)
{
    if (!pnet || !*pnet)
        return;
    struct netcu *net = *pnet;
    if (net->prof_ev) {
        prof_report(net);
        for (int k = 0; k <= net->p->n_order; k++)
            if (net->prof_ev[k])
                cudaEventDestroy(net->prof_ev[k]);
        free(net->prof_ev);
    }
    free(net->prof_ms);
    if (net->graphs)
        for (int i = 0; i <= net->o.max_batch; i++)
            if (net->graphs[i].exec)
                cudaGraphExecDestroy(net->graphs[i].exec);
    if (net->cap)
        cudaStreamDestroy(net->cap);
    if (net->side)
        cudaStreamDestroy(net->side);
    if (net->fork)
        cudaEventDestroy(net->fork);
    if (net->join)
        cudaEventDestroy(net->join);
    cudaFree(net->d_act);
    cudaFree(net->d_w);
    free(net->graphs);
    netplan_free(&net->p);
    free(net);
    *pnet = NULL;
}


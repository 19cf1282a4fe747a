/*
 * net_cuda.cu - the network on the GPU (net_cuda.h): plans the model's op
 * list into kernel steps once, fuses where it pays, places activations in
 * one reused device arena, and replays one CUDA graph per batch size.
 *
 * Planning (netcu_create):
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
 *      it reads has been written;
 *      With opts.fused == 2, more passes give whole stages one kernel
 *      each where it takes the geometry: a run of inverted-residual blocks
 *      (S_IR, ops_block.cu), a decoder stage (S_TAIL, ops_tail.cu), a
 *      pointwise conv and the depthwise after it (S_PWDW, ops_pwdw.cu); a
 *      1x1 conv on an upsampled map runs on the small map before the
 *      resize (RS_AFTER), and where only pools and decoder stages read
 *      the upsampled map, they resize it as they read (RS_DEFER);
 *   3. liveness over the ordered steps gives each materialised tensor an
 *      offset in one arena sized for max_batch tiles (best fit reuse); a
 *      net made for 32+ tiles has two arenas of half that, and runs each
 *      batch as two halves on two streams (enqueue_split);
 *   4. constant weights go to the device once, float32, 256-byte aligned.
 * Running (netcu_run) enqueues the steps, or with opts.use_graph captures
 * them once per batch size on a private stream and replays the graph on the
 * caller's stream; a call with other input/output pointers re-captures and
 * updates the executable graph in place (cudaGraphExecUpdate).
 *
 * Activations are float32, float16, or mixed (opts.fp16 = 1, see
 * set_precision); every kernel takes each operand's dtype at run time, the
 * network input and output stay float32.
 */
/* the C headers carry no extern "C" of their own */
extern "C" {
#include "log.h"
#include "model.h"
#include "ops_ref.h"
#include "vr_err.h"
}
#include "net_cuda.h"
#include "ops_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- plan ---- */

enum step_kind {
    S_DEAD, S_CONV, S_PW, S_DW, S_SE, S_UNARY, S_ADD, S_MUL, S_RESIZE, S_AVGPOOL, S_TCONV,
    S_IR, S_TAIL, S_PWDW
};

static const char *const kind_name[] = {
    "dead", "conv", "pointwise", "depthwise", "squeeze-excite", "activation",
    "add", "mul", "resize", "avgpool", "tconv", "ir-blocks", "decoder-stage", "pw+depthwise"
};

struct se_layer_t { int wt, bt, cin, cout, act1, act2; };

/* One inverted-residual block of an S_IR step: constant tensor ids and
 * activations (cu_ir_block's fields). */
struct ir_blk_t {
    int ce, k, cs, residual, act3;
    int we, be, ae1, ae2, wd, bd, ad1, ad2, w1, b1, ar1, ar2, w2, b2, as1, as2, wp, bp, ap1, ap2;
};

/* The decoder stage of an S_TAIL step: constant tensor ids and activations
 * (cu_tail_args' fields; pw: it ends in a 1x1 conv, wt and bt). */
struct tail_t { int c, k, cout, wp, bp, ap1, ap2, wd, bd, ad1, ad2, ad3, wt, bt, at, pw; };

/* The 1x1 conv an S_PWDW step runs before its depthwise conv. */
struct pwdw_t { int wp, bp, ap1, ap2; };

struct step {
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
                         * conv runs on x and its result is resized (2, RS_AFTER), or
                         * its readers resize it (3, RS_DEFER) */
    int n_layers;
    struct se_layer_t l[CU_SE_MAX_LAYERS];
    int n_ir;           /* S_IR: blocks of the chain */
    struct ir_blk_t ir[CU_IR_MAX_BLOCKS];
    struct tail_t tail; /* S_TAIL */
    struct pwdw_t pwdw; /* S_PWDW: the 1x1 conv; g, wt, bt, act1, act2: the depthwise's */
    int pool;           /* S_CONV (the stem kernel): also writes its pool sums (pool_from_stem) */
    int x2_pool;        /* S_SE: x2's sums come from those */
};

struct tens {
    int h, w, c;        /* per tile */
    size_t off;         /* byte offset in the activation arena */
    int placed;
    int f16;            /* stored as float16 (else float32) */
    int rs_h, rs_w, rs_align, rs_half;   /* rs_h > 0: stored as the small map whose
                                          * bilinear resize it is (RS_DEFER) */
};

/* Bytes a tile of tensor T takes as stored. */
static size_t tile_bytes(const struct tens *T)
{
    const size_t px = T->rs_h > 0 ? (size_t)T->rs_h * T->rs_w : (size_t)T->h * T->w;
    return px * T->c * (T->f16 ? 2 : 4);
}

struct gslot {
    cudaGraphExec_t exec;
    const void *in;     /* pointers the graph was captured with */
    void *out;
};

struct netcu {
    const struct model *m;
    struct netcu_opts o;
    struct tens *t;         /* [m->n_tensors] */
    struct step *st;        /* [m->n_ops] */
    int *order;             /* live steps, in execution order */
    int n_order;
    size_t *w_off;          /* [m->n_tensors]: byte offset in d_w, or SIZE_MAX */
    unsigned char *d_w;
    size_t w_bytes;
    unsigned char *d_act;
    size_t act_bytes;
    size_t rs_off, rs_bytes;   /* RS_AFTER steps' small-map result, at the arena's end */
    size_t pool_off;           /* then the stem's pool sums: [arena_batch][pool_parts][16] */
    int pool_parts;
    cudaStream_t cap;       /* capture stream */
    cudaStream_t side;      /* a split batch's second half */
    cudaEvent_t fork, join;
    int split;              /* batches of 2+ run as two halves, one arena each */
    int arena_batch;        /* images an arena holds */
    size_t arena_bytes;     /* one arena (act_bytes: all of them) */
    struct gslot *graphs;   /* [max_batch + 1] */
    /* VR_NETCU_PROFILE=1 (without use_graph): per-step event times */
    cudaEvent_t *prof_ev;   /* [n_order + 1] */
    double *prof_ms;        /* [n_order], summed over runs */
    int prof_runs, prof_batch;
};

/* opts.fused in words: 0 one kernel per op, 1 per-op fusions, 2 also the
 * stage kernels (block chains, pw+dw pairs, decoder tail). */
static const char *fused_name(int fused)
{
    return fused >= 2 ? "blocks" : fused ? "fused" : "unfused";
}

#define ALIGN256(x) (((x) + 255) & ~(size_t)255)

static int is_const(const struct model *m, int t)
{
    return t >= 0 && t < m->n_tensors && m->tensors[t].data != NULL;
}

static int tshape(const struct model *m, int id, struct tens *t, vr_err *err)
{
    const struct model_tensor *T = &m->tensors[id];
    const int *s = T->shape;
    if (T->rank == 4 && s[0] == 1) {
        t->h = s[1]; t->w = s[2]; t->c = s[3];
    } else if (T->rank == 2 && s[0] == 1) {
        t->h = 1; t->w = 1; t->c = s[1];
    } else if (T->rank == 1) {
        t->h = 1; t->w = 1; t->c = s[0];
    } else {
        return vr_err_set(err, VR_ENOTSUP, "netcu: tensor %d '%s': rank %d shape not NHWC "
                          "with batch 1", id, T->name, T->rank);
    }
    if (t->h < 1 || t->w < 1 || t->c < 1 || t->h > MODEL_MAX_DIM || t->w > MODEL_MAX_DIM ||
        t->c > MODEL_MAX_DIM || (size_t)t->h * t->w * t->c > ((size_t)1 << 28))
        return vr_err_set(err, VR_EFORMAT, "netcu: tensor %d '%s': shape out of range",
                          id, T->name);
    return 0;
}

static int ufail(vr_err *err, const struct model *m, int i, const char *why)
{
    return vr_err_set(err, VR_ENOTSUP, "netcu: op %d (%s): %s", i,
                      model_op_name(m->ops[i].kind), why);
}

static void geom_from(struct conv_geom *g, const struct tens *x, const struct model_op *o)
{
    memset(g, 0, sizeof *g);
    g->n = 1;
    g->ih = x->h; g->iw = x->w; g->cin = x->c;
    g->sh = o->stride_h > 0 ? o->stride_h : 1;
    g->sw = o->stride_w > 0 ? o->stride_w : 1;
    g->dh = o->dilation_h > 0 ? o->dilation_h : 1;
    g->dw = o->dilation_w > 0 ? o->dilation_w : 1;
    g->act = o->act;
}

/* One step per model op (plan stage 1). */
static int plan_op(struct netcu *net, int i, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = &m->ops[i];
    struct step *s = &net->st[i];
    memset(s, 0, sizeof *s);
    s->pos = s->op = i;
    s->x = o->in[0];
    s->x2 = s->a_scale = s->bsum = s->e_scale = s->res = -1;
    s->wt = s->bt = -1;
    s->out = o->out;
    if (o->n_in < 1 || s->x < 0 || s->x >= m->n_tensors || is_const(m, s->x) ||
        s->out < 0 || s->out >= m->n_tensors)
        return ufail(err, m, i, "input must be an activation tensor");
    const struct tens *x = &net->t[s->x], *y = &net->t[s->out];
    switch (o->kind) {
    case MOP_CONV_2D:
    case MOP_DEPTHWISE_CONV_2D:
    case MOP_TRANSPOSE_CONV_BIAS: {
        if (o->n_in < 2 || !is_const(m, o->in[1]) || m->tensors[o->in[1]].rank != 4)
            return ufail(err, m, i, "weights must be a constant 4-D tensor");
        const struct model_tensor *w = &m->tensors[o->in[1]];
        s->wt = o->in[1];
        s->bt = o->n_in > 2 && o->in[2] >= 0 ? o->in[2] : -1;
        if (s->bt >= 0 && !is_const(m, s->bt))
            return ufail(err, m, i, "bias must be constant");
        geom_from(&s->g, x, o);
        s->act1 = o->act;
        if (o->kind == MOP_DEPTHWISE_CONV_2D) {
            s->kind = S_DW;
            s->g.kh = w->shape[1]; s->g.kw = w->shape[2]; s->g.cout = w->shape[3];
            if (w->shape[0] != 1 || s->g.cout % s->g.cin)
                return ufail(err, m, i, "depthwise weights do not fit the input channels");
            op_conv_geom(&s->g, o->padding);
        } else {
            s->g.cout = w->shape[0]; s->g.kh = w->shape[1]; s->g.kw = w->shape[2];
            if (w->shape[3] != x->c)
                return ufail(err, m, i, "weights do not fit the input channels");
            if (o->kind == MOP_TRANSPOSE_CONV_BIAS) {
                s->kind = S_TCONV;
                s->g.dh = s->g.dw = 1;
                s->g.act = MACT_NONE;
                s->act1 = CU_ACT_NONE;
                op_tconv_geom(&s->g, o->padding);
            } else {
                op_conv_geom(&s->g, o->padding);
                int pw = s->g.kh == 1 && s->g.kw == 1 && s->g.sh == 1 && s->g.sw == 1 &&
                         s->g.pad_top == 0 && s->g.pad_left == 0 && s->g.cout % 8 == 0;
                s->kind = pw ? S_PW : S_CONV;
            }
        }
        if (s->bt >= 0 && m->tensors[s->bt].count != (size_t)s->g.cout)
            return ufail(err, m, i, "bias size differs from the output channels");
        if (s->g.oh != y->h || s->g.ow != y->w || s->g.cout != y->c)
            return ufail(err, m, i, "output shape differs from the computed geometry");
        return 0;
    }
    case MOP_HARD_SWISH:
    case MOP_RELU:
    case MOP_LOGISTIC:
        s->kind = S_UNARY;
        s->act1 = o->kind == MOP_RELU ? CU_ACT_RELU
                : o->kind == MOP_HARD_SWISH ? CU_ACT_HSWISH : CU_ACT_LOGISTIC;
        break;
    case MOP_AVERAGE_POOL_2D:
        geom_from(&s->g, x, o);
        s->g.dh = s->g.dw = 1;
        s->g.kh = o->filter_h; s->g.kw = o->filter_w; s->g.cout = x->c;
        if (s->g.kh < 1 || s->g.kw < 1)
            return ufail(err, m, i, "bad filter size");
        op_conv_geom(&s->g, o->padding);
        /* a window over the whole map is a mean: the reduction kernel */
        s->kind = (s->g.oh == 1 && s->g.ow == 1 && s->g.kh >= x->h && s->g.kw >= x->w &&
                   s->g.pad_top == 0 && s->g.pad_left == 0 && o->act == MACT_NONE)
                      ? S_SE : S_AVGPOOL;
        if (s->g.oh != y->h || s->g.ow != y->w)
            return ufail(err, m, i, "output shape differs from the computed geometry");
        return 0;
    case MOP_MEAN:
        s->kind = S_SE;
        break;
    case MOP_ADD:
    case MOP_MUL: {
        if (o->n_in < 2 || o->in[1] < 0 || is_const(m, o->in[1]))
            return ufail(err, m, i, "constant operands are not supported on the GPU");
        s->kind = o->kind == MOP_ADD ? S_ADD : S_MUL;
        s->act1 = o->act;
        s->x2 = o->in[1];
        const struct tens *a = &net->t[s->x], *b = &net->t[s->x2];
        int bchan = b->h == 1 && b->w == 1 && b->c == a->c;
        int achan = a->h == 1 && a->w == 1 && a->c == b->c;
        if (achan && !bchan) {    /* commutative: the broadcast one second */
            int t = s->x; s->x = s->x2; s->x2 = t;
            a = &net->t[s->x]; b = &net->t[s->x2];
            bchan = 1;
        }
        s->b_full = a->h == b->h && a->w == b->w && a->c == b->c;
        if (!s->b_full && !bchan)
            return ufail(err, m, i, "operands are neither the same shape nor per-channel");
        break;
    }
    case MOP_RESIZE_BILINEAR:
        s->kind = S_RESIZE;
        s->align = o->align_corners;
        s->half = o->half_pixel_centers;
        if (y->c != x->c)
            return ufail(err, m, i, "channel count changes");
        return 0;
    default:
        return ufail(err, m, i, "op not supported by the CUDA backend");
    }
    const struct tens *xo = &net->t[s->x];
    if (s->kind == S_SE ? y->c != xo->c : (y->h != xo->h || y->w != xo->w || y->c != xo->c))
        return ufail(err, m, i, "output shape differs from the input's");
    return 0;
}

/* ---- fusion (plan stage 2) ---- */

static int step_inputs(const struct step *s, int in[5])
{
    int k = 0;
    const int c[5] = {s->x, s->x2, s->a_scale, s->bsum, s->e_scale};
    for (int i = 0; i < 5; i++)
        if (c[i] >= 0)
            in[k++] = c[i];
    if (s->res >= 0)
        in[k++] = s->res;
    return k;
}

/* Number of reads of tensor t by live steps (+1 if it is the graph output). */
static int uses(const struct netcu *net, int t)
{
    int u = t == net->m->output;
    for (int i = 0; i < net->m->n_ops; i++) {
        if (net->st[i].kind == S_DEAD)
            continue;
        int in[6], k = step_inputs(&net->st[i], in);
        for (int j = 0; j < k; j++)
            u += in[j] == t;
    }
    return u;
}

/* The one live step reading t, when t has exactly one use, else NULL. */
static struct step *sole_consumer(struct netcu *net, int t)
{
    if (t < 0 || uses(net, t) != 1)
        return NULL;
    for (int i = 0; i < net->m->n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind == S_DEAD)
            continue;
        int in[6], k = step_inputs(s, in);
        for (int j = 0; j < k; j++)
            if (in[j] == t)
                return s;
    }
    return NULL;
}

static struct step *producer(struct netcu *net, int t)
{
    for (int i = 0; i < net->m->n_ops; i++)
        if (net->st[i].kind != S_DEAD && net->st[i].out == t)
            return &net->st[i];
    return NULL;
}

/* c (consumer) is absorbed into s: s now writes c's output, at c's place. */
static void absorb(struct step *s, struct step *c)
{
    s->out = c->out;
    if (c->pos > s->pos)
        s->pos = c->pos;
    c->kind = S_DEAD;
}

static int is_pw_conv_on_vector(const struct step *c, int t)
{
    return (c->kind == S_PW || c->kind == S_CONV) && c->x == t && c->g.ih == 1 &&
           c->g.iw == 1 && c->g.kh == 1 && c->g.kw == 1 && c->g.cout <= CU_SE_MAX_CH;
}

/* Fusion: squeeze-excite: the global pool absorbs the 1x1 convs on its
 * vector and their activations. */
static void fuse_squeeze_excite(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_SE || s->n_layers)
            continue;
        if (net->t[s->x].c > CU_SE_MAX_CH)
            continue;
        while (s->n_layers < CU_SE_MAX_LAYERS) {
            struct step *c = sole_consumer(net, s->out);
            if (!c || !is_pw_conv_on_vector(c, s->out))
                break;
            struct se_layer_t *L = &s->l[s->n_layers++];
            L->wt = c->wt; L->bt = c->bt; L->cin = c->g.cin; L->cout = c->g.cout;
            L->act1 = c->act1; L->act2 = CU_ACT_NONE;
            absorb(s, c);
            struct step *a = sole_consumer(net, s->out);
            if (a && a->kind == S_UNARY) {
                L->act2 = a->act1;
                absorb(s, a);
            }
        }
    }
}

/* Fusion: a stand-alone activation after a conv becomes the conv's epilogue. */
static void fuse_activations(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        int k = s->kind;
        if (k != S_CONV && k != S_PW && k != S_DW && k != S_TCONV)
            continue;
        struct step *c = sole_consumer(net, s->out);
        if (!c || c->kind != S_UNARY)
            continue;
        if (k == S_TCONV) {
            if (s->act1 != CU_ACT_NONE)
                continue;
            s->act1 = c->act1;
        } else {
            s->act2 = c->act1;
        }
        absorb(s, c);
    }
}

/* Fusion: pointwise epilogue, part 1: a per-channel scale of the conv's
 * output. */
static void fuse_pw_scale(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_PW)
            continue;
        struct step *c = sole_consumer(net, s->out);
        if (c && c->kind == S_MUL && !c->b_full && c->x == s->out && c->act1 == MACT_NONE) {
            s->e_scale = c->x2;
            absorb(s, c);
        }
    }
}

/* Fusion: pointwise and depthwise epilogue, part 2: the residual add. */
static void fuse_residual(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_PW && !(s->kind == S_DW && s->g.cout == s->g.cin))
            continue;
        struct step *c = sole_consumer(net, s->out);
        if (c && c->kind == S_ADD && c->b_full && c->x != c->x2) {
            s->res = c->x == s->out ? c->x2 : c->x;
            s->act3 = c->act1;
            absorb(s, c);
        }
    }
}

/* Fusion: an ADD feeding only a global pool: the pool sums both operands. */
static void fuse_pool_add(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_SE || s->x2 >= 0)
            continue;
        struct step *p = producer(net, s->x);
        if (p && p->kind == S_ADD && p->b_full && p->act1 == MACT_NONE && p->x != p->x2 &&
            uses(net, s->x) == 1) {
            s->x = p->x;
            s->x2 = p->x2;
            p->kind = S_DEAD;
        }
    }
}

/* Fusion: pointwise prologue: [a * scale[n][c]] [+ b], read while the conv
 * stages its input. */
static void fuse_pw_prologue(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_PW || s->a_scale >= 0 || s->bsum >= 0)
            continue;
        struct step *p = producer(net, s->x);
        if (!p || uses(net, s->x) != 1)
            continue;
        if (p->kind == S_MUL && !p->b_full && p->act1 == MACT_NONE) {
            s->x = p->x;
            s->a_scale = p->x2;
            p->kind = S_DEAD;
        } else if (p->kind == S_ADD && p->b_full && p->act1 == MACT_NONE && p->x != p->x2) {
            int ins[2] = {p->x, p->x2};
            int done = 0;
            for (int k = 0; k < 2 && !done; k++) {
                struct step *q = producer(net, ins[k]);
                if (q && q->kind == S_MUL && !q->b_full && q->act1 == MACT_NONE &&
                    uses(net, ins[k]) == 1) {
                    s->x = q->x;
                    s->a_scale = q->x2;
                    s->bsum = ins[1 - k];
                    q->kind = S_DEAD;
                    done = 1;
                }
            }
            if (!done) {
                s->x = ins[0];
                s->bsum = ins[1];
            }
            p->kind = S_DEAD;
        }
    }
}

/* Fusion: a RESIZE_BILINEAR read only by a pointwise conv (no prologue): the
 * conv samples the small map while staging its tile, so the upsampled
 * tensor, the largest the decoder writes, is never written. */
static void fuse_resize_into_pw(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_PW || s->a_scale >= 0 || s->bsum >= 0 || s->rs || s->g.cin % 8)
            continue;
        struct step *p = producer(net, s->x);
        if (p && p->kind == S_RESIZE && uses(net, s->x) == 1) {
            s->x = p->x;
            s->rs = 1;
            s->align = p->align;
            s->half = p->half;
            p->kind = S_DEAD;
        }
    }
}

/* Fusion level 2: a resize-on-load pointwise conv with no epilogue but its
 * activations runs at the small map's size, and its result is resized:
 * bilinear weights sum to one, so resize(x) . w + b = resize(x . w + b)
 * (to rounding). The decoder's three such convs (16x16x128 -> 32x32x24,
 * 32x32x24 -> 64x64x16, 64x64x16 -> 128x128x16) do a quarter of the
 * multiply-adds and interpolate cout channels instead of cin. */
#define RS_AFTER 2
static void resize_after_pw(struct netcu *net)
{
    for (int i = 0; i < net->m->n_ops; i++) {
        struct step *s = &net->st[i];
        if (s->kind == S_PW && s->rs == 1 && s->a_scale < 0 && s->bsum < 0 && s->e_scale < 0 &&
            s->res < 0 && s->g.cout % 8 == 0)
            s->rs = RS_AFTER;
    }
}

/* Fusion level 2: a squeeze-excite pool over the sum of two maps, one of
 * them written by the first conv (the stem kernel, ops_stem.cu), takes
 * that map's channel sums from the stem kernel's thread blocks (32 a tile)
 * instead of reading it again: in the selfie models the decoder's 128x128
 * pool, whose float32 skip map is 1 MB of the 1.5 it read a tile. */
static void pool_from_stem(struct netcu *net)
{
    static float aligned[4] __attribute__((aligned(16)));
    for (int i = 0; i < net->m->n_ops && !net->pool_parts; i++) {
        struct step *s = &net->st[i];
        if (s->kind != S_SE || s->x2 < 0)
            continue;
        for (int k = 0; k < 2; k++) {
            struct step *p = producer(net, k ? s->x2 : s->x);
            if (!p || p->kind != S_CONV)
                continue;
            struct conv_geom g = p->g;
            g.n = 1;
            if (!cu_stem_ok(&g, aligned))
                continue;
            if (!k) {   /* the stem's map as the second operand */
                const int t = s->x;
                s->x = s->x2;
                s->x2 = t;
            }
            p->pool = 1;
            s->x2_pool = 1;
            net->pool_parts = cu_stem_parts(&g);
            break;
        }
    }
}

/* Fusion level 2: an RS_AFTER conv (or stage ending in one) without
 * activations whose map is read only by squeeze-excite pools and decoder
 * stages (as the prologue's sum) is never resized: it is stored small
 * (tens.rs_*) and they resize where they read (the pool: each small pixel
 * weighted by what its taps sum to, the mean being linear). In the selfie
 * models: the decoder's 32x32, 64x64 and 128x128 upsampled maps, each
 * written once and read twice (1 MB a tile at 128x128). */
#define RS_DEFER 3
static int defer_ok(const struct netcu *net, const struct step *s)
{
    const struct tens *x = &net->t[s->x];
    if ((s->kind != S_PW && s->kind != S_TAIL) || s->rs != RS_AFTER || s->act1 != CU_ACT_NONE ||
        s->act2 != CU_ACT_NONE || s->out == net->m->output || x->h > CU_SE_MAX_RS ||
        x->w > CU_SE_MAX_RS)
        return 0;
    int readers = 0;
    for (int j = 0; j < net->m->n_ops; j++) {
        const struct step *r = &net->st[j];
        int in[6], k = r->kind == S_DEAD ? 0 : step_inputs(r, in), reads = 0;
        for (int q = 0; q < k; q++)
            reads += in[q] == s->out;
        if (!reads)
            continue;
        readers++;
        const int pool = r->kind == S_SE && (r->x == s->out || !r->x2_pool);
        const int tail = r->kind == S_TAIL && r->bsum == s->out && r->x != s->out &&
                         r->a_scale != s->out;
        if (reads != 1 || !(pool || tail))
            return 0;
    }
    return readers > 0;
}

static void defer_resize(struct netcu *net)
{
    for (int i = 0; i < net->m->n_ops; i++) {
        struct step *s = &net->st[i];
        if (!defer_ok(net, s))
            continue;
        const struct tens *x = &net->t[s->x];
        struct tens *y = &net->t[s->out];
        for (int j = 0; j < net->m->n_ops; j++) {   /* pools read it as their x */
            struct step *r = &net->st[j];
            if (r->kind == S_SE && r->x2 == s->out) {
                r->x2 = r->x;
                r->x = s->out;
            }
        }
        s->rs = RS_DEFER;
        y->rs_h = x->h;
        y->rs_w = x->w;
        y->rs_align = s->align;
        y->rs_half = s->half;
    }
}

/* The chain kernel's arguments for S_IR step s, with the weights at `w`
 * (device weights when running, NULL: the model's host data, for the
 * planner's fit check); in, out and n are left to the caller. */
static void ir_fill(const struct netcu *net, const struct step *s, const unsigned char *w,
                    struct cu_ir_args *a)
{
    const struct model *m = net->m;
    const struct tens *x = &net->t[s->x];
#define IR_W(t) ((t) < 0 ? (const float *)NULL \
                 : w ? (const float *)(w + net->w_off[t]) : (const float *)m->tensors[t].data)
    memset(a, 0, sizeof *a);
    a->h = x->h; a->w = x->w; a->c = x->c;
    a->n_blocks = s->n_ir;
    for (int i = 0; i < s->n_ir; i++) {
        const struct ir_blk_t *b = &s->ir[i];
        a->b[i] = (struct cu_ir_block){
            b->ce, b->k, b->cs,
            IR_W(b->we), IR_W(b->be), b->ae1, b->ae2,
            IR_W(b->wd), IR_W(b->bd), b->ad1, b->ad2,
            IR_W(b->w1), IR_W(b->b1), b->ar1, b->ar2,
            IR_W(b->w2), IR_W(b->b2), b->as1, b->as2,
            IR_W(b->wp), IR_W(b->bp), b->ap1, b->ap2,
            b->residual, b->act3 };
    }
#undef IR_W
}

/* 1 when s is a depthwise step the stage kernels take: multiplier 1,
 * square, stride 1, no dilation, SAME (the output map is the input map). */
static int is_same_dw(const struct step *s)
{
    const struct conv_geom *g = &s->g;
    return s->kind == S_DW && g->cin == g->cout && g->sh == 1 && g->sw == 1 && g->dh == 1 &&
           g->dw == 1 && g->kh == g->kw && g->pad_top == g->kh / 2 &&
           g->pad_left == g->kw / 2 && g->oh == g->ih && g->ow == g->iw;
}

/* Steps A (expand), B (depthwise), C (squeeze-excite) of the block that
 * pointwise step D (project, SE scale as prologue) ends, when they form
 * one inverted-residual block the chain kernel computes: each inner tensor
 * read only inside the block, the residual (if any) the block's input. */
static int match_ir(struct netcu *net, struct step *D, struct step **pa, struct step **pb,
                    struct step **pc)
{
    if (D->kind != S_PW || D->a_scale < 0 || D->bsum >= 0 || D->e_scale >= 0 || D->rs)
        return 0;
    struct step *C = producer(net, D->a_scale), *B = producer(net, D->x);
    if (!C || C->kind != S_SE || C->x != D->x || C->x2 >= 0 || C->n_layers != 2 ||
        uses(net, C->out) != 1 || C->l[0].cin != D->g.cin || C->l[1].cout != D->g.cin)
        return 0;
    if (!B || !is_same_dw(B) || B->res >= 0 || uses(net, B->out) != 2)
        return 0;
    struct step *A = producer(net, B->x);
    if (!A || A->kind != S_PW || A->a_scale >= 0 || A->bsum >= 0 || A->e_scale >= 0 ||
        A->res >= 0 || A->rs || uses(net, A->out) != 1 || A->g.cout != B->g.cin ||
        A->g.cin != D->g.cout || (D->res >= 0 && D->res != A->x))
        return 0;
    *pa = A; *pb = B; *pc = C;
    return 1;
}

/* Fusion (opts.fused == 2): each inverted-residual block the chain kernel
 * takes becomes one S_IR step (at the expand's slot, running at the
 * project's place); then an S_IR step whose output only the next S_IR step
 * reads absorbs it, up to CU_IR_MAX_BLOCKS blocks. */
static void fuse_ir_blocks(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *A, *B, *C, *D = &net->st[i];
        if (!match_ir(net, D, &A, &B, &C))
            continue;
        struct ir_blk_t b = {
            D->g.cin, B->g.kh, C->l[0].cout, D->res >= 0, D->act3,
            A->wt, A->bt, A->act1, A->act2, B->wt, B->bt, B->act1, B->act2,
            C->l[0].wt, C->l[0].bt, C->l[0].act1, C->l[0].act2,
            C->l[1].wt, C->l[1].bt, C->l[1].act1, C->l[1].act2,
            D->wt, D->bt, D->act1, D->act2 };
        struct step t = *A;
        t.kind = S_IR;
        t.out = D->out;
        t.pos = D->pos;
        t.n_ir = 1;
        t.ir[0] = b;
        struct cu_ir_args a;
        ir_fill(net, &t, NULL, &a);
        if (!cu_ir_smem(&a))
            continue;
        *A = t;
        B->kind = C->kind = D->kind = S_DEAD;
    }
    for (int i = 0; i < n_ops; i++) {
        struct step *s = &net->st[i];
        while (s->kind == S_IR) {
            struct step *c = sole_consumer(net, s->out);
            if (!c || c->kind != S_IR || c->x != s->out || s->n_ir + c->n_ir > CU_IR_MAX_BLOCKS)
                break;
            struct step t = *s;
            memcpy(&t.ir[t.n_ir], c->ir, sizeof c->ir[0] * c->n_ir);
            t.n_ir += c->n_ir;
            struct cu_ir_args a;
            ir_fill(net, &t, NULL, &a);
            if (!cu_ir_smem(&a))
                break;
            *s = t;
            absorb(s, c);
        }
    }
}

/* The head of a decoder stage whose map x the stage's last op reads: a
 * pointwise step P (its prologue kept) and a depthwise step D adding P's
 * output back, each map read by nothing else; 1 and *P, *D when found. */
static int stage_head(struct netcu *net, int x, struct step **P, struct step **D)
{
    struct step *d = producer(net, x);
    if (!d || !is_same_dw(d) || uses(net, x) != 1 || d->res < 0 || d->res != d->x)
        return 0;
    struct step *p = producer(net, d->x);
    if (!p || p->kind != S_PW || p->rs || p->e_scale >= 0 || p->res >= 0 ||
        uses(net, d->x) != 2)
        return 0;
    *P = p;
    *D = d;
    return 1;
}

/* Stage head P, D and its last step L (the transpose conv, or with `pw`
 * the 1x1 conv) become one S_TAIL step in P's place, when the stage kernel
 * takes the geometry. */
static void fuse_stage_into(struct netcu *net, struct step *P, struct step *D, struct step *L,
                            int pw)
{
    const struct tens *x = &net->t[P->x];
    struct cu_tail_args a = {
        .n = 1, .h = x->h, .w = x->w, .cin = P->g.cin, .c = P->g.cout, .k = D->g.kh,
        .cout = L->g.cout, .wp = net->m->tensors[P->wt].data,
        .wd = net->m->tensors[D->wt].data, .wt = net->m->tensors[L->wt].data,
        .bt = L->bt >= 0 ? net->m->tensors[L->bt].data : NULL, .pw = pw,
    };
    if (!cu_tail_ok(&a))
        return;
    struct step t = *P;
    t.kind = S_TAIL;
    t.out = L->out;
    t.pos = L->pos;
    t.tail = (struct tail_t){ P->g.cout, D->g.kh, L->g.cout, P->wt, P->bt, P->act1,
                              P->act2, D->wt, D->bt, D->act1, D->act2, D->act3, L->wt,
                              L->bt, L->act1, pw };
    if (pw) {   /* L's conv runs on this map; its result is resized as L's was */
        t.rs = RS_AFTER;
        t.align = L->align;
        t.half = L->half;
        t.act1 = t.act2 = CU_ACT_NONE;
    }
    *P = t;
    D->kind = L->kind = S_DEAD;
}

/* Fusion (opts.fused == 2): the decoder's tail - a stage head and a 2x2
 * stride-2 transpose conv - becomes one S_TAIL step. */
static void fuse_tail(struct netcu *net)
{
    for (int i = 0; i < net->m->n_ops; i++) {
        struct step *T = &net->st[i], *P, *D;
        if (T->kind == S_TCONV && T->g.kh == 2 && T->g.kw == 2 && T->g.sh == 2 &&
            T->g.sw == 2 && !T->g.pad_top && !T->g.pad_left && stage_head(net, T->x, &P, &D))
            fuse_stage_into(net, P, D, T, 0);
    }
}

/* Fusion (opts.fused == 2, after resize_after_pw): a decoder stage before
 * the last - a stage head, then the next stage's 1x1 conv on this map,
 * resized after (RS_AFTER) with no activation or epilogue - becomes one
 * S_TAIL step ending in that conv. The depthwise output is never written. */
static void fuse_stage(struct netcu *net)
{
    for (int i = 0; i < net->m->n_ops; i++) {
        struct step *L = &net->st[i], *P, *D;
        if (L->kind == S_PW && L->rs == RS_AFTER && L->act1 == CU_ACT_NONE &&
            L->act2 == CU_ACT_NONE && L->a_scale < 0 && L->bsum < 0 &&
            stage_head(net, L->x, &P, &D))
            fuse_stage_into(net, P, D, L, 1);
    }
}

/* Fusion (opts.fused == 2): a plain pointwise step read only by a
 * depthwise step becomes part of it (S_PWDW), the 1x1 conv's output never
 * written, when the pw+dw kernel takes the geometry. */
static void fuse_pw_dw(struct netcu *net)
{
    const int n_ops = net->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct step *D = &net->st[i];
        if (D->kind != S_DW || D->res >= 0)
            continue;
        struct step *P = producer(net, D->x);
        if (!P || P->kind != S_PW || P->rs || P->a_scale >= 0 || P->bsum >= 0 ||
            P->e_scale >= 0 || P->res >= 0 || uses(net, D->x) != 1)
            continue;
        struct cu_pwdw_args a = { .g = D->g, .cin = P->g.cin, .wp = net->m->tensors[P->wt].data,
                                  .wd = net->m->tensors[D->wt].data };
        a.g.act = D->act1;
        if (!cu_pwdw_ok(&a))
            continue;
        D->pwdw = (struct pwdw_t){ P->wt, P->bt, P->act1, P->act2 };
        D->kind = S_PWDW;
        D->x = P->x;
        D->op = P->op;
        P->kind = S_DEAD;
    }
}

/* Fuses the graph's steps in place (absorbed steps become S_DEAD), pass
 * after pass in this order: each sees what the earlier ones made. */
static void fuse(struct netcu *net)
{
    fuse_squeeze_excite(net);
    fuse_activations(net);
    fuse_pw_scale(net);
    fuse_residual(net);
    fuse_pool_add(net);
    fuse_pw_prologue(net);
    fuse_resize_into_pw(net);
    if (net->o.fused >= 2) {
        fuse_ir_blocks(net);
        fuse_tail(net);
        fuse_pw_dw(net);
        resize_after_pw(net);
        fuse_stage(net);
        pool_from_stem(net);
        if (!net->o.write_resized)
            defer_resize(net);
    }
}

/* ---- placement (plan stage 3) ---- */

struct freeblk { size_t off, size; };

/* Live steps sorted by pos (stable). */
static int order_steps(struct netcu *net, vr_err *err)
{
    int n_ops = net->m->n_ops;
    net->n_order = 0;
    for (int p = 0; p < n_ops; p++)
        for (int i = 0; i < n_ops; i++)
            if (net->st[i].kind != S_DEAD && net->st[i].pos == p)
                net->order[net->n_order++] = i;
    if (net->n_order == 0)
        return vr_err_set(err, VR_EFORMAT, "netcu: the model has no ops left to run");
    return 0;
}

static int place(struct netcu *net, vr_err *err)
{
    const struct model *m = net->m;
    int rc = VR_ENOMEM;
    int *last = (int *)malloc(sizeof(int) * m->n_tensors);
    struct freeblk *fl = (struct freeblk *)malloc(sizeof *fl * (m->n_tensors + 1));
    int nfl = 0;
    size_t top = 0;
    if (!last || !fl)
        goto fail;
    for (int t = 0; t < m->n_tensors; t++)
        last[t] = -1;
    for (int k = 0; k < net->n_order; k++) {
        int in[6], ni = step_inputs(&net->st[net->order[k]], in);
        for (int j = 0; j < ni; j++)
            last[in[j]] = k;
    }
    for (int k = 0; k < net->n_order; k++) {
        const struct step *s = &net->st[net->order[k]];
        int in[6], ni = step_inputs(s, in);
        for (int j = 0; j < ni; j++)
            if (in[j] != m->input && in[j] != m->output && !net->t[in[j]].placed) {
                rc = vr_err_set(err, VR_EFORMAT, "netcu: op %d reads tensor %d before "
                                "anything writes it", s->op, in[j]);
                goto fail;
            }
        int o = s->out;
        if (o != m->input && o != m->output) {
            struct tens *T = &net->t[o];
            size_t need = ALIGN256(tile_bytes(T) * net->arena_batch);
            int best = -1;
            for (int f = 0; f < nfl; f++)
                if (fl[f].size >= need && (best < 0 || fl[f].size < fl[best].size))
                    best = f;
            if (best >= 0) {
                T->off = fl[best].off;
                fl[best].off += need;
                fl[best].size -= need;
                if (fl[best].size == 0)
                    fl[best] = fl[--nfl];
            } else {
                T->off = top;
                top += need;
            }
            T->placed = 1;
            if (last[o] < 0)
                last[o] = k;   /* never read: free at once */
        }
        /* free what this step read (and wrote) for the last time */
        for (int j = 0; j <= ni; j++) {
            int t = j < ni ? in[j] : o;
            if (t == m->input || t == m->output || last[t] != k || !net->t[t].placed)
                continue;
            int dup = 0;
            for (int q = 0; q < j; q++)
                dup |= in[q] == t;
            if (dup)
                continue;
            struct tens *T = &net->t[t];
            fl[nfl].off = T->off;
            fl[nfl].size = ALIGN256(tile_bytes(T) * net->arena_batch);
            nfl++;
        }
    }
    net->rs_off = top;
    net->rs_bytes = 0;
    for (int k = 0; k < net->n_order; k++) {
        const struct step *s = &net->st[net->order[k]];
        const struct tens *x = &net->t[s->x];
        const int cout = s->kind == S_TAIL ? s->tail.cout : s->g.cout;
        size_t b = (size_t)x->h * x->w * cout * sizeof(float) * net->arena_batch;
        if ((s->kind == S_PW || s->kind == S_TAIL) && s->rs == RS_AFTER && b > net->rs_bytes)
            net->rs_bytes = b;
    }
    net->pool_off = top + ALIGN256(net->rs_bytes);
    net->arena_bytes = net->pool_off +
                       ALIGN256((size_t)net->arena_batch * net->pool_parts * 16 * sizeof(float));
    net->act_bytes = net->arena_bytes * (net->split ? 2 : 1);
    rc = 0;
fail:
    if (rc == VR_ENOMEM)
        vr_err_set(err, rc, "netcu: out of host memory while planning");
    free(last);
    free(fl);
    return rc;
}

/* ---- weights (plan stage 4) ---- */

static void want_w(struct netcu *net, int t, size_t *top)
{
    if (t < 0 || net->w_off[t] != SIZE_MAX)
        return;
    net->w_off[t] = *top;
    *top += ALIGN256(net->m->tensors[t].count * sizeof(float));
}

static int upload_weights(struct netcu *net, vr_err *err)
{
    size_t top = 0;
    for (int t = 0; t < net->m->n_tensors; t++)
        net->w_off[t] = SIZE_MAX;
    for (int k = 0; k < net->n_order; k++) {
        const struct step *s = &net->st[net->order[k]];
        want_w(net, s->wt, &top);
        want_w(net, s->bt, &top);
        for (int l = 0; l < s->n_layers; l++) {
            want_w(net, s->l[l].wt, &top);
            want_w(net, s->l[l].bt, &top);
        }
        if (s->kind == S_PWDW) {
            want_w(net, s->pwdw.wp, &top);
            want_w(net, s->pwdw.bp, &top);
        }
        if (s->kind == S_TAIL) {
            const int ids[] = { s->tail.wp, s->tail.bp, s->tail.wd, s->tail.bd, s->tail.wt,
                                s->tail.bt };
            for (size_t j = 0; j < sizeof ids / sizeof ids[0]; j++)
                want_w(net, ids[j], &top);
        }
        for (int b = 0; b < s->n_ir; b++) {
            const struct ir_blk_t *B = &s->ir[b];
            const int ids[] = { B->we, B->be, B->wd, B->bd, B->w1, B->b1, B->w2, B->b2,
                                B->wp, B->bp };
            for (size_t j = 0; j < sizeof ids / sizeof ids[0]; j++)
                want_w(net, ids[j], &top);
        }
    }
    net->w_bytes = top;
    cudaError_t e = cudaMalloc((void **)&net->d_w, top ? top : 256);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "netcu: cannot allocate %zu bytes of weights: %s",
                          top, cudaGetErrorString(e));
    for (int t = 0; t < net->m->n_tensors; t++) {
        if (net->w_off[t] == SIZE_MAX)
            continue;
        const struct model_tensor *T = &net->m->tensors[t];
        e = cudaMemcpy(net->d_w + net->w_off[t], T->data, T->count * sizeof(float),
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
    const struct model *m = c->net->m;
    if (t < 0)
        return NULL;
    if (t == m->input)
        return (void *)c->in;
    if (t == m->output)
        return c->out;
    return c->net->d_act + c->arena + c->net->t[t].off;
}

/* 1 when tensor t is stored as float16 (set_precision), 0 float32 or absent. */
static int tensor_f16(const struct ctx *c, int t)
{
    return t >= 0 && c->net->t[t].f16;
}

/* Constant tensor t (weights, biases) in the uploaded weight block. */
static const float *weights(const struct ctx *c, int t)
{
    return t < 0 ? NULL : (const float *)(c->net->d_w + c->net->w_off[t]);
}

/* The dtype bits of a fused kernel's operands (CU_DT_*): which are float16. */
static unsigned dtype_bits(const struct ctx *c, int in0, int in1, int in2, int in3, int res,
                           int out)
{
    return (tensor_f16(c, in0) ? CU_DT_IN0 : 0) | (tensor_f16(c, in1) ? CU_DT_IN1 : 0) |
           (tensor_f16(c, in2) ? CU_DT_IN2 : 0) | (tensor_f16(c, in3) ? CU_DT_IN3 : 0) |
           (tensor_f16(c, res) ? CU_DT_RES : 0) | (tensor_f16(c, out) ? CU_DT_OUT : 0);
}

/* Where a step writes: its output (stored small for RS_DEFER), or for
 * RS_AFTER the float32 scratch resized after. */
static void *step_out(const struct ctx *c, const struct step *s)
{
    return s->rs == RS_AFTER ? (void *)(c->net->d_act + c->arena + c->net->rs_off)
                             : tensor_ptr(c, s->out);
}

/* Its dtype bits: the scratch is float32. */
static unsigned step_out_dt(const struct ctx *c, const struct step *s)
{
    return dtype_bits(c, -1, -1, -1, -1, -1, s->rs == RS_AFTER ? -1 : s->out);
}

/* Then, for RS_AFTER, the scratch (cout channels) resized into the output
 * with the step's activations. */
static int resize_after(const struct ctx *c, const struct step *s, int cout, cudaStream_t st)
{
    if (s->rs != RS_AFTER)
        return 0;
    const struct tens *x = &c->net->t[s->x], *y = &c->net->t[s->out];
    return cu_resize_bilinear_dt(c->n, x->h, x->w, cout, step_out(c, s), y->h, y->w,
                                 s->align, s->half, s->act1, s->act2, tensor_ptr(c, s->out),
                                 dtype_bits(c, -1, -1, -1, -1, -1, s->out), st);
}

/* An RS_AFTER or RS_DEFER pointwise step: the 1x1 conv on the small map. */
static int run_pointwise_rs_after(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    const struct tens *x = &c->net->t[s->x];
    struct cu_pw_args a = {
        .n = c->n, .hw = x->h * x->w, .cin = s->g.cin, .cout = s->g.cout,
        .a = tensor_ptr(c, s->x), .w = weights(c, s->wt), .bias = weights(c, s->bt),
        .act1 = CU_ACT_NONE, .act2 = CU_ACT_NONE, .act3 = CU_ACT_NONE, .out = step_out(c, s),
    };
    int rc = cu_pointwise_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, -1) | step_out_dt(c, s),
                             st);
    return rc < 0 ? rc : resize_after(c, s, s->g.cout, st);
}

static int run_pointwise(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    const struct tens *x = &c->net->t[s->x], *y = &c->net->t[s->out];
    if (s->rs == RS_AFTER || s->rs == RS_DEFER)
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

static int run_depthwise(const struct ctx *c, const struct step *s, struct conv_geom g,
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

static int run_squeeze_excite(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    const struct tens *x = &c->net->t[s->x];
    struct cu_se_args a = {
        .n = c->n, .h = x->h, .w = x->w, .c = x->c,
        .in = tensor_ptr(c, s->x), .in2 = tensor_ptr(c, s->x2),
        .n_layers = s->n_layers,
        .l = {},
        .out = tensor_ptr(c, s->out),
        .in2_part = s->x2_pool ? (const float *)(c->net->d_act + c->arena + c->net->pool_off)
                               : NULL,
        .in2_parts = s->x2_pool ? c->net->pool_parts : 0,
        .in_rs_h = x->rs_h, .in_rs_w = x->rs_w, .in_rs_align = x->rs_align,
        .in_rs_half = x->rs_half,
    };
    for (int l = 0; l < s->n_layers; l++) {
        const struct se_layer_t *L = &s->l[l];
        a.l[l] = (struct cu_se_layer){ .cin = L->cin, .cout = L->cout, .w = weights(c, L->wt),
                                       .bias = weights(c, L->bt), .act1 = L->act1,
                                       .act2 = L->act2 };
    }
    return cu_se_dt(&a, dtype_bits(c, s->x, s->x2, -1, -1, -1, s->out), st);
}

static int run_ir_chain(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    struct cu_ir_args a;
    ir_fill(c->net, s, c->net->d_w, &a);
    a.n = c->n;
    a.in = tensor_ptr(c, s->x);
    a.out = tensor_ptr(c, s->out);
    return cu_ir_chain_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, s->out), st);
}

/* A decoder stage; one ending in a 1x1 conv runs at the small map's size
 * (RS_AFTER or RS_DEFER, as run_pointwise_rs_after). */
static int run_tail(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    const struct tens *x = &c->net->t[s->x];
    const struct tail_t *t = &s->tail;
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
    if (s->bsum >= 0) {   /* a deferred resize (RS_DEFER) */
        const struct tens *b = &c->net->t[s->bsum];
        a.b_rs_h = b->rs_h;
        a.b_rs_w = b->rs_w;
        a.b_rs_align = b->rs_align;
        a.b_rs_half = b->rs_half;
    }
    int rc = cu_tail_dt(&a, dtype_bits(c, s->x, s->a_scale, s->bsum, -1, -1, -1) |
                                step_out_dt(c, s), st);
    return rc < 0 ? rc : resize_after(c, s, t->cout, st);
}

static int run_pwdw(const struct ctx *c, const struct step *s, struct conv_geom g,
                    cudaStream_t st)
{
    g.act = s->act1;
    struct cu_pwdw_args a = {
        .g = g, .cin = c->net->t[s->x].c, .in = tensor_ptr(c, s->x),
        .wp = weights(c, s->pwdw.wp), .bp = weights(c, s->pwdw.bp),
        .act_p1 = s->pwdw.ap1, .act_p2 = s->pwdw.ap2,
        .wd = weights(c, s->wt), .bd = weights(c, s->bt), .act_d2 = s->act2,
        .out = tensor_ptr(c, s->out),
    };
    return cu_pwdw_dt(&a, dtype_bits(c, s->x, -1, -1, -1, -1, s->out), st);
}

static int run_step(const struct ctx *c, const struct step *s, cudaStream_t st)
{
    const struct tens *x = &c->net->t[s->x];
    const int n = c->n;
    const unsigned io = dtype_bits(c, s->x, -1, -1, -1, -1, s->out);
    struct conv_geom g = s->g;
    g.n = n;
    switch (s->kind) {
    case S_CONV:
        if (s->pool)
            return cu_stem(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                           weights(c, s->bt), s->act1, s->act2, tensor_ptr(c, s->out),
                           tensor_f16(c, s->out),
                           (float *)(c->net->d_act + c->arena + c->net->pool_off), st);
        return cu_conv2d_x(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                           weights(c, s->bt), s->act1, s->act2, tensor_ptr(c, s->out),
                           tensor_f16(c, s->out), st);
    case S_PW:
        return run_pointwise(c, s, st);
    case S_DW:
        return run_depthwise(c, s, g, st);
    case S_SE:
        return run_squeeze_excite(c, s, st);
    case S_IR:
        return run_ir_chain(c, s, st);
    case S_TAIL:
        return run_tail(c, s, st);
    case S_PWDW:
        return run_pwdw(c, s, g, st);
    case S_UNARY:
        return cu_unary_x(s->act1, tensor_ptr(c, s->x), tensor_f16(c, s->x), tensor_ptr(c, s->out),
                          tensor_f16(c, s->out), (size_t)n * x->h * x->w * x->c, st);
    case S_ADD:
    case S_MUL:
        return cu_binary_dt(s->kind == S_MUL, n, x->h, x->w, x->c, tensor_ptr(c, s->x),
                            tensor_ptr(c, s->x2), s->b_full, s->act1, tensor_ptr(c, s->out),
                            dtype_bits(c, s->x, s->x2, -1, -1, -1, s->out), st);
    case S_RESIZE: {
        const struct tens *y = &c->net->t[s->out];
        return cu_resize_bilinear_dt(n, x->h, x->w, x->c, tensor_ptr(c, s->x), y->h, y->w,
                                     s->align, s->half, CU_ACT_NONE, CU_ACT_NONE,
                                     tensor_ptr(c, s->out), io, st);
    }
    case S_AVGPOOL:
        return cu_avgpool_dt(&g, tensor_ptr(c, s->x), tensor_ptr(c, s->out), io, st);
    case S_TCONV:
        return cu_tconv_x(&g, tensor_ptr(c, s->x), tensor_f16(c, s->x), weights(c, s->wt),
                          weights(c, s->bt), s->act1, tensor_ptr(c, s->out),
                          tensor_f16(c, s->out), st);
    default:
        return VR_EINVAL;
    }
}

static int enqueue(const struct ctx *c, cudaStream_t st, vr_err *err)
{
    struct netcu *net = c->net;
    if (net->prof_ev)
        cudaEventRecord(net->prof_ev[0], st);
    for (int k = 0; k < c->net->n_order; k++) {
        const struct step *s = &c->net->st[c->net->order[k]];
        int rc = run_step(c, s, st);
        if (net->prof_ev)
            cudaEventRecord(net->prof_ev[k + 1], st);
        if (rc < 0) {
            cudaError_t e = cudaGetLastError();
            return vr_err_set(err, rc, "netcu: op %d (%s step, batch %d): %s", s->op,
                              kind_name[s->kind], c->n,
                              rc == VR_ECUDA ? cudaGetErrorString(e)
                                             : "the kernel cannot take this geometry");
        }
    }
    if (net->prof_ev && cudaEventSynchronize(net->prof_ev[net->n_order]) == cudaSuccess) {
        for (int k = 0; k < net->n_order; k++) {
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
    for (int k = 0; k < net->n_order; k++)
        total += net->prof_ms[k];
    fprintf(stderr, "netcu profile (%s, fp16=%d, batch %d, %d runs): %.3f ms a run\n",
            fused_name(net->o.fused), net->o.fp16, net->prof_batch, net->prof_runs,
            total / net->prof_runs);
    for (int k = 0; k < net->n_order; k++) {
        const struct step *s = &net->st[net->order[k]];
        int in[6], ni = step_inputs(s, in);
        double bytes = 0;
        for (int j = 0; j <= ni; j++) {
            int t = j < ni ? in[j] : s->out;
            bytes += (double)tile_bytes(&net->t[t]);
        }
        bytes *= net->prof_batch;
        double ms = net->prof_ms[k] / net->prof_runs;
        const struct tens *y = &net->t[s->out];
        fprintf(stderr, "  %3d %-14s -> %3dx%3dx%3d %8.4f ms %5.1f%% %7.2f MB %7.0f GB/s\n", k,
                kind_name[s->kind], y->h, y->w, y->c, ms, 100.0 * net->prof_ms[k] / total,
                bytes / 1e6, ms > 0 ? bytes / ms / 1e6 : 0.0);
    }
}

/* Chooses each materialised tensor's dtype. fp16 == 0: all float32;
 * fp16 == 2: all float16; fp16 == 1 (the product's): float16 only for the
 * decoder's last stage, the tensors at the largest internal map size
 * written after the bottleneck (the last step at the smallest size), and
 * float32 elsewhere. Why: rounding every activation of this network to
 * float16 moves the worst pixel of a real 256x256 mask by 0.10..0.13 on
 * the GPU (0.02..0.05 in a numpy emulation of the fused plan on five
 * tiles); the error is seeded in the encoder and amplified by all that
 * follows. float16 in the whole decoder still gave 0.028 on the GPU; in
 * the last stage alone 0.002..0.009 in the emulation. That stage
 * (128x128x16 for the 256x256 model) moves the most bytes of the decoder
 * (docs/notes/cuda-net.md). The network's input and output are float32. */
static void set_precision(struct netcu *net)
{
    const struct model *m = net->m;
    int split = net->n_order, mn = 0, mx = 0;
    if (net->o.fp16 == 1) {
        for (int k = 0; k < net->n_order; k++) {
            const struct tens *y = &net->t[net->st[net->order[k]].out];
            int a = y->h * y->w;
            if (a > 1 && (mn == 0 || a < mn))
                mn = a;
            /* internal maps: smaller than the network's output */
            if (a < net->t[m->output].h * net->t[m->output].w && a > mx)
                mx = a;
        }
        for (int k = 0; k < net->n_order; k++) {
            const struct tens *y = &net->t[net->st[net->order[k]].out];
            if (y->h * y->w == mn)
                split = k;
        }
    }
    for (int k = 0; k < net->n_order; k++) {
        int o = net->st[net->order[k]].out;
        const struct tens *y = &net->t[o];
        net->t[o].f16 = net->o.fp16 == 2 ||
                        (net->o.fp16 == 1 && k > split && y->h * y->w == mx);
    }
    net->t[m->input].f16 = 0;
    net->t[m->output].f16 = 0;
}

/* VR_NETCU_DUMP=1 prints the plan: one line per kernel. */
static void dump_plan(const struct netcu *net)
{
    const char *env = getenv("VR_NETCU_DUMP");
    if (!env || !*env || *env == '0')
        return;
    fprintf(stderr, "netcu plan (%s, fp16=%d): %d ops -> %d kernels\n",
            fused_name(net->o.fused), net->o.fp16, net->m->n_ops, net->n_order);
    for (int k = 0; k < net->n_order; k++) {
        const struct step *s = &net->st[net->order[k]];
        const struct tens *y = &net->t[s->out];
        fprintf(stderr, "  %3d op %3d..%3d %-14s x=%d%s x2=%d as=%d b=%d es=%d res=%d -> %d "
                "[%dx%dx%d]%s act %d/%d/%d layers %d blocks %d\n", k, s->op, s->pos,
                kind_name[s->kind], s->x, s->rs ? "(resized)" : "", s->x2, s->a_scale,
                s->bsum, s->e_scale, s->res,
                s->out, y->h, y->w, y->c, y->f16 ? "h" : "f", s->act1, s->act2, s->act3,
                s->n_layers, s->n_ir);
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
    if (!net->split || c->n < 2)
        return enqueue(c, st, err);
    const int n1 = (c->n + 1) / 2;
    const struct tens *ti = &net->t[net->m->input], *to = &net->t[net->m->output];
    struct ctx a = *c, b = *c;
    a.n = n1;
    b.n = c->n - n1;
    b.arena = c->arena + net->arena_bytes;
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

int netcu_create(const struct model *m, const struct netcu_opts *o, struct netcu **out,
                 vr_err *err)
{
    int rc;
    cudaError_t e;
    *out = NULL;
    if (!m || !o || o->max_batch < 1 || o->max_batch > 4096 || m->n_ops < 1)
        return vr_err_set(err, VR_EINVAL, "netcu: max_batch must be 1..4096 (got %d)",
                          o ? o->max_batch : 0);
    if (o->fused < 0 || o->fused > 2)
        return vr_err_set(err, VR_EINVAL, "netcu: fused must be 0, 1 or 2 (got %d)", o->fused);
    if (m->in_c != 3 || m->input < 0 || m->output < 0 || m->input == m->output)
        return vr_err_set(err, VR_ENOTSUP, "netcu: the model must take RGB and have one output");
    const char *pe = getenv("VR_NETCU_PROFILE");   /* per-step events, one stream */
    const int profiling = pe && *pe && *pe != '0' && !o->use_graph;
    struct netcu *net = (struct netcu *)calloc(1, sizeof *net);
    if (!net)
        return vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
    net->m = m;
    net->o = *o;
    net->t = (struct tens *)calloc(m->n_tensors, sizeof *net->t);
    net->st = (struct step *)calloc(m->n_ops, sizeof *net->st);
    net->order = (int *)calloc(m->n_ops, sizeof *net->order);
    net->w_off = (size_t *)calloc(m->n_tensors, sizeof *net->w_off);
    net->graphs = (struct gslot *)calloc(o->max_batch + 1, sizeof *net->graphs);
    if (!net->t || !net->st || !net->order || !net->w_off || !net->graphs) {
        rc = vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
        goto fail;
    }
    for (int t = 0; t < m->n_tensors; t++)
        if (!m->tensors[t].data && (rc = tshape(m, t, &net->t[t], err)) < 0)
            goto fail;
    if (net->t[m->output].c != 1 || net->t[m->input].c != 3) {
        rc = vr_err_set(err, VR_ENOTSUP, "netcu: output must have 1 channel, input 3");
        goto fail;
    }
    for (int i = 0; i < m->n_ops; i++)
        if ((rc = plan_op(net, i, err)) < 0)
            goto fail;
    if (o->fused)
        fuse(net);
    if ((rc = order_steps(net, err)) < 0)
        goto fail;
    set_precision(net);
    net->split = !o->one_stream && o->max_batch >= 32 && !profiling;
    net->arena_batch = net->split ? (o->max_batch + 1) / 2 : o->max_batch;
    if ((rc = place(net, err)) < 0)
        goto fail;
    dump_plan(net);
    if ((rc = upload_weights(net, err)) < 0)
        goto fail;
    e = cudaMalloc((void **)&net->d_act, net->act_bytes ? net->act_bytes : 256);
    if (e != cudaSuccess) {
        rc = vr_err_set(err, VR_ECUDA, "netcu: cannot allocate %zu MiB of activations "
                        "(max_batch %d): %s", net->act_bytes >> 20, o->max_batch,
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
        net->prof_ev = (cudaEvent_t *)calloc(net->n_order + 1, sizeof *net->prof_ev);
        net->prof_ms = (double *)calloc(net->n_order, sizeof *net->prof_ms);
        if (!net->prof_ev || !net->prof_ms) {
            rc = vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
            goto fail;
        }
        for (int k = 0; k <= net->n_order; k++)
            cudaEventCreate(&net->prof_ev[k]);
    }
    log_debug("netcu: %d ops -> %d kernels (%s, %s), activations %zu KiB, weights %zu KiB",
              m->n_ops, net->n_order, fused_name(o->fused),
              o->fp16 ? "fp16" : "fp32", net->act_bytes >> 10, net->w_bytes >> 10);
    *out = net;
    return 0;
fail:
    netcu_free(&net);
    return rc;
}

int netcu_run(struct netcu *net, const float *d_in, int n, float *d_out, void *stream,
              vr_err *err)
{
    if (!net || !d_in || !d_out || n < 1 || n > net->o.max_batch)
        return vr_err_set(err, VR_EINVAL, "netcu: batch %d out of 1..%d", n,
                          net ? net->o.max_batch : 0);
    cudaStream_t st = (cudaStream_t)stream;
    struct ctx c = {net, d_in, d_out, n, 0};
    if (!net->o.use_graph)
        return enqueue_split(&c, st, err);
    struct gslot *g = &net->graphs[n];
    cudaError_t e;
    if (!g->exec || g->in != d_in || g->out != d_out) {
        cudaGraph_t graph = NULL;
        if ((e = cudaStreamBeginCapture(net->cap, cudaStreamCaptureModeThreadLocal)) != cudaSuccess)
            return vr_err_set(err, VR_ECUDA, "netcu: cannot capture a graph: %s",
                              cudaGetErrorString(e));
        int rc = enqueue_split(&c, net->cap, err);
        e = cudaStreamEndCapture(net->cap, &graph);
        if (rc < 0) {
            if (graph)
                cudaGraphDestroy(graph);
            return rc;
        }
        if (e != cudaSuccess)
            return vr_err_set(err, VR_ECUDA, "netcu: graph capture failed: %s",
                              cudaGetErrorString(e));
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

size_t netcu_device_bytes(const struct netcu *net)
{
    return net ? net->w_bytes + net->act_bytes : 0;
}

int netcu_kernels(const struct netcu *net)
{
    int k = 0;
    for (int i = 0; net && i < net->n_order; i++)
        k += 1 + (net->st[net->order[i]].rs == RS_AFTER);   /* conv + resize */
    return k;
}

void netcu_free(struct netcu **pnet)
{
    if (!pnet || !*pnet)
        return;
    struct netcu *net = *pnet;
    if (net->prof_ev) {
        prof_report(net);
        for (int k = 0; k <= net->n_order; k++)
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
    free(net->w_off);
    free(net->order);
    free(net->st);
    free(net->t);
    free(net);
    *pnet = NULL;
}

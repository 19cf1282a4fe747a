/*
 * net_exec_ref.c - the CPU network executor (net.h): runs a loaded model
 * (model.h) over a batch with the C twins of ops_ref.h; the C twin of
 * net_exec.cu, the GPU executor (net_cuda.h).
 *
 * net_create() does all the thinking once: it walks the ops in order,
 * derives every activation's per-item shape from the input's and checks it
 * against the shape the file declares (so a model the loader accepted but
 * this engine would misread fails here, naming the op), checks each op's
 * weights against its input, repacks CONV_2D weights to HWIO for the fast
 * path, and plans the activation memory: a tensor gets a slot of one arena
 * when its op runs and gives it back after its last consumer, so at most a
 * handful of activations are alive at once. net_run() then only calls
 * kernels: no allocation, no conversion, no shape logic.
 *
 * The graph input is read straight from the caller's buffer (no op writes
 * its input); the output's channel 0 is copied out at the end.
 *
 * Threads (net_set_threads) split a batch by items: each "lane" owns an
 * arena laid out by the same plan and runs every op on its items. Items
 * never interact, so the result does not depend on the split. The lanes'
 * threads live as long as the setting and wait on a condition variable
 * between runs.
 */
#include "net.h"

#include "log.h"
#include "ops_ref.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Limits checked before anything derived from the file is allocated. */
#define NET_MAX_BATCH 4096
#define NET_MAX_ARENA ((size_t)8 << 30) /* bytes of activations */
#define NET_ALIGN_FLOATS 16             /* 64-byte aligned slots */

/* Per-item shape of an activation, NHWC without N; rank-2 [1][c] (a MEAN
 * without keep_dims) is h = w = 1. */
struct ashape {
    int h, w, c;
};

/* One prepared op. */
struct step {
    const struct model_op *op;
    int in0, in1;           /* activation tensors; in1 -1 when none or constant */
    int in2;                /* CONCATENATION's third input, or -1 */
    int out;
    struct conv_geom g;     /* window ops; each run uses a copy with its n */
    const float *w, *b;     /* weights and bias as the kernel takes them */
    float *own;             /* net-owned repacked weights or expanded constant */
    const float *bconst;    /* ADD/MUL: constant operand repeated max_batch times */
    int b_full;             /* ADD/MUL: second operand has the full shape */
};

/* One share of a batch: its own activation memory and tensor pointers.
 * Lane 0 runs on the caller's thread and holds max_batch items; the others
 * hold lane_cap items each. */
struct lane {
    struct net *net;
    float *arena;
    float **ptr;            /* per tensor: where it lives in this lane */
    int first, count;       /* this run's items (set under net->mu) */
    unsigned seen;          /* the last run generation this lane took */
    pthread_t tid;
    int started;
    struct log_ctx *logctx; /* its creator's log group (a worker of several in one
                             * process), which the lane's thread joins */
};

struct net {
    const struct model *m;
    int max_batch;
    struct step *steps;
    int n_steps;
    struct ashape *shape;   /* per tensor (valid for activations) */
    int *slot;              /* per tensor: arena slot, -1 when not planned */
    size_t *slot_item;      /* per slot: floats per batch item */
    int n_slots;
    struct lane *lanes;     /* [n_lanes]; lanes[0] always exists */
    int n_lanes;
    int lane_cap;           /* items per extra lane */
    /* the pool of lanes 1.. */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen;           /* bumped to start a run */
    int pending;            /* extra lanes still running */
    int quit;
    const float *run_in;    /* this run's buffers */
    float *run_out;
    float *const *run_outs; /* net_run_outputs: one buffer a graph output */
    int all_outputs;        /* made by net_create_outputs */
};

/* ---- helpers ---- */

static size_t item_count(const struct ashape *s)
{
    return (size_t)s->h * s->w * s->c;
}

static const char *tname(const struct model *m, int t)
{
    return m->tensors[t].name[0] ? m->tensors[t].name : "(unnamed)";
}

static int is_const(const struct model *m, int t)
{
    return t >= 0 && m->tensors[t].data != NULL;
}

static int opfail(vr_err *err, int code, const struct model *m, int i, const char *msg)
{
    return vr_err_set(err, code, "net: op %d (%s): %s", i, model_op_name(m->ops[i].kind), msg);
}

/* The file's per-item shape of tensor t, or -1 if it is not NHWC-like. */
static int file_shape(const struct model_tensor *t, struct ashape *s)
{
    if (t->rank == 4 && t->shape[0] == 1) {
        *s = (struct ashape){ t->shape[1], t->shape[2], t->shape[3] };
        return 0;
    }
    if (t->rank == 3 && t->shape[0] == 1) { /* [1,A,B] is [1,1,A,B] */
        *s = (struct ashape){ 1, t->shape[1], t->shape[2] };
        return 0;
    }
    if (t->rank == 2 && t->shape[0] == 1) {
        *s = (struct ashape){ 1, 1, t->shape[1] };
        return 0;
    }
    return -1;
}

/* ---- shape inference and checks, one op ---- */

static int need_weights(const struct model *m, int i, int t, int rank, vr_err *err)
{
    if (!is_const(m, t))
        return opfail(err, VR_EFORMAT, m, i, "weights are not a constant tensor");
    if (m->tensors[t].rank != rank)
        return opfail(err, VR_EFORMAT, m, i, "weights have the wrong rank");
    return 0;
}

static int need_bias(const struct model *m, int i, int t, int cout, int required,
                     const float **b, vr_err *err)
{
    *b = NULL;
    if (t < 0) {
        if (required)
            return opfail(err, VR_EFORMAT, m, i, "bias missing");
        return 0;
    }
    if (!is_const(m, t) || m->tensors[t].count != (size_t)cout)
        return vr_err_set(err, VR_EFORMAT, "net: op %d (%s): bias '%s' must be %d constants",
                          i, model_op_name(m->ops[i].kind), tname(m, t), cout);
    *b = m->tensors[t].data;
    return 0;
}

/* Strides (and, for convolutions, dilations) in 1..MODEL_MAX_DIM. */
static int check_window(const struct model *m, int i, const struct model_op *o, int dilated,
                        vr_err *err)
{
    if (o->stride_h < 1 || o->stride_w < 1 || o->stride_h > MODEL_MAX_DIM ||
        o->stride_w > MODEL_MAX_DIM)
        return opfail(err, VR_EFORMAT, m, i, "stride out of range");
    if (dilated && (o->dilation_h < 1 || o->dilation_w < 1 || o->dilation_h > MODEL_MAX_DIM ||
                    o->dilation_w > MODEL_MAX_DIM))
        return opfail(err, VR_EFORMAT, m, i, "dilation out of range");
    if (o->padding != MPAD_SAME && o->padding != MPAD_VALID)
        return opfail(err, VR_EFORMAT, m, i, "unknown padding");
    return 0;
}

/* The window of a conv-like op: input shape, the op's strides, dilations
 * and activation, and the kernel size and output channels. */
static void geom_in(struct conv_geom *g, const struct ashape *x, const struct model_op *o,
                    int cout, int kh, int kw)
{
    memset(g, 0, sizeof *g);
    g->cout = cout;
    g->kh = kh;
    g->kw = kw;
    g->ih = x->h;
    g->iw = x->w;
    g->cin = x->c;
    g->sh = o->stride_h;
    g->sw = o->stride_w;
    g->dh = o->dilation_h;
    g->dw = o->dilation_w;
    g->act = o->act;
}

static int prep_conv(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = st->op;
    const struct ashape *x = &net->shape[st->in0];
    int rc = check_window(m, i, o, 1, err);
    if (rc || (rc = need_weights(m, i, o->in[1], 4, err)))
        return rc;
    const struct model_tensor *w = &m->tensors[o->in[1]];
    int cout = w->shape[0], kh = w->shape[1], kw = w->shape[2], cin = w->shape[3];
    if (cin != x->c)
        return vr_err_set(err, VR_EFORMAT,
                          "net: op %d (CONV_2D): weights take %d input channels, input has %d",
                          i, cin, x->c);
    if ((rc = need_bias(m, i, o->n_in > 2 ? o->in[2] : -1, cout, 0, &st->b, err)))
        return rc;
    geom_in(&st->g, x, o, cout, kh, kw);
    op_conv_geom(&st->g, o->padding);
    st->own = malloc(w->count * sizeof(float));
    if (!st->own)
        return vr_err_set(err, VR_ENOMEM, "net: out of memory for op %d's weights", i);
    op_pack_hwio(w->data, cout, kh, kw, cin, st->own);
    st->w = st->own;
    *y = (struct ashape){ st->g.oh, st->g.ow, cout };
    return 0;
}

static int prep_dwconv(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = st->op;
    const struct ashape *x = &net->shape[st->in0];
    int rc = check_window(m, i, o, 1, err);
    if (rc || (rc = need_weights(m, i, o->in[1], 4, err)))
        return rc;
    const struct model_tensor *w = &m->tensors[o->in[1]];
    int kh = w->shape[1], kw = w->shape[2], cout = w->shape[3];
    int dm = o->depth_multiplier > 0 ? o->depth_multiplier : 1;
    if (w->shape[0] != 1 || (int64_t)x->c * dm != cout)
        return vr_err_set(err, VR_EFORMAT,
                          "net: op %d (DEPTHWISE_CONV_2D): weights [%d][%d][%d][%d] do not "
                          "fit %d input channels with depth multiplier %d",
                          i, w->shape[0], kh, kw, cout, x->c, dm);
    if ((rc = need_bias(m, i, o->n_in > 2 ? o->in[2] : -1, cout, 0, &st->b, err)))
        return rc;
    geom_in(&st->g, x, o, cout, kh, kw);
    op_conv_geom(&st->g, o->padding);
    st->w = w->data;
    *y = (struct ashape){ st->g.oh, st->g.ow, cout };
    return 0;
}

static int prep_pool(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model_op *o = st->op;
    const struct ashape *x = &net->shape[st->in0];
    int rc = check_window(net->m, i, o, 0, err);
    if (rc)
        return rc;
    if (o->filter_h < 1 || o->filter_w < 1 || o->filter_h > MODEL_MAX_DIM ||
        o->filter_w > MODEL_MAX_DIM)
        return opfail(err, VR_EFORMAT, net->m, i, "filter size out of range");
    geom_in(&st->g, x, o, x->c, o->filter_h, o->filter_w);
    st->g.dh = st->g.dw = 1;
    op_conv_geom(&st->g, o->padding);
    *y = (struct ashape){ st->g.oh, st->g.ow, x->c };
    return 0;
}

static int prep_tconv(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = st->op;
    const struct ashape *x = &net->shape[st->in0];
    int rc = check_window(m, i, o, 0, err);
    if (rc || (rc = need_weights(m, i, o->in[1], 4, err)))
        return rc;
    const struct model_tensor *w = &m->tensors[o->in[1]];
    int cout = w->shape[0], kh = w->shape[1], kw = w->shape[2];
    if (w->shape[3] != x->c)
        return vr_err_set(err, VR_EFORMAT,
                          "net: op %d (%s): weights take %d input channels, input has %d", i,
                          model_op_name(o->kind), w->shape[3], x->c);
    if ((rc = need_bias(m, i, o->n_in > 2 ? o->in[2] : -1, cout, 1, &st->b, err)))
        return rc;
    geom_in(&st->g, x, o, cout, kh, kw);
    st->g.dh = st->g.dw = 1;
    st->g.act = MACT_NONE;
    op_tconv_geom(&st->g, o->padding);
    st->w = w->data;
    *y = (struct ashape){ st->g.oh, st->g.ow, cout };
    return 0;
}

/* ADD / MUL: a full-shape first operand and a second that is either the
 * same shape or one value per channel (activation [1,1,1,c] or constant). */
static int prep_binary(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = st->op;
    if (o->n_in < 2 || o->in[1] < 0)
        return opfail(err, VR_EFORMAT, m, i, "needs two inputs");
    struct ashape a = net->shape[st->in0];
    if (!is_const(m, o->in[1])) {
        struct ashape b = net->shape[o->in[1]];
        int bchan = b.h == 1 && b.w == 1 && b.c == a.c;
        int achan = a.h == 1 && a.w == 1 && a.c == b.c;
        if (achan && !bchan) {
            /* x + y == y + x and x * y == y * x bit for bit: swap. */
            st->in1 = st->in0;
            st->in0 = o->in[1];
            struct ashape t = a;
            a = b;
            b = t;
            bchan = 1;
        } else {
            st->in1 = o->in[1];
        }
        st->b_full = a.h == b.h && a.w == b.w && a.c == b.c;
        if (!st->b_full && !bchan)
            return vr_err_set(err, VR_ENOTSUP,
                              "net: op %d (%s): cannot broadcast %dx%dx%d with %dx%dx%d "
                              "(same shape or one value per channel only)",
                              i, model_op_name(o->kind), a.h, a.w, a.c, b.h, b.w, b.c);
        *y = a;
        return 0;
    }
    /* A constant second operand: expanded once over the batch. */
    const struct model_tensor *k = &m->tensors[o->in[1]];
    size_t per = 0;
    if (k->count == item_count(&a)) {
        st->b_full = 1;
        per = k->count;
    } else if (k->count == (size_t)a.c) {
        st->b_full = 0;
        per = k->count;
    } else {
        return vr_err_set(err, VR_ENOTSUP,
                          "net: op %d (%s): constant '%s' has %zu values; %zu or %d expected",
                          i, model_op_name(o->kind), tname(m, o->in[1]), k->count,
                          item_count(&a), a.c);
    }
    st->own = malloc(per * net->max_batch * sizeof(float));
    if (!st->own)
        return vr_err_set(err, VR_ENOMEM, "net: out of memory for op %d's constant", i);
    for (int n = 0; n < net->max_batch; n++)
        memcpy(st->own + (size_t)n * per, k->data, per * sizeof(float));
    st->bconst = st->own;
    st->in1 = -1;
    *y = a;
    return 0;
}

/* CONCATENATION along o->axis (1 H, 2 W, 3 C) of two or three inputs. */
static int prep_concat(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model_op *o = st->op;
    if (o->n_in < 2 || o->n_in > 3 || o->axis < 1 || o->axis > 3)
        return opfail(err, VR_EFORMAT, net->m, i, "2 or 3 inputs along H, W or C expected");
    st->in1 = o->in[1];
    st->in2 = o->n_in == 3 ? o->in[2] : -1;
    *y = net->shape[st->in0];
    for (int k = 1; k < o->n_in; k++) {
        const struct ashape *b = &net->shape[o->in[k]];
        int *dim = o->axis == 1 ? &y->h : o->axis == 2 ? &y->w : &y->c;
        if ((o->axis != 1 && b->h != y->h) || (o->axis != 2 && b->w != y->w) ||
            (o->axis != 3 && b->c != y->c))
            return opfail(err, VR_EFORMAT, net->m, i, "inputs differ off the axis");
        *dim += o->axis == 1 ? b->h : o->axis == 2 ? b->w : b->c;
    }
    return 0;
}

/* The pose tier's ops: PAD, DEPTH_TO_SPACE, RESHAPE (MAX_POOL_2D is a pool). */
static int prep_move(struct net *net, int i, struct step *st, struct ashape *y, vr_err *err)
{
    const struct model_op *o = st->op;
    const struct ashape *x = &net->shape[st->in0];
    switch (o->kind) {
    case MOP_PAD:
        if (o->pad_h0 < 0 || o->pad_h1 < 0 || o->pad_w0 < 0 || o->pad_w1 < 0 ||
            o->pad_c0 < 0 || o->pad_c1 < 0)
            return opfail(err, VR_EFORMAT, net->m, i, "negative padding");
        *y = (struct ashape){ x->h + o->pad_h0 + o->pad_h1, x->w + o->pad_w0 + o->pad_w1,
                              x->c + o->pad_c0 + o->pad_c1 };
        return 0;
    case MOP_DEPTH_TO_SPACE: {
        const int bs = o->block_size;
        if (bs < 1 || bs > 64 || x->c % (bs * bs))
            return opfail(err, VR_EFORMAT, net->m, i, "block size does not fit the channels");
        *y = (struct ashape){ x->h * bs, x->w * bs, x->c / (bs * bs) };
        return 0;
    }
    case MOP_RESHAPE:
        if (file_shape(&net->m->tensors[o->out], y) < 0 || item_count(y) != item_count(x))
            return opfail(err, VR_EFORMAT, net->m, i, "reshape changes the value count");
        return 0;
    default:
        return prep_concat(net, i, st, y, err);
    }
}

static int prep_op(struct net *net, int i, struct ashape *y, vr_err *err)
{
    const struct model *m = net->m;
    const struct model_op *o = &m->ops[i];
    struct step *st = &net->steps[i];
    const struct ashape *x = &net->shape[st->in0];
    st->in1 = st->in2 = -1;
    if (o->act == MACT_TANH)
        return opfail(err, VR_ENOTSUP, m, i,
                      "fused TANH is ambiguous (TFLite's CPU kernels ignore it, its GPU "
                      "delegate applies it); not supported");
    switch (o->kind) {
    case MOP_CONV_2D:
        return prep_conv(net, i, st, y, err);
    case MOP_DEPTHWISE_CONV_2D:
        return prep_dwconv(net, i, st, y, err);
    case MOP_AVERAGE_POOL_2D:
    case MOP_MAX_POOL_2D:
        return prep_pool(net, i, st, y, err);
    case MOP_PAD:
    case MOP_DEPTH_TO_SPACE:
    case MOP_RESHAPE:
    case MOP_CONCATENATION:
        return prep_move(net, i, st, y, err);
    case MOP_TRANSPOSE_CONV_BIAS:
        return prep_tconv(net, i, st, y, err);
    case MOP_ADD:
    case MOP_MUL:
        return prep_binary(net, i, st, y, err);
    case MOP_HARD_SWISH:
    case MOP_RELU:
    case MOP_LOGISTIC:
        *y = *x;
        return 0;
    case MOP_MEAN:
        *y = (struct ashape){ 1, 1, x->c };
        return 0;
    case MOP_RESIZE_BILINEAR:
        if (o->out_h < 1 || o->out_w < 1 || o->out_h > MODEL_MAX_DIM ||
            o->out_w > MODEL_MAX_DIM)
            return opfail(err, VR_EFORMAT, m, i, "target size out of range");
        if (o->align_corners && o->half_pixel_centers)
            return opfail(err, VR_EFORMAT, m, i,
                          "align_corners and half_pixel_centers are exclusive");
        *y = (struct ashape){ o->out_h, o->out_w, x->c };
        return 0;
    default:
        return opfail(err, VR_ENOTSUP, m, i, "op kind not supported by the CPU engine");
    }
}

/* ---- memory plan ---- */

/* Slots are sized during planning (a slot grows to its largest tenant), so
 * offsets are fixed only once every op has been assigned. */
struct plan {
    size_t *size;   /* per slot, floats */
    char *busy;     /* per slot */
    int n;
};

static int plan_take(struct plan *p, size_t need)
{
    int best = -1, largest = -1;
    for (int s = 0; s < p->n; s++) {
        if (p->busy[s])
            continue;
        if (p->size[s] >= need && (best < 0 || p->size[s] < p->size[best]))
            best = s;
        if (largest < 0 || p->size[s] > p->size[largest])
            largest = s;
    }
    if (best < 0)
        best = largest;
    if (best < 0)
        best = p->n++; /* the arrays hold one slot per tensor: never overflows */
    if (p->size[best] < need)
        p->size[best] = need;
    p->busy[best] = 1;
    return best;
}

static int plan_memory(struct net *net, const int *last_use, vr_err *err)
{
    const struct model *m = net->m;
    struct plan p = { 0 };
    int rc = 0;
    p.size = calloc((size_t)m->n_tensors, sizeof *p.size);
    p.busy = calloc((size_t)m->n_tensors, 1);
    if (!p.size || !p.busy) {
        rc = vr_err_set(err, VR_ENOMEM, "net: out of memory planning activations");
        goto done;
    }
    for (int i = 0; i < net->n_steps; i++) {
        const struct step *st = &net->steps[i];
        /* Taken before the inputs are released: an output never aliases
         * an input, which every kernel requires. */
        net->slot[st->out] = plan_take(&p, item_count(&net->shape[st->out]));
        const int ins[3] = { st->in0, st->in1, st->in2 };
        for (int k = 0; k < 3; k++)
            if (ins[k] >= 0 && net->slot[ins[k]] >= 0 && last_use[ins[k]] == i)
                p.busy[net->slot[ins[k]]] = 0;
        if (last_use[st->out] < 0)
            p.busy[net->slot[st->out]] = 0; /* never read */
    }
    net->n_slots = p.n;
    net->slot_item = p.size; /* the net keeps the per-item slot sizes */
    p.size = NULL;
done:
    free(p.size);
    free(p.busy);
    return rc;
}

/* Gives a lane an arena for `cap` items laid out by the plan. */
static int lane_alloc(struct net *net, struct lane *l, int cap, vr_err *err)
{
    const struct model *m = net->m;
    size_t *off = calloc((size_t)net->n_slots + 1, sizeof *off);
    l->net = net;
    l->ptr = calloc((size_t)m->n_tensors, sizeof *l->ptr);
    if (!off || !l->ptr) {
        free(off);
        return vr_err_set(err, VR_ENOMEM, "net: out of memory");
    }
    size_t total = 0;
    for (int s = 0; s < net->n_slots; s++) {
        size_t sz = net->slot_item[s] * (size_t)cap; /* both bounded: dims <= MODEL_MAX_DIM */
        sz = (sz + NET_ALIGN_FLOATS - 1) / NET_ALIGN_FLOATS * NET_ALIGN_FLOATS;
        off[s] = total;
        if (net->slot_item[s] > NET_MAX_ARENA / sizeof(float) / (size_t)cap ||
            sz > NET_MAX_ARENA / sizeof(float) - total) {
            free(off);
            return vr_err_set(err, VR_EINVAL,
                              "net: activations for batch %d exceed %zu GiB; use a smaller batch",
                              cap, NET_MAX_ARENA >> 30);
        }
        total += sz;
    }
    l->arena = aligned_alloc(NET_ALIGN_FLOATS * sizeof(float),
                             (total ? total : NET_ALIGN_FLOATS) * sizeof(float));
    if (!l->arena) {
        free(off);
        return vr_err_set(err, VR_ENOMEM, "net: out of memory for %zu MiB of activations",
                          total * sizeof(float) >> 20);
    }
    for (int t = 0; t < m->n_tensors; t++)
        if (net->slot[t] >= 0)
            l->ptr[t] = l->arena + off[net->slot[t]];
    free(off);
    return 0;
}

static void lane_release(struct lane *l)
{
    free(l->arena);
    free(l->ptr);
    l->arena = NULL;
    l->ptr = NULL;
}

/* ---- create / free ---- */

/* Walks the ops: inputs must exist, outputs are written once, shapes match
 * the file's. Fills steps, shapes and last_use. */
static int walk_graph(struct net *net, int *written, int *last_use, vr_err *err)
{
    const struct model *m = net->m;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        struct step *st = &net->steps[i];
        st->op = o;
        st->in0 = o->in[0];
        st->out = o->out;
        if (o->n_in < 1 || o->in[0] < 0 || o->in[0] >= m->n_tensors || o->out < 0 ||
            o->out >= m->n_tensors)
            return opfail(err, VR_EFORMAT, m, i, "tensor index out of range");
        for (int k = 0; k < o->n_in && k < 3; k++) {
            int t = o->in[k];
            if (t < -1 || t >= m->n_tensors)
                return opfail(err, VR_EFORMAT, m, i, "tensor index out of range");
            /* Operands an op reads as activations must have been written. */
            int as_act = k == 0 || ((o->kind == MOP_ADD || o->kind == MOP_MUL) && k == 1) ||
                         o->kind == MOP_CONCATENATION;
            if (as_act && t >= 0 && !is_const(m, t) && !written[t])
                return vr_err_set(err, VR_EFORMAT,
                                  "net: op %d (%s) reads tensor '%s' before any op writes it",
                                  i, model_op_name(o->kind), tname(m, t));
            if (as_act && t >= 0 && !is_const(m, t))
                last_use[t] = i;
        }
        if (is_const(m, o->in[0]))
            return opfail(err, VR_ENOTSUP, m, i, "constant first input");
        if (written[o->out] || is_const(m, o->out))
            return vr_err_set(err, VR_EFORMAT, "net: op %d (%s) writes tensor '%s' twice", i,
                              model_op_name(o->kind), tname(m, o->out));
        struct ashape y;
        int rc = prep_op(net, i, &y, err);
        if (rc)
            return rc;
        struct ashape f;
        if (file_shape(&m->tensors[o->out], &f) < 0)
            return vr_err_set(err, VR_ENOTSUP,
                              "net: op %d (%s): output '%s' is not [1,h,w,c], [1,a,b] or [1,c]",
                              i, model_op_name(o->kind), tname(m, o->out));
        if (f.h != y.h || f.w != y.w || f.c != y.c)
            return vr_err_set(err, VR_EFORMAT,
                              "net: op %d (%s): output '%s' is %dx%dx%d in the file, the op "
                              "gives %dx%dx%d",
                              i, model_op_name(o->kind), tname(m, o->out), f.h, f.w, f.c, y.h,
                              y.w, y.c);
        if (y.h < 1 || y.w < 1 || y.c < 1)
            return opfail(err, VR_EFORMAT, m, i, "empty output");
        net->shape[o->out] = y;
        written[o->out] = 1;
    }
    return 0;
}

/* The model's output must be the input-sized mask (net_run), unless
 * all_outputs (net_run_outputs): then every graph output is kept whole. */
static int check_outputs(struct net *net, const int *written, int *last_use, vr_err *err)
{
    const struct model *m = net->m;
    if (net->all_outputs) {
        for (int k = 0; k < m->n_outputs; k++) {
            const int t = m->outputs[k];
            if (t < 0 || t >= m->n_tensors || !written[t] || t == m->input)
                return vr_err_set(err, VR_EFORMAT, "net: graph output %d is not computed", k);
            last_use[t] = m->n_ops;
        }
        return 0;
    }
    const struct ashape *y = &net->shape[m->output];
    if (!written[m->output] || m->output == m->input || y->h != m->in_h ||
        y->w != m->in_w || y->c < 1)
        return vr_err_set(err, VR_ENOTSUP,
                          "net: model output '%s' is %dx%dx%d; a %dx%d mask was expected",
                          tname(m, m->output), y->h, y->w, y->c, m->in_h, m->in_w);
    last_use[m->output] = m->n_ops; /* kept to the end */
    return 0;
}

static int create(const struct model *m, int max_batch, int all_outputs, struct net **out,
                  vr_err *err);

int net_create(const struct model *m, int max_batch, struct net **out, vr_err *err)
{
    return create(m, max_batch, 0, out, err);
}

int net_create_outputs(const struct model *m, int max_batch, struct net **out, vr_err *err)
{
    return create(m, max_batch, 1, out, err);
}

size_t net_output_count(const struct net *net, int k)
{
    if (!net || k < 0 || k >= net->m->n_outputs)
        return 0;
    return item_count(&net->shape[net->m->outputs[k]]);
}

static int create(const struct model *m, int max_batch, int all_outputs, struct net **out,
                  vr_err *err)
{
    struct net *net = NULL;
    int *written = NULL, *last_use = NULL;
    int rc;
    *out = NULL;
    if (!m || m->n_tensors < 1 || m->n_ops < 1)
        return vr_err_set(err, VR_EINVAL, "net: empty model");
    if (max_batch < 1 || max_batch > NET_MAX_BATCH)
        return vr_err_set(err, VR_EINVAL, "net: batch %d out of range 1..%d", max_batch,
                          NET_MAX_BATCH);
    if (m->input < 0 || m->input >= m->n_tensors || m->output < 0 ||
        m->output >= m->n_tensors || is_const(m, m->input))
        return vr_err_set(err, VR_EFORMAT, "net: model input/output tensor invalid");

    net = calloc(1, sizeof *net);
    if (!net)
        goto nomem;
    pthread_mutex_init(&net->mu, NULL);
    pthread_cond_init(&net->go, NULL);
    pthread_cond_init(&net->done, NULL);
    net->m = m;
    net->max_batch = max_batch;
    net->all_outputs = all_outputs;
    net->n_steps = m->n_ops;
    net->steps = calloc((size_t)m->n_ops, sizeof *net->steps);
    net->shape = calloc((size_t)m->n_tensors, sizeof *net->shape);
    net->slot = malloc((size_t)m->n_tensors * sizeof *net->slot);
    written = calloc((size_t)m->n_tensors, sizeof *written);
    last_use = malloc((size_t)m->n_tensors * sizeof *last_use);
    if (!net->steps || !net->shape || !net->slot || !written || !last_use)
        goto nomem;
    for (int t = 0; t < m->n_tensors; t++)
        net->slot[t] = last_use[t] = -1;

    struct ashape x;
    if (file_shape(&m->tensors[m->input], &x) < 0 || m->tensors[m->input].rank != 4 ||
        x.h != m->in_h || x.w != m->in_w || x.c != 3) {
        rc = vr_err_set(err, VR_ENOTSUP, "net: model input '%s' is not [1][%d][%d][3] RGB",
                        tname(m, m->input), m->in_h, m->in_w);
        goto fail;
    }
    net->shape[m->input] = x;
    written[m->input] = 1;

    if ((rc = walk_graph(net, written, last_use, err)) ||
        (rc = check_outputs(net, written, last_use, err)) ||
        (rc = plan_memory(net, last_use, err)))
        goto fail;
    net->lanes = calloc(1, sizeof *net->lanes);
    if (!net->lanes)
        goto nomem;
    net->n_lanes = 1;
    if ((rc = lane_alloc(net, &net->lanes[0], max_batch, err)))
        goto fail;
    free(written);
    free(last_use);
    *out = net;
    return 0;

nomem:
    rc = vr_err_set(err, VR_ENOMEM, "net: out of memory");
fail:
    free(written);
    free(last_use);
    net_free(&net);
    return rc;
}

static void pool_stop(struct net *net);

void net_free(struct net **pnet)
{
    struct net *net = pnet ? *pnet : NULL;
    if (!net)
        return;
    pool_stop(net);
    if (net->lanes)
        lane_release(&net->lanes[0]);
    free(net->lanes);
    if (net->steps)
        for (int i = 0; i < net->n_steps; i++)
            free(net->steps[i].own);
    free(net->steps);
    free(net->shape);
    free(net->slot);
    free(net->slot_item);
    pthread_cond_destroy(&net->go);
    pthread_cond_destroy(&net->done);
    pthread_mutex_destroy(&net->mu);
    free(net);
    *pnet = NULL;
}

/* ---- run ---- */

/* Rows before the axis (batch included) and each input's values a row. */
static void run_concat(struct lane *l, const struct step *st, int n)
{
    const struct net *net = l->net;
    const int ax = st->op->axis, ins[3] = { st->in0, st->in1, st->in2 };
    int inner[3] = { 0, 0, 0 };
    const struct ashape *a = &net->shape[st->in0];
    const int outer = n * (ax == 1 ? 1 : ax == 2 ? a->h : a->h * a->w);
    for (int k = 0; k < 3; k++)
        if (ins[k] >= 0) {
            const struct ashape *s = &net->shape[ins[k]];
            inner[k] = ax == 1 ? s->h * s->w * s->c : ax == 2 ? s->w * s->c : s->c;
        }
    ref_concat3(outer, l->ptr[ins[0]], inner[0], l->ptr[ins[1]], inner[1],
                ins[2] >= 0 ? l->ptr[ins[2]] : NULL, inner[2], l->ptr[st->out]);
}

static void run_step(struct lane *l, const struct step *st, int n)
{
    const struct net *net = l->net;
    const struct model_op *o = st->op;
    const float *x = l->ptr[st->in0];
    float *y = l->ptr[st->out];
    const struct ashape *xs = &net->shape[st->in0], *ys = &net->shape[st->out];
    struct conv_geom g = st->g; /* a copy: lanes run concurrently */
    g.n = n;
    switch (o->kind) {
    case MOP_CONV_2D:
        ref_conv2d_hwio(&g, x, st->w, st->b, y);
        break;
    case MOP_DEPTHWISE_CONV_2D:
        ref_dwconv2d(&g, x, st->w, st->b, y);
        break;
    case MOP_AVERAGE_POOL_2D:
        ref_avgpool(&g, x, y);
        break;
    case MOP_TRANSPOSE_CONV_BIAS:
        ref_tconv_bias(&g, x, st->w, st->b, y);
        break;
    case MOP_MEAN:
        ref_mean_hw(n, xs->h, xs->w, xs->c, x, y);
        break;
    case MOP_HARD_SWISH:
        ref_hard_swish(x, y, item_count(xs) * n);
        break;
    case MOP_RELU:
        ref_relu(x, y, item_count(xs) * n);
        break;
    case MOP_LOGISTIC:
        ref_logistic(x, y, item_count(xs) * n);
        break;
    case MOP_ADD:
    case MOP_MUL: {
        const float *b = st->in1 >= 0 ? l->ptr[st->in1] : st->bconst;
        if (o->kind == MOP_ADD)
            ref_add(n, ys->h, ys->w, ys->c, x, b, st->b_full, o->act, y);
        else
            ref_mul(n, ys->h, ys->w, ys->c, x, b, st->b_full, o->act, y);
        break;
    }
    case MOP_RESIZE_BILINEAR:
        ref_resize_bilinear(n, xs->h, xs->w, xs->c, x, ys->h, ys->w, o->align_corners,
                            o->half_pixel_centers, y);
        break;
    case MOP_MAX_POOL_2D:
        ref_maxpool(&g, x, y);
        break;
    case MOP_PAD:
        ref_pad(n, xs->h, xs->w, xs->c, x, o->pad_h0, o->pad_h1, o->pad_w0, o->pad_w1,
                o->pad_c0, o->pad_c1, y);
        break;
    case MOP_DEPTH_TO_SPACE:
        ref_depth_to_space(n, xs->h, xs->w, xs->c, o->block_size, x, y);
        break;
    case MOP_RESHAPE:
        memcpy(y, x, item_count(xs) * n * sizeof *y);
        break;
    case MOP_CONCATENATION:
        run_concat(l, st, n);
        break;
    default:
        break; /* refused by net_create */
    }
}

/* Runs items [first, first + n) of the current run in lane l. */
static void lane_run(struct lane *l, int first, int n)
{
    struct net *net = l->net;
    const struct model *m = net->m;
    const struct ashape *xs = &net->shape[m->input], *ys = &net->shape[m->output];
    const size_t px = (size_t)ys->h * ys->w;
    /* Only read: every op writes a planned slot, never its input. */
    l->ptr[m->input] = (float *)(uintptr_t)(net->run_in + (size_t)first * item_count(xs));
    for (int i = 0; i < net->n_steps; i++)
        run_step(l, &net->steps[i], n);
    if (net->run_outs) {
        for (int k = 0; k < m->n_outputs; k++) {
            const size_t per = item_count(&net->shape[m->outputs[k]]);
            memcpy(net->run_outs[k] + (size_t)first * per, l->ptr[m->outputs[k]],
                   per * n * sizeof(float));
        }
        return;
    }
    const float *y = l->ptr[m->output];
    float *out = net->run_out + (size_t)first * px;
    if (ys->c == 1) {
        memcpy(out, y, px * n * sizeof(float));
    } else {
        for (size_t p = 0; p < px * n; p++)
            out[p] = y[p * ys->c];
    }
}

static void *lane_main(void *arg)
{
    struct lane *l = arg;
    struct net *net = l->net;
    log_ctx_use(l->logctx); /* its lines are its creator's worker's */
    pthread_mutex_lock(&net->mu);
    for (;;) {
        while (!net->quit && net->gen == l->seen)
            pthread_cond_wait(&net->go, &net->mu);
        if (net->quit)
            break;
        l->seen = net->gen;
        const int first = l->first, count = l->count;
        pthread_mutex_unlock(&net->mu);
        if (count > 0)
            lane_run(l, first, count);
        pthread_mutex_lock(&net->mu);
        if (--net->pending == 0)
            pthread_cond_signal(&net->done);
    }
    pthread_mutex_unlock(&net->mu);
    return NULL;
}

/* Stops and joins lanes 1.., frees their memory; back to one lane. */
static void pool_stop(struct net *net)
{
    if (!net->lanes)
        return;
    pthread_mutex_lock(&net->mu);
    net->quit = 1;
    pthread_cond_broadcast(&net->go);
    pthread_mutex_unlock(&net->mu);
    for (int k = 1; k < net->n_lanes; k++) {
        if (net->lanes[k].started)
            pthread_join(net->lanes[k].tid, NULL);
        lane_release(&net->lanes[k]);
    }
    net->n_lanes = 1;
    net->quit = 0;
}

int net_set_threads(struct net *net, int threads, vr_err *err)
{
    if (!net)
        return vr_err_set(err, VR_EINVAL, "net_set_threads: NULL net");
    if (threads < 1 || threads > NET_MAX_THREADS)
        return vr_err_set(err, VR_EINVAL, "net: threads %d out of range 1..%d", threads,
                          NET_MAX_THREADS);
    pool_stop(net);
    if (threads == 1)
        return 0;
    struct lane *lanes = realloc(net->lanes, (size_t)threads * sizeof *lanes);
    if (!lanes)
        return vr_err_set(err, VR_ENOMEM, "net: out of memory for %d threads", threads);
    net->lanes = lanes;
    memset(lanes + 1, 0, (size_t)(threads - 1) * sizeof *lanes);
    net->lane_cap = (net->max_batch + threads - 1) / threads;
    int rc = 0;
    for (int k = 1; k < threads; k++) {
        net->n_lanes = k + 1; /* so pool_stop() sees what was set up */
        if ((rc = lane_alloc(net, &lanes[k], net->lane_cap, err)))
            break;
        lanes[k].seen = net->gen; /* no run is in flight (contract) */
        lanes[k].logctx = log_ctx_current();
        if (pthread_create(&lanes[k].tid, NULL, lane_main, &lanes[k]) != 0) {
            rc = vr_err_set(err, VR_ENOMEM, "net: cannot start thread %d of %d", k + 1,
                            threads);
            break;
        }
        lanes[k].started = 1;
    }
    if (rc)
        pool_stop(net);
    return rc;
}

static int run(struct net *net, const float *in, int n, vr_err *err);

int net_run(struct net *net, const float *in, int n, float *out, vr_err *err)
{
    if (!net || !in || !out)
        return vr_err_set(err, VR_EINVAL, "net_run: NULL argument");
    if (net->all_outputs)
        return vr_err_set(err, VR_EINVAL, "net_run: a net made by net_create_outputs");
    net->run_out = out;
    net->run_outs = NULL;
    return run(net, in, n, err);
}

int net_run_outputs(struct net *net, const float *in, int n, float *const *outs, vr_err *err)
{
    if (!net || !in || !outs)
        return vr_err_set(err, VR_EINVAL, "net_run_outputs: NULL argument");
    if (!net->all_outputs)
        return vr_err_set(err, VR_EINVAL, "net_run_outputs: a net made by net_create");
    for (int k = 0; k < net->m->n_outputs; k++)
        if (!outs[k])
            return vr_err_set(err, VR_EINVAL, "net_run_outputs: no buffer for output %d", k);
    net->run_out = NULL;
    net->run_outs = outs;
    return run(net, in, n, err);
}

static int run(struct net *net, const float *in, int n, vr_err *err)
{
    if (n < 1 || n > net->max_batch)
        return vr_err_set(err, VR_EINVAL, "net_run: batch %d out of range 1..%d", n,
                          net->max_batch);
    net->run_in = in;
    const int lanes = n < net->n_lanes ? n : net->n_lanes;
    if (lanes <= 1) {
        lane_run(&net->lanes[0], 0, n);
        return 0;
    }
    /* Item k of `lanes` shares: [k*n/lanes, (k+1)*n/lanes), at most
     * ceil(n/lanes) <= lane_cap items each. */
    pthread_mutex_lock(&net->mu);
    for (int k = 1; k < net->n_lanes; k++) {
        net->lanes[k].first = k < lanes ? (int)((int64_t)k * n / lanes) : 0;
        net->lanes[k].count =
            k < lanes ? (int)((int64_t)(k + 1) * n / lanes - (int64_t)k * n / lanes) : 0;
    }
    net->pending = net->n_lanes - 1;
    net->gen++;
    pthread_cond_broadcast(&net->go);
    pthread_mutex_unlock(&net->mu);
    lane_run(&net->lanes[0], 0, (int)((int64_t)n / lanes));
    pthread_mutex_lock(&net->mu);
    while (net->pending > 0)
        pthread_cond_wait(&net->done, &net->mu);
    pthread_mutex_unlock(&net->mu);
    return 0;
}

/*
 * net_plan.c - the GPU network's planner (net_plan.h), in plain C: steps,
 * fusion, order, precision, and the arena and weight offsets. It makes no
 * CUDA call, so the CPU build compiles it and tests/t-net-plan.c checks its
 * plans of the real models; the GPU executor (net_exec.cu) asks it for a
 * plan and runs it. Which stage kernel takes which geometry is the GPU's
 * answer, passed in (struct netplan_fit).
 */
#include "net_plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    "dead", "conv", "pointwise", "depthwise", "squeeze-excite", "activation",
    "add", "mul", "resize", "avgpool", "tconv", "ir-blocks", "decoder-stage", "pw+depthwise",
    "pad", "depth-to-space", "maxpool", "reshape", "concat"
};

const char *netplan_kind_name(int kind)
{
    return kind >= 0 && kind < (int)(sizeof kind_names / sizeof kind_names[0])
               ? kind_names[kind] : "?";
}

size_t netplan_tile_bytes(const struct netplan_tens *T)
{
    const size_t px = T->rs_h > 0 ? (size_t)T->rs_h * T->rs_w : (size_t)T->h * T->w;
    return px * T->c * (T->f16 ? 2 : 4);
}

/* opts.fused in words: 0 one kernel per op, 1 per-op fusions, 2 also the
 * stage kernels (block chains, pw+dw pairs, decoder tail). */
const char *netplan_fused_name(int fused)
{
    return fused >= 2 ? "blocks" : fused ? "fused" : "unfused";
}

static int is_const(const struct model *m, int t)
{
    return t >= 0 && t < m->n_tensors && m->tensors[t].data != NULL;
}

static int tshape(const struct model *m, int id, struct netplan_tens *t, vr_err *err)
{
    const struct model_tensor *T = &m->tensors[id];
    const int *s = T->shape;
    if (T->rank == 4 && s[0] == 1) {
        t->h = s[1]; t->w = s[2]; t->c = s[3];
    } else if (T->rank == 3 && s[0] == 1) {   /* [1,A,B] is [1,1,A,B] (net.h's engine) */
        t->h = 1; t->w = s[1]; t->c = s[2];
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

/* 1 when tensor t is the graph input or an op's operand or output. A tensor
 * none touches (a sparse constant's source, emptied when the loader made it
 * dense) needs no shape. */
static int op_reads_or_writes(const struct model *m, int t)
{
    if (t == m->input)
        return 1;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        if (o->out == t || o->in[0] == t || o->in[1] == t || o->in[2] == t)
            return 1;
    }
    return 0;
}

static int ufail(vr_err *err, const struct model *m, int i, const char *why)
{
    return vr_err_set(err, VR_ENOTSUP, "netcu: op %d (%s): %s", i,
                      model_op_name(m->ops[i].kind), why);
}

static void geom_from(struct conv_geom *g, const struct netplan_tens *x, const struct model_op *o)
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
static int plan_op(struct netplan *plan, int i, vr_err *err)
{
    const struct model *m = plan->m;
    const struct model_op *o = &m->ops[i];
    struct netplan_step *s = &plan->st[i];
    memset(s, 0, sizeof *s);
    s->pos = s->op = i;
    s->x = o->in[0];
    s->x2 = s->a_scale = s->bsum = s->e_scale = s->res = -1;
    s->wt = s->bt = -1;
    s->out = o->out;
    if (o->n_in < 1 || s->x < 0 || s->x >= m->n_tensors || is_const(m, s->x) ||
        s->out < 0 || s->out >= m->n_tensors)
        return ufail(err, m, i, "input must be an activation tensor");
    const struct netplan_tens *x = &plan->t[s->x], *y = &plan->t[s->out];
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
            s->kind = NETPLAN_DW;
            s->g.kh = w->shape[1]; s->g.kw = w->shape[2]; s->g.cout = w->shape[3];
            if (w->shape[0] != 1 || s->g.cout % s->g.cin)
                return ufail(err, m, i, "depthwise weights do not fit the input channels");
            op_conv_geom(&s->g, o->padding);
        } else {
            s->g.cout = w->shape[0]; s->g.kh = w->shape[1]; s->g.kw = w->shape[2];
            if (w->shape[3] != x->c)
                return ufail(err, m, i, "weights do not fit the input channels");
            if (o->kind == MOP_TRANSPOSE_CONV_BIAS) {
                s->kind = NETPLAN_TCONV;
                s->g.dh = s->g.dw = 1;
                s->g.act = MACT_NONE;
                s->act1 = CU_ACT_NONE;
                op_tconv_geom(&s->g, o->padding);
            } else {
                op_conv_geom(&s->g, o->padding);
                int pw = s->g.kh == 1 && s->g.kw == 1 && s->g.sh == 1 && s->g.sw == 1 &&
                         s->g.pad_top == 0 && s->g.pad_left == 0 && s->g.cout % 8 == 0;
                s->kind = pw ? NETPLAN_PW : NETPLAN_CONV;
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
        s->kind = NETPLAN_UNARY;
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
                      ? NETPLAN_SE : NETPLAN_AVGPOOL;
        if (s->g.oh != y->h || s->g.ow != y->w)
            return ufail(err, m, i, "output shape differs from the computed geometry");
        return 0;
    case MOP_MEAN:
        s->kind = NETPLAN_SE;
        break;
    case MOP_ADD:
    case MOP_MUL: {
        if (o->n_in < 2 || o->in[1] < 0 || is_const(m, o->in[1]))
            return ufail(err, m, i, "constant operands are not supported on the GPU");
        s->kind = o->kind == MOP_ADD ? NETPLAN_ADD : NETPLAN_MUL;
        s->act1 = o->act;
        s->x2 = o->in[1];
        const struct netplan_tens *a = &plan->t[s->x], *b = &plan->t[s->x2];
        int bchan = b->h == 1 && b->w == 1 && b->c == a->c;
        int achan = a->h == 1 && a->w == 1 && a->c == b->c;
        if (achan && !bchan) {    /* commutative: the broadcast one second */
            int t = s->x; s->x = s->x2; s->x2 = t;
            a = &plan->t[s->x]; b = &plan->t[s->x2];
            bchan = 1;
        }
        s->b_full = a->h == b->h && a->w == b->w && a->c == b->c;
        if (!s->b_full && !bchan)
            return ufail(err, m, i, "operands are neither the same shape nor per-channel");
        break;
    }
    case MOP_RESIZE_BILINEAR:
        s->kind = NETPLAN_RESIZE;
        s->align = o->align_corners;
        s->half = o->half_pixel_centers;
        if (y->c != x->c)
            return ufail(err, m, i, "channel count changes");
        return 0;
    default:
        if (netplan_is_move(o->kind))
            return netplan_move_op(plan, i, err);
        return ufail(err, m, i, "op not supported by the CUDA backend");
    }
    const struct netplan_tens *xo = &plan->t[s->x];
    if (s->kind == NETPLAN_SE ? y->c != xo->c : (y->h != xo->h || y->w != xo->w || y->c != xo->c))
        return ufail(err, m, i, "output shape differs from the input's");
    return 0;
}

/* ---- fusion (plan stage 2) ---- */

/* The one live step reading t, when t has exactly one use, else NULL. */
static struct netplan_step *sole_consumer(struct netplan *plan, int t)
{
    if (t < 0 || netplan_uses(plan, t) != 1)
        return NULL;
    for (int i = 0; i < plan->m->n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind == NETPLAN_DEAD)
            continue;
        int in[6], k = netplan_step_inputs(s, in);
        for (int j = 0; j < k; j++)
            if (in[j] == t)
                return s;
    }
    return NULL;
}

static struct netplan_step *producer(struct netplan *plan, int t)
{
    for (int i = 0; i < plan->m->n_ops; i++)
        if (plan->st[i].kind != NETPLAN_DEAD && plan->st[i].out == t)
            return &plan->st[i];
    return NULL;
}

/* c (consumer) is absorbed into s: s now writes c's output, at c's place. */
static void absorb(struct netplan_step *s, struct netplan_step *c)
{
    s->out = c->out;
    if (c->pos > s->pos)
        s->pos = c->pos;
    c->kind = NETPLAN_DEAD;
}

static int is_pw_conv_on_vector(const struct netplan_step *c, int t)
{
    return (c->kind == NETPLAN_PW || c->kind == NETPLAN_CONV) && c->x == t && c->g.ih == 1 &&
           c->g.iw == 1 && c->g.kh == 1 && c->g.kw == 1 && c->g.cout <= CU_SE_MAX_CH;
}

/* Fusion: squeeze-excite: the global pool absorbs the 1x1 convs on its
 * vector and their activations. */
static void fuse_squeeze_excite(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_SE || s->n_layers)
            continue;
        if (plan->t[s->x].c > CU_SE_MAX_CH)
            continue;
        while (s->n_layers < CU_SE_MAX_LAYERS) {
            struct netplan_step *c = sole_consumer(plan, s->out);
            if (!c || !is_pw_conv_on_vector(c, s->out))
                break;
            struct netplan_se_layer *L = &s->l[s->n_layers++];
            L->wt = c->wt; L->bt = c->bt; L->cin = c->g.cin; L->cout = c->g.cout;
            L->act1 = c->act1; L->act2 = CU_ACT_NONE;
            absorb(s, c);
            struct netplan_step *a = sole_consumer(plan, s->out);
            if (a && a->kind == NETPLAN_UNARY) {
                L->act2 = a->act1;
                absorb(s, a);
            }
        }
    }
}

/* Fusion: a stand-alone activation after a conv becomes the conv's epilogue. */
static void fuse_activations(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        int k = s->kind;
        if (k != NETPLAN_CONV && k != NETPLAN_PW && k != NETPLAN_DW && k != NETPLAN_TCONV)
            continue;
        struct netplan_step *c = sole_consumer(plan, s->out);
        if (!c || c->kind != NETPLAN_UNARY)
            continue;
        if (k == NETPLAN_TCONV) {
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
static void fuse_pw_scale(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_PW)
            continue;
        struct netplan_step *c = sole_consumer(plan, s->out);
        if (c && c->kind == NETPLAN_MUL && !c->b_full && c->x == s->out && c->act1 == MACT_NONE) {
            s->e_scale = c->x2;
            absorb(s, c);
        }
    }
}

/* Fusion: pointwise and depthwise epilogue, part 2: the residual add. */
static void fuse_residual(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_PW && !(s->kind == NETPLAN_DW && s->g.cout == s->g.cin))
            continue;
        struct netplan_step *c = sole_consumer(plan, s->out);
        if (c && c->kind == NETPLAN_ADD && c->b_full && c->x != c->x2) {
            s->res = c->x == s->out ? c->x2 : c->x;
            s->act3 = c->act1;
            absorb(s, c);
        }
    }
}

/* Fusion: an ADD feeding only a global pool: the pool sums both operands. */
static void fuse_pool_add(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_SE || s->x2 >= 0)
            continue;
        struct netplan_step *p = producer(plan, s->x);
        if (p && p->kind == NETPLAN_ADD && p->b_full && p->act1 == MACT_NONE && p->x != p->x2 &&
            netplan_uses(plan, s->x) == 1) {
            s->x = p->x;
            s->x2 = p->x2;
            p->kind = NETPLAN_DEAD;
        }
    }
}

/* Fusion: pointwise prologue: [a * scale[n][c]] [+ b], read while the conv
 * stages its input. */
static void fuse_pw_prologue(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_PW || s->a_scale >= 0 || s->bsum >= 0)
            continue;
        struct netplan_step *p = producer(plan, s->x);
        if (!p || netplan_uses(plan, s->x) != 1)
            continue;
        if (p->kind == NETPLAN_MUL && !p->b_full && p->act1 == MACT_NONE) {
            s->x = p->x;
            s->a_scale = p->x2;
            p->kind = NETPLAN_DEAD;
        } else if (p->kind == NETPLAN_ADD && p->b_full && p->act1 == MACT_NONE && p->x != p->x2) {
            int ins[2] = {p->x, p->x2};
            int done = 0;
            for (int k = 0; k < 2 && !done; k++) {
                struct netplan_step *q = producer(plan, ins[k]);
                if (q && q->kind == NETPLAN_MUL && !q->b_full && q->act1 == MACT_NONE &&
                    netplan_uses(plan, ins[k]) == 1) {
                    s->x = q->x;
                    s->a_scale = q->x2;
                    s->bsum = ins[1 - k];
                    q->kind = NETPLAN_DEAD;
                    done = 1;
                }
            }
            if (!done) {
                s->x = ins[0];
                s->bsum = ins[1];
            }
            p->kind = NETPLAN_DEAD;
        }
    }
}

/* Fusion: a RESIZE_BILINEAR read only by a pointwise conv (no prologue): the
 * conv samples the small map while staging its tile, so the upsampled
 * tensor, the largest the decoder writes, is never written. */
static void fuse_resize_into_pw(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_PW || s->a_scale >= 0 || s->bsum >= 0 || s->rs || s->g.cin % 8)
            continue;
        struct netplan_step *p = producer(plan, s->x);
        if (p && p->kind == NETPLAN_RESIZE && netplan_uses(plan, s->x) == 1) {
            s->x = p->x;
            s->rs = 1;
            s->align = p->align;
            s->half = p->half;
            p->kind = NETPLAN_DEAD;
        }
    }
}

/* Fusion level 2: a resize-on-load pointwise conv with no epilogue but its
 * activations runs at the small map's size, and its result is resized:
 * bilinear weights sum to one, so resize(x) . w + b = resize(x . w + b)
 * (to rounding). The decoder's three such convs (16x16x128 -> 32x32x24,
 * 32x32x24 -> 64x64x16, 64x64x16 -> 128x128x16) do a quarter of the
 * multiply-adds and interpolate cout channels instead of cin. */
static void resize_after_pw(struct netplan *plan)
{
    for (int i = 0; i < plan->m->n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind == NETPLAN_PW && s->rs == NETPLAN_RS_LOAD && s->a_scale < 0 && s->bsum < 0 &&
            s->e_scale < 0 && s->res < 0 && s->g.cout % 8 == 0)
            s->rs = NETPLAN_RS_AFTER;
    }
}

/* Fusion level 2: a squeeze-excite pool over the sum of two maps, one of
 * them written by the first conv (the stem kernel, ops_stem.cu), takes
 * that map's channel sums from the stem kernel's thread blocks (32 a tile)
 * instead of reading it again: in the selfie models the decoder's 128x128
 * pool, whose float32 skip map is 1 MB of the 1.5 it read a tile. */
static void pool_from_stem(struct netplan *plan)
{
    static float aligned[4] __attribute__((aligned(16)));
    for (int i = 0; i < plan->m->n_ops && !plan->pool_parts; i++) {
        struct netplan_step *s = &plan->st[i];
        if (s->kind != NETPLAN_SE || s->x2 < 0)
            continue;
        for (int k = 0; k < 2; k++) {
            struct netplan_step *p = producer(plan, k ? s->x2 : s->x);
            if (!p || p->kind != NETPLAN_CONV)
                continue;
            struct conv_geom g = p->g;
            g.n = 1;
            if (!plan->fit.stem_ok(&g, aligned))
                continue;
            if (!k) {   /* the stem's map as the second operand */
                const int t = s->x;
                s->x = s->x2;
                s->x2 = t;
            }
            p->pool = 1;
            s->x2_pool = 1;
            plan->pool_parts = plan->fit.stem_parts(&g);
            break;
        }
    }
}

/* Fusion level 2: a NETPLAN_RS_AFTER conv (or stage ending in one) without
 * activations whose map is read only by squeeze-excite pools and decoder
 * stages (as the prologue's sum) is never resized: it is stored small
 * (tens.rs_*) and they resize where they read (the pool: each small pixel
 * weighted by what its taps sum to, the mean being linear). In the selfie
 * models: the decoder's 32x32, 64x64 and 128x128 upsampled maps, each
 * written once and read twice (1 MB a tile at 128x128). */
static int defer_ok(const struct netplan *plan, const struct netplan_step *s)
{
    const struct netplan_tens *x = &plan->t[s->x];
    if ((s->kind != NETPLAN_PW && s->kind != NETPLAN_TAIL) || s->rs != NETPLAN_RS_AFTER ||
        s->act1 != CU_ACT_NONE || s->act2 != CU_ACT_NONE || s->out == plan->m->output ||
        netplan_is_output(plan, s->out) ||
        x->h > CU_SE_MAX_RS || x->w > CU_SE_MAX_RS)
        return 0;
    int readers = 0;
    for (int j = 0; j < plan->m->n_ops; j++) {
        const struct netplan_step *r = &plan->st[j];
        int in[6], k = r->kind == NETPLAN_DEAD ? 0 : netplan_step_inputs(r, in), reads = 0;
        for (int q = 0; q < k; q++)
            reads += in[q] == s->out;
        if (!reads)
            continue;
        readers++;
        const int pool = r->kind == NETPLAN_SE && (r->x == s->out || !r->x2_pool);
        const int tail = r->kind == NETPLAN_TAIL && r->bsum == s->out && r->x != s->out &&
                         r->a_scale != s->out;
        if (reads != 1 || !(pool || tail))
            return 0;
    }
    return readers > 0;
}

static void defer_resize(struct netplan *plan)
{
    for (int i = 0; i < plan->m->n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        if (!defer_ok(plan, s))
            continue;
        const struct netplan_tens *x = &plan->t[s->x];
        struct netplan_tens *y = &plan->t[s->out];
        for (int j = 0; j < plan->m->n_ops; j++) {   /* pools read it as their x */
            struct netplan_step *r = &plan->st[j];
            if (r->kind == NETPLAN_SE && r->x2 == s->out) {
                r->x2 = r->x;
                r->x = s->out;
            }
        }
        s->rs = NETPLAN_RS_DEFER;
        y->rs_h = x->h;
        y->rs_w = x->w;
        y->rs_align = s->align;
        y->rs_half = s->half;
    }
}

/* The chain kernel's arguments for NETPLAN_IR step s, with the weights at `w`
 * (device weights when running, NULL: the model's host data, for the
 * planner's fit check); in, out and n are left to the caller. */
void netplan_ir_fill(const struct netplan *plan, const struct netplan_step *s,
                     const unsigned char *w, struct cu_ir_args *a)
{
    const struct model *m = plan->m;
    const struct netplan_tens *x = &plan->t[s->x];
#define IR_W(t) ((t) < 0 ? (const float *)NULL \
                 : w ? (const float *)(w + plan->w_off[t]) : (const float *)m->tensors[t].data)
    memset(a, 0, sizeof *a);
    a->h = x->h; a->w = x->w; a->c = x->c;
    a->n_blocks = s->n_ir;
    for (int i = 0; i < s->n_ir; i++) {
        const struct netplan_ir_blk *b = &s->ir[i];
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
static int is_same_dw(const struct netplan_step *s)
{
    const struct conv_geom *g = &s->g;
    return s->kind == NETPLAN_DW && g->cin == g->cout && g->sh == 1 && g->sw == 1 && g->dh == 1 &&
           g->dw == 1 && g->kh == g->kw && g->pad_top == g->kh / 2 &&
           g->pad_left == g->kw / 2 && g->oh == g->ih && g->ow == g->iw;
}

/* Steps A (expand), B (depthwise), C (squeeze-excite) of the block that
 * pointwise step D (project, SE scale as prologue) ends, when they form
 * one inverted-residual block the chain kernel computes: each inner tensor
 * read only inside the block, the residual (if any) the block's input. */
static int match_ir(struct netplan *plan, struct netplan_step *D, struct netplan_step **pa,
                    struct netplan_step **pb, struct netplan_step **pc)
{
    if (D->kind != NETPLAN_PW || D->a_scale < 0 || D->bsum >= 0 || D->e_scale >= 0 || D->rs)
        return 0;
    struct netplan_step *C = producer(plan, D->a_scale), *B = producer(plan, D->x);
    if (!C || C->kind != NETPLAN_SE || C->x != D->x || C->x2 >= 0 || C->n_layers != 2 ||
        netplan_uses(plan, C->out) != 1 || C->l[0].cin != D->g.cin || C->l[1].cout != D->g.cin)
        return 0;
    if (!B || !is_same_dw(B) || B->res >= 0 || netplan_uses(plan, B->out) != 2)
        return 0;
    struct netplan_step *A = producer(plan, B->x);
    if (!A || A->kind != NETPLAN_PW || A->a_scale >= 0 || A->bsum >= 0 || A->e_scale >= 0 ||
        A->res >= 0 || A->rs || netplan_uses(plan, A->out) != 1 || A->g.cout != B->g.cin ||
        A->g.cin != D->g.cout || (D->res >= 0 && D->res != A->x))
        return 0;
    *pa = A; *pb = B; *pc = C;
    return 1;
}

/* Fusion (opts.fused == 2): each inverted-residual block the chain kernel
 * takes becomes one NETPLAN_IR step (at the expand's slot, running at the
 * project's place); then a NETPLAN_IR step whose output only the next NETPLAN_IR step
 * reads absorbs it, up to CU_IR_MAX_BLOCKS blocks. */
static void fuse_ir_blocks(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *A, *B, *C, *D = &plan->st[i];
        if (!match_ir(plan, D, &A, &B, &C))
            continue;
        struct netplan_ir_blk b = {
            D->g.cin, B->g.kh, C->l[0].cout, D->res >= 0, D->act3,
            A->wt, A->bt, A->act1, A->act2, B->wt, B->bt, B->act1, B->act2,
            C->l[0].wt, C->l[0].bt, C->l[0].act1, C->l[0].act2,
            C->l[1].wt, C->l[1].bt, C->l[1].act1, C->l[1].act2,
            D->wt, D->bt, D->act1, D->act2 };
        struct netplan_step t = *A;
        t.kind = NETPLAN_IR;
        t.out = D->out;
        t.pos = D->pos;
        t.n_ir = 1;
        t.ir[0] = b;
        struct cu_ir_args a;
        netplan_ir_fill(plan, &t, NULL, &a);
        if (!plan->fit.ir_smem(&a))
            continue;
        *A = t;
        B->kind = C->kind = D->kind = NETPLAN_DEAD;
    }
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *s = &plan->st[i];
        while (s->kind == NETPLAN_IR) {
            struct netplan_step *c = sole_consumer(plan, s->out);
            if (!c || c->kind != NETPLAN_IR || c->x != s->out ||
                s->n_ir + c->n_ir > CU_IR_MAX_BLOCKS)
                break;
            struct netplan_step t = *s;
            memcpy(&t.ir[t.n_ir], c->ir, sizeof c->ir[0] * c->n_ir);
            t.n_ir += c->n_ir;
            struct cu_ir_args a;
            netplan_ir_fill(plan, &t, NULL, &a);
            if (!plan->fit.ir_smem(&a))
                break;
            *s = t;
            absorb(s, c);
        }
    }
}

/* The head of a decoder stage whose map x the stage's last op reads: a
 * pointwise step P (its prologue kept) and a depthwise step D adding P's
 * output back, each map read by nothing else; 1 and *P, *D when found. */
static int stage_head(struct netplan *plan, int x, struct netplan_step **P, struct netplan_step **D)
{
    struct netplan_step *d = producer(plan, x);
    if (!d || !is_same_dw(d) || netplan_uses(plan, x) != 1 || d->res < 0 || d->res != d->x)
        return 0;
    struct netplan_step *p = producer(plan, d->x);
    if (!p || p->kind != NETPLAN_PW || p->rs || p->e_scale >= 0 || p->res >= 0 ||
        netplan_uses(plan, d->x) != 2)
        return 0;
    *P = p;
    *D = d;
    return 1;
}

/* Stage head P, D and its last step L (the transpose conv, or with `pw`
 * the 1x1 conv) become one NETPLAN_TAIL step in P's place, when the stage kernel
 * takes the geometry. */
static void fuse_stage_into(struct netplan *plan, struct netplan_step *P, struct netplan_step *D,
                            struct netplan_step *L, int pw)
{
    const struct netplan_tens *x = &plan->t[P->x];
    struct cu_tail_args a = {
        .n = 1, .h = x->h, .w = x->w, .cin = P->g.cin, .c = P->g.cout, .k = D->g.kh,
        .cout = L->g.cout, .wp = plan->m->tensors[P->wt].data,
        .wd = plan->m->tensors[D->wt].data, .wt = plan->m->tensors[L->wt].data,
        .bt = L->bt >= 0 ? plan->m->tensors[L->bt].data : NULL, .pw = pw,
    };
    if (!plan->fit.tail_ok(&a))
        return;
    struct netplan_step t = *P;
    t.kind = NETPLAN_TAIL;
    t.out = L->out;
    t.pos = L->pos;
    t.tail = (struct netplan_tail){ P->g.cout, D->g.kh, L->g.cout, P->wt, P->bt, P->act1,
                              P->act2, D->wt, D->bt, D->act1, D->act2, D->act3, L->wt,
                              L->bt, L->act1, pw };
    if (pw) {   /* L's conv runs on this map; its result is resized as L's was */
        t.rs = NETPLAN_RS_AFTER;
        t.align = L->align;
        t.half = L->half;
        t.act1 = t.act2 = CU_ACT_NONE;
    }
    *P = t;
    D->kind = L->kind = NETPLAN_DEAD;
}

/* Fusion (opts.fused == 2): the decoder's tail - a stage head and a 2x2
 * stride-2 transpose conv - becomes one NETPLAN_TAIL step. */
static void fuse_tail(struct netplan *plan)
{
    for (int i = 0; i < plan->m->n_ops; i++) {
        struct netplan_step *T = &plan->st[i], *P, *D;
        if (T->kind == NETPLAN_TCONV && T->g.kh == 2 && T->g.kw == 2 && T->g.sh == 2 &&
            T->g.sw == 2 && !T->g.pad_top && !T->g.pad_left && stage_head(plan, T->x, &P, &D))
            fuse_stage_into(plan, P, D, T, 0);
    }
}

/* Fusion (opts.fused == 2, after resize_after_pw): a decoder stage before
 * the last - a stage head, then the next stage's 1x1 conv on this map,
 * resized after (NETPLAN_RS_AFTER) with no activation or epilogue - becomes one
 * NETPLAN_TAIL step ending in that conv. The depthwise output is never written. */
static void fuse_stage(struct netplan *plan)
{
    for (int i = 0; i < plan->m->n_ops; i++) {
        struct netplan_step *L = &plan->st[i], *P, *D;
        if (L->kind == NETPLAN_PW && L->rs == NETPLAN_RS_AFTER && L->act1 == CU_ACT_NONE &&
            L->act2 == CU_ACT_NONE && L->a_scale < 0 && L->bsum < 0 &&
            stage_head(plan, L->x, &P, &D))
            fuse_stage_into(plan, P, D, L, 1);
    }
}

/* Fusion (opts.fused == 2): a plain pointwise step read only by a
 * depthwise step becomes part of it (NETPLAN_PWDW), the 1x1 conv's output never
 * written, when the pw+dw kernel takes the geometry. */
static void fuse_pw_dw(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *D = &plan->st[i];
        if (D->kind != NETPLAN_DW || D->res >= 0)
            continue;
        struct netplan_step *P = producer(plan, D->x);
        if (!P || P->kind != NETPLAN_PW || P->rs || P->a_scale >= 0 || P->bsum >= 0 ||
            P->e_scale >= 0 || P->res >= 0 || netplan_uses(plan, D->x) != 1)
            continue;
        struct cu_pwdw_args a = { .g = D->g, .cin = P->g.cin, .wp = plan->m->tensors[P->wt].data,
                                  .wd = plan->m->tensors[D->wt].data };
        a.g.act = D->act1;
        if (!plan->fit.pwdw_ok(&a))
            continue;
        D->pwdw = (struct netplan_pwdw){ P->wt, P->bt, P->act1, P->act2 };
        D->kind = NETPLAN_PWDW;
        D->x = P->x;
        D->op = P->op;
        P->kind = NETPLAN_DEAD;
    }
}

/* Fuses the graph's steps in place (absorbed steps become NETPLAN_DEAD), pass
 * after pass in this order: each sees what the earlier ones made. */
static void fuse(struct netplan *plan)
{
    netplan_fold_pads(plan);
    fuse_squeeze_excite(plan);
    fuse_activations(plan);
    fuse_pw_scale(plan);
    fuse_residual(plan);
    fuse_pool_add(plan);
    fuse_pw_prologue(plan);
    fuse_resize_into_pw(plan);
    if (plan->o.fused >= 2) {
        fuse_ir_blocks(plan);
        fuse_tail(plan);
        fuse_pw_dw(plan);
        resize_after_pw(plan);
        fuse_stage(plan);
        pool_from_stem(plan);
        if (!plan->o.write_resized)
            defer_resize(plan);
    }
}

/* ---- placement (plan stage 3) ---- */

struct freeblk { size_t off, size; };

/* Live steps sorted by pos (stable). */
static int order_steps(struct netplan *plan, vr_err *err)
{
    int n_ops = plan->m->n_ops;
    plan->n_order = 0;
    for (int p = 0; p < n_ops; p++)
        for (int i = 0; i < n_ops; i++)
            if (plan->st[i].kind != NETPLAN_DEAD && plan->st[i].pos == p)
                plan->order[plan->n_order++] = i;
    if (plan->n_order == 0)
        return vr_err_set(err, VR_EFORMAT, "netcu: the model has no ops left to run");
    return 0;
}

/* The caller's tensors, never in the arena: the network input, and its
 * one output unless all_outputs keeps every output there. */
static int caller_tensor(const struct netplan *plan, int t)
{
    return t == plan->m->input || (t == plan->m->output && !plan->o.all_outputs);
}

static int place(struct netplan *plan, vr_err *err)
{
    const struct model *m = plan->m;
    int rc = VR_ENOMEM;
    int *last = (int *)malloc(sizeof(int) * m->n_tensors);
    struct freeblk *fl = (struct freeblk *)malloc(sizeof *fl * (m->n_tensors + 1));
    int nfl = 0;
    size_t top = 0;
    if (!last || !fl)
        goto fail;
    for (int t = 0; t < m->n_tensors; t++)
        last[t] = -1;
    for (int k = 0; k < plan->n_order; k++) {
        int in[6], ni = netplan_step_inputs(&plan->st[plan->order[k]], in);
        for (int j = 0; j < ni; j++)
            last[in[j]] = k;
    }
    for (int j = 0; plan->o.all_outputs && j < m->n_outputs; j++)
        last[m->outputs[j]] = plan->n_order;   /* kept to the end, for the caller */
    for (int k = 0; k < plan->n_order; k++) {
        const struct netplan_step *s = &plan->st[plan->order[k]];
        int in[6], ni = netplan_step_inputs(s, in);
        for (int j = 0; j < ni; j++)
            if (!caller_tensor(plan, in[j]) && !plan->t[in[j]].placed) {
                rc = vr_err_set(err, VR_EFORMAT, "netcu: op %d reads tensor %d before "
                                "anything writes it", s->op, in[j]);
                goto fail;
            }
        int o = s->out;
        if (!caller_tensor(plan, o)) {
            struct netplan_tens *T = &plan->t[o];
            size_t need = NETPLAN_ALIGN(netplan_tile_bytes(T) * plan->arena_batch);
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
            if (caller_tensor(plan, t) || last[t] != k || !plan->t[t].placed)
                continue;
            int dup = 0;
            for (int q = 0; q < j; q++)
                dup |= in[q] == t;
            if (dup)
                continue;
            struct netplan_tens *T = &plan->t[t];
            fl[nfl].off = T->off;
            fl[nfl].size = NETPLAN_ALIGN(netplan_tile_bytes(T) * plan->arena_batch);
            nfl++;
        }
    }
    plan->rs_off = top;
    plan->rs_bytes = 0;
    for (int k = 0; k < plan->n_order; k++) {
        const struct netplan_step *s = &plan->st[plan->order[k]];
        const struct netplan_tens *x = &plan->t[s->x];
        const int cout = s->kind == NETPLAN_TAIL ? s->tail.cout : s->g.cout;
        size_t b = (size_t)x->h * x->w * cout * sizeof(float) * plan->arena_batch;
        if ((s->kind == NETPLAN_PW || s->kind == NETPLAN_TAIL) && s->rs == NETPLAN_RS_AFTER &&
            b > plan->rs_bytes)
            plan->rs_bytes = b;
    }
    plan->pool_off = top + NETPLAN_ALIGN(plan->rs_bytes);
    plan->arena_bytes = plan->pool_off + NETPLAN_ALIGN((size_t)plan->arena_batch *
                                                       plan->pool_parts * 16 * sizeof(float));
    plan->act_bytes = plan->arena_bytes * (plan->o.split ? 2 : 1);
    rc = 0;
fail:
    if (rc == VR_ENOMEM)
        vr_err_set(err, rc, "netcu: out of host memory while planning");
    free(last);
    free(fl);
    return rc;
}
/* ---- weights (plan stage 4) ---- */

static void want_w(struct netplan *plan, int t, size_t *top)
{
    if (t < 0 || plan->w_off[t] != SIZE_MAX)
        return;
    plan->w_off[t] = *top;
    *top += NETPLAN_ALIGN(plan->m->tensors[t].count * sizeof(float));
}

/* Gives each constant tensor a live step reads its offset in the weight
 * block, in the order the steps first read them. */
static void place_weights(struct netplan *plan)
{
    size_t top = 0;
    for (int t = 0; t < plan->m->n_tensors; t++)
        plan->w_off[t] = SIZE_MAX;
    for (int k = 0; k < plan->n_order; k++) {
        const struct netplan_step *s = &plan->st[plan->order[k]];
        want_w(plan, s->wt, &top);
        want_w(plan, s->bt, &top);
        for (int l = 0; l < s->n_layers; l++) {
            want_w(plan, s->l[l].wt, &top);
            want_w(plan, s->l[l].bt, &top);
        }
        if (s->kind == NETPLAN_PWDW) {
            want_w(plan, s->pwdw.wp, &top);
            want_w(plan, s->pwdw.bp, &top);
        }
        if (s->kind == NETPLAN_TAIL) {
            const int ids[] = { s->tail.wp, s->tail.bp, s->tail.wd, s->tail.bd, s->tail.wt,
                                s->tail.bt };
            for (size_t j = 0; j < sizeof ids / sizeof ids[0]; j++)
                want_w(plan, ids[j], &top);
        }
        for (int b = 0; b < s->n_ir; b++) {
            const struct netplan_ir_blk *B = &s->ir[b];
            const int ids[] = { B->we, B->be, B->wd, B->bd, B->w1, B->b1, B->w2, B->b2,
                                B->wp, B->bp };
            for (size_t j = 0; j < sizeof ids / sizeof ids[0]; j++)
                want_w(plan, ids[j], &top);
        }
    }
    plan->w_bytes = top;
}

/* ---- precision (plan stage 3, before placement) ---- */

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
 * (docs/notes/cuda-plan.md). The network's input and output are float32. */
static void set_precision(struct netplan *plan)
{
    const struct model *m = plan->m;
    int split = plan->n_order, mn = 0, mx = 0;
    /* the mask's size; with all_outputs (outputs of any shape) the input's */
    const int ref = plan->o.all_outputs ? m->input : m->output;
    if (plan->o.fp16 == 1) {
        for (int k = 0; k < plan->n_order; k++) {
            const struct netplan_tens *y = &plan->t[plan->st[plan->order[k]].out];
            int a = y->h * y->w;
            if (a > 1 && (mn == 0 || a < mn))
                mn = a;
            /* internal maps: smaller than the network's output */
            if (a < plan->t[ref].h * plan->t[ref].w && a > mx)
                mx = a;
        }
        for (int k = 0; k < plan->n_order; k++) {
            const struct netplan_tens *y = &plan->t[plan->st[plan->order[k]].out];
            if (y->h * y->w == mn)
                split = k;
        }
    }
    for (int k = 0; k < plan->n_order; k++) {
        int o = plan->st[plan->order[k]].out;
        const struct netplan_tens *y = &plan->t[o];
        plan->t[o].f16 = plan->o.fp16 == 2 ||
                        (plan->o.fp16 == 1 && k > split && y->h * y->w == mx);
    }
    plan->t[m->input].f16 = 0;
    plan->t[m->output].f16 = 0;
}

/* VR_NETCU_DUMP=1 prints the plan: one line per kernel. */
void netplan_dump(const struct netplan *plan)
{
    const char *env = getenv("VR_NETCU_DUMP");
    if (!env || !*env || *env == '0')
        return;
    fprintf(stderr, "netcu plan (%s, fp16=%d): %d ops -> %d kernels\n",
            netplan_fused_name(plan->o.fused), plan->o.fp16, plan->m->n_ops, plan->n_order);
    for (int k = 0; k < plan->n_order; k++) {
        const struct netplan_step *s = &plan->st[plan->order[k]];
        const struct netplan_tens *y = &plan->t[s->out];
        fprintf(stderr, "  %3d op %3d..%3d %-14s x=%d%s x2=%d as=%d b=%d es=%d res=%d -> %d "
                "[%dx%dx%d]%s act %d/%d/%d layers %d blocks %d\n", k, s->op, s->pos,
                netplan_kind_name(s->kind), s->x, s->rs ? "(resized)" : "", s->x2, s->a_scale,
                s->bsum, s->e_scale, s->res,
                s->out, y->h, y->w, y->c, y->f16 ? "h" : "f", s->act1, s->act2, s->act3,
                s->n_layers, s->n_ir);
    }
}

/* ---- public API ---- */


/* ---- public API ---- */

int netplan_create(const struct model *m, const struct netplan_opts *o,
                   const struct netplan_fit *fit, struct netplan **out, vr_err *err)
{
    int rc;
    *out = NULL;
    if (!m || !o || o->max_batch < 1 || o->max_batch > 4096 || m->n_ops < 1)
        return vr_err_set(err, VR_EINVAL, "netcu: max_batch must be 1..4096 (got %d)",
                          o ? o->max_batch : 0);
    if (o->fused < 0 || o->fused > 2)
        return vr_err_set(err, VR_EINVAL, "netcu: fused must be 0, 1 or 2 (got %d)", o->fused);
    if (o->fused == 2 && (!fit || !fit->stem_ok || !fit->stem_parts || !fit->ir_smem ||
                          !fit->tail_ok || !fit->pwdw_ok))
        return vr_err_set(err, VR_EINVAL, "netcu: fused = 2 needs the stage kernels' fit checks");
    if (m->in_c != 3 || m->input < 0 || m->output < 0 || m->input == m->output)
        return vr_err_set(err, VR_ENOTSUP, "netcu: the model must take RGB and have one output");
    if (o->all_outputs && o->split)
        return vr_err_set(err, VR_EINVAL, "netcu: a plan of all outputs runs unsplit");
    for (int k = 0; o->all_outputs && k < m->n_outputs; k++)
        if (m->outputs[k] < 0 || m->outputs[k] >= m->n_tensors || m->outputs[k] == m->input ||
            m->tensors[m->outputs[k]].data)
            return vr_err_set(err, VR_EFORMAT, "netcu: graph output %d is no computed tensor", k);
    struct netplan *plan = (struct netplan *)calloc(1, sizeof *plan);
    if (!plan)
        return vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
    plan->m = m;
    plan->o = *o;
    if (fit)
        plan->fit = *fit;
    plan->t = (struct netplan_tens *)calloc(m->n_tensors, sizeof *plan->t);
    plan->st = (struct netplan_step *)calloc(m->n_ops, sizeof *plan->st);
    plan->order = (int *)calloc(m->n_ops, sizeof *plan->order);
    plan->w_off = (size_t *)calloc(m->n_tensors, sizeof *plan->w_off);
    if (!plan->t || !plan->st || !plan->order || !plan->w_off) {
        rc = vr_err_set(err, VR_ENOMEM, "netcu: out of memory");
        goto fail;
    }
    for (int t = 0; t < m->n_tensors; t++)
        if (!m->tensors[t].data && op_reads_or_writes(m, t) &&
            (rc = tshape(m, t, &plan->t[t], err)) < 0)
            goto fail;
    if ((!o->all_outputs && plan->t[m->output].c != 1) || plan->t[m->input].c != 3) {
        rc = vr_err_set(err, VR_ENOTSUP, "netcu: output must have 1 channel, input 3");
        goto fail;
    }
    for (int i = 0; i < m->n_ops; i++)
        if ((rc = plan_op(plan, i, err)) < 0)
            goto fail;
    if (o->fused)
        fuse(plan);
    if ((rc = order_steps(plan, err)) < 0)
        goto fail;
    set_precision(plan);
    netplan_move_f32(plan);
    plan->arena_batch = o->split ? (o->max_batch + 1) / 2 : o->max_batch;
    if ((rc = place(plan, err)) < 0)
        goto fail;
    place_weights(plan);
    *out = plan;
    return 0;
fail:
    netplan_free(&plan);
    return rc;
}

void netplan_free(struct netplan **p)
{
    if (!p || !*p)
        return;
    free((*p)->w_off);
    free((*p)->order);
    free((*p)->st);
    free((*p)->t);
    free(*p);
    *p = NULL;
}

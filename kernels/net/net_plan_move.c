/*
 * net_plan_move.c - the GPU plan's steps for the ops the pose tier's
 * models add (PAD, DEPTH_TO_SPACE, MAX_POOL_2D, RESHAPE, CONCATENATION):
 * one step an op, run by ops_move.cu's float32 kernels (and a copy for
 * RESHAPE, the same values in the same order), so every tensor such a step
 * reads or writes is stored float32 whatever opts.fp16 says. The one
 * fusion: a spatial PAD read only by convolutions becomes their own
 * leading padding (netplan_fold_pads).
 * Part of the planner (net_plan.h); plain C, no CUDA call.
 */
#include "net_plan.h"

#include <string.h>

int netplan_is_move(int model_kind)
{
    return model_kind == MOP_PAD || model_kind == MOP_DEPTH_TO_SPACE ||
           model_kind == MOP_MAX_POOL_2D || model_kind == MOP_RESHAPE ||
           model_kind == MOP_CONCATENATION;
}

static int mfail(vr_err *err, const struct model *m, int i, const char *why)
{
    return vr_err_set(err, VR_ENOTSUP, "netcu: op %d (%s): %s", i,
                      model_op_name(m->ops[i].kind), why);
}

/* The concatenated shape of the step's inputs along its axis, or -1 when
 * they differ off it. */
static int concat_shape(const struct netplan *plan, const struct netplan_step *s,
                        struct netplan_tens *y)
{
    const int ins[3] = { s->x, s->x2, s->mv.x3 };
    *y = plan->t[s->x];
    for (int k = 1; k < 3; k++) {
        if (ins[k] < 0)
            continue;
        const struct netplan_tens *b = &plan->t[ins[k]];
        if ((s->mv.axis != 1 && b->h != y->h) || (s->mv.axis != 2 && b->w != y->w) ||
            (s->mv.axis != 3 && b->c != y->c))
            return -1;
        if (s->mv.axis == 1)
            y->h += b->h;
        else if (s->mv.axis == 2)
            y->w += b->w;
        else
            y->c += b->c;
    }
    return 0;
}

/* ref_concat3's geometry, as net.h's engine runs it: rows before the axis
 * and each input's values a row. */
static void concat_rows(const struct netplan *plan, struct netplan_step *s)
{
    const int ax = s->mv.axis, ins[3] = { s->x, s->x2, s->mv.x3 };
    const struct netplan_tens *a = &plan->t[s->x];
    s->mv.outer = ax == 1 ? 1 : ax == 2 ? a->h : a->h * a->w;
    for (int k = 0; k < 3; k++) {
        const struct netplan_tens *t = ins[k] >= 0 ? &plan->t[ins[k]] : NULL;
        s->mv.inner[k] = !t ? 0 : ax == 1 ? t->h * t->w * t->c : ax == 2 ? t->w * t->c : t->c;
    }
}

int netplan_move_op(struct netplan *plan, int i, vr_err *err)
{
    const struct model *m = plan->m;
    const struct model_op *o = &m->ops[i];
    struct netplan_step *s = &plan->st[i];
    const struct netplan_tens *x = &plan->t[s->x], *y = &plan->t[s->out];
    struct netplan_tens want = *x;
    s->mv.x3 = -1;
    switch (o->kind) {
    case MOP_PAD:
        s->kind = NETPLAN_PAD;
        s->mv.pad[0] = o->pad_h0; s->mv.pad[1] = o->pad_h1;
        s->mv.pad[2] = o->pad_w0; s->mv.pad[3] = o->pad_w1;
        s->mv.pad[4] = o->pad_c0; s->mv.pad[5] = o->pad_c1;
        for (int k = 0; k < 6; k++)
            if (s->mv.pad[k] < 0 || s->mv.pad[k] > MODEL_MAX_DIM)
                return mfail(err, m, i, "padding out of range");
        want.h += s->mv.pad[0] + s->mv.pad[1];
        want.w += s->mv.pad[2] + s->mv.pad[3];
        want.c += s->mv.pad[4] + s->mv.pad[5];
        break;
    case MOP_DEPTH_TO_SPACE:
        s->kind = NETPLAN_D2S;
        s->mv.bs = o->block_size;
        if (s->mv.bs < 1 || s->mv.bs > 64 || x->c % (s->mv.bs * s->mv.bs))
            return mfail(err, m, i, "block size does not fit the channels");
        want.h *= s->mv.bs;
        want.w *= s->mv.bs;
        want.c /= s->mv.bs * s->mv.bs;
        break;
    case MOP_MAX_POOL_2D:
        s->kind = NETPLAN_MAXPOOL;
        memset(&s->g, 0, sizeof s->g);
        s->g.n = 1;
        s->g.ih = x->h; s->g.iw = x->w; s->g.cin = s->g.cout = x->c;
        s->g.sh = o->stride_h > 0 ? o->stride_h : 1;
        s->g.sw = o->stride_w > 0 ? o->stride_w : 1;
        s->g.dh = s->g.dw = 1;
        s->g.kh = o->filter_h; s->g.kw = o->filter_w;
        s->g.act = o->act;
        if (s->g.kh < 1 || s->g.kw < 1 || s->g.kh > MODEL_MAX_DIM || s->g.kw > MODEL_MAX_DIM)
            return mfail(err, m, i, "bad filter size");
        op_conv_geom(&s->g, o->padding);
        want.h = s->g.oh;
        want.w = s->g.ow;
        break;
    case MOP_RESHAPE:
        s->kind = NETPLAN_RESHAPE;
        if ((size_t)y->h * y->w * y->c != (size_t)x->h * x->w * x->c)
            return mfail(err, m, i, "reshape changes the value count");
        return 0;
    case MOP_CONCATENATION:
        s->kind = NETPLAN_CONCAT;
        s->mv.axis = o->axis;
        s->x2 = o->n_in >= 2 ? o->in[1] : -1;
        s->mv.x3 = o->n_in == 3 ? o->in[2] : -1;
        if (o->n_in < 2 || o->n_in > 3 || o->axis < 1 || o->axis > 3)
            return mfail(err, m, i, "2 or 3 inputs along H, W or C expected");
        for (int k = 1; k < o->n_in; k++)
            if (o->in[k] < 0 || o->in[k] >= m->n_tensors || m->tensors[o->in[k]].data)
                return mfail(err, m, i, "inputs must be activation tensors");
        if (concat_shape(plan, s, &want) < 0)
            return mfail(err, m, i, "inputs differ off the axis");
        concat_rows(plan, s);
        break;
    default:
        return mfail(err, m, i, "op not supported by the CUDA backend");
    }
    if (want.h != y->h || want.w != y->w || want.c != y->c)
        return mfail(err, m, i, "output shape differs from the computed geometry");
    return 0;
}

/* 1 when step s reads tensor t as its convolution input x, and nothing
 * else of it, with room for `top` / `left` more leading rows / columns of
 * padding (fewer than its kernel's side, as every conv kernel takes). */
static int conv_reads_only_x(const struct netplan_step *s, int t, int top, int left)
{
    if (s->kind != NETPLAN_DW && s->kind != NETPLAN_CONV)
        return 0;
    int in[6], k = netplan_step_inputs(s, in), n = 0;
    for (int j = 0; j < k; j++)
        n += in[j] == t;
    return s->x == t && n == 1 && s->g.pad_top + top < s->g.kh * s->g.dh &&
           s->g.pad_left + left < s->g.kw * s->g.dw;
}

void netplan_fold_pads(struct netplan *plan)
{
    const int n_ops = plan->m->n_ops;
    for (int i = 0; i < n_ops; i++) {
        struct netplan_step *P = &plan->st[i];
        if (P->kind != NETPLAN_PAD || P->mv.pad[4] || P->mv.pad[5])
            continue;
        /* every read of the padded map (a graph output counts as one) is a
         * convolution's input */
        const int uses = netplan_uses(plan, P->out);
        int convs = 0;
        for (int j = 0; j < n_ops; j++)
            convs += plan->st[j].kind != NETPLAN_DEAD &&
                     conv_reads_only_x(&plan->st[j], P->out, P->mv.pad[0], P->mv.pad[2]);
        if (uses == 0 || convs != uses)
            continue;
        const struct netplan_tens *x = &plan->t[P->x];
        for (int j = 0; j < n_ops; j++) {
            struct netplan_step *s = &plan->st[j];
            if (s->kind == NETPLAN_DEAD || s->x != P->out)
                continue;
            s->x = P->x;
            s->g.ih = x->h;
            s->g.iw = x->w;
            s->g.pad_top += P->mv.pad[0];
            s->g.pad_left += P->mv.pad[2];
        }
        P->kind = NETPLAN_DEAD;
    }
}

void netplan_move_f32(struct netplan *plan)
{
    for (int k = 0; k < plan->n_order; k++) {
        const struct netplan_step *s = &plan->st[plan->order[k]];
        if (s->kind < NETPLAN_PAD)
            continue;
        const int t[4] = { s->x, s->x2, s->mv.x3, s->out };   /* all a move step touches */
        for (int j = 0; j < 4; j++)
            if (t[j] >= 0)
                plan->t[t[j]].f16 = 0;
    }
    for (int k = 0; plan->o.all_outputs && k < plan->m->n_outputs; k++)
        plan->t[plan->m->outputs[k]].f16 = 0;
}

/*
 * t-net-plan.c - the GPU network's planner (kernels/net/net_plan.c), run
 * without a GPU on the two shipped models at batch sizes 1, 8, 31, 32
 * (the first split into two arenas) and 64, every precision (fp16 0, 1,
 * 2) and fusion level (0, 1, and 2 with stage kernels that take every
 * geometry or none: which ones a GPU takes is its own answer, and every
 * answer must give a sound plan). Each plan is checked against what the
 * executor (net_exec.cu) relies on:
 *   - the order holds every live step once, by position; unfused, one
 *     step an op;
 *   - every tensor is written by one step, every step's inputs are the
 *     network input or written by an earlier step, the output is written;
 *   - no two tensors live at once share arena bytes, all lie below the
 *     RS_AFTER scratch, which lies below the stem's pool sums, all inside
 *     the arena; two arenas when split, each for half the batch; the
 *     arena reuses memory (smaller than every tensor side by side);
 *   - every weight a step reads has its own aligned place in the block;
 *   - the dtypes follow opts.fp16; fusion removes steps, and the stage
 *     kernels appear only when the fit takes them.
 * And with the stem kernel's own fit (its twin's, ops_stem_ref.c), the
 * decoder's pool takes the first conv's per-block sums.
 */
#include "model.h"
#include "net_plan.h"
#include "ops_fused.h"
#include "util-model-ops.h"
#include "util-netplan-fit.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fits: every stage kernel takes every geometry, or none ---- */

static int yes_stem(const struct conv_geom *g, const void *out)
{
    (void)g;
    (void)out;
    return 1;
}

/* One thread block of sums a row of output, as good as any tiling. */
static int rows_stem_parts(const struct conv_geom *g)
{
    return g->oh;
}

static size_t yes_ir(const struct cu_ir_args *a)
{
    (void)a;
    return 1;
}

static int yes_tail(const struct cu_tail_args *a)
{
    (void)a;
    return 1;
}

static int yes_pwdw(const struct cu_pwdw_args *a)
{
    (void)a;
    return 1;
}

static const struct netplan_fit fit_all = { yes_stem, rows_stem_parts, yes_ir, yes_tail,
                                            yes_pwdw };
static const struct netplan_fit fit_none = { no_stem, rows_stem_parts, no_ir, no_tail, no_pwdw };

/* ---- the invariants ---- */

/* The constant tensors step s reads (weights and biases), in ids[]. */
static int step_consts(const struct netplan_step *s, int ids[64])
{
    int n = 0;
    ids[n++] = s->wt;
    ids[n++] = s->bt;
    for (int l = 0; l < s->n_layers; l++) {
        ids[n++] = s->l[l].wt;
        ids[n++] = s->l[l].bt;
    }
    if (s->kind == NETPLAN_PWDW) {
        ids[n++] = s->pwdw.wp;
        ids[n++] = s->pwdw.bp;
    }
    if (s->kind == NETPLAN_TAIL) {
        const int t[] = { s->tail.wp, s->tail.bp, s->tail.wd, s->tail.bd, s->tail.wt,
                          s->tail.bt };
        for (int j = 0; j < 6; j++)
            ids[n++] = t[j];
    }
    for (int b = 0; b < s->n_ir; b++) {
        const struct netplan_ir_blk *B = &s->ir[b];
        const int t[] = { B->we, B->be, B->wd, B->bd, B->w1, B->b1, B->w2, B->b2, B->wp, B->bp };
        for (int j = 0; j < 10; j++)
            ids[n++] = t[j];
    }
    return n;
}

static size_t arena_need(const struct netplan *p, int t)
{
    return NETPLAN_ALIGN(netplan_tile_bytes(&p->t[t]) * p->arena_batch);
}

static void check_order(const struct model *m, const struct netplan *p, const char *what)
{
    cr_assert(p->n_order >= 1 && p->n_order <= m->n_ops, "%s: %d steps", what, p->n_order);
    int live = 0;
    for (int i = 0; i < m->n_ops; i++)
        live += p->st[i].kind != NETPLAN_DEAD;
    cr_assert_eq(live, p->n_order, "%s: %d live steps, %d in the order", what, live,
                 p->n_order);
    for (int k = 0; k < p->n_order; k++) {
        const int i = p->order[k];
        cr_assert(i >= 0 && i < m->n_ops && p->st[i].kind != NETPLAN_DEAD,
                  "%s: order[%d] = %d is no live step", what, k, i);
        for (int q = 0; q < k; q++)
            cr_assert_neq(p->order[q], i, "%s: step %d ordered twice", what, i);
        if (k)
            cr_assert_leq(p->st[p->order[k - 1]].pos, p->st[i].pos,
                          "%s: step %d runs before an earlier position", what, k);
    }
}

/* Every input written before it is read, every tensor written once; fills
 * def[t] and last[t] (order indices of the write and the last read). */
static void check_dataflow(const struct model *m, const struct netplan *p, int *def, int *last,
                           const char *what)
{
    for (int t = 0; t < m->n_tensors; t++)
        def[t] = last[t] = -1;
    for (int k = 0; k < p->n_order; k++) {
        const struct netplan_step *s = &p->st[p->order[k]];
        int in[6], ni = netplan_step_inputs(s, in);
        cr_assert(ni >= 1 && ni <= 6, "%s: step %d reads %d tensors", what, k, ni);
        for (int j = 0; j < ni; j++) {
            const int t = in[j];
            cr_assert(t >= 0 && t < m->n_tensors, "%s: step %d reads tensor %d", what, k, t);
            cr_assert(m->tensors[t].data == NULL, "%s: step %d (op %d) reads constant %d as "
                      "an activation", what, k, s->op, t);
            cr_assert(t == m->input || (def[t] >= 0 && def[t] < k),
                      "%s: step %d (op %d, %s) reads tensor %d before any step writes it",
                      what, k, s->op, netplan_kind_name(s->kind), t);
            last[t] = k;
        }
        cr_assert(s->out >= 0 && s->out < m->n_tensors && s->out != m->input,
                  "%s: step %d writes tensor %d", what, k, s->out);
        cr_assert_eq(def[s->out], -1, "%s: tensor %d written twice (steps %d and %d)", what,
                     s->out, def[s->out], k);
        def[s->out] = k;
    }
    cr_assert(def[m->output] >= 0, "%s: nothing writes the output", what);
    for (int j = 0; p->o.all_outputs && j < m->n_outputs; j++) {
        cr_assert(def[m->outputs[j]] >= 0, "%s: nothing writes output %d", what, j);
        last[m->outputs[j]] = p->n_order;   /* the caller copies it after the run */
    }
}

static void check_arena(const struct model *m, const struct netplan *p, const int *def,
                        const int *last, const char *what)
{
    const int batch = p->o.max_batch;
    cr_assert_eq(p->arena_batch, p->o.split ? (batch + 1) / 2 : batch, "%s", what);
    cr_assert_eq(p->act_bytes, p->arena_bytes * (p->o.split ? 2 : 1), "%s", what);
    size_t side_by_side = 0;
    for (int a = 0; a < m->n_tensors; a++) {
        if (def[a] < 0 || (a == m->output && !p->o.all_outputs))
            continue;
        const struct netplan_tens *A = &p->t[a];
        const size_t na = arena_need(p, a);
        cr_assert(A->placed && A->off % 256 == 0 && A->off + na <= p->rs_off,
                  "%s: tensor %d at %zu + %zu, scratch at %zu", what, a, A->off, na, p->rs_off);
        side_by_side += na;
        const int end_a = last[a] < 0 ? def[a] : last[a];
        for (int b = a + 1; b < m->n_tensors; b++) {
            if (def[b] < 0 || (b == m->output && !p->o.all_outputs))
                continue;
            const int end_b = last[b] < 0 ? def[b] : last[b];
            if (end_a < def[b] || end_b < def[a])
                continue;   /* never live at once */
            const struct netplan_tens *B = &p->t[b];
            cr_assert(A->off + na <= B->off || B->off + arena_need(p, b) <= A->off,
                      "%s: tensors %d (steps %d..%d, %zu + %zu) and %d (steps %d..%d, %zu + "
                      "%zu) share arena bytes", what, a, def[a], end_a, A->off, na, b, def[b],
                      end_b, B->off, arena_need(p, b));
        }
    }
    cr_assert_lt(p->rs_off, side_by_side, "%s: no byte reused (%zu of %zu)", what, p->rs_off,
                 side_by_side);
    for (int k = 0; k < p->n_order; k++) {
        const struct netplan_step *s = &p->st[p->order[k]];
        if (s->rs != NETPLAN_RS_AFTER)
            continue;
        const int cout = s->kind == NETPLAN_TAIL ? s->tail.cout : s->g.cout;
        const size_t need = (size_t)p->t[s->x].h * p->t[s->x].w * cout * 4 * p->arena_batch;
        cr_assert_geq(p->rs_bytes, need, "%s: step %d's scratch does not fit", what, k);
    }
    cr_assert(p->rs_off + p->rs_bytes <= p->pool_off && p->pool_off % 256 == 0, "%s", what);
    cr_assert_leq(p->pool_off + (size_t)p->arena_batch * p->pool_parts * 16 * sizeof(float),
                  p->arena_bytes, "%s: the pool sums overrun the arena", what);
}

static void check_weights(const struct model *m, const struct netplan *p, const char *what)
{
    char *read = calloc(m->n_tensors, 1);
    cr_assert(read);
    for (int k = 0; k < p->n_order; k++) {
        int ids[64], n = step_consts(&p->st[p->order[k]], ids);
        for (int j = 0; j < n; j++) {
            if (ids[j] < 0)
                continue;
            cr_assert(m->tensors[ids[j]].data, "%s: step %d's weight %d is no constant", what,
                      k, ids[j]);
            cr_assert_neq(p->w_off[ids[j]], SIZE_MAX, "%s: weight %d has no place", what,
                          ids[j]);
            read[ids[j]] = 1;
        }
    }
    for (int a = 0; a < m->n_tensors; a++) {
        if (p->w_off[a] == SIZE_MAX)
            continue;
        cr_assert(read[a], "%s: tensor %d placed but no step reads it", what, a);
        const size_t ea = p->w_off[a] + m->tensors[a].count * sizeof(float);
        cr_assert(p->w_off[a] % 256 == 0 && ea <= p->w_bytes, "%s: weight %d at %zu", what, a,
                  p->w_off[a]);
        for (int b = a + 1; b < m->n_tensors; b++)
            if (p->w_off[b] != SIZE_MAX)
                cr_assert(ea <= p->w_off[b] ||
                              p->w_off[b] + m->tensors[b].count * sizeof(float) <= p->w_off[a],
                          "%s: weights %d and %d overlap", what, a, b);
    }
    free(read);
}

static void check_dtypes(const struct model *m, const struct netplan *p, const char *what)
{
    cr_assert(!p->t[m->input].f16 && !p->t[m->output].f16, "%s: float16 network I/O", what);
    int halves = 0;
    for (int k = 0; k < p->n_order; k++) {
        const int o = p->st[p->order[k]].out;
        halves += p->t[o].f16;
        if (p->o.fp16 == 2 && o != m->output && !p->o.all_outputs)
            cr_assert(p->t[o].f16, "%s: tensor %d float32 at fp16 = 2", what, o);
    }
    if (p->o.all_outputs) {   /* the pose models: float32 where the move kernels are */
        for (int k = 0; k < p->n_order; k++) {
            const struct netplan_step *s = &p->st[p->order[k]];
            int in[6], ni = netplan_step_inputs(s, in);
            for (int j = 0; s->kind >= NETPLAN_PAD && j <= ni; j++)
                cr_assert(!p->t[j < ni ? in[j] : s->out].f16, "%s: step %d (%s) has a "
                          "float16 operand", what, k, netplan_kind_name(s->kind));
        }
        for (int j = 0; j < m->n_outputs; j++)
            cr_assert(!p->t[m->outputs[j]].f16, "%s: output %d float16", what, j);
        cr_assert(p->o.fp16 || halves == 0, "%s: %d float16 tensors", what, halves);
        return;
    }
    cr_assert(p->o.fp16 ? halves > 0 : halves == 0, "%s: %d float16 tensors", what, halves);
}

/* Plans and checks; returns the plan (the caller frees it). */
static struct netplan *plan_checked(const struct model *m, const struct netplan_opts *o,
                                    const struct netplan_fit *fit, const char *what)
{
    struct netplan *p = NULL;
    vr_err err = { 0 };
    int rc = netplan_create(m, o, fit, &p, &err);
    cr_assert_eq(rc, 0, "%s: %s", what, err.msg);
    int *def = malloc(sizeof(int) * m->n_tensors), *last = malloc(sizeof(int) * m->n_tensors);
    cr_assert(def && last);
    check_order(m, p, what);
    check_dataflow(m, p, def, last, what);
    check_arena(m, p, def, last, what);
    check_weights(m, p, what);
    check_dtypes(m, p, what);
    free(def);
    free(last);
    return p;
}

static int count_kind(const struct netplan *p, int kind)
{
    int n = 0;
    for (int k = 0; k < p->n_order; k++)
        n += p->st[p->order[k]].kind == kind;
    return n;
}

static void check_model(const char *rel)
{
    struct model *m = umo_load(rel, 136);
    const int batches[] = { 1, 8, 31, 32, 64 };
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        for (int fp16 = 0; fp16 <= 2; fp16++) {
            const int n = batches[b];
            struct netplan_opts o = { .max_batch = n, .fp16 = fp16, .split = n >= 32 };
            char what[160];
            int steps[4];
            for (int v = 0; v < 4; v++) {
                o.fused = v < 2 ? v : 2;
                const struct netplan_fit *fit = v == 3 ? &fit_all : v == 2 ? &fit_none : NULL;
                snprintf(what, sizeof what, "%s batch %d fp16 %d fused %d%s", rel, n, fp16,
                         o.fused, v == 3 ? " (all fit)" : v == 2 ? " (none fits)" : "");
                struct netplan *p = plan_checked(m, &o, fit, what);
                steps[v] = p->n_order;
                if (v == 0)
                    cr_assert_eq(p->n_order, m->n_ops, "%s: unfused is one step an op", what);
                const int stage = count_kind(p, NETPLAN_IR) + count_kind(p, NETPLAN_TAIL) +
                                  count_kind(p, NETPLAN_PWDW);
                if (v == 3)
                    cr_assert(count_kind(p, NETPLAN_IR) > 0 && count_kind(p, NETPLAN_TAIL) > 0 &&
                                  p->pool_parts > 0,
                              "%s: the stage kernels were not used", what);
                else
                    cr_assert(stage == 0 && p->pool_parts == 0, "%s: a stage kernel no fit "
                              "took", what);
                netplan_free(&p);
                cr_assert_null(p);
            }
            cr_assert(steps[1] < steps[0] && steps[2] <= steps[1] && steps[3] < steps[2],
                      "%s batch %d: steps %d / %d / %d / %d do not fall with fusion", rel, n,
                      steps[0], steps[1], steps[2], steps[3]);
        }
    }
    model_free(&m);
}

Test(net_plan, portrait_model)
{
    check_model("models/selfie_segmentation.tflite");
}

Test(net_plan, landscape_model)
{
    check_model("models/selfie_segmentation_landscape.tflite");
}

/* The stem kernel's own answer (its twin's: ref_stem_ok, ref_stem_parts)
 * and no other stage kernel: the decoder's last pool takes the first
 * conv's channel sums, one set per 16x32 block of its output (32 a tile at
 * 256x256, 20 at 144x256), and the plan stays sound. */
Test(net_plan, pool_from_the_stem)
{
    const struct netplan_fit fit_stem = { ref_stem_ok, ref_stem_parts, no_ir, no_tail, no_pwdw };
    const char *models[] = { "models/selfie_segmentation.tflite",
                             "models/selfie_segmentation_landscape.tflite" };
    const int want_parts[] = { 32, 20 };
    for (int i = 0; i < 2; i++) {
        struct model *m = umo_load(models[i], 136);
        const struct netplan_opts o = { .max_batch = 8, .fp16 = 1, .fused = 2 };
        struct netplan *p = plan_checked(m, &o, &fit_stem, models[i]);
        int pools = 0, readers = 0;
        for (int k = 0; k < p->n_order; k++) {
            const struct netplan_step *s = &p->st[p->order[k]];
            if (s->pool) {
                pools++;
                cr_assert(s->kind == NETPLAN_CONV && s->op == 0 && k == 0,
                          "%s: step %d (op %d) writes the pool sums", models[i], k, s->op);
                cr_assert_eq(p->pool_parts, ref_stem_parts(&s->g), "%s", models[i]);
            }
            readers += s->x2_pool;
        }
        cr_assert(pools == 1 && readers == 1, "%s: %d stem pools, %d readers", models[i], pools,
                  readers);
        cr_assert_eq(p->pool_parts, want_parts[i], "%s", models[i]);
        netplan_free(&p);
        model_free(&m);
    }
}

/* Options the planner cannot take are errors that say which. */
Test(net_plan, bad_options)
{
    struct model *m = umo_load("models/selfie_segmentation.tflite", 136);
    struct netplan *p = NULL;
    vr_err err = { 0 };
    struct netplan_opts o = { .max_batch = 0, .fused = 1 };
    cr_assert_eq(netplan_create(m, &o, NULL, &p, &err), VR_EINVAL);
    cr_assert(strstr(err.msg, "max_batch"), "%s", err.msg);
    o.max_batch = 4;
    o.fused = 3;
    cr_assert_eq(netplan_create(m, &o, NULL, &p, &err), VR_EINVAL);
    cr_assert(strstr(err.msg, "fused"), "%s", err.msg);
    o.fused = 2;   /* the stage kernels' answers are needed */
    cr_assert_eq(netplan_create(m, &o, NULL, &p, &err), VR_EINVAL);
    cr_assert_null(p);
    netplan_free(&p);   /* NULL is fine */
    model_free(&m);
}

/* Pad ops of m that plan p has no step for. */
static int folded_pads(const struct model *m, const struct netplan *p)
{
    int n = 0;
    for (int i = 0; i < m->n_ops; i++)
        n += m->ops[i].kind == MOP_PAD && p->st[i].kind == NETPLAN_DEAD;
    return n;
}

/* The pose tier's models (every graph output kept, the move ops): sound
 * plans at every precision and fusion level; each move op is one step of
 * its own kind with the op's parameters, each concatenation's rows add up
 * to its output, and fusion still removes steps. */
static void check_pose_model(const char *rel, int n_ops)
{
    struct model *m = umo_load(rel, n_ops);
    const int batches[] = { 1, 3, 8 };
    int moves = 0;
    for (int i = 0; i < m->n_ops; i++)
        moves += netplan_is_move(m->ops[i].kind);
    cr_assert(moves > 0, "%s: no move op", rel);
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
        for (int fp16 = 0; fp16 <= 2; fp16++) {
            struct netplan_opts o = { .max_batch = batches[b], .fp16 = fp16, .all_outputs = 1 };
            int steps[4];
            for (int v = 0; v < 4; v++) {
                char what[160];
                o.fused = v < 2 ? v : 2;
                const struct netplan_fit *fit = v == 3 ? &fit_all : v == 2 ? &fit_none : NULL;
                snprintf(what, sizeof what, "%s batch %d fp16 %d fused %d%s", rel, o.max_batch,
                         fp16, o.fused, v == 3 ? " (all fit)" : v == 2 ? " (none fits)" : "");
                struct netplan *p = plan_checked(m, &o, fit, what);
                steps[v] = p->n_order;
                if (v == 0)
                    cr_assert_eq(p->n_order, m->n_ops, "%s: unfused is one step an op", what);
                int seen = 0;
                for (int k = 0; k < p->n_order; k++) {
                    const struct netplan_step *s = &p->st[p->order[k]];
                    const struct model_op *op = &m->ops[s->op];
                    if (s->kind < NETPLAN_PAD)
                        continue;
                    seen++;
                    cr_assert(netplan_is_move(op->kind) && s->op == s->pos &&
                                  s->out == op->out && s->x == op->in[0],
                              "%s: step %d (%s) is not op %d", what, k,
                              netplan_kind_name(s->kind), s->op);
                    const struct netplan_tens *x = &p->t[s->x], *y = &p->t[s->out];
                    if (s->kind == NETPLAN_PAD)
                        cr_assert(y->h == x->h + s->mv.pad[0] + s->mv.pad[1] &&
                                      s->mv.pad[0] == op->pad_h0 && s->mv.pad[3] == op->pad_w1,
                                  "%s: step %d's padding", what, k);
                    if (s->kind == NETPLAN_D2S)
                        cr_assert(s->mv.bs == op->block_size && y->c * s->mv.bs * s->mv.bs == x->c,
                                  "%s: step %d's block size", what, k);
                    if (s->kind == NETPLAN_MAXPOOL)
                        cr_assert(s->g.oh == y->h && s->g.ow == y->w && s->g.cin == x->c &&
                                      s->g.cout == y->c && s->g.kh == op->filter_h,
                                  "%s: step %d's window", what, k);
                    if (s->kind == NETPLAN_CONCAT) {
                        cr_assert(s->x2 == op->in[1] && s->mv.x3 == (op->n_in == 3 ? op->in[2] : -1),
                                  "%s: step %d's inputs", what, k);
                        const size_t row = (size_t)s->mv.inner[0] + s->mv.inner[1] + s->mv.inner[2];
                        cr_assert(s->mv.inner[0] > 0 && s->mv.inner[1] > 0 &&
                                      (size_t)s->mv.outer * row == (size_t)y->h * y->w * y->c,
                                  "%s: step %d's rows %d x %zu", what, k, s->mv.outer, row);
                    }
                }
                /* fused, the pads read only by convolutions are theirs
                 * (pads_fold_into_their_convs) */
                cr_assert_eq(seen + (o.fused ? folded_pads(m, p) : 0), moves,
                             "%s: %d move steps for %d move ops", what, seen, moves);
                netplan_free(&p);
            }
            cr_assert(steps[1] < steps[0] && steps[2] <= steps[1] && steps[3] <= steps[2],
                      "%s batch %d: steps %d / %d / %d / %d do not fall with fusion", rel,
                      o.max_batch, steps[0], steps[1], steps[2], steps[3]);
        }
    model_free(&m);
}

Test(net_plan, pose_detection_model)
{
    check_pose_model("models/pose_detection.tflite", 109);
}

Test(net_plan, pose_landmark_model)
{
    check_pose_model("models/pose_landmark_lite.tflite", 129);
}

/* netplan_fold_pads: fused, every spatial pad of the pose models whose
 * readers are all convolutions is gone, and each reader reads the pad's
 * input with the pad added to its own leading padding and the output it
 * had; unfused, every pad is its own step. */
static void check_pads_fold(const char *rel, int n_ops, int want_folded)
{
    struct model *m = umo_load(rel, n_ops);
    const struct netplan_opts o0 = { .max_batch = 4, .fused = 0, .all_outputs = 1 };
    const struct netplan_opts o1 = { .max_batch = 4, .fused = 1, .all_outputs = 1 };
    struct netplan *p0 = plan_checked(m, &o0, NULL, rel);
    struct netplan *p1 = plan_checked(m, &o1, NULL, rel);
    int folded = 0;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *op = &m->ops[i];
        if (op->kind != MOP_PAD)
            continue;
        cr_assert_eq(p0->st[i].kind, NETPLAN_PAD, "%s: op %d unfused", rel, i);
        if (p1->st[i].kind != NETPLAN_DEAD)
            continue;
        folded++;
        cr_assert(op->pad_c0 == 0 && op->pad_c1 == 0, "%s: op %d pads channels", rel, i);
        int readers = 0;
        for (int j = 0; j < m->n_ops; j++) {
            const struct netplan_step *a = &p0->st[j], *b = &p1->st[j];
            cr_assert(b->kind == NETPLAN_DEAD || b->x != op->out, "%s: op %d still read", rel, i);
            if (a->x != op->out)
                continue;
            readers++;
            cr_assert((b->kind == NETPLAN_DW || b->kind == NETPLAN_CONV) && b->x == op->in[0] &&
                          b->g.ih == a->g.ih - op->pad_h0 - op->pad_h1 &&
                          b->g.iw == a->g.iw - op->pad_w0 - op->pad_w1 &&
                          b->g.pad_top == a->g.pad_top + op->pad_h0 &&
                          b->g.pad_left == a->g.pad_left + op->pad_w0 && b->g.oh == a->g.oh &&
                          b->g.ow == a->g.ow && b->out == a->out,
                      "%s: op %d's reader op %d", rel, i, j);
        }
        cr_assert(readers > 0, "%s: op %d has no reader", rel, i);
    }
    cr_assert_eq(folded, want_folded, "%s: %d pads folded", rel, folded);
    netplan_free(&p0);
    netplan_free(&p1);
    model_free(&m);
}

Test(net_plan, pads_fold_into_their_convs)
{
    check_pads_fold("models/pose_detection.tflite", 109, 8);
    check_pads_fold("models/pose_landmark_lite.tflite", 129, 5);
}

/* Without all_outputs the pose models are refused as before (a mask of one
 * channel is what net_run gives), and all_outputs runs unsplit. */
Test(net_plan, pose_needs_all_outputs)
{
    struct model *m = umo_load("models/pose_landmark_lite.tflite", 129);
    struct netplan *p = NULL;
    vr_err err = { 0 };
    struct netplan_opts o = { .max_batch = 2, .fused = 1 };
    cr_assert_eq(netplan_create(m, &o, NULL, &p, &err), VR_ENOTSUP);
    cr_assert(strstr(err.msg, "1 channel"), "%s", err.msg);
    o.all_outputs = 1;
    o.split = 1;
    cr_assert_eq(netplan_create(m, &o, NULL, &p, &err), VR_EINVAL);
    cr_assert_null(p);
    model_free(&m);
}

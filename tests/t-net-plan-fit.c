/*
 * t-net-plan-fit.c - every step the GPU planner (net_plan.c) makes of the
 * pose tier's models has a kernel that takes its geometry, checked on the
 * CPU: a pointwise step's tiling is the launcher's own arithmetic
 * (ops_pw_tile.h), a squeeze-excite step's channels are within the
 * kernel's bound. At every precision, fusion level 0, 1 and 2 (no stage
 * kernel: every step a stage kernel might refuse is planned as its plain
 * steps), and the batch sizes the tier runs. The selfie models are held to
 * the same. Before the cout-sliced pointwise, the detector's 80->480 and
 * the landmark model's 96->576 steps did not fit.
 */
#include "model.h"
#include "net_plan.h"
#include "ops_fused.h"
#include "ops_pw_tile.h"
#include "util-model-ops.h"
#include "util-netplan-fit.h"

#include <criterion/criterion.h>
#include <stdio.h>

static int one_part(const struct conv_geom *g)
{
    (void)g;
    return 1;
}

static const struct netplan_fit fit_none = { no_stem, one_part, no_ir, no_tail, no_pwdw };

/* The steps of plan p no kernel takes, each named in `bad` (appended);
 * returns how many. */
static int unfit_steps(const struct netplan *p, int n, char *bad, size_t cap)
{
    int unfit = 0;
    for (int k = 0; k < p->n_order; k++) {
        const struct netplan_step *s = &p->st[p->order[k]];
        int ok = 1;
        if (s->kind == NETPLAN_PW) {
            const int small = s->rs == NETPLAN_RS_AFTER || s->rs == NETPLAN_RS_DEFER;
            const struct netplan_tens *t = &p->t[small ? s->x : s->out];
            struct pw_tile tile;
            ok = pw_tile_of(s->g.cin, s->g.cout, (size_t)n * t->h * t->w, &tile) == 0;
        } else if (s->kind == NETPLAN_SE) {
            ok = p->t[s->x].c <= CU_SE_MAX_CH;
            for (int l = 0; l < s->n_layers; l++)
                ok = ok && s->l[l].cout <= CU_SE_MAX_CH;
        }
        if (!ok) {
            size_t len = strlen(bad);
            snprintf(bad + len, cap - len, " op %d (%s %d->%d)", s->op,
                     netplan_kind_name(s->kind), s->g.cin, s->g.cout);
            unfit++;
        }
    }
    return unfit;
}

static void check_fit(const char *rel, int n_ops, int all_outputs)
{
    struct model *m = umo_load(rel, n_ops);
    const int batches[] = { 1, 2, 8, 32 };
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
        for (int fp16 = 0; fp16 <= 2; fp16++)
            for (int fused = 0; fused <= 2; fused++) {
                const struct netplan_opts o = { .max_batch = batches[b], .fp16 = fp16,
                                                .fused = fused, .all_outputs = all_outputs };
                struct netplan *p = NULL;
                vr_err err = { 0 };
                cr_assert_eq(netplan_create(m, &o, &fit_none, &p, &err), 0, "%s: %s", rel,
                             err.msg);
                char bad[2048] = "";
                const int unfit = unfit_steps(p, batches[b], bad, sizeof bad);
                cr_assert_eq(unfit, 0, "%s batch %d fp16 %d fused %d: %d steps no kernel "
                             "takes:%s", rel, batches[b], fp16, fused, unfit, bad);
                netplan_free(&p);
            }
    model_free(&m);
}

Test(net_plan_fit, pose_detection_steps)
{
    check_fit("models/pose_detection.tflite", 109, 1);
}

Test(net_plan_fit, pose_landmark_steps)
{
    check_fit("models/pose_landmark_lite.tflite", 129, 1);
}

Test(net_plan_fit, selfie_steps)
{
    check_fit("models/selfie_segmentation.tflite", 136, 0);
    check_fit("models/selfie_segmentation_landscape.tflite", 136, 0);
}

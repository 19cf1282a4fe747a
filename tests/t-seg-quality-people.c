/*
 * t-seg-quality-people.c - "people found" (kernels/seg/seg_quality_people.h,
 * issue 39): the pose detector's people of every frame and eye of the
 * bundled sample and of made.mkv, each held against the matte along the
 * body's axis. Every profile must hold every one of the sample's, in both
 * eyes, and balanced and quality every one of made's; fast, whose matte of
 * made is empty, must be seen to miss them, so the measure is known to
 * tell.
 */
#include "util-quality.h"
#include "vrbench_quality_people.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* ---- the axis against made-up mattes ---- */

Test(seg_quality_people, axis_cover_counts_the_points_inside)
{
    enum { W = 64 };
    static uint8_t m[W * W];
    for (int y = 0; y < W; y++) /* person in the top half */
        memset(m + y * W, y < 32 ? 255 : 0, W);
    /* 17 points from y 0 to 64: 0, 4, ..., 60 inside (16), 64 outside */
    double c = quality_axis_cover(m, W, W, W, 10, 0, 10, 64);
    cr_expect_float_eq(c, 8.0 / 16, 1e-9, "%f", c);
    cr_expect_float_eq(quality_axis_cover(m, W, W, W, 10, 0, 10, 31), 1.0, 1e-9);
    cr_expect_eq(quality_axis_cover(m, W, W, W, -5, -9, -5, -1), -1, "outside: no verdict");
    /* a person 87.5% held is found, one held 50% is missed; outside counts not */
    struct pose_person p[3] = { { .score = 0.9f, .x0 = 0, .y0 = -4, .x1 = 20, .y1 = 4 },
                                { .score = 0.9f, .x0 = 30, .y0 = -4, .x1 = 50, .y1 = 4 },
                                { .score = 0.9f, .x0 = -90, .y0 = 0, .x1 = -70, .y1 = 8 } };
    p[0].kp[0][0] = 10, p[0].kp[0][1] = 36;  /* y 0..36 by 2.25: 15 of 17 above 32 */
    p[1].kp[0][0] = 40, p[1].kp[0][1] = 64;
    p[2].kp[0][0] = -80, p[2].kp[0][1] = 30;
    struct quality_count q = { 0 };
    int found[3];
    quality_people_cover(p, 3, m, W, W, W, &q, found);
    cr_expect_eq(found[0], 1);
    cr_expect_eq(found[1], 0);
    cr_expect_eq(found[2], -1);
    cr_expect_float_eq(q.den, 2, 1e-9);
    cr_expect_float_eq(q.num, 1, 1e-9);
}

/* ---- the shipped profiles on the bundled clips ---- */

/* The people of every frame of c, at least min_each in each eye of each
 * frame (the measure must have someone to judge). */
static struct qpeople *people_of(const struct clip *c, int min_each)
{
    struct qpeople *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(qpeople_clip(c->f, c->n, 3, c->w, c->h, &q, &e), 0, "%s", e.msg);
    for (int i = 0; i < c->n; i++)
        for (int eye = 0; eye < 2; eye++)
            cr_assert_geq(q[i].n[eye], min_each, "frame %d eye %d: %d people", i, eye,
                          q[i].n[eye]);
    return q;
}

/* found[p][eye] of each profile over the clip */
static void cover_all(const struct clip *c, const struct qpeople *q,
                      struct quality_count found[NP][2])
{
    uint8_t *m[FRAMES];
    for (int p = 0; p < NP; p++) {
        struct seg *s = profile_run(c, profiles[p], NULL, m);
        seg_free(&s);
        memset(found[p], 0, sizeof found[p]);
        for (int i = 0; i < c->n; i++) {
            qpeople_cover(&q[i], m[i], c->w, c->h, found[p], NULL);
            free(m[i]);
        }
        cr_log_info("%s: people found %.0f/%.0f left, %.0f/%.0f right", profiles[p],
                    found[p][0].num, found[p][0].den, found[p][1].num, found[p][1].den);
    }
}

/* profiles[from..] hold everyone in both eyes */
static void everyone_in_both_eyes(const char *what, int from, struct quality_count found[NP][2])
{
    for (int p = from; p < NP; p++)
        for (int eye = 0; eye < 2; eye++)
            cr_expect_eq(found[p][eye].num, found[p][eye].den, "%s %s eye %d: %.0f of %.0f "
                         "people found", what, profiles[p], eye, found[p][eye].num,
                         found[p][eye].den);
}

/* The first `frames` of `path`, every profile's people found in found[],
 * profiles[from..] held to everyone in both eyes. */
static void clip_people(const char *what, const char *path, int frames, int from,
                        struct quality_count found[NP][2])
{
    struct clip c;
    clip_read(&c, path, frames, 0, 0);
    struct qpeople *q = people_of(&c, 1);
    cover_all(&c, q, found);
    everyone_in_both_eyes(what, from, found);
    free(q);
    clip_free(&c);
}

/* The sample as it is (240 px eyes): the detector finds the walking man in
 * every frame and eye (8 and 8), and every profile holds him: fast since
 * its whole pass fuses the general model with the landscape one (alone,
 * its speckled matte of him missed him in one frame of each eye). */
Test(seg_quality_people, sample_everyone_found, .timeout = 120)
{
    struct quality_count found[NP][2];
    clip_people("sample", CLIP, FRAMES, 0, found);
}

/* made (480 px eyes): the near photo's two players in every frame and eye;
 * fast's matte is empty there (holes 99.99% against the truth), so it
 * finds no one. */
Test(seg_quality_people, made_everyone_found, .timeout = 240)
{
    struct quality_count found[NP][2];
    clip_people("made", MADE, MADE_FRAMES, 1, found);
    cr_expect_eq(found[0][0].num + found[0][1].num, 0, "fast finds no one on made");
}

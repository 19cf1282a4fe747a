/*
 * t-seg-quality.c - the mattes of the shipped profiles held to the measures
 * of kernels/seg/seg_quality.h (issue 39), on the CPU engine, so that the
 * holes and the tiles' invented people cannot come back unnoticed:
 *
 *  - the bundled SBS sample (tests/data/video/sbs.mkv, make run's own, the
 *    issue's "frame 10" clip) as it is: 240 px eyes, too small for tiles
 *    (the grid by the eye's size), the models alone; balanced and quality
 *    had 42% and 46% holes with the general model;
 *  - the same scaled to 2048x1024 (bicubic), where balanced and quality run
 *    their 3x3 grids under the whole pass: a tile's invented person or a
 *    tile rectangle shows here, and the tiles are held to the whole pass.
 *  - tests/data/video/made.mkv (bench/quality-made.sh at EYE 480), measured
 *    against its truth matte (made-truth.mkv) rather than against `fast`.
 *
 * Per profile: holes <= 1% against `fast` (the general model alone: 42-56%
 * holes; fused with the landscape model: 0.01%), false positives <= 1%
 * (tiled: QUALITY_FP_TILED), stereo agreement >= QUALITY_STEREO_MIN for
 * every profile (the eyes fused with each other, stereo_bands:
 * 0.96-0.98; 0.70-0.77 before), still-area flicker at most
 * QUALITY_FLICKER_OF_FAST of fast's (0.25-0.29 reached with the hold; the
 * picture's own still areas change by 0.06-0.1 levels, the mattes' by
 * 0.09-0.14 here: that target is not reached), and the
 * tile borders' step no larger than the step beside them
 * (QUALITY_BORDER_MAX: the same people lie 4-16 px away, so a person is not
 * taken for a seam). `vrbench-video quality` prints the same numbers.
 */
#include "util-quality.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* what the profiles reach with the eyes fused (0.956 as it is, 0.975
 * tiled; without the fusion 0.70 and 0.76, and fast, unfused until
 * 2026-12-01, 0.77 and 0.55) */
#define QUALITY_STEREO_MIN 0.93
/* fast's still-area flicker times this at most (reached with the hold:
 * 0.27 as it is, 0.25-0.29 tiled; 0.52-0.53 before it) */
#define QUALITY_FLICKER_OF_FAST 0.4
/* The tiled sample's false foreground against fast: the 1%.
 * 1.25% on a 2x2 grid, 1.83-1.88% on the 3x3 the eye's size now gives
 * (tile_grid_pick), 1.34% once fast fused its eyes, 0.49% since fast's
 * whole pass fuses the general model too (2026-12-01). What was over 1%
 * was a person: the dark-coated woman at the right edge, whom the
 * landscape model alone missed and 3x3 finds solid in both eyes (viewed:
 * docs/QUALITY.md, "The grid by the eye's size", "fast fuses both
 * models"). Against the whole pass (the same profile without tiles, which
 * sees her), the tiles' false foreground is 0.04-0.06%:
 * QUALITY_FP_OVER_WHOLE holds that. */
#define QUALITY_FP_TILED 0.01
#define QUALITY_FP_OVER_WHOLE 0.003
/* holes and false foreground of the sample as it is: the 1% each,
 * tightened to what the profiles reached with headroom over these 8 frames
 * (0.01% and 0.52%; 0.00% and 0.00% since fast fuses both models) */
#define QUALITY_HOLES_MAX 0.002
#define QUALITY_FP_MAX    0.008
/* the tile borders' step against the step 4-16 px beside them: 1 when no
 * rectangle shows (0.78 reached here, 0.71-0.83 on the 8K clips; the old measure,
 * against the whole eye, read 1.45 here for the people on the borders)... */
#define QUALITY_BORDER_MAX 1.0
/* ...or at most this times the reference's across the same lines, which
 * has no tiles of that plan: what the scene itself puts there. The fine
 * grid's lines cross the sample's people and poles more than the 3x3's
 * (fast reads 1.00-1.05 across them at 2048, balanced 1.01-1.09; a seam
 * reads over 4: border_energy_tells_a_seam_from_a_person). */
#define QUALITY_BORDER_OF_SCENE 1.1
/* The made clip against its truth (made_against_truth below), per
 * profile: the state the profiles are in, not the 1% holes. Over
 * these 4 frames both lose 4.8% of the people (fp 0.19%) with the grid
 * chosen by the eye's size (3x3 of 178-px tiles at this 480 px eye), the
 * fine 4x4 that votes where it is sure and the blend that favours
 * "person" (tile_fine, tile_favor 1). With the 3x3's staggered 2x2 in the
 * fine grid's place 8.58%; with neither and no favour (main before h39g)
 * 13.6%: the near woman's head on a tile-row border was lost.
 * On a 2x2 grid they lost 59.5%; with the tiles fallen out, the whole
 * pass alone, 100%. What is missed: the far photo's players (docs/QUALITY.md,
 * "The fine grid votes where it is sure"). */
#define MADE_HOLES_BALANCED 0.055
#define MADE_HOLES_QUALITY  0.055
#define MADE_FP_BALANCED    0.003
#define MADE_FP_QUALITY     0.003

/* Every profile's mattes of the clip at its own size, measured against
 * truth[i] when given, else against profiles[0]'s; scene[p]: that
 * reference's tile-border steps across profile p's plan. */
static void measure(const struct clip *c, uint8_t *const *truth, struct quality_sums *q,
                    struct quality_sums *scene)
{
    uint8_t *m[NP][FRAMES], *scratch = malloc((size_t)c->w * c->h);
    for (int p = 0; p < NP; p++) {
        struct seg *s = profile_run(c, profiles[p], NULL, m[p]);
        memset(&q[p], 0, sizeof q[p]);
        memset(&scene[p], 0, sizeof scene[p]);
        for (int i = 0; i < c->n; i++) {
            quality_add_frame(&q[p], s, truth ? truth[i] : m[0][i], m[p][i], c->luma[i],
                              i ? m[p][i - 1] : NULL, i ? c->luma[i - 1] : NULL, c->w, c->h,
                              scratch);
            quality_add_borders(&scene[p], s, truth ? truth[i] : m[0][i], c->w);
        }
        seg_free(&s);
    }
    for (int p = 0; p < NP; p++)
        for (int i = 0; i < c->n; i++)
            free(m[p][i]);
    free(scratch);
}

static void check(const char *what, const struct quality_sums *q,
                  const struct quality_sums *scene, double fp_max)
{
    double fast_stereo = quality_ratio(q[0].stereo, 1), fast_flicker = quality_ratio(q[0].flicker, 0);
    for (int p = 0; p < NP; p++) {
        double holes = quality_ratio(q[p].holes, 0), fp = quality_ratio(q[p].fp, 0);
        double stereo = quality_ratio(q[p].stereo, 1), flicker = quality_ratio(q[p].flicker, 0);
        double picture = quality_ratio(q[p].picture, 0);
        double border = quality_ratio(q[p].border, 0), near = quality_ratio(q[p].near, 0);
        double own = quality_ratio(scene[p].near, 0) > 0
                         ? quality_ratio(scene[p].border, 0) / quality_ratio(scene[p].near, 0) : 0;
        cr_log_info("%s %s: holes %.2f%% fp %.2f%% stereo %.3f flicker %.3f (picture %.3f) "
                    "borders %.3f / %.3f (the reference's ratio %.3f)", what, profiles[p],
                    100 * holes, 100 * fp, stereo, flicker, picture, border, near, own);
        cr_expect_gt(q[p].holes.den, 1000, "%s: fast is sure of a person somewhere", what);
        cr_expect_leq(holes, QUALITY_HOLES_MAX, "%s %s: %.2f%% holes", what, profiles[p], 100 * holes);
        cr_expect_leq(fp, fp_max, "%s %s: %.2f%% false foreground", what, profiles[p], 100 * fp);
        /* every profile, fast too since it fuses the eyes (0.55 tiled before) */
        cr_expect_geq(stereo, QUALITY_STEREO_MIN, "%s %s: stereo %.3f (fast %.3f)", what,
                      profiles[p], stereo, fast_stereo);
        if (p > 0)
            cr_expect_leq(flicker, fast_flicker * QUALITY_FLICKER_OF_FAST, "%s %s: flicker "
                          "%.3f, fast %.3f", what, profiles[p], flicker, fast_flicker);
        if (q[p].border.den > 0)
            cr_expect_leq(border, fmax(QUALITY_BORDER_MAX, QUALITY_BORDER_OF_SCENE * own) * near,
                          "%s %s: tile borders step %.3f, beside them %.3f (the reference's "
                          "ratio %.3f)", what, profiles[p], border, near, own);
    }
}

/* Tiles sharpen, never invent: where a profile's own whole pass (tiles
 * off) is sure of background, its tiled matte puts at most
 * QUALITY_FP_OVER_WHOLE above 128. */
static void tiles_never_invent(const struct clip *c)
{
    uint8_t *whole[FRAMES], *tiled[FRAMES], *scratch = malloc((size_t)c->w * c->h);
    for (int p = 1; p < NP; p++) {
        struct seg *s = profile_run(c, profiles[p], "{\"tile_cols\": 0, \"tile_rows\": 0}",
                                    whole);
        seg_free(&s);
        s = profile_run(c, profiles[p], NULL, tiled);
        seg_free(&s);
        struct quality_count fp = { 0 };
        for (int i = 0; i < c->n; i++) {
            quality_sure(whole[i], tiled[i], c->w, c->h, 0, scratch, &fp);
            free(whole[i]);
            free(tiled[i]);
        }
        cr_log_info("%s: tiles over the whole pass's background %.3f%%", profiles[p],
                    100 * quality_ratio(fp, 0));
        cr_expect_gt(fp.den, 1000, "the whole pass is sure of background somewhere");
        cr_expect_leq(quality_ratio(fp, 0), QUALITY_FP_OVER_WHOLE, "%s: the tiles paint %.2f%% "
                      "of the whole pass's background", profiles[p], 100 * quality_ratio(fp, 0));
    }
    free(scratch);
}

Test(seg_quality, sample_as_is, .timeout = 120)
{
    struct clip c;
    struct quality_sums q[NP], scene[NP];
    clip_read(&c, CLIP, FRAMES, 0, 0);
    measure(&c, NULL, q, scene);
    check("480x240", q, scene, QUALITY_FP_MAX);
    clip_free(&c);
}

Test(seg_quality, sample_tiled, .timeout = 240)
{
    struct clip c;
    struct quality_sums q[NP], scene[NP];
    clip_read(&c, CLIP, 4, 2048, 1024);
    measure(&c, NULL, q, scene);
    cr_expect_gt(q[1].border.den, 0, "balanced runs its tiles at 2048x1024");
    check("2048x1024", q, scene, QUALITY_FP_TILED);
    tiles_never_invent(&c);
    clip_free(&c);
}

/* ---- the temporal window keeps a person solid ---- */

/* The sample's right-hand woman walks; the window used to average past
 * frames' masks into her wherever her coat's luma matched the background
 * she covered there, and she came out dotted (docs/QUALITY.md, "The window
 * decides on a neighbourhood"). Speckle: of the pixels the same profile
 * without the filter (smooth 0) puts solid (>= QUALITY_SURE_FG with its 8
 * neighbours), the share the filtered matte puts below SPECKLE_LOW. The
 * window must not darken a solid person: it averages a pixel's past only
 * where nothing moved there. */
#define SPECKLE_LOW 192
#define SPECKLE_MAX 0.025   /* reached: 1.40% (smooth_still_radius 2); 6.79% at the pixel alone */

static void speckle_add(const uint8_t *solid, const uint8_t *m, int w, int h,
                        struct quality_count *c)
{
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            int in = 1;
            for (int dy = -1; dy <= 1 && in; dy++)
                for (int dx = -1; dx <= 1; dx++)
                    in &= solid[(size_t)(y + dy) * w + x + dx] >= QUALITY_SURE_FG;
            if (!in)
                continue;
            c->den += 1;
            c->num += m[(size_t)y * w + x] < SPECKLE_LOW;
        }
}

Test(seg_quality, sample_solid_in_time, .timeout = 240)
{
    struct clip c;
    uint8_t *solid[FRAMES], *m[FRAMES];
    clip_read(&c, CLIP, FRAMES, 0, 0);
    for (int p = 1; p < NP; p++) {
        struct seg *s = profile_run(&c, profiles[p], "{\"smooth\": 0, \"smooth_hold\": 0}",
                                    solid);
        seg_free(&s);
        s = profile_run(&c, profiles[p], NULL, m);
        seg_free(&s);
        struct quality_count sp = { 0 };
        for (int i = 0; i < c.n; i++) {
            if (i > 0) /* frame 0: the window is empty */
                speckle_add(solid[i], m[i], c.w, c.h, &sp);
            free(solid[i]);
            free(m[i]);
        }
        double r = quality_ratio(sp, 0);
        cr_log_info("%s: speckle %.3f%% of %.0f solid pixels", profiles[p], 100 * r, sp.den);
        cr_expect_gt(sp.den, 1000, "%s without the filter is solid somewhere", profiles[p]);
        cr_expect_leq(r, SPECKLE_MAX, "%s: the window darkens %.2f%% of the solid person",
                      profiles[p], 100 * r);
    }
    clip_free(&c);
}

/* The border measure against a matte made to show each case (256x256, a
 * border column at 128 and a border row at 128): a speckled person across
 * both borders is no seam (her steps lie beside the border as on it; the
 * old measure, against the whole eye's mostly empty background, gave 1.72);
 * a step of 40 levels exactly at the border column is one. */
Test(seg_quality, border_energy_tells_a_seam_from_a_person)
{
    enum { W = 256 };
    static uint8_t m[W * W];
    const int xs[1] = { 128 }, ys[1] = { 128 };
    for (int y = 0; y < W; y++)
        for (int x = 0; x < W; x++)
            m[y * W + x] = x >= 80 && x < 176 && y >= 60 && y < 230
                               ? (uint8_t)(200 + 40 * ((x * 7 + y * 13) % 5 == 0)) : 0;
    struct quality_count on = { 0 }, near = { 0 };
    quality_borders(m, W, W, W, xs, 1, ys, 1, &on, &near);
    double person = quality_ratio(on, 0) / quality_ratio(near, 1);
    cr_expect(person > 0.8 && person < 1.2, "a person across the borders: %.2f", person);
    for (int y = 0; y < W; y++)
        for (int x = 0; x < W; x++)
            m[y * W + x] = x >= 128 ? 40 : 0;
    memset(&on, 0, sizeof on);
    memset(&near, 0, sizeof near);
    quality_borders(m, W, W, W, xs, 1, ys, 0, &on, &near);
    cr_expect_gt(quality_ratio(on, 0), 4 * quality_ratio(near, 0) + 1,
                 "a step at the border: %.2f against %.2f", quality_ratio(on, 0),
                 quality_ratio(near, 0));
}

/* ---- the made clip against its truth ---- */

/* tests/data/video/made.mkv: bench/quality-made.sh at EYE 480 (960x480 SBS,
 * tiles run): people.jpg at three sizes over a background with no person,
 * and made-truth.mkv, its truth (FFV1 gray, people.jpg's person mask put
 * where the photo is). Against a truth, holes and false foreground count
 * what a user sees; against `fast`, which finds no one on this clip
 * (holes 100% against the truth), they meant nothing. */

/* The made clip's first MADE_FRAMES frames and their truth; made_free
 * lets both go. */
static void made_read(struct clip *c, uint8_t **t)
{
    clip_read(c, MADE, MADE_FRAMES, 0, 0);
    truth_read(t, MADE_TRUTH, MADE_FRAMES, c->w, c->h);
}

static void made_free(struct clip *c, uint8_t **t)
{
    for (int i = 0; i < MADE_FRAMES; i++)
        free(t[i]);
    clip_free(c);
}

/* The stereo measure on made's truth, a matte both eyes agree on by
 * construction (each photo's mask shifted with the photo): the eyes of the
 * 960x480 frame, 8 bands, dmax = w/8, as quality_add_frame calls it. The
 * photos lie at three depths over a background at none, so one shift a
 * band (the old measure: the row's, mostly the background's) read 0.970;
 * each group of matted columns at its own shift reads 0.995. */
Test(seg_quality, stereo_measure_gives_the_truth_its_own_agreement, .timeout = 60)
{
    struct clip c;
    uint8_t *t[MADE_FRAMES];
    made_read(&c, t);
    const int ew = c.w / 2, eh = c.h;
    uint8_t *yl = malloc((size_t)ew * eh), *yr = malloc((size_t)ew * eh);
    cr_assert(yl && yr);
    struct quality_count st = { 0 };
    for (int i = 0; i < MADE_FRAMES; i++) {
        for (int y = 0; y < eh; y++) {
            memcpy(yl + (size_t)y * ew, c.luma[i] + (size_t)y * c.w, ew);
            memcpy(yr + (size_t)y * ew, c.luma[i] + (size_t)y * c.w + ew, ew);
        }
        quality_stereo(t[i], t[i] + ew, yl, yr, ew, eh, c.w, 8, ew / 8, &st);
    }
    double iou = quality_ratio(st, 1);
    cr_log_info("made's truth against itself: stereo %.3f over %.0f pixels", iou, st.den);
    cr_expect_gt(st.den, 1000, "the truth has people in it");
    cr_expect_geq(iou, 0.99, "the truth, which agrees by construction: stereo %.3f", iou);
    free(yl);
    free(yr);
    made_free(&c, t);
}

/* Per profile (fast, balanced, quality): holes and false foreground at
 * most these, against the truth (fast finds no one here: 99.99% holes). */
static const double made_holes_max[NP] = { 1.0, MADE_HOLES_BALANCED, MADE_HOLES_QUALITY };
static const double made_fp_max[NP] = { 0.005, MADE_FP_BALANCED, MADE_FP_QUALITY };

Test(seg_quality, made_against_truth, .timeout = 240)
{
    struct clip c;
    struct quality_sums q[NP], scene[NP];
    uint8_t *t[MADE_FRAMES];
    made_read(&c, t);
    measure(&c, t, q, scene);
    cr_expect_gt(q[1].border.den, 0, "balanced runs its tiles at 960x480");
    for (int p = 0; p < NP; p++) {
        double holes = quality_ratio(q[p].holes, 0), fp = quality_ratio(q[p].fp, 0);
        cr_log_info("made %s against the truth: holes %.2f%% fp %.2f%% stereo %.3f",
                    profiles[p], 100 * holes, 100 * fp, quality_ratio(q[p].stereo, 1));
        cr_expect_gt(q[p].holes.den, 1000, "the truth is sure of a person somewhere");
        cr_expect_leq(holes, made_holes_max[p], "made %s: %.2f%% holes", profiles[p], 100 * holes);
        cr_expect_leq(fp, made_fp_max[p], "made %s: %.2f%% false foreground", profiles[p],
                      100 * fp);
    }
    /* balanced, the default, finds at least what fast finds */
    cr_expect_leq(quality_ratio(q[1].holes, 0), quality_ratio(q[0].holes, 0));
    made_free(&c, t);
}

/* Holes and false foreground of profile (with JSON overrides `over`, may
 * be NULL) on the made clip c against its truth t, logged under `what`. */
static void made_profile(const struct clip *c, uint8_t *const *t, const char *profile,
                         const char *over, const char *what, double *holes, double *fp)
{
    uint8_t *m[MADE_FRAMES], *scratch = malloc((size_t)c->w * c->h);
    struct quality_sums q = { 0 };
    struct seg *s = profile_run(c, profile, over, m);
    for (int i = 0; i < c->n; i++)
        quality_add_frame(&q, s, t[i], m[i], c->luma[i], i ? m[i - 1] : NULL,
                          i ? c->luma[i - 1] : NULL, c->w, c->h, scratch);
    seg_free(&s);
    *holes = quality_ratio(q.holes, 0), *fp = quality_ratio(q.fp, 0);
    cr_log_info("made %s: holes %.2f%% fp %.2f%%", what, 100 * *holes, 100 * *fp);
    for (int i = 0; i < c->n; i++)
        free(m[i]);
    free(scratch);
}

/* The fine grid (tile_fine, on in balanced, quality and quality-people):
 * made's middle photo's left player is 129 px of the model's 256 in every
 * tile of the 3x3 and its stagger (the clip scales with the eye, so at 8K
 * too), under what the selfie models see as a person (found at 145 px: a
 * 160-px crop, docs/QUALITY.md "The fine grid (h39f)"); the 4x4 of 135-px
 * tiles shows him at 190. balanced loses 4.8% of the people with it (fp
 * 0.19%), 8.6% with the 3x3's staggered 2x2 instead (0.20%: balanced until
 * 2026-12-02), 10.5% with neither. */
#define MADE_HOLES_FINE 0.055
#define MADE_FP_FINE    0.003

Test(seg_quality, made_fine_grid_finds_the_middle_player, .timeout = 240)
{
    struct clip c;
    uint8_t *t[MADE_FRAMES];
    made_read(&c, t);
    double holes[2], fp[2];
    made_profile(&c, t, "balanced", NULL, "balanced", &holes[0], &fp[0]);
    made_profile(&c, t, "balanced", "{\"tile_fine\": false, \"tile_stagger\": true}",
                 "balanced with the stagger instead", &holes[1], &fp[1]);
    cr_expect_leq(holes[0], MADE_HOLES_FINE, "made balanced: %.2f%% holes", 100 * holes[0]);
    cr_expect_leq(fp[0], MADE_FP_FINE, "made balanced: %.2f%% false foreground", 100 * fp[0]);
    cr_expect_lt(holes[0], holes[1] - 0.02, "the fine grid finds someone: %.2f%% against %.2f%%",
                 100 * holes[0], 100 * holes[1]);
    made_free(&c, t);
}

/* quality-people as shipped, zoomed crops on (people_zoom 2, people_zoom2
 * 1.7, split between the eyes): made's middle photo's left player, whom
 * the selfie models and the tier's plain crops miss at this 480 px eye,
 * is found by a zoomed crop of one eye and carried to the other by the
 * eyes' fusion; 3.46% holes with the fine grid (fp 0.19%; 3.70% with the
 * stagger instead) against 4.79% with the zooms off, which 4% fails. The far photo's players (37 px tall, 3-4 px faces) stay missed
 * here; at 960 px eyes the zooms find them too (docs/QUALITY.md,
 * "quality-people zooms"). */
#define MADE_HOLES_PEOPLE 0.04
#define MADE_FP_PEOPLE    0.003

Test(seg_quality, made_quality_people_zooms_find_the_middle_player, .timeout = 300)
{
    struct clip c;
    uint8_t *t[MADE_FRAMES];
    made_read(&c, t);
    double holes, fp;
    made_profile(&c, t, "quality-people", NULL, "quality-people", &holes, &fp);
    cr_expect_leq(holes, MADE_HOLES_PEOPLE, "made quality-people: %.2f%% holes", 100 * holes);
    cr_expect_leq(fp, MADE_FP_PEOPLE, "made quality-people: %.2f%% false foreground", 100 * fp);
    made_free(&c, t);
}

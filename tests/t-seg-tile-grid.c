/*
 * t-seg-tile-grid.c - the tile grid chosen by the eye's size (issue 39,
 * kernels/seg/tiles.h tile_grid_pick): the largest grid up to the
 * profile's whose tiles are at least tile_min model inputs wide, grown to
 * that width (sharing more) before a coarser grid or none. A 480 px eye
 * once lost a 3x3 grid's tiles altogether (the whole pass alone finds no
 * one on the made clip: 100% holes); the shipped profiles now give it 3x3.
 */
#include "tiles.h"

#include <criterion/criterion.h>
#include <math.h>

#define MODEL_IN 256 /* selfie_segmentation's input, the tiles' model */

static struct vr_config grid(int n, double overlap, double tmin)
{
    struct vr_config c;
    config_defaults(&c);
    c.tile_cols = c.tile_rows = n;
    c.tile_overlap = overlap;
    c.tile_min = tmin;
    return c;
}

static void expect_grid(const struct vr_config *c, int eye, int n, int grown, double tile_w)
{
    struct tile_grid g;
    tile_grid_pick(c, eye, eye, MODEL_IN, MODEL_IN, &g);
    cr_expect(g.cols == n && g.rows == n, "eye %d: %dx%d, expected %dx%d", eye, g.cols, g.rows,
              n, n);
    cr_expect_eq(g.grown, grown, "eye %d: grown %d", eye, g.grown);
    if (tile_w > 0)
        cr_expect(fabs(g.tile_w - tile_w) < 0.5, "eye %d: tile %.1f, expected %.1f", eye,
                  g.tile_w, tile_w);
}

/* 3x3 at overlap 0.1, tiles at least 160 px (0.625 of 256): 8K and 1080p
 * eyes get the grid; a 480 px eye 171-px tiles (1.5x magnified, which
 * finds made's people: 14.6% holes against 100% without tiles); 360 px
 * tiles grown to 160 (sharing 0.375); 240 px a 2x2 of 160 (sharing 0.5);
 * 200 px none. */
Test(seg_tile_grid, picks_by_eye_size)
{
    struct vr_config c = grid(3, 0.1, 0.625);
    expect_grid(&c, 4096, 3, 0, 4096 / 2.8);
    expect_grid(&c, 960, 3, 0, 960 / 2.8);
    expect_grid(&c, 480, 3, 0, 480 / 2.8);
    expect_grid(&c, 360, 3, 1, 160);
    expect_grid(&c, 240, 2, 1, 160);
    expect_grid(&c, 200, 0, 0, 0);
    /* the profile's grid is the most, reached while its tiles fit, at the
     * overlap or grown */
    c = grid(8, 0.1, 0.625);
    expect_grid(&c, 4096, 8, 0, 4096 / 7.3);
    expect_grid(&c, 960, 8, 1, 160); /* grown: 5x5 of 209 px would have fit at 0.1 */
    /* tile_min 1 (the default): never magnified, as before; a 2x2 at 0.1
     * whose tiles are 253 px grows to 256 rather than falls out */
    c = grid(2, 0.1, 1.0);
    expect_grid(&c, 480, 2, 1, 256);
    expect_grid(&c, 256, 0, 0, 0);
}

/* A grown grid still covers the eye, stays inside it, and feathers across
 * the whole band its tiles share (a 0.1 ramp in a 0.5 band showed a
 * rectangle on the made clip at EYE 360: borders 1.15 against 1.05). */
Test(seg_tile_grid, grown_tiles_cover_and_feather_their_band)
{
    struct vr_config c = grid(3, 0.1, 0.625);
    struct tile_plan p;
    vr_err e = { 0 };
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 720, 360, 720, 360, MODEL_IN, MODEL_IN, &p,
                                &e), 0, "%s", e.msg);
    for (int k = 0; k < 2; k++) {
        const struct tile_eye *te = &p.eye[k];
        cr_assert_eq(te->n, 10, "eye %d: 3x3 and the whole pass", k);
        for (int i = 0; i < 9; i++) {
            const struct frame_rect *r = &te->src[i];
            cr_expect_eq(r->w, 160);
            cr_expect(r->x >= te->eye.x && r->x + r->w <= te->eye.x + te->eye.w);
            cr_expect_float_eq(te->dst[i].feather, 0.375f, 1e-3f);
        }
        cr_expect_eq(te->src[8].x + te->src[8].w, te->eye.x + te->eye.w, "reaches the edge");
    }
}

/* tile_stagger: a 3x3 grid gets 2x2 more tiles of its size, each half way
 * between its four neighbours (on the grid's inner crossings), feathered on
 * every side, before the whole pass (still the last tile, the gate's
 * floor); tile_favor reaches every tile. */
Test(seg_tile_grid, staggered_tiles_sit_on_the_crossings)
{
    struct vr_config c = grid(3, 0.15, 0.66);
    c.tile_stagger = 1;
    c.tile_favor = 2;
    struct tile_plan p;
    vr_err e = { 0 };
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 1920, 960, 1920, 960, MODEL_IN, MODEL_IN,
                                &p, &e), 0, "%s", e.msg);
    for (int k = 0; k < 2; k++) {
        const struct tile_eye *te = &p.eye[k];
        cr_assert_eq(te->n, 9 + 4 + 1, "eye %d: 3x3, its 2x2 stagger and the whole pass", k);
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 2; q++) {
                const struct frame_rect *s = &te->src[9 + r * 2 + q];
                const struct frame_rect *a = &te->src[r * 3 + q], *b = &te->src[(r + 1) * 3 + q + 1];
                cr_expect_eq(s->w, a->w);
                cr_expect_eq(s->x, (a->x + b->x) / 2, "tile %d: x %d", 9 + r * 2 + q, s->x);
                cr_expect_eq(s->y, (a->y + b->y) / 2, "tile %d: y %d", 9 + r * 2 + q, s->y);
                cr_expect_eq(te->dst[9 + r * 2 + q].edges, 15, "feathered all round");
            }
        for (int i = 0; i < 13; i++)
            cr_expect_eq(te->dst[i].favor, 2);
        cr_expect(te->dst[13].edges & FRAME_TILE_FLOOR, "the whole pass last");
    }
    c.tile_stagger = 0;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 1920, 960, 1920, 960, MODEL_IN, MODEL_IN,
                                &p, &e), 0, "%s", e.msg);
    cr_expect_eq(p.eye[0].n, 10, "off: the grid and the whole pass");
}

/* tile_fine: a 3x3 grid at 0.15 gets a 4x4 of smaller tiles at the same
 * overlap after its stagger (136 px at a 480 px eye, under tile_min's 169:
 * the scale that finds made's middle player), spread edge to edge, its
 * interior edges feathered, each a vote only where sure (FRAME_TILE_SURE),
 * then the whole pass; none past the engine's
 * grid limit, none when the grid itself is none. */
Test(seg_tile_grid, fine_grid_one_tile_more_a_side)
{
    struct vr_config c = grid(3, 0.15, 0.66);
    c.tile_stagger = 1;
    c.tile_fine = 1;
    c.tile_favor = 1;
    struct tile_plan p;
    vr_err e = { 0 };
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 960, 480, 960, 480, MODEL_IN, MODEL_IN,
                                &p, &e), 0, "%s", e.msg);
    for (int k = 0; k < 2; k++) {
        const struct tile_eye *te = &p.eye[k];
        cr_assert_eq(te->n, 9 + 4 + 16 + 1, "eye %d: 3x3, 2x2, 4x4 and the whole pass", k);
        cr_expect_eq(te->src[0].w, 178, "the grid's tiles");
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++) {
                const int i = 13 + r * 4 + q;
                const struct frame_rect *s = &te->src[i];
                cr_expect(s->w == 136 && s->h == 136, "tile %d: %dx%d", i, s->w, s->h);
                cr_expect_eq(s->x - te->eye.x, (int)lround(q * (480.0 - 136) / 3), "tile %d x", i);
                cr_expect_eq(s->y, (int)lround(r * (480.0 - 136) / 3), "tile %d y", i);
                const int edges = (q > 0 ? FRAME_EDGE_L : 0) | (q < 3 ? FRAME_EDGE_R : 0)
                                  | (r > 0 ? FRAME_EDGE_T : 0) | (r < 3 ? FRAME_EDGE_B : 0)
                                  | FRAME_TILE_SURE;
                cr_expect_eq(te->dst[i].edges, edges, "tile %d: edges %d", i, te->dst[i].edges);
                cr_expect_eq(te->dst[i].favor, 1);
                cr_expect(fabsf(te->dst[i].feather - 0.15f) < 1e-6f);
            }
        cr_expect(te->dst[29].edges & FRAME_TILE_FLOOR, "the whole pass last");
    }
    c.tile_stagger = 0;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 960, 480, 960, 480, MODEL_IN, MODEL_IN,
                                &p, &e), 0, "%s", e.msg);
    cr_expect_eq(p.eye[0].n, 9 + 16 + 1, "no stagger: the grid, the fine grid, the whole pass");
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 480, 240, 480, 240, MODEL_IN, MODEL_IN,
                                &p, &e), 0, "%s", e.msg);
    cr_expect_eq(p.eye[0].n, 1, "a 240 px eye: no grid, so no fine grid");
    c = grid(TILE_MAX_GRID, 0.15, 0.25);
    c.tile_stagger = c.tile_fine = 1;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 16384, 8192, 16384, 8192, MODEL_IN,
                                MODEL_IN, &p, &e), 0, "%s", e.msg);
    cr_expect_eq(p.eye[0].n, TILE_MAX_GRID * TILE_MAX_GRID
                 + (TILE_MAX_GRID - 1) * (TILE_MAX_GRID - 1) + 1, "the largest grid: no fine");
    cr_expect_leq(p.max_tiles, TILE_MAX_PER_EYE);
}

/* The shipped profiles choose the same way on the CPU and GPU engines (both
 * plan with tile_plan_make): balanced and quality (tile_min 0.66: 169 px)
 * run 3x3 and the fine 4x4 at a 480 px eye and at 8K (no stagger: the fine
 * grid's borders lie elsewhere), and none at the bundled sample's 240 px
 * eyes (a 2x2 of 169-px tiles would share 0.58); quality-people too
 * (docs/QUALITY.md, "The fine grid votes where it is sure"). */
Test(seg_tile_grid, shipped_profiles)
{
    const char *names[] = { "balanced", "quality", "quality-people" };
    const int frame_w[] = { 480, 960, 1920, 8192 };
    const int tiles[][4] = { { 0, 25, 25, 25 }, { 0, 25, 25, 25 }, { 0, 25, 25, 25 } };
    for (int i = 0; i < 3; i++) {
        struct vr_config c;
        vr_err e = { 0 };
        cr_assert_eq(config_load_profile(&c, names[i], &e), 0, "%s", e.msg);
        for (int k = 0; k < 4; k++) {
            struct tile_plan p;
            int w = frame_w[k], h = w / 2;
            cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, w, h, w, h, MODEL_IN, MODEL_IN, &p,
                                        &e), 0, "%s", e.msg);
            cr_expect_eq(p.eye[1].n, tiles[i][k] + 1, "%s, %dx%d: %d tiles and the whole pass",
                         names[i], w, h, p.eye[1].n - 1);
        }
    }
}

/*
 * t-seg-tiles.c - the tile plan: tiles cover each eye, keep the model's
 * aspect where the grid allows, stay inside their eye, feather only their
 * interior edges, and the whole-eye pass sits under them with low weight.
 */
#include "tiles.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct vr_config grid(int cols, int rows, double overlap, int whole)
{
    struct vr_config c;
    config_defaults(&c);
    c.tile_cols = cols;
    c.tile_rows = rows;
    c.tile_overlap = overlap;
    c.whole_pass = whole;
    c.work_size = 512;
    return c;
}

/* Every pixel of the eye is inside at least one grid tile. */
static void assert_covers(const struct tile_eye *te, int n_grid)
{
    const struct frame_rect E = te->eye;
    for (int y = E.y; y < E.y + E.h; y += 7)
        for (int x = E.x; x < E.x + E.w; x += 7) {
            int hit = 0;
            for (int i = 0; i < n_grid && !hit; i++) {
                const struct frame_rect *r = &te->src[i];
                hit = x >= r->x && x < r->x + r->w && y >= r->y && y < r->y + r->h;
            }
            cr_assert(hit, "pixel %d,%d of eye at %d,%d uncovered", x, y, E.x, E.y);
        }
    for (int i = 0; i < te->n; i++) {
        const struct frame_rect *r = &te->src[i];
        cr_assert(r->x >= E.x && r->y >= E.y && r->x + r->w <= E.x + E.w
                  && r->y + r->h <= E.y + E.h, "tile %d leaves its eye", i);
    }
}

Test(seg_tiles, square_eye_2x2_with_whole_pass)
{
    struct vr_config c = grid(2, 2, 0.25, 1);
    struct tile_plan p;
    vr_err e = { 0 };
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 1000, 1000, 1000, 1000, 256, 256,
                                &p, &e), 0, "%s", e.msg);
    cr_assert_eq(p.n_eyes, 1);
    cr_assert_eq(p.eye[0].n, 5);
    cr_assert_eq(p.eye[0].work_w, 512);
    cr_assert_eq(p.eye[0].work_h, 512);
    assert_covers(&p.eye[0], 4);
    /* 1000 / (2 - 0.25) = 571.4 -> 572 square tiles, corners at 0 and 428 */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(p.eye[0].src[i].w, 572);
        cr_assert_eq(p.eye[0].src[i].h, 572);
    }
    cr_assert_eq(p.eye[0].src[3].x, 428);
    /* top-left tile: feathered right and bottom only */
    cr_assert_eq(p.eye[0].dst[0].edges, FRAME_EDGE_R | FRAME_EDGE_B);
    cr_assert_eq(p.eye[0].dst[3].edges, FRAME_EDGE_L | FRAME_EDGE_T);
    cr_assert_float_eq(p.eye[0].dst[3].x, 428 * 0.512f, 1e-3f);
    /* whole pass: the eye itself, a floor under the tiles */
    struct frame_rect w = p.eye[0].src[4];
    cr_assert(w.x == 0 && w.y == 0 && w.w == 1000 && w.h == 1000);
    cr_assert_eq(p.eye[0].dst[4].edges, FRAME_TILE_FLOOR);
}

Test(seg_tiles, landscape_model_keeps_its_aspect)
{
    struct vr_config c = grid(3, 3, 0.25, 0);
    struct tile_plan p;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 1920, 1080, 1920, 1080, 256, 144,
                                &p, NULL), 0);
    cr_assert_eq(p.eye[0].n, 9);
    assert_covers(&p.eye[0], 9);
    for (int i = 0; i < 9; i++) {
        double a = (double)p.eye[0].src[i].w / p.eye[0].src[i].h;
        cr_assert(fabs(a - 256.0 / 144.0) < 0.01, "tile %d aspect %f", i, a);
    }
    cr_assert_eq(p.eye[0].work_w, 512);
    cr_assert_eq(p.eye[0].work_h, 288);
}

Test(seg_tiles, sbs_and_tb_give_each_eye_its_own_tiles)
{
    struct vr_config c = grid(2, 2, 0.25, 1);
    struct tile_plan p;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 3840, 1080, 1920, 540, 256, 256,
                                &p, NULL), 0);
    cr_assert_eq(p.n_eyes, 2);
    cr_assert_eq(p.eye[1].eye.x, 1920);
    cr_assert_eq(p.eye[1].out.x, 960);
    cr_assert_eq(p.eye[1].out.w, 960);
    for (int e = 0; e < 2; e++)
        assert_covers(&p.eye[e], 4);
    cr_assert_eq(p.eye[1].src[0].x, 1920, "eye 1 tiles are offset into the frame");
    cr_assert_eq(p.max_tiles, 5);

    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_TB, 1001, 2001, 1001, 2001, 256, 256,
                                &p, NULL), 0);
    cr_assert_eq(p.eye[0].eye.h + p.eye[1].eye.h, 2001, "odd sizes: eyes tile the frame");
    cr_assert_eq(p.eye[1].eye.y, 1000);
    for (int e = 0; e < 2; e++)
        assert_covers(&p.eye[e], 4);
}

Test(seg_tiles, no_grid_is_whole_pass_only)
{
    struct vr_config c = grid(0, 0, 0.0, 0);
    struct tile_plan p;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 640, 480, 640, 480, 256, 256,
                                &p, NULL), 0);
    cr_assert_eq(p.eye[0].n, 1);
    cr_assert_float_eq(p.eye[0].dst[0].weight, 1.0f, 1e-6f);
    cr_assert_eq(p.eye[0].work_w, 512);
}

Test(seg_tiles, bad_grids_are_errors)
{
    struct vr_config c = grid(9, 9, 0.25, 1);
    struct tile_plan p;
    vr_err e = { 0 };
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 640, 480, 640, 480, 256, 256,
                                &p, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "9x9"), "%s", e.msg);
    c = grid(2, 0, 0.25, 1);
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 640, 480, 640, 480, 256, 256,
                                &p, &e), VR_EINVAL);
    c = grid(2, 2, 0.25, 1);
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_SBS, 3, 480, 3, 480, 256, 256,
                                &p, &e), VR_EINVAL);
}

Test(seg_tiles, small_eye_is_never_magnified)
{
    /* a 256x256 eye with a 2x2 grid would blow 147-px tiles up to 256:
     * the plan falls back to the whole pass alone; 600x600 with 3x3
     * (240-px tiles) grows them to 256, sharing 0.33 (tile_grid_pick) */
    struct vr_config c = grid(2, 2, 0.25, 1);
    struct tile_plan p;
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 256, 256, 256, 256, 256, 256,
                                &p, NULL), 0);
    cr_assert_eq(p.eye[0].n, 1);
    cr_assert_float_eq(p.eye[0].dst[0].weight, 1.0f, 1e-6f);
    c = grid(3, 3, 0.25, 1);
    cr_assert_eq(tile_plan_make(&c, SEG_LAYOUT_MONO, 600, 600, 600, 600, 256, 256,
                                &p, NULL), 0);
    cr_assert_eq(p.eye[0].n, 10);
    cr_assert_eq(p.eye[0].src[0].w, 256);
    assert_covers(&p.eye[0], 9);
}

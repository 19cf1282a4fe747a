/*
 * t-seg-frame-blend.c - frame_blend_ref on hand-computed layouts: one tile is
 * copied, two overlapping tiles cross-fade over their feathered band with
 * weight 1 at the eye borders, and a low-weight whole pass only matters
 * where tiles say little; a fine-grid tile votes only where it is sure.
 */
#include "frame_ref.h"

#include <criterion/criterion.h>

#define TOL 1e-5f

Test(seg_frame_blend, single_tile_is_copied)
{
    float t[4 * 2];
    for (int i = 0; i < 8; i++)
        t[i] = (float)i / 8.0f;
    struct frame_tile tile = { 0, 0, 4, 2, 1.0f, 0.25f, 0, 0, 0.0f };
    float out[8];
    frame_blend_ref(t, 1, 4, 2, &tile, 4, 2, out);
    for (int i = 0; i < 8; i++)
        cr_assert_float_eq(out[i], t[i], TOL, "px %d", i);
}

Test(seg_frame_blend, overlap_cross_fades_and_borders_keep_weight)
{
    /* work 6x1; A covers [0,4) (feathered right edge), B covers [2,6)
     * (feathered left edge), feather 0.5. A says 1, B says 0.
     * x=2 (centre 2.5): A u=0.625 -> ramp 0.75, B u=0.125 -> 0.25: 0.75.
     * x=3 (3.5): A 0.25, B 0.75: 0.25. Outside the overlap one tile rules,
     * with full weight right up to the eye border. */
    float t[2][2] = { { 1, 1 }, { 0, 0 } };
    struct frame_tile tiles[2] = {
        { 0, 0, 4, 1, 1.0f, 0.5f, FRAME_EDGE_R, 0, 0.0f },
        { 2, 0, 4, 1, 1.0f, 0.5f, FRAME_EDGE_L, 0, 0.0f },
    };
    float out[6];
    frame_blend_ref(&t[0][0], 2, 2, 1, tiles, 6, 1, out);
    const float want[6] = { 1, 1, 0.75f, 0.25f, 0, 0 };
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(out[i], want[i], TOL, "x=%d: %f", i, out[i]);
}

Test(seg_frame_blend, whole_pass_is_weighted_average_and_gaps_are_zero)
{
    /* tile (weight 1, says 1) over half the work; whole pass (0.05, says 0)
     * under all of it: covered half = 1/1.05, uncovered half = 0 (only the
     * whole pass speaks); with no tile at all a pixel is 0. */
    float t[2] = { 1, 0 };
    struct frame_tile tiles[2] = {
        { 0, 0, 2, 1, 1.0f, 0.0f, 0, 0, 0.0f },
        { 0, 0, 4, 1, 0.05f, 0.0f, 0, 0, 0.0f },
    };
    float out[4];
    frame_blend_ref(t, 2, 1, 1, tiles, 4, 1, out);
    cr_assert_float_eq(out[0], 1.0f / 1.05f, TOL);
    cr_assert_float_eq(out[1], 1.0f / 1.05f, TOL);
    cr_assert_float_eq(out[3], 0.0f, TOL);
    frame_blend_ref(t, 1, 1, 1, tiles, 4, 1, out);
    cr_assert_float_eq(out[3], 0.0f, TOL, "no tile covers x=3");
}

Test(seg_frame_blend, tile_output_is_resampled_bilinearly)
{
    /* a 2x1 tile [0, 1] stretched over 4 work pixels: u*2-0.5 =
     * -0.25, 0.25, 0.75, 1.25 -> 0, 0.25, 0.75, 1 */
    float t[2] = { 0, 1 };
    struct frame_tile tile = { 0, 0, 4, 1, 1.0f, 0.0f, 0, 0, 0.0f };
    float out[4];
    frame_blend_ref(t, 1, 2, 1, &tile, 4, 1, out);
    const float want[4] = { 0, 0.25f, 0.75f, 1 };
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], want[i], TOL, "x=%d", i);
}

Test(seg_frame_blend, floor_tile_raises_but_never_lowers)
{
    /* work 4x1: a grid tile over [0,2) says 0.2 (it sees part of a large
     * person and calls it background); the whole pass, a floor over all of
     * it, says 0.9 on the left and 0.1 on the right. The floor wins where it
     * is sure (x=0: 2*0.9-1 = 0.8; x=1 samples 0.7 -> 0.4) and cannot lower
     * a tile (a second tile over [2,4) says 0.7: x=2,3 stay 0.7). */
    float t[3][2] = { { 0.2f, 0.2f }, { 0.7f, 0.7f }, { 0.9f, 0.1f } };
    struct frame_tile tiles[3] = {
        { 0, 0, 2, 1, 1.0f, 0.0f, 0, 0, 0.0f },
        { 2, 0, 2, 1, 1.0f, 0.0f, 0, 0, 0.0f },
        { 0, 0, 4, 1, 1.0f, 0.0f, FRAME_TILE_FLOOR, 0, 0.0f },
    };
    float out[4];
    frame_blend_ref(&t[0][0], 3, 2, 1, tiles, 4, 1, out);
    cr_assert_float_eq(out[0], 0.8f, TOL, "%f", out[0]);
    cr_assert_float_eq(out[1], 0.4f, TOL, "floor raised x=1: %f", out[1]); /* 0.9*.75+0.1*.25 */
    cr_assert_float_eq(out[2], 0.7f, TOL, "%f", out[2]);
    cr_assert_float_eq(out[3], 0.7f, TOL, "%f", out[3]);
}

Test(seg_frame_blend, favor_lets_the_whole_view_win)
{
    /* work 4x1; A (says 0.9: it sees the person whole) and B (says 0.1: a
     * border cuts him) both cover it, unfeathered, weight 1. The mean is
     * 0.5; favor 1 weighs each by its value: (0.81 + 0.01) / (0.9 + 0.1)
     * = 0.82; favor 2: (0.729 + 0.001) / (0.81 + 0.01) = 0.8902. Where
     * both agree nothing moves. */
    float t[2] = { 0.9f, 0.1f };
    struct frame_tile tiles[2] = {
        { 0, 0, 4, 1, 1.0f, 0.0f, 0, 0, 0.0f },
        { 0, 0, 4, 1, 1.0f, 0.0f, 0, 0, 0.0f },
    };
    const float want[3] = { 0.5f, 0.82f, 0.73f / 0.82f };
    float out[4];
    for (int f = 0; f < 3; f++) {
        tiles[0].favor = tiles[1].favor = f;
        frame_blend_ref(t, 2, 1, 1, tiles, 4, 1, out);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(out[i], want[f], TOL, "favor %d, x=%d: %f", f, i, out[i]);
    }
    float same[2] = { 0.3f, 0.3f };
    frame_blend_ref(same, 2, 1, 1, tiles, 4, 1, out);
    cr_assert_float_eq(out[0], 0.3f, TOL);
    float none[2] = { 0.0f, 0.0f };
    frame_blend_ref(none, 2, 1, 1, tiles, 4, 1, out);
    cr_assert_float_eq(out[0], 0.0f, TOL, "all say no: 0, not 0/0");
}

Test(seg_frame_blend, favor_floor_keeps_the_feather)
{
    /* The overlap of the cross-fade test, A saying 1 (a find) and B 0, with
     * favor 1. Without a floor B weighs 0, so A rules its whole ramp and
     * the matte steps from 1 to 0 at A's edge (x=4). With floor 0.2, B keeps
     * 0.2 of its vote: x=2: 0.75 / (0.75 + 0.25 * 0.2) = 0.9375; x=3:
     * 0.25 / (0.25 + 0.75 * 0.2) = 0.625. Floor 1 is the plain mean. */
    float t[2][2] = { { 1, 1 }, { 0, 0 } };
    struct frame_tile tiles[2] = {
        { 0, 0, 4, 1, 1.0f, 0.5f, FRAME_EDGE_R, 1, 0.0f },
        { 2, 0, 4, 1, 1.0f, 0.5f, FRAME_EDGE_L, 1, 0.0f },
    };
    const float floors[3] = { 0.0f, 0.2f, 1.0f };
    const float want[3][6] = { { 1, 1, 1, 1, 0, 0 },
                               { 1, 1, 0.9375f, 0.625f, 0, 0 },
                               { 1, 1, 0.75f, 0.25f, 0, 0 } };
    float out[6];
    for (int f = 0; f < 3; f++) {
        tiles[0].favor_floor = tiles[1].favor_floor = floors[f];
        frame_blend_ref(&t[0][0], 2, 2, 1, tiles, 6, 1, out);
        for (int i = 0; i < 6; i++)
            cr_assert_float_eq(out[i], want[f][i], TOL, "floor %.1f, x=%d: %f", floors[f], i,
                               out[i]);
    }
}

Test(seg_frame_blend, sure_tile_votes_only_where_sure)
{
    /* work 3x1, favor 1, unfeathered. A fine-grid tile (FRAME_TILE_SURE)
     * over all of it says 0.9, 0.4 and 0.4; a plain tile over x=2 says 0.3.
     * x=0: alone and sure, 2*0.9-1 = 0.8. x=1: alone and unsure, its 0.4
     * counts as 0 and weighs 0: 0, not 0.4 (the grey a doorway got). x=2:
     * the plain tile alone decides, 0.3. */
    float t[2][3] = { { 0.9f, 0.4f, 0.4f }, { 0.3f, 0.3f, 0.3f } };
    struct frame_tile tiles[2] = {
        { 0, 0, 3, 1, 1.0f, 0.0f, FRAME_TILE_SURE, 1, 0.0f },
        { 2, 0, 1, 1, 1.0f, 0.0f, 0, 1, 0.0f },
    };
    float out[3];
    frame_blend_ref(&t[0][0], 2, 3, 1, tiles, 3, 1, out);
    cr_assert_float_eq(out[0], 0.8f, TOL, "sure: %f", out[0]);
    cr_assert_float_eq(out[1], 0.0f, TOL, "unsure: %f", out[1]);
    cr_assert_float_eq(out[2], 0.3f, TOL, "the plain tile: %f", out[2]);
}

/*
 * t-net-ops-move.c - the pose tier's ops (ops_move_ref.c) on small cases
 * worked out by hand: PAD with zeros on every side and on channels,
 * DEPTH_TO_SPACE in TFLite's order, MAX_POOL_2D (VALID, SAME edges, NaN
 * taps skipped, fused RELU6), CONCATENATION of two and three inputs.
 */
#include "model.h"
#include "ops_ref.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>

Test(net_ops_move, pad_hw_and_channels)
{
    /* [1][2][2][1] = 1 2 / 3 4, padded 1 above, 0 below, 0 left, 2 right, 1 channel after */
    const float in[4] = { 1, 2, 3, 4 };
    float out[3 * 4 * 2];
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        out[i] = NAN;
    ref_pad(1, 2, 2, 1, in, 1, 0, 0, 2, 0, 1, out);
    const float want[3 * 4 * 2] = {
        0, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 2, 0, 0, 0, 0, 0,
        3, 0, 4, 0, 0, 0, 0, 0,
    };
    for (int i = 0; i < 24; i++)
        cr_assert_eq(out[i], want[i], "value %d: %g, want %g", i, out[i], want[i]);
}

Test(net_ops_move, pad_batch_of_two)
{
    const float in[2] = { 5, 7 }; /* n = 2, 1x1x1 each */
    float out[2 * 9];
    ref_pad(2, 1, 1, 1, in, 1, 1, 1, 1, 0, 0, out);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 9; i++)
            cr_assert_eq(out[b * 9 + i], i == 4 ? in[b] : 0.0f);
}

Test(net_ops_move, depth_to_space_order)
{
    /* one pixel, 8 channels, block 2: 2 channels a pixel of a 2x2 block,
     * (dy, dx) = (0,0) (0,1) (1,0) (1,1) take channels 0-1, 2-3, 4-5, 6-7 */
    float in[8], out[8];
    for (int i = 0; i < 8; i++)
        in[i] = (float)i;
    ref_depth_to_space(1, 1, 1, 8, 2, in, out);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[i], (float)i);
    /* 1x2 pixels, 4 channels, block 2 -> 2x4, 1 channel: rows interleave */
    const float in2[8] = { 0, 1, 2, 3, 10, 11, 12, 13 };
    const float want2[8] = { 0, 1, 10, 11, 2, 3, 12, 13 };
    ref_depth_to_space(1, 1, 2, 4, 2, in2, out);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[i], want2[i], "value %d: %g, want %g", i, out[i], want2[i]);
}

static struct conv_geom pool(int ih, int iw, int c, int k, int s, int padding, int act)
{
    struct conv_geom g = { .n = 1, .ih = ih, .iw = iw, .cin = c, .cout = c, .kh = k, .kw = k,
                           .sh = s, .sw = s, .dh = 1, .dw = 1, .act = act };
    op_conv_geom(&g, padding);
    return g;
}

Test(net_ops_move, maxpool_valid_and_same)
{
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)((i * 7) % 16) - 8; /* a permutation of -8..7 */
    struct conv_geom g = pool(4, 4, 1, 2, 2, MPAD_VALID, MACT_NONE);
    cr_assert(g.oh == 2 && g.ow == 2);
    ref_maxpool(&g, in, out);
    /* the map: -8 -1 6 -3 / 4 -5 2 -7 / 0 7 -2 5 / -4 3 -6 1 */
    const float want[4] = { 4, 6, 7, 5 };
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], want[i], "window %d: %g, want %g", i, out[i], want[i]);
    /* SAME 3x3 stride 2 on 4x4: pads 1 at the end only; last window (2..3, 2..3) */
    g = pool(4, 4, 1, 3, 2, MPAD_SAME, MACT_NONE);
    cr_assert(g.oh == 2 && g.ow == 2 && g.pad_top == 0 && g.pad_left == 0);
    ref_maxpool(&g, in, out);
    cr_assert_eq(out[0], 7); /* rows 0..2, cols 0..2 */
    cr_assert_eq(out[3], 5); /* rows 2..3, cols 2..3: -2 5 -6 1 */
}

Test(net_ops_move, maxpool_skips_nan_and_applies_relu6)
{
    const float in[4] = { NAN, 9.0f, -1.0f, 2.0f };
    float out[1];
    struct conv_geom g = pool(2, 2, 1, 2, 2, MPAD_VALID, MACT_RELU6);
    ref_maxpool(&g, in, out);
    cr_assert_eq(out[0], 6.0f);
    const float neg[4] = { NAN, -9.0f, -3.0f, -4.0f };
    g.act = MACT_NONE;
    ref_maxpool(&g, neg, out);
    cr_assert_eq(out[0], -3.0f);
}

Test(net_ops_move, concat_two_and_three)
{
    /* 2 rows: a has 1 value a row, b 2, c 3 */
    const float a[2] = { 1, 2 }, b[4] = { 10, 11, 20, 21 }, c[6] = { 100, 101, 102, 200, 201, 202 };
    float out[12];
    ref_concat3(2, a, 1, b, 2, c, 3, out);
    const float want[12] = { 1, 10, 11, 100, 101, 102, 2, 20, 21, 200, 201, 202 };
    for (int i = 0; i < 12; i++)
        cr_assert_eq(out[i], want[i]);
    ref_concat3(2, a, 1, b, 2, NULL, 0, out);
    const float want2[6] = { 1, 10, 11, 2, 20, 21 };
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], want2[i]);
}

/*
 * t-net-ops-pool.c - AVERAGE_POOL_2D (dividing by the count of in-bounds taps
 * at the edges, as TFLite does, not by the filter size), global pooling,
 * fused activations on pools, and MEAN over H and W.
 */
#include "model.h"
#include "ops_ref.h"

#include <criterion/criterion.h>
#include <math.h>

static struct conv_geom pool_geom(int n, int ih, int iw, int c, int k, int s, int padding,
                                  int act)
{
    struct conv_geom g = { .n = n, .ih = ih, .iw = iw, .cin = c, .cout = c, .kh = k, .kw = k,
                           .sh = s, .sw = s, .dh = 1, .dw = 1, .act = act };
    op_conv_geom(&g, padding);
    return g;
}

Test(net_ops_pool, same_3x3_divides_by_inbounds_count)
{
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)(i + 1);
    struct conv_geom g = pool_geom(1, 4, 4, 1, 3, 1, MPAD_SAME, MACT_NONE);
    ref_avgpool(&g, in, out);
    /* corner: (1+2+5+6)/4; edge: (1+2+3+5+6+7)/6; inside: 54/9; far corner 54/4 */
    cr_assert_float_eq(out[0], 14.f / 4, 0);
    cr_assert_float_eq(out[1], 24.f / 6, 0);
    cr_assert_float_eq(out[5], 54.f / 9, 0);
    cr_assert_float_eq(out[15], 54.f / 4, 0);
    cr_assert_float_eq(out[12], 46.f / 4, 0);
}

Test(net_ops_pool, valid_2x2_stride2_two_channels)
{
    /* ch0 = 1..16, ch1 = -ch0 */
    float in[32], out[8];
    for (int i = 0; i < 16; i++) {
        in[2 * i] = (float)(i + 1);
        in[2 * i + 1] = -(float)(i + 1);
    }
    struct conv_geom g = pool_geom(1, 4, 4, 2, 2, 2, MPAD_VALID, MACT_NONE);
    cr_assert_eq(g.oh, 2);
    ref_avgpool(&g, in, out);
    static const float want[4] = { 3.5f, 5.5f, 11.5f, 13.5f };
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(out[2 * i], want[i], 0);
        cr_assert_float_eq(out[2 * i + 1], -want[i], 0);
    }
    /* RELU6 fused: ch0 clamps at 6, ch1 at 0. */
    g.act = MACT_RELU6;
    ref_avgpool(&g, in, out);
    cr_assert_float_eq(out[0], 3.5f, 0);
    cr_assert_float_eq(out[2], 5.5f, 0);
    cr_assert_float_eq(out[4], 6.f, 0);
    cr_assert_float_eq(out[1], 0.f, 0);
    /* TANH as op_act has it, the same in every op. */
    g.act = MACT_TANH;
    ref_avgpool(&g, in, out);
    cr_assert_float_eq(out[0], tanhf(3.5f), 1e-7f);
    cr_assert_float_eq(out[7], tanhf(-13.5f), 1e-7f);
}

Test(net_ops_pool, stride2_same_edge_counts)
{
    /* 5x5 ones with a 3x3 stride-2 SAME window: pad 1 on each side, so the
     * corner window sees 2x2 taps, the edge 2x3, the centre 3x3. Using the
     * ramp shows the divisor: the mean of the in-bounds values. */
    float in[25], out[9];
    for (int i = 0; i < 25; i++)
        in[i] = (float)i;
    struct conv_geom g = pool_geom(1, 5, 5, 1, 3, 2, MPAD_SAME, MACT_NONE);
    cr_assert_eq(g.oh, 3);
    cr_assert_eq(g.pad_top, 1);
    ref_avgpool(&g, in, out);
    cr_assert_float_eq(out[0], (0 + 1 + 5 + 6) / 4.f, 0);
    cr_assert_float_eq(out[1], (1 + 2 + 3 + 6 + 7 + 8) / 6.f, 0);
    cr_assert_float_eq(out[4], (6 + 7 + 8 + 11 + 12 + 13 + 16 + 17 + 18) / 9.f, 0);
    cr_assert_float_eq(out[8], (18 + 19 + 23 + 24) / 4.f, 0);
}

Test(net_ops_pool, global_pool_batch)
{
    /* The SE blocks' global pool: filter = input size, VALID; batch 2. */
    float in[2 * 4 * 4 * 3], out[6];
    for (int b = 0; b < 2; b++)
        for (int p = 0; p < 16; p++)
            for (int c = 0; c < 3; c++)
                in[(b * 16 + p) * 3 + c] = (float)(p + 1) * (c + 1) + b * 100;
    struct conv_geom g = pool_geom(2, 4, 4, 3, 4, 4, MPAD_VALID, MACT_NONE);
    cr_assert_eq(g.oh, 1);
    ref_avgpool(&g, in, out);
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 3; c++)
            cr_assert_float_eq(out[b * 3 + c], 8.5f * (c + 1) + b * 100, 1e-5f);
}

Test(net_ops_pool, mean_hw)
{
    /* n=2, 2x3, c=9 (covers the 8-wide block and the tail) */
    float in[2 * 6 * 9], out[18];
    for (int b = 0; b < 2; b++)
        for (int p = 0; p < 6; p++)
            for (int c = 0; c < 9; c++)
                in[(b * 6 + p) * 9 + c] = (float)(p * (c + 1)) - b;
    ref_mean_hw(2, 2, 3, 9, in, out);
    /* mean of p over 0..5 is 2.5 */
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 9; c++)
            cr_assert_float_eq(out[b * 9 + c], 2.5f * (c + 1) - b, 1e-6f, "[%d][%d] = %g", b,
                               c, out[b * 9 + c]);
}

Test(net_ops_pool, wide_channels_match_tail_path)
{
    /* 11 channels: 8 go through the vector block, 3 through the scalar tail;
     * channel c holds the same data in both, so results must agree. */
    float in[3 * 3 * 11], out[3 * 3 * 11];
    for (int p = 0; p < 9; p++)
        for (int c = 0; c < 11; c++)
            in[p * 11 + c] = (float)(p * p % 7) * 0.37f;
    struct conv_geom g = pool_geom(1, 3, 3, 11, 2, 1, MPAD_SAME, MACT_NONE);
    ref_avgpool(&g, in, out);
    for (int p = 0; p < 9; p++)
        for (int c = 1; c < 11; c++)
            cr_assert_eq(out[p * 11 + c], out[p * 11], "pixel %d channel %d", p, c);
    /* bottom-right pixel: window (2..3, 2..3) holds one in-bounds tap */
    cr_assert_float_eq(out[8 * 11], in[8 * 11], 0);
}

/*
 * t-net-ops-resize.c - RESIZE_BILINEAR with neither flag, align_corners and
 * half_pixel_centers, against sample positions worked out by hand from
 * TFLite's ComputeInterpolationValues (lower bound clamped at 0, upper at
 * size-1), on a linear ramp where bilinear interpolation is exact.
 */
#include "ops_ref.h"

#include <criterion/criterion.h>

/* in(y, x) = 2y + x on a 2x2 grid, so out = 2*sy + sx at the (clamped)
 * source coordinates (sy, sx). */
static void check_2x2_to_4x4(int align, int half, const float coord[4])
{
    const float in[4] = { 0, 1, 2, 3 };
    float out[16];
    ref_resize_bilinear(1, 2, 2, 1, in, 4, 4, align, half, out);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            float want = 2 * coord[y] + coord[x];
            cr_assert_float_eq(out[y * 4 + x], want, 1e-6f,
                               "align %d half %d (%d,%d) = %g, want %g", align, half, y, x,
                               out[y * 4 + x], want);
        }
}

Test(net_ops_resize, neither_flag)
{
    /* scale 0.5: sources 0, 0.5, 1, 1.5 -> the last clamps to row 1. */
    const float c[4] = { 0, 0.5f, 1, 1 };
    check_2x2_to_4x4(0, 0, c);
}

Test(net_ops_resize, align_corners)
{
    /* scale (2-1)/(4-1): sources 0, 1/3, 2/3, 1. */
    const float c[4] = { 0, 1.f / 3, 2.f / 3, 1 };
    check_2x2_to_4x4(1, 0, c);
}

Test(net_ops_resize, half_pixel_centers)
{
    /* (v + 0.5) * 0.5 - 0.5: -0.25 (clamped to 0), 0.25, 0.75, 1.25 (to 1). */
    const float c[4] = { 0, 0.25f, 0.75f, 1 };
    check_2x2_to_4x4(0, 1, c);
}

Test(net_ops_resize, half_pixel_edge_weights_stay_on_one_pixel)
{
    /* A non-linear input: at the clamped ends both taps are the same pixel,
     * so the edge outputs equal the edge inputs exactly. */
    const float in[3] = { 5, -7, 100 };
    float out[6];
    ref_resize_bilinear(1, 1, 3, 1, in, 1, 6, 0, 1, out);
    /* sources: -0.25, 0.25, 0.75, 1.25, 1.75, 2.25 */
    cr_assert_float_eq(out[0], 5, 0);
    cr_assert_float_eq(out[1], 5 * 0.75f + -7 * 0.25f, 1e-6f);
    cr_assert_float_eq(out[2], 5 * 0.25f + -7 * 0.75f, 1e-6f);
    cr_assert_float_eq(out[3], -7 * 0.75f + 100 * 0.25f, 1e-5f);
    cr_assert_float_eq(out[4], -7 * 0.25f + 100 * 0.75f, 1e-5f);
    cr_assert_float_eq(out[5], 100, 0);
}

Test(net_ops_resize, downscale_and_layout)
{
    /* 3x3 -> 2x2, no flags: scale 1.5, sources 0 and 1.5; 2 channels and a
     * batch of 2 check the NHWC layout. */
    float in[2 * 9 * 2], out[2 * 4 * 2];
    for (int b = 0; b < 2; b++)
        for (int p = 0; p < 9; p++) {
            in[(b * 9 + p) * 2] = (float)p + 100 * b;   /* 3y + x */
            in[(b * 9 + p) * 2 + 1] = -(float)p;
        }
    ref_resize_bilinear(2, 3, 3, 2, in, 2, 2, 0, 0, out);
    const float src[2] = { 0, 1.5f };
    for (int b = 0; b < 2; b++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++) {
                float v = 3 * src[y] + src[x];
                cr_assert_float_eq(out[((b * 2 + y) * 2 + x) * 2], v + 100 * b, 1e-5f);
                cr_assert_float_eq(out[((b * 2 + y) * 2 + x) * 2 + 1], -v, 1e-5f);
            }
}

Test(net_ops_resize, model_2x_upsample_16_to_32)
{
    /* The model's case: 2x up with half_pixel_centers; output pixel 2i and
     * 2i+1 sit at i - 0.25 and i + 0.25. */
    float in[16], out[32];
    for (int i = 0; i < 16; i++)
        in[i] = (float)(i * i);
    ref_resize_bilinear(1, 1, 16, 1, in, 1, 32, 0, 1, out);
    for (int i = 1; i < 15; i++) {
        cr_assert_float_eq(out[2 * i], 0.25f * in[i - 1] + 0.75f * in[i], 1e-4f, "i %d", i);
        cr_assert_float_eq(out[2 * i + 1], 0.75f * in[i] + 0.25f * in[i + 1], 1e-4f);
    }
    cr_assert_float_eq(out[0], in[0], 0);
    cr_assert_float_eq(out[31], in[15], 0);
}

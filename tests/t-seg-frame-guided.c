/*
 * t-seg-frame-guided.c - the fast guided filter and the bilinear refine on
 * hand-computed cases: a flat guide reduces to a double box blur of the
 * mask, a mask equal to its guide passes through, coefficients are
 * upsampled and applied to the full-resolution luma, the bilinear
 * upsample hits the expected u8 values, and the band (guided_band) keeps
 * the filter at an edge and gives the mask itself where it is flat.
 */
#include "frame_ref.h"

#include <criterion/criterion.h>

#define TOL 1e-5f

Test(seg_frame_guided, flat_guide_is_double_box_blur)
{
    /* I constant: var = cov = 0, a = 0, b = box(box(p)).
     * p = [0,0,1,1], r = 1: box(p) = [0, 1/3, 2/3, 1];
     * box again = [1/6, 1/3, 2/3, 5/6]. */
    float I[4] = { 0.5f, 0.5f, 0.5f, 0.5f }, p[4] = { 0, 0, 1, 1 };
    float a[4], b[4], scratch[FRAME_GUIDED_SCRATCH(4, 1)];
    frame_guided_coeffs_ref(I, p, 4, 1, 1, 1e-3f, a, b, scratch);
    const float want[4] = { 1 / 6.0f, 1 / 3.0f, 2 / 3.0f, 5 / 6.0f };
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(a[i], 0.0f, TOL);
        cr_assert_float_eq(b[i], want[i], TOL, "b[%d] = %f", i, b[i]);
    }
}

Test(seg_frame_guided, mask_equal_to_guide_passes_through)
{
    /* p = I = step [0,0,0,0,1,1,1,1], r = 1, eps ~ 0: a0 = 1 where the
     * window straddles the edge (x = 3, 4), else 0, and b0 = 0 there, p
     * elsewhere. Boxed: a = [0,0,1/3,2/3,2/3,1/3,0,0],
     * b = [0,0,0,0,1/3,2/3,1,1], so a*I + b = I everywhere: the edge
     * stays a hard step instead of being blurred. */
    float I[8] = { 0, 0, 0, 0, 1, 1, 1, 1 };
    float a[8], b[8], scratch[FRAME_GUIDED_SCRATCH(8, 1)];
    frame_guided_coeffs_ref(I, I, 8, 1, 1, 1e-6f, a, b, scratch);
    const float wa[8] = { 0, 0, 1 / 3.0f, 2 / 3.0f, 2 / 3.0f, 1 / 3.0f, 0, 0 };
    const float wb[8] = { 0, 0, 0, 0, 1 / 3.0f, 2 / 3.0f, 1, 1 };
    for (int i = 0; i < 8; i++) {
        cr_assert_float_eq(a[i], wa[i], 1e-3f, "a[%d] = %f", i, a[i]);
        cr_assert_float_eq(b[i], wb[i], 1e-3f, "b[%d] = %f", i, b[i]);
        cr_assert_float_eq(a[i] * I[i] + b[i], I[i], 1e-3f, "q[%d]", i);
    }
}

Test(seg_frame_guided, apply_uses_full_resolution_luma)
{
    /* 1x1 coefficients a = 0.5, b = 0.25 over a 4x1 RGB gray ramp:
     * q = 0.5*I + 0.25 per output pixel, at the frame's own resolution */
    uint8_t px[4 * 3];
    const uint8_t g[4] = { 0, 51, 102, 255 };
    for (int i = 0; i < 4; i++)
        px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = g[i];
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = 4, .h = 1,
                           .data = { px }, .linesize = { 12 } };
    float a = 0.5f, b = 0.25f;
    uint8_t out[4];
    frame_guided_apply_ref(&a, &b, 1, 1, &f, (struct frame_rect){ 0, 0, 4, 1 },
                           out, 4, 4, 1);
    const uint8_t want[4] = { 64, 89, 115, 191 }; /* 255*(0.5*g/255+0.25), rounded */
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], want[i], "x=%d: %d", i, out[i]);
}

Test(seg_frame_guided, apply_writes_into_eye_with_linesize)
{
    /* right eye of a 2-eye mask: dst offset and linesize are honoured */
    uint8_t px[2 * 2 * 3] = { 0 };
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = 2, .h = 2,
                           .data = { px }, .linesize = { 6 } };
    float a = 0.0f, b = 1.0f;
    uint8_t mask[2 * 4] = { 0 };
    frame_guided_apply_ref(&a, &b, 1, 1, &f, (struct frame_rect){ 0, 0, 2, 2 },
                           mask + 2, 4, 2, 2);
    const uint8_t want[8] = { 0, 0, 255, 255, 0, 0, 255, 255 };
    for (int i = 0; i < 8; i++)
        cr_assert_eq(mask[i], want[i], "i=%d", i);
}

Test(seg_frame_guided, bilinear_refine_values)
{
    /* [0, 1] -> 4 px: 0, 0.25, 0.75, 1 -> 0, 64, 191, 255 */
    float m[2] = { 0, 1 };
    uint8_t out[4];
    frame_upsample_bilinear_ref(m, 2, 1, out, 4, 4, 1);
    const uint8_t want[4] = { 0, 64, 191, 255 };
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], want[i], "x=%d: %d", i, out[i]);
}

Test(seg_frame_guided, to_u8_rounds_and_clamps)
{
    cr_assert_eq(frame_to_u8(-0.5f), 0);
    cr_assert_eq(frame_to_u8(0.5f), 128);   /* 127.5 + 0.5 */
    cr_assert_eq(frame_to_u8(1.7f), 255);
    cr_assert_eq(frame_to_u8(2.0f / 255.0f), 2);
}

Test(seg_frame_guided, band_keeps_the_edge_and_smooths_the_flat)
{
    /* p = step [0,0,0,0,1,1,1,1], r = 1. Edge e over the 3-wide window:
     * [0,0,0,1,1,0,0,0] (a change of 1, times FRAME_BAND_GAIN, clamped);
     * its mean over 3 (2 at the ends) wgt = [0,0,1/3,2/3,2/3,1/3,0,0].
     * a = 1, b = 1/2 become a = wgt, b = wgt/2 + (1 - wgt) * flat, flat
     * the mean of p over rbox: rbox 0 gives p itself, rbox 1
     * [0,0,0,1/3,2/3,1,1,1]. The flat parts lose the guide (a = 0). */
    float p[8] = { 0, 0, 0, 0, 1, 1, 1, 1 }, a[8], b[8], band[8];
    const float wa[8] = { 0, 0, 1 / 3.0f, 2 / 3.0f, 2 / 3.0f, 1 / 3.0f, 0, 0 };
    const float wb[2][8] = { { 0, 0, 1 / 6.0f, 1 / 3.0f, 2 / 3.0f, 5 / 6.0f, 1, 1 },
                             { 0, 0, 1 / 6.0f, 4 / 9.0f, 5 / 9.0f, 5 / 6.0f, 1, 1 } };
    for (int rbox = 0; rbox <= 1; rbox++) {
        for (int i = 0; i < 8; i++)
            a[i] = 1.0f, b[i] = 0.5f;
        frame_guided_band_ref(p, 8, 1, 1, rbox, a, b, band);
        for (int i = 0; i < 8; i++) {
            cr_assert_float_eq(a[i], wa[i], TOL, "rbox %d: a[%d] = %f", rbox, i, a[i]);
            cr_assert_float_eq(b[i], wb[rbox][i], TOL, "rbox %d: b[%d] = %f", rbox, i, b[i]);
        }
    }
    /* a small change (0.1 over the window) is a fifth of an edge */
    float q[3] = { 0.2f, 0.3f, 0.2f };
    for (int i = 0; i < 3; i++)
        a[i] = 1.0f, b[i] = 0.0f;
    frame_guided_band_ref(q, 3, 1, 1, 0, a, b, band);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(a[i], 0.2f, TOL, "a[%d] = %f", i, a[i]);
    /* r = 0: nothing changes */
    a[0] = 0.7f, b[0] = 0.1f;
    frame_guided_band_ref(q, 3, 1, 0, 4, a, b, band);
    cr_assert(a[0] == 0.7f && b[0] == 0.1f);
}

/*
 * t-seg-frame-preprocess.c - frame_preprocess_ref / frame_luma_ref on tiny
 * hand-computed frames: identity copy, area shrink, bilinear stretch,
 * BT.709 limited and full range YUV (NV12, P010, YUV420P), and rects that
 * stay inside their eye.
 */
#include "frame_ref.h"

#include <criterion/criterion.h>
#include <string.h>

#define TOL 1e-5f

static struct seg_frame rgb_frame(const uint8_t *px, int w, int h)
{
    return (struct seg_frame){ .fmt = SEG_PIX_RGB24, .w = w, .h = h,
                               .data = { px }, .linesize = { 3 * w } };
}

Test(seg_frame_preprocess, same_size_is_exact_copy)
{
    uint8_t px[2 * 4 * 3];
    for (int i = 0; i < (int)sizeof px; i++)
        px[i] = (uint8_t)(i * 10);
    struct seg_frame f = rgb_frame(px, 4, 2);
    struct frame_rect r = { 0, 0, 4, 2 };
    float out[2 * 4 * 3];
    cr_assert_eq(frame_resample_mode(4, 2, 4, 2), FRAME_BILINEAR);
    frame_preprocess_ref(&f, &r, 1, 4, 2, out);
    for (int i = 0; i < (int)sizeof px; i++)
        cr_assert_float_eq(out[i], px[i] / 255.0f, TOL, "i=%d", i);
}

Test(seg_frame_preprocess, area_shrink_averages_every_pixel)
{
    /* 4x4 gray values -> 2x2: each output is the mean of a 2x2 block */
    static const uint8_t g[16] = { 0, 40, 100, 100,
                                   80, 120, 100, 100,
                                   255, 255, 0, 0,
                                   255, 255, 0, 4 };
    uint8_t px[16 * 3];
    for (int i = 0; i < 16; i++)
        px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = g[i];
    struct seg_frame f = rgb_frame(px, 4, 4);
    struct frame_rect r = { 0, 0, 4, 4 };
    float out[2 * 2 * 3];
    cr_assert_eq(frame_resample_mode(4, 4, 2, 2), FRAME_AREA);
    frame_preprocess_ref(&f, &r, 1, 2, 2, out);
    const float want[4] = { 60 / 255.0f, 100 / 255.0f, 1.0f, 1 / 255.0f };
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 3; c++)
            cr_assert_float_eq(out[3 * i + c], want[i], TOL, "px %d", i);
}

Test(seg_frame_preprocess, area_keeps_a_one_pixel_person)
{
    /* one bright pixel in a dark 8x8 shrunk to 2x2 survives as 1/16 of it
     * (bilinear at these centres would skip it entirely) */
    uint8_t px[8 * 8 * 3] = { 0 };
    px[(5 * 8 + 6) * 3 + 1] = 160;
    struct seg_frame f = rgb_frame(px, 8, 8);
    struct frame_rect r = { 0, 0, 8, 8 };
    float out[2 * 2 * 3];
    frame_preprocess_ref(&f, &r, 1, 2, 2, out);
    cr_assert_float_eq(out[(1 * 2 + 1) * 3 + 1], 10 / 255.0f, TOL);
    cr_assert_float_eq(out[0 * 3 + 1], 0.0f, TOL);
}

Test(seg_frame_preprocess, bilinear_stretch_half_pixel_centres)
{
    /* 2x1 -> 4x1: fx = (o+0.5)/2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped) */
    uint8_t px[2 * 3] = { 0, 0, 0, 200, 200, 200 };
    struct seg_frame f = rgb_frame(px, 2, 1);
    struct frame_rect r = { 0, 0, 2, 1 };
    float out[4 * 3];
    frame_preprocess_ref(&f, &r, 1, 4, 1, out);
    const float want[4] = { 0, 50 / 255.0f, 150 / 255.0f, 200 / 255.0f };
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[3 * i], want[i], TOL, "px %d: %f", i, out[3 * i]);
}

Test(seg_frame_preprocess, rects_stay_inside_their_eye)
{
    /* side-by-side 4x1: left eye 10, right eye 200; a rect never reads the
     * other eye, even with bilinear clamping at its border */
    uint8_t px[4 * 3];
    for (int i = 0; i < 4; i++)
        px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = i < 2 ? 10 : 200;
    struct seg_frame f = rgb_frame(px, 4, 1);
    struct frame_rect r[2] = { { 0, 0, 2, 1 }, { 2, 0, 2, 1 } };
    float out[2 * 3 * 1 * 3];
    frame_preprocess_ref(&f, r, 2, 3, 1, out); /* 2 -> 3: bilinear */
    for (int x = 0; x < 3; x++) {
        cr_assert_float_eq(out[3 * x], 10 / 255.0f, TOL);
        cr_assert_float_eq(out[9 + 3 * x], 200 / 255.0f, TOL);
    }
}

Test(seg_frame_preprocess, nv12_bt709_limited_red_white_black)
{
    /* 2x2 luma, one chroma pair. BT.709 limited red is Y 63, Cb 102, Cr 240. */
    uint8_t y[4] = { 63, 63, 63, 63 }, uv[2] = { 102, 240 };
    struct seg_frame f = { .fmt = SEG_PIX_NV12, .w = 2, .h = 2,
                           .data = { y, uv }, .linesize = { 2, 2 } };
    struct frame_rect r = { 0, 0, 2, 2 };
    float out[2 * 2 * 3];
    frame_preprocess_ref(&f, &r, 1, 2, 2, out);
    cr_assert_float_eq(out[0], 1.0f, 0.01f);
    cr_assert_float_eq(out[1], 0.0f, 0.01f);
    cr_assert_float_eq(out[2], 0.0f, 0.01f);

    uint8_t yw[4] = { 235, 235, 16, 16 }, grey[2] = { 128, 128 };
    f.data[0] = yw;
    f.data[1] = grey;
    frame_preprocess_ref(&f, &r, 1, 2, 2, out);
    for (int c = 0; c < 3; c++) {
        cr_assert_float_eq(out[c], 1.0f, TOL);        /* Y 235 = white */
        cr_assert_float_eq(out[6 + c], 0.0f, TOL);    /* Y 16 = black */
    }
    float l[4];
    frame_luma_ref(&f, r, 2, 2, l);
    cr_assert_float_eq(l[0], 1.0f, TOL);
    cr_assert_float_eq(l[3], 0.0f, TOL);
}

Test(seg_frame_preprocess, p010_and_yuv420p_full_range)
{
    /* P010: 10-bit limited white is 940 << 6, little-endian */
    uint16_t y10[4], uv10[2] = { 512 << 6, 512 << 6 };
    for (int i = 0; i < 4; i++)
        y10[i] = (uint16_t)((i & 1 ? 64 : 940) << 6);
    struct seg_frame f = { .fmt = SEG_PIX_P010, .w = 2, .h = 2,
                           .data = { (uint8_t *)y10, (uint8_t *)uv10 },
                           .linesize = { 4, 4 } };
    struct frame_rect r = { 0, 0, 2, 2 };
    float out[2 * 2 * 3];
    frame_preprocess_ref(&f, &r, 1, 2, 2, out);
    cr_assert_float_eq(out[0], 1.0f, TOL);
    cr_assert_float_eq(out[3], 0.0f, TOL);

    /* YUV420P full range: Y 255 is white, Y 0 black, U=V=128 grey axis */
    uint8_t y[4] = { 255, 0, 51, 0 }, u[1] = { 128 }, v[1] = { 128 };
    struct seg_frame g = { .fmt = SEG_PIX_YUV420P, .w = 2, .h = 2, .full_range = 1,
                           .data = { y, u, v }, .linesize = { 2, 1, 1 } };
    frame_preprocess_ref(&g, &r, 1, 2, 2, out);
    cr_assert_float_eq(out[0], 1.0f, TOL);
    cr_assert_float_eq(out[3], 0.0f, TOL);
    cr_assert_float_eq(out[7], 0.2f, TOL);
}

Test(seg_frame_preprocess, rgb_luma_bt709_weights)
{
    uint8_t px[3] = { 255, 0, 0 };
    struct seg_frame f = rgb_frame(px, 1, 1);
    float l;
    frame_luma_ref(&f, (struct frame_rect){ 0, 0, 1, 1 }, 1, 1, &l);
    cr_assert_float_eq(l, 0.2126f, TOL);
}

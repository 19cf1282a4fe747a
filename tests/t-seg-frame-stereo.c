/*
 * t-seg-frame-stereo.c - both eyes agree (frame_stereo_ref.c) on hand-made
 * eyes: a textured scene whose right eye is the left shifted by 6 pixels
 * in the top band and 3 in the bottom one, a person the left eye is sure
 * of and the right eye misses, haze one eye only paints: the disparity is
 * found per band, the person lands in the right eye where it is there,
 * the haze is halved, and a band with no person keeps d = 0.
 */
#include "frame_stereo.h"

#include <criterion/criterion.h>
#include <stdlib.h>

enum { W = 96, H = 32, BANDS = 2 };

/* A scene every shift tells apart: a hash of the column and row. */
static float texture(int x, int y)
{
    unsigned v = (unsigned)x * 73856093u ^ (unsigned)y * 19349663u;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    return (float)((v >> 8) & 255) / 255.0f;
}

Test(seg_frame_stereo, person_of_one_eye_found_in_both)
{
    static float yl[W * H], yr[W * H], ml[W * H], mr[W * H];
    static float scratch[FRAME_STEREO_SCRATCH(W, H)];
    const int shift[BANDS] = { 6, 3 };
    for (int y = 0; y < H; y++) {
        int d = shift[frame_stereo_band(H, BANDS, y)];
        for (int x = 0; x < W; x++) {
            yl[y * W + x] = texture(x, y);
            yr[y * W + x] = texture(x + d, y); /* R(x - d) = L(x) */
            int person = x >= 40 && x < 52;
            ml[y * W + x] = person ? 1.0f : 0.0f;
            mr[y * W + x] = x >= 10 && x < 20 && y < H / 2 ? 0.4f : 0.0f; /* haze */
        }
    }
    int disp[BANDS];
    frame_stereo_ref(ml, mr, yl, yr, W, H, BANDS, scratch, disp);
    cr_assert_eq(disp[0], 6, "top band: d %d", disp[0]);
    cr_assert_eq(disp[1], 3, "bottom band: d %d", disp[1]);
    for (int y = 0; y < H; y++) {
        int d = shift[frame_stereo_band(H, BANDS, y)];
        for (int x = 0; x < W; x++) {
            int person_r = x + d >= 40 && x + d < 52;
            cr_expect_eq(mr[y * W + x] >= 0.99f, person_r, "right (%d, %d): %g", x, y,
                         mr[y * W + x]);
            cr_expect_eq(ml[y * W + x] >= 0.99f, x >= 40 && x < 52, "left (%d, %d): %g", x, y,
                         ml[y * W + x]);
        }
    }
    /* the right eye's haze (0.4) is the left's 0: 0.2 in both, where both see it */
    cr_expect_float_eq(mr[2 * W + 15], 0.2f, 1e-6f, "right haze %g", mr[2 * W + 15]);
    cr_expect_float_eq(ml[2 * W + 15 + 6], 0.2f, 1e-6f, "left haze %g", ml[2 * W + 21]);
}

Test(seg_frame_stereo, no_person_no_shift)
{
    static float yl[W * H], yr[W * H], ml[W * H], mr[W * H];
    static float scratch[FRAME_STEREO_SCRATCH(W, H)];
    for (int i = 0; i < W * H; i++) {
        yl[i] = texture(i % W, i / W);
        yr[i] = texture(i % W + 5, i / W);
        ml[i] = 0.1f;
        mr[i] = 0.3f;
    }
    int disp[BANDS];
    frame_stereo_ref(ml, mr, yl, yr, W, H, BANDS, scratch, disp);
    cr_expect_eq(disp[0], 0);
    cr_expect_eq(disp[1], 0);
    for (int i = 0; i < W * H; i++) {
        cr_assert_float_eq(ml[i], 0.2f, 1e-6f, "left %d: %g", i, ml[i]);
        cr_assert_float_eq(mr[i], 0.2f, 1e-6f, "right %d: %g", i, mr[i]);
    }
}

/* The refined eyes (frame_stereo_out_ref): work shifts 6 and -3 at a work
 * width of 96 become 13 and -6 at an output width of 200 (12.5 and -6.25;
 * -6.5 at 208 gives -7: half away from 0); each pair gets one byte, the fused rule's: max from
 * 192, else the mean rounded up; a band without a shift (NONE) and the
 * columns whose partner lies outside the other eye are left as they were. */
Test(seg_frame_stereo, refined_eyes_get_one_byte)
{
    enum { OW = 200, OH = 12, LS = 2 * OW + 8, B = 3 };
    static uint8_t m[OH * LS], was[OH * LS];
    const int disp[B] = { 6, -3, FRAME_STEREO_NONE };
    cr_expect_eq(frame_stereo_scale(6, 96, OW), 13);
    cr_expect_eq(frame_stereo_scale(-3, 96, OW), -6);
    cr_expect_eq(frame_stereo_scale(-3, 96, 208), -7);
    cr_expect_eq(frame_stereo_scale(FRAME_STEREO_NONE, 96, OW), FRAME_STEREO_NONE);
    for (int i = 0; i < OH * LS; i++)
        m[i] = was[i] = (uint8_t)(i * 37 + (i >> 3) * 11);
    uint8_t *ml = m, *mr = m + OW;
    frame_stereo_out_ref(ml, mr, LS, OW, OH, 96, B, disp);
    int fused = 0;
    for (int y = 0; y < OH; y++) {
        int b = frame_stereo_band(OH, B, y), d = b == 0 ? 13 : b == 1 ? -6 : FRAME_STEREO_NONE;
        for (int x = 0; x < OW; x++) {
            const size_t l = (size_t)y * LS + x, r = l + OW;
            int partner = d != FRAME_STEREO_NONE && x - d >= 0 && x - d < OW;
            if (!partner) {
                cr_expect_eq(m[l], was[l], "row %d x %d: left unfused", y, x);
                continue;
            }
            uint8_t a = was[l], c = was[r - d], hi = a > c ? a : c;
            uint8_t want = hi >= 192 ? hi : (uint8_t)((a + c + 1) / 2);
            cr_expect_eq(m[l], want, "row %d x %d: left %u, want %u", y, x, m[l], want);
            cr_expect_eq(m[r - d], want, "row %d x %d: right %u, want %u", y, x, m[r - d], want);
            fused++;
        }
    }
    cr_expect_gt(fused, OW, "pairs were fused");
    /* the right eye's columns without a partner stay */
    for (int y = 0; y < 4; y++)
        for (int x = OW - 13; x < OW; x++)
            cr_expect_eq(mr[(size_t)y * LS + x], was[(size_t)y * LS + OW + x],
                         "row %d x %d of the right eye", y, x);
}

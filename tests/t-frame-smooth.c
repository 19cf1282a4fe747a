/*
 * t-frame-smooth.c - temporal smoothing: an EMA of consecutive masks with
 * the state carried in the caller's buffer.
 */
#include "frame_ref.h"

#include <criterion/criterion.h>

Test(frame_smooth, ema_of_consecutive_masks)
{
    uint8_t prev[2] = { 100, 0 }, m[2] = { 200, 255 };
    frame_smooth_ref(m, 2, prev, 2, 2, 1, 0.3f);
    /* 0.3*100 + 0.7*200 = 170; 0.7*255 = 178.5 -> 179 */
    cr_assert_eq(m[0], 170);
    cr_assert_eq(m[1], 179);
    cr_assert_eq(prev[0], 170, "state follows the output");
    uint8_t m2[2] = { 0, 0 };
    frame_smooth_ref(m2, 2, prev, 2, 2, 1, 0.3f);
    cr_assert_eq(m2[0], 51); /* 0.3*170 */
}

Test(frame_smooth, zero_weight_copies_into_state)
{
    uint8_t prev[4] = { 9, 9, 9, 9 }, m[4] = { 1, 2, 3, 4 };
    frame_smooth_ref(m, 2, prev, 2, 2, 2, 0.0f);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(m[i], i + 1);
        cr_assert_eq(prev[i], i + 1);
    }
}

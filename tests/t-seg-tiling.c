/*
 * t-seg-tiling.c - tiles find small people a single whole-frame pass
 * misses: in a frame of OpenCV's vtest.avi (768x576, pedestrians ~25 px
 * wide), a 3x3 grid lights up pedestrians that the whole pass alone
 * (tile_cols = 0) leaves at zero, and keeps the grass and road dark.
 */
#include "util-seg.h"

#define VTEST "tests/data/image/vtest-100.jpg"

/* torso boxes of three far pedestrians, measured by hand on the frame */
static const int far_people[][4] = {
    { 498, 160, 515, 190 }, /* red-blue jacket */
    { 520, 163, 538, 193 }, /* woman next to him */
    { 593, 163, 615, 200 }, /* man on the right */
};
static const int ground[][4] = {
    { 50, 350, 250, 550 },  /* grass */
    { 500, 300, 700, 400 }, /* road */
};

Test(seg_tiling, tiles_find_small_pedestrians, .timeout = 60)
{
    struct vr_config tiles = tseg_cfg("{\"tile_cols\": 3, \"tile_rows\": 3}");
    struct vr_config whole = tseg_cfg("{\"tile_cols\": 0, \"tile_rows\": 0}");
    struct timg_mask t = tseg_run(VTEST, &tiles, SEG_LAYOUT_MONO);
    struct timg_mask w = tseg_run(VTEST, &whole, SEG_LAYOUT_MONO);
    double sum_t = 0, sum_w = 0;
    for (int i = 0; i < 3; i++) {
        const int *b = far_people[i];
        double vt = timg_mean(&t, b[0], b[1], b[2], b[3]);
        double vw = timg_mean(&w, b[0], b[1], b[2], b[3]);
        cr_assert_lt(vw, 15, "pedestrian %d: whole pass already sees it (%.1f)", i, vw);
        cr_assert_gt(vt, 40, "pedestrian %d: tiles miss it (%.1f)", i, vt);
        sum_t += vt;
        sum_w += vw;
    }
    cr_assert_gt(sum_t / 3, 60 + sum_w / 3, "tiles %.1f vs whole %.1f", sum_t / 3, sum_w / 3);
    for (int i = 0; i < 2; i++) {
        const int *b = ground[i];
        cr_assert_lt(timg_mean(&t, b[0], b[1], b[2], b[3]), 20, "ground %d", i);
    }
    free(t.v);
    free(w.v);
}

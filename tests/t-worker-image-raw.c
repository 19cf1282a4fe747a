/*
 * t-worker-image-raw.c - `segment-image --raw`: one network pass on an image of
 * the model's input size gives round(sigmoid*255), compared with a golden
 * file. The golden file was produced once by this code and checked by eye
 * (the astronaut is white, the flag, wall and shuttle black).
 *
 * To regenerate after an intended change of the network's numbers:
 *   bin/vr-worker segment-image --raw tests/data/image/astronaut-256.png \
 *       tests/data/image/astronaut-256-raw.png
 */
#include "util-image.h"

#define GOLDEN "tests/data/image/astronaut-256-raw.png"

Test(worker_image_raw, matches_golden_within_one, .timeout = 60)
{
    char dir[64], bin[512], out[128];
    timg_tmpdir(dir, sizeof dir);
    timg_bin(bin, sizeof bin, "vr-worker");
    snprintf(out, sizeof out, "%s/raw.png", dir);
    cr_assert_eq(tsh("%s segment-image --raw tests/data/image/astronaut-256.png %s",
                         bin, out), 0);
    struct timg_mask got = timg_read_mask(out), want = timg_read_mask(GOLDEN);
    cr_assert(got.w == 256 && got.h == 256, "raw output is %dx%d", got.w, got.h);
    int md = 0, at = 0;
    for (int i = 0; i < 256 * 256; i++) {
        int d = abs(got.v[i] - want.v[i]);
        if (d > md) {
            md = d;
            at = i;
        }
    }
    cr_assert_leq(md, 1, "max abs diff %d at (%d,%d) vs %s; if the network changed on "
                  "purpose, regenerate it (see the top of tests/t-worker-image-raw.c)",
                  md, at % 256, at / 256, GOLDEN);
    /* the golden file itself says person / not person where it should */
    cr_assert_gt(timg_mean(&want, 95, 40, 135, 80), 200, "face");
    cr_assert_lt(timg_mean(&want, 150, 0, 185, 25), 30, "wall");
    free(got.v);
    free(want.v);
    tsh("rm -rf %s", dir);
}

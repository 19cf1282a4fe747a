/*
 * t-seg-people-tier.c - the people tier (config `people: "pose"`,
 * kernels/seg/people.h) through `vr-worker segment-image` with the real
 * models: on the first frame of docs/QUALITY.md's `made` clip
 * (bench/quality-made.sh), the near photo's left player, whom the
 * balanced profile's whole pass and its old 2x2 tiles miss in both eyes
 * (mask 0 on his torso), is found by the Pose detector on the eye's crops, his ROI
 * segmented and pasted in both eyes; the grass beside him stays
 * background.
 */
#include "util-image.h"

/* The player's boxes in the 1920x960 side-by-side frame (people.jpg at
 * 480x360 pasted at x 40 in the left eye and x 16 in the right, y 560). */
static const struct {
    const char *what;
    int x0, y0, x1, y1;
} torso[] = {
    { "left eye's torso", 77, 672, 130, 770 },
    { "right eye's torso", 960 + 53, 672, 960 + 106, 770 },
}, grass = { "grass", 600, 880, 900, 950 };

static struct timg_mask segment(const char *dir, const char *png, const char *json)
{
    char bin[512], out[256], cfg[256];
    timg_bin(bin, sizeof bin, "vr-worker");
    snprintf(out, sizeof out, "%s/mask.png", dir);
    snprintf(cfg, sizeof cfg, "%s/people.json", dir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs(json, f);
    fclose(f);
    cr_assert_eq(tsh("%s segment-image --layout sbs --profile balanced -c %s %s %s", bin, cfg,
                     png, out), 0);
    return timg_read_mask(out);
}

Test(seg_people_tier, finds_the_player_the_whole_pass_misses, .timeout = 240)
{
    char dir[64], clip[128], png[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(clip, sizeof clip, "%s/made.mkv", dir);
    snprintf(png, sizeof png, "%s/made0.png", dir);
    cr_assert_eq(tsh("sh bench/quality-made.sh tests/data %s", clip), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -frames:v 1 %s", clip, png), 0);

    /* the 2x2 grid balanced had before the grid by the eye's size: its
     * tiles miss him (the 3x3 it has now finds him: docs/QUALITY.md) */
#define OLD_GRID "\"tile_cols\": 2, \"tile_rows\": 2, \"tile_overlap\": 0.25, \"tile_min\": 1"
    struct timg_mask off = segment(dir, png, "{\"people\": \"none\", " OLD_GRID "}");
    struct timg_mask on = segment(dir, png, "{\"people\": \"pose\", " OLD_GRID "}");
    cr_assert(on.w == 1920 && on.h == 960, "mask %dx%d", on.w, on.h);
    for (int i = 0; i < 2; i++) {
        double a = timg_mean(&off, torso[i].x0, torso[i].y0, torso[i].x1, torso[i].y1);
        double b = timg_mean(&on, torso[i].x0, torso[i].y0, torso[i].x1, torso[i].y1);
        cr_assert_lt(a, 64, "%s without the tier: %.1f (the case needs a miss)", torso[i].what, a);
        cr_assert_gt(b, 200, "%s with the tier: %.1f", torso[i].what, b);
    }
    double g0 = timg_mean(&off, grass.x0, grass.y0, grass.x1, grass.y1);
    double g1 = timg_mean(&on, grass.x0, grass.y0, grass.x1, grass.y1);
    cr_assert_lt(g1, g0 + 8, "%s: %.1f without the tier, %.1f with", grass.what, g0, g1);
    free(off.v);
    free(on.v);
    tsh("rm -rf %s", dir);
}

/*
 * t-seg-people-tier.c - the people tier (config `people: "pose"`,
 * kernels/seg/people.h) through `vr-worker segment-image` with the real
 * models: on the first frame of docs/QUALITY.md's `made` clip
 * (bench/quality-made.sh), the near photo's left player, whom the
 * balanced profile's whole pass and its old 2x2 tiles miss in both eyes
 * (mask 0 on his torso), is found by the Pose detector on the eye's crops, his ROI
 * segmented and pasted in both eyes; the grass beside him stays
 * background. With `people_zoom` the far photo's players (about 75 px tall
 * in a 960 eye, faces of 6-8 px), whom no profile finds, are found in
 * zoomed crops and pasted, and no background is painted. (The finds
 * hang on where the crops fall: the case holds for this frame, eye size
 * and crop layout; docs/QUALITY.md, "Zoomed crops".)
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

    /* the 2x2 grid balanced had before the grid by the eye's size, without
     * the fine grid: its tiles miss him (the 3x3 it has now finds him, and
     * the fine 3x3 a 2x2 gets finds him too: docs/QUALITY.md) */
#define OLD_GRID "\"tile_cols\": 2, \"tile_rows\": 2, \"tile_overlap\": 0.25, \"tile_min\": 1, " \
                 "\"tile_fine\": false"
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

/* The far photo's left player in made's frame 0 (people.jpg at 128x96 at
 * (300, 200) of the left eye and (294, 200) of the right; his truth spans
 * x 314-335, y 218-293 in the left eye): his torso. */
static const struct {
    const char *what;
    int x0, y0, x1, y1;
} far_torso[] = {
    { "left eye's far player", 318, 235, 332, 262 },
    { "right eye's far player", 960 + 312, 235, 960 + 326, 262 },
};

/* Pixels over 128 where the truth is 0, a share of the truth's 0s. */
static double false_share(const struct timg_mask *m, const struct timg_mask *truth)
{
    long fp = 0, bg = 0;
    for (int i = 0; i < m->w * m->h; i++)
        if (truth->v[i] == 0) {
            bg++;
            fp += m->v[i] > 128;
        }
    return bg ? (double)fp / bg : 0;
}

Test(seg_people_tier, zoomed_crops_find_the_far_players, .timeout = 300)
{
    char dir[64], clip[128], png[128], tpng[160], tclip[160];
    timg_tmpdir(dir, sizeof dir);
    snprintf(clip, sizeof clip, "%s/made.mkv", dir);
    snprintf(tclip, sizeof tclip, "%s/made-truth.mkv", dir);
    snprintf(png, sizeof png, "%s/made0.png", dir);
    snprintf(tpng, sizeof tpng, "%s/truth0.png", dir);
    cr_assert_eq(tsh("sh bench/quality-made.sh tests/data %s", clip), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -frames:v 1 %s", clip, png), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -frames:v 1 -pix_fmt gray %s", tclip, tpng), 0);
    struct timg_mask truth = timg_read_mask(tpng);

    struct timg_mask off = segment(dir, png, "{\"people\": \"pose\"}");
    struct timg_mask on = segment(dir, png, "{\"people\": \"pose\", \"people_zoom\": 2}");
    cr_assert(on.w == 1920 && on.h == 960 && truth.w == 1920, "mask %dx%d", on.w, on.h);
    for (int i = 0; i < 2; i++) {
        const int *b = &far_torso[i].x0;
        double a = timg_mean(&off, b[0], b[1], b[2], b[3]);
        double z = timg_mean(&on, b[0], b[1], b[2], b[3]);
        cr_assert_lt(a, 64, "%s without zoom: %.1f (the case needs a miss)", far_torso[i].what, a);
        cr_assert_gt(z, 160, "%s with zoom: %.1f", far_torso[i].what, z);
    }
    /* the zoomed crops' false ROIs are dropped by their size: no
     * background painted */
    double f0 = false_share(&off, &truth), f1 = false_share(&on, &truth);
    cr_assert_lt(f1, f0 + 0.001, "false foreground %.4f%% without zoom, %.4f%% with", 100 * f0,
                 100 * f1);
    free(off.v);
    free(on.v);
    free(truth.v);
    tsh("rm -rf %s", dir);
}

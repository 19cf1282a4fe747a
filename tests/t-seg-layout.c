/*
 * t-seg-layout.c - stereo layouts: a side-by-side (ffmpeg hstack) and a
 * top-bottom (vstack) picture of two different photos give each eye its
 * own mask, the same as segmenting that photo alone, with the person in
 * each eye covered and its background not.
 */
#include "util-seg.h"

#define ASTRO "tests/data/image/astronaut-256.png"
#define BBALL "tests/data/image/basketball-256.jpg"

/* Max abs difference between eye (ox, oy) of a stereo mask and a mono one. */
static int eye_diff(const struct timg_mask *st, int ox, int oy, const struct timg_mask *mono)
{
    int md = 0;
    for (int y = 0; y < mono->h; y++)
        for (int x = 0; x < mono->w; x++) {
            int d = abs(st->v[(oy + y) * st->w + ox + x] - mono->v[y * mono->w + x]);
            md = d > md ? d : md;
        }
    return md;
}

static void check_eyes(const struct timg_mask *m, int ox, int oy)
{
    /* eye 0: astronaut; eye 1: the left basketball player */
    cr_assert_gt(timg_mean(m, 95, 40, 135, 80), 200, "eye 0: astronaut's face");
    cr_assert_lt(timg_mean(m, 150, 0, 185, 25), 40, "eye 0: wall");
    cr_assert_gt(timg_mean(m, ox + 27, oy + 80, ox + 64, oy + 149), 180, "eye 1: player");
    cr_assert_lt(timg_mean(m, ox + 130, oy + 40, ox + 220, oy + 180), 40, "eye 1: wall");
}

static void stereo(const char *filter, enum seg_layout layout, int ox, int oy)
{
    char dir[64], path[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/stereo.png", dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -i %s -filter_complex "
                         "'[0]format=rgb24[a];[1]format=rgb24[b];[a][b]%s' %s",
                         ASTRO, BBALL, filter, path), 0);
    struct timg_mask st = tseg_run(path, NULL, layout);
    struct timg_mask a = tseg_run(ASTRO, NULL, SEG_LAYOUT_MONO);
    struct timg_mask b = tseg_run(BBALL, NULL, SEG_LAYOUT_MONO);
    cr_assert_eq(st.w, 256 + ox);
    cr_assert_eq(st.h, 256 + oy);
    check_eyes(&st, ox, oy);
    cr_assert_leq(eye_diff(&st, 0, 0, &a), 1, "eye 0 differs from the photo alone");
    cr_assert_leq(eye_diff(&st, ox, oy, &b), 1, "eye 1 differs from the photo alone");
    free(st.v);
    free(a.v);
    free(b.v);
    tsh("rm -rf %s", dir);
}

Test(seg_layout, side_by_side, .timeout = 60)
{
    stereo("hstack", SEG_LAYOUT_SBS, 256, 0);
}

Test(seg_layout, top_bottom, .timeout = 60)
{
    stereo("vstack", SEG_LAYOUT_TB, 0, 256);
}

Test(seg_layout, names_round_trip)
{
    for (int l = SEG_LAYOUT_MONO; l <= SEG_LAYOUT_TB; l++)
        cr_assert_eq(seg_layout_parse(seg_layout_name(l)), l);
    cr_assert_eq(seg_layout_parse("diagonal"), -1);
    cr_assert_eq(seg_layout_parse(NULL), -1);
}

/*
 * t-seg-people.c - the whole engine through `vr-worker segment-image`
 * on real photos: the mask is at the input's size,
 * covers each person (mean in a box measured by hand inside the person is
 * high) and not the background (a box on the wall is low).
 */
#include "util-image.h"

struct box {
    const char *what;
    int x0, y0, x1, y1;
    int person;
};

static void check_photo(const char *in, const char *profile, int w, int h,
                        const struct box *b, int n)
{
    char dir[64], bin[512], out[128];
    timg_tmpdir(dir, sizeof dir);
    timg_bin(bin, sizeof bin, "vr-worker");
    snprintf(out, sizeof out, "%s/mask.png", dir);
    cr_assert_eq(tsh("%s segment-image --profile %s %s %s", bin, profile, in, out), 0);
    struct timg_mask m = timg_read_mask(out);
    cr_assert(m.w == w && m.h == h, "%s: mask %dx%d, image %dx%d", in, m.w, m.h, w, h);
    for (int i = 0; i < n; i++) {
        double v = timg_mean(&m, b[i].x0, b[i].y0, b[i].x1, b[i].y1);
        if (b[i].person)
            cr_assert_gt(v, 180, "%s: %s: mean mask %.1f", in, b[i].what, v);
        else
            cr_assert_lt(v, 40, "%s: %s: mean mask %.1f", in, b[i].what, v);
    }
    free(m.v);
    tsh("rm -rf %s", dir);
}

Test(seg_people, two_players_not_the_wall, .timeout = 60)
{
    /* tests/data/people.jpg (640x480): the sample deploy/run-sample.sh uses */
    static const struct box b[] = {
        { "left player's torso", 50, 150, 120, 280, 1 },
        { "right player's shirt", 520, 200, 600, 400, 1 },
        { "wall between them", 240, 60, 420, 340, 0 },
    };
    check_photo("tests/data/people.jpg", "balanced", 640, 480, b, 3);
}

Test(seg_people, astronaut_not_the_wall, .timeout = 60)
{
    static const struct box b[] = {
        { "suit", 40, 160, 120, 240, 1 },
        { "face", 95, 40, 135, 80, 1 },
        { "wall", 150, 0, 185, 25, 0 },
    };
    check_photo("tests/data/image/astronaut-256.png", "balanced", 256, 256, b, 3);
}

Test(seg_people, tiles_do_not_erase_a_large_person, .timeout = 60)
{
    /* quality = 3x3 tiles: the lower-left tile sees suit but no head and
     * calls it background; the whole pass's floor must keep the suit. */
    static const struct box b[] = {
        { "suit, lower left", 60, 300, 200, 450, 1 },
        { "face", 190, 80, 270, 160, 1 },
        { "wall", 300, 0, 370, 50, 0 },
    };
    check_photo("tests/data/image/astronaut-512.jpg", "quality", 512, 512, b, 3);
}

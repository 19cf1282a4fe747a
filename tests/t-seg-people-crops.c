/*
 * t-seg-people-crops.c - the people tier's detector inputs of an eye
 * (people_crops_all, shared by both engines): the plain crops first, then
 * people_zoom's, then people_zoom2's, each inside the picture at its
 * zoom's side, never more than people_crops_max (the GPU's batch); split
 * between the eyes (people_zoom_split), one layout an eye.
 */
#include "config.h"
#include "people.h"
#include "pose.h"

#include <criterion/criterion.h>

/* Counts the crops of crop[from..to) whose side is `side`, each checked
 * inside the pw x ph picture. */
static int crops_of_side(const struct frame_rect *crop, int from, int to, int side, int pw,
                         int ph)
{
    int n = 0;
    for (int i = from; i < to; i++) {
        cr_assert(crop[i].x >= 0 && crop[i].y >= 0 && crop[i].x + crop[i].w <= pw
                  && crop[i].y + crop[i].h <= ph, "crop %d (%d,%d %dx%d) outside %dx%d", i,
                  crop[i].x, crop[i].y, crop[i].w, crop[i].h, pw, ph);
        n += crop[i].w == side && crop[i].h == side;
    }
    return n;
}

Test(seg_people_crops, two_zooms_follow_the_plain_crops)
{
    struct vr_config cfg;
    config_defaults(&cfg);
    cfg.people_zoom = 2.0;
    cfg.people_zoom2 = 1.7;
    struct frame_rect crop[PEOPLE_CROPS_ALL];
    int plain = -1;
    const int n = people_crops_all(960, 960, &cfg, 0, 0, crop, &plain);
    cr_assert_eq(plain, 17, "whole + 4 x 4: %d", plain);
    cr_assert_eq(n, 17 + 64 + 64, "%d crops", n);
    cr_assert_eq(n, people_crops_max(&cfg, 0));
    const int s2 = (int)(POSE_DET_SIZE / 2.0 + 0.5), s17 = (int)(POSE_DET_SIZE / 1.7 + 0.5);
    cr_assert_eq(crops_of_side(crop, plain, plain + 64, s2, 960, 960), 64, "zoom 2's crops");
    cr_assert_eq(crops_of_side(crop, plain + 64, n, s17, 960, 960), 64, "zoom 1.7's crops");
}

Test(seg_people_crops, the_second_zoom_alone_and_off)
{
    struct vr_config cfg;
    config_defaults(&cfg);
    struct frame_rect crop[PEOPLE_CROPS_ALL];
    int plain = -1;
    cr_assert_eq(people_crops_all(960, 480, &cfg, 0, 0, crop, &plain), plain, "off: plain only");
    cr_assert_eq(people_crops_max(&cfg, 0), PEOPLE_CROPS);
    cfg.people_zoom2 = 1.7;
    const int n = people_crops_all(480, 480, &cfg, 0, 0, crop, &plain);
    const int s17 = (int)(POSE_DET_SIZE / 1.7 + 0.5);
    /* 132 px crops every 3/4 side over 480 px: 5 a row */
    cr_assert_eq(n - plain, 25, "%d zoomed crops", n - plain);
    cr_assert_eq(crops_of_side(crop, plain, n, s17, 480, 480), 25);
    cr_assert_leq(n, people_crops_max(&cfg, 0));
}

Test(seg_people_crops, split_gives_each_eye_one_zoom)
{
    struct vr_config cfg;
    config_defaults(&cfg);
    cfg.people_zoom = 2.0;
    cfg.people_zoom2 = 1.7;
    cfg.people_zoom_split = 1;
    cfg.stereo_bands = 8;
    cr_assert(people_split(&cfg, 2));
    cr_assert_not(people_split(&cfg, 1), "mono: one eye takes both layouts");
    struct frame_rect crop[PEOPLE_CROPS_ALL];
    const int s2 = (int)(POSE_DET_SIZE / 2.0 + 0.5), s17 = (int)(POSE_DET_SIZE / 1.7 + 0.5);
    for (int e = 0; e < 2; e++) {
        int plain = -1;
        const int n = people_crops_all(960, 960, &cfg, 1, e, crop, &plain);
        cr_assert_eq(n, plain + 64, "eye %d: %d crops", e, n);
        cr_assert_leq(n, people_crops_max(&cfg, 1), "eye %d: over the split's batch", e);
        cr_assert_eq(crops_of_side(crop, plain, n, e == 0 ? s2 : s17, 960, 960), 64,
                     "eye %d: its own zoom's crops", e);
    }
    /* the split needs what carries a find to the other eye, and two layouts */
    cfg.stereo_bands = 0;
    cr_assert_not(people_split(&cfg, 2), "no fusion of the eyes: no split");
    cfg.stereo_bands = 8;
    cfg.people_zoom2 = 0;
    cr_assert_not(people_split(&cfg, 2), "one zoom: no split");
}

/*
 * t-seg-frame-temporal.c - the temporal filter's C twin (frame_temporal.h):
 * hand-computed weights on still and moving pixels, a scene cut emptying
 * the window, the luma sampling rule, the hold (a still pixel keeps its
 * output), and the property chunks rely on: a run that starts its warm-up
 * early gives exactly the whole run's masks.
 */
#include "frame_temporal.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A w x h YUV420P frame whose Y plane is `y` (chroma unused by the filter). */
static struct seg_frame gray_frame(const uint8_t *y, int w, int h)
{
    struct seg_frame f;
    memset(&f, 0, sizeof f);
    f.fmt = SEG_PIX_YUV420P;
    f.w = w;
    f.h = h;
    f.data[0] = y;
    f.linesize[0] = w;
    return f;
}

/* The hold's plane of the tests' filters (at most 24 x 10). */
static uint8_t held[24 * 10];

/* One step of the filter as an engine runs it. */
static void step(const struct temporal_opts *o, struct temporal_state *s, const uint8_t *luma,
                 uint8_t *mask, uint8_t *ring_m, uint8_t *ring_y, uint8_t *ycur)
{
    struct seg_frame f = gray_frame(luma, o->w, o->h);
    frame_temporal_luma_ref(&f, ycur, o->w, o->h);
    uint64_t sad = s->have ? frame_temporal_sad_ref(ycur, ring_y + (size_t)s->head * o->w * o->h,
                                                     o->w, o->h)
                           : 0;
    temporal_cut(o, s, sad);
    temporal_hold_step(s, sad);
    frame_temporal_ref(o, s, mask, o->w, ycur, ring_m, ring_y, held);
    temporal_push(o, s);
}

Test(seg_frame_temporal, still_pixels_average_moving_ones_follow)
{
    struct temporal_opts o;
    temporal_opts_make(&o, 3, 0.5, 4, 0.0, 2, 1);
    struct temporal_state s;
    temporal_reset(&s);
    uint8_t rm[2 * 2], ry[2 * 2], yc[2];
    /* pixel 0 still (luma 100 throughout), pixel 1 moves (100, 150, 200) */
    uint8_t y0[2] = { 100, 100 }, y1[2] = { 100, 150 }, y2[2] = { 102, 200 };
    uint8_t m0[2] = { 0, 0 }, m1[2] = { 200, 200 }, m2[2] = { 100, 100 };
    step(&o, &s, y0, m0, rm, ry, yc);
    cr_assert_eq(m0[0], 0);
    step(&o, &s, y1, m1, rm, ry, yc);
    /* (200 + 0.5*0) / 1.5 = 133.3 -> 133; moving: 200 */
    cr_assert_eq(m1[0], 133);
    cr_assert_eq(m1[1], 200);
    step(&o, &s, y2, m2, rm, ry, yc);
    /* raw masks enter the window: (100 + 0.5*200 + 0.25*0) / 1.75 = 114.3 */
    cr_assert_eq(m2[0], 114);
    cr_assert_eq(m2[1], 100);
    cr_assert_eq(s.have, 2);
}

/* smooth_still_radius: a pixel is still only where its whole
 * neighbourhood is; a neighbour that moved makes it follow its current
 * mask (a walking person's coat over a background of its colour). */
Test(seg_frame_temporal, still_on_a_neighbourhood)
{
    struct temporal_opts o;
    struct temporal_state s;
    uint8_t rm[2 * 3], ry[2 * 3], yc[3];
    /* pixel 2 moves at frame 1; pixels 0 and 1 do not */
    const uint8_t y0[3] = { 100, 100, 100 }, y1[3] = { 101, 100, 150 };
    for (int r = 0; r <= 1; r++) {
        temporal_opts_make(&o, 3, 0.5, 4, 0.0, 3, 1);
        temporal_opts_still_r(&o, r);
        temporal_reset(&s);
        uint8_t m0[3] = { 0, 0, 0 }, m1[3] = { 200, 200, 200 };
        step(&o, &s, y0, m0, rm, ry, yc);
        step(&o, &s, y1, m1, rm, ry, yc);
        /* (200 + 0.5*0) / 1.5 = 133.3 where still; 200 where moving */
        cr_assert_eq(m1[0], 133, "radius %d", r);
        cr_assert_eq(m1[1], r ? 200 : 133, "radius %d: pixel 1 beside the motion", r);
        cr_assert_eq(m1[2], 200, "radius %d", r);
    }
    temporal_opts_still_r(&o, 99);
    cr_assert_eq(o.still_r, TEMPORAL_STILL_R_MAX);
}

Test(seg_frame_temporal, scene_cut_empties_the_window)
{
    struct temporal_opts o;
    temporal_opts_make(&o, 4, 0.9, 255, 30.0, 4, 1); /* every pixel "still": only a cut resets */
    struct temporal_state s;
    temporal_reset(&s);
    uint8_t rm[3 * 4], ry[3 * 4], yc[4];
    uint8_t dark[4] = { 10, 10, 10, 10 }, bright[4] = { 200, 200, 200, 200 };
    uint8_t m[4] = { 255, 255, 255, 255 };
    step(&o, &s, dark, m, rm, ry, yc);
    memset(m, 255, 4);
    step(&o, &s, dark, m, rm, ry, yc);
    cr_assert_eq(s.have, 2);
    uint8_t z[4] = { 0, 0, 0, 0 };
    step(&o, &s, bright, z, rm, ry, yc); /* mean change 190 > 30: a new shot */
    cr_assert_eq(z[0], 0, "the previous shot's matte leaked into the cut frame: %d", z[0]);
    cr_assert_eq(s.have, 1);
    temporal_opts_make(&o, 4, 0.9, 255, 0.0, 4, 1); /* detection off: it leaks */
    temporal_reset(&s);
    memset(m, 255, 4);
    step(&o, &s, dark, m, rm, ry, yc);
    memset(z, 0, 4);
    step(&o, &s, bright, z, rm, ry, yc);
    cr_assert_gt(z[0], 100);
}

Test(seg_frame_temporal, luma_is_the_nearest_sample)
{
    /* 4x2 RGB frame onto a 2x1 mask: samples x = 1 and 3, y = 1 */
    uint8_t rgb[4 * 2 * 3];
    for (int i = 0; i < 24; i++)
        rgb[i] = (uint8_t)(i * 10);
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = 4, .h = 2, .data = { rgb },
                           .linesize = { 12 } };
    uint8_t y[2];
    frame_temporal_luma_ref(&f, y, 2, 1);
    const uint8_t *p = rgb + 12 + 3;
    cr_assert_eq(y[0], (77 * p[0] + 150 * p[1] + 29 * p[2] + 128) >> 8);
    p = rgb + 12 + 9;
    cr_assert_eq(y[1], (77 * p[0] + 150 * p[1] + 29 * p[2] + 128) >> 8);
}

/* The property a chunk relies on: started K-1 frames before its first
 * output frame, from an empty window, the filter gives the whole run's
 * masks from there on (random frames with still stretches and cuts), the
 * stillness tested on the pixel alone and on neighbourhoods. */
Test(seg_frame_temporal, warmup_of_k_minus_1_frames_reproduces_the_whole_run)
{
    enum { W = 24, H = 10, N = 60 };
    srand(7);
    static uint8_t luma[N][W * H], raw[N][W * H], whole[N][W * H];
    for (int t = 0; t < N; t++)
        for (int p = 0; p < W * H; p++) {
            if (t % 17 == 0 || t == 0)
                luma[t][p] = (uint8_t)rand(); /* a cut every 17 frames */
            else
                luma[t][p] = (uint8_t)(luma[t - 1][p] + (rand() % 7) - 3 + (p % 5 == 0 ? 9 : 0));
            raw[t][p] = (uint8_t)rand();
        }
    static const int holds[] = { 0, 12, 255 };
    for (int hi = 0; hi < 3; hi++)
    for (int K = 2; K <= TEMPORAL_MAX_FRAMES; K++) {
        struct temporal_opts o;
        temporal_opts_make(&o, K, 0.8, 5, 20.0, W, H);
        temporal_opts_hold(&o, holds[hi]);
        temporal_opts_still_r(&o, hi); /* the neighbourhood test: radius 0, 1, 2 */
        static uint8_t rm[TEMPORAL_MAX_FRAMES * W * H], ry[TEMPORAL_MAX_FRAMES * W * H];
        uint8_t yc[W * H], m[W * H];
        struct temporal_state s;
        temporal_reset(&s);
        for (int t = 0; t < N; t++) {
            memcpy(whole[t], raw[t], sizeof m);
            step(&o, &s, luma[t], whole[t], rm, ry, yc);
        }
        int warm = temporal_warmup_frames(&o);
        int want = holds[hi] ? (K - 1 + CONFIG_HOLD_SPAN > 2 * CONFIG_HOLD_SPAN + 1
                                    ? K - 1 + CONFIG_HOLD_SPAN : 2 * CONFIG_HOLD_SPAN + 1)
                             : K - 1;
        cr_assert_eq(warm, want);
        for (int start = warm; start < N; start += 3) {
            temporal_reset(&s);
            for (int t = start - warm; t < N; t++) {
                memcpy(m, raw[t], sizeof m);
                step(&o, &s, luma[t], m, rm, ry, yc);
                if (t >= start)
                    cr_assert(memcmp(m, whole[t], sizeof m) == 0,
                              "K %d hold %d, chunk from %d: frame %d differs", K, holds[hi],
                              start, t);
            }
        }
    }
}

/* The hold: on a still picture whose raw matte wobbles by a few levels, a
 * still pixel keeps its output between refreshes (its frame-to-frame
 * change falls), a pixel whose picture moves follows the average at once,
 * and a refresh comes at least every CONFIG_HOLD_SPAN frames. */
Test(seg_frame_temporal, hold_keeps_still_pixels_and_follows_moving_ones)
{
    enum { W = 8, H = 1, N = 40 };
    struct temporal_opts o;
    temporal_opts_make(&o, 4, 0.9, 4, 0.0, W, H);
    static uint8_t rm[3 * W], ry[3 * W];
    uint64_t change[2] = { 0, 0 };
    for (int hold = 0; hold < 2; hold++) {
        temporal_opts_hold(&o, hold ? 16 : 0);
        struct temporal_state s;
        temporal_reset(&s);
        srand(3);
        uint8_t prev[W] = { 0 }, yc[W];
        int since = 0;
        for (int t = 0; t < N; t++) {
            uint8_t y[W], m[W];
            for (int p = 0; p < W; p++) {
                /* pixels 0-5: a still picture with sensor noise of 1 level;
                 * pixel 6-7: the picture moves by 40 levels a frame */
                y[p] = (uint8_t)(p < 6 ? 100 + rand() % 2 : (t * 40) & 0xff);
                m[p] = (uint8_t)(p < 6 ? 120 + rand() % 9 : (t % 2) * 200);
            }
            step(&o, &s, y, m, rm, ry, yc);
            since = s.refresh ? 0 : since + 1;
            cr_assert_lt(since, CONFIG_HOLD_SPAN, "no refresh for %d frames", since);
            if (hold && t > 0) {
                cr_assert_eq(m[6], (t % 2) * 200, "a moving pixel was held at frame %d", t);
                if (!s.refresh)
                    cr_assert_eq(m[0], prev[0], "a still pixel changed without a refresh");
            }
            for (int p = 0; t > 0 && p < 6; p++)
                change[hold] += (uint64_t)abs(m[p] - prev[p]);
            memcpy(prev, m, W);
        }
    }
    cr_assert_lt(change[1] * 2, change[0], "the hold did not halve the still pixels' change "
                 "(%llu with, %llu without)", (unsigned long long)change[1],
                 (unsigned long long)change[0]);
}

Test(seg_frame_temporal, config_history_is_the_window_less_one)
{
    struct vr_config c;
    config_defaults(&c);
    c.smooth = 0.0;
    cr_assert_eq(config_history_frames(&c), 0, "smoothing off needs no history");
    c.smooth = 0.7;
    c.smooth_frames = 5;
    cr_assert_eq(config_history_frames(&c), 4);
    struct temporal_opts o;
    temporal_opts_from_config(&o, &c, 8, 8);
    cr_assert_eq(temporal_warmup_frames(&o), 4);
    c.smooth_hold = 8; /* the hold's refreshes need more: max(K-1+H, 2H+1) */
    cr_assert_eq(config_history_frames(&c), 2 * CONFIG_HOLD_SPAN + 1);
    temporal_opts_from_config(&o, &c, 8, 8);
    cr_assert_eq(temporal_warmup_frames(&o), config_history_frames(&c));
}

/*
 * t-seg-people-window.c - the people tier in time (people_track.h): a
 * person seen in one frame only is not pasted, one missed for a frame is
 * carried and fades out over the window; config_history_frames() covers
 * the tier's window; and, with the real models on a walking crowd (vtest,
 * side by side), a run that starts mid-clip after its warm-up gives the
 * whole run's mattes byte for byte, while one without warm-up does not
 * (the tier carries state, so the equality is not an accident).
 */
#include "util-seg.h"
#include "people_track.h"

#include <criterion/criterion.h>

static struct people_seen one(float cx, float cy, float size)
{
    return (struct people_seen){ .n = 1, .roi = { { cx, cy, size, 0 } } };
}

Test(seg_people_window, one_frame_is_not_pasted_a_miss_is_carried)
{
    struct people_window w;
    people_window_reset(&w);
    const struct people_seen a = one(100, 100, 80), moved = one(106, 100, 80),
                             none = { 0 }, other = one(300, 100, 80);
    struct pose_roi out[PEOPLE_MAX];
    float wt[PEOPLE_MAX];

    /* the first frame is trusted (an image, a video's first frame) */
    cr_assert(people_confirmed(&w, &a.roi[0]));
    people_window_push(&w, &a);
    /* walking a little: the same person, confirmed */
    cr_assert(people_confirmed(&w, &moved.roi[0]));
    cr_assert(!people_confirmed(&w, &other.roi[0]), "a new person needs a second sighting");
    people_window_push(&w, &moved);
    people_window_push(&w, &other); /* seen once */
    /* t: nobody found; the walker (seen twice, last 2 frames ago) is
     * carried at 2/3, the one-frame person is not */
    int n = people_carried(&w, &none, out, wt, PEOPLE_MAX);
    cr_assert_eq(n, 1, "carried %d", n);
    cr_assert_float_eq(out[0].cx, 106, 1e-6, "the newest sighting is carried");
    cr_assert_float_eq(wt[0], 2.0f / 3, 1e-6);
    /* found again at t: nothing to carry */
    cr_assert_eq(people_carried(&w, &moved, out, wt, PEOPLE_MAX), 0);
    /* missed a second frame: the walker is 3 frames back and seen once in
     * the window now (a left it): no longer carried; nor is anything
     * kept from outside the window */
    people_window_push(&w, &none);
    cr_assert_eq(people_carried(&w, &none, out, wt, PEOPLE_MAX), 0, "a sighting out of the "
                 "window counted");
    /* a person seen in the last frame and 3 frames back, missed now:
     * carried from the last frame at full weight */
    people_window_push(&w, &other);
    n = people_carried(&w, &none, out, wt, PEOPLE_MAX);
    cr_assert_eq(n, 1);
    cr_assert_float_eq(wt[0], 1.0f, 1e-6, "a missed frame is bridged whole");
    people_window_push(&w, &none);
    people_window_push(&w, &none);
    people_window_push(&w, &none);
    cr_assert_eq(people_carried(&w, &none, out, wt, PEOPLE_MAX), 0, "left the window");
    cr_assert(!people_confirmed(&w, &a.roi[0]));
}

Test(seg_people_window, history_covers_the_window)
{
    struct vr_config c = tseg_cfg("{\"smooth\": 0}");
    cr_assert_eq(config_history_frames(&c), 0);
    c = tseg_cfg("{\"smooth\": 0, \"people\": \"pose\"}");
    cr_assert_eq(config_history_frames(&c), CONFIG_PEOPLE_WINDOW - 1);
    struct vr_config off = tseg_cfg(NULL), on = tseg_cfg("{\"people\": \"pose\"}");
    cr_assert_eq(config_history_frames(&on),
                 config_history_frames(&off) + CONFIG_PEOPLE_WINDOW - 1,
                 "the filter's oldest raw matte needs its own people window");
}

#define FW 1920 /* docs/QUALITY.md's made clip (bench/quality-made.sh) */
#define EH 960
#define NF 7 /* 2 frames only the whole run sees, a warm-up (3), 2 compared */

/* The first NF frames of the made clip as RGB24. */
static uint8_t *frames(void)
{
    char dir[64], clip[128], raw[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(clip, sizeof clip, "%s/made.mkv", dir);
    snprintf(raw, sizeof raw, "%s/made.rgb", dir);
    cr_assert_eq(tsh("sh bench/quality-made.sh tests/data %s", clip), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -frames:v %d -pix_fmt rgb24 -f rawvideo %s",
                     clip, NF, raw), 0);
    const size_t sz = (size_t)FW * EH * 3 * NF;
    uint8_t *v = malloc(sz);
    FILE *f = fopen(raw, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(v, 1, sz, f), sz);
    fclose(f);
    tsh("rm -rf %s", dir);
    return v;
}

/* Mattes of frames from..NF-1 into m[from..], the first `out` of them
 * not kept (a chunk's warm-up: it starts at from, outputs from out). */
static void run(const struct vr_config *c, const uint8_t *v, int from, uint8_t *m)
{
    struct seg *s = NULL;
    vr_err e = { 0 };
    struct seg_opts o = { .backend = SEG_CPU, .cfg = c, .layout = SEG_LAYOUT_SBS, .in_w = FW,
                          .in_h = EH, .max_batch = 1 };
    cr_assert_eq(seg_create(&o, &s, &e), 0, "%s", e.msg);
    for (int t = from; t < NF; t++) {
        struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = FW, .h = EH,
                               .data = { v + (size_t)t * FW * EH * 3 },
                               .linesize = { FW * 3 } };
        struct seg_mask sm = { .data = m + (size_t)t * FW * EH, .w = FW, .h = EH,
                               .linesize = FW };
        cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, &e), 0, "%s", e.msg);
    }
    seg_free(&s);
}

/* Frames from t0 on where a and b differ. */
static int differing(const uint8_t *a, const uint8_t *b, int t0)
{
    int d = 0;
    for (int t = t0; t < NF; t++)
        d += memcmp(a + (size_t)t * FW * EH, b + (size_t)t * FW * EH, (size_t)FW * EH) != 0;
    return d;
}

Test(seg_people_window, chunk_from_mid_clip_equals_the_whole_run, .timeout = 600)
{
    uint8_t *v = frames();
    const size_t all = (size_t)FW * EH * NF;
    uint8_t *whole = calloc(all, 1), *chunk = calloc(all, 1);
    /* the tier alone carries state (no temporal filter): warm-up W-1 */
    struct vr_config c = tseg_cfg("{\"people\": \"pose\", \"smooth\": 0, \"tile_cols\": 0, "
                                  "\"tile_rows\": 0}");
    const int warm = config_history_frames(&c), t0 = NF - 2;
    cr_assert_eq(warm, CONFIG_PEOPLE_WINDOW - 1);
    run(&c, v, 0, whole);
    run(&c, v, t0 - warm, chunk);
    cr_assert_eq(differing(whole, chunk, t0), 0, "a chunk warmed up by %d frames differs",
                 warm);
    run(&c, v, t0, chunk);
    cr_assert_gt(differing(whole, chunk, t0), 0, "without warm-up the chunk equals the whole "
                 "run: the clip does not exercise the tier's window");
    free(whole);
    free(chunk);
    free(v);
}

Test(seg_people_window, a_still_persons_roi_is_the_window_mean)
{
    struct people_window w;
    people_window_reset(&w);
    const struct people_seen f[3] = { one(100, 100, 80), one(104, 98, 84), one(96, 102, 76) };
    for (int i = 0; i < 3; i++)
        people_window_push(&w, &f[i]);
    const struct people_seen now = one(100, 104, 80), far = one(400, 100, 80);
    struct pose_roi r;
    people_smoothed(&w, &now.roi[0], &r);
    cr_assert_float_eq(r.cx, 100, 1e-4);
    cr_assert_float_eq(r.cy, 101, 1e-4, "the detector's jitter averaged out");
    cr_assert_float_eq(r.size, 80, 1e-4);
    cr_assert_float_eq(r.angle, 0, 1e-6);
    people_smoothed(&w, &far.roi[0], &r);
    cr_assert_float_eq(r.cx, 400, 1e-6, "another person is not averaged in");
}

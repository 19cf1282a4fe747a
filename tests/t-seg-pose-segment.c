/*
 * t-seg-pose-segment.c - a person's ROI through the landmark model
 * (kernels/seg/pose.h, pose_segment.c): the ROI rule and the paste-back
 * on cases worked out by hand, then the whole chain (detect, ROI, 256x256
 * segmentation on the CPU engine, paste) on tests/data/people.jpg, where
 * the left player must be covered head to feet (boxes measured by hand on
 * the photo) and the wall must not.
 */
#include "pose.h"
#include "pose_frame.h"
#include "vio_image.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

Test(seg_pose_segment, roi_is_upright_and_two_and_a_half_radii)
{
    struct pose_person p = { .score = 1 };
    p.kp[0][0] = 100; p.kp[0][1] = 200; /* mid-hip */
    p.kp[1][0] = 100; p.kp[1][1] = 100; /* straight above: upright */
    struct pose_roi r;
    pose_roi_from_person(&p, &r);
    cr_assert(r.cx == 100 && r.cy == 200);
    cr_assert_float_eq(r.size, 250.0f, 1e-4);
    cr_assert_float_eq(r.angle, 0.0f, 1e-6);
    p.kp[1][0] = 200; p.kp[1][1] = 200; /* lying, head to the right: a quarter turn */
    pose_roi_from_person(&p, &r);
    cr_assert_float_eq(r.angle, (float)M_PI / 2, 1e-6);
}

Test(seg_pose_segment, paste_covers_the_turned_square_only)
{
    static float ones[POSE_SEG_SIZE * POSE_SEG_SIZE];
    for (int i = 0; i < POSE_SEG_SIZE * POSE_SEG_SIZE; i++)
        ones[i] = 1.0f;
    float mask[100 * 100] = { 0 };
    struct pose_roi r = { 50, 50, 20, 0 };
    pose_paste_ref(&r, ones, 1.0f, 100, 100, mask);
    cr_assert_float_eq(mask[50 * 100 + 40], 1.0f, 1e-6); /* x 40..59 inside */
    cr_assert_float_eq(mask[50 * 100 + 59], 1.0f, 1e-6);
    cr_assert_eq(mask[50 * 100 + 39], 0.0f);
    cr_assert_eq(mask[50 * 100 + 60], 0.0f);
    /* turned 45 degrees: a diamond of half-diagonal 14.1; its axis point
     * (50, 62) is in, the square's old corner (58, 58) out */
    float m2[100 * 100] = { 0 };
    r.angle = (float)M_PI / 4;
    pose_paste_ref(&r, ones, 1.0f, 100, 100, m2);
    cr_assert_float_eq(m2[62 * 100 + 50], 1.0f, 1e-6);
    cr_assert_eq(m2[58 * 100 + 58], 0.0f);
}

static double mean(const float *m, int w, int x0, int y0, int x1, int y1)
{
    double s = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            s += m[(size_t)y * w + x];
    return s / ((double)(x1 - x0) * (y1 - y0));
}

Test(seg_pose_segment, left_player_head_to_feet, .timeout = 180)
{
    struct vio_image *img = NULL;
    struct pose_detector *d = NULL;
    struct pose_segmenter *s = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read("tests/data/people.jpg", &img, &e), 0, "%s", e.msg);
    cr_assert_eq(pose_detector_create("models/pose_detection.tflite", &d, &e), 0, "%s", e.msg);
    cr_assert_eq(pose_segmenter_create("models/pose_landmark_lite.tflite", &s, &e), 0, "%s",
                 e.msg);
    struct pose_person p[4];
    int n = 0;
    cr_assert_eq(pose_detect(d, img->data, img->w, img->h, img->linesize, p, 4, &n, &e), 0,
                 "%s", e.msg);
    cr_assert_geq(n, 1);
    struct pose_roi r;
    pose_roi_from_person(&p[0], &r);
    float *roi = malloc(sizeof(float) * POSE_SEG_SIZE * POSE_SEG_SIZE);
    float *mask = calloc((size_t)img->w * img->h, sizeof *mask);
    float presence = 0;
    cr_assert(roi && mask);
    cr_assert_eq(pose_segment(s, img->data, img->w, img->h, img->linesize, &r, roi, &presence,
                              &e), 0, "%s", e.msg);
    cr_assert_gt(presence, 0.9f);
    pose_paste_ref(&r, roi, 1.0f, img->w, img->h, mask);
    /* measured on the photo (640x480) */
    const double torso = mean(mask, img->w, 50, 150, 120, 280);
    const double left_leg = mean(mask, img->w, 50, 340, 75, 440);
    const double right_leg = mean(mask, img->w, 105, 340, 125, 440);
    const double head = mean(mask, img->w, 65, 90, 100, 130);
    const double wall = mean(mask, img->w, 240, 60, 420, 340);
    cr_assert_gt(torso, 0.9, "torso %.3f", torso);
    cr_assert_gt(left_leg, 0.8, "left leg %.3f", left_leg);
    cr_assert_gt(right_leg, 0.8, "right leg %.3f", right_leg);
    cr_assert_gt(head, 0.8, "head %.3f", head);
    cr_assert_lt(wall, 0.02, "wall %.3f", wall);
    free(roi);
    free(mask);
    pose_segmenter_free(&s);
    pose_detector_free(&d);
    vio_image_free(&img);
}

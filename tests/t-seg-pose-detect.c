/*
 * t-seg-pose-detect.c - the pose tier's person detector (kernels/seg/pose.h):
 * MediaPipe's SSD anchor layout, the decoding and the weighted suppression
 * on cases worked out by hand, then the real model on the CPU engine over
 * tests/data/people.jpg, where the left player's hips, shoulders and face
 * (measured by hand on the photo) must be where the detector puts them.
 */
#include "pose.h"
#include "vio_image.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

Test(seg_pose_detect, anchors_follow_mediapipe_layout)
{
    static float a[POSE_ANCHORS][2];
    pose_anchors(a);
    /* stride 8: 28x28 cells, 2 anchors each, x fastest */
    cr_assert_float_eq(a[0][0], 0.5f / 28, 1e-7);
    cr_assert_float_eq(a[1][0], 0.5f / 28, 1e-7);
    cr_assert_float_eq(a[2][0], 1.5f / 28, 1e-7);
    cr_assert_float_eq(a[56][1], 1.5f / 28, 1e-7); /* second row */
    /* stride 16 from 1568: 14x14x2 */
    cr_assert_float_eq(a[1568][0], 0.5f / 14, 1e-7);
    cr_assert_float_eq(a[1567][0], 27.5f / 28, 1e-7);
    /* strides 32 x3 share a 7x7 map from 1960: 6 anchors a cell */
    for (int k = 1960; k < 1966; k++)
        cr_assert_float_eq(a[k][0], 0.5f / 7, 1e-7);
    cr_assert_float_eq(a[1966][0], 1.5f / 7, 1e-7);
    cr_assert_float_eq(a[POSE_ANCHORS - 1][0], 6.5f / 7, 1e-7);
    cr_assert_float_eq(a[POSE_ANCHORS - 1][1], 6.5f / 7, 1e-7);
}

Test(seg_pose_detect, decode_offsets_are_pixels_of_224)
{
    static float reg[POSE_ANCHORS * POSE_COORDS], logit[POSE_ANCHORS];
    for (int i = 0; i < POSE_ANCHORS; i++)
        logit[i] = -5.0f; /* 0.0067: dropped */
    logit[2] = 0.0f;     /* 0.5: kept (>=) */
    logit[1960] = 300.0f; /* clipped to 100 */
    float *r = reg + 2 * POSE_COORDS;
    r[0] = 22.4f;  /* +0.1 */
    r[1] = -11.2f; /* -0.05 */
    r[2] = 44.8f;  /* w 0.2 */
    r[3] = 22.4f;  /* h 0.1 */
    r[4] = 0.0f;
    r[5] = 224.0f; /* keypoint 0: one whole input below the anchor */
    struct pose_person p[4];
    int n = pose_decode(reg, logit, 0.5f, p, 4);
    cr_assert_eq(n, 2);
    cr_assert_float_eq(p[0].score, 0.5f, 1e-7);
    const float ax = 1.5f / 28, ay = 0.5f / 28;
    cr_assert_float_eq(p[0].x0, ax + 0.1f - 0.1f, 1e-6);
    cr_assert_float_eq(p[0].x1, ax + 0.1f + 0.1f, 1e-6);
    cr_assert_float_eq(p[0].y0, ay - 0.05f - 0.05f, 1e-6);
    cr_assert_float_eq(p[0].y1, ay - 0.05f + 0.05f, 1e-6);
    cr_assert_float_eq(p[0].kp[0][0], ax, 1e-6);
    cr_assert_float_eq(p[0].kp[0][1], ay + 1.0f, 1e-6);
    cr_assert_float_eq(p[1].score, 1.0f, 1e-6);
    cr_assert_float_eq(p[1].kp[3][0], 0.5f / 7, 1e-6);
}

static struct pose_person box(float score, float x0, float y0, float x1, float y1)
{
    struct pose_person p = { .score = score, .x0 = x0, .y0 = y0, .x1 = x1, .y1 = y1 };
    p.kp[0][0] = x0;
    p.kp[0][1] = y1;
    return p;
}

Test(seg_pose_detect, weighted_nms_merges_overlaps)
{
    struct pose_person p[3] = {
        box(0.6f, 0.1f, 0.1f, 0.3f, 0.3f),  /* IoU with the next: 0.36/0.44 = 0.82 */
        box(0.9f, 0.1f, 0.1f, 0.3f, 0.34f),
        box(0.7f, 0.6f, 0.6f, 0.8f, 0.8f),  /* apart */
    };
    int n = pose_nms(p, 3, 0.3f);
    cr_assert_eq(n, 2);
    cr_assert_float_eq(p[0].score, 0.9f, 1e-7);
    /* y1: (0.9 * 0.34 + 0.6 * 0.3) / 1.5 = 0.324 */
    cr_assert_float_eq(p[0].y1, 0.324f, 1e-6);
    cr_assert_float_eq(p[0].x0, 0.1f, 1e-6);
    cr_assert_float_eq(p[0].kp[0][1], 0.324f, 1e-6);
    cr_assert_float_eq(p[1].score, 0.7f, 1e-7);
    cr_assert_float_eq(p[1].x0, 0.6f, 1e-7);
}

static int inside(const float pt[2], float x0, float y0, float x1, float y1)
{
    return pt[0] >= x0 && pt[0] <= x1 && pt[1] >= y0 && pt[1] <= y1;
}

Test(seg_pose_detect, finds_the_left_player, .timeout = 120)
{
    struct vio_image *img = NULL;
    struct pose_detector *d = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read("tests/data/people.jpg", &img, &e), 0, "%s", e.msg);
    cr_assert_eq(pose_detector_create("models/pose_detection.tflite", &d, &e), 0, "%s", e.msg);
    struct pose_person p[8];
    int n = 0;
    cr_assert_eq(pose_detect(d, img->data, img->w, img->h, img->linesize, p, 8, &n, &e), 0,
                 "%s", e.msg);
    /* The left player faces the camera; the right one turns away, half out
     * of the frame (no face: BlazePose's detector keys on it). */
    cr_assert_geq(n, 1);
    cr_assert_gt(p[0].score, 0.8f);
    /* measured on the photo (640x480): hips at about (75, 250), shoulders
     * (75, 150), face (70..110, 85..135) */
    cr_assert(inside(p[0].kp[0], 50, 225, 100, 280), "mid-hip at (%.0f, %.0f)",
              p[0].kp[0][0], p[0].kp[0][1]);
    cr_assert(inside(p[0].kp[2], 50, 125, 100, 175), "mid-shoulder at (%.0f, %.0f)",
              p[0].kp[2][0], p[0].kp[2][1]);
    const float face[2] = { 90, 110 };
    cr_assert(inside(face, p[0].x0, p[0].y0, p[0].x1, p[0].y1),
              "box %.0f,%.0f-%.0f,%.0f misses the face", p[0].x0, p[0].y0, p[0].x1, p[0].y1);
    /* the body's radius point is above the head: the ROI holds the whole player */
    const float r = hypotf(p[0].kp[1][0] - p[0].kp[0][0], p[0].kp[1][1] - p[0].kp[0][1]);
    cr_assert(r > 130 && r < 230, "body radius %.0f", r);
    for (int i = 1; i < n; i++) /* any other person is elsewhere */
        cr_assert(!inside(p[i].kp[0], 50, 225, 100, 280));
    pose_detector_free(&d);
    vio_image_free(&img);
}

/*
 * pose.h - the pose tier's person detector (issue 39, "people far away"):
 * MediaPipe Pose's pose_detection.tflite run on the CPU engine (net.h),
 * its SSD anchors decoded as MediaPipe's pose_detection graph does
 * (SsdAnchorsCalculator, TensorsToDetectionsCalculator, weighted
 * non-maximum suppression, letterbox removal).
 *
 * What exists: detection (pose_detector_*) and the decoding it rests on
 * (pose_anchors, pose_decode, pose_nms); each person's ROI segmented at
 * 256x256 by pose_landmark_lite.tflite (pose_segment.c) and pasted back
 * (pose_frame.h: the pixel steps, C and CUDA twins).
 * The engine fuses the pasted masks with the selfie mask when the config
 * says `people: "pose"` (people.h, CPU engine). The GPU engine runs both
 * models too (net_cuda.h: netcu_create_outputs, equal to the CPU's:
 * g_net_pose); the CUDA backend's tier (people.cu) runs them there,
 * with this file's decoding (pose_detections) and the pixel steps'
 * CUDA twins.
 */
#ifndef VR_POSE_H
#define VR_POSE_H

#include "vr_err.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POSE_DET_SIZE    224   /* the detector's input, square */
#define POSE_ANCHORS     2254  /* its anchors: 28x28x2 + 14x14x2 + 7x7x6 */
#define POSE_COORDS      12    /* box (cx, cy, w, h) + 4 keypoints (x, y) */
#define POSE_MAX_PEOPLE  64

/* One person. Coordinates are in the detector's square input normalised
 * to [0,1] from pose_decode/pose_nms, and in image pixels from
 * pose_detect. Keypoints, as MediaPipe names them: 0 mid-hip centre, 1 a
 * point whose distance from 0 is the full body's radius (the landmark ROI is
 * a square of 2.5 times that, centred on 0), 2 mid-shoulder centre, 3 the
 * upper body's radius point. */
struct pose_person {
    float score;                /* sigmoid of the classifier, 0..1 */
    float x0, y0, x1, y1;       /* the detector's box */
    float kp[4][2];
};

/* Anchor centres (x, y) in [0,1] of pose_detection's SSD anchors, in the
 * model's output order (fixed size: width = height = 1). */
void pose_anchors(float centers[POSE_ANCHORS][2]);

/* Decodes the model's raw outputs (regressors [POSE_ANCHORS][12] and
 * logits [POSE_ANCHORS]) into people whose score is at least min_score
 * (MediaPipe: 0.5), before suppression; writes at most `max`, returns the
 * count written. */
int pose_decode(const float *regressors, const float *logits, float min_score,
                struct pose_person *out, int max);

/* MediaPipe's weighted non-maximum suppression (IoU > 0.3 merges): sorts
 * by score, and each kept person is the score-weighted mean of the ones it
 * overlaps. In place; returns the count kept. */
int pose_nms(struct pose_person *p, int n, float iou_threshold);

struct pose_detector;

/* Loads the detector model (models/pose_detection.tflite). */
int pose_detector_create(const char *model_path, struct pose_detector **out, vr_err *err);

/* Finds people in an RGB24 picture (w x h, `linesize` bytes a row): the
 * picture is letterboxed into the 224x224 input (black borders, [-1,1]),
 * the net run, the outputs decoded and suppressed, and the coordinates
 * mapped back to the picture's pixels. Writes at most `max` people, most
 * likely first, and their count to *n. */
int pose_detect(struct pose_detector *d, const uint8_t *rgb, int w, int h, int linesize,
                struct pose_person *out, int max, int *n, vr_err *err);

/* pose_detect's last half, for a detector run elsewhere (the CUDA
 * backend, people.cu): the model's outputs of a w x h picture
 * letterboxed as pose_letterbox_ref does, decoded (score >= 0.5),
 * suppressed and mapped back to the picture's pixels. cand: scratch of
 * POSE_ANCHORS people. Writes at most `max` to out; returns the count. */
int pose_detections(const float *regressors, const float *logits, int w, int h,
                    struct pose_person *cand, struct pose_person *out, int max);

/* Frees and clears *d; accepts NULL. */
void pose_detector_free(struct pose_detector **d);

/* ---- a person's ROI through the landmark model (pose_segment.c) ---- */

#define POSE_SEG_SIZE 256  /* pose_landmark_*'s input and mask, square */
#define POSE_SEG_OUTPUTS      5  /* its graph outputs */
#define POSE_SEG_OUT_PRESENCE 1  /* [1,1], already a sigmoid */
#define POSE_SEG_OUT_MASK     2  /* [1,256,256,1] segmentation logits */

/* A person's region of interest in picture pixels: a square of side
 * `size` centred on (cx, cy), turned by `angle` radians (clockwise on the
 * picture, y down) so the body stands upright in it. */
struct pose_roi {
    float cx, cy, size, angle;
};

/* MediaPipe's pose_detection_to_roi: centre on keypoint 0 (mid-hip), side
 * 2.5 times the distance to keypoint 1, turned so keypoint 1 is straight
 * above the centre. `p` in picture pixels (pose_detect's). */
void pose_roi_from_person(const struct pose_person *p, struct pose_roi *roi);

struct pose_segmenter;

/* Loads the landmark model (models/pose_landmark_lite.tflite). */
int pose_segmenter_create(const char *model_path, struct pose_segmenter **out, vr_err *err);

/* Samples the ROI from the RGB24 picture into the model's 256x256 input
 * ([0,1], black outside the picture), runs the model on the CPU engine and
 * writes the person's mask (sigmoid of the segmentation logits, 0..1) to
 * roi_mask [256][256] and the person-presence score to *presence. */
int pose_segment(struct pose_segmenter *s, const uint8_t *rgb, int w, int h, int linesize,
                 const struct pose_roi *roi, float *roi_mask, float *presence, vr_err *err);

/* The mask goes back into a picture with pose_paste_ref (pose_frame.h). */

/* Frees and clears *s; accepts NULL. */
void pose_segmenter_free(struct pose_segmenter **s);

#ifdef __cplusplus
}
#endif

#endif

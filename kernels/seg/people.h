/*
 * people.h - the people tier of the matte (issue 39, "people far away";
 * config `people: "pose"`): MediaPipe Pose's detector (pose.h) finds the
 * people of an eye, on the whole eye and on people_grid x people_grid
 * overlapping crops of it (a far person is a few pixels of the whole eye's
 * 224x224 input), the detections of all crops merged (weighted NMS); each
 * person's ROI is segmented at 256x256 by pose_landmark_lite and pasted
 * into the eye's work mask with a max, where the model says a person is
 * present. The whole-frame pass stays the prior: the tier only adds
 * people, it never removes what the selfie models found.
 *
 * CPU engine (seg_backend_ref.c) only for now: the CUDA net runs the pose
 * models, but not yet equal to the CPU engine (g_net_pose), the tier is
 * not wired to it, and the CUDA backend refuses the option.
 */
#ifndef VR_PEOPLE_H
#define VR_PEOPLE_H

#include "config.h"
#include "frame_ref.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PEOPLE_MAX       16   /* people segmented per eye (most likely first) */
#define PEOPLE_PRESENCE  0.5f /* the landmark model's presence under which an ROI is dropped */

struct people;

/* Loads models/pose_detection.tflite and models/pose_landmark_lite.tflite
 * (found with vr_data_path) and sizes the eye picture for eyes of at most
 * eye_w x eye_h frame pixels (long side cfg->people_size at most). */
int people_create(const struct vr_config *cfg, int eye_w, int eye_h, struct people **out,
                  vr_err *err);

/* One eye of one frame: finds its people and lifts the eye's work mask
 * work [wh][ww] (0..1) to each pasted ROI mask (max). *found, when not
 * NULL, gets the count of people pasted. */
int people_eye(struct people *p, const struct seg_frame *f, struct frame_rect eye,
               float *work, int ww, int wh, int *found, vr_err *err);

/* Frees and clears *p; accepts NULL. */
void people_free(struct people **p);

#ifdef __cplusplus
}
#endif

#endif

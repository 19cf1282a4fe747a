/*
 * people.h - the people tier of the matte (issue 39, "people far away";
 * config `people: "pose"`): MediaPipe Pose's detector (pose.h) finds the
 * people of an eye, on the whole eye and on people_grid x people_grid
 * overlapping crops of it (a far person is a few pixels of the whole eye's
 * 224x224 input), the detections of all crops merged (weighted NMS); each
 * person's ROI is segmented at 256x256 by pose_landmark_lite and pasted
 * into the eye's work mask with a max, where the model says a person is
 * present. The whole-frame pass stays the prior: the tier only adds
 * people, it never removes what the selfie models found. A person is
 * pasted once seen in two frames of a short window, and carried over a
 * missed frame (people_track.h), so the tier does not flicker. In a
 * stereo frame the zoomed crop layouts may be split between the eyes
 * (people_zoom_split): the eyes' fusion after the tier carries each eye's
 * finds to the other.
 *
 * Both engines: the CPU engine's (seg_backend_ref.c) is people_ref.c; the
 * CUDA backend's (seg_backend.cu) is people.cu (people_cuda.h), the same
 * steps with the pixel steps and nets on the GPU (g_seg_people_cuda).
 */
#ifndef VR_PEOPLE_H
#define VR_PEOPLE_H

#include "config.h"
#include "frame_ref.h"
#include "people_track.h"
#include "pose.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PEOPLE_PRESENCE  0.5f /* the landmark model's presence under which an ROI is dropped */
/* The largest ROI side the tier segments, as a fraction of the eye
 * picture's long side. The tier is for the people the selfie models miss,
 * far and small; a person whose ROI is half the eye is near, and the whole
 * pass and tiles have them. The detector's ROIs above it on the sample and
 * made clips were false (0.6-2.2 times the eye, presence up to 0.99: a
 * huge pasted blob that flickered at 8K); the true ones were 0.12-0.5. */
#define PEOPLE_ROI_MAX   0.5f

struct people;

/* Loads models/pose_detection.tflite and models/pose_landmark_lite.tflite
 * (found with vr_data_path) and sizes the eye picture for eyes of at most
 * eye_w x eye_h frame pixels (long side cfg->people_size at most); n_eyes:
 * the frame's eyes (1 or 2: people_zoom_split). */
int people_create(const struct vr_config *cfg, int eye_w, int eye_h, int n_eyes,
                  struct people **out, vr_err *err);

#define PEOPLE_EYES 2           /* a window of past frames per eye */

/* Eye e (0..PEOPLE_EYES-1) of one frame, frames in order: finds its
 * people and lifts the eye's work mask work [wh][ww] (0..1) to each pasted
 * ROI mask (max), confirmed and carried by the eye's window of past frames
 * (people_track.h). *found, when not NULL, gets the count of people
 * pasted. */
int people_eye(struct people *p, int e, const struct seg_frame *f, struct frame_rect eye,
               float *work, int ww, int wh, int *found, vr_err *err);

/* Empties the windows of past frames (seg_reset(): a new video). */
void people_reset(struct people *p);

/* Frees and clears *p; accepts NULL. */
void people_free(struct people **p);

/* ---- the steps both engines share (people_ref.c; the CUDA backend's tier,
 * people.cu, runs the same steps around its own kernels) ---- */

#define PEOPLE_CROPS 17         /* detector inputs an eye at most: whole + 4x4 */
/* Zoomed crops (config `people_zoom`): the detector keys on faces, and a
 * far person's face is 6-8 px at the 4x4 grid's scale; a crop smaller than
 * the detector's input, zoomed into it, finds them (docs/QUALITY.md, "Far
 * people"). At most 8 x 8 of them an eye. */
#define PEOPLE_ZOOM_CROPS 64
/* plain + people_zoom's + people_zoom2's */
#define PEOPLE_CROPS_ALL  (PEOPLE_CROPS + 2 * PEOPLE_ZOOM_CROPS)
/* A zoomed crop's person is kept when its ROI is no larger than this times
 * the crop's side: on made the true far people were 0.7-1.2, the zoomed
 * crops' false ROIs (presence up to 0.99) 2.8 and more. */
#define PEOPLE_ZOOM_ROI   1.6f

/* The eye picture's largest size for eyes of eye_w x eye_h (long side
 * cfg->people_size at most), and its size for the eye `eye`. */
void people_pic_max(const struct vr_config *cfg, int eye_w, int eye_h, int *pw_max,
                    int *ph_max);
void people_pic_size(int pw_max, int ph_max, struct frame_rect eye, int *pw, int *ph);

/* The detector's inputs on a pw x ph eye picture: the whole picture, then
 * grid x grid crops (each 1.5 cells, so a person on a cell border is
 * whole in one; none when smaller than the detector's input), in picture
 * pixels; crop holds PEOPLE_CROPS; returns the count (grid <= 4). */
int people_crops(int pw, int ph, int grid, struct frame_rect *crop);

/* The zoomed crops on a pw x ph eye picture: squares of side
 * POSE_DET_SIZE / zoom over the whole picture, neighbours overlapping by a
 * quarter of the side (at most 8 a row and column: past that they spread,
 * so zoom 2 on a 960 px picture, 112 px crops every 121 px, leaves 9 px
 * gaps, a person there half in each); crop holds
 * PEOPLE_ZOOM_CROPS. None when zoom <= 1 (off) or the side does not fit. */
int people_zoom_crops(int pw, int ph, double zoom, struct frame_rect *crop);

/* Every detector input of an eye: people_crops' then the zoomed ones of
 * cfg->people_zoom, then of cfg->people_zoom2; crop holds
 * PEOPLE_CROPS_ALL; *n_plain gets the count of people_crops' (the first
 * ones). Returns the count. `split` (people_split's answer for the
 * frame's eyes) and eye e: the eye takes one zoomed layout, people_zoom's
 * for eye 0 and people_zoom2's for eye 1. */
int people_crops_all(int pw, int ph, const struct vr_config *cfg, int split, int e,
                     struct frame_rect *crop, int *n_plain);

/* 1 when the eyes of a frame of n_eyes share the zoomed layouts
 * (people_zoom_split): two eyes, both zooms on and the eyes fused
 * (stereo_bands), which carries a person one eye's layout finds to the
 * other eye. On made the two layouts find different far people; one each
 * costs ~45% fewer detector inputs for ~0.25 points of holes
 * (docs/QUALITY.md, "Zoomed layouts split between the eyes"). */
int people_split(const struct vr_config *cfg, int n_eyes);

/* The detector inputs an eye has at most under cfg, its layouts split
 * between the eyes or not (people_split): its batch on the GPU. */
int people_crops_max(const struct vr_config *cfg, int split);

/* The k people c[0..k-1] that the detector found in `crop`, made the
 * picture's: a zoomed crop's first filtered in place (only those whose ROI
 * is at most PEOPLE_ZOOM_ROI times the crop's side stay: the rest are the
 * zoom's false finds), then moved to the picture's pixels. Returns the
 * count kept. Both engines' tiers use it. */
int people_crop_found(struct pose_person *c, int k, const struct frame_rect *crop, int zoomed);

/* A person's ROI (picture pixels) into *r; 0 when the tier leaves it: a
 * few pixels, or over PEOPLE_ROI_MAX of the picture. */
int people_roi_of(const struct pose_person *c, int pw, int ph, struct pose_roi *r);

/* An ROI from picture pixels to work-mask pixels (sx, sy: work px a
 * picture px). */
void people_roi_to_work(struct pose_roi *r, float sx, float sy);

#ifdef __cplusplus
}
#endif

#endif

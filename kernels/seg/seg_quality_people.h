/*
 * seg_quality_people.h - "people found", the matte measure of issue 39
 * that asks an independent judge: MediaPipe Pose's person detector
 * (pose.h) finds the people of each eye, and a person counts as found
 * when at least QUALITY_PEOPLE_COVER of their body's axis is person
 * (>= 128) in the matte. The axis runs from the detector's box centre (the
 * neck: the box is the head and shoulders, about 3 faces wide) to its
 * mid-hip keypoint; every point of it lies on the person whatever they
 * wear or do, where half of the box is background by construction.
 *
 * The people are found once a clip (they do not depend on the profile) on
 * the eye's picture at up to QUALITY_PEOPLE_SIDE pixels a side, whole and
 * in grid x grid crops (people_crops: a far face is a few pixels of the
 * whole eye's 224x224 input), merged by weighted NMS; a find is kept when
 * it stands up (mid-hip below the neck, the axis at most two boxes long)
 * and is not a person already kept, found at another scale.
 */
#ifndef VR_SEG_QUALITY_PEOPLE_H
#define VR_SEG_QUALITY_PEOPLE_H

#include "pose.h"
#include "seg_quality.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QUALITY_PEOPLE_COVER 0.8   /* of a person's axis, the share that must be person */
#define QUALITY_PEOPLE_STEPS 16    /* the axis is sampled at STEPS + 1 points */
#define QUALITY_PEOPLE_SIDE  1024  /* the detector's eye picture, long side at most */
#define QUALITY_PEOPLE_MAX   32    /* people an eye at most */

/* The people of an RGB24 eye picture (w x h, rows `ls` bytes): the
 * detector on the whole picture and on grid x grid crops (grid 0 or 1:
 * the whole only; at most 4), merged and filtered as above. Writes at
 * most `max` to out (picture pixels) and their count to *n. */
int quality_people_find(struct pose_detector *d, const uint8_t *rgb, int w, int h, int ls,
                        int grid, struct pose_person *out, int max, int *n, vr_err *err);

/* A person's axis in the detector's coordinates: (ax, ay) the box centre,
 * (bx, by) the mid-hip keypoint. */
void quality_person_axis(const struct pose_person *p, float *ax, float *ay, float *bx,
                         float *by);

/* Of the QUALITY_PEOPLE_STEPS + 1 points from (ax, ay) to (bx, by) (matte
 * pixels) that fall inside the matte's w x h (rows `ls` bytes), the share
 * whose matte is >= 128; -1 when none falls inside. */
double quality_axis_cover(const uint8_t *m, int w, int h, int ls, float ax, float ay, float bx,
                          float by);

/* Adds the n people p[] (in the eye's matte pixels) to c: den += the
 * people whose axis is in the eye, num += those whose axis is at least
 * QUALITY_PEOPLE_COVER person in the eye's matte (w x h, rows `ls`
 * bytes). found[i], when not NULL, gets each one's verdict (1 found, 0
 * missed, -1 outside). */
void quality_people_cover(const struct pose_person *p, int n, const uint8_t *m, int w, int h,
                          int ls, struct quality_count *c, int *found);

#ifdef __cplusplus
}
#endif

#endif

/*
 * people_track.h - the people tier's memory of the last frames (issue 39,
 * "stable in time without ghosts"; people.h).
 *
 * Without it a person the detector finds in one frame and not the next is
 * pasted whole and then dropped: at 8K the tier made still areas flicker
 * 20x more. The rule, per eye, over a window of CONFIG_PEOPLE_WINDOW
 * frames (t and the W-1 before it):
 *   seen(t)   the ROIs the detector found at t whose own mask said a person
 *             is present (presence >= PEOPLE_PRESENCE): a function of frame
 *             t alone; the window keeps seen() of the last W-1 frames;
 *   confirmed a person of seen(t) is pasted at full weight when an ROI of
 *             seen(t-1..t-W+1) overlaps it (IoU >= PEOPLE_TRACK_IOU), or
 *             when t is the first frame (an image, a video's first frame);
 *             a one-frame detection is not pasted; it is segmented at
 *             its ROI averaged with its overlaps in the window, so its
 *             mask does not jitter with the detector;
 *   carried   an ROI of seen(t-j) (j >= 1, the newest of its overlaps) that
 *             nothing of seen(t) overlaps, and that was itself seen twice
 *             in the window (or in the stream's first frame), is segmented
 *             again on frame t's picture and pasted, if its presence on t
 *             holds, at weight (W - j) / (W - 1): a missed frame is bridged,
 *             a person who left fades out over the window. The mask comes
 *             from frame t's picture, never from an old one, so a walking
 *             person leaves no trail.
 * The window holds only seen(), each a function of its own frame, so frame
 * t's tier depends on frames t-W+1..t alone: a chunk whose warm-up covers
 * W-1 frames (config_history_frames()) gives one process's matte.
 */
#ifndef VR_PEOPLE_TRACK_H
#define VR_PEOPLE_TRACK_H

#include "config.h"
#include "pose.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PEOPLE_MAX        16    /* people segmented per eye (most likely first) */
#define PEOPLE_TRACK_IOU  0.3f  /* two ROIs of one person in two frames overlap this much */

/* The people of one frame (ROIs in the eye picture's pixels). */
struct people_seen {
    int n;
    struct pose_roi roi[PEOPLE_MAX];
};

/* seen() of the last CONFIG_PEOPLE_WINDOW - 1 frames of one eye. */
struct people_window {
    struct people_seen f[CONFIG_PEOPLE_WINDOW - 1];
    int have;                   /* frames held, 0..W-1 (0: the next is the first) */
    int head;                   /* slot of the newest */
};

/* Empties the window (a new video, seg_reset()). */
void people_window_reset(struct people_window *w);

/* Records seen(t) after frame t. */
void people_window_push(struct people_window *w, const struct people_seen *now);

/* IoU of two ROIs' squares (their turn ignored). */
float people_roi_iou(const struct pose_roi *a, const struct pose_roi *b);

/* 1 when ROI r of frame t is pasted at full weight (the rule above). */
int people_confirmed(const struct people_window *w, const struct pose_roi *r);

/* The ROI a confirmed person of frame t is segmented at: r averaged with
 * the ROI of each frame of the window that overlaps it most (centre, size
 * and turn), so a still person's ROI does not jitter with the detector
 * from frame to frame (a jittering ROI moves the pasted mask's edges). */
void people_smoothed(const struct people_window *w, const struct pose_roi *r,
                     struct pose_roi *out);

/* The ROIs carried into frame t (the rule above), given seen(t) as `now`
 * before its confirmation: at most `max`, with their weights; returns the
 * count. */
int people_carried(const struct people_window *w, const struct people_seen *now,
                   struct pose_roi *out, float *weight, int max);

#ifdef __cplusplus
}
#endif

#endif

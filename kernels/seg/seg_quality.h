/*
 * seg_quality.h - measures of a matte that need no ground truth (issue 39):
 * what a user sees as wrong in a matte, counted on 8-bit masks and the
 * picture's luma. `vrbench-video quality` prints them per profile and
 * tests/t-seg-quality.c holds the bundled sample to thresholds with them.
 *
 *  - holes: of the pixels a reference matte is sure are person (>= 230,
 *    eroded), the fraction the matte puts below 128;
 *  - false positives: of the pixels the reference is sure are background
 *    (<= 25, eroded), the fraction the matte puts above 128;
 *  - stereo agreement: IoU of one eye's matte against the other's, shifted
 *    by the disparity estimated on the luma of each group of matted
 *    columns of a row band;
 *  - flicker: in still areas (luma moved at most a few levels nearby), the mean
 *    change of the matte against the mean change of the picture;
 *  - tile-border energy: the matte's mean step across the planned tile
 *    borders against its mean step across the lines parallel to them 4 to
 *    16 pixels away (1 = no rectangle shows; the same people and edges lie
 *    near the border, so a person is not taken for a seam).
 *
 * The reference is another profile's matte (`fast`: blocky but solid) or,
 * where a clip has one, its truth: a matte known by construction
 * (bench/quality-made.sh pastes people.jpg's person mask where it pastes
 * the photo), against which holes and false positives mean what they say.
 *
 * Plain C on caller-owned planes (w x h, rows of w bytes unless a linesize
 * is given); nothing is kept between calls. Sums are returned as counts so
 * that a caller can add frames up before dividing.
 */
#ifndef VR_SEG_QUALITY_H
#define VR_SEG_QUALITY_H

#include "seg.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QUALITY_SURE_FG   230 /* the reference is sure of a person at or above */
#define QUALITY_SURE_BG   25  /* and sure of background at or below */
#define QUALITY_ERODE     2   /* erosion radius of those regions, pixels */
#define QUALITY_STILL     3   /* luma levels a still pixel moves at most */
#define QUALITY_STILL_R   4   /* ... and so do its neighbours this near */

/* A ratio kept as its parts, to sum over frames. */
struct quality_count {
    double num, den;
};

static inline double quality_ratio(struct quality_count c, double if_empty)
{
    return c.den > 0 ? c.num / c.den : if_empty;
}

/* Holes (fg = 1) or false positives (fg = 0) of `m` against the reference
 * `ref`: den += the sure pixels of ref (>= QUALITY_SURE_FG, or <=
 * QUALITY_SURE_BG, whose whole (2*QUALITY_ERODE+1)^2 window clipped to the
 * plane is sure too), num += those where m is < 128 (fg) or > 128 (bg).
 * scratch: w*h bytes. */
void quality_sure(const uint8_t *ref, const uint8_t *m, int w, int h, int fg,
                  uint8_t *scratch, struct quality_count *c);

/* Stereo agreement of an eye pair: the eyes' rows split into `bands`; in
 * each band the columns where either eye's matte is >= 128 fall into
 * groups (gaps under dmax / 4 joined), each group's disparity is estimated on
 * the luma over its own columns (the shift d in [-dmax, dmax] with the
 * smallest mean |L(x) - R(x - d)|), and num += |L & R'|, den += |L | R'|
 * over the group's columns, L and R' the left matte and the right matte
 * shifted by d, >= 128. A group is a person or people side by side, so
 * each is compared at its own depth: one shift a band, estimated on the
 * whole row, was the background's, and the made clip's own truth read
 * 0.970 against it (0.995 by groups). Planes eye-sized, rows `ls` bytes
 * apart (the eyes of one side-by-side plane share its linesize). */
void quality_stereo(const uint8_t *ml, const uint8_t *mr, const uint8_t *yl,
                    const uint8_t *yr, int w, int h, int ls, int bands, int dmax,
                    struct quality_count *c);

/* Flicker between two frames: over the still pixels (no pixel within
 * QUALITY_STILL_R of them moved more than QUALITY_STILL luma levels: the
 * inside of a moving person of even colour is not still), mask->num +=
 * |m1 - m0|, pic->num += |y1 - y0|, both den += the still pixels.
 * scratch: w*h bytes. */
void quality_flicker(const uint8_t *m0, const uint8_t *m1, const uint8_t *y0,
                     const uint8_t *y1, int w, int h, uint8_t *scratch,
                     struct quality_count *mask, struct quality_count *pic);

/* Tile-border energy of an eye's matte (w x h, rows `ls` bytes apart):
 * on->num += |m(x) - m(x-1)| at the columns x in xs[] and |m(y) - m(y-1)|
 * at the rows y in ys[] (each border's step, along its whole length), on->den
 * += the steps taken; near->num/den the same at the columns and rows 4, 8,
 * 12 and 16 pixels to either side of each border (those inside the eye). */
void quality_borders(const uint8_t *m, int w, int h, int ls, const int *xs, int nx,
                     const int *ys, int ny, struct quality_count *on,
                     struct quality_count *near);

/* ---- a clip, frame by frame ---- */

/* The measures of one profile summed over a clip. */
struct quality_sums {
    struct quality_count holes, fp, stereo, flicker, picture, border, near;
    int frames;
};

#define QUALITY_MAX_BORDERS 64 /* per axis and eye */

/* Interior tile borders of one eye of `s`'s plan in the mask's pixels
 * (relative to the eye's rect in the mask): xs[] columns, ys[] rows, at most
 * QUALITY_MAX_BORDERS each; none for a plan without a grid. */
void quality_seg_borders(const struct seg *s, int eye, int *xs, int *nx, int *ys, int *ny);

/* The tile-border step of matte `m` (rows of w) across `s`'s planned
 * borders, every eye, into q->border and q->near (quality_borders). */
void quality_add_borders(struct quality_sums *q, const struct seg *s, const uint8_t *m, int w);

/* Adds one side-by-side frame: `m` the matte, `ref` the reference profile's
 * matte of the same frame, `y` the picture's luma (all w x h, rows of w),
 * prev_m/prev_y the previous frame's (NULL for the first: no flicker);
 * `s` the engine that made `m` (its tile borders). scratch: w*h bytes. */
void quality_add_frame(struct quality_sums *q, const struct seg *s, const uint8_t *ref,
                       const uint8_t *m, const uint8_t *y, const uint8_t *prev_m,
                       const uint8_t *prev_y, int w, int h, uint8_t *scratch);

/* ---- against a truth ---- */

/* `src` (sw x sh, rows `ls` bytes apart) box-averaged to w x h into `out`
 * (rows of w): each output pixel is the rounded mean of the source pixels
 * its area covers, at least one (so it also enlarges, as nearest). Used to
 * bring a truth matte, or the luma, to the matte's size. */
void quality_plane_at(const uint8_t *src, int ls, int sw, int sh, uint8_t *out, int w, int h);

#ifdef __cplusplus
}
#endif

#endif

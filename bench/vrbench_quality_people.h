/*
 * vrbench_quality_people.h - `vrbench-video quality`'s people found
 * (kernels/seg/seg_quality_people.h): the detector's people of every frame
 * and eye of the clip, found once, then each profile's matte held against
 * them, and the boxes drawn on the contact sheet.
 */
#ifndef VRBENCH_QUALITY_PEOPLE_H
#define VRBENCH_QUALITY_PEOPLE_H

#include "seg_quality_people.h"

#include <libavutil/frame.h>

struct vio_image;

/* The people of one side-by-side frame's two eyes, in the matte's pixels
 * (each eye's own: x from the eye's left edge). */
struct qpeople {
    struct pose_person p[2][QUALITY_PEOPLE_MAX];
    int n[2];
};

/* Finds the people of frame f's eyes (detector d, grid x grid crops),
 * their boxes scaled to a matte of mw x mh. */
int qpeople_find(struct pose_detector *d, const AVFrame *f, int grid, int mw, int mh,
                 struct qpeople *out, vr_err *err);

/* The people of the clip's n frames f[] (models/pose_detection.tflite,
 * found with vr_data_path), into *out (n of them; free() it). */
int qpeople_clip(AVFrame *const *f, int n, int grid, int mw, int mh, struct qpeople **out,
                 vr_err *err);

/* Adds the matte m (mw x mh, rows of mw) against the frame's people to
 * c[eye]; found[eye][i] gets each verdict when found is not NULL. */
void qpeople_cover(const struct qpeople *q, const uint8_t *m, int mw, int mh,
                   struct quality_count c[2], int found[2][QUALITY_PEOPLE_MAX]);

/* Draws the people's axes (what was measured) on a sheet cell (cw x ch at
 * column `cell`, row `row`, showing a matte mw wide): green where found,
 * red where missed. */
void qpeople_draw(struct vio_image *img, int row, int cell, int cw, int ch, int mw,
                  const struct qpeople *q, int found[2][QUALITY_PEOPLE_MAX]);

#endif

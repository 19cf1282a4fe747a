/*
 * vio_corners.h - whether every eye of a frame leaves its corners black, as
 * around a fisheye circle: where `--output alpha-packed` writes its matte
 * (worker/output_alpha.c). An equirectangular or flat eye has picture
 * there, which the matte would cover. The worker asks it of the first
 * frame it encodes; vrctl submit and run ask it of the source's first
 * frame, so such a job is refused before it is queued.
 */
#ifndef VR_VIO_CORNERS_H
#define VR_VIO_CORNERS_H

#include "vr_err.h"

#include <libavutil/frame.h>

/* Fraction of an eye's width and height the packed matte is scaled to
 * (the layout public DeoVR passthrough reconstructions read). */
#define VIO_ALPHA_SCALE 0.4

/* Why a source is refused for alpha-packed: its layout's name, then its
 * path, last, so a long one is what a full message cuts. */
#define VIO_CORNERS_REFUSAL                                                                     \
    "--output alpha-packed writes the matte into the corners of each eye, and this %s "      \
    "source's corners hold picture (not fisheye): --output mask keeps the picture; "           \
    "--alpha-area corners packs the matte there anyway (%s)"

/* The ex x ey eyes of ew x eh each tile the frame `f` (8-bit luma in
 * data[0]); the matte of an eye is qw x qh and is cut into quadrants, one
 * per corner. 1 when those corners are black outside each eye's inscribed
 * circle, 0 when they hold picture. */
int vio_corners_dark(const AVFrame *f, int ex, int ey, int ew, int eh, int qw, int qh);

/* The first frame of `path`, laid out as `layout` (enum vio_layout;
 * VIO_LAYOUT_AUTO: the rule the controller applies), with the sizes
 * alpha-packed gives a frame of its size: 1 dark, 0 picture (*layout_out
 * the layout checked), <0 when the frame could not be read (err says why). */
int vio_first_frame_corners_dark(const char *path, int layout, int *layout_out, vr_err *err);

#endif

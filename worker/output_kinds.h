/*
 * output_kinds.h - what the pipeline encodes from a frame and its matte:
 *
 *   mask          the matte as a grayscale video (Y = matte, full range,
 *                 neutral chroma) at cfg.output_scale of the input size;
 *   alpha-packed  the colour frame with each eye's matte, scaled to 40 % of
 *                 the eye and cut into quadrants, written as gray into the
 *                 four corners of that eye outside the fisheye circle
 *                 (DeoVR-style passthrough; docs/notes/pipeline.md);
 *   greenscreen   the colour frame composited over pure green by the matte.
 *
 * An output_plan fixes the sizes once; compose functions then fill an
 * encoder frame (YUV 4:2:0, 8-bit) per input frame with no allocation.
 */
#ifndef VR_OUTPUT_KINDS_H
#define VR_OUTPUT_KINDS_H

#include "config.h"
#include "pipeline.h"
#include "seg.h"
#include "vio_corners.h"
#include "vr_err.h"

#include <libavutil/frame.h>
#include <stdint.h>

/* Fraction of an eye's width and height the packed matte is scaled to
 * (vio_corners.h: vrctl checks the same corners at submit). */
#define OUTPUT_ALPHA_SCALE VIO_ALPHA_SCALE

struct output_plan {
    enum pipe_output kind;
    enum seg_layout layout;
    int in_w, in_h;       /* decoded frame */
    int mask_w, mask_h;   /* the matte seg_run must produce (whole frame, all eyes) */
    int enc_w, enc_h;     /* encoded frame */
    int full_range;       /* encoded frames are full range (mask) */
    int needs_colour;     /* compose reads the colour frame on the host */
};

/* Fills *p for the given output kind; sizes are even (4:2:0). Returns 0 or
 * VR_EINVAL when the frame is too small for the kind. */
int output_plan_make(enum pipe_output kind, enum seg_layout layout, int in_w, int in_h,
                     const struct vr_config *cfg, struct output_plan *p, vr_err *err);

/* "mask", "alpha-packed", "greenscreen" <-> enum; parse returns -1. */
int output_kind_parse(const char *s);
const char *output_kind_name(enum pipe_output k);

/* Writes the encoder frame `dst` (YUV420P, enc_w x enc_h, writable) from
 * the matte (mask_w x mask_h, row stride mask_ls) and, when needs_colour,
 * the colour frame `src` (YUV420P, in_w x in_h). Borrowed pointers only. */
void output_compose(const struct output_plan *p, const AVFrame *src, const uint8_t *mask,
                    int mask_ls, AVFrame *dst);

/* 1 when the corners of every eye of `src` (YUV420P, in_w x in_h) that
 * alpha-packed writes are black, as around a fisheye circle; 0 when they
 * hold picture (equirectangular, flat), which the matte would cover. */
int output_alpha_corners_dark(const struct output_plan *p, const AVFrame *src);

/* the three kinds (output_mask.c, output_alpha.c, output_greenscreen.c) */
void output_mask_compose(const struct output_plan *p, const uint8_t *mask, int mask_ls,
                         AVFrame *dst);
void output_alpha_compose(const struct output_plan *p, const AVFrame *src, const uint8_t *mask,
                          int mask_ls, AVFrame *dst);
void output_greenscreen_compose(const struct output_plan *p, const AVFrame *src,
                                const uint8_t *mask, int mask_ls, AVFrame *dst);

#endif

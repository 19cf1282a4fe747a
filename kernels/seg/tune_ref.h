/*
 * tune_ref.h - the auto-tuner's plain-C half (tune_ref.c), which tune.cu's
 * timing half calls: the candidates' frame, the CPU engine's reference
 * mask, a candidate's distance from it, and the pick. No CUDA; built in
 * every build.
 */
#ifndef VR_TUNE_REF_H
#define VR_TUNE_REF_H

#include "seg.h"
#include "tune.h"
#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills rgb (w x h RGB24, caller-owned) with `img` stretched (nearest)
 * into every eye of the layout, or, with img NULL, a synthetic scene (a
 * lit background with texture and noise, and person-sized bright and dark
 * blobs), the same every call. */
void tune_frame_make(uint8_t *rgb, int w, int h, enum seg_layout layout,
                     const struct tune_image *img);

/* NV12 (BT.709 limited range, chroma averaged over 2x2) of an RGB24 frame;
 * y is w*h bytes, uv w*(h/2) (even w, h), both caller-owned. */
void tune_frame_nv12(const uint8_t *rgb, int w, int h, uint8_t *y, uint8_t *uv);

/* The CPU engine's mask of host frame hf with options o (its backend
 * ignored: SEG_CPU), into mask (o->out_w x o->out_h bytes, caller-owned). */
int tune_ref_mask(const struct seg_opts *o, const struct seg_frame *hf, uint8_t *mask,
                  vr_err *err);

/* The largest |mask - ref| over n bytes, in [0,1] units. */
double tune_mask_diff(const uint8_t *mask, const uint8_t *ref, size_t n);

/* Sets r->best to the fastest row per frame whose mask stayed within
 * TUNE_MAX_ABS and stores it as r->choice under r->key_str in
 * r->cache_path; an error naming the bound when no row did. */
int tune_pick(struct tune_report *r, vr_err *err);

#ifdef __cplusplus
}
#endif

#endif

/*
 * seg_impl.h - what the two backends of the segmentation engine (seg.h)
 * share: the struct seg layout, the backend function table and the common
 * set-up (options checked, config copied, model loaded, tiles planned).
 * Only kernels/seg/seg*.c and kernels/seg/seg_backend.cu include it; seg_common.c has
 * the shared set-up and teardown.
 *
 * A backend's create function allocates a struct seg (calloc), calls
 * seg_common_init(), then sets `ops` and its own `priv`. seg_free() calls
 * ops->destroy (which frees priv only), then seg_common_release() and frees
 * the struct, so a backend never frees what seg_common_init() made.
 */
#ifndef VR_SEG_IMPL_H
#define VR_SEG_IMPL_H

#include "config.h"
#include "model.h"
#include "seg.h"
#include "seg_backend.h" /* the backends' constructors, which it serves */
#include "tiles.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SEG_MAX_DIM   16384 /* per side; an 8K VR frame is 8192 x 4096 */
#define SEG_MAX_BATCH 64    /* frames per seg_run() (= FRAME_CU_MAX_FRAMES) */

struct seg_backend_ops {
    const char *name;   /* "cpu" / "cuda", for messages */
    /* seg_run() after the common argument checks (n in 1..max_batch, frame
     * sizes and formats as created, masks of the output size). */
    int (*run)(struct seg *s, const struct seg_frame *frames, int n,
               struct seg_mask *masks, struct seg_timing *timing, vr_err *err);
    /* Forget the temporal state. */
    void (*reset)(struct seg *s);
    /* Free `priv` and what hangs off it; may be called on a half-built
     * backend (priv NULL or partly filled). */
    void (*destroy)(struct seg *s);
};

struct seg {
    const struct seg_backend_ops *ops; /* NULL until the backend is set up */
    struct seg_opts opts;              /* as given, with out_w/out_h filled */
    struct vr_config cfg;              /* copy; opts.cfg points at it */
    struct model *model;               /* loaded from config_model_file(&cfg) */
    struct model *fuse;                /* cfg.fuse_model's, run on each whole eye; or NULL */
    struct tile_plan plan;             /* per eye: tiles and work mask size */
    int refine_guided;                 /* cfg.refine == "guided" */
    void *priv;                        /* the backend's buffers */
};

/* Whether eye te's tiles are bounded by its whole pass (frame_gate_ref):
 * tile_gate is on and the eye has a grid under its whole pass (the last
 * tile, a FRAME_TILE_FLOOR). */
static inline int seg_gated(const struct seg *s, const struct tile_eye *te)
{
    return s->cfg.tile_gate > 0 && te->n > 1
           && (te->dst[te->n - 1].edges & FRAME_TILE_FLOOR);
}

/* Whether the eyes' masks are fused with each other (frame_stereo.h):
 * stereo_bands is on and the frame has two eyes of one work size. */
static inline int seg_stereo(const struct seg *s)
{
    const struct tile_plan *p = &s->plan;
    return s->cfg.stereo_bands > 0 && p->n_eyes == 2 && p->eye[0].work_w == p->eye[1].work_w
           && p->eye[0].work_h == p->eye[1].work_h;
}

/* Whether the refined eyes are fused again (frame_stereo.h, "the refined
 * eyes"): the eyes are fused, the refinement is guided (bilinear edges of
 * fused masks already agree) and both eyes have one output size. */
static inline int seg_stereo_refined(const struct seg *s)
{
    const struct tile_plan *p = &s->plan;
    return seg_stereo(s) && s->refine_guided && p->eye[0].out.w == p->eye[1].out.w
           && p->eye[0].out.h == p->eye[1].out.h;
}

/* Checks the options, copies the config, loads the model (config_model_file:
 * models/<cfg.model>.tflite, or the command line's file) and plans the tiles into `s` (zeroed by the caller).
 * On failure what it made stays in `s` for seg_common_release(). */
int seg_common_init(struct seg *s, const struct seg_opts *o, vr_err *err);

/* Frees what seg_common_init() made; accepts a half-initialised `s`. */
void seg_common_release(struct seg *s);

#ifdef __cplusplus
}
#endif

#endif

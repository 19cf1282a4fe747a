/*
 * pipeline_warm.h - a worker's warm engine: the segmentation engine kept
 * from one pipeline_run() to the next when the next run needs the same one
 * (same backend, GPU, profile values, layout and geometry), so that a chunk
 * does not pay again for loading the model, uploading the weights and
 * capturing the CUDA graphs. `vr-worker serve` keeps one per process.
 */
#ifndef VR_PIPELINE_WARM_H
#define VR_PIPELINE_WARM_H

#include "config.h"
#include "seg.h"
#include "vr_err.h"

struct pipe_warm {
    struct seg *seg;          /* owned; NULL when cold */
    struct seg_opts so;       /* what seg was made for (so.cfg -> cfg) */
    struct vr_config cfg;
    long long reused, built;  /* counts, for logs and tests */
};

/* Sets *seg to an engine for `so`: the warm one after seg_reset() (no
 * temporal state crosses runs) when it was made for the same options, else
 * a new one, which replaces it. The engine stays owned by `w`: callers never
 * free it. Returns 0 or the VR_E* code of seg_create() (w is cold then). */
int pipe_warm_get(struct pipe_warm *w, const struct seg_opts *so, struct seg **seg, vr_err *err);

/* Frees the engine and leaves `w` cold (a failed run calls this, so that a
 * GPU in a bad state never carries over); accepts NULL. */
void pipe_warm_drop(struct pipe_warm *w);

#endif

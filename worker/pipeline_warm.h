/*
 * pipeline_warm.h - what a worker keeps from one pipeline_run() to the
 * next. The segmentation engine, when the next run needs the same one (same
 * backend, GPU, profile values, layout and geometry), so that a chunk does
 * not pay again for loading the model, uploading the weights and capturing
 * the CUDA graphs. And the input of a chunk read in place, when the next
 * chunk is a range of the same file: its demuxer and decoder (NVDEC's
 * included), which took 2 s to open with 8 chunks starting on a GPU and 7 s
 * with 32 on a host. `vr-worker serve` keeps one of each per process, and
 * keeps the decoder while the streams it gets fit it, however long it
 * waits between jobs: it is released on a stream it does not fit (a new one
 * replaces it) and when the worker stops (pipe_warm_release). Its cost on
 * the GPU while kept: docs/notes/pipeline.md, "The kept decoder".
 */
#ifndef VR_PIPELINE_WARM_H
#define VR_PIPELINE_WARM_H

#include "config.h"
#include "seg.h"
#include "vr_err.h"

#include <sys/types.h>

struct vio_in;
struct vio_in_opts;

/* A file as the kernel names it: what a kept input must still be. */
struct pipe_file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns;
};

struct pipe_warm {
    struct seg *seg;          /* owned; NULL when cold */
    struct seg_opts so;       /* what seg was made for (so.cfg -> cfg) */
    struct vr_config cfg;
    long long reused, built;  /* counts, for logs and tests */
    long long dec_new, dec_kept; /* inputs opened with a new decoder / a kept one */
    struct vio_in *in;        /* owned: the last chunk's input, or NULL */
    int in_warmed;            /* `in` is a warm-up's (pipeline_warm_up), no chunk's */
    struct pipe_file_id in_id;
};

/* Sets *seg to an engine for `so`: the warm one after seg_reset() (no
 * temporal state crosses runs) when it was made for the same options, else
 * a new one, which replaces it. The engine stays owned by `w`: callers never
 * free it. Returns 0 or the VR_E* code of seg_create() (w is cold then). */
int pipe_warm_get(struct pipe_warm *w, const struct seg_opts *so, struct seg **seg, vr_err *err);

/* Frees the engine and the kept input and leaves `w` cold (a failed run
 * calls this, so that a GPU in a bad state never carries over); accepts
 * NULL. */
void pipe_warm_drop(struct pipe_warm *w);

/* Opens the input `o` asks for (vio_in_open), from the kept one when it
 * reads the same file (device, inode, size, mtime) with the same decoding
 * and `o` names a range (vio_in_retarget); for another file, the kept
 * input's decoder when the streams are alike (vio_in_open_from). A kept
 * input that does not fit or fails to retarget is freed and a fresh one
 * opened, so keeping never changes an answer or an error. `w` may be NULL.
 * Returns 1 (the kept input, retargeted), 2 (a new input, the kept
 * decoder), 3 (a new input, the decoder a warm-up made), 0 (all new) or
 * VR_E* as vio_in_open. */
int pipe_warm_open_input(struct pipe_warm *w, const struct vio_in_opts *o, struct vio_in **in,
                         vr_err *err);

/* A worker that stops: frees the engine and the kept input, and says so
 * in one line naming the decoder given back ("worker <who>: kept decoder
 * released (hevc 8192x4096, NVDEC)"), so its end is seen; accepts NULL. */
void pipe_warm_release(struct pipe_warm *w, const char *who);

/* A worker idle for a moment: the kept input's file is closed (a source
 * deleted meanwhile is not held) and its decoder kept for the next job's
 * first chunk, if its stream is alike, however long the wait; accepts
 * NULL. */
void pipe_warm_idle(struct pipe_warm *w);

/* Keeps *in, the input of a run that succeeded on a range of `path`, for
 * the next run, and clears *in; frees it when it cannot be kept (no `w`,
 * the file gone). */
void pipe_warm_keep_input(struct pipe_warm *w, const char *path, struct vio_in **in);

/* Keeps *in, a warm-up's input whose decoder has decoded a frame (file
 * closed), as the donor of the next run's decoder, and clears *in. */
void pipe_warm_keep_warmed(struct pipe_warm *w, struct vio_in **in);

#endif

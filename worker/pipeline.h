/*
 * pipeline.h - one video through decode -> segment -> encode on one GPU (or
 * the CPU), stages joined by bounded queues so they overlap. `vr-worker
 * process` runs it on a whole file and `vr-worker serve` on each chunk.
 */
#ifndef VR_PIPELINE_H
#define VR_PIPELINE_H

#include "config.h"
#include "metrics.h"
#include "pipeline_warm.h"
#include "seg.h"
#include "vr_err.h"

struct chunk_range;

enum pipe_output { PIPE_OUT_MASK = 0, PIPE_OUT_ALPHA_PACKED, PIPE_OUT_GREENSCREEN };

struct pipe_opts {
    enum seg_backend backend;
    int gpu;                   /* device index for SEG_CUDA */
    struct vr_config cfg;      /* profile + overrides */
    int layout;                /* enum seg_layout, or -1 = auto (metadata, else aspect) */
    enum pipe_output output;
    int alpha_corners;         /* alpha-packed: pack into the eyes' corners even where
                                * they hold picture; 0: refuse such a source (VR_ENOTSUP) */
    const char *trace_path;    /* Chrome trace JSON, or NULL */
    volatile int *cancel;      /* set non-zero to stop early (VR_ECANCELED), or NULL */
    struct pipe_warm *warm;    /* engine kept across runs (serve), or NULL: own engine */
    int64_t preroll_until_ms;  /* a chunk's pre-roll (remux.h): frames before it are
                                * references only; 0 = none */
    int64_t warmup_from_ms;    /* pre-roll frames from here on are segmented but not
                                * output (the temporal filter's warm-up) */
    int encode_threads;        /* CPU encoder threads; 0 = auto: one per core, or for a
                                * picture output sharing the host with others, see
                                * PICTURE_THREADS_PER_SHARE in pipeline.c */
    int host_encoders;         /* encoders sharing this host's cores (serve --host-slots);
                                * 0 or 1: this one alone */
    const struct chunk_range *range; /* read only this range of `in` (a chunk read in place,
                                * remux_range.h; its pre-roll replaces the two above), or
                                * NULL: the whole file */
    const char *ts_path;       /* where the output's exact source timestamps go (remux_ts.h),
                                * durable before `out` is renamed into place; NULL: none */
    long long *frames_live;    /* frames encoded so far, stored (atomically) by the encoder
                                * as it goes: a chunk's progress for the heartbeat; NULL */
    int fail_on_decode_error;  /* --on-decode-error fail: a damaged packet fails the run;
                                * 0: concealed, counted in metrics.concealed */
    int matte_via_host;        /* tests and benches: download the matte and encode it from
                                * host memory even where the encoder takes it on the GPU */
};

/* Processes `in` into `out`. The output is written to a temporary name in
 * out's directory and renamed on success, so `out` is either complete or
 * absent. `m` (may be NULL) receives the per-stage histograms and counts.
 * Returns 0 or a VR_E* code; err names file, stream and position. */
int pipeline_run(const struct pipe_opts *o, const char *in, const char *out,
                 struct metrics *m, vr_err *err);

/* The decoding a run asks of its input `in` (open_all's): a warm-up opens
 * its input with the same, so that its decoder serves the run. */
struct vio_in_opts;
void pipeline_input_opts(const struct pipe_opts *o, const char *in, struct vio_in_opts *io);

/* Frames a segmentation call takes: the profile's batch, bounded. */
int pipeline_batch(const struct pipe_opts *o);

/* Whether NVENC is worth trying on GPU `gpu` (nvenc_host.h), asked once per
 * process and logged: the first encoder open pays it (6-7 s with 12
 * processes creating contexts at once), so a warm-up asks first. */
int pipeline_nvenc_probe(int gpu);

/* The format of an open input's video stream, "codec:WxH:pix_fmt" (the
 * coded pixel format, e.g. "hevc:8192x4096:yuv420p"), into buf (size n):
 * what a warm-up is asked for and what a worker remembers for its host. */
struct vio_in;
void pipeline_format(const struct vio_in *in, char *buf, size_t n);

/* Warms `o->warm` (must not be NULL) before the first chunk: opens `in` as
 * a run would (pipeline_input_opts), decodes its first frame (NVDEC
 * creates its decoder at the first picture, not at open) and keeps the
 * input, file closed, as the next run's decoder donor; builds the engine
 * for `o` and the stream (mask output, layout guessed from `name`, the
 * source's own name); asks the NVENC probe. The format it found goes into
 * fmt (pipeline_format); when `want` is given and
 * differs, nothing is kept and 0 returned with err saying so. took_ms
 * (or NULL) gets the ms of its parts: the decoder (open and first frame),
 * the engine (the CUDA context's join included), the NVENC probe. Returns
 * 1 warmed, 0 not (err says why) or VR_E*. */
int pipeline_warm_up(const struct pipe_opts *o, const char *in, const char *name,
                     const char *want, char *fmt, size_t nf, double took_ms[3], vr_err *err);

#endif

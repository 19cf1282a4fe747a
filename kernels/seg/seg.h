/*
 * seg.h - the segmentation engine for whole frames: any-size frame in, 8-bit
 * mask out, with the VR layout handled, each eye tiled, the network batched,
 * tiles blended, the eye mask refined to the output size with an edge-aware
 * filter guided by the full-resolution image, and smoothed over time.
 *
 *   frame ──per eye──▶ tile plan (grid of overlapping model-size tiles +
 *   one whole-eye pass) ──preprocess (colour convert + resize + [0,1])──▶
 *   network (batched) ──[tiles bounded by the whole pass, tile_gate]──▶
 *   blend (feathered weights) into the eye's work-size mask ──[a second
 *   model's whole-eye pass fused, fuse_model; close/open, morph]──▶
 *   [each person the Pose detector finds pasted in, people; CPU only:
 *   people.h]──▶ [each eye fused with the other warped by their disparity,
 *   stereo_bands] ──▶ guided upsample to the output size ──temporal
 *   smoothing──▶ mask
 *
 * Backends: SEG_CPU runs the C twins (net/ and seg/: the *_ref.c files); SEG_CUDA runs
 * the CUDA kernels with frames and masks in device memory, so decoded NVDEC
 * frames never leave the GPU. Both give the same mask within tolerance.
 *
 * seg/ is the engine's room: this API (seg.c, seg_backend_ref.c, seg_backend.cu), the
 * tile plan (tiles.h), the frame kernels (frame_ref.h, frame_cuda.h), the
 * eyes' fusion (frame_stereo.h), the temporal filter (frame_temporal.h) and the auto-tuner (tune.h, its cache
 * tune_cache.c). Twin rule, as in net/ (net.h): every CUDA kernel file X.cu
 * has its C twin X_ref.c beside it; tests/check-twins.sh names the
 * exceptions.
 */
#ifndef VR_SEG_H
#define VR_SEG_H

#include "config.h"
#include "vr_err.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum seg_layout { SEG_LAYOUT_MONO = 0, SEG_LAYOUT_SBS, SEG_LAYOUT_TB };

enum seg_pixfmt {
    SEG_PIX_RGB24 = 0, /* packed RGB, plane 0 */
    SEG_PIX_NV12,      /* Y plane 0, interleaved UV plane 1 (4:2:0) */
    SEG_PIX_P010,      /* like NV12 with 16-bit samples, 10 significant MSBs */
    SEG_PIX_YUV420P,   /* Y, U, V planes (4:2:0), 8-bit */
};

enum seg_backend { SEG_CPU = 0, SEG_CUDA };

/* A frame view; the memory belongs to the caller (an AVFrame, a decoder
 * surface) and is only read during seg_run(). YUV is BT.709 limited range
 * unless full_range is set. */
struct seg_frame {
    enum seg_pixfmt fmt;
    int w, h;
    const uint8_t *data[3];
    int linesize[3];      /* bytes */
    int full_range;
    int on_device;        /* data are CUDA device pointers (SEG_CUDA only) */
};

/* A mask view, written by seg_run(): one byte per pixel, 0 = background,
 * 255 = person. Memory is the caller's (device memory when on_device). */
struct seg_mask {
    uint8_t *data;
    int w, h, linesize;
    int on_device;
};

/* Per-call stage times in milliseconds (host wall clock on CPU, CUDA events
 * on the GPU), for the pipeline's metrics. */
struct seg_timing {
    double preprocess, inference, postprocess;
};

struct seg_opts {
    enum seg_backend backend;
    int gpu;                     /* CUDA device index */
    const struct vr_config *cfg; /* copied at creation */
    enum seg_layout layout;
    int in_w, in_h;              /* frame size every seg_run() will get */
    int out_w, out_h;            /* mask size (0 = in size) */
    int max_batch;               /* frames per seg_run() (>= 1) */
};

struct seg;

/* Loads the config's model and prepares every buffer for the given sizes;
 * nothing is allocated per frame afterwards. Returns 0 or VR_E* with text. */
int seg_create(const struct seg_opts *o, struct seg **out, vr_err *err);

/* Segments n frames (1..max_batch) in order into n masks. Temporal smoothing
 * carries state from one frame to the next across calls; seg_reset() clears
 * it (a new chunk or a seek). `timing` may be NULL. */
int seg_run(struct seg *s, const struct seg_frame *frames, int n,
            struct seg_mask *masks, struct seg_timing *timing, vr_err *err);

void seg_reset(struct seg *s);

/* Frees and clears *s; accepts NULL and half-built engines. */
void seg_free(struct seg **s);

/* The network alone on one picture, for checking it against other
 * implementations (`vr-worker segment-image --raw`): no tiling, blending or
 * refinement, the CPU network (C twins) over `f` as it is. `f` is an RGB24
 * frame in host memory exactly the model's input size (cfg->model); mask
 * (the caller's, host memory, f's size) gets the sigmoid as 8-bit. Loads
 * the model and frees it before returning. Returns 0 or VR_E* with text. */
int seg_run_network(const struct vr_config *cfg, const struct seg_frame *f,
                    struct seg_mask *mask, vr_err *err);

/* "mono" / "sbs" / "tb" <-> enum; returns -1 for unknown text. */
int seg_layout_parse(const char *s);
const char *seg_layout_name(enum seg_layout l);

#ifdef __cplusplus
}
#endif

#endif

/*
 * frame_temporal.h - temporal filtering of the matte over a finite window,
 * reset at scene cuts: the C twin, the CUDA twin and the window's state.
 *
 * Why a finite window (and not an EMA): the output at frame t depends only
 * on frames t-K+1 .. t, so a chunk that starts at frame t0 and first runs
 * its K-1 frames before t0 through the filter (its warm-up) produces
 * exactly the masks one process over the whole video produces there. An
 * EMA remembers the whole past and a chunk can only approximate it.
 *
 * The rule, per output pixel p of frame t (all sizes are the mask's):
 *   y_t(p)   the frame's luma at p: the nearest source pixel to p's centre
 *            (frame_temporal_luma_ref), 8 bits;
 *   m_t(p)   the mask the refinement produced (the "raw" mask);
 *   a scene cut at t: the window holds a previous frame and
 *            sum_p |y_t(p) - y_{t-1}(p)| > cut_sad: the window is emptied,
 *            so no frame of the previous shot leaks into this one;
 *   out_t(p) = round( (m_t + sum_i w_i m_{t-i}) / (1 + sum_i w_i) ) over the
 *            window's frames i = 1 .. have, w_i = decay^i where the picture
 *            is still at p (|y_t(p) - y_{t-i}(p)| <= still), else 0: still
 *            areas average up to K frames, moving ones follow the current
 *            frame at once (no lag on motion).
 * The raw mask and luma of t then enter the window (a ring of K-1 slots).
 * Float operations run in this order with round-to-nearest and no fused
 * multiply-add in both twins, so CPU and GPU agree to the bit.
 */
#ifndef VR_FRAME_TEMPORAL_H
#define VR_FRAME_TEMPORAL_H

#include "config.h"
#include "seg.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEMPORAL_MAX_FRAMES 8   /* K: the window, the current frame included */

/* The filter's settings, from the config (smooth, smooth_frames,
 * smooth_still, scene_cut) and the mask size. */
struct temporal_opts {
    int frames;                 /* K, 1..TEMPORAL_MAX_FRAMES; 1 = off */
    float weight[TEMPORAL_MAX_FRAMES]; /* [i] = decay^i, [0] = 1 (float products) */
    int still;                  /* luma levels under which a pixel is still */
    uint64_t cut_sad;           /* sum |dy| above which a frame starts a shot; 0 = never */
    int w, h;                   /* mask size */
};

/* Fills *o; decay in [0,1), frames 1..TEMPORAL_MAX_FRAMES, scene_cut is the
 * mean absolute luma change (0..255) of a cut, 0 = no cut detection. */
void temporal_opts_make(struct temporal_opts *o, int frames, double decay, int still,
                        double scene_cut, int w, int h);

/* The same from a config: smooth (decay), smooth_frames, smooth_still,
 * scene_cut; the window is config_history_frames(cfg) + 1. */
void temporal_opts_from_config(struct temporal_opts *o, const struct vr_config *cfg, int w,
                               int h);

/* Frames of warm-up a chunk needs before its first output frame so that
 * its masks equal a whole run's: K - 1. */
int temporal_warmup_frames(const struct temporal_opts *o);

/* The window's bookkeeping, the same on both backends (host memory). The
 * pixel data live in the backend's ring (K-1 slots of w*h mask bytes and
 * w*h luma bytes); slot `head` holds the newest frame. */
struct temporal_state {
    int have;                   /* frames in the window, 0..K-1 */
    int head;                   /* slot of the newest frame */
};

/* Empties the window (a new video, or the engine's reset). */
void temporal_reset(struct temporal_state *s);

/* The decision for frame t, given the sum of its absolute luma change
 * against the newest frame in the window (ignored when the window is
 * empty): 1 when t starts a new shot (the window is emptied), else 0. */
int temporal_cut(const struct temporal_opts *o, struct temporal_state *s, uint64_t sad);

/* After frame t was filtered: its raw mask and luma entered slot
 * temporal_next_slot() and the window grows up to K-1. */
int temporal_next_slot(const struct temporal_opts *o, const struct temporal_state *s);
void temporal_push(const struct temporal_opts *o, struct temporal_state *s);

/* ---- C twin ---- */

/* The luma of frame f at each pixel of a w x h mask: the nearest source
 * pixel to the mask pixel's centre, x_src = ((2x+1) * f->w) / (2w);
 * YUV: the Y sample (P010: its 8 high bits); RGB: (77R + 150G + 29B + 128) >> 8. */
void frame_temporal_luma_ref(const struct seg_frame *f, uint8_t *y, int w, int h);

/* sum_p |a(p) - b(p)| over w*h bytes. */
uint64_t frame_temporal_sad_ref(const uint8_t *a, const uint8_t *b, int w, int h);

/* Filters one frame in place (mask, linesize ls) with luma y (w*h), after
 * temporal_cut(); ring_m / ring_y are K-1 slots of w*h bytes each. Writes
 * the raw mask and y into slot temporal_next_slot(); the caller then calls
 * temporal_push(). */
void frame_temporal_ref(const struct temporal_opts *o, const struct temporal_state *s,
                        uint8_t *mask, int ls, const uint8_t *y, uint8_t *ring_m,
                        uint8_t *ring_y);

#ifdef VR_HAVE_CUDA
#include <cuda_runtime.h>

struct frame_batch;
struct frame_masks;

/* ---- CUDA twin: one call filters the n frames of a batch in order ---- */

/* Lumas of the batch's n frames (src_w x src_h) into y ([n][h][w], device)
 * and each frame's sum of absolute change against the previous one into
 * sad[n] (device, zeroed here; sad[0] is against ring slot s->head when
 * s->have > 0). */
int frame_temporal_luma_cuda(const struct temporal_opts *o, const struct temporal_state *s,
                             const struct frame_batch *fb, int src_w, int src_h, uint8_t *y,
                             const uint8_t *ring_y,
                             unsigned long long *sad, cudaStream_t st, vr_err *err);

/* Filters the n masks in place: per pixel, frame by frame, the cut
 * decisions of temporal_cut() from sad[], then frame_temporal_ref's rule;
 * ring slots advance as temporal_push() does. The caller replays
 * temporal_cut()/temporal_push() on the host with the same sad[] (copied
 * back) to keep *s in step. */
int frame_temporal_cuda(const struct temporal_opts *o, const struct temporal_state *s, int n,
                        const struct frame_masks *masks, const uint8_t *y,
                        const unsigned long long *sad, uint8_t *ring_m, uint8_t *ring_y,
                        cudaStream_t st, vr_err *err);
#endif

#ifdef __cplusplus
}
#endif

#endif

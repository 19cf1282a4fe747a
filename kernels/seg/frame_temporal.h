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
 *            frame at once (no lag on motion). "Still at p" is decided on
 *            p's neighbourhood: the largest |y_t(q) - y_{t-i}(q)| over the
 *            pixels q within R = smooth_still_radius of p (clipped to the
 *            plane; R = 0: p alone). Tested at p alone, the pixels of a
 *            walking person's textured coat whose luma happens to match
 *            the background they cover averaged the background's mask in:
 *            a dotted person. A neighbourhood makes her moving throughout.
 * The raw mask and luma of t then enter the window (a ring of K-1 slots).
 *
 * The hold (smooth_hold = M > 0), after the average: a still pixel keeps
 * its last output while the average stays near it, so a still area does
 * not follow the network's frame-to-frame noise:
 *   out_t(p) = held(p)  when t is no refresh, p is still against t-1 (the
 *                       same neighbourhood test)
 *                       and |avg_t(p) - held(p)| <= M;  else avg_t(p);
 *   held(p)  = out_t(p).
 * A hold that never ended would make frame t depend on the whole past, and
 * a chunk could not equal one process. So some frames are refreshes (out =
 * avg everywhere), chosen from the content, which a chunk and one process
 * both see: each frame has a key, a hash of its change sum, and t is a
 * refresh when the window is not full (start, cut) or the frame holding
 * the least key of the last H = CONFIG_HOLD_SPAN frames changed from t-1
 * (a new least, or the old one left). Refreshes are then at most H frames
 * apart (about 2/(H+1) of frames on a changing picture), and deciding one
 * needs the H change sums before it: config_history_frames() is the
 * warm-up, max(K-1+H, 2H+1).
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
#define TEMPORAL_STILL_R_MAX CONFIG_STILL_R_MAX /* the stillness test's largest radius */

#if defined(__CUDACC__)
#define TEMPORAL_HD __host__ __device__
#else
#define TEMPORAL_HD
#endif

/* The hold's key of a frame: a hash of its change sum (frame_temporal.h's
 * rule), the same on both backends. */
static inline TEMPORAL_HD uint32_t temporal_hold_key(unsigned long long sad)
{
    return (uint32_t)((sad * 0x9E3779B97F4A7C15ull) >> 32);
}

/* The position of the least of n keys (k[0] the newest), the oldest of
 * equals. */
static inline TEMPORAL_HD int temporal_hold_argmin(const uint32_t *k, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (k[i] <= k[best])
            best = i;
    return best;
}

/* refresh(t): the window empty after the cut decision (start, cut), or
 * the least key of the last CONFIG_HOLD_SPAN frames (t's key `key`, then
 * keys[0..nkeys-1], newest first) is another frame than it was at t-1. */
static inline TEMPORAL_HD unsigned temporal_hold_refresh(int have, uint32_t key,
                                                         const uint32_t *keys, int nkeys)
{
    if (have == 0 || nkeys < 1)
        return 1;
    uint32_t k[CONFIG_HOLD_SPAN + 1];
    k[0] = key;
    for (int i = 0; i < nkeys; i++)
        k[i + 1] = keys[i];
    int now = temporal_hold_argmin(k, nkeys < CONFIG_HOLD_SPAN ? nkeys + 1 : CONFIG_HOLD_SPAN);
    int before = 1 + temporal_hold_argmin(k + 1, nkeys);
    return now != before;
}

/* Records a frame's key: keys[] newest first, at most CONFIG_HOLD_SPAN. */
static inline TEMPORAL_HD void temporal_hold_push(uint32_t *keys, int *nkeys, uint32_t key)
{
    int n = *nkeys < CONFIG_HOLD_SPAN ? *nkeys + 1 : CONFIG_HOLD_SPAN;
    for (int i = n - 1; i > 0; i--)
        keys[i] = keys[i - 1];
    keys[0] = key;
    *nkeys = n;
}

/* The filter's settings, from the config (smooth, smooth_frames,
 * smooth_still, scene_cut) and the mask size. */
struct temporal_opts {
    int frames;                 /* K, 1..TEMPORAL_MAX_FRAMES; 1 = off */
    float weight[TEMPORAL_MAX_FRAMES]; /* [i] = decay^i, [0] = 1 (float products) */
    int still;                  /* luma levels under which a pixel is still */
    int still_r;                /* smooth_still_radius: the test's neighbourhood, 0..
                                 * TEMPORAL_STILL_R_MAX (0: the pixel alone) */
    int hold;                   /* smooth_hold: the hold's margin, 0 = no hold */
    uint64_t cut_sad;           /* sum |dy| above which a frame starts a shot; 0 = never */
    int w, h;                   /* mask size */
};

/* Fills *o; decay in [0,1), frames 1..TEMPORAL_MAX_FRAMES, scene_cut is the
 * mean absolute luma change (0..255) of a cut, 0 = no cut detection. */
void temporal_opts_make(struct temporal_opts *o, int frames, double decay, int still,
                        double scene_cut, int w, int h);

/* The hold's margin (levels, 0 = off; ignored when the filter is off). */
void temporal_opts_hold(struct temporal_opts *o, int hold);

/* smooth_still_radius: clamped to 0..TEMPORAL_STILL_R_MAX. */
void temporal_opts_still_r(struct temporal_opts *o, int r);

/* The same from a config: smooth (decay), smooth_frames, smooth_still,
 * scene_cut; the window is config_history_frames(cfg) + 1. */
void temporal_opts_from_config(struct temporal_opts *o, const struct vr_config *cfg, int w,
                               int h);

/* Frames of warm-up a chunk needs before its first output frame so that
 * its masks equal a whole run's: K - 1, more with the hold
 * (config_history_frames()'s rule). */
int temporal_warmup_frames(const struct temporal_opts *o);

/* The window's bookkeeping, the same on both backends (host memory). The
 * pixel data live in the backend's ring (K-1 slots of w*h mask bytes and
 * w*h luma bytes); slot `head` holds the newest frame. */
struct temporal_state {
    int have;                   /* frames in the window, 0..K-1 */
    int head;                   /* slot of the newest frame */
    uint32_t keys[CONFIG_HOLD_SPAN]; /* the hold: the last frames' keys, newest first */
    int nkeys;
    unsigned refresh;           /* the hold: refresh(t) of the frame being filtered */
};

/* Empties the window (a new video, or the engine's reset). */
void temporal_reset(struct temporal_state *s);

/* The decision for frame t, given the sum of its absolute luma change
 * against the newest frame in the window (ignored when the window is
 * empty): 1 when t starts a new shot (the window is emptied), else 0. */
int temporal_cut(const struct temporal_opts *o, struct temporal_state *s, uint64_t sad);

/* The hold's decision for frame t, after temporal_cut(): sets s->refresh
 * and records t's key. */
void temporal_hold_step(struct temporal_state *s, uint64_t sad);

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
 * temporal_cut() and temporal_hold_step(); ring_m / ring_y are K-1 slots
 * of w*h bytes each, held the hold's last outputs (w*h; unused without
 * the hold). Writes the raw mask and y into slot temporal_next_slot(); the
 * caller then calls temporal_push(). */
void frame_temporal_ref(const struct temporal_opts *o, const struct temporal_state *s,
                        uint8_t *mask, int ls, const uint8_t *y, uint8_t *ring_m,
                        uint8_t *ring_y, uint8_t *held);

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
 * decisions of temporal_cut() and temporal_hold_step() from sad[], then
 * frame_temporal_ref's rule (held: the hold's plane, w*h, NULL without
 * it; still: n*w*h bytes of scratch for the neighbourhood test, NULL when
 * o->still_r is 0); ring slots advance as temporal_push() does. The caller
 * replays temporal_cut()/temporal_hold_step()/temporal_push() on the host
 * with the same sad[] (copied back) to keep *s in step. */
int frame_temporal_cuda(const struct temporal_opts *o, const struct temporal_state *s, int n,
                        const struct frame_masks *masks, const uint8_t *y,
                        const unsigned long long *sad, uint8_t *ring_m, uint8_t *ring_y,
                        uint8_t *held, uint8_t *still, cudaStream_t st, vr_err *err);
#endif

#ifdef __cplusplus
}
#endif

#endif

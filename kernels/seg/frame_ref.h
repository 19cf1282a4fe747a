/*
 * frame_ref.h - the plain-C reference of the frame kernels around the
 * network: preprocess (colour convert + resize + normalise, fused), tile
 * blend, the work mask's clean-up (tile gate, model fusion, close/open:
 * frame_matte_ref.c), guided upsample (fast guided filter) and temporal
 * smoothing.
 *
 * These are the "C twins" of the CUDA frame kernels (kernels/seg/frame_cuda.h):
 * the CUDA versions take the same arguments plus a cudaStream_t, with every
 * buffer pointer (frame planes, rect/tile arrays, outputs, scratch) in device
 * memory, and must match these within 1/255. So every sampling rule below is
 * spelled out exactly (integer box bounds, half-pixel centres, clamps,
 * rounding); a twin implements the rule, not an approximation of it.
 *
 * Buffers are caller-owned, never aliased unless stated, and fully written.
 * Nothing here allocates.
 */
#ifndef VR_FRAME_REF_H
#define VR_FRAME_REF_H

#include "seg.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared sampling rules ---- */

/* A rectangle in frame pixels (integers: tiles are planned on the pixel
 * grid). Always inside the frame, w, h >= 1. */
struct frame_rect {
    int x, y, w, h;
};

/* Resampling a source rect of rw x rh pixels to dw x dh, per output pixel
 * (ox, oy), is the same rule for preprocess, luma and I_out:
 *
 *  - AREA when shrinking by more than 1.5x on either axis, i.e. when
 *    2*rw > 3*dw || 2*rh > 3*dh: the unweighted mean of the source pixels
 *    [x0, x1) x [y0, y1) with x0 = ox*rw/dw, x1 = max((ox+1)*rw/dw, x0+1)
 *    (integer division, 64-bit products), same for y. Small people survive
 *    because every source pixel counts.
 *  - BILINEAR otherwise, half-pixel centres: fx = (ox+0.5)*rw/dw - 0.5
 *    (float), clamped to [0, rw-1], same for y; taps at floor(fx) and
 *    min(floor(fx)+1, rw-1), so nothing outside the rect is ever read (an
 *    eye never bleeds into the other eye).
 *
 * Colour is converted per source pixel before resampling: RGB24 -> v/255;
 * YUV (BT.709): chroma of pixel (x, y) is the 4:2:0 sample (x/2, y/2)
 * (nearest, no chroma interpolation); limited range Y' = (Y - 16k)/(219k),
 * Cb,Cr = (C - 128k)/(224k); full range Y' = Y/(255k), C = (C - 128k)/(255k),
 * with k = 1 for 8-bit and k = 4 for P010 (sample >> 6, little-endian u16);
 * R = Y' + 1.5748 Cr, G = Y' - 0.187324 Cb - 0.468124 Cr, B = Y' + 1.8556 Cb;
 * each clamped to [0, 1]. Luma (for the guided filter) is Y' clamped to
 * [0, 1] for YUV frames and 0.2126 R + 0.7152 G + 0.0722 B for RGB24. */
enum frame_resample { FRAME_BILINEAR = 0, FRAME_AREA = 1 };

/* Which rule a rw x rh -> dw x dh resize uses (see above). */
enum frame_resample frame_resample_mode(int rw, int rh, int dw, int dh);

/* Float in [0,1] (or beyond) -> u8: clamp(floor(v*255 + 0.5), 0, 255). */
static inline uint8_t frame_to_u8(float v)
{
    float x = v * 255.0f + 0.5f;
    if (!(x > 0.0f))
        return 0;
    if (x >= 255.0f)
        return 255;
    return (uint8_t)x;
}

/* ---- (1) preprocess ---- */

/* Fills the network input batch from one frame: for each of the n rects
 * (frame pixels; each eye's tiles already offset into the frame), out[i] is
 * the rect resampled to mw x mh RGB in [0,1], NHWC: out is [n][mh][mw][3].
 * Colour conversion, resize and normalisation in one pass per output pixel.
 * The frame's planes are only read. */
void frame_preprocess_ref(const struct seg_frame *f, const struct frame_rect *rects,
                          int n, int mw, int mh, float *out);

/* Luma of `rect` resampled to dw x dh (same rules), out [dh][dw] in [0,1]:
 * the guide of the guided filter at work resolution. */
void frame_luma_ref(const struct seg_frame *f, struct frame_rect rect,
                    int dw, int dh, float *out);

/* ---- (2) blend ---- */

/* Edges of a tile that are interior to the eye (feathered); edges on the
 * eye's border keep weight 1 up to the border. */
enum frame_edge {
    FRAME_EDGE_L = 1 << 0, FRAME_EDGE_R = 1 << 1,
    FRAME_EDGE_T = 1 << 2, FRAME_EDGE_B = 1 << 3,
    /* Not an edge: the tile is a floor, not a vote (the whole-eye pass under
     * a grid). A tile that sees only part of a large person can call it
     * background; averaging would let it erase what the whole pass found, so
     * the floor's confident values bound the blend from below instead. */
    FRAME_TILE_FLOOR = 1 << 4,
    /* A vote only where the tile is sure: its value v counts as
     * max(2v - 1, 0), so the grey it puts on what it is unsure of (a
     * doorway, a tripod) neither votes nor weighs. The fine grid's tiles:
     * alone over such a thing, their grey would be the blend's, and it
     * drifts from frame to frame (docs/QUALITY.md, "The fine grid votes
     * where it is sure"). */
    FRAME_TILE_SURE = 1 << 5,
};

/* Where one network output lands in the eye's work mask. */
struct frame_tile {
    float x, y, w, h;   /* placement in work pixels (may be fractional) */
    float weight;       /* base weight: 1 for tiles, low for the whole pass */
    float feather;      /* ramp width as a fraction of the tile's w (h) */
    int edges;          /* enum frame_edge bits: interior edges, feathered */
    int favor;          /* the weight times the value to this power (0: a plain
                         * weighted mean): the tile that sees a person whole wins
                         * over one a border cuts, which calls him background */
    float favor_floor;  /* each factor is favor_floor + (1 - favor_floor) * value:
                         * with 0 a tile saying 0 has no weight, so where a
                         * neighbour's find meets its border the neighbour's ramp
                         * ends in a step; a floor keeps the ramp */
};

/* A network output t [mh][mw] sampled bilinearly at (sx, sy), clamped to
 * [0, mw-1] x [0, mh-1]: the blend's rule (and the fusion's). */
static inline float frame_tile_sample(const float *t, int mw, int mh, float sx, float sy)
{
    sx = sx < 0.0f ? 0.0f : (sx > (float)(mw - 1) ? (float)(mw - 1) : sx);
    sy = sy < 0.0f ? 0.0f : (sy > (float)(mh - 1) ? (float)(mh - 1) : sy);
    int x0 = (int)sx, y0 = (int)sy;
    int x1 = x0 + 1 < mw ? x0 + 1 : mw - 1;
    int y1 = y0 + 1 < mh ? y0 + 1 : mh - 1;
    float tx = sx - (float)x0, ty = sy - (float)y0;
    float a = t[(size_t)y0 * mw + x0], b = t[(size_t)y0 * mw + x1];
    float c = t[(size_t)y1 * mw + x0], d = t[(size_t)y1 * mw + x1];
    float top = a + (b - a) * tx, bot = c + (d - c) * tx;
    return top + (bot - top) * ty;
}

/* Blends n tile outputs tiles [n][mh][mw] (sigmoid, [0,1]) into the eye's
 * work mask out [wh][ww] as a weighted average. For work pixel (x, y) and
 * tile t: centre px = x + 0.5, py = y + 0.5; the tile covers it when
 * t.x <= px < t.x + t.w and t.y <= py < t.y + t.h. Tile coords
 * u = (px - t.x)/t.w (in [0,1)), v likewise; the value is the tile output
 * sampled bilinearly at (u*mw - 0.5, v*mh - 0.5) clamped to [0, mw-1] x
 * [0, mh-1]. The weight is t.weight * ramp_x * ramp_y where, for a
 * feathered left edge, ramp_x = clamp(u / t.feather, 1e-3, 1) (right edge:
 * 1 - u; both edges: the smaller; no feathered edge or feather <= 0: 1),
 * same for y with v; a FRAME_TILE_SURE tile's value is then max(2*value - 1,
 * 0); then w = w * (t.favor_floor + (1 - t.favor_floor) * value), t.favor
 * times (in that order; favor_floor 0: w * value). out =
 * sum(w*value) / sum(w) over the tiles without
 * FRAME_TILE_FLOOR (0 where none covers the pixel), then raised to
 * 2*value - 1 of the covering FRAME_TILE_FLOOR tiles (weights unused): only
 * where the floor is sure (> 0.5) does it lift the tiles, so its soft,
 * low-resolution halo never does. */
void frame_blend_ref(const float *tiles, int n, int mw, int mh,
                     const struct frame_tile *tile, int ww, int wh, float *out);

/* ---- (2b) the tiles bounded, the work mask cleaned (frame_matte_ref.c) ---- */

/* The whole pass's bound on the tiles: dilated whole-pass value at or
 * below LO bounds a distrusted tile to 0, at or above HI leaves it free,
 * linear between. A tile is trusted fully while it claims at most SLACK of
 * its area more than the whole pass does there (where it says more, by
 * how much: a person both see adds nothing, whatever the dilation's halo
 * around it), not at all from SLACK + SPAN on (linear between). */
#define FRAME_GATE_LO    0.05f
#define FRAME_GATE_HI    0.25f
#define FRAME_GATE_SLACK 0.05f
#define FRAME_GATE_SPAN  0.10f

/* Trust of a tile of mw x mh pixels whose claim (the sum over its pixels of
 * max(frame_to_u8(tile) - frame_to_u8(dilated whole), 0)) is `claim`:
 * c = (float)claim / (float)(255 * mw * mh), clamp(1 - (c - SLACK) / SPAN,
 * 0, 1). */
static inline float frame_gate_trust(long long claim, int mw, int mh)
{
    float c = (float)claim / (float)(255 * mw * mh);
    float t = 1.0f - (c - FRAME_GATE_SLACK) / FRAME_GATE_SPAN;
    return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

/* Bounds an eye's tiles (the network outputs tiles [n][mh][mw], in place)
 * by the eye's whole pass, the last tile when it is a FRAME_TILE_FLOOR
 * (otherwise nothing happens). For tile i < n-1 and its pixel (x, y): the
 * work position px = t.x + ((x + 0.5f) / mw) * t.w, the whole pass's pixel
 * cx = (int)(px / ww * mw) clamped to [0, mw-1] (cy likewise with t.y,
 * t.h, wh, mh), d = the max of the whole pass over [cx-r, cx+r] x
 * [cy-r, cy+r] clipped; the tile's trust = frame_gate_trust(sum over its
 * pixels of max(frame_to_u8(v) - frame_to_u8(d), 0)); g = max(trust,
 * (d - FRAME_GATE_LO) / (FRAME_GATE_HI - FRAME_GATE_LO)) at most 1, and
 * v = min(v, g). The blend (frame_blend_ref) runs after it. scratch: mw*mh
 * floats. */
void frame_gate_ref(float *tiles, int n, int mw, int mh, const struct frame_tile *tile,
                    int ww, int wh, int r, float *scratch);

/* Fuses a second model's output for the whole eye, p [mh][mw], into the
 * eye's work mask work [wh][ww] as the blend's floor does: for work pixel
 * (x, y), u = (x + 0.5f) / ww, v = (y + 0.5f) / wh, val =
 * frame_tile_sample(p, mw, mh, u * mw - 0.5f, v * mh - 0.5f), and work =
 * max(work, 2 * val - 1): only where the second model is sure (> 0.5)
 * does it lift the mask, so it fills the first one's holes and adds none
 * of its own soft halo. */
void frame_fuse_ref(const float *p, int mw, int mh, int ww, int wh, float *work);

/* Grey close then open of work [h][w] in place with a (2r+1)^2 square
 * (separable max/min passes, windows clipped to the image: max along x,
 * then y; min x, y; min x, y; max x, y). r <= 0: nothing. scratch: w*h
 * floats. */
void frame_morph_ref(float *work, int w, int h, int r, float *scratch);

/* ---- (3) refine: guided upsample (fast guided filter) ---- */

/* Floats of scratch frame_guided_coeffs_ref() needs for a w x h image. */
#define FRAME_GUIDED_SCRATCH(w, h) ((size_t)(w) * (size_t)(h) * 6)

/* Low-resolution half of the fast guided filter (He & Sun 2015). I is the
 * guide (luma at work resolution), p the blended mask, both [h][w].
 * box(X) is the mean over the (2r+1)^2 window clipped to the image (divided
 * by the number of pixels inside). mean_I = box(I), mean_p = box(p),
 * cov = box(I*p) - mean_I*mean_p, var = box(I*I) - mean_I^2,
 * a0 = cov/(var + eps), b0 = mean_p - a0*mean_I; outputs a = box(a0),
 * b = box(b0), each [h][w]. scratch: FRAME_GUIDED_SCRATCH(w, h) floats. */
void frame_guided_coeffs_ref(const float *I, const float *p, int w, int h,
                             int r, float eps, float *a, float *b, float *scratch);

/* The guided filter held to the edge band (config guided_band r > 0):
 * where the work mask p ([h][w]) is flat the coefficients become a = 0,
 * b = the mean of p over the filter's own window (radius rbox), so the
 * apply step gives a smoothed p there: no texture of the guide inside a
 * person, no glow spread from an edge onto a flat wall, and a seam
 * between tiles still smoothed as the filter did. Around p's edges the
 * coefficients stay. The band: e = min(1, FRAME_BAND_GAIN * (max - min of
 * p over the clipped 3x3)), wgt = the mean of e over the clipped
 * (2r+1)^2 window; a = wgt * a, b = wgt * b + (1 - wgt) * mean_rbox(p), in
 * place (means: summed row by row, left to right, then divided by the
 * count). band: w*h floats of scratch. r <= 0: nothing. */
#define FRAME_BAND_GAIN 2.0f /* a change of 0.5 over 3x3 is a whole edge */
void frame_guided_band_ref(const float *p, int w, int h, int r, int rbox, float *a, float *b,
                           float *band);

/* Full-resolution half: a, b ([h][w], work resolution) are upsampled
 * bilinearly (half-pixel centres, clamped) to dw x dh, and each output pixel
 * gets frame_to_u8(a*I + b) where I is the luma of the frame's `rect`
 * resampled to dw x dh (the frame_luma_ref rule, computed on the fly).
 * dst points at the eye's first output pixel, dst_linesize in bytes. */
void frame_guided_apply_ref(const float *a, const float *b, int w, int h,
                            const struct seg_frame *f, struct frame_rect rect,
                            uint8_t *dst, int dst_linesize, int dw, int dh);

/* The "bilinear" refine: mask [h][w] upsampled bilinearly (half-pixel
 * centres, clamped) to dw x dh, frame_to_u8. */
void frame_upsample_bilinear_ref(const float *mask, int w, int h,
                                 uint8_t *dst, int dst_linesize, int dw, int dh);

#ifdef __cplusplus
}
#endif

#endif

/*
 * frame_stereo.h - both eyes agree (issue 39): the disparity between the
 * eyes' work masks, per row band, and each eye's mask fused with the
 * other's warped by it, so a person found in one eye is found in the other
 * (the eyes are segmented apart, each sees its own crop, and one may miss
 * what the other finds). The C twin (frame_stereo_ref.c, `--cpu`) and the
 * CUDA twin (frame_stereo.cu) give the same bits.
 *
 * The rule, per frame, for the left and right work masks ml, mr and lumas
 * yl, yr (all [h][w], work size; luma as frame_to_u8 levels):
 *   band b: rows [h*b/bands, h*(b+1)/bands);
 *   its span: the columns where ml or mr >= 0.5 in the band, widened by
 *     dmax = w/8 each side (the disparity of the people, not of the
 *     background around them; no person in the band: d = 0);
 *   d: the shift minimising the mean |yl(x) - yr(x - d)| over every other
 *     row of the band (from its first) and the span's columns where x - d
 *     is inside the eye, for |d| <= dmax, overlap at least half the span;
 *     tried in the order 0, -1, 1, -2, 2, ... and kept only when strictly
 *     better (integer cross-multiplied means), so a flat band keeps 0;
 *     a best mean over FRAME_STEREO_MAX_SAD: FRAME_STEREO_NONE (unfused);
 *   fuse: ml(x) = F(ml(x), mr(x - d)), mr(x) = F(mr(x), ml(x + d)), from
 *     the masks as they were, where the other pixel is inside the eye;
 *     F(a, b) = max(a, b) where one eye is sure (>= FRAME_STEREO_SURE),
 *     else (a + b) / 2: a person one eye is sure of is found in both, a
 *     halo only one eye paints is halved (the union of both eyes' halos
 *     raised the false foreground of the sample at 2048x1024 from 0.64% to
 *     1.22%; this rule: 0.97%). F is symmetric, so the two eyes' masks
 *     agree exactly where both see the scene.
 * Max, one add and a halving (exact) and integer sums: CPU and GPU agree
 * to the bit, and a frame's result depends on that frame alone (the fleet
 * equals one process).
 */
#ifndef VR_FRAME_STEREO_H
#define VR_FRAME_STEREO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "vr_err.h" /* a C header without extern "C" of its own */

#define FRAME_STEREO_MAX_BANDS 32
/* A band whose best shift still differs by more than this many luma levels
 * a pixel (mean) shows the eyes two different pictures (two photos side by
 * side, a scene cut between the eyes): it gets d = FRAME_STEREO_NONE, and
 * no pixel of it is fused (x - d is outside any eye). */
#define FRAME_STEREO_MAX_SAD 20
#define FRAME_STEREO_NONE (1 << 20)

#ifdef __CUDACC__
#define FRAME_STEREO_HD __host__ __device__
#else
#define FRAME_STEREO_HD
#endif

/* The search range of an eye w work pixels wide. */
static inline FRAME_STEREO_HD int frame_stereo_dmax(int w)
{
    return w / 8;
}

/* Band b's rows [*y0, *y1). */
static inline FRAME_STEREO_HD void frame_stereo_rows(int h, int bands, int b, int *y0, int *y1)
{
    *y0 = (int)((long long)h * b / bands);
    *y1 = (int)((long long)h * (b + 1) / bands);
}

/* The band of row y. */
static inline FRAME_STEREO_HD int frame_stereo_band(int h, int bands, int y)
{
    int b = 0;
    while (b + 1 < bands && y >= (int)((long long)h * (b + 1) / bands))
        b++;
    return b;
}

/* The columns [*x0, *x1) compared at shift d for a band whose people span
 * columns emin..emax (emax < 0: none); 0 when d is not tried. */
static inline FRAME_STEREO_HD int frame_stereo_cols(int emin, int emax, int w, int dmax, int d,
                                                    int *x0, int *x1)
{
    if (emax < 0)
        return 0;
    int s0 = emin - dmax < 0 ? 0 : emin - dmax, s1 = emax + 1 + dmax > w ? w : emax + 1 + dmax;
    int a = s0 > d ? s0 : d, b = s1 < w + d ? s1 : w + d; /* x - d inside the eye */
    *x0 = a;
    *x1 = b;
    return b - a > 0 && 2 * (b - a) >= s1 - s0;
}

/* The k-th shift tried: 0, -1, 1, -2, 2, ... */
static inline FRAME_STEREO_HD int frame_stereo_shift(int k)
{
    return k & 1 ? -(k + 1) / 2 : k / 2;
}

/* An eye's value and the other's over the same point: frame_stereo_fuse. */
#define FRAME_STEREO_SURE 0.75f
static inline FRAME_STEREO_HD float frame_stereo_fuse(float own, float other)
{
    float m = own > other ? own : other;
    return m >= FRAME_STEREO_SURE ? m : (own + other) * 0.5f;
}

/* ---- the refined eyes (the guided refinement on, both eyes fused) ----
 *
 * The guided refinement draws each eye's edges from that eye's own
 * picture, whose compression noise is the eye's own, so the refined mattes
 * part again where the fused work masks agreed (the sample's stereo
 * agreement: 0.989 with bilinear edges, 0.978 guided). The fusion runs
 * once more on the refined output eyes, 8 bits, at each band's d of the
 * work masks scaled to the output:
 *   d_out = d * out_w / work_w, rounded half away from 0 (NONE stays NONE:
 *     unfused);
 *   output row y lies in band frame_stereo_band(out_h, bands, y);
 *   for each x with 0 <= x - d_out < out_w: l(x) = r(x - d_out) =
 *     frame_stereo_fuse_u8(l(x), r(x - d_out)).
 * x -> x - d_out is one to one, so each pair is its own (in place), and
 * both eyes get the same byte where both see the scene. It runs before the
 * temporal filter, whose window then holds eyes that agree. */

/* frame_stereo_fuse on 8-bit values: sure from 192 (0.75 * 255 = 191.25),
 * else the mean rounded half up: integers, the same bits on both twins. */
static inline FRAME_STEREO_HD uint8_t frame_stereo_fuse_u8(uint8_t own, uint8_t other)
{
    int m = own > other ? own : other;
    return (uint8_t)(m >= 192 ? m : (own + other + 1) >> 1);
}

/* A band's work shift d at an output width: d * out_w / work_w rounded
 * half away from 0; FRAME_STEREO_NONE stays. */
static inline FRAME_STEREO_HD int frame_stereo_scale(int d, int work_w, int out_w)
{
    if (d == FRAME_STEREO_NONE)
        return d;
    long long n = 2LL * d * out_w + (d < 0 ? -(long long)work_w : (long long)work_w);
    return (int)(n / (2LL * work_w));
}

/* The rule on one frame's refined eyes: ml, mr (w x h each, rows ls bytes
 * apart), disp[bands] the work masks' shifts (frame_stereo_ref's), work_w
 * the work masks' width. */
void frame_stereo_out_ref(uint8_t *ml, uint8_t *mr, int ls, int w, int h, int work_w,
                          int bands, const int *disp);

/* Scratch of frame_stereo_ref: floats. */
#define FRAME_STEREO_SCRATCH(w, h) ((size_t)(w) * (size_t)(h) * 3)

/* The rule above on one frame's eyes, in place on ml and mr; disp (may be
 * NULL) gets each band's d. scratch: FRAME_STEREO_SCRATCH(w, h) floats. */
void frame_stereo_ref(float *ml, float *mr, const float *yl, const float *yr, int w, int h,
                      int bands, float *scratch, int *disp);

#ifdef VR_HAVE_CUDA
#include <cuda_runtime.h>

struct frame_cu_plan;

/* Device workspace of the CUDA twin for n frames: bytes. */
static inline size_t frame_stereo_ws_bytes(int n, int bands, int w)
{
    size_t nb = (size_t)n * bands;
    return nb * (2 * frame_stereo_dmax(w) + 1) * sizeof(unsigned long long)
           + nb * 3 * sizeof(int);
}

/* The CUDA twin on one frame (device pointers; scratch: 2*w*h floats;
 * ws: frame_stereo_ws_bytes(1, bands, w)); disp (host, may be NULL) gets
 * each band's d (the call then waits for the stream). */
int frame_stereo_cuda(float *ml, float *mr, const float *yl, const float *yr, int w, int h,
                      int bands, float *scratch, void *ws, int *disp, cudaStream_t st,
                      vr_err *err);

/* Every frame of a call (work layout of plan p: eye 0 left, eye 1 right,
 * both the same work size; luma the same layout); scratch: n *
 * work_per_frame floats; ws: frame_stereo_ws_bytes(n, bands, work_w). */
int frame_stereo_batch_cuda(float *work, const float *luma, int n,
                            const struct frame_cu_plan *p, int bands, float *scratch,
                            void *ws, cudaStream_t st, vr_err *err);

struct frame_masks;

/* The refined eyes' rule on every frame of a call, after
 * frame_stereo_batch_cuda of the same n, plan and ws (its shifts), on the
 * output masks m (eye rects p->e[0].out, p->e[1].out). */
int frame_stereo_out_batch_cuda(const struct frame_masks *m, int n,
                                const struct frame_cu_plan *p, int bands, const void *ws,
                                cudaStream_t st, vr_err *err);
#endif

#ifdef __cplusplus
}
#endif

#endif

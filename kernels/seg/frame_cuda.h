/*
 * frame_cuda.h - the CUDA frame kernels around the network: the twins of
 * frame_ref.h (same arguments plus a cudaStream_t; every buffer pointer,
 * frame planes included, in device memory) and the batched forms the CUDA
 * engine (seg_backend.cu) launches once per call for all frames and eyes.
 *
 * Each twin follows the sampling rule its C twin spells out in frame_ref.h
 * (the same integer box bounds, half-pixel taps, clamps and summation order),
 * so results agree within float rounding (u8 outputs within 1 step). The
 * single-frame twins are thin wrappers over the batched kernels, so what the
 * GPU tests check against the C twins is exactly what the engine runs.
 *
 * Launchers are asynchronous: they enqueue on `st` and return 0, or VR_ECUDA
 * with the launch error in `err`; faults inside a kernel surface at the
 * caller's next synchronisation. Nothing here allocates. Only built with
 * nvcc (VR_HAVE_CUDA).
 */
#ifndef VR_FRAME_CUDA_H
#define VR_FRAME_CUDA_H

/* The project's C headers carry no extern "C" of their own (vr_err.h,
 * config.h, seg.h): wrap them so the .cu files link against the C objects. */
#ifdef __cplusplus
extern "C" {
#endif
#include "frame_ref.h"
#include "tiles.h"
#include "vr_err.h"
#ifdef __cplusplus
}
#endif

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- twins of frame_ref.h (device pointers, one frame) ---- */

/* `f` is a host struct whose planes are device pointers; `rects` is a device
 * array of n rects; out is device [n][mh][mw][3]. */
int frame_preprocess_cuda(const struct seg_frame *f, const struct frame_rect *rects,
                          int n, int mw, int mh, float *out, cudaStream_t st, vr_err *err);

int frame_luma_cuda(const struct seg_frame *f, struct frame_rect rect, int dw, int dh,
                    float *out, cudaStream_t st, vr_err *err);

/* `tiles` and `tile` (n descriptors) are device arrays. */
int frame_blend_cuda(const float *tiles, int n, int mw, int mh,
                     const struct frame_tile *tile, int ww, int wh, float *out,
                     cudaStream_t st, vr_err *err);

/* frame_matte.cu: the twins of frame_gate_ref, frame_fuse_ref and frame_morph_ref (device
 * pointers: `tile` holds n descriptors; gate scratch: (n-1)*mw*mh floats
 * and n-1 sums; morph scratch: w*h floats). The gate's tile trust is
 * frame_gate_trust of the integer claim, as in the twin. */
int frame_gate_cuda(float *tiles, int n, int mw, int mh, const struct frame_tile *tile,
                    int ww, int wh, int r, float *scratch, unsigned long long *sums,
                    cudaStream_t st, vr_err *err);
int frame_fuse_cuda(const float *p, int mw, int mh, int ww, int wh, float *work,
                    cudaStream_t st, vr_err *err);
int frame_morph_cuda(float *work, int w, int h, int r, float *scratch, cudaStream_t st,
                     vr_err *err);

/* scratch: FRAME_GUIDED_SCRATCH(w, h) device floats. */
int frame_guided_coeffs_cuda(const float *I, const float *p, int w, int h, int r,
                             float eps, float *a, float *b, float *scratch,
                             cudaStream_t st, vr_err *err);

/* frame_guided_band_ref's twin; band: w*h device floats. */
int frame_guided_band_cuda(const float *p, int w, int h, int r, int rbox, float *a, float *b,
                           float *band, cudaStream_t st, vr_err *err);

int frame_guided_apply_cuda(const float *a, const float *b, int w, int h,
                            const struct seg_frame *f, struct frame_rect rect,
                            uint8_t *dst, int dst_linesize, int dw, int dh,
                            cudaStream_t st, vr_err *err);

int frame_upsample_bilinear_cuda(const float *mask, int w, int h, uint8_t *dst,
                                 int dst_linesize, int dw, int dh,
                                 cudaStream_t st, vr_err *err);

/* ---- batched forms (the engine's) ---- */

#define FRAME_CU_MAX_FRAMES 64 /* frames per batch: seg_impl.h's SEG_MAX_BATCH */
#define FRAME_CU_MAX_EYES 2

/* The frames of one call, passed to kernels by value (so no upload per
 * call): same format and size for all, planes device pointers. */
struct frame_batch {
    int n;                 /* frames, 1..FRAME_CU_MAX_FRAMES */
    int fmt;               /* enum seg_pixfmt */
    int full_range;
    const uint8_t *data[FRAME_CU_MAX_FRAMES][3];
    int linesize[FRAME_CU_MAX_FRAMES][3];
};

/* Output masks of one call (device pointers), one per frame. */
struct frame_masks {
    uint8_t *data[FRAME_CU_MAX_FRAMES];
    int linesize[FRAME_CU_MAX_FRAMES];
};

/* One eye of the plan as the batched kernels need it. Per frame the tiles
 * of all eyes are consecutive (eye 0's, then eye 1's) in the network batch,
 * and the eyes' work images are consecutive in each work buffer. */
struct frame_cu_eye {
    struct frame_rect eye;   /* frame pixels */
    struct frame_rect out;   /* pixels of the output mask */
    int work_w, work_h;
    int tile0, ntiles;       /* this eye's tiles inside one frame's tiles */
    size_t work_off;         /* this eye's offset (floats) in one frame's work images */
};

struct frame_cu_plan {
    int n_eyes;
    struct frame_cu_eye e[FRAME_CU_MAX_EYES];
    int tiles_per_frame;
    size_t work_per_frame;   /* floats of one frame's work images (all eyes) */
    int max_work;            /* largest work_w * work_h */
    int max_out;             /* largest out.w * out.h */
};

/* Every tile of every frame: rects (device, [tiles_per_frame], frame
 * pixels) into out [fb->n][tiles_per_frame][mh][mw][3]. */
int frame_preprocess_batch_cuda(const struct frame_batch *fb, const struct frame_rect *rects,
                                int tiles_per_frame, int mw, int mh, float *out,
                                cudaStream_t st, vr_err *err);

/* Whether frame_preprocess_fold_batch_cuda can write the guide's lumas
 * with the tiles of plan p (rects: its tiles, host memory): every eye's last
 * tile is the eye itself in boxes 16 pixels wide (an 8K eye into 256x256),
 * 4k rows high, from an even row and a word, and its work image is twice
 * the tile. */
int frame_luma_folds(const struct frame_cu_plan *p, const struct frame_rect *rects, int mw,
                     int mh);

/* frame_preprocess_batch_cuda over plan p's tiles that also writes
 * frame_luma_batch_cuda's lumas (bit for bit) into luma when it is not NULL
 * (p as frame_luma_folds accepts): each eye's whole pass reads them, 2x2
 * a tile pixel, in the same pass over the frame. */
int frame_preprocess_fold_batch_cuda(const struct frame_batch *fb,
                                     const struct frame_rect *rects,
                                     const struct frame_cu_plan *p, int mw, int mh, float *out,
                                     float *luma, cudaStream_t st, vr_err *err);

/* Per frame and eye: the eye's luma at work size into out (work layout). */
int frame_luma_batch_cuda(const struct frame_batch *fb, const struct frame_cu_plan *p,
                          float *out, cudaStream_t st, vr_err *err);

/* Per frame and eye: tiles [n][tiles_per_frame][mh][mw] blended with the
 * device descriptors `tile` ([tiles_per_frame]) into out (work layout). */
int frame_blend_batch_cuda(const float *tiles, int n, int mw, int mh,
                           const struct frame_tile *tile, const struct frame_cu_plan *p,
                           float *out, cudaStream_t st, vr_err *err);

/* Guided coefficients of n * n_eyes work images (work layout); scratch is
 * FRAME_GUIDED_SCRATCH floats of n * work_per_frame. */
int frame_guided_coeffs_batch_cuda(const float *I, const float *p, int n,
                                   const struct frame_cu_plan *pl, int r, float eps,
                                   float *a, float *b, float *scratch,
                                   cudaStream_t st, vr_err *err);

/* frame_guided_band_ref on n * n_eyes work images (work layout): p the
 * work masks, a and b their coefficients (changed in place); band: n *
 * work_per_frame floats of scratch. r <= 0: nothing. */
int frame_guided_band_batch_cuda(const float *p, int n, const struct frame_cu_plan *pl, int r,
                                 int rbox, float *a, float *b, float *band, cudaStream_t st,
                                 vr_err *err);

/* The refinement of a whole call in one pass per output pixel: for each
 * frame, guided apply (a, b from the guided coefficients; guided = 0:
 * bilinear upsample of a alone, b unused) into the frame's mask. The
 * temporal filter runs after it (frame_temporal.h). */
int frame_refine_batch_cuda(const float *a, const float *b, int guided,
                            const struct frame_batch *fb, const struct frame_cu_plan *p,
                            const struct frame_masks *masks, cudaStream_t st, vr_err *err);

/* ---- helpers ---- */

/* Fills a 1-frame batch from a frame view. */
void frame_batch_one(struct frame_batch *fb, const struct seg_frame *f);

/* Builds the batched plan view of a tile plan. */
void frame_cu_plan_make(const struct tile_plan *tp, struct frame_cu_plan *p);

#ifdef __cplusplus
}
#endif

/* ---- device helpers shared by kernels/seg/frame_*.cu ---- */

#ifdef __CUDACC__
/* The C twins compile without FMA contraction (x86-64 baseline), so where a
 * result is rounded to u8 the kernels spell out each rounding step: the same
 * float ops in the same order give the same bits. */
static __device__ __forceinline__ float fcu_lerp(float a, float b, float t)
{
    return __fadd_rn(a, __fmul_rn(__fsub_rn(b, a), t));
}

/* frame_to_u8 of frame_ref.h, without branches: fmaxf takes NaN and
 * x <= 0 to +0, fminf x >= 255 to 255, and the truncation does the rest. */
static __device__ __forceinline__ uint8_t fcu_to_u8(float v)
{
    float x = __fadd_rn(__fmul_rn(v, 255.0f), 0.5f);
    return (uint8_t)__float2uint_rz(fminf(fmaxf(x, 0.0f), 255.0f));
}

/* bilin_taps of frame_sample_ref.c: half-pixel centres, clamped to [0, r-1]. */
static __device__ __forceinline__ void fcu_taps(int o, int r, int d, int *i0, int *i1,
                                                float *t)
{
    float f = __fsub_rn(__fdiv_rn(__fmul_rn((float)o + 0.5f, (float)r), (float)d), 0.5f);
    f = f < 0.0f ? 0.0f : f;
    f = f > (float)(r - 1) ? (float)(r - 1) : f;
    int i = (int)f;
    *i0 = i;
    *i1 = i + 1 < r ? i + 1 : r - 1;
    *t = __fsub_rn(f, (float)i);
}

/* Launch error to VR_ECUDA with text. */
static inline int fcu_check(const char *what, vr_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "%s: CUDA launch failed: %s", what,
                          cudaGetErrorString(e));
    return 0;
}
#endif

#endif

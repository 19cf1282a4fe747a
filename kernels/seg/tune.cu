/*
 * tune.cu - the auto-tuner's timing half (tune.h): builds one real-sized
 * frame (an image stretched into every eye, or a deterministic synthetic
 * scene) as NV12 like NVDEC gives it, segments it once with the CPU engine
 * (float32 C network and C frame kernels: the reference mask), then builds
 * the SEG_CUDA engine once per candidate network variant and batch size,
 * times whole calls (preprocess + network + blend + refinement, CUDA
 * events) on that frame in device memory, and keeps the fastest variant
 * whose mask stays within TUNE_MAX_ABS of the reference.
 *
 * The mask, not the raw network output, is what is checked: blending and
 * the guided filter average the network's output, and the mask is what the
 * product delivers. Candidates are ordered most-promising first and timing
 * stops at TUNE_BUDGET_S, so `vr-worker tune` finishes within a minute. *
 * C twin: tune_ref.c, the plain-C half every candidate is held to (the
 * frame, the CPU engine's reference mask, the distance from it, the pick);
 * this file keeps what needs the GPU (the device frame, the timing, the
 * device key and its cache lookup).
 */
#include "frame_cuda.h" /* first: brings the C headers in with C linkage */
extern "C" {
#include "seg.h"
#include "clock.h"
#include "log.h"
#include "model.h"
#include "paths.h"
}
#include "net_cuda.h"
#include "seg_backend.h"
#include "tiles.h"
#include "tune.h"
#include "tune_ref.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TUNE_WARMUP 2
#define TUNE_REPS 10

/* ---- candidates ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Times one variant through the whole CUDA engine: row->frames copies of
 * the device frame `df` a call; fills ms, ms_per_frame, tiles_per_s and
 * max_abs (first mask vs the CPU engine's `ref`, in [0,1] units). */
static void time_candidate(const struct seg_opts *base, struct tune_row *row, int tpf,
                           const struct seg_frame *df, uint8_t *d_masks, const uint8_t *ref,
                           uint8_t *h_mask)
{
    struct seg *s = NULL;
    struct seg_opts o = *base;
    struct seg_frame f[FRAME_CU_MAX_FRAMES];
    struct seg_mask m[FRAME_CU_MAX_FRAMES];
    struct seg_timing t;
    vr_err e = { 0, "" };
    const size_t msz = (size_t)o.out_w * o.out_h;
    double ms[TUNE_REPS];

    row->ok = 0;
    row->max_abs = -1.0;
    o.max_batch = row->frames;
    row->net.max_batch = row->frames * tpf;
    if (seg_cuda_create_variant(&o, &row->net, &s, &e) < 0) {
        snprintf(row->note, sizeof row->note, "create: %.38s", e.msg);
        return;
    }
    for (int i = 0; i < row->frames; i++) {
        f[i] = *df;
        m[i] = (struct seg_mask){ d_masks + i * msz, o.out_w, o.out_h, o.out_w, 1 };
    }
    for (int i = 0; i < TUNE_WARMUP + TUNE_REPS; i++) {
        seg_reset(s);
        if (seg_run(s, f, row->frames, m, &t, &e) < 0) {
            snprintf(row->note, sizeof row->note, "run: %.40s", e.msg);
            seg_free(&s);
            cudaGetLastError();
            return;
        }
        if (i >= TUNE_WARMUP)
            ms[i - TUNE_WARMUP] = t.preprocess + t.inference + t.postprocess;
    }
    seg_free(&s);
    qsort(ms, TUNE_REPS, sizeof ms[0], cmp_double);
    row->ms = ms[TUNE_REPS / 2];
    row->ms_per_frame = row->ms / row->frames;
    row->tiles_per_s = row->frames * tpf / (row->ms * 1e-3);
    if (cudaMemcpy(h_mask, d_masks, msz, cudaMemcpyDeviceToHost) != cudaSuccess) {
        snprintf(row->note, sizeof row->note, "copy back failed");
        return;
    }
    row->max_abs = tune_mask_diff(h_mask, ref, msz);
    row->ok = row->max_abs <= TUNE_MAX_ABS;
    if (!row->ok)
        snprintf(row->note, sizeof row->note, "mask off by %.3f", row->max_abs);
}

/* ---- run ---- */

#define TRY_CUDA(call, what)                                                        \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            rc = vr_err_set(err, VR_ECUDA, "tune: %s: %s", what, cudaGetErrorString(e_)); \
            goto done;                                                              \
        }                                                                           \
    } while (0)

/* What the candidates are timed on: one real-sized NV12 frame on the host
 * and on the GPU, the CPU engine's mask of it (the reference), and the
 * engine options every candidate shares. */
struct tune_bench {
    struct seg_opts o;
    int tpf;                      /* tiles per frame */
    size_t msz;                   /* mask bytes */
    uint8_t *h_rgb, *h_nv12, *d_nv12, *ref, *h_mask, *d_masks;
    struct seg_frame hf, df;      /* the frame, host and device views */
};

static void tune_bench_free(struct tune_bench *b)
{
    cudaFree(b->d_nv12);
    cudaFree(b->d_masks);
    free(b->h_rgb);
    free(b->h_nv12);
    free(b->ref);
    free(b->h_mask);
    memset(b, 0, sizeof *b);
}

/* The model, the key and its cache file; 1 when the cache already has the
 * key (and not p->force): r->choice is filled, nothing to time. */
static int tune_lookup(const struct tune_params *p, struct model **m, struct tune_report *r,
                       vr_err *err)
{
    char path[CONFIG_STR + 512];
    vr_data_path(p->cfg->model, path, sizeof path);
    int rc = model_load(path, m, err);
    if (rc == 0)
        rc = tune_key_make(p->gpu, *m, p->cfg, p->layout, p->in_w, p->in_h, &r->key, err);
    if (rc < 0)
        return rc;
    tune_key_string(&r->key, r->key_str, sizeof r->key_str);
    if ((rc = tune_cache_path(r->cache_path, sizeof r->cache_path, err)) < 0)
        return rc;
    vr_err ignore = { 0, "" };
    if (!p->force && tune_cache_load(r->cache_path, r->key_str, &r->choice, &ignore) == 0) {
        r->from_cache = 1;
        return 1;
    }
    return 0;
}

/* The engine's options (the pipeline's mask size: output_scale, even) and
 * the frame, host and device, plus the CPU engine's reference mask. */
static int tune_bench_make(const struct tune_params *p, const struct model *m, int max_frames,
                           struct tune_bench *b, vr_err *err)
{
    const int w = p->in_w & ~1, h = p->in_h & ~1;
    struct seg_opts *o = &b->o;
    *o = (struct seg_opts){ .backend = SEG_CPU, .gpu = p->gpu, .cfg = p->cfg,
                            .layout = p->layout, .in_w = w, .in_h = h,
                            .out_w = (int)(w * p->cfg->output_scale) & ~1,
                            .out_h = (int)(h * p->cfg->output_scale) & ~1, .max_batch = 1 };
    o->out_w = o->out_w < 4 ? 4 : o->out_w;
    o->out_h = o->out_h < 4 ? 4 : o->out_h;
    struct tile_plan plan;
    int rc = tile_plan_make(p->cfg, p->layout, w, h, o->out_w, o->out_h, m->in_w, m->in_h, &plan,
                            err);
    if (rc < 0)
        return rc;
    for (int e = 0; e < plan.n_eyes; e++)
        b->tpf += plan.eye[e].n;
    b->msz = (size_t)o->out_w * o->out_h;
    b->h_rgb = (uint8_t *)malloc((size_t)w * h * 3);
    b->h_nv12 = (uint8_t *)malloc((size_t)w * h * 3 / 2);
    b->ref = (uint8_t *)malloc(b->msz);
    b->h_mask = (uint8_t *)malloc(b->msz);
    if (!b->h_rgb || !b->h_nv12 || !b->ref || !b->h_mask)
        return vr_err_set(err, VR_ENOMEM, "tune: out of memory");
    tune_frame_make(b->h_rgb, w, h, p->layout, p->image);
    tune_frame_nv12(b->h_rgb, w, h, b->h_nv12, b->h_nv12 + (size_t)w * h);
    TRY_CUDA(cudaMalloc((void **)&b->d_nv12, (size_t)w * h * 3 / 2), "frame");
    TRY_CUDA(cudaMemcpy(b->d_nv12, b->h_nv12, (size_t)w * h * 3 / 2, cudaMemcpyHostToDevice),
             "frame");
    TRY_CUDA(cudaMalloc((void **)&b->d_masks, b->msz * max_frames), "masks");
    b->hf = (struct seg_frame){ .fmt = SEG_PIX_NV12, .w = w, .h = h,
                                .data = { b->h_nv12, b->h_nv12 + (size_t)w * h },
                                .linesize = { w, w } };
    b->df = b->hf;
    b->df.data[0] = b->d_nv12;
    b->df.data[1] = b->d_nv12 + (size_t)w * h;
    b->df.on_device = 1;
    if ((rc = tune_ref_mask(o, &b->hf, b->ref, err)) < 0)
        return rc;
    o->backend = SEG_CUDA;
    return 0;
done: /* TRY_CUDA's exit */
    return rc;
}

/* Times every candidate, most promising first (fp32 only when the profile
 * says so), until the time budget from t0 runs out. */
static void tune_candidates(const struct tune_params *p, struct tune_bench *b,
                            struct tune_report *r, double t0)
{
    static const int frames_opts[] = { 16, 4, 1 };
    static const int block_opts[] = { 256, 128 };
    const int fp16_allowed = strcmp(p->cfg->precision, "fp32") != 0;
    for (int fi = 0; fi < 3; fi++)
        for (int hh = fp16_allowed ? 1 : 0; hh >= 0; hh--)
            for (int fu = 2; fu >= 0; fu--)
                for (int g = 1; g >= 0; g--)
                    for (int bi = 0; bi < 2 && r->n_rows < TUNE_MAX_ROWS; bi++) {
                        struct tune_row *row = &r->rows[r->n_rows++];
                        memset(row, 0, sizeof *row);
                        row->frames = frames_opts[fi];
                        row->net.fp16 = hh;
                        row->net.fused = fu;
                        row->net.use_graph = g;
                        row->net.block = block_opts[bi];
                        if (clock_mono_s() - t0 > TUNE_BUDGET_S) {
                            snprintf(row->note, sizeof row->note, "skipped: time budget");
                            row->max_abs = -1.0;
                            continue;
                        }
                        time_candidate(&b->o, row, b->tpf, &b->df, b->d_masks, b->ref,
                                       b->h_mask);
                    }
}

extern "C" int tune_run(const struct tune_params *p, struct tune_report *r, vr_err *err)
{
    double t0 = clock_mono_s();
    struct model *m = NULL;
    struct tune_bench b;
    memset(&b, 0, sizeof b);
    memset(r, 0, sizeof *r);
    r->best = -1;
    int rc = 0;
    TRY_CUDA(cudaSetDevice(p->gpu), "select GPU");
    if ((rc = tune_lookup(p, &m, r, err)) != 0) {
        rc = rc < 0 ? rc : 0; /* 1: from the cache */
        goto done;
    }
    if ((rc = tune_bench_make(p, m, 16, &b, err)) < 0)
        goto done;
    r->tiles_per_frame = b.tpf;
    tune_candidates(p, &b, r, t0);
    rc = tune_pick(r, err);
done:
    r->seconds = clock_mono_s() - t0;
    tune_bench_free(&b);
    model_free(&m);
    return rc;
}

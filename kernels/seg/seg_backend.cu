/*
 * seg_backend.cu - the CUDA backend of the segmentation engine (seg.h): the
 * frame kernels of frame_cuda.h around the GPU network (net_cuda.h), every
 * buffer allocated at creation and every stage batched over all frames and
 * eyes of a call:
 *
 *   preprocess (1 launch: every tile of every eye of every frame; the
 *   guide's luma too where frame_luma_folds allows, as for 8K SBS)
 *   -> netcu_run (1 call: all those tiles; with fuse_model, a second one:
 *      its preprocess and network over the whole eyes)
 *      beside it, on a side stream: luma at work size (1, unless folded),
 *      temporal lumas and change sums (1)
 *   -> the tiles bounded by the whole pass (per eye, when on: 2)
 *   -> blend (1) -> close/open (per eye, when on: 8)
 *   -> the people tier (people: "pose", people_cuda.h: per frame and eye,
 *      its nets and small kernels, two or three waits for the stream)
 *   -> the eyes' masks fused with each other (stereo_bands, when on: 5)
 *   -> guided coefficients (2; 4 for r > 16)
 *   -> refine into the output masks (1, all frames) -> the refined eyes
 *      fused again (guided, stereo: 1) -> temporal filter (1)
 *
 * Frames and masks are device memory when on_device (NVDEC surfaces never
 * leave the GPU); host frames and masks go through pinned staging buffers,
 * allocated on the first call that needs them. Stage times come from CUDA
 * events. seg_run() returns when the masks are written (it synchronises the
 * engine's stream), so the caller may reuse its buffers at once.
 */
#include "frame_cuda.h" /* first: brings the C headers in with C linkage */
#include "frame_stereo.h"
#include "frame_temporal.h"
extern "C" {
#include "log.h"
#include "model.h"
}
#include "net_cuda.h"
#include "people_cuda.h"
#include "seg_impl.h"
#include "tune.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tuning key ----
 * Made here, where the engine looks its tuned variant up (tune_cache.c),
 * and used by the tuner (tune.cu) to store it: the tuner calls the engine,
 * never the other way round. */
extern "C" int tune_key_make(int gpu, const struct model *m, const struct vr_config *cfg,
                             enum seg_layout layout, int in_w, int in_h, struct tune_key *k,
                             vr_err *err)
{
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, gpu);
    if (e != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "tune: GPU %d: %s", gpu, cudaGetErrorString(e));
    memset(k, 0, sizeof *k);
    snprintf(k->gpu_name, sizeof k->gpu_name, "%.95s", prop.name);
    k->sm_count = prop.multiProcessorCount;
    snprintf(k->model_hash, sizeof k->model_hash, "%s", m->hash);
    k->in_w = in_w;
    k->in_h = in_h;
    k->layout = layout;
    snprintf(k->profile, sizeof k->profile, "%s", cfg->profile);
    return 0;
}

struct seg_cu {
    int dev;
    cudaStream_t st;
    cudaEvent_t ev[4];            /* stage boundaries, for seg_timing */
    cudaEvent_t decoded;          /* the legacy default stream's work so far (NVDEC copies) */
    cudaStream_t side;            /* the lumas, which read only the frames, beside the net */
    cudaEvent_t fork, join;       /* side waits for the frames; st for the lumas */
    struct netcu *net;
    struct netcu_opts nopts;
    struct frame_cu_plan plan;
    int fold_luma;                /* frame_luma_folds: the preprocess can write the luma */
    int mw, mh;
    struct frame_rect *d_rects;   /* [tiles_per_frame], frame pixels */
    struct frame_tile *d_tiles;   /* [tiles_per_frame], work pixels */
    float *d_in, *d_out;          /* network batch in / out */
    float *d_work, *d_luma, *d_a, *d_b, *d_scratch; /* work layout x max_batch */
    float *d_gate;                /* [max tiles of an eye][mh][mw]: the gate's dilated whole pass */
    struct netcu *fnet;           /* the fused model's network (cfg.fuse_model), or NULL */
    struct frame_rect *d_eyes;    /* [n_eyes]: its inputs, the whole eyes */
    float *d_fin, *d_fout;        /* its batch in / out: [max_batch][n_eyes] eyes */
    unsigned long long *d_gate_sums; /* [max tiles of an eye]: the gate's tile claims */
    void *d_stereo;               /* frame_stereo_batch_cuda's workspace, or NULL */
    struct people_cu *people;     /* the people tier (cfg.people "pose"), or NULL */
    struct temporal_opts topt;    /* the temporal filter (frame_temporal.h) */
    struct temporal_state tst;    /* its window's bookkeeping, replayed on the host */
    uint8_t *d_ring_m, *d_ring_y; /* its window: K-1 slots of out_w x out_h */
    uint8_t *d_held;              /* the hold's last outputs (smooth_hold), or NULL */
    uint8_t *d_still;             /* [max_batch] planes of the neighbourhood test's bits
                                   * (smooth_still_radius > 0), or NULL */
    uint8_t *d_ycur;              /* [max_batch][out_h][out_w] lumas of a call */
    unsigned long long *d_sad, *h_sad; /* [max_batch] luma change sums (h_: pinned) */
    /* host frames (allocated on first use) */
    size_t plane_off[3], plane_pitch[3], plane_rows[3], frame_bytes;
    uint8_t *d_frames;            /* [max_batch][frame_bytes] */
    uint8_t *h_pin[2];            /* double-buffered upload staging */
    cudaEvent_t pin_ev[2];
    /* host masks (allocated on first use) */
    uint8_t *d_masks;             /* [max_batch][out_h][out_w] */
    uint8_t *h_masks;             /* pinned copy of it */
    size_t dev_bytes;             /* what this backend allocated on the device */
};

#define CU_TRY(call, what)                                                          \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            rc = vr_err_set(err, VR_ECUDA, "seg (cuda): %s: %s", what,             \
                            cudaGetErrorString(e_));                                \
            goto fail;                                                              \
        }                                                                           \
    } while (0)

static int dev_alloc(struct seg_cu *c, void **p, size_t bytes, const char *what, vr_err *err)
{
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
        *p = NULL;
        return vr_err_set(err, VR_ENOMEM, "seg (cuda): cannot allocate %zu MB on GPU %d "
                          "for %s: %s", bytes >> 20, c->dev, what, cudaGetErrorString(e));
    }
    c->dev_bytes += bytes;
    return 0;
}

/* ---- host frame staging ---- */

/* Tight plane layout of one host frame as uploaded. */
static void host_layout(struct seg_cu *c, int fmt, int w, int h)
{
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    size_t pitch[3] = { 0, 0, 0 }, rows[3] = { 0, 0, 0 };
    switch (fmt) {
    case SEG_PIX_RGB24: pitch[0] = 3 * (size_t)w; rows[0] = h; break;
    case SEG_PIX_NV12: pitch[0] = w; rows[0] = h; pitch[1] = 2 * (size_t)cw; rows[1] = ch; break;
    case SEG_PIX_P010: pitch[0] = 2 * (size_t)w; rows[0] = h; pitch[1] = 4 * (size_t)cw; rows[1] = ch; break;
    default: pitch[0] = w; rows[0] = h; pitch[1] = pitch[2] = cw; rows[1] = rows[2] = ch; break;
    }
    size_t off = 0;
    for (int p = 0; p < 3; p++) {
        /* 256-byte aligned planes keep the kernels' 16/32-bit loads aligned */
        c->plane_off[p] = off;
        c->plane_pitch[p] = pitch[p];
        c->plane_rows[p] = rows[p];
        off += (pitch[p] * rows[p] + 255) & ~(size_t)255;
    }
    c->frame_bytes = off;
}

static int host_frames_ready(struct seg *s, struct seg_cu *c, int fmt, vr_err *err)
{
    int rc;
    if (c->d_frames)
        return 0;
    host_layout(c, fmt, s->opts.in_w, s->opts.in_h);
    if ((rc = dev_alloc(c, (void **)&c->d_frames, c->frame_bytes * s->opts.max_batch,
                        "host frames", err)) < 0)
        return rc;
    for (int i = 0; i < 2; i++) {
        CU_TRY(cudaMallocHost((void **)&c->h_pin[i], c->frame_bytes), "pinned frame buffer");
        CU_TRY(cudaEventCreateWithFlags(&c->pin_ev[i], cudaEventDisableTiming), "event");
    }
    return 0;
fail:
    return rc;
}

/* Copies host frame f into device slot i (through a pinned buffer, so the
 * transfer is a DMA that overlaps the next frame's memcpy) and points *v at
 * the device copy. */
static int upload_frame(struct seg_cu *c, const struct seg_frame *f, int i,
                        struct frame_batch *fb, vr_err *err)
{
    int rc = 0, slot = i & 1;
    uint8_t *pin = c->h_pin[slot], *dst = c->d_frames + (size_t)i * c->frame_bytes;
    CU_TRY(cudaEventSynchronize(c->pin_ev[slot]), "upload");
    for (int p = 0; p < 3; p++) {
        if (!c->plane_rows[p])
            continue;
        for (size_t y = 0; y < c->plane_rows[p]; y++)
            memcpy(pin + c->plane_off[p] + y * c->plane_pitch[p],
                   f->data[p] + y * f->linesize[p], c->plane_pitch[p]);
        fb->data[i][p] = dst + c->plane_off[p];
        fb->linesize[i][p] = (int)c->plane_pitch[p];
    }
    CU_TRY(cudaMemcpyAsync(dst, pin, c->frame_bytes, cudaMemcpyHostToDevice, c->st), "upload");
    CU_TRY(cudaEventRecord(c->pin_ev[slot], c->st), "upload");
    return 0;
fail:
    return rc;
}

static int host_masks_ready(struct seg *s, struct seg_cu *c, vr_err *err)
{
    int rc;
    size_t bytes = (size_t)s->opts.out_w * s->opts.out_h * s->opts.max_batch;
    if (c->d_masks)
        return 0;
    if ((rc = dev_alloc(c, (void **)&c->d_masks, bytes, "host masks", err)) < 0)
        return rc;
    CU_TRY(cudaMallocHost((void **)&c->h_masks, bytes), "pinned mask buffer");
    return 0;
fail:
    return rc;
}

/* The temporal filter's window and per-call buffers (none when it is off). */
static int temporal_alloc(struct seg *s, struct seg_cu *c, vr_err *err)
{
    int rc = 0;
    const size_t plane = (size_t)s->opts.out_w * s->opts.out_h;
    temporal_opts_from_config(&c->topt, &s->cfg, s->opts.out_w, s->opts.out_h);
    temporal_reset(&c->tst);
    if (c->topt.frames < 2)
        return 0;
    const size_t slots = c->topt.frames - 1, B = s->opts.max_batch;
    if ((rc = dev_alloc(c, (void **)&c->d_ring_m, slots * plane, "temporal window", err)) < 0
        || (rc = dev_alloc(c, (void **)&c->d_ring_y, slots * plane, "temporal window", err)) < 0
        || (rc = dev_alloc(c, (void **)&c->d_ycur, B * plane, "temporal luma", err)) < 0
        || (rc = dev_alloc(c, (void **)&c->d_sad, B * sizeof *c->d_sad, "temporal sums", err)) < 0
        || (c->topt.hold > 0
            && (rc = dev_alloc(c, (void **)&c->d_held, plane, "temporal hold", err)) < 0)
        || (c->topt.still_r > 0
            && (rc = dev_alloc(c, (void **)&c->d_still, B * plane, "temporal stillness",
                               err)) < 0))
        return rc;
    CU_TRY(cudaMallocHost((void **)&c->h_sad, B * sizeof *c->h_sad), "pinned temporal sums");
    return 0;
fail:
    return rc;
}

/* ---- run ---- */

/* Around the blend (frame_matte.cu), per frame and eye: before it
 * (after = 0) the tiles bounded by the whole pass, after it the fused
 * model's whole pass and the close/open of the work masks. A few small launches an eye; nothing when off. */
static int matte_cleanup(struct seg *s, struct seg_cu *c, int n, int after, vr_err *err)
{
    const struct frame_cu_plan *p = &c->plan;
    const size_t tile_px = (size_t)c->mw * c->mh;
    int rc = 0;
    for (int f = 0; f < n; f++)
        for (int e = 0; e < p->n_eyes; e++) {
            const struct frame_cu_eye *ce = &p->e[e];
            float *tiles = c->d_out + ((size_t)f * p->tiles_per_frame + ce->tile0) * tile_px;
            float *work = c->d_work + (size_t)f * p->work_per_frame + ce->work_off;
            if (!after && seg_gated(s, &s->plan.eye[e])
                && (rc = frame_gate_cuda(tiles, ce->ntiles, c->mw, c->mh, c->d_tiles + ce->tile0,
                                         ce->work_w, ce->work_h, s->cfg.tile_gate, c->d_gate,
                                         c->d_gate_sums, c->st, err)) < 0)
                return rc;
            const size_t fpx = s->fuse ? (size_t)s->fuse->in_w * s->fuse->in_h : 0;
            if (after && c->fnet
                && (rc = frame_fuse_cuda(c->d_fout + ((size_t)f * p->n_eyes + e) * fpx,
                                         s->fuse->in_w, s->fuse->in_h, ce->work_w, ce->work_h,
                                         work, c->st, err)) < 0)
                return rc;
            if (after && (rc = frame_morph_cuda(work, ce->work_w, ce->work_h, s->cfg.morph,
                                                c->d_scratch, c->st, err)) < 0)
                return rc;
        }
    return 0;
}

static int cu_run(struct seg *s, const struct seg_frame *frames, int n,
                  struct seg_mask *masks, struct seg_timing *timing, vr_err *err)
{
    struct seg_cu *c = (struct seg_cu *)s->priv;
    const struct frame_cu_plan *p = &c->plan;
    const int ow = s->opts.out_w, oh = s->opts.out_h;
    const int smoothing = c->topt.frames > 1;
    const int stereo = seg_stereo(s), need_luma = s->refine_guided || stereo;
    const int fold = need_luma && c->fold_luma; /* the work lumas from the preprocess */
    int rc = 0, host_masks = 0;
    static struct frame_batch fb_zero;
    struct frame_batch fb = fb_zero;
    struct frame_masks fm;

    CU_TRY(cudaSetDevice(c->dev), "select GPU");
    fb.n = n;
    fb.fmt = frames[0].fmt;
    fb.full_range = frames[0].full_range;
    for (int i = 0; i < n; i++)
        if (frames[i].fmt != frames[0].fmt || frames[i].full_range != frames[0].full_range)
            return vr_err_set(err, VR_EINVAL, "seg (cuda): frames of one call differ in "
                              "pixel format or range (frame %d)", i);

    /* the kernels load NV12 chroma as 16-bit and P010 samples as 16/32-bit
     * words: device planes must be aligned as decoders give them */
    for (int i = 0; i < n; i++) {
        const struct seg_frame *f = &frames[i];
        unsigned need0 = f->fmt == SEG_PIX_P010 ? 2 : 1;
        unsigned need1 = f->fmt == SEG_PIX_P010 ? 4 : f->fmt == SEG_PIX_NV12 ? 2 : 1;
        if (f->on_device
            && (((uintptr_t)f->data[0] | (unsigned)f->linesize[0]) % need0
                || (f->fmt != SEG_PIX_RGB24
                    && ((uintptr_t)f->data[1] | (unsigned)f->linesize[1]) % need1)))
            return vr_err_set(err, VR_EINVAL, "seg (cuda): frame %d: plane pointers and "
                              "linesizes must be multiples of %u bytes for this format",
                              i, need1);
    }

    /* libavcodec copies each NVDEC surface out on the context's legacy
     * default stream, asynchronously: the engine's non-blocking stream
     * waits for those copies, or a busy GPU lets the preprocess read a
     * frame before it is whole (3 workers sharing an H100: 6-10 of 300
     * frames differed from one process's, from the 11th frame on). */
    for (int i = 0; i < n; i++)
        if (frames[i].on_device) {
            CU_TRY(cudaEventRecord(c->decoded, cudaStreamLegacy), "event");
            CU_TRY(cudaStreamWaitEvent(c->st, c->decoded, 0), "wait for the decoder");
            break;
        }
    CU_TRY(cudaEventRecord(c->ev[0], c->st), "event");
    for (int i = 0; i < n; i++) {
        if (frames[i].on_device) {
            for (int q = 0; q < 3; q++) {
                fb.data[i][q] = frames[i].data[q];
                fb.linesize[i][q] = frames[i].linesize[q];
            }
        } else {
            if ((rc = host_frames_ready(s, c, fb.fmt, err)) < 0
                || (rc = upload_frame(c, &frames[i], i, &fb, err)) < 0)
                return rc;
        }
        if (masks[i].on_device) {
            fm.data[i] = masks[i].data;
            fm.linesize[i] = masks[i].linesize;
        } else {
            if ((rc = host_masks_ready(s, c, err)) < 0)
                return rc;
            fm.data[i] = c->d_masks + (size_t)i * ow * oh;
            fm.linesize[i] = ow;
            host_masks = 1;
        }
    }

    if ((rc = frame_preprocess_fold_batch_cuda(&fb, c->d_rects, p, c->mw, c->mh, c->d_in,
                                               fold ? c->d_luma : NULL, c->st, err)) < 0)
        return rc;
    /* the guide's luma and the temporal filter's lumas and change sums read
     * the frames only: on the side stream, beside the network (latency-bound
     * kernels that leave most of the GPU's bandwidth free; forked after the
     * preprocess, which needs the whole GPU), joined before their first
     * reader. Same kernels, same bits. 8K SBS on an H100: 3911 -> 3976
     * frames/s forked before the preprocess, 3978 after it (within noise).
     * The kernels hardly overlap the network (their grids fill the GPU
     * first): the guide's luma read by the preprocess's whole pass instead
     * took it to 4155. */
    CU_TRY(cudaEventRecord(c->fork, c->st), "event");
    CU_TRY(cudaStreamWaitEvent(c->side, c->fork, 0), "fork");
    if (need_luma && !fold
        && (rc = frame_luma_batch_cuda(&fb, p, c->d_luma, c->side, err)) < 0)
        return rc;
    if (smoothing && (rc = frame_temporal_luma_cuda(&c->topt, &c->tst, &fb, s->opts.in_w,
                                                    s->opts.in_h, c->d_ycur, c->d_ring_y,
                                                    c->d_sad, c->side, err)) < 0)
        return rc;
    CU_TRY(cudaEventRecord(c->join, c->side), "event");
    CU_TRY(cudaEventRecord(c->ev[1], c->st), "event");
    if ((rc = netcu_run(c->net, c->d_in, n * p->tiles_per_frame, c->d_out, c->st, err)) < 0)
        return vr_err_prefix(err, "seg (cuda): network");
    if (c->fnet
        && ((rc = frame_preprocess_batch_cuda(&fb, c->d_eyes, p->n_eyes, s->fuse->in_w,
                                              s->fuse->in_h, c->d_fin, c->st, err)) < 0
            || (rc = netcu_run(c->fnet, c->d_fin, n * p->n_eyes, c->d_fout, c->st, err)) < 0))
        return vr_err_prefix(err, "seg (cuda): fused network");
    CU_TRY(cudaEventRecord(c->ev[2], c->st), "event");

    if ((rc = matte_cleanup(s, c, n, 0, err)) < 0
        || (rc = frame_blend_batch_cuda(c->d_out, n, c->mw, c->mh, c->d_tiles, p, c->d_work,
                                        c->st, err)) < 0
        || (rc = matte_cleanup(s, c, n, 1, err)) < 0)
        return rc;
    /* the people tier lifts each eye's work mask before the eyes are fused
     * (seg_backend_ref.c's order), frame by frame: its window is in time */
    for (int f = 0; c->people && f < n; f++)
        for (int e = 0; e < p->n_eyes; e++)
            if ((rc = people_cu_eye(c->people, e, &fb, f,
                                    c->d_work + (size_t)f * p->work_per_frame + p->e[e].work_off,
                                    p->e[e].work_w, p->e[e].work_h, NULL, c->st, err)) < 0)
                return vr_err_prefix(err, "seg (cuda): people");
    CU_TRY(cudaStreamWaitEvent(c->st, c->join, 0), "join");
    if (stereo && (rc = frame_stereo_batch_cuda(c->d_work, c->d_luma, n, p, s->cfg.stereo_bands,
                                                c->d_scratch, c->d_stereo, c->st, err)) < 0)
        return rc;
    if (s->refine_guided) {
        if ((rc = frame_guided_coeffs_batch_cuda(c->d_luma, c->d_work, n, p,
                                                    s->cfg.guided_radius,
                                                    (float)s->cfg.guided_eps, c->d_a, c->d_b,
                                                    c->d_scratch, c->st, err)) < 0
            || (rc = frame_guided_band_batch_cuda(c->d_work, n, p, s->cfg.guided_band,
                                                  s->cfg.guided_radius, c->d_a, c->d_b,
                                                  c->d_scratch, c->st, err)) < 0)
            return rc;
    }
    rc = frame_refine_batch_cuda(s->refine_guided ? c->d_a : c->d_work, c->d_b,
                                 s->refine_guided, &fb, p, &fm, c->st, err);
    if (rc < 0)
        return rc;
    if (seg_stereo_refined(s)
        && (rc = frame_stereo_out_batch_cuda(&fm, n, p, s->cfg.stereo_bands, c->d_stereo, c->st,
                                             err)) < 0)
        return rc;
    if (smoothing) {
        if ((rc = frame_temporal_cuda(&c->topt, &c->tst, n, &fm, c->d_ycur, c->d_sad,
                                      c->d_ring_m, c->d_ring_y, c->d_held, c->d_still, c->st,
                                      err)) < 0)
            return rc;
        CU_TRY(cudaMemcpyAsync(c->h_sad, c->d_sad, n * sizeof *c->h_sad,
                               cudaMemcpyDeviceToHost, c->st), "temporal sums");
    }
    if (host_masks)
        CU_TRY(cudaMemcpyAsync(c->h_masks, c->d_masks, (size_t)n * ow * oh,
                               cudaMemcpyDeviceToHost, c->st), "mask download");
    CU_TRY(cudaEventRecord(c->ev[3], c->st), "event");
    CU_TRY(cudaEventSynchronize(c->ev[3]), "segmentation kernels");
    for (int i = 0; smoothing && i < n; i++) { /* the kernel's window decisions, on the host */
        temporal_cut(&c->topt, &c->tst, c->h_sad[i]);
        temporal_hold_step(&c->tst, c->h_sad[i]);
        temporal_push(&c->topt, &c->tst);
    }
    for (int i = 0; i < n; i++)
        if (!masks[i].on_device)
            for (int y = 0; y < oh; y++)
                memcpy(masks[i].data + (size_t)y * masks[i].linesize,
                       c->h_masks + ((size_t)i * oh + y) * ow, ow);
    if (timing) {
        float t[3];
        for (int k = 0; k < 3; k++)
            CU_TRY(cudaEventElapsedTime(&t[k], c->ev[k], c->ev[k + 1]), "timing");
        timing->preprocess = t[0];
        timing->inference = t[1];
        timing->postprocess = t[2];
    }
    return 0;
fail:
    return rc;
}

static void cu_reset(struct seg *s)
{
    struct seg_cu *c = (struct seg_cu *)s->priv;
    if (c) {
        temporal_reset(&c->tst);
        people_cu_reset(c->people);
    }
}

static void cu_destroy(struct seg *s)
{
    struct seg_cu *c = (struct seg_cu *)s->priv;
    if (!c)
        return;
    cudaSetDevice(c->dev);
    if (c->st)
        cudaStreamSynchronize(c->st);
    netcu_free(&c->net);
    netcu_free(&c->fnet);
    people_cu_free(&c->people);
    void *dev[] = { c->d_rects, c->d_tiles, c->d_in, c->d_out, c->d_work, c->d_luma,
                    c->d_a, c->d_b, c->d_scratch, c->d_ring_m, c->d_ring_y, c->d_ycur,
                    c->d_held, c->d_still, c->d_sad, c->d_frames, c->d_masks, c->d_gate,
                    c->d_gate_sums, c->d_eyes, c->d_fin, c->d_fout, c->d_stereo };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        cudaFree(dev[i]);
    for (int i = 0; i < 2; i++) {
        cudaFreeHost(c->h_pin[i]);
        if (c->pin_ev[i])
            cudaEventDestroy(c->pin_ev[i]);
    }
    cudaFreeHost(c->h_masks);
    cudaFreeHost(c->h_sad);
    for (int i = 0; i < 4; i++)
        if (c->ev[i])
            cudaEventDestroy(c->ev[i]);
    if (c->decoded)
        cudaEventDestroy(c->decoded);
    if (c->fork)
        cudaEventDestroy(c->fork);
    if (c->join)
        cudaEventDestroy(c->join);
    if (c->side)
        cudaStreamDestroy(c->side);
    if (c->st)
        cudaStreamDestroy(c->st);
    free(c);
    s->priv = NULL;
}

static const struct seg_backend_ops cuda_ops = {
    "cuda", cu_run, cu_reset, cu_destroy,
};

/* ---- create ---- */

/* The network variant: the tuner's choice for this GPU, model, geometry and
 * profile when the cache has one, else fp16 per the profile, fused with the
 * block chains (fused = 2: the fastest at every batch measured), graph. */
static void pick_variant(struct seg *s, struct seg_cu *c, int tiles)
{
    struct netcu_opts o = { tiles, strcmp(s->cfg.precision, "fp32") != 0, 2, 0, 1, 0, 0 };
    struct tune_key k;
    struct tune_choice ch;
    char key[320], path[512];
    vr_err e = { 0, "" };
    if (!getenv("VR_NO_TUNE") && tune_key_make(c->dev, s->model, &s->cfg, s->opts.layout,
                                               s->opts.in_w, s->opts.in_h, &k, &e) == 0
        && tune_cache_path(path, sizeof path, &e) == 0) {
        tune_key_string(&k, key, sizeof key);
        if (tune_cache_load(path, key, &ch, &e) == 0) {
            o = ch.net;
            o.max_batch = tiles;
            if (strcmp(s->cfg.precision, "fp32") == 0)
                o.fp16 = 0; /* a profile asking for fp32 gets it */
            log_debug("seg (cuda): tuned variant from %s: fp16=%d fused=%d block=%d graph=%d",
                      path, o.fp16, o.fused, o.block, o.use_graph);
        }
    }
    c->nopts = o;
}

int seg_cuda_create(const struct seg_opts *o, struct seg **out, vr_err *err)
{
    return seg_cuda_create_variant(o, NULL, out, err);
}

extern "C" int seg_cuda_create_variant(const struct seg_opts *o, const struct netcu_opts *net,
                                       struct seg **out, vr_err *err)
{
    int rc;
    struct seg_cu *c = NULL;
    struct seg *s = (struct seg *)calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "seg: out of memory");
    if ((rc = seg_common_init(s, o, err)) < 0)
        goto fail;
    s->ops = &cuda_ops;
    if (!(c = (struct seg_cu *)calloc(1, sizeof *c))) {
        rc = vr_err_set(err, VR_ENOMEM, "seg: out of memory");
        goto fail;
    }
    s->priv = c;
    c->dev = o->gpu;
    {
        int ndev = 0;
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
            rc = vr_err_set(err, VR_ECUDA, "seg (cuda): no CUDA GPU found (is the NVIDIA "
                            "driver loaded?); use --cpu");
            goto fail;
        }
        if (o->gpu < 0 || o->gpu >= ndev) {
            rc = vr_err_set(err, VR_EINVAL, "seg (cuda): GPU %d does not exist (%d found)",
                            o->gpu, ndev);
            goto fail;
        }
    }
    CU_TRY(cudaSetDevice(c->dev), "select GPU");
    CU_TRY(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking), "stream");
    for (int i = 0; i < 4; i++)
        CU_TRY(cudaEventCreate(&c->ev[i]), "event");
    CU_TRY(cudaEventCreateWithFlags(&c->decoded, cudaEventDisableTiming), "event");
    CU_TRY(cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking), "stream");
    CU_TRY(cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming), "event");
    CU_TRY(cudaEventCreateWithFlags(&c->join, cudaEventDisableTiming), "event");

    frame_cu_plan_make(&s->plan, &c->plan);
    c->mw = s->model->in_w;
    c->mh = s->model->in_h;
    {
        const struct frame_cu_plan *p = &c->plan;
        const int B = o->max_batch, tpf = p->tiles_per_frame;
        const size_t tile_px = (size_t)c->mw * c->mh, work = (size_t)B * p->work_per_frame;
        struct frame_rect rects[FRAME_CU_MAX_EYES * TILE_MAX_PER_EYE];
        struct frame_tile tiles[FRAME_CU_MAX_EYES * TILE_MAX_PER_EYE];
        for (int e = 0; e < p->n_eyes; e++)
            for (int t = 0; t < s->plan.eye[e].n; t++) {
                rects[p->e[e].tile0 + t] = s->plan.eye[e].src[t];
                tiles[p->e[e].tile0 + t] = s->plan.eye[e].dst[t];
            }
        if ((rc = dev_alloc(c, (void **)&c->d_rects, tpf * sizeof *rects, "tiles", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_tiles, tpf * sizeof *tiles, "tiles", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_in, B * tpf * tile_px * 3 * sizeof(float),
                               "network input", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_out, B * tpf * tile_px * sizeof(float),
                               "network output", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_work, work * sizeof(float), "work masks", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_luma, work * sizeof(float), "work luma", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_a, work * sizeof(float), "guided a", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_b, work * sizeof(float), "guided b", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_scratch, work * 6 * sizeof(float),
                               "guided scratch", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_gate, s->plan.max_tiles * tile_px
                               * sizeof(float), "gate", err)) < 0
            || (rc = dev_alloc(c, (void **)&c->d_gate_sums, s->plan.max_tiles
                               * sizeof(unsigned long long), "gate sums", err)) < 0
            || (rc = temporal_alloc(s, c, err)) < 0
            || (seg_stereo(s)
                && (rc = dev_alloc(c, &c->d_stereo,
                                   frame_stereo_ws_bytes(B, s->cfg.stereo_bands, p->e[0].work_w),
                                   "stereo", err)) < 0))
            goto fail;
        c->fold_luma = frame_luma_folds(p, rects, c->mw, c->mh);
        CU_TRY(cudaMemcpy(c->d_rects, rects, tpf * sizeof *rects, cudaMemcpyHostToDevice),
               "upload tiles");
        CU_TRY(cudaMemcpy(c->d_tiles, tiles, tpf * sizeof *tiles, cudaMemcpyHostToDevice),
               "upload tiles");
        if (net) {
            c->nopts = *net;
            c->nopts.max_batch = B * tpf;
        } else {
            pick_variant(s, c, B * tpf);
        }
        if ((rc = netcu_create(s->model, &c->nopts, &c->net, err)) < 0) {
            vr_err_prefix(err, "seg (cuda): network");
            goto fail;
        }
        if (s->fuse) { /* the fused model: the whole eyes, the main network's variant */
            struct netcu_opts fo = c->nopts;
            struct frame_rect eyes[FRAME_CU_MAX_EYES];
            const size_t fpx = (size_t)s->fuse->in_w * s->fuse->in_h;
            fo.max_batch = B * p->n_eyes;
            for (int e = 0; e < p->n_eyes; e++)
                eyes[e] = s->plan.eye[e].eye;
            if ((rc = dev_alloc(c, (void **)&c->d_eyes, p->n_eyes * sizeof *eyes, "eyes", err)) < 0
                || (rc = dev_alloc(c, (void **)&c->d_fin, fo.max_batch * fpx * 3 * sizeof(float),
                                   "fused input", err)) < 0
                || (rc = dev_alloc(c, (void **)&c->d_fout, fo.max_batch * fpx * sizeof(float),
                                   "fused output", err)) < 0)
                goto fail;
            CU_TRY(cudaMemcpy(c->d_eyes, eyes, p->n_eyes * sizeof *eyes,
                              cudaMemcpyHostToDevice), "upload eyes");
            if ((rc = netcu_create(s->fuse, &fo, &c->fnet, err)) < 0) {
                vr_err_prefix(err, "seg (cuda): fused network");
                goto fail;
            }
        }
        if (strcmp(s->cfg.people, "none") != 0) {
            struct frame_rect eyes[FRAME_CU_MAX_EYES];
            size_t bytes = 0;
            for (int e = 0; e < p->n_eyes; e++)
                eyes[e] = s->plan.eye[e].eye;
            if ((rc = people_cu_create(&s->cfg, eyes, p->n_eyes, &c->people, &bytes, err)) < 0) {
                vr_err_prefix(err, "seg (cuda): people");
                goto fail;
            }
            c->dev_bytes += bytes;
        }
    }
    *out = s;
    return 0;
fail:
    seg_free(&s);
    return rc;
}

/* Bytes of device memory the engine holds (its buffers + the network). */
extern "C" size_t seg_cuda_device_bytes(const struct seg *s)
{
    const struct seg_cu *c = s && s->priv && s->ops == &cuda_ops
                                 ? (const struct seg_cu *)s->priv : NULL;
    return c ? c->dev_bytes + netcu_device_bytes(c->net) : 0;
}

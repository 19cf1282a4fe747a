/*
 * pipeline.c - one video through decode -> segment -> compose + encode
 * (see pipeline.h), three threads joined by bounded queues:
 *
 *   decode ──q_dec (2*batch¹)─▶ segment (batches of cfg.batch frames;
 *     │                          GPU: frames stay in device memory, masks
 *     │ copied packets           are downloaded into pinned host buffers,
 *     │                          or stay there too for the GPU's matte
 *     │                          encoder: pipe.matte_dev)
 *     ▼                                   │ q_seg (2*batch+4¹)
 *   vio_out (muxer) ◀── encode ◀──────────┘
 *                        (compose the output kind, encode, mux; mask
 *                         buffers go back to the pool)
 *   ¹ a range chunk, which may be cut: batch and batch+1 (pipe_depths)
 *
 * Back-pressure: every queue and the pool of mask buffers is bounded, so a
 * slow encoder stalls segmentation, which stalls decoding; memory stays at
 * a few batches of frames whatever the video's length. The first error
 * aborts every queue, each thread drains and exits, and the temporary
 * output is deleted: OUT is either complete or absent.
 */
#include "pipeline.h"

#include "beneath.h"
#include "clock.h"
#include "log.h"
#include "nvenc_host.h"
#include "nvml.h"
#include "output_kinds.h"
#include "pipeline_cuda.h"
#include "pipeline_queue.h"
#include "remux_ts.h"
#include "storage.h"
#include "trace.h"
#include "vio_corners.h"
#include "vio_layout.h"
#include "vio_video.h"

#include <fcntl.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 64

/* ---- the run's state ---- */

struct mbuf {            /* one matte, from the pool (device memory with matte_dev) */
    uint8_t *data;
    int ls;
};

struct item {            /* one frame travelling through the stages */
    AVFrame *frame;      /* decoded (host, or AV_PIX_FMT_CUDA); NULL once done with */
    AVFrame *colour;     /* host YUV420P for compose, when the output needs it */
    struct mbuf *mask;
    int64_t index, pts;
    int warmup;          /* a chunk's warm-up frame: segmented (temporal filter), not output */
    int key;             /* a keyframe of the source: the output's GOP starts here too */
    double t_decoded;    /* µs, trace clock */
    double post_us;      /* this frame's share of seg's postprocess */
};

struct pipe {
    const struct pipe_opts *o;
    const char *in_path;
    int gpu;                     /* CUDA path */
    int matte_dev;               /* the matte goes from seg_run to the encoder in device
                                  * memory (vio_out_matte_on_device): no download, no
                                  * compose */
    struct vio_in *in;
    struct vio_out *out;
    struct seg *seg;
    struct output_plan plan;
    struct seg_opts so;          /* the engine, created while decoding starts */
    struct pq *q_dec, *q_seg, *pool;
    struct mbuf *mbufs;
    int nmbuf;
    void *dmask[MAX_BATCH];      /* GPU: device mattes, one per batch slot */
    size_t dpitch;
    struct trace *trace;
    struct metrics m;            /* each histogram written by one thread */
    pthread_mutex_t elock;
    int rc;                      /* first error */
    vr_err err;
    volatile int sampling;
    unsigned test_delay_us;      /* VR_TEST_FRAME_DELAY_MS, tests only */
    int in_kept;                 /* 1: the input was the last run's; 2: its decoder
                                  * (pipeline_warm.h) */
    int keep_in;                 /* keep it for the next run: this one succeeded */
    struct vr_nvml *nvml;
    uint64_t mem_base;           /* device memory in use before we started */
    void *d2h;                   /* the masks' download stream (pcuda_stream_new) */
    struct log_ctx *logctx;      /* the caller's log group, which its threads join */
    struct {                     /* µs on the trace clock, for the set-up log line */
        double start, in_open, out_open, gpu, pool, engine, first_dec, last_dec, first_enc;
        double first_out;        /* the first frame decoded that is output (not warm-up) */
    } at;                        /* each field written by one thread */
};

_Static_assert(VIO_LAYOUT_MONO == (int)SEG_LAYOUT_MONO && VIO_LAYOUT_SBS == (int)SEG_LAYOUT_SBS
                   && VIO_LAYOUT_TB == (int)SEG_LAYOUT_TB, "layouts numbered alike");

static double now_us(void) { return trace_now_us(); }

/* VR_TEST_FRAME_DELAY_MS (tests only): sleep this long after each encoded
 * frame (clock_test_delay_ms). */
static unsigned test_frame_delay_us(void)
{
    return clock_test_delay_ms("VR_TEST_FRAME_DELAY_MS") * 1000u;
}

static void fail(struct pipe *p, int rc, const vr_err *e)
{
    pthread_mutex_lock(&p->elock);
    if (!p->rc) {
        p->rc = rc;
        if (e)
            p->err = *e;
        else
            vr_err_set(&p->err, rc, "%s", vr_err_name(rc));
    }
    pthread_mutex_unlock(&p->elock);
    pq_abort(p->q_dec);
    pq_abort(p->q_seg);
    pq_abort(p->pool);
}

static int failed(struct pipe *p)
{
    pthread_mutex_lock(&p->elock);
    int rc = p->rc;
    pthread_mutex_unlock(&p->elock);
    return rc;
}

static void item_free(void *x)
{
    struct item *it = x;
    if (!it)
        return;
    if (it->colour != it->frame)
        av_frame_free(&it->colour);
    av_frame_free(&it->frame);
    free(it);
}

/* ---- frame formats ---- */

static int seg_fmt_of(int fmt, int *full)
{
    *full = 0;
    switch (fmt) {
    case AV_PIX_FMT_YUVJ420P: *full = 1; return SEG_PIX_YUV420P;
    case AV_PIX_FMT_YUV420P:  return SEG_PIX_YUV420P;
    case AV_PIX_FMT_NV12:     return SEG_PIX_NV12;
    case AV_PIX_FMT_P010:     return SEG_PIX_P010;
    default:                  return -1;
    }
}

/* A host YUV420P copy of `src` (any software format), for seg or compose. */
static int to_yuv420p(const AVFrame *src, AVFrame **out, vr_err *err)
{
    AVFrame *d = av_frame_alloc();
    if (!d)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    d->format = AV_PIX_FMT_YUV420P;
    d->width = src->width;
    d->height = src->height;
    struct SwsContext *sws = NULL;
    if (av_frame_get_buffer(d, 0) < 0)
        goto nomem;
    sws = sws_getContext(src->width, src->height, src->format, d->width, d->height,
                         AV_PIX_FMT_YUV420P, SWS_POINT, NULL, NULL, NULL);
    if (!sws)
        goto nomem;
    sws_scale(sws, (const uint8_t *const *)src->data, src->linesize, 0, src->height, d->data,
              d->linesize);
    sws_freeContext(sws);
    av_frame_copy_props(d, src);
    d->color_range = src->color_range == AVCOL_RANGE_JPEG || src->format == AV_PIX_FMT_YUVJ420P
                         ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    *out = d;
    return 0;
nomem:
    av_frame_free(&d);
    return vr_err_set(err, VR_ENOMEM, "cannot convert a %dx%d %s frame", src->width, src->height,
                      av_get_pix_fmt_name(src->format));
}

/* ---- decode thread ---- */

/* The decoder's keyframe mark (an IDR, CRA or recovery point of the
 * source's bitstream: the same in a chunk and in one `process`). */
static int frame_is_key(const AVFrame *f)
{
#ifdef AV_FRAME_FLAG_KEY
    return !!(f->flags & AV_FRAME_FLAG_KEY);
#else
    return f->key_frame;
#endif
}

static void *decode_main(void *arg)
{
    struct pipe *p = arg;
    log_ctx_use(p->logctx);
    trace_thread_name(p->trace, "decode");
    AVFrame *f = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    vr_err e = { 0 };
    int rc = 0;
    if (!f || !pkt) {
        rc = vr_err_set(&e, VR_ENOMEM, "out of memory");
        goto out;
    }
    for (int64_t idx = 0;;) {
        if (p->o->cancel && *p->o->cancel) {
            rc = vr_err_set(&e, VR_ECANCELED, "%s: cancelled at frame %lld", p->in_path, (long long)idx);
            break;
        }
        double t0 = now_us();
        trace_nvtx_push("decode");
        int ev = vio_in_next(p->in, f, pkt, &e);
        trace_nvtx_pop();
        if (ev < 0) {
            rc = ev;
            break;
        }
        if (ev == VIO_EOF)
            break;
        if (ev == VIO_PACKET) {
            if ((rc = vio_out_copy(p->out, pkt, &e)) < 0)
                break;
            continue;
        }
        struct item *it = calloc(1, sizeof *it);
        if (!it || !(it->frame = av_frame_alloc())) {
            free(it);
            av_frame_unref(f);
            rc = vr_err_set(&e, VR_ENOMEM, "out of memory");
            break;
        }
        av_frame_move_ref(it->frame, f);
        it->warmup = ev == VIO_WARMUP;
        it->index = it->warmup ? -1 : idx++;
        it->pts = it->frame->pts;
        it->key = frame_is_key(it->frame);
        int full;
        if (it->frame->format != AV_PIX_FMT_CUDA) {
            /* host frames: seg takes 4:2:0 8-bit, NV12 and P010 as they
             * are; anything else (10-bit planar, 4:2:2...) is converted */
            int needs = seg_fmt_of(it->frame->format, &full) < 0 ||
                        (p->plan.needs_colour && seg_fmt_of(it->frame->format, &full) != SEG_PIX_YUV420P);
            if (needs) {
                AVFrame *c = NULL;
                if ((rc = to_yuv420p(it->frame, &c, &e)) < 0) {
                    item_free(it);
                    break;
                }
                av_frame_free(&it->frame);
                it->frame = c;
            }
            if (p->plan.needs_colour)
                it->colour = it->frame;
        }
        double t1 = now_us();
        if (!it->warmup) /* stage histograms count output frames */
            hist_record(&p->m.stage[MET_DECODE], t1 - t0);
        trace_span(p->trace, "decode", t0, t1 - t0, it->index);
        it->t_decoded = t1;
        if (!p->at.first_dec)
            p->at.first_dec = t1;
        if (!p->at.first_out && !it->warmup)
            p->at.first_out = t1;
        p->at.last_dec = t1;
        if (!pq_push(p->q_dec, it)) {
            item_free(it);
            break;
        }
    }
out:
    if (rc < 0)
        fail(p, rc, &e);
    pq_close(p->q_dec);
    av_frame_free(&f);
    av_packet_free(&pkt);
    return NULL;
}

/* ---- segment thread ---- */

static int frame_view(struct pipe *p, const AVFrame *f, struct seg_frame *v, vr_err *err)
{
    memset(v, 0, sizeof *v);
    int fmt = f->format, full = 0;
    if (fmt == AV_PIX_FMT_CUDA) {
        fmt = ((const AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format;
        v->on_device = 1;
    }
    int sf = seg_fmt_of(fmt, &full);
    if (sf < 0)
        return vr_err_set(err, VR_ENOTSUP, "%s: decoded pixel format %s is not supported", p->in_path,
                          av_get_pix_fmt_name(fmt));
    v->fmt = (enum seg_pixfmt)sf;
    v->w = f->width;
    v->h = f->height;
    v->full_range = full || f->color_range == AVCOL_RANGE_JPEG;
    for (int i = 0; i < 3; i++) {
        v->data[i] = f->data[i];
        v->linesize[i] = f->linesize[i];
    }
    return 0;
}

/* GPU + an output that shows the picture: download and convert the frame. */
static int fetch_colour(struct item *it, vr_err *err)
{
    AVFrame *sw = av_frame_alloc();
    if (!sw)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int r = av_hwframe_transfer_data(sw, it->frame, 0);
    int rc = 0;
    if (r < 0)
        rc = vr_err_set(err, VR_ECUDA, "frame %lld: cannot download the decoded frame", (long long)it->index);
    else
        rc = to_yuv420p(sw, &it->colour, err);
    av_frame_free(&sw);
    return rc;
}

static int segment_batch(struct pipe *p, struct item **b, int n, vr_err *e)
{
    struct seg_frame fr[MAX_BATCH];
    struct seg_mask mk[MAX_BATCH];
    int rc;
    for (int i = 0; i < n; i++) {
        void *x;
        if (!pq_pop(p->pool, &x))
            return failed(p) ? failed(p) : VR_ECANCELED;
        b[i]->mask = x;
        if ((rc = frame_view(p, b[i]->frame, &fr[i], e)) < 0)
            return rc;
        mk[i].w = p->plan.mask_w;
        mk[i].h = p->plan.mask_h;
        if (p->matte_dev) {
            mk[i].data = b[i]->mask->data;
            mk[i].linesize = b[i]->mask->ls;
            mk[i].on_device = 1;
        } else if (p->gpu) {
            mk[i].data = p->dmask[i];
            mk[i].linesize = (int)p->dpitch;
            mk[i].on_device = 1;
        } else {
            mk[i].data = b[i]->mask->data;
            mk[i].linesize = b[i]->mask->ls;
            mk[i].on_device = 0;
        }
    }
    struct seg_timing tm = { 0, 0, 0 };
    double t0 = now_us();
    trace_nvtx_push("segment");
    rc = seg_run(p->seg, fr, n, mk, &tm, e);
    trace_nvtx_pop();
    double t1 = now_us();
    trace_span(p->trace, "segment", t0, t1 - t0, b[0]->index);
    if (rc < 0) {
        vr_err_prefix(e, "%s: frames %lld..%lld", p->in_path, (long long)b[0]->index,
                      (long long)b[n - 1]->index);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        hist_record(&p->m.stage[MET_PREPROCESS], tm.preprocess * 1000.0 / n);
        hist_record(&p->m.stage[MET_INFERENCE], tm.inference * 1000.0 / n);
        b[i]->post_us = tm.postprocess * 1000.0 / n;
    }
    if (p->gpu && !p->matte_dev) {
        for (int i = 0; i < n; i++) {
            double d0 = now_us();
            trace_nvtx_push("d2h");
            rc = pcuda_d2h(p->d2h, b[i]->mask->data, (size_t)b[i]->mask->ls, p->dmask[i], p->dpitch,
                           p->plan.mask_w, p->plan.mask_h, e);
            trace_nvtx_pop();
            double d1 = now_us();
            if (rc < 0)
                return rc;
            hist_record(&p->m.stage[MET_D2H], d1 - d0);
            trace_span(p->trace, "d2h", d0, d1 - d0, b[i]->index);
            if (p->plan.needs_colour && (rc = fetch_colour(b[i], e)) < 0)
                return rc;
        }
    }
    for (int i = 0; i < n; i++) {
        /* the decoded frame is no longer needed (the colour copy may be):
         * give the decoder surface / memory back now */
        if (b[i]->colour == b[i]->frame)
            b[i]->frame = NULL;
        else
            av_frame_free(&b[i]->frame);
    }
    return 0;
}

static void *segment_main(void *arg)
{
    struct pipe *p = arg;
    log_ctx_use(p->logctx);
    trace_thread_name(p->trace, "segment");
    if (p->gpu)
        pcuda_bind(p->o->gpu);
    int B = p->o->cfg.batch < MAX_BATCH ? p->o->cfg.batch : MAX_BATCH;
    struct item *b[MAX_BATCH];
    vr_err e = { 0 };
    int rc = 0;
    for (;;) {
        int n = 0;
        void *x;
        /* fill the batch; a short one at the end of the stream */
        while (n < B && pq_pop(p->q_dec, &x))
            b[n++] = x;
        if (n == 0 || failed(p)) {
            for (int i = 0; i < n; i++)
                item_free(b[i]);
            break;
        }
        rc = segment_batch(p, b, n, &e);
        int pushed = 0;
        for (; rc == 0 && pushed < n; pushed++)
            if (!pq_push(p->q_seg, b[pushed]))
                break;
        for (int i = pushed; i < n; i++) {
            if (b[i]->mask)
                pq_push(p->pool, b[i]->mask);
            item_free(b[i]);
        }
        trace_counter(p->trace, "q_dec", now_us(), pq_depth(p->q_dec));
        if (rc < 0 || pushed < n)
            break;
    }
    if (rc < 0)
        fail(p, rc, &e);
    pq_close(p->q_seg);
    return NULL;
}

/* ---- encode thread ---- */

static void *encode_main(void *arg)
{
    struct pipe *p = arg;
    log_ctx_use(p->logctx);
    trace_thread_name(p->trace, "encode");
    vr_err e = { 0 };
    int rc = 0;
    AVFrame *ef = av_frame_alloc();
    if (!ef) {
        rc = vr_err_set(&e, VR_ENOMEM, "out of memory");
        goto out;
    }
    ef->format = AV_PIX_FMT_YUV420P;
    ef->width = p->plan.enc_w;
    ef->height = p->plan.enc_h;
    ef->color_range = p->plan.full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    if (av_frame_get_buffer(ef, 0) < 0) {
        rc = vr_err_set(&e, VR_ENOMEM, "out of memory for a %dx%d frame", ef->width, ef->height);
        goto out;
    }
    void *x;
    while (pq_pop(p->q_seg, &x)) {
        struct item *it = x;
        /* Checked here too: the decoder may have read the whole chunk
         * already, and a cancelled chunk must not be encoded to the end. */
        if (p->o->cancel && *p->o->cancel) {
            rc = vr_err_set(&e, VR_ECANCELED, "%s: cancelled at frame %lld", p->in_path,
                            (long long)it->index);
            if (it->mask)
                pq_push(p->pool, it->mask);
            item_free(it);
            break;
        }
        if (it->warmup) { /* its only use was the temporal filter's state */
            pq_push(p->pool, it->mask);
            it->mask = NULL;
            item_free(it);
            continue;
        }
        double t0 = now_us();
        if (av_frame_make_writable(ef) < 0) {
            rc = vr_err_set(&e, VR_ENOMEM, "out of memory");
            item_free(it);
            break;
        }
        if (!p->m.frames && p->plan.kind == PIPE_OUT_ALPHA_PACKED && !p->o->alpha_corners &&
            !output_alpha_corners_dark(&p->plan, it->colour)) {
            rc = vr_err_set(&e, VR_ENOTSUP, VIO_CORNERS_REFUSAL,
                            seg_layout_name(p->plan.layout), p->in_path);
            pq_push(p->pool, it->mask);
            it->mask = NULL;
            item_free(it);
            break;
        }
        if (!p->matte_dev)
            output_compose(&p->plan, it->colour, it->mask->data, it->mask->ls, ef);
        ef->pts = it->pts;
        ef->pict_type = it->key ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
        double t1 = now_us();
        trace_nvtx_push("encode");
        rc = p->matte_dev ? vio_out_write_matte_dev(p->out, it->mask->data, it->mask->ls, it->pts,
                                                    it->key, &e)
                          : vio_out_write(p->out, ef, &e);
        trace_nvtx_pop();
        double t2 = now_us();
        hist_record(&p->m.stage[MET_POSTPROCESS], it->post_us + (t1 - t0));
        hist_record(&p->m.stage[MET_ENCODE], t2 - t1);
        hist_record(&p->m.stage[MET_END_TO_END], t2 - it->t_decoded);
        trace_span(p->trace, "compose", t0, t1 - t0, it->index);
        trace_span(p->trace, "encode", t1, t2 - t1, it->index);
        pq_push(p->pool, it->mask);
        it->mask = NULL;
        if (rc < 0) {
            vr_err_prefix(&e, "frame %lld", (long long)it->index);
            item_free(it);
            break;
        }
        if (!p->m.frames++)
            p->at.first_enc = now_us();
        if (p->o->frames_live)
            __atomic_store_n(p->o->frames_live, (long long)p->m.frames, __ATOMIC_RELAXED);
        item_free(it);
        if (p->test_delay_us)
            usleep(p->test_delay_us);
    }
out:
    if (rc < 0)
        fail(p, rc, &e);
    av_frame_free(&ef);
    return NULL;
}

/* ---- GPU sampler ---- */

static void *sampler_main(void *arg)
{
    struct pipe *p = arg;
    log_ctx_use(p->logctx);
    pcuda_bind(p->o->gpu);
    while (p->sampling) {
        unsigned util;
        uint64_t mem;
        if (p->nvml && nvml_sample(p->nvml, &util, &mem) == 0) {
            p->m.gpu_util_sum += util;
            p->m.gpu_util_samples++;
            trace_counter(p->trace, "gpu_util", now_us(), util);
        }
        uint64_t used = pcuda_mem_used();
        if (used > p->mem_base && used - p->mem_base > p->m.gpu_mem_peak)
            p->m.gpu_mem_peak = used - p->mem_base;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- set-up and teardown ---- */

/* The queues' depths, in frames of batches of B: a range chunk may be cut
 * at a keyframe past what its reader handed on (controller/ctl_cut.c), so
 * it keeps one batch a queue (decode, segment and encode still overlap)
 * and its cuts land nearer what it encoded; a whole file keeps two, for the
 * jitter. pool: the mattes (a batch in seg, the queue to the encoder, one
 * being encoded). */
struct pipe_depths {
    int dec, seg, pool;
};

static struct pipe_depths pipe_depths(const struct pipe *p, int B)
{
    if (p->o->range)
        return (struct pipe_depths){ B, B + 1, 2 * B + 2 };
    return (struct pipe_depths){ 2 * B, 2 * B + 4, 3 * B + 6 };
}

static int make_pool(struct pipe *p, vr_err *err)
{
    int B = p->o->cfg.batch < MAX_BATCH ? p->o->cfg.batch : MAX_BATCH;
    p->nmbuf = pipe_depths(p, B).pool;
    p->mbufs = calloc((size_t)p->nmbuf, sizeof *p->mbufs);
    int rc = pq_create(p->nmbuf, &p->pool, err);
    if (!p->mbufs || rc < 0)
        return rc < 0 ? rc : vr_err_set(err, VR_ENOMEM, "out of memory");
    int ls = (p->plan.mask_w + 63) & ~63;
    size_t bytes = (size_t)ls * (size_t)p->plan.mask_h;
    for (int i = 0; i < p->nmbuf; i++) {
        struct mbuf *m = &p->mbufs[i];
        m->ls = ls;
        if (p->matte_dev) {
            size_t pitch;
            if ((rc = pcuda_dev_alloc2d((void **)&m->data, &pitch, p->plan.mask_w,
                                        p->plan.mask_h, err)) < 0)
                return rc;
            m->ls = (int)pitch;
        } else if (p->gpu) {
            if ((rc = pcuda_host_alloc((void **)&m->data, bytes, err)) < 0)
                return rc;
        } else if (!(m->data = aligned_alloc(64, bytes))) {
            return vr_err_set(err, VR_ENOMEM, "out of memory for mask buffers");
        }
        pq_push(p->pool, m);
    }
    if (p->gpu && !p->matte_dev)
        for (int i = 0; i < B; i++)
            if ((rc = pcuda_dev_alloc2d(&p->dmask[i], &p->dpitch, p->plan.mask_w, p->plan.mask_h, err)) < 0)
                return rc;
    return 0;
}

static void pipe_release(struct pipe *p)
{
    pq_free(&p->q_dec, item_free);
    pq_free(&p->q_seg, item_free);
    pq_free(&p->pool, NULL);
    for (int i = 0; p->mbufs && i < p->nmbuf; i++) {
        if (p->matte_dev)
            pcuda_dev_free(p->mbufs[i].data);
        else if (p->gpu)
            pcuda_host_free(p->mbufs[i].data);
        else
            free(p->mbufs[i].data);
    }
    free(p->mbufs);
    for (int i = 0; i < MAX_BATCH; i++)
        pcuda_dev_free(p->dmask[i]);
    if (p->o->warm)
        p->seg = NULL; /* the warm engine's, not ours */
    else
        seg_free(&p->seg);
    vio_out_free(&p->out);
    if (p->keep_in) /* the output is closed first: it borrowed the input */
        pipe_warm_keep_input(p->o->warm, p->in_path, &p->in);
    vio_in_free(&p->in);
    trace_free(&p->trace);
    nvml_close(&p->nvml);
    pthread_mutex_destroy(&p->elock);
}

/* ---- the run ---- */

/* Whether NVENC is worth trying: not where this host's GPU is known to have
 * none (nvenc_host.h); asked once per process. */
int pipeline_nvenc_probe(int gpu)
{
    static int has = -1; /* a process's workers (--slot-mode threads) ask it once */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    if (has < 0) {
        const char *how;
        has = nvenc_host_available(gpu, &how);
        const char *why;
        log_info("NVENC: %s%s (%s)", has ? "present or unknown: tried first"
                                         : "none; the matte's encoder: ",
                 has ? "" : vio_matte_encoder(1, 0, 4096, 2048, &why), how);
    }
    int r = has;
    pthread_mutex_unlock(&mu);
    return r;
}

/* Where a run's fixed cost goes (ms from the start): what a short chunk
 * pays besides its frames. */
static void log_setup(const struct pipe *p, int engine_warm)
{
    const double s = p->at.start;
#define MS(t) ((t) ? ((t) - s) / 1000.0 : 0.0)
    char gpu[64] = "";
    if (p->gpu)
        snprintf(gpu, sizeof gpu, ", GPU %.0f, buffers %.0f", MS(p->at.gpu), MS(p->at.pool));
    log_info("%s: set-up: input open %.0f ms (%s), encoder open %.0f%s, engine %.0f ms (%s, "
             "overlaps decoding); frames: first decoded %.0f, first output decoded %.0f, first "
             "written %.0f, last decoded %.0f, done %.0f; pre-roll: %lld decoded and dropped, "
             "%lld warm-up", p->in_path,
             MS(p->at.in_open),
             p->in_kept == 1   ? "kept from the last chunk"
             : p->in_kept == 2 ? "new, its decoder the last chunk's"
             : p->in_kept == 3 ? "new, its decoder warmed before the first chunk"
                               : "new",
             MS(p->at.out_open), gpu,
             p->at.engine / 1000.0, engine_warm ? "warm" : "built", MS(p->at.first_dec),
             MS(p->at.first_out), MS(p->at.first_enc), MS(p->at.last_dec), MS(now_us()),
             (long long)vio_in_preroll_dropped(p->in), (long long)vio_in_warmups(p->in));
#undef MS
}

/* The input, kept from the last chunk where it can be (a range of the same
 * file): 0 or VR_E*. */
static int open_input(struct pipe *p, const struct vio_in_opts *io, vr_err *err)
{
    int rc = pipe_warm_open_input(p->o->range ? p->o->warm : NULL, io, &p->in, err);
    p->in_kept = rc > 0 ? rc : 0;
    return rc < 0 ? rc : 0;
}

/* A picture output re-encodes the whole frame on the CPU (GPUs without
 * NVENC): with 32 workers on a 64-core host, an encoder with a thread per
 * core each (the cores oversubscribed 32 times) reached 85% of the host's
 * encode ceiling, four threads per core's share 95% (docs/PERF.md,
 * "Passthrough"). The matte keeps a thread per core: its encodes come in
 * bursts between decodes. */
enum { PICTURE_THREADS_PER_SHARE = 4 };

static int encode_threads(const struct pipe_opts *o, const struct output_plan *plan)
{
    if (o->encode_threads > 0 || plan->kind == PIPE_OUT_MASK || o->host_encoders <= 1)
        return o->encode_threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long t = PICTURE_THREADS_PER_SHARE * cores / o->host_encoders;
    return t < 2 ? 2 : t > cores ? (int)cores : (int)t;
}

void pipeline_input_opts(const struct pipe_opts *o, const char *in, struct vio_in_opts *io)
{
    *io = (struct vio_in_opts){ .path = in, .hw = o->backend == SEG_CUDA, .gpu = o->gpu,
                                .extra_frames = 4, .preroll_until_ms = o->preroll_until_ms,
                                .warmup_from_ms = o->warmup_from_ms, .range = o->range,
                                .fail_on_decode_error = o->fail_on_decode_error };
}

int pipeline_batch(const struct pipe_opts *o)
{
    return o->cfg.batch < MAX_BATCH ? o->cfg.batch : MAX_BATCH;
}

static int open_all(struct pipe *p, const char *in, const char *tmp, const char *out, vr_err *err)
{
    const struct pipe_opts *o = p->o;
    int rc;
    int B = pipeline_batch(o);
    struct vio_in_opts io;
    pipeline_input_opts(o, in, &io);
    rc = open_input(p, &io, err);
    p->at.in_open = now_us();
    if (rc == VR_ENOTSUP && p->gpu) {
        log_warn("%s; decoding on the CPU and uploading frames", err->msg);
        io.hw = 0;
        rc = open_input(p, &io, err);
    }
    if (rc < 0)
        return rc;
    const struct vio_info *inf = vio_in_info(p->in);
    enum seg_layout layout;
    const char *why = "--layout";
    if (o->layout >= 0)
        layout = (enum seg_layout)o->layout;
    else
        layout = (enum seg_layout)vio_guess_layout(inf, in, &why);
    log_info("%s: %dx%d %s %d-bit, %s decode, layout %s (%s)", in, inf->w, inf->h, inf->codec,
             inf->bit_depth, inf->hw ? "NVDEC" : "CPU", seg_layout_name(layout), why);
    if ((rc = output_plan_make(o->output, layout, inf->w, inf->h, &o->cfg, &p->plan, err)) < 0)
        return vr_err_prefix(err, "%s", in);
    p->so = (struct seg_opts){
        .backend = o->backend, .gpu = o->gpu, .cfg = &o->cfg, .layout = layout,
        .in_w = inf->w, .in_h = inf->h, .out_w = p->plan.mask_w, .out_h = p->plan.mask_h,
        .max_batch = B,
    };
    struct vio_out_opts oo = {
        .path = tmp, .format_name = out, .in = p->in, .w = p->plan.enc_w, .h = p->plan.enc_h,
        .pix_fmt = AV_PIX_FMT_YUV420P, .full_range = p->plan.full_range, .cfg = &o->cfg,
        .try_nvenc = p->gpu && pipeline_nvenc_probe(o->gpu), .gpu_run = p->gpu, .gpu = o->gpu,
        .copy_streams = 1,
        .threads = encode_threads(o, &p->plan), .record_ts = o->ts_path != NULL,
        .matte = p->plan.kind == PIPE_OUT_MASK,
    };
    if ((rc = vio_out_open(&oo, &p->out, err)) < 0)
        return rc;
    p->at.out_open = now_us();
    p->matte_dev = p->gpu && p->plan.kind == PIPE_OUT_MASK && vio_out_matte_on_device(p->out) &&
                   p->plan.mask_w == p->plan.enc_w && p->plan.mask_h == p->plan.enc_h &&
                   !o->matte_via_host;
    log_info("%s: %s output %dx%d (matte %dx%d%s), encoder %s", out, output_kind_name(o->output),
             p->plan.enc_w, p->plan.enc_h, p->plan.mask_w, p->plan.mask_h,
             p->matte_dev ? ", handed over in device memory" : "", vio_out_encoder(p->out));
    if ((rc = pq_create(pipe_depths(p, B).dec, &p->q_dec, err)) < 0 ||
        (rc = pq_create(pipe_depths(p, B).seg, &p->q_seg, err)) < 0)
        return rc;
    if (!p->gpu && (rc = make_pool(p, err)) < 0)
        return rc;
    if (o->trace_path && (rc = trace_create(o->trace_path, &p->trace, err)) < 0)
        return rc;
    return 0;
}

/* GPU runs: the CUDA runtime joins the context NVDEC opened (in open_all),
 * so decoded frames are ordinary device memory to the kernels; then NVML
 * and the pinned mask buffers. */
static int open_gpu(struct pipe *p, vr_err *err)
{
    char pci[32] = "";
    int rc = pcuda_init(p->o->gpu, pci, sizeof pci, err);
    if (rc == 0)
        rc = pcuda_stream_new(&p->d2h, err);
    if (rc < 0)
        return rc;
    p->at.gpu = now_us();
    p->mem_base = pcuda_mem_used();
    vr_err ne = { 0 };
    if (nvml_open(pci[0] ? pci : NULL, p->o->gpu, &p->nvml, &ne) < 0)
        log_info("%s", ne.msg);
    if ((rc = make_pool(p, err)) < 0)
        return rc;
    p->at.pool = now_us();
    return 0;
}

/* Starts decoding, gets the engine while NVDEC opens (each takes about
 * half a second: they overlap), then the segment and encode threads, and
 * waits for all of them. Errors land in p (failed()). Returns 1 when the
 * engine was the warm one. */
static int run_threads(struct pipe *p)
{
    const struct pipe_opts *o = p->o;
    pthread_t td, ts, te, tsamp;
    int have_samp = 0, engine_warm = 0;
    p->sampling = 1;
    if (p->gpu && pthread_create(&tsamp, NULL, sampler_main, p) == 0)
        have_samp = 1;
    int nd = pthread_create(&td, NULL, decode_main, p), ns = -1, ne = -1;
    if (!nd) {
        vr_err se = { 0 };
        double t_eng = now_us();
        long long built = o->warm ? o->warm->built : 0;
        int src = o->warm ? pipe_warm_get(o->warm, &p->so, &p->seg, &se)
                          : seg_create(&p->so, &p->seg, &se);
        p->at.engine = now_us() - t_eng;
        engine_warm = o->warm && o->warm->built == built;
        if (src < 0) {
            fail(p, src, &se);
        } else {
            ns = pthread_create(&ts, NULL, segment_main, p);
            ne = ns ? -1 : pthread_create(&te, NULL, encode_main, p);
        }
    }
    if (!failed(p) && (nd || ns || ne)) {
        vr_err e2;
        vr_err_set(&e2, VR_ENOMEM, "cannot start the pipeline threads");
        fail(p, VR_ENOMEM, &e2);
        pq_close(p->q_dec);
        pq_close(p->q_seg);
    }
    if (!nd)
        pthread_join(td, NULL);
    if (!ns)
        pthread_join(ts, NULL);
    if (!ne)
        pthread_join(te, NULL);
    p->sampling = 0;
    if (have_samp)
        pthread_join(tsamp, NULL);
    return engine_warm;
}

/* The exact source times of what the output holds, beside it: durable
 * before the output is renamed into place, so an output that exists has
 * its sidecar. */
static int write_times(struct pipe *p, vr_err *err)
{
    struct remux_ts t;
    int rc = vio_out_ts(p->out, &t, err);
    if (rc == 0)
        rc = remux_ts_write(p->o->ts_path, &t, err);
    remux_ts_release(&t);
    return rc;
}

/* The output is complete: every decoded frame written, then committed
 * (fsync, rename into place). */
static int finish_output(struct pipe *p, const char *tmp, const char *out, vr_err *err)
{
    int rc = vio_out_finish(p->out, err);
    if (rc < 0)
        return rc;
    if (vio_in_frames(p->in) != (int64_t)p->m.frames)
        return vr_err_set(err, VR_EIO, "%s: wrote %llu frames of %lld decoded", out,
                          (unsigned long long)p->m.frames, (long long)vio_in_frames(p->in));
    if (p->o->ts_path && (rc = write_times(p, err)) < 0)
        return rc;
    return storage_commit(tmp, out, err);
}

int pipeline_run(const struct pipe_opts *o, const char *in, const char *out, struct metrics *m,
                 vr_err *err)
{
    struct pipe p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.in_path = in;
    p.gpu = o->backend == SEG_CUDA;
    p.test_delay_us = test_frame_delay_us();
    p.logctx = log_ctx_current();
    pthread_mutex_init(&p.elock, NULL);
    metrics_reset(&p.m);
    double t_start = now_us();
    p.at.start = t_start;
    char tmp[STORAGE_PATH_MAX] = "", tmp_fd[BENEATH_FD_PATH_MAX];
    int tfd = -1;
    int rc = storage_temp(out, tmp, sizeof tmp, &tfd, err);
    /* the encoder opens by name: the name of the descriptor storage_temp
     * made (O_EXCL | O_NOFOLLOW) reopens that very file, so a link planted
     * at the temporary name meanwhile is never written through */
    beneath_fd_path(tfd, NULL, tmp_fd, sizeof tmp_fd);
    if (rc == 0 && p.gpu)
        rc = pcuda_check(o->gpu, err);
    if (rc == 0)
        rc = open_all(&p, in, tmp_fd, out, err);
    if (rc == 0 && p.gpu)
        rc = open_gpu(&p, err);
    int engine_warm = rc == 0 ? run_threads(&p) : 0;
    if (rc == 0 && (rc = failed(&p)) < 0) {
        *err = p.err;
        if (!err->msg[0])
            vr_err_set(err, rc, "%s: failed", in);
    }
    if (rc == 0 && (rc = finish_output(&p, tmp, out, err)) == 0) {
        log_setup(&p, engine_warm);
        p.m.bytes_in = (uint64_t)vio_in_video_bytes(p.in);
        p.m.bytes_out = (uint64_t)vio_out_bytes(p.out);
        p.m.concealed = (uint64_t)vio_in_concealed(p.in);
        p.keep_in = o->range && o->warm;
    }
    beneath_unmask(err, tfd, out);
    if (tfd >= 0)
        close(tfd);
    if (rc < 0) {
        storage_abort(tmp); /* a no-op when the commit itself failed (it removed tmp) */
        pipe_warm_drop(o->warm); /* never carry an engine out of a failed run */
    }
    p.m.wall_s = (now_us() - t_start) / 1e6;
    if (m)
        *m = p.m;
    vr_err te2 = { 0 };
    if (p.trace && trace_close(&p.trace, &te2) < 0)
        log_warn("%s", te2.msg);
    pipe_release(&p);
    pcuda_stream_free(p.d2h);
    return rc;
}

/*
 * seg_backend_ref.c - the CPU backend of the segmentation engine (the twin of seg_backend.cu): the C twins of
 * frame_ref.h around the CPU network (net.h). Every buffer is sized at
 * creation from the tile plan; seg_run() allocates nothing.
 *
 * Per call: preprocess every tile of every eye of every frame into one
 * input batch, run the network over it in slices of at most
 * SEG_CPU_NET_BATCH (the net's activation buffers grow with its batch),
 * and the fused model (cfg.fuse_model) over each whole eye, then per frame
 * and eye bound the tiles by the whole pass, blend, fuse, close and open
 * (frame_matte_ref.c), fuse the two eyes' masks (frame_stereo_ref.c),
 * refine each (guided: fuse the refined eyes again) and, over the whole
 * mask, smooth.
 * At the end, seg_run_network(): the CPU network alone on one picture.
 */
#include "seg_impl.h"

#include "clock.h"
#include "cpu_ftz.h"
#include "frame_ref.h"
#include "frame_stereo.h"
#include "frame_temporal.h"
#include "log.h"
#include "net.h"
#include "people.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEG_CPU_NET_BATCH 8

struct seg_cpu {
    struct net *net;
    int net_batch;
    int per_frame;         /* tiles of all eyes of one frame */
    float *in;             /* [max_batch*per_frame][mh][mw][3] */
    float *out;            /* [max_batch*per_frame][mh][mw] */
    size_t work_sz;        /* floats of the largest eye's work image */
    float *work, *luma;    /* [n_eyes][work_sz]: every eye's, for the eyes' fusion */
    float *a, *b, *scratch;
    float *gate;           /* [mh][mw]: frame_gate_ref's dilated whole pass */
    struct net *fnet;      /* the fused model's network (cfg.fuse_model), or NULL */
    struct people *people; /* the people tier (cfg.people "pose", people.h), or NULL */
    float *fin, *fout;     /* its input and output: [max_batch*n_eyes] whole eyes */
    struct temporal_opts topt;  /* the temporal filter (frame_temporal.h) */
    struct temporal_state tst;
    uint8_t *ring_m, *ring_y;   /* its window: K-1 slots of out_w x out_h */
    uint8_t *ycur;              /* the current frame's luma at mask size */
    uint8_t *held;              /* the hold's last outputs (out_w x out_h) */
};

/* The temporal filter on one frame's mask: cut decision, filter, window. */
static void temporal_frame(struct seg_cpu *c, const struct seg_frame *f, struct seg_mask *m)
{
    const struct temporal_opts *o = &c->topt;
    if (o->frames < 2)
        return;
    frame_temporal_luma_ref(f, c->ycur, o->w, o->h);
    uint64_t sad = 0;
    if (c->tst.have > 0)
        sad = frame_temporal_sad_ref(c->ycur, c->ring_y + (size_t)c->tst.head * o->w * o->h,
                                     o->w, o->h);
    temporal_cut(o, &c->tst, sad);
    temporal_hold_step(&c->tst, sad);
    frame_temporal_ref(o, &c->tst, m->data, m->linesize, c->ycur, c->ring_m, c->ring_y,
                       c->held);
    temporal_push(o, &c->tst);
}

/* ---- run ---- */

/* An eye's work mask from its tiles: bounded by the whole pass, blended,
 * the second model fused, closed and opened. */
static void matte_eye(struct seg *s, struct seg_cpu *c, const struct tile_eye *te,
                      float *tile_out, const float *fused, float *work)
{
    const int mw = s->model->in_w, mh = s->model->in_h;
    const int ww = te->work_w, wh = te->work_h;

    if (seg_gated(s, te))
        frame_gate_ref(tile_out, te->n, mw, mh, te->dst, ww, wh, s->cfg.tile_gate, c->gate);
    frame_blend_ref(tile_out, te->n, mw, mh, te->dst, ww, wh, work);
    if (fused)
        frame_fuse_ref(fused, s->fuse->in_w, s->fuse->in_h, ww, wh, work);
    frame_morph_ref(work, ww, wh, s->cfg.morph, c->scratch);
}

/* The work mask to the eye's part of the output mask (luma: the eye's at
 * work size, when guided). */
static void refine_eye(struct seg *s, struct seg_cpu *c, const struct seg_frame *f,
                       const struct tile_eye *te, const float *work, const float *luma,
                       struct seg_mask *m)
{
    const int ww = te->work_w, wh = te->work_h;
    uint8_t *dst = m->data + (size_t)te->out.y * m->linesize + te->out.x;

    if (!s->refine_guided) {
        frame_upsample_bilinear_ref(work, ww, wh, dst, m->linesize, te->out.w, te->out.h);
        return;
    }
    frame_guided_coeffs_ref(luma, work, ww, wh, s->cfg.guided_radius,
                            (float)s->cfg.guided_eps, c->a, c->b, c->scratch);
    frame_guided_band_ref(work, ww, wh, s->cfg.guided_band, s->cfg.guided_radius, c->a, c->b,
                          c->scratch);
    frame_guided_apply_ref(c->a, c->b, ww, wh, f, te->eye, dst, m->linesize,
                           te->out.w, te->out.h);
}

/* One frame's eyes from the network's outputs (tiles from out + k0) to
 * its mask; the people tier, when on, lifts each eye's work mask before
 * the eyes are fused, so a person found in one eye reaches the other. */
static int frame_eyes(struct seg *s, struct seg_cpu *c, const struct seg_frame *f,
                      const float *fout, int k0, struct seg_mask *m, vr_err *err)
{
    const struct tile_plan *p = &s->plan;
    const size_t out_sz = (size_t)s->model->in_w * s->model->in_h;
    const size_t fpx = s->fuse ? (size_t)s->fuse->in_w * s->fuse->in_h : 0;
    const int stereo = seg_stereo(s);
    for (int e = 0, k = k0; e < p->n_eyes; k += p->eye[e].n, e++) {
        const struct tile_eye *te = &p->eye[e];
        matte_eye(s, c, te, c->out + k * out_sz, fout ? fout + e * fpx : NULL,
                  c->work + e * c->work_sz);
        if (c->people && people_eye(c->people, e, f, te->eye, c->work + e * c->work_sz,
                                    te->work_w, te->work_h, NULL, err) < 0)
            return vr_err_prefix(err, "seg: people");
        if (s->refine_guided || stereo)
            frame_luma_ref(f, te->eye, te->work_w, te->work_h, c->luma + e * c->work_sz);
    }
    int disp[FRAME_STEREO_MAX_BANDS];
    if (stereo)
        frame_stereo_ref(c->work, c->work + c->work_sz, c->luma, c->luma + c->work_sz,
                         p->eye[0].work_w, p->eye[0].work_h, s->cfg.stereo_bands, c->scratch,
                         disp);
    for (int e = 0; e < p->n_eyes; e++)
        refine_eye(s, c, f, &p->eye[e], c->work + e * c->work_sz, c->luma + e * c->work_sz, m);
    if (seg_stereo_refined(s)) { /* the guided edges part the eyes again */
        const struct frame_rect l = p->eye[0].out, r = p->eye[1].out;
        frame_stereo_out_ref(m->data + (size_t)l.y * m->linesize + l.x,
                             m->data + (size_t)r.y * m->linesize + r.x, m->linesize, l.w, l.h,
                             p->eye[0].work_w, s->cfg.stereo_bands, disp);
    }
    return 0;
}

static int cpu_run_ftz(struct seg *s, const struct seg_frame *frames, int n,
                       struct seg_mask *masks, struct seg_timing *timing, vr_err *err)
{
    struct seg_cpu *c = s->priv;
    const int mw = s->model->in_w, mh = s->model->in_h;
    const size_t in_sz = (size_t)mw * mh * 3, out_sz = (size_t)mw * mh;
    const struct tile_plan *p = &s->plan;

    for (int i = 0; i < n; i++)
        if (frames[i].on_device || masks[i].on_device)
            return vr_err_set(err, VR_EINVAL,
                              "seg: the CPU backend takes host frames and masks");

    double t0 = clock_mono_ms();
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int e = 0; e < p->n_eyes; e++) {
            frame_preprocess_ref(&frames[i], p->eye[e].src, p->eye[e].n, mw, mh,
                                 c->in + k * in_sz);
            k += p->eye[e].n;
        }
    double t1 = clock_mono_ms();
    for (int done = 0; done < k; done += c->net_batch) {
        int m = k - done < c->net_batch ? k - done : c->net_batch;
        int rc = net_run(c->net, c->in + done * in_sz, m, c->out + done * out_sz, err);
        if (rc < 0)
            return vr_err_prefix(err, "seg: network");
    }
    const size_t fin_sz = s->fuse ? (size_t)s->fuse->in_w * s->fuse->in_h * 3 : 0;
    for (int i = 0; c->fnet && i < n; i++) {
        struct frame_rect eyes[2];
        for (int e = 0; e < p->n_eyes; e++)
            eyes[e] = p->eye[e].eye;
        frame_preprocess_ref(&frames[i], eyes, p->n_eyes, s->fuse->in_w, s->fuse->in_h,
                             c->fin + (size_t)i * p->n_eyes * fin_sz);
    }
    if (c->fnet && net_run(c->fnet, c->fin, n * p->n_eyes, c->fout, err) < 0)
        return vr_err_prefix(err, "seg: fused network");
    double t2 = clock_mono_ms();
    for (int i = 0; i < n; i++) {
        int rc = frame_eyes(s, c, &frames[i],
                            c->fnet ? c->fout + (size_t)i * p->n_eyes * (fin_sz / 3) : NULL,
                            i * c->per_frame, &masks[i], err);
        if (rc < 0)
            return rc;
        temporal_frame(c, &frames[i], &masks[i]);
    }
    double t3 = clock_mono_ms();
    if (timing) {
        timing->preprocess = t1 - t0;
        timing->inference = t2 - t1;
        timing->postprocess = t3 - t2;
    }
    return 0;
}

static int cpu_run(struct seg *s, const struct seg_frame *frames, int n,
                   struct seg_mask *masks, struct seg_timing *timing, vr_err *err)
{
    unsigned csr = cpu_ftz_begin(); /* see cpu_ftz.h: 2x on background */
    int rc = cpu_run_ftz(s, frames, n, masks, timing, err);
    cpu_ftz_end(csr);
    return rc;
}

static void cpu_reset(struct seg *s)
{
    struct seg_cpu *c = s->priv;
    if (c) {
        temporal_reset(&c->tst);
        people_reset(c->people);
    }
}

static void cpu_destroy(struct seg *s)
{
    struct seg_cpu *c = s->priv;
    if (!c)
        return;
    net_free(&c->net);
    net_free(&c->fnet);
    people_free(&c->people);
    free(c->fin);
    free(c->fout);
    free(c->in);
    free(c->out);
    free(c->work);
    free(c->luma);
    free(c->a);
    free(c->b);
    free(c->scratch);
    free(c->gate);
    free(c->ring_m);
    free(c->ring_y);
    free(c->held);
    free(c->ycur);
    free(c);
    s->priv = NULL;
}

static const struct seg_backend_ops cpu_ops = {
    .name = "cpu", .run = cpu_run, .reset = cpu_reset, .destroy = cpu_destroy,
};

/* ---- create ---- */

int seg_cpu_create(const struct seg_opts *o, struct seg **out, vr_err *err)
{
    int rc;
    struct seg *s = calloc(1, sizeof *s);
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "seg: out of memory");
    if ((rc = seg_common_init(s, o, err)) < 0)
        goto fail;
    s->ops = &cpu_ops;
    struct seg_cpu *c = calloc(1, sizeof *c);
    if (!(s->priv = c))
        goto nomem;

    const struct tile_plan *p = &s->plan;
    size_t mwh = (size_t)s->model->in_w * s->model->in_h, work = 0;
    for (int e = 0; e < p->n_eyes; e++) {
        c->per_frame += p->eye[e].n;
        size_t wsz = (size_t)p->eye[e].work_w * p->eye[e].work_h;
        if (wsz > work)
            work = wsz;
    }
    int total = c->per_frame * s->opts.max_batch;
    c->net_batch = total < SEG_CPU_NET_BATCH ? total : SEG_CPU_NET_BATCH;
    if ((rc = net_create(s->model, c->net_batch, &c->net, err)) < 0) {
        vr_err_prefix(err, "seg: network");
        goto fail;
    }
    if (s->fuse) {
        int fb = s->opts.max_batch * p->n_eyes;
        size_t fwh = (size_t)s->fuse->in_w * s->fuse->in_h;
        if ((rc = net_create(s->fuse, fb, &c->fnet, err)) < 0) {
            vr_err_prefix(err, "seg: fused network");
            goto fail;
        }
        c->fin = malloc((size_t)fb * fwh * 3 * sizeof(float));
        c->fout = malloc((size_t)fb * fwh * sizeof(float));
        if (!c->fin || !c->fout)
            goto nomem;
    }
    if (strcmp(s->cfg.people, "none") != 0
        && (rc = people_create(&s->cfg, p->eye[0].eye.w, p->eye[0].eye.h, p->n_eyes,
                                &c->people, err)) < 0)
        goto fail;
    c->in = malloc((size_t)total * mwh * 3 * sizeof(float));
    c->out = malloc((size_t)total * mwh * sizeof(float));
    c->work_sz = work;
    c->work = malloc(work * p->n_eyes * sizeof(float));
    c->luma = malloc(work * p->n_eyes * sizeof(float));
    c->a = malloc(work * sizeof(float));
    c->b = malloc(work * sizeof(float));
    c->scratch = malloc(work * 6 * sizeof(float));
    c->gate = malloc(mwh * sizeof(float));
    temporal_opts_from_config(&c->topt, &s->cfg, s->opts.out_w, s->opts.out_h);
    temporal_reset(&c->tst);
    size_t plane = (size_t)s->opts.out_w * s->opts.out_h, slots = c->topt.frames - 1;
    c->ring_m = malloc(plane * (slots ? slots : 1));
    c->ring_y = malloc(plane * (slots ? slots : 1));
    c->ycur = malloc(plane);
    c->held = malloc(plane);
    if (!c->in || !c->out || !c->work || !c->luma || !c->a || !c->b || !c->scratch
        || !c->gate || !c->ring_m || !c->ring_y || !c->ycur || !c->held)
        goto nomem;
    *out = s;
    return 0;

nomem:
    rc = vr_err_set(err, VR_ENOMEM, "seg: out of memory for %dx%d frames",
                    o->in_w, o->in_h);
fail:
    seg_free(&s);
    return rc;
}

/* ---- the network alone (seg.h: seg_run_network) ---- */

int seg_run_network(const struct vr_config *cfg, const struct seg_frame *f,
                    struct seg_mask *mask, vr_err *err)
{
    struct model *m = NULL;
    struct net *net = NULL;
    float *x = NULL, *y = NULL;
    char path[CONFIG_STR + 512];
    int rc;

    if (f->fmt != SEG_PIX_RGB24 || f->on_device || mask->on_device
        || mask->w != f->w || mask->h != f->h)
        return vr_err_set(err, VR_EINVAL, "seg: the network alone takes an RGB24 frame "
                          "in host memory and a mask of its size");
    if ((rc = config_model_file(cfg, path, sizeof path, err)) < 0
        || (rc = model_load(path, &m, err)) < 0)
        return rc;
    if (f->w != m->in_w || f->h != m->in_h) {
        rc = vr_err_set(err, VR_EINVAL, "needs the model's input size %dx%d (%s), the "
                        "image is %dx%d", m->in_w, m->in_h, path, f->w, f->h);
        goto out;
    }
    if ((rc = net_create(m, 1, &net, err)) < 0)
        goto out;
    x = malloc((size_t)f->w * f->h * 3 * sizeof *x);
    y = malloc((size_t)f->w * f->h * sizeof *y);
    if (!x || !y) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto out;
    }
    struct frame_rect all = { 0, 0, f->w, f->h };
    frame_preprocess_ref(f, &all, 1, f->w, f->h, x); /* same size: exact copy */
    double t0 = clock_mono_ms();
    unsigned csr = cpu_ftz_begin();
    rc = net_run(net, x, 1, y, err);
    cpu_ftz_end(csr);
    if (rc < 0)
        goto out;
    log_debug("network: %.1f ms", clock_mono_ms() - t0);
    for (int r = 0; r < f->h; r++)
        for (int c = 0; c < f->w; c++)
            mask->data[(size_t)r * mask->linesize + c] = frame_to_u8(y[(size_t)r * f->w + c]);
out:
    free(x);
    free(y);
    net_free(&net);
    model_free(&m);
    return rc;
}

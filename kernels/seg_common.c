/*
 * seg.c - the segmentation engine's front (seg.h): argument checks, the
 * set-up both backends share (config copy, model, tile plan) and dispatch
 * to the backend's function table (seg_impl.h). The CPU backend lives in
 * seg_cpu.c, the CUDA one in seg_cuda.cu (only when built with nvcc).
 */
#include "seg_impl.h"

#include "paths.h"

#include <stdlib.h>
#include <string.h>

#define SEG_MAX_DIM   16384 /* per side; an 8K VR frame is 8192 x 4096 */
#define SEG_MAX_BATCH 64

/* ---- layout names ---- */

static const char *const layout_names[] = { "mono", "sbs", "tb" };

int seg_layout_parse(const char *s)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, layout_names[i]) == 0)
            return i;
    return -1;
}

const char *seg_layout_name(enum seg_layout l)
{
    return (unsigned)l < 3 ? layout_names[l] : "?";
}

/* ---- shared set-up ---- */

int seg_common_init(struct seg *s, const struct seg_opts *o, vr_err *err)
{
    if (!o->cfg)
        return vr_err_set(err, VR_EINVAL, "seg: no config given");
    if (o->in_w < 1 || o->in_h < 1 || o->in_w > SEG_MAX_DIM || o->in_h > SEG_MAX_DIM)
        return vr_err_set(err, VR_EINVAL, "seg: frame size %dx%d outside 1..%d",
                          o->in_w, o->in_h, SEG_MAX_DIM);
    if (o->out_w < 0 || o->out_h < 0 || o->out_w > SEG_MAX_DIM || o->out_h > SEG_MAX_DIM
        || (o->out_w == 0) != (o->out_h == 0))
        return vr_err_set(err, VR_EINVAL, "seg: mask size %dx%d outside 1..%d",
                          o->out_w, o->out_h, SEG_MAX_DIM);
    if (o->max_batch < 1 || o->max_batch > SEG_MAX_BATCH)
        return vr_err_set(err, VR_EINVAL, "seg: batch %d outside 1..%d",
                          o->max_batch, SEG_MAX_BATCH);
    if ((unsigned)o->layout > SEG_LAYOUT_TB)
        return vr_err_set(err, VR_EINVAL, "seg: unknown layout %d", (int)o->layout);

    s->cfg = *o->cfg;
    s->opts = *o;
    s->opts.cfg = &s->cfg;
    if (s->opts.out_w == 0) {
        s->opts.out_w = o->in_w;
        s->opts.out_h = o->in_h;
    }
    s->refine_guided = strcmp(s->cfg.refine, "bilinear") != 0;

    char path[CONFIG_STR + 512];
    vr_data_path(s->cfg.model, path, sizeof path);
    int rc = model_load(path, &s->model, err);
    if (rc < 0)
        return rc;
    if (s->model->in_c != 3 || s->model->out_c != 1)
        return vr_err_set(err, VR_ENOTSUP, "%s: model takes %d channels and gives %d; "
                          "need RGB in, one mask channel out",
                          path, s->model->in_c, s->model->out_c);
    return tile_plan_make(&s->cfg, s->opts.layout, s->opts.in_w, s->opts.in_h,
                          s->opts.out_w, s->opts.out_h, s->model->in_w, s->model->in_h,
                          &s->plan, err);
}

void seg_common_release(struct seg *s)
{
    if (s)
        model_free(&s->model);
}

/* ---- lifecycle ---- */

int seg_create(const struct seg_opts *o, struct seg **out, vr_err *err)
{
    *out = NULL;
    switch (o->backend) {
    case SEG_CPU:
        return seg_cpu_create(o, out, err);
    case SEG_CUDA:
#ifdef VR_HAVE_CUDA
        return seg_cuda_create(o, out, err);
#else
        return vr_err_set(err, VR_ENOTBUILT, "seg: built without CUDA; use the CPU backend");
#endif
    }
    return vr_err_set(err, VR_EINVAL, "seg: unknown backend %d", (int)o->backend);
}

static int check_frame(const struct seg *s, const struct seg_frame *f, int i, vr_err *err)
{
    if (f->w != s->opts.in_w || f->h != s->opts.in_h)
        return vr_err_set(err, VR_EINVAL, "seg: frame %d is %dx%d, engine made for %dx%d",
                          i, f->w, f->h, s->opts.in_w, s->opts.in_h);
    if ((unsigned)f->fmt > SEG_PIX_YUV420P)
        return vr_err_set(err, VR_ENOTSUP, "seg: frame %d: unknown pixel format %d",
                          i, (int)f->fmt);
    int planes = f->fmt == SEG_PIX_RGB24 ? 1 : f->fmt == SEG_PIX_YUV420P ? 3 : 2;
    int bpp = f->fmt == SEG_PIX_RGB24 ? 3 : f->fmt == SEG_PIX_P010 ? 2 : 1;
    for (int p = 0; p < planes; p++)
        if (!f->data[p] || f->linesize[p] < (p == 0 ? f->w * bpp : (f->w + 1) / 2))
            return vr_err_set(err, VR_EINVAL, "seg: frame %d: plane %d missing or short",
                              i, p);
    return 0;
}

int seg_run(struct seg *s, const struct seg_frame *frames, int n,
            struct seg_mask *masks, struct seg_timing *timing, vr_err *err)
{
    if (n < 1 || n > s->opts.max_batch)
        return vr_err_set(err, VR_EINVAL, "seg: %d frames, engine takes 1..%d",
                          n, s->opts.max_batch);
    for (int i = 0; i < n; i++) {
        int rc = check_frame(s, &frames[i], i, err);
        if (rc < 0)
            return rc;
        if (masks[i].w != s->opts.out_w || masks[i].h != s->opts.out_h || !masks[i].data
            || masks[i].linesize < masks[i].w)
            return vr_err_set(err, VR_EINVAL, "seg: mask %d is %dx%d, engine writes %dx%d",
                              i, masks[i].w, masks[i].h, s->opts.out_w, s->opts.out_h);
    }
    if (timing)
        memset(timing, 0, sizeof *timing);
    return s->ops->run(s, frames, n, masks, timing, err);
}

void seg_reset(struct seg *s)
{
    if (s && s->ops)
        s->ops->reset(s);
}

void seg_free(struct seg **sp)
{
    if (!sp || !*sp)
        return;
    struct seg *s = *sp;
    if (s->ops)
        s->ops->destroy(s);
    seg_common_release(s);
    free(s);
    *sp = NULL;
}

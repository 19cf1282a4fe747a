/*
 * seg_common.c - what both backends of the segmentation engine share
 * (seg_impl.h): the checked set-up (config copy, model and the fused one,
 * tile plan) and the
 * teardown. The engine's files depend one way:
 *
 *   seg.c (the public front: dispatch, argument checks)
 *     -> seg_backend_ref.c / seg_backend.cu (the backends)
 *       -> seg_common.c (set-up, teardown) -> tiles.c (eyes, tiles, layouts)
 */
#include "seg_impl.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int rc = config_model_file(&s->cfg, path, sizeof path, err);
    if (rc < 0)
        return rc;
    rc = model_load(path, &s->model, err);
    if (rc < 0)
        return rc;
    if (s->model->in_c != 3 || s->model->out_c != 1)
        return vr_err_set(err, VR_ENOTSUP, "%s: model takes %d channels and gives %d; "
                          "need RGB in, one mask channel out",
                          path, s->model->in_c, s->model->out_c);
    if (strcmp(s->cfg.fuse_model, "none") != 0) {
        struct vr_config fc = s->cfg;
        snprintf(fc.model, sizeof fc.model, "%s", s->cfg.fuse_model);
        fc.model_file[0] = '\0';
        if ((rc = config_model_file(&fc, path, sizeof path, err)) < 0
            || (rc = model_load(path, &s->fuse, err)) < 0)
            return vr_err_prefix(err, "fuse_model");
        if (s->fuse->in_c != 3 || s->fuse->out_c != 1)
            return vr_err_set(err, VR_ENOTSUP, "%s: the fused model takes %d channels and "
                              "gives %d; need RGB in, one mask channel out",
                              path, s->fuse->in_c, s->fuse->out_c);
    }
    return tile_plan_make(&s->cfg, s->opts.layout, s->opts.in_w, s->opts.in_h,
                          s->opts.out_w, s->opts.out_h, s->model->in_w, s->model->in_h,
                          &s->plan, err);
}

void seg_common_release(struct seg *s)
{
    if (s) {
        model_free(&s->model);
        model_free(&s->fuse);
    }
}

/* ---- teardown (backends call it on a failed create too) ---- */

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

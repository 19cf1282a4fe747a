/*
 * util-seg.h - helpers for the engine tests (t-seg-*.c): run the CPU
 * engine on an image file with a given config and get the mask back.
 */
#ifndef VR_T_SEG_ENGINE_H
#define VR_T_SEG_ENGINE_H

#include "util-image.h"

#include "config.h"
#include "seg.h"

/* Segments `path` with cfg (NULL = balanced) and layout; the mask is the
 * image's size unless out_w/out_h are set. */
static inline struct timg_mask tseg_run(const char *path, const struct vr_config *cfg,
                                        enum seg_layout layout)
{
    struct vr_config bal;
    if (!cfg) {
        cr_assert_eq(config_load_profile(&bal, "balanced", NULL), 0);
        cfg = &bal;
    }
    struct vio_image *img = NULL;
    vr_err e = { 0 };
    cr_assert_eq(vio_image_read(path, &img, &e), 0, "%s", e.msg);
    struct seg *s = NULL;
    struct seg_opts o = { .backend = SEG_CPU, .cfg = cfg, .layout = layout,
                          .in_w = img->w, .in_h = img->h, .max_batch = 1 };
    cr_assert_eq(seg_create(&o, &s, &e), 0, "%s", e.msg);
    struct timg_mask m = { img->w, img->h, malloc((size_t)img->w * img->h) };
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = img->w, .h = img->h,
                           .data = { img->data }, .linesize = { img->linesize } };
    struct seg_mask sm = { .data = m.v, .w = m.w, .h = m.h, .linesize = m.w };
    cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, &e), 0, "%s", e.msg);
    seg_free(&s);
    cr_assert_null(s);
    vio_image_free(&img);
    return m;
}

static inline struct vr_config tseg_cfg(const char *json)
{
    struct vr_config c;
    vr_err e = { 0 };
    cr_assert_eq(config_load_profile(&c, "balanced", &e), 0, "%s", e.msg);
    if (json)
        cr_assert_eq(config_apply_text(&c, json, "test", &e), 0, "%s", e.msg);
    return c;
}

#endif

/*
 * seg.c - the segmentation engine's public front (seg.h): picks the
 * backend, checks every call's arguments, dispatches through the backend's
 * function table (seg_impl.h). The CPU backend is seg_backend_ref.c, the CUDA one
 * seg_backend.cu (only when built with nvcc); what both share is
 * seg_common.c.
 */
#include "seg_backend.h"
#include "seg_impl.h"

#include <stdlib.h>
#include <string.h>

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


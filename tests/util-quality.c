/*
 * util-quality.c - the quality tests' clips (util-quality.h).
 */
#include "util-quality.h"

#include "vio_video.h"

#include <criterion/criterion.h>
#include <libswscale/swscale.h>
#include <stdlib.h>
#include <string.h>

/* A video read frame by frame (the clip and its truth). */
struct reader {
    struct vio_in *in;
    AVFrame *f;
    AVPacket *p;
    vr_err e;
};

static void reader_open(struct reader *r, const char *path)
{
    struct vio_in_opts io = { .path = path };
    memset(r, 0, sizeof *r);
    cr_assert_eq(vio_in_open(&io, &r->in, &r->e), 0, "%s", r->e.msg);
    r->f = av_frame_alloc();
    r->p = av_packet_alloc();
}

/* The next decoded frame into r->f (unref it after use); 0 at the end. */
static int reader_next(struct reader *r)
{
    int ev;
    while ((ev = vio_in_next(r->in, r->f, r->p, &r->e)) > 0) {
        if (ev == VIO_FRAME)
            return 1;
        av_packet_unref(r->p);
    }
    return 0;
}

static void reader_close(struct reader *r)
{
    av_frame_free(&r->f);
    av_packet_free(&r->p);
    vio_in_free(&r->in);
}

void clip_read(struct clip *c, const char *path, int frames, int w, int h)
{
    struct reader r;
    struct SwsContext *sws = NULL;
    reader_open(&r, path);
    c->n = 0;
    while (c->n < frames && reader_next(&r)) {
        const AVFrame *f = r.f;
        c->w = w ? w : f->width;
        c->h = h ? h : f->height;
        AVFrame *o = av_frame_alloc();
        o->format = AV_PIX_FMT_YUV420P;
        o->width = c->w;
        o->height = c->h;
        cr_assert_geq(av_frame_get_buffer(o, 64), 0);
        sws = sws_getCachedContext(sws, f->width, f->height, f->format, c->w, c->h,
                                   AV_PIX_FMT_YUV420P, SWS_BICUBIC, NULL, NULL, NULL);
        sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, o->data,
                  o->linesize);
        c->luma[c->n] = malloc((size_t)c->w * c->h);
        for (int y = 0; y < c->h; y++)
            memcpy(c->luma[c->n] + (size_t)y * c->w, o->data[0] + (size_t)y * o->linesize[0],
                   (size_t)c->w);
        c->f[c->n++] = o;
        av_frame_unref(r.f);
    }
    cr_assert_eq(c->n, frames, "%s: %d frames (%s)", path, c->n, r.e.msg);
    sws_freeContext(sws);
    reader_close(&r);
}

void clip_free(struct clip *c)
{
    for (int i = 0; i < c->n; i++) {
        av_frame_free(&c->f[i]);
        free(c->luma[i]);
    }
}

struct seg *profile_run(const struct clip *c, const char *profile, const char *over,
                        uint8_t **m)
{
    struct vr_config cfg;
    vr_err e = { 0 };
    cr_assert_eq(config_load_profile(&cfg, profile, &e), 0, "%s", e.msg);
    if (over)
        cr_assert_eq(config_apply_text(&cfg, over, "test", &e), 0, "%s", e.msg);
    struct seg *s = NULL;
    struct seg_opts o = { .backend = SEG_CPU, .cfg = &cfg, .layout = SEG_LAYOUT_SBS,
                          .in_w = c->w, .in_h = c->h, .max_batch = 1 };
    cr_assert_eq(seg_create(&o, &s, &e), 0, "%s: %s", profile, e.msg);
    for (int i = 0; i < c->n; i++) {
        const AVFrame *f = c->f[i];
        struct seg_frame sf = { .fmt = SEG_PIX_YUV420P, .w = f->width, .h = f->height,
                                .data = { f->data[0], f->data[1], f->data[2] },
                                .linesize = { f->linesize[0], f->linesize[1],
                                              f->linesize[2] } };
        m[i] = malloc((size_t)c->w * c->h);
        struct seg_mask sm = { .data = m[i], .w = c->w, .h = c->h, .linesize = c->w };
        cr_assert_eq(seg_run(s, &sf, 1, &sm, NULL, &e), 0, "%s", e.msg);
    }
    return s;
}

void truth_read(uint8_t **t, const char *path, int n, int w, int h)
{
    struct reader r;
    int k = 0;
    reader_open(&r, path);
    while (k < n && reader_next(&r)) {
        cr_assert_eq(r.f->format, AV_PIX_FMT_GRAY8, "the truth is 8-bit gray");
        t[k] = malloc((size_t)w * h);
        quality_plane_at(r.f->data[0], r.f->linesize[0], r.f->width, r.f->height, t[k++], w, h);
        av_frame_unref(r.f);
    }
    cr_assert_eq(k, n, "%s: %d frames (%s)", path, k, r.e.msg);
    reader_close(&r);
}

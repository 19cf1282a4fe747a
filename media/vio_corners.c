/*
 * vio_corners.c - the black corners around a fisheye circle (vio_corners.h).
 */
#include "vio_corners.h"

#include "vio_layout.h"
#include "vio_video.h"

#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <stdlib.h>

/* A sample of a corner block holds picture when it is brighter than
 * CORNER_BRIGHT_Y; the block does when more than CORNER_PICTURE_PCT % of
 * its samples outside the eye's inscribed circle do (the blocks reach into
 * a fisheye's circle: only what lies outside it is black there). */
#define CORNER_BRIGHT_Y    40
#define CORNER_PICTURE_PCT 2

/* Counts the samples of the qw x qh luma block at (fx, fy) that lie
 * outside the circle of radius r (plus a 2-sample margin for a soft edge)
 * around (cx, cy), and how many of those are bright. */
static void corner_count(const AVFrame *src, int fx, int fy, int qw, int qh, double cx,
                         double cy, double r, long *outside, long *bright)
{
    double r2 = (r + 2) * (r + 2);
    for (int y = 0; y < qh; y++) {
        const uint8_t *row = src->data[0] + (size_t)(fy + y) * src->linesize[0] + fx;
        double dy = fy + y + 0.5 - cy;
        for (int x = 0; x < qw; x++) {
            double dx = fx + x + 0.5 - cx;
            if (dx * dx + dy * dy <= r2)
                continue;
            (*outside)++;
            *bright += row[x] > CORNER_BRIGHT_Y;
        }
    }
}

int vio_corners_dark(const AVFrame *f, int ex, int ey, int ew, int eh, int qw, int qh)
{
    int hw = (qw / 2) & ~1, hh = (qh / 2) & ~1;
    int rw = (qw - hw) & ~1, rh = (qh - hh) & ~1;
    double r = (ew < eh ? ew : eh) / 2.0;
    for (int e = 0; e < ex * ey; e++) {
        int fx = (e % ex) * ew, fy = (e / ex) * eh;
        double cx = fx + ew / 2.0, cy = fy + eh / 2.0;
        long outside = 0, bright = 0;
        corner_count(f, fx, fy, hw, hh, cx, cy, r, &outside, &bright);
        corner_count(f, fx + ew - rw, fy, rw, hh, cx, cy, r, &outside, &bright);
        corner_count(f, fx, fy + eh - rh, hw, rh, cx, cy, r, &outside, &bright);
        corner_count(f, fx + ew - rw, fy + eh - rh, rw, rh, cx, cy, r, &outside, &bright);
        if (bright * 100 > outside * CORNER_PICTURE_PCT)
            return 0;
    }
    return 1;
}

/* as output_plan_make rounds a matte size: even, at least 2 */
static int even(double v)
{
    int i = (int)(v + 0.5) & ~1;
    return i < 2 ? 2 : i;
}

/* The decoded frame as 8-bit gray (whatever its format), into g. */
static int to_gray(const AVFrame *f, AVFrame *g)
{
    g->format = AV_PIX_FMT_GRAY8;
    g->width = f->width;
    g->height = f->height;
    if (av_frame_get_buffer(g, 0) < 0)
        return -1;
    struct SwsContext *s = sws_getContext(f->width, f->height, f->format, f->width, f->height,
                                          AV_PIX_FMT_GRAY8, SWS_POINT, NULL, NULL, NULL);
    if (!s)
        return -1;
    int rc = sws_scale(s, (const uint8_t *const *)f->data, f->linesize, 0, f->height, g->data,
                       g->linesize);
    sws_freeContext(s);
    return rc == f->height ? 0 : -1;
}

int vio_first_frame_corners_dark(const char *path, int layout, int *layout_out, vr_err *err)
{
    struct vio_in_opts o = { .path = path, .threads = 1 };
    struct vio_in *in = NULL;
    int rc = vio_in_open(&o, &in, err);
    if (rc < 0)
        return rc;
    const struct vio_info *inf = vio_in_info(in);
    if (layout == VIO_LAYOUT_AUTO) {
        const char *why;
        layout = vio_guess_layout(inf, path, &why);
    }
    *layout_out = layout;
    AVFrame *f = av_frame_alloc(), *g = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    rc = f && g && pkt ? VIO_EOF : vr_err_set(err, VR_ENOMEM, "out of memory");
    while (rc >= 0 && (rc = vio_in_next(in, f, pkt, err)) > 0 && rc != VIO_FRAME)
        av_packet_unref(pkt), av_frame_unref(f);
    if (rc == VIO_EOF)
        rc = vr_err_set(err, VR_EFORMAT, "%s: no frame to look at", path);
    else if (rc == VIO_FRAME && to_gray(f, g) < 0)
        rc = vr_err_set(err, VR_ENOMEM, "%s: cannot convert its first frame", path);
    else if (rc == VIO_FRAME) {
        int ex = layout == VIO_LAYOUT_SBS ? 2 : 1, ey = layout == VIO_LAYOUT_TB ? 2 : 1;
        int w = f->width, h = f->height;
        rc = vio_corners_dark(g, ex, ey, ((w & ~1) / ex) & ~1, ((h & ~1) / ey) & ~1,
                              even(w / ex * VIO_ALPHA_SCALE), even(h / ey * VIO_ALPHA_SCALE));
    }
    av_packet_free(&pkt);
    av_frame_free(&f);
    av_frame_free(&g);
    vio_in_free(&in);
    return rc;
}

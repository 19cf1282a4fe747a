/*
 * util-x264.c - libx264 ultrafast's bytes and PSNR on a clip (util-x264.h).
 */
#include "util-x264.h"

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Every frame d gives now: its squared error against the source frame *k. */
static void drain(AVCodecContext *d, const uint8_t *frames, int n, int w, int h, int *k, double *sse)
{
    AVFrame *f = av_frame_alloc();
    while (f && avcodec_receive_frame(d, f) == 0) {
        for (int y = 0; *k < n && y < h; y++)
            for (int x = 0; x < w; x++) {
                double e = (double)frames[(size_t)*k * w * h + (size_t)y * w + x] -
                           f->data[0][(size_t)y * f->linesize[0] + x];
                *sse += e * e;
            }
        (*k)++;
        av_frame_unref(f);
    }
    av_frame_free(&f);
}

int tx264_psnr(const uint8_t *frames, int n, int w, int h, int qp, long long *bytes, double *psnr)
{
    const AVCodec *ec = avcodec_find_encoder_by_name("libx264");
    const AVCodec *dc = avcodec_find_decoder(AV_CODEC_ID_H264);
    if (!ec || !dc)
        return -1;
    AVCodecContext *e = avcodec_alloc_context3(ec), *d = avcodec_alloc_context3(dc);
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    AVDictionary *o = NULL;
    char q[16];
    int rc = -1, k = 0;
    double sse = 0;
    *bytes = 0;
    if (!e || !d || !f || !p)
        goto done;
    e->width = w;
    e->height = h;
    e->pix_fmt = AV_PIX_FMT_YUVJ420P;
    e->time_base = (AVRational){ 1, 30 };
    e->max_b_frames = 0;
    e->gop_size = n + 1;
    e->thread_count = 1;
    d->thread_count = 1;
    snprintf(q, sizeof q, "%d", qp);
    av_dict_set(&o, "preset", "ultrafast", 0);
    av_dict_set(&o, "qp", q, 0);
    av_dict_set(&o, "x264-params", "scenecut=0", 0);
    if (avcodec_open2(e, ec, &o) < 0 || avcodec_open2(d, dc, NULL) < 0)
        goto done;
    f->format = e->pix_fmt;
    f->width = w;
    f->height = h;
    if (av_frame_get_buffer(f, 64) < 0)
        goto done;
    for (int i = 0; i <= n; i++) {
        if (i < n) {
            if (av_frame_make_writable(f) < 0)
                goto done;
            for (int y = 0; y < h; y++)
                memcpy(f->data[0] + (size_t)y * f->linesize[0], frames + (size_t)i * w * h + (size_t)y * w,
                       (size_t)w);
            for (int y = 0; y < h / 2; y++) {
                memset(f->data[1] + (size_t)y * f->linesize[1], 128, (size_t)w / 2);
                memset(f->data[2] + (size_t)y * f->linesize[2], 128, (size_t)w / 2);
            }
            f->pts = i;
        }
        if (avcodec_send_frame(e, i < n ? f : NULL) < 0)
            goto done;
        while (avcodec_receive_packet(e, p) == 0) {
            *bytes += p->size;
            avcodec_send_packet(d, p);
            av_packet_unref(p);
            drain(d, frames, n, w, h, &k, &sse);
        }
    }
    avcodec_send_packet(d, NULL);
    drain(d, frames, n, w, h, &k, &sse);
    if (k == n) {
        *psnr = sse > 0 ? 10 * log10(255.0 * 255.0 * n * w * h / sse) : 99;
        rc = 0;
    }
done:
    av_dict_free(&o);
    av_packet_free(&p);
    av_frame_free(&f);
    avcodec_free_context(&e);
    avcodec_free_context(&d);
    return rc;
}

/*
 * util-h264.c - the matte encoder's round trip (util-h264.h).
 */
#include "util-h264.h"

#include <libavcodec/avcodec.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/motion_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt {
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frm;
    AVFrame *sw;        /* an NVDEC frame downloaded */
    AVBufferRef *hw;    /* the NVDEC device, or NULL */
    uint8_t *recon;     /* n * w * h: the encoder's reconstruction of each frame */
    int w, h, n;
    struct th264_result *r;
};

static void check_frame(struct rt *t, const AVFrame *f)
{
    struct th264_result *r = t->r;
    int i = r->frames_decoded++;
    r->dec_w = f->width;
    r->dec_h = f->height;
    if (i >= t->n || f->width != t->w || f->height != t->h) {
        r->luma_mismatch++;
        if (r->first_bad < 0)
            r->first_bad = i;
        return;
    }
    const uint8_t *rec = t->recon + (size_t)i * t->w * t->h;
    int bad = 0, cbad = 0;
    for (int y = 0; y < t->h && !bad; y++)
        bad = memcmp(f->data[0] + (size_t)y * f->linesize[0], rec + (size_t)y * t->w, (size_t)t->w) != 0;
    /* planar 4:2:0 from the CPU decoder, NV12 (U and V interleaved) from NVDEC */
    int nv12 = f->format == AV_PIX_FMT_NV12, cw = nv12 ? t->w : t->w / 2;
    for (int c = 1; c < (nv12 ? 2 : 3) && !cbad; c++)
        for (int y = 0; y < t->h / 2 && !cbad; y++)
            for (int x = 0; x < cw; x++)
                if (f->data[c][(size_t)y * f->linesize[c] + x] != 128) {
                    cbad = 1;
                    break;
                }
    r->luma_mismatch += bad;
    r->chroma_mismatch += cbad;
    if ((bad || cbad) && r->first_bad < 0)
        r->first_bad = i;
}

/* The vectors of a CPU-decoded frame (AV_CODEC_FLAG2_EXPORT_MVS). */
static void count_mvs(struct rt *t, const AVFrame *f)
{
    const AVFrameSideData *sd = av_frame_get_side_data(f, AV_FRAME_DATA_MOTION_VECTORS);
    if (!sd)
        return;
    const AVMotionVector *mv = (const AVMotionVector *)sd->data;
    int cw = (t->w + 15) / 16 * 16, ch = (t->h + 15) / 16 * 16;
    for (size_t k = 0; k < sd->size / sizeof *mv; k++) {
        int scale = mv[k].motion_scale ? mv[k].motion_scale : 1;
        int ax = abs(mv[k].motion_x) / scale, ay = abs(mv[k].motion_y) / scale;
        if (!ax && !ay)
            continue;
        struct th264_result *r = t->r;
        r->mv_nonzero++;
        r->mv_max = ax > r->mv_max ? ax : ay > r->mv_max ? ay : r->mv_max;
        int x0 = mv[k].src_x - mv[k].w / 2, y0 = mv[k].src_y - mv[k].h / 2;
        r->mv_at_edge += x0 <= 0 || y0 <= 0 || x0 + mv[k].w >= cw || y0 + mv[k].h >= ch;
    }
}

static int drain(struct rt *t)
{
    for (;;) {
        int rc = avcodec_receive_frame(t->dec, t->frm);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
            return 0;
        if (rc < 0) {
            snprintf(t->r->err, sizeof t->r->err, "decoder: receive failed (%d)", rc);
            return -1;
        }
        if (t->frm->format == AV_PIX_FMT_CUDA) {
            rc = av_hwframe_transfer_data(t->sw, t->frm, 0);
            if (rc < 0) {
                snprintf(t->r->err, sizeof t->r->err, "NVDEC: download failed (%d)", rc);
                return -1;
            }
            t->sw->width = t->frm->width; /* the cropped size */
            t->sw->height = t->frm->height;
            check_frame(t, t->sw);
            av_frame_unref(t->sw);
        } else {
            count_mvs(t, t->frm);
            check_frame(t, t->frm);
        }
        av_frame_unref(t->frm);
    }
}

static int send(struct rt *t, const uint8_t *data, int size)
{
    if (av_new_packet(t->pkt, size) < 0)
        return -1;
    memcpy(t->pkt->data, data, (size_t)size);
    int rc = avcodec_send_packet(t->dec, t->pkt);
    av_packet_unref(t->pkt);
    if (rc < 0) {
        snprintf(t->r->err, sizeof t->r->err, "decoder refused a packet (%d)", rc);
        return -1;
    }
    return drain(t);
}

static enum AVPixelFormat pick_cuda(AVCodecContext *c, const enum AVPixelFormat *f)
{
    (void)c;
    for (; *f != AV_PIX_FMT_NONE; f++)
        if (*f == AV_PIX_FMT_CUDA)
            return *f;
    return AV_PIX_FMT_NONE; /* no software fallback: the test is of NVDEC */
}

/* The decoder through NVDEC: libavcodec's h264 parser and its cuda hwaccel,
 * libnvcuvid (the driver's) doing the decoding. */
static int open_nvdec(struct rt *t)
{
    int rc = av_hwdevice_ctx_create(&t->hw, AV_HWDEVICE_TYPE_CUDA, "0", NULL, 0);
    if (rc < 0) {
        snprintf(t->r->err, sizeof t->r->err, "cannot open NVDEC (cuda device 0): %d", rc);
        return -1;
    }
    t->dec->hw_device_ctx = av_buffer_ref(t->hw);
    t->dec->get_format = pick_cuda;
    t->sw = av_frame_alloc();
    return t->dec->hw_device_ctx && t->sw ? 0 : -1;
}

int th264_roundtrip(const uint8_t *frames, int n, int w, int h, int qp, const uint8_t *idr,
                    struct th264_result *r)
{
    struct th264_how how = { 0 };
    return th264_roundtrip_with(frames, n, w, h, qp, idr, &how, r);
}

int th264_roundtrip_with(const uint8_t *frames, int n, int w, int h, int qp, const uint8_t *idr,
                         const struct th264_how *how, struct th264_result *r)
{
    memset(r, 0, sizeof *r);
    r->first_bad = -1;
    struct rt t = { .w = w, .h = h, .n = n, .r = r };
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    int rc = -1;
    double sse = 0;
    uint8_t *buf = NULL;
    struct h264enc_opts o = { .w = w, .h = h, .qp = qp, .fps_num = 30, .fps_den = 1, .full_range = 1,
                              .use_gpu = how->gpu_encoder, .gpu = 0, .intra_p = how->intra_p,
                              .slices = how->slices };
    if (h264enc_new(&o, &e, &err) < 0) {
        snprintf(r->err, sizeof r->err, "%s", err.msg);
        return -1;
    }
    const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_H264);
    t.dec = c ? avcodec_alloc_context3(c) : NULL;
    t.pkt = av_packet_alloc();
    t.frm = av_frame_alloc();
    t.recon = malloc((size_t)n * w * h);
    if (!t.dec || !t.pkt || !t.frm || !t.recon) {
        snprintf(r->err, sizeof r->err, "out of memory");
        goto done;
    }
    t.dec->thread_count = 1;
    t.dec->flags |= AV_CODEC_FLAG_OUTPUT_CORRUPT;
    t.dec->flags2 |= AV_CODEC_FLAG2_EXPORT_MVS;
    t.dec->err_recognition = AV_EF_EXPLODE | AV_EF_BITSTREAM | AV_EF_CRCCHECK;
    if (how->nvdec && open_nvdec(&t) < 0)
        goto done;
    if (avcodec_open2(t.dec, c, NULL) < 0) {
        snprintf(r->err, sizeof r->err, "cannot open the h264 decoder");
        goto done;
    }
    int hlen;
    const uint8_t *hdr = h264enc_headers(e, &hlen);
    r->bytes = hlen;
    for (int i = 0; i < n; i++) {
        const uint8_t *p;
        int size, key;
        const uint8_t *src = frames + (size_t)i * w * h;
        if (h264enc_frame(e, src, w, idr ? idr[i] : i == 0, &p, &size, &key, &err) < 0) {
            snprintf(r->err, sizeof r->err, "frame %d: %.200s", i, err.msg);
            goto done;
        }
        int rls;
        const uint8_t *rec = h264enc_recon(e, &rls);
        for (int y = 0; y < h; y++) {
            memcpy(t.recon + (size_t)i * w * h + (size_t)y * w, rec + (size_t)y * rls, (size_t)w);
            for (int x = 0; x < w; x++) {
                double d = (double)src[(size_t)y * w + x] - rec[(size_t)y * rls + x];
                sse += d * d;
            }
        }
        r->bytes += size;
        /* the parameter sets go in front of the first access unit */
        uint8_t *tmp = realloc(buf, (size_t)(hlen + size));
        if (!tmp)
            goto done;
        buf = tmp;
        int off = 0;
        if (i == 0) {
            memcpy(buf, hdr, (size_t)hlen);
            off = hlen;
        }
        memcpy(buf + off, p, (size_t)size);
        if (send(&t, buf, off + size) < 0) {
            snprintf(r->err + strlen(r->err), sizeof r->err - strlen(r->err), " at frame %d", i);
            goto done;
        }
    }
    if (avcodec_send_packet(t.dec, NULL) < 0 || drain(&t) < 0)
        goto done;
    r->profile = t.dec->profile;
    r->level = t.dec->level;
    h264enc_stats(e, &r->st);
    double mse = sse / ((double)n * w * h);
    r->psnr = mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99;
    rc = 0;
done:
    free(buf);
    free(t.recon);
    av_frame_free(&t.frm);
    av_frame_free(&t.sw);
    av_packet_free(&t.pkt);
    avcodec_free_context(&t.dec);
    av_buffer_unref(&t.hw);
    h264enc_free(&e);
    return rc;
}

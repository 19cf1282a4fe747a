/*
 * vio_image.c - PNG/JPEG in, gray or RGB PNG out (see vio_image.h).
 *
 * The image2 demuxer hands the whole file over as one packet, which lets us
 * check the container's own end marker before decoding (PNG's IEND chunk,
 * JPEG's EOI): libavcodec happily returns a half-grey picture for a
 * truncated JPEG, and a mask of half a picture is worse than an error.
 */
#include "vio_image.h"

#include "storage.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- picture ---- */

int vio_image_alloc(int w, int h, struct vio_image **out, vr_err *err)
{
    *out = NULL;
    if (w < 1 || h < 1 || w > VIO_IMAGE_MAX_DIM || h > VIO_IMAGE_MAX_DIM)
        return vr_err_set(err, VR_EINVAL, "image size %dx%d outside 1..%d",
                          w, h, VIO_IMAGE_MAX_DIM);
    struct vio_image *img = calloc(1, sizeof *img);
    if (!img)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    img->w = w;
    img->h = h;
    img->linesize = (3 * w + 31) & ~31;
    img->data = malloc((size_t)img->linesize * h);
    if (!img->data) {
        free(img);
        return vr_err_set(err, VR_ENOMEM, "out of memory for a %dx%d image", w, h);
    }
    *out = img;
    return 0;
}

void vio_image_free(struct vio_image **img)
{
    if (!img || !*img)
        return;
    free((*img)->data);
    free(*img);
    *img = NULL;
}

/* ---- read ---- */

/* The encoded file ends where its format says it ends. */
static int complete_file(enum AVCodecID id, const uint8_t *d, int n)
{
    if (id == AV_CODEC_ID_PNG) {
        /* IEND chunk: length 0, type "IEND", CRC; a few trailing bytes ok */
        for (int i = n - 8; i >= 8 && i >= n - 64; i--)
            if (memcmp(d + i, "IEND", 4) == 0)
                return 1;
        return 0;
    }
    /* JPEG: EOI marker FF D9 near the end (some writers pad after it) */
    for (int i = n - 2; i >= 2 && i >= n - 1024; i--)
        if (d[i] == 0xFF && d[i + 1] == 0xD9)
            return 1;
    return 0;
}

static int av_msg(vr_err *err, int code, const char *path, const char *what, int averr)
{
    char buf[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(averr, buf, sizeof buf);
    return vr_err_set(err, code, "%s: %s: %s", path, what, buf);
}

/* ---- one image, step by step ---- */

/* A regular, non-empty file within VIO_IMAGE_MAX_FILE. */
static int image_file_check(const char *path, struct stat *st, vr_err *err)
{
    if (stat(path, st) != 0)
        return vr_err_set(err, VR_ENOENT, "%s: no such file", path);
    if (!S_ISREG(st->st_mode))
        return vr_err_set(err, VR_EFORMAT, "%s: not a regular file", path);
    if (st->st_size == 0)
        return vr_err_set(err, VR_EFORMAT, "%s: empty file, not an image", path);
    if ((unsigned long long)st->st_size > VIO_IMAGE_MAX_FILE)
        return vr_err_set(err, VR_EFORMAT, "%s: %lld bytes, more than the %u allowed",
                          path, (long long)st->st_size, VIO_IMAGE_MAX_FILE);
    return 0;
}

/* The one packet read (pkt) and its codec told from its bytes (*id): 0,
 * or the image refused. */
static int image_sniff(AVFormatContext *fmt, AVPacket *pkt, const char *path, long long size,
                       enum AVCodecID *id, vr_err *err)
{
    /* image2 guesses the codec from the name; trust the bytes instead */
    *id = AV_CODEC_ID_NONE;
    int rc = av_read_frame(fmt, pkt);
    if (rc < 0)
        return av_msg(err, VR_EFORMAT, path, "cannot read", rc);
    if (pkt->size >= 8 && memcmp(pkt->data, "\x89PNG\r\n\x1a\n", 8) == 0)
        *id = AV_CODEC_ID_PNG;
    else if (pkt->size >= 3 && pkt->data[0] == 0xFF && pkt->data[1] == 0xD8
             && pkt->data[2] == 0xFF)
        *id = AV_CODEC_ID_MJPEG;
    if (*id == AV_CODEC_ID_NONE)
        return vr_err_set(err, VR_EFORMAT, "%s: not a PNG or JPEG image", path);
    if (pkt->size != size || !complete_file(*id, pkt->data, pkt->size))
        return vr_err_set(err, VR_EFORMAT, "%s: truncated %s (no end marker)", path,
                          *id == AV_CODEC_ID_PNG ? "PNG" : "JPEG");
    return 0;
}

/* The decoded frame into img's RGB24. */
static int image_to_rgb(const AVFrame *frm, struct vio_image *img, const char *path, vr_err *err)
{
    /* JPEG's yuvj* formats are plain YUV at full range: say so to swscale
     * instead of handing it the deprecated names */
    enum AVPixelFormat src = frm->format;
    int full = frm->color_range == AVCOL_RANGE_JPEG;
    switch (src) {
    case AV_PIX_FMT_YUVJ420P: src = AV_PIX_FMT_YUV420P; full = 1; break;
    case AV_PIX_FMT_YUVJ422P: src = AV_PIX_FMT_YUV422P; full = 1; break;
    case AV_PIX_FMT_YUVJ444P: src = AV_PIX_FMT_YUV444P; full = 1; break;
    case AV_PIX_FMT_YUVJ440P: src = AV_PIX_FMT_YUV440P; full = 1; break;
    default: break;
    }
    struct SwsContext *sws = sws_getContext(frm->width, frm->height, src, img->w, img->h,
                         AV_PIX_FMT_RGB24, SWS_POINT, NULL, NULL, NULL);
    if (sws) {
        const int *coef = sws_getCoefficients(SWS_CS_ITU601); /* JFIF is BT.601 */
        sws_setColorspaceDetails(sws, coef, full, coef, 1, 0, 1 << 16, 1 << 16);
    }
    if (!sws)
        return vr_err_set(err, VR_ECODEC, "%s: cannot convert %s to RGB", path,
                          av_get_pix_fmt_name(frm->format));
    uint8_t *dst[4] = { img->data };
    int dls[4] = { img->linesize };
    sws_scale(sws, (const uint8_t *const *)frm->data, frm->linesize, 0, frm->height,
              dst, dls);
    sws_freeContext(sws);
    return 0;
}

int vio_image_read(const char *path, struct vio_image **out, vr_err *err)
{
    AVFormatContext *fmt = NULL;
    AVCodecContext *dec = NULL;
    AVPacket *pkt = NULL;
    AVFrame *frm = NULL;
    struct vio_image *img = NULL;
    struct stat st;
    int rc;

    *out = NULL;
    if ((rc = image_file_check(path, &st, err)) < 0)
        return rc;

    /* image2 by name: probing would also accept text "formats" (tty, ...) */
    const AVInputFormat *ifmt = av_find_input_format("image2");
    rc = avformat_open_input(&fmt, path, ifmt, NULL);
    if (rc < 0) {
        rc = av_msg(err, VR_EFORMAT, path, "cannot open as an image", rc);
        goto fail;
    }
    if (fmt->nb_streams < 1) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: not a PNG or JPEG image", path);
        goto fail;
    }
    pkt = av_packet_alloc();
    if (!pkt) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    enum AVCodecID id = AV_CODEC_ID_NONE;
    if ((rc = image_sniff(fmt, pkt, path, (long long)st.st_size, &id, err)) < 0)
        goto fail;

    const AVCodec *codec = avcodec_find_decoder(id);
    dec = codec ? avcodec_alloc_context3(codec) : NULL;
    frm = av_frame_alloc();
    if (!dec || !frm) {
        rc = vr_err_set(err, VR_ECODEC, "%s: no %s decoder in this libavcodec", path,
                        avcodec_get_name(id));
        goto fail;
    }
    dec->err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK;
    dec->thread_count = 1;
    if ((rc = avcodec_open2(dec, codec, NULL)) < 0) {
        rc = av_msg(err, VR_ECODEC, path, "cannot open the decoder", rc);
        goto fail;
    }
    if ((rc = avcodec_send_packet(dec, pkt)) < 0
        || (rc = avcodec_send_packet(dec, NULL)) < 0
        || (rc = avcodec_receive_frame(dec, frm)) < 0) {
        rc = av_msg(err, VR_EFORMAT, path, "corrupt image", rc);
        goto fail;
    }
    if (frm->decode_error_flags || (frm->flags & AV_FRAME_FLAG_CORRUPT)) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: corrupt image data", path);
        goto fail;
    }
    if ((rc = vio_image_alloc(frm->width, frm->height, &img, err)) < 0) {
        vr_err_prefix(err, "%s", path);
        goto fail;
    }
    if ((rc = image_to_rgb(frm, img, path, err)) < 0)
        goto fail;
    *out = img;
    img = NULL;
    rc = 0;

fail:
    vio_image_free(&img);
    av_frame_free(&frm);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    return rc;
}

/* ---- write ---- */

/* Writes w x h pixels of `bpp` bytes (1: gray, 3: RGB24) as a PNG. */
static int write_png(const char *path, const uint8_t *data, int w, int h, int linesize,
                     int bpp, vr_err *err)
{
    const enum AVPixelFormat pf = bpp == 3 ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_GRAY8;
    AVCodecContext *enc = NULL;
    AVFrame *frm = NULL;
    AVPacket *pkt = NULL;
    int rc;

    if (w < 1 || h < 1 || w > VIO_IMAGE_MAX_DIM || h > VIO_IMAGE_MAX_DIM)
        return vr_err_set(err, VR_EINVAL, "%s: image size %dx%d outside 1..%d",
                          path, w, h, VIO_IMAGE_MAX_DIM);

    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
    enc = codec ? avcodec_alloc_context3(codec) : NULL;
    frm = av_frame_alloc();
    pkt = av_packet_alloc();
    if (!enc || !frm || !pkt) {
        rc = vr_err_set(err, VR_ECODEC, "%s: no png encoder in this libavcodec", path);
        goto fail;
    }
    enc->width = w;
    enc->height = h;
    enc->pix_fmt = pf;
    enc->time_base = (AVRational){ 1, 1 };
    if ((rc = avcodec_open2(enc, codec, NULL)) < 0) {
        rc = av_msg(err, VR_ECODEC, path, "cannot open the png encoder", rc);
        goto fail;
    }
    frm->width = w;
    frm->height = h;
    frm->format = pf;
    if ((rc = av_frame_get_buffer(frm, 0)) < 0) {
        rc = av_msg(err, VR_ENOMEM, path, "frame", rc);
        goto fail;
    }
    for (int y = 0; y < h; y++)
        memcpy(frm->data[0] + (size_t)y * frm->linesize[0], data + (size_t)y * linesize,
               (size_t)w * bpp);
    if ((rc = avcodec_send_frame(enc, frm)) < 0 || (rc = avcodec_send_frame(enc, NULL)) < 0
        || (rc = avcodec_receive_packet(enc, pkt)) < 0) {
        rc = av_msg(err, VR_ECODEC, path, "png encoding failed", rc);
        goto fail;
    }
    rc = storage_write_atomic(path, pkt->data, (size_t)pkt->size, err);
fail:
    av_packet_free(&pkt);
    av_frame_free(&frm);
    avcodec_free_context(&enc);
    return rc;
}

int vio_image_write_gray_png(const char *path, const uint8_t *data, int w, int h,
                             int linesize, vr_err *err)
{
    return write_png(path, data, w, h, linesize, 1, err);
}

int vio_image_write_rgb_png(const char *path, const struct vio_image *img, vr_err *err)
{
    return write_png(path, img->data, img->w, img->h, img->linesize, 3, err);
}

/*
 * src_io.c - files and store objects opened the same way for libav
 * (src_io.h).
 */
#include "src_io.h"

#include "http_io.h"
#include "log.h"
#include "url_root.h"

#include <libavformat/avformat.h>
#include <stdio.h>
#include <string.h>

#define SRC_IO_AVIO_BUF (64 << 10)  /* libav's own buffer: reads come from the window */

/* A store object behind an AVIOContext. */
struct src_http {
    struct http_obj *o;
    uint8_t *win;              /* read-ahead window: [win_off, win_off + win_len) */
    int64_t win_off;
    size_t win_len, block;     /* block: the next fetch's size (src_io.h) */
    int64_t pos;               /* libav's position */
};

static _Thread_local vr_err src_last_err;
static _Thread_local int src_last_set;

int src_io_take_error(vr_err *err)
{
    if (!src_last_set)
        return 0;
    src_last_set = 0;
    if (err)
        *err = src_last_err;
    return 1;
}

static int src_http_read(void *opaque, uint8_t *buf, int size)
{
    struct src_http *s = opaque;
    int64_t total = http_obj_size(s->o);
    if (s->pos >= total)
        return AVERROR_EOF;
    if (!(s->pos >= s->win_off && s->pos < s->win_off + (int64_t)s->win_len)) {
        int seq = s->win_len && s->pos == s->win_off + (int64_t)s->win_len;
        s->block = !seq ? SRC_IO_BLOCK_MIN
                        : s->block * 2 > SRC_IO_BLOCK_MAX ? SRC_IO_BLOCK_MAX : s->block * 2;
        size_t len = total - s->pos < (int64_t)s->block ? (size_t)(total - s->pos) : s->block;
        vr_err e = { 0 };
        s->win_len = 0;
        if (http_obj_read(s->o, s->pos, s->win, len, &e) < 0) {
            log_warn("%s", e.msg);
            src_last_err = e;
            src_last_set = 1;
            return e.code == VR_EFORMAT ? AVERROR_INVALIDDATA : AVERROR(EIO);
        }
        s->win_off = s->pos;
        s->win_len = len;
    }
    size_t at = (size_t)(s->pos - s->win_off), n = s->win_len - at;
    if (n > (size_t)size)
        n = (size_t)size;
    memcpy(buf, s->win + at, n);
    s->pos += (int64_t)n;
    return (int)n;
}

static int64_t src_http_seek(void *opaque, int64_t off, int whence)
{
    struct src_http *s = opaque;
    int64_t total = http_obj_size(s->o);
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return total;
    case SEEK_SET: break;
    case SEEK_CUR: off += s->pos; break;
    case SEEK_END: off += total; break;
    default: return AVERROR(EINVAL);
    }
    if (off < 0)
        return AVERROR(EINVAL);
    s->pos = off;
    return off;
}

static void src_http_free(struct src_http **sp)
{
    struct src_http *s = *sp;
    if (!s)
        return;
    http_obj_free(&s->o);
    av_free(s->win);
    av_free(s);
    *sp = NULL;
}

/* ---- opening ---- */

static int src_open_url(AVFormatContext **ic, const char *url, const char *want_fp)
{
    struct src_http *s = av_mallocz(sizeof *s);
    AVIOContext *pb = NULL;
    uint8_t *buf = NULL;
    vr_err e = { 0 };
    int ret = AVERROR(ENOMEM);
    if (!s || !(s->win = av_malloc(SRC_IO_BLOCK_MAX)) || !(buf = av_malloc(SRC_IO_AVIO_BUF)))
        goto fail;
    if (http_obj_open(url, want_fp, &s->o, &e) < 0) {
        src_last_err = e;
        src_last_set = 1;
        ret = e.code == VR_ENOENT ? AVERROR(ENOENT) : e.code == VR_EFORMAT
              ? AVERROR_INVALIDDATA : AVERROR(EIO);
        goto fail;
    }
    if (!(pb = avio_alloc_context(buf, SRC_IO_AVIO_BUF, 0, s, src_http_read, NULL,
                                  src_http_seek)))
        goto fail;
    buf = NULL; /* pb's now */
    if (!(*ic = avformat_alloc_context()))
        goto fail;
    (*ic)->pb = pb;
    (*ic)->flags |= AVFMT_FLAG_CUSTOM_IO;
    ret = avformat_open_input(ic, url, NULL, NULL); /* frees *ic on failure, not pb */
    if (ret == 0)
        return 0;
fail:
    if (pb) {
        av_freep(&pb->buffer);
        avio_context_free(&pb);
    }
    av_free(buf);
    src_http_free(&s);
    return ret;
}

int src_open_input(AVFormatContext **ic, const char *path, const char *want_fp)
{
    *ic = NULL;
    if (!url_root_is_url(path))
        return avformat_open_input(ic, path, NULL, NULL);
    return src_open_url(ic, path, want_fp);
}

void src_close_input(AVFormatContext **ic)
{
    if (!ic || !*ic)
        return;
    AVIOContext *pb = ((*ic)->flags & AVFMT_FLAG_CUSTOM_IO) ? (*ic)->pb : NULL;
    avformat_close_input(ic);
    if (pb) {
        struct src_http *s = pb->opaque;
        av_freep(&pb->buffer);
        avio_context_free(&pb);
        src_http_free(&s);
    }
}

int src_fingerprint(const AVFormatContext *ic, char *fp, size_t n)
{
    if (!ic || !(ic->flags & AVFMT_FLAG_CUSTOM_IO) || !ic->pb)
        return -1;
    const struct src_http *s = ic->pb->opaque;
    snprintf(fp, n, "%s", http_obj_fp(s->o));
    return 0;
}

/*
 * remux_io.c - the pieces the split and the stitch share (remux_io.h).
 */
#define _GNU_SOURCE /* sync_file_range */
#include "remux_io.h"

#include "remux.h"
#include "beneath.h"
#include "url_root.h"
#include "src_io.h"
#include "vio_streams.h"
#include "vio_video.h"

#include <fcntl.h>
#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

int remux_averr(int ret, const char *what, const char *path, vr_err *err)
{
    char buf[128];
    av_strerror(ret, buf, sizeof buf);
    if (src_io_take_error(err)) /* a store's object: its status says more than libav */
        return err ? err->code : VR_EIO;
    if (ret == AVERROR(ENOENT))
        return vr_err_set(err, VR_ENOENT, "%s: no such file", path);
    if (ret == AVERROR(ENOSPC))
        return storage_errno(ENOSPC, what, path, err);
    if (ret == AVERROR_INVALIDDATA)
        return vr_err_set(err, VR_EFORMAT, "%s %s: not a readable media file (%s)", what, path, buf);
    return vr_err_set(err, VR_ECODEC, "%s %s: %s", what, path, buf);
}

/* Opens `path` and finds its best video stream; `made` (remux_open_made)
 * skips avformat_find_stream_info for a Matroska file. */
static int remux_open_as(const char *path, int made, AVFormatContext **ic, int *vs, vr_err *err)
{
    *ic = NULL;
    /* only a regular file: libav's open() of a FIFO would wait for ever */
    int rc = url_root_is_url(path) ? 0 : storage_check_regular(path, err);
    if (rc < 0)
        return rc == VR_ENOENT ? vr_err_set(err, VR_ENOENT, "%s: no such file", path) : rc;
    int ret = src_open_input(ic, path, NULL);
    if (ret < 0)
        return remux_averr(ret, "cannot open", path, err);
    /* Matroska's header holds every track's codec, size and time base; the
     * probe would decode 7 frames of each chunk for its decode delay (an 8K
     * chunk's were most of a stitch's CPU: docs/PERF.md) */
    int mkv = !strncmp((*ic)->iformat->name, "matroska", 8);
    ret = made && mkv ? 0 : avformat_find_stream_info(*ic, NULL);
    if (ret < 0) {
        src_close_input(ic);
        return remux_averr(ret, "cannot read stream info of", path, err);
    }
    *vs = av_find_best_stream(*ic, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (*vs < 0) {
        src_close_input(ic);
        return vr_err_set(err, VR_EFORMAT, "%s: not a video (no video stream)", path);
    }
    /* a codec nothing here decodes fails now, not in every worker later */
    enum AVCodecID id = (*ic)->streams[*vs]->codecpar->codec_id;
    if (id == AV_CODEC_ID_NONE || !avcodec_find_decoder(id)) {
        int si = *vs;
        src_close_input(ic);
        return vr_err_set(err, VR_ENOTSUP, "%s: stream %d (video): unsupported codec %s: this "
                          "FFmpeg build has no decoder for it", path, si,
                          id == AV_CODEC_ID_NONE ? "(unknown)" : avcodec_get_name(id));
    }
    /* a frame too big for any chunk fails here naming the limit, not later
     * as a chunk file that cannot be written */
    const AVCodecParameters *par = (*ic)->streams[*vs]->codecpar;
    if ((rc = vio_frame_size_check(path, par->width, par->height, err)) < 0) {
        src_close_input(ic);
        return rc;
    }
    return 0;
}

int remux_open(const char *path, AVFormatContext **ic, int *vs, vr_err *err)
{
    return remux_open_as(path, 0, ic, vs, err);
}

int remux_open_made(const char *path, AVFormatContext **ic, int *vs, vr_err *err)
{
    return remux_open_as(path, 1, ic, vs, err);
}

/* ---- outputs ---- */

void remux_out_abort(struct remux_out *o)
{
    if (o->oc) {
        if (!(o->oc->oformat->flags & AVFMT_NOFILE))
            avio_closep(&o->oc->pb);
        avformat_free_context(o->oc);
        o->oc = NULL;
    }
    if (o->tmp[0]) {
        if (o->fd >= 0)
            close(o->fd);
        o->fd = -1;
        storage_abort(o->tmp);
        o->tmp[0] = '\0';
    }
}

/* What a stitch can write: the chunks' H.264 / HEVC / FFV1 and the
 * source's audio, copied as they are. WebM takes VP8/VP9/AV1 only, and AVI
 * or MPEG-TS lose the source's timestamps or metadata. */
static const char *const remux_stitch_formats[] = { "matroska", "mp4", "mov", NULL };

int remux_out_check(const char *path, vr_err *err)
{
    struct stat st;
    size_t len = strlen(path);
    if ((len && path[len - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return vr_err_set(err, VR_EINVAL, "%s is a directory: name the output file (.mkv, "
                          ".mp4 or .mov)", path);
    const AVOutputFormat *of = av_guess_format(NULL, path, NULL);
    for (int i = 0; of && remux_stitch_formats[i]; i++)
        if (!strcmp(of->name, remux_stitch_formats[i]))
            return 0;
    return vr_err_set(err, VR_ENOTSUP, "%s: the stitch cannot write %s (use .mkv, .mp4 or .mov)",
                      path, of ? of->long_name : "an unknown container");
}

/* Opens a temporary file beside path (storage_temp) for writing with copies
 * of the streams `copy` of ic. `fmt` names the muxer (NULL: from the
 * extension of path). */
int remux_out_open(struct remux_out *o, const char *path, const char *fmt,
                          AVFormatContext *ic, const int *copy, int ncopy, vr_err *err)
{
    snprintf(o->path, sizeof o->path, "%s", path);
    o->tmp[0] = '\0';
    o->fd = -1;
    for (int i = 0; i <= REMUX_MAX_REORDER; i++)
        o->pts_buf[i] = AV_NOPTS_VALUE;
    int rc;
    if (!fmt && (rc = remux_out_check(path, err)) < 0)
        return rc;
    const AVOutputFormat *of = av_guess_format(fmt, path, NULL);
    if (!of)
        return vr_err_set(err, VR_ENOTSUP, "%s: unknown output container (use .mkv, .mp4 or .mov)", path);
    rc = storage_temp(path, o->tmp, sizeof o->tmp, &o->fd, err);
    if (rc < 0)
        return rc;
    int ret = avformat_alloc_output_context2(&o->oc, of, NULL, o->tmp);
    if (ret < 0) {
        remux_out_abort(o);
        return remux_averr(ret, "cannot create", path, err);
    }
    vio_streams_mux_settings(o->oc); /* as `process` writes: vio_streams.h */
    for (int i = 0; i < ncopy; i++) {
        AVStream *is = ic->streams[copy[i]];
        AVStream *os = avformat_new_stream(o->oc, NULL);
        if (!os)
            goto nomem;
        if (avcodec_parameters_copy(os->codecpar, is->codecpar) < 0)
            goto nomem;
        os->codecpar->codec_tag = 0;
        os->time_base = is->time_base;
        os->avg_frame_rate = is->avg_frame_rate;
        os->r_frame_rate = is->r_frame_rate;
        os->sample_aspect_ratio = is->sample_aspect_ratio;
        os->disposition = is->disposition;
        av_dict_copy(&os->metadata, is->metadata, 0);
    }
    av_dict_copy(&o->oc->metadata, ic->metadata, 0);
    /* libav opens by name; the name of the descriptor storage_temp made
     * (O_EXCL | O_NOFOLLOW) reopens that very file, so a link planted at
     * the temporary name after its creation is never written through */
    char fdp[BENEATH_FD_PATH_MAX];
    beneath_fd_path(o->fd, NULL, fdp, sizeof fdp);
    ret = avio_open(&o->oc->pb, fdp, AVIO_FLAG_WRITE);
    if (ret < 0) {
        avformat_free_context(o->oc);
        o->oc = NULL;
        char tmp[STORAGE_PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", o->tmp);
        remux_out_abort(o);
        return remux_averr(ret, "cannot create", tmp, err);
    }
    return 0;
nomem:
    remux_out_abort(o);
    return vr_err_set(err, VR_ENOMEM, "out of memory");
}

void remux_out_write_behind(struct remux_out *o)
{
    if (!o->oc || !o->oc->pb || o->fd < 0)
        return;
    avio_flush(o->oc->pb);
    /* a file system that cannot (or a failure) only leaves it to the fsync */
    (void)sync_file_range(o->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

int remux_out_close(struct remux_out *o, vr_err *err)
{
    int ret = av_write_trailer(o->oc);
    int ret2 = avio_closep(&o->oc->pb);
    avformat_free_context(o->oc);
    o->oc = NULL;
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (ret < 0 || ret2 < 0) {
        storage_abort(o->tmp);
        o->tmp[0] = '\0';
        return remux_averr(ret < 0 ? ret : ret2, "cannot finish", o->path, err);
    }
    return 0;
}

int remux_out_commit(struct remux_out *o, vr_err *err)
{
    int rc = storage_commit_as(o->tmp, o->path, o->pub, err);
    o->tmp[0] = '\0';
    return rc;
}

int remux_out_finish(struct remux_out *o, vr_err *err)
{
    int rc = remux_out_close(o, err);
    return rc < 0 ? rc : remux_out_commit(o, err);
}

/* A packet with a pts and no dts (Matroska sources with B-frames give
 * some) gets the dts the muxer would compute itself: the lowest of the
 * last video_delay + 1 pts, the first ones extrapolated by the duration.
 * The muxer warned "Timestamps are unset ... Fix your code" once a chunk
 * cut for it (issue 26, finding 9); the bytes written are the same. */
static void remux_out_fill_dts(struct remux_out *o, AVPacket *pkt)
{
    int delay = o->oc->streams[0]->codecpar->video_delay;
    if (pkt->pts == AV_NOPTS_VALUE || pkt->dts != AV_NOPTS_VALUE || delay < 0 ||
        delay > REMUX_MAX_REORDER)
        return;
    int64_t *b = o->pts_buf;
    b[0] = pkt->pts;
    for (int i = 1; i < delay + 1 && b[i] == AV_NOPTS_VALUE; i++)
        b[i] = pkt->pts + (i - delay - 1) * pkt->duration;
    for (int i = 0; i < delay && b[i] > b[i + 1]; i++) {
        int64_t t = b[i];
        b[i] = b[i + 1];
        b[i + 1] = t;
    }
    pkt->dts = b[0];
}

/* Writes pkt (source time base) into chunk o on a timeline that starts at
 * `base`, as the chunk's stream 0; *pts gets the pts written (chunk time
 * base). pkt's timestamps are changed. */
int remux_out_write(struct remux_out *o, AVPacket *pkt, int64_t base, AVRational tb,
                           int64_t *pts, vr_err *err)
{
    pkt->stream_index = 0;
    if (pkt->pts != AV_NOPTS_VALUE)
        pkt->pts -= base;
    if (pkt->dts != AV_NOPTS_VALUE)
        pkt->dts -= base;
    av_packet_rescale_ts(pkt, tb, o->oc->streams[0]->time_base);
    remux_out_fill_dts(o, pkt);
    *pts = pkt->pts;
    int ret = av_write_frame(o->oc, pkt);
    return ret < 0 ? remux_averr(ret, "cannot write", o->path, err) : 0;
}

/* ---- timestamps ---- */

static int remux_cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Reads every video pts of `path` (opened as remux_open_as) into a
 * malloc'd sorted array. */
static int remux_pts_list_as(const char *path, int made, int64_t **pts, long long *n,
                             AVRational *tb, int64_t *frame_dur, vr_err *err)
{
    *pts = NULL;
    *n = 0;
    AVFormatContext *ic;
    int vs, rc = remux_open_as(path, made, &ic, &vs, err);
    if (rc < 0)
        return rc;
    *tb = ic->streams[vs]->time_base;
    for (unsigned i = 0; i < ic->nb_streams; i++)
        if ((int)i != vs)
            ic->streams[i]->discard = AVDISCARD_ALL;
    long long cap = 1024;
    int64_t *a = malloc((size_t)cap * sizeof *a);
    AVPacket *pkt = av_packet_alloc();
    int ret;
    *frame_dur = 0;
    if (!a || !pkt) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto out;
    }
    while ((ret = av_read_frame(ic, pkt)) >= 0) {
        if (pkt->stream_index == vs) {
            if (*n == cap) {
                if (cap >= 100000000) {
                    rc = vr_err_set(err, VR_EFORMAT, "%s: too many frames", path);
                    av_packet_unref(pkt);
                    goto out;
                }
                cap *= 2;
                int64_t *p = realloc(a, (size_t)cap * sizeof *a);
                if (!p) {
                    rc = vr_err_set(err, VR_ENOMEM, "out of memory");
                    av_packet_unref(pkt);
                    goto out;
                }
                a = p;
            }
            a[(*n)++] = remux_ts(pkt);
            if (pkt->duration > 0)
                *frame_dur = pkt->duration;
        }
        av_packet_unref(pkt);
    }
    if (ret != AVERROR_EOF)
        rc = remux_averr(ret, "cannot read", path, err);
    qsort(a, (size_t)*n, sizeof *a, remux_cmp64);
out:
    av_packet_free(&pkt);
    src_close_input(&ic);
    if (rc < 0) {
        free(a);
        *n = 0;
        return rc;
    }
    *pts = a;
    return 0;
}

int remux_pts_list(const char *path, int64_t **pts, long long *n, AVRational *tb,
                   int64_t *frame_dur, vr_err *err)
{
    return remux_pts_list_as(path, 0, pts, n, tb, frame_dur, err);
}

int remux_pts_list_made(const char *path, int64_t **pts, long long *n, AVRational *tb,
                        int64_t *frame_dur, vr_err *err)
{
    return remux_pts_list_as(path, 1, pts, n, tb, frame_dur, err);
}

int remux_count(const char *path, long long *frames, double *duration_s, vr_err *err)
{
    int64_t *pts, fd;
    long long n;
    AVRational tb;
    int rc = remux_pts_list(path, &pts, &n, &tb, &fd, err);
    if (rc < 0)
        return rc;
    *frames = n;
    *duration_s = n ? (pts[n - 1] + fd - pts[0]) * av_q2d(tb) : 0;
    free(pts);
    return 0;
}

/* Position in the sorted array of the value v (binary search; -1 absent). */
long long remux_rank(const int64_t *a, long long n, int64_t v)
{
    long long lo = 0, hi = n - 1;
    while (lo <= hi) {
        long long mid = lo + (hi - lo) / 2;
        if (a[mid] == v)
            return mid;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

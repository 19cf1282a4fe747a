/*
 * remux.c - probe, keyframe split and timestamp-exact stitch by stream copy
 * (see remux.h). libavformat only: nothing is decoded or encoded here.
 */
#include "remux.h"

#include "remux_gop.h"

#include "log.h"
#include "storage.h"

#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static int remux_averr(int ret, const char *what, const char *path, vr_err *err)
{
    char buf[128];
    av_strerror(ret, buf, sizeof buf);
    if (ret == AVERROR(ENOENT))
        return vr_err_set(err, VR_ENOENT, "%s: no such file", path);
    if (ret == AVERROR(ENOSPC))
        return storage_errno(ENOSPC, what, path, err);
    if (ret == AVERROR_INVALIDDATA)
        return vr_err_set(err, VR_EFORMAT, "%s %s: not a readable media file (%s)", what, path, buf);
    return vr_err_set(err, VR_ECODEC, "%s %s: %s", what, path, buf);
}

/* Opens `path` and finds its best video stream. */
static int remux_open(const char *path, AVFormatContext **ic, int *vs, vr_err *err)
{
    *ic = NULL;
    int ret = avformat_open_input(ic, path, NULL, NULL);
    if (ret < 0)
        return remux_averr(ret, "cannot open", path, err);
    ret = avformat_find_stream_info(*ic, NULL);
    if (ret < 0) {
        avformat_close_input(ic);
        return remux_averr(ret, "cannot read stream info of", path, err);
    }
    *vs = av_find_best_stream(*ic, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (*vs < 0) {
        avformat_close_input(ic);
        return vr_err_set(err, VR_EFORMAT, "%s: not a video (no video stream)", path);
    }
    /* a codec nothing here decodes fails now, not in every worker later */
    enum AVCodecID id = (*ic)->streams[*vs]->codecpar->codec_id;
    if (id == AV_CODEC_ID_NONE || !avcodec_find_decoder(id)) {
        int si = *vs;
        avformat_close_input(ic);
        return vr_err_set(err, VR_ENOTSUP, "%s: stream %d (video): unsupported codec %s: this "
                          "FFmpeg build has no decoder for it", path, si,
                          id == AV_CODEC_ID_NONE ? "(unknown)" : avcodec_get_name(id));
    }
    return 0;
}

static int64_t remux_ts(const AVPacket *p)
{
    return p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
}

int remux_chunk_name(const char *dir, int i, char *out, size_t n, vr_err *err)
{
    int w = snprintf(out, n, "%s/%05d.mkv", dir, i);
    if (w < 0 || (size_t)w >= n)
        return vr_err_set(err, VR_EINVAL, "chunk path too long under %s", dir);
    return 0;
}

/* ---- probe ---- */

int remux_probe(const char *in, struct remux_info *info, vr_err *err)
{
    memset(info, 0, sizeof *info);
    struct stat st;
    if (stat(in, &st) < 0)
        return vr_err_set(err, VR_ENOENT, "%s: no such file", in);
    if (!S_ISREG(st.st_mode))
        return vr_err_set(err, VR_EFORMAT, "%s: not a regular file", in);
    AVFormatContext *ic;
    int vs;
    int rc = remux_open(in, &ic, &vs, err);
    if (rc < 0)
        return rc;
    AVStream *s = ic->streams[vs];
    info->width = s->codecpar->width;
    info->height = s->codecpar->height;
    if (s->avg_frame_rate.num > 0 && s->avg_frame_rate.den > 0)
        info->fps = av_q2d(s->avg_frame_rate);
    if (ic->duration > 0)
        info->duration_s = ic->duration / (double)AV_TIME_BASE;
    info->frames_est = s->nb_frames > 0 ? s->nb_frames
                                        : (long long)(info->duration_s * info->fps + 0.5);
    info->has_audio = av_find_best_stream(ic, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0) >= 0;
    snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(s->codecpar->codec_id));
    if (info->width <= 0 || info->height <= 0)
        rc = vr_err_set(err, VR_EFORMAT, "%s: video stream has no frame size", in);
    avformat_close_input(&ic);
    return rc;
}

/* ---- split ---- */

struct remux_out {
    AVFormatContext *oc;
    char tmp[STORAGE_PATH_MAX], path[STORAGE_PATH_MAX];
};

static void remux_out_abort(struct remux_out *o)
{
    if (o->oc) {
        if (!(o->oc->oformat->flags & AVFMT_NOFILE))
            avio_closep(&o->oc->pb);
        avformat_free_context(o->oc);
        o->oc = NULL;
        storage_abort(o->tmp);
    }
}

/* What a stitch can write: the chunks' H.264 / HEVC / FFV1 and the
 * source's audio, copied as they are. WebM takes VP8/VP9/AV1 only, and AVI
 * or MPEG-TS lose the source's timestamps or metadata. */
static const char *const remux_stitch_formats[] = { "matroska", "mp4", "mov", NULL };

int remux_out_check(const char *path, vr_err *err)
{
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
static int remux_out_open(struct remux_out *o, const char *path, const char *fmt,
                          AVFormatContext *ic, const int *copy, int ncopy, vr_err *err)
{
    snprintf(o->path, sizeof o->path, "%s", path);
    o->tmp[0] = '\0';
    int rc;
    if (!fmt && (rc = remux_out_check(path, err)) < 0)
        return rc;
    const AVOutputFormat *of = av_guess_format(fmt, path, NULL);
    if (!of)
        return vr_err_set(err, VR_ENOTSUP, "%s: unknown output container (use .mkv, .mp4 or .mov)", path);
    rc = storage_temp(path, o->tmp, sizeof o->tmp, NULL, err);
    if (rc < 0)
        return rc;
    int ret = avformat_alloc_output_context2(&o->oc, of, NULL, o->tmp);
    if (ret < 0) {
        storage_abort(o->tmp);
        return remux_averr(ret, "cannot create", path, err);
    }
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
    ret = avio_open(&o->oc->pb, o->tmp, AVIO_FLAG_WRITE);
    if (ret < 0) {
        avformat_free_context(o->oc);
        o->oc = NULL;
        storage_abort(o->tmp);
        return remux_averr(ret, "cannot create", o->tmp, err);
    }
    return 0;
nomem:
    remux_out_abort(o);
    return vr_err_set(err, VR_ENOMEM, "out of memory");
}

static int remux_out_finish(struct remux_out *o, vr_err *err)
{
    int ret = av_write_trailer(o->oc);
    int ret2 = avio_closep(&o->oc->pb);
    avformat_free_context(o->oc);
    o->oc = NULL;
    if (ret < 0 || ret2 < 0) {
        storage_abort(o->tmp);
        return remux_averr(ret < 0 ? ret : ret2, "cannot finish", o->path, err);
    }
    return storage_commit(o->tmp, o->path, err);
}

/* Writes pkt (source time base) into chunk o on a timeline that starts at
 * `base`, as the chunk's stream 0; *pts gets the pts written (chunk time
 * base). pkt's timestamps are changed. */
static int remux_out_write(struct remux_out *o, AVPacket *pkt, int64_t base, AVRational tb,
                           int64_t *pts, vr_err *err)
{
    pkt->stream_index = 0;
    if (pkt->pts != AV_NOPTS_VALUE)
        pkt->pts -= base;
    if (pkt->dts != AV_NOPTS_VALUE)
        pkt->dts -= base;
    av_packet_rescale_ts(pkt, tb, o->oc->streams[0]->time_base);
    *pts = pkt->pts;
    int ret = av_write_frame(o->oc, pkt);
    return ret < 0 ? remux_averr(ret, "cannot write", o->path, err) : 0;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* The warm-up start of a chunk: the pts (chunk timeline) of the
 * warmup-th last pre-roll frame in presentation order, or the first one
 * when the pre-roll has fewer frames. */
static long long remux_warmup_from(long long *pts, int n, int warmup)
{
    qsort(pts, (size_t)n, sizeof *pts, cmp_ll);
    return pts[n > warmup ? n - warmup : 0];
}

/* Writes the pre-roll (the GOP before the cut) at the head of a new chunk,
 * on a timeline that starts at its keyframe's pts, like any chunk: the
 * references of an open-GOP cut's leading pictures, and the frames that
 * warm the temporal filter up. The keyframe's own leading pictures (pts
 * before it) are left out: they reference the GOP before them, the decoder
 * would drop them, and no later picture may reference them. Sets the
 * chunk's warmup_from; returns the packets written, or VR_E*. */
static int remux_write_preroll(struct remux_out *o, const struct remux_gop *g, AVRational tb,
                               int warmup, struct remux_chunk *c, vr_err *err)
{
    AVPacket *p = av_packet_alloc();
    if (!p)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    long long *written = malloc((size_t)g->n * sizeof *written);
    if (!written) {
        av_packet_free(&p);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    int64_t base = remux_ts(g->pkt[0]);
    int rc = 0, n = 0;
    for (int i = 0; i < g->n && rc == 0; i++) {
        int64_t pts;
        if (i > 0 && g->pkt[i]->pts != AV_NOPTS_VALUE && g->pkt[i]->pts < base)
            continue;
        if (av_packet_ref(p, g->pkt[i]) < 0)
            rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        else if ((rc = remux_out_write(o, p, base, tb, &pts, err)) == 0)
            written[n++] = pts;
        av_packet_unref(p);
    }
    if (rc == 0 && n > 0)
        c->warmup_from = warmup > 0 ? remux_warmup_from(written, n, warmup) : INT64_MAX;
    free(written);
    av_packet_free(&p);
    return rc < 0 ? rc : n;
}

/* A chunk with a pre-roll needs the time of its first own frame. */
static int remux_preroll_check(const struct remux_chunk *c, const char *in, vr_err *err)
{
    if (c && c->preroll_frames && c->preroll_until == INT64_MAX)
        return vr_err_set(err, VR_EFORMAT, "%s: chunk at %.2f s: an open-GOP cut needs "
                          "presentation timestamps, and its packets have none", in, c->start_s);
    return 0;
}

void remux_split_release(struct remux_split *s)
{
    if (!s)
        return;
    free(s->chunks);
    memset(s, 0, sizeof *s);
}

/* ---- split ---- */

/* A split in progress. */
struct split {
    const char *in, *dir;
    double chunk_seconds;
    int warmup;                  /* frames of warm-up each chunk after the first needs */
    AVFormatContext *ic;
    AVStream *ist;               /* the video stream */
    int vs;
    double tb;                   /* seconds per ist time base unit */
    struct remux_out o;          /* the chunk being written */
    struct remux_gop gop;        /* the GOP so far: the next chunk's pre-roll */
    struct remux_chunk *cur;     /* in out->chunks */
    int cap, open_noted;
    int64_t chunk_start, chunk_base, first_ts, last_ts;
    struct remux_split *out;
};

/* Whether pkt (a video packet at ts) starts a new chunk, and with a
 * pre-roll: a cut is due chunk_seconds after the current chunk's start, at
 * a keyframe that can be cut (remux_clean_cut, or an HEVC CRA with the GOP
 * before it as its references). With a warm-up every cut gets the GOP. */
static int split_cut_here(struct split *sp, const AVPacket *pkt, int64_t ts, int *preroll)
{
    int key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
    int due = sp->o.oc && (ts - sp->chunk_start) * sp->tb >= sp->chunk_seconds - 1e-6;
    int clean = due && remux_clean_cut(sp->ist->codecpar, pkt);
    int open = due && !clean && remux_preroll_cut(sp->ist->codecpar, pkt);
    *preroll = (open || (clean && sp->warmup > 0)) && remux_gop_usable(&sp->gop);
    if (due && key && !clean && !*preroll && !sp->open_noted) {
        if (open)
            log_info("%s: a GOP before %.2f s is too long to serve as a pre-roll; its chunk "
                     "goes on to the next keyframe", sp->in, (ts - sp->first_ts) * sp->tb);
        else
            log_info("%s: open-GOP keyframes of this codec are not cut; chunks start only "
                     "at IDR frames, so they may be longer", sp->in);
        sp->open_noted = 1;
    }
    return !sp->o.oc || clean || (open && *preroll);
}

/* Finishes the current chunk file (if any) and opens the next one, at ts,
 * with its pre-roll written first when it has one. */
static int split_new_chunk(struct split *sp, int64_t ts, int preroll, vr_err *err)
{
    struct remux_split *out = sp->out;
    int rc;
    if (sp->o.oc && ((rc = remux_preroll_check(sp->cur, sp->in, err)) < 0 ||
                     (rc = remux_out_finish(&sp->o, err)) < 0))
        return rc;
    if (out->nchunks >= REMUX_MAX_CHUNKS)
        return vr_err_set(err, VR_EINVAL, "%s: more than %d chunks; use a longer chunk length",
                          sp->in, REMUX_MAX_CHUNKS);
    if (out->nchunks == sp->cap) {
        void *p = realloc(out->chunks, (size_t)sp->cap * 2 * sizeof *out->chunks);
        if (!p)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        out->chunks = p;
        sp->cap *= 2;
    }
    char path[STORAGE_PATH_MAX];
    if ((rc = remux_chunk_name(sp->dir, out->nchunks, path, sizeof path, err)) < 0 ||
        (rc = remux_out_open(&sp->o, path, "matroska", sp->ic, &sp->vs, 1, err)) < 0)
        return rc;
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "fflags", "+bitexact", 0);
    sp->o.oc->flags |= AVFMT_FLAG_BITEXACT;
    int ret = avformat_write_header(sp->o.oc, &opts);
    av_dict_free(&opts);
    if (ret < 0)
        return remux_averr(ret, "cannot write", path, err);
    struct remux_chunk *cur = sp->cur = &out->chunks[out->nchunks++];
    memset(cur, 0, sizeof *cur);
    cur->first_frame = out->frames;
    cur->start_s = (ts - sp->first_ts) * sp->tb;
    sp->chunk_start = ts;
    /* Each chunk starts at 0 like a file of its own (at its pre-roll's
     * keyframe when it has one); stitching takes the source's timestamps
     * back by frame rank, so nothing is lost. */
    sp->chunk_base = ts;
    if (!preroll)
        return 0;
    sp->chunk_base = remux_ts(sp->gop.pkt[0]);
    if ((rc = remux_write_preroll(&sp->o, &sp->gop, sp->ist->time_base, sp->warmup, cur, err)) < 0)
        return rc;
    cur->preroll_frames = rc;
    cur->preroll_until = INT64_MAX;
    return 0;
}

/* Writes one video packet of the current chunk and counts it. */
static int split_write(struct split *sp, AVPacket *pkt, int64_t ts, vr_err *err)
{
    struct remux_chunk *cur = sp->cur;
    if (pkt->flags & AV_PKT_FLAG_KEY)
        remux_gop_reset(&sp->gop);
    /* HEVC open-GOP cuts, and any cut that warms the filter up, need it */
    if (sp->ist->codecpar->codec_id == AV_CODEC_ID_HEVC || sp->warmup > 0)
        remux_gop_push(&sp->gop, pkt); /* with the source's timestamps */
    cur->frames++;
    cur->bytes += pkt->size;
    sp->out->frames++;
    int64_t end = ts + (pkt->duration > 0 ? pkt->duration : 0);
    if (end > sp->last_ts)
        sp->last_ts = end;
    cur->duration_s = (end - sp->chunk_start) * sp->tb;
    int64_t wpts;
    int rc = remux_out_write(&sp->o, pkt, sp->chunk_base, sp->ist->time_base, &wpts, err);
    if (rc == 0 && cur->preroll_frames && wpts != AV_NOPTS_VALUE && wpts < cur->preroll_until)
        cur->preroll_until = wpts;
    return rc;
}

/* Reads the source's video packets into chunk files. */
static int split_run(struct split *sp, vr_err *err)
{
    AVPacket *pkt = av_packet_alloc();
    if (!pkt)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = 0, ret;
    while (rc == 0 && (ret = av_read_frame(sp->ic, pkt)) >= 0) {
        if (pkt->stream_index != sp->vs) {
            av_packet_unref(pkt);
            continue;
        }
        int64_t ts = remux_ts(pkt);
        int preroll;
        if (ts == AV_NOPTS_VALUE)
            rc = vr_err_set(err, VR_EFORMAT, "%s: video packet %lld has no timestamp", sp->in,
                            sp->out->frames);
        else if (!sp->o.oc && !(pkt->flags & AV_PKT_FLAG_KEY))
            rc = vr_err_set(err, VR_EFORMAT, "%s: video does not start with a keyframe", sp->in);
        if (rc == 0 && sp->first_ts == AV_NOPTS_VALUE)
            sp->first_ts = ts;
        if (rc == 0 && split_cut_here(sp, pkt, ts, &preroll))
            rc = split_new_chunk(sp, ts, preroll, err);
        if (rc == 0)
            rc = split_write(sp, pkt, ts, err);
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    if (rc == 0 && ret != AVERROR_EOF)
        rc = remux_averr(ret, "cannot read", sp->in, err);
    if (rc == 0 && !sp->o.oc)
        rc = vr_err_set(err, VR_EFORMAT, "%s: the video stream has no frames", sp->in);
    if (rc == 0 && (rc = remux_preroll_check(sp->cur, sp->in, err)) == 0)
        rc = remux_out_finish(&sp->o, err);
    return rc;
}

int remux_split(const char *in, const char *dir, double chunk_seconds, int warmup,
                struct remux_split *out, vr_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(chunk_seconds > 0))
        return vr_err_set(err, VR_EINVAL, "chunk length must be > 0 seconds");
    struct split sp = { .in = in, .dir = dir, .chunk_seconds = chunk_seconds, .warmup = warmup,
                        .cap = 64, .chunk_start = AV_NOPTS_VALUE, .first_ts = AV_NOPTS_VALUE,
                        .out = out };
    int rc = remux_open(in, &sp.ic, &sp.vs, err);
    if (rc < 0)
        return rc;
    sp.ist = sp.ic->streams[sp.vs];
    sp.tb = av_q2d(sp.ist->time_base);
    if ((rc = storage_mkdirs(dir, err)) == 0 &&
        !(out->chunks = calloc((size_t)sp.cap, sizeof *out->chunks)))
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    if (rc == 0)
        rc = split_run(&sp, err);
    if (rc == 0)
        out->duration_s = (sp.last_ts - sp.first_ts) * sp.tb;
    else
        remux_split_release(out);
    remux_out_abort(&sp.o);
    remux_gop_free(&sp.gop);
    avformat_close_input(&sp.ic);
    return rc;
}

/* ---- stitch ---- */

static int remux_cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Reads every video pts of `path` into a malloc'd sorted array. */
static int remux_pts_list(const char *path, int64_t **pts, long long *n, AVRational *tb,
                          int64_t *frame_dur, vr_err *err)
{
    *pts = NULL;
    *n = 0;
    AVFormatContext *ic;
    int vs, rc = remux_open(path, &ic, &vs, err);
    if (rc < 0)
        return rc;
    *tb = ic->streams[vs]->time_base;
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
    avformat_close_input(&ic);
    if (rc < 0) {
        free(a);
        *n = 0;
        return rc;
    }
    *pts = a;
    return 0;
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
static long long remux_rank(const int64_t *a, long long n, int64_t v)
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

struct remux_stitch_state {
    AVFormatContext *src;        /* source, for audio */
    int src_vs;
    int *amap;                   /* source stream -> output stream, -1 = drop */
    AVPacket *apkt;              /* next audio packet, or empty */
    int audio_eof;
    struct remux_out o;          /* the output, under its temporary name */
    AVPacket *pkt;               /* a chunk's packet in flight */
    int64_t *spts;               /* the source's frame pts, presentation order */
    long long sn;                /* their count */
    AVRational stb;              /* the source video's time base */
    int64_t sdur;                /* one frame, stb */
    long long base;              /* source frames before the current chunk */
    long long written;           /* video packets written */
    int64_t last_dts;            /* output time base */
};

/* Writes source audio packets up to (and including) the time `until` (in
 * tb), or all of them when until is INT64_MAX. */
static int remux_audio_upto(struct remux_stitch_state *s, struct remux_out *o,
                            int64_t until, AVRational tb, vr_err *err)
{
    for (;;) {
        if (!s->apkt->data && !s->audio_eof) {
            int ret;
            for (;;) {
                ret = av_read_frame(s->src, s->apkt);
                if (ret < 0)
                    break;
                if (s->amap[s->apkt->stream_index] >= 0)
                    break;
                av_packet_unref(s->apkt);
            }
            if (ret == AVERROR_EOF) {
                s->audio_eof = 1;
            } else if (ret < 0) {
                return remux_averr(ret, "cannot read audio of", s->src->url, err);
            }
        }
        if (s->audio_eof)
            return 0;
        AVStream *is = s->src->streams[s->apkt->stream_index];
        int64_t ats = s->apkt->dts != AV_NOPTS_VALUE ? s->apkt->dts : s->apkt->pts;
        if (until != INT64_MAX && ats != AV_NOPTS_VALUE &&
            av_compare_ts(ats, is->time_base, until, tb) > 0)
            return 0;
        int os = s->amap[s->apkt->stream_index];
        s->apkt->stream_index = os;
        av_packet_rescale_ts(s->apkt, is->time_base, o->oc->streams[os]->time_base);
        s->apkt->pos = -1;
        int ret = av_interleaved_write_frame(o->oc, s->apkt);
        av_packet_unref(s->apkt);
        if (ret < 0)
            return remux_averr(ret, "cannot write audio to", o->path, err);
    }
}

/* ---- stitch: open, copy one chunk, finish ---- */

static void stitch_release(struct remux_stitch_state *s)
{
    remux_out_abort(&s->o);
    avformat_close_input(&s->src);
    av_packet_free(&s->pkt);
    av_packet_free(&s->apkt);
    free(s->amap);
    free(s->spts);
}

/* A new output stream copying `is` (codec parameters, time base,
 * disposition, metadata). */
static AVStream *stitch_copy_stream(AVFormatContext *oc, const AVStream *is)
{
    AVStream *os = avformat_new_stream(oc, NULL);
    if (!os || avcodec_parameters_copy(os->codecpar, is->codecpar) < 0)
        return NULL;
    os->codecpar->codec_tag = 0;
    os->time_base = is->time_base;
    os->disposition = is->disposition;
    av_dict_copy(&os->metadata, is->metadata, 0);
    return os;
}

/* Opens the source (timestamps, audio) and the output: stream 0 is the
 * matte video with the parameters of the first chunk and the source
 * video's time base, metadata and side data (stereo, spherical), then every
 * audio stream of the source, however many. Writes the header. */
static int stitch_open(struct remux_stitch_state *s, const char *src, const char *chunk0,
                       const char *out, vr_err *err)
{
    s->last_dts = INT64_MIN;
    s->pkt = av_packet_alloc();
    s->apkt = av_packet_alloc();
    if (!s->pkt || !s->apkt)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = remux_pts_list(src, &s->spts, &s->sn, &s->stb, &s->sdur, err);
    if (rc < 0 || (rc = remux_open(src, &s->src, &s->src_vs, err)) < 0)
        return rc;
    AVFormatContext *cc = NULL;
    int cvs;
    if ((rc = remux_open(chunk0, &cc, &cvs, err)) < 0)
        return rc;
    rc = remux_out_open(&s->o, out, NULL, cc, &cvs, 1, err);
    avformat_close_input(&cc);
    if (rc < 0)
        return rc;
    AVFormatContext *oc = s->o.oc;
    av_dict_copy(&oc->metadata, s->src->metadata, 0);
    AVStream *ovs = oc->streams[0], *svs = s->src->streams[s->src_vs];
    ovs->time_base = s->stb;
    ovs->avg_frame_rate = svs->avg_frame_rate;
    ovs->r_frame_rate = svs->r_frame_rate;
    av_dict_copy(&ovs->metadata, svs->metadata, 0);
    for (int i = 0; i < svs->nb_side_data; i++) {
        const AVPacketSideData *sd = &svs->side_data[i];
        uint8_t *d = av_stream_new_side_data(ovs, sd->type, sd->size);
        if (d)
            memcpy(d, sd->data, sd->size);
    }
    if (!(s->amap = malloc(s->src->nb_streams * sizeof *s->amap)))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    for (unsigned i = 0; i < s->src->nb_streams; i++) {
        s->amap[i] = -1;
        const AVStream *is = s->src->streams[i];
        if (is->codecpar->codec_type != AVMEDIA_TYPE_AUDIO)
            continue;
        if (!stitch_copy_stream(oc, is))
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        s->amap[i] = (int)oc->nb_streams - 1;
    }
    int ret = avformat_write_header(oc, NULL);
    return ret < 0 ? remux_averr(ret, "cannot write", out, err) : 0;
}

/* One video packet of a chunk (chunk time base ctb, presentation rank r in
 * the chunk) with the source's timestamp of that rank, after the source
 * audio that comes before it. */
static int stitch_write_packet(struct remux_stitch_state *s, AVPacket *pkt, long long r,
                               AVRational ctb, vr_err *err)
{
    AVRational otb = s->o.oc->streams[0]->time_base;
    int64_t pts = s->spts[s->base + r];
    int64_t delay = (pkt->dts != AV_NOPTS_VALUE && pkt->pts != AV_NOPTS_VALUE)
                        ? av_rescale_q(pkt->pts - pkt->dts, ctb, s->stb) : 0;
    int64_t dts = pts - (delay > 0 ? delay : 0);
    pkt->pts = av_rescale_q(pts, s->stb, otb);
    pkt->dts = av_rescale_q(dts, s->stb, otb);
    if (pkt->dts <= s->last_dts)
        pkt->dts = s->last_dts + 1;
    if (pkt->pts < pkt->dts)
        pkt->pts = pkt->dts;
    s->last_dts = pkt->dts;
    pkt->duration = s->sdur > 0 ? av_rescale_q(s->sdur, s->stb, otb) : 0;
    pkt->stream_index = 0;
    pkt->pos = -1;
    int rc = remux_audio_upto(s, &s->o, dts, s->stb, err);
    if (rc < 0)
        return rc;
    int ret = av_interleaved_write_frame(s->o.oc, pkt);
    if (ret < 0)
        return remux_averr(ret, "cannot write", s->o.path, err);
    s->written++;
    return 0;
}

/* Copies chunk c (`path`, which must hold `frames` frames) into the output. */
static int stitch_copy_chunk(struct remux_stitch_state *s, int c, const char *path,
                             long long frames, vr_err *err)
{
    int64_t *cpts = NULL, cfd;
    long long cn;
    AVRational ctb;
    AVFormatContext *cc = NULL;
    int cvs, ret = 0;
    int rc = remux_pts_list(path, &cpts, &cn, &ctb, &cfd, err);
    if (rc < 0) {
        vr_err_prefix(err, "chunk %d", c);
        goto out;
    }
    if (cn != frames) {
        rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): %lld frames, expected %lld", c, path,
                        cn, frames);
        goto out;
    }
    if ((rc = remux_open(path, &cc, &cvs, err)) < 0)
        goto out;
    while (rc == 0 && (ret = av_read_frame(cc, s->pkt)) >= 0) {
        long long r = s->pkt->stream_index == cvs ? remux_rank(cpts, cn, remux_ts(s->pkt)) : -2;
        if (r == -1)
            rc = vr_err_set(err, VR_EFORMAT, "chunk %d: packet without timestamp", c);
        else if (r >= 0)
            rc = stitch_write_packet(s, s->pkt, r, ctb, err);
        av_packet_unref(s->pkt);
    }
    if (rc == 0 && ret != AVERROR_EOF)
        rc = remux_averr(ret, "cannot read", path, err);
    s->base += cn;
out:
    avformat_close_input(&cc);
    free(cpts);
    return rc;
}

/* The rest of the audio, the trailer and the commit; then the frame count
 * and duration are checked from the file itself. */
static int stitch_finish(struct remux_stitch_state *s, const char *out, vr_err *err)
{
    int rc = remux_audio_upto(s, &s->o, INT64_MAX, s->stb, err);
    if (rc < 0 || (rc = remux_out_finish(&s->o, err)) < 0)
        return rc;
    long long got;
    double dur, sdur_s = s->sn ? (s->spts[s->sn - 1] + s->sdur - s->spts[0]) * av_q2d(s->stb) : 0;
    if ((rc = remux_count(out, &got, &dur, err)) < 0)
        return rc;
    double frame_s = s->sdur > 0 ? s->sdur * av_q2d(s->stb) : 0.1;
    if (got != s->sn || s->written != s->sn)
        rc = vr_err_set(err, VR_EFORMAT, "stitch %s: %lld frames written, source has %lld", out,
                        got, s->sn);
    else if (dur < sdur_s - frame_s - 0.002 || dur > sdur_s + frame_s + 0.002)
        rc = vr_err_set(err, VR_EFORMAT, "stitch %s: duration %.3f s, source %.3f s", out, dur,
                        sdur_s);
    if (rc < 0)
        unlink(out);
    return rc;
}

int remux_stitch(const char *src, const char *const *chunks, int n,
                 const long long *chunk_frames, const char *out, vr_err *err)
{
    if (n < 1 || n > REMUX_MAX_CHUNKS)
        return vr_err_set(err, VR_EINVAL, "stitch: %d chunks", n);
    struct remux_stitch_state s = { 0 };
    int rc = stitch_open(&s, src, chunks[0], out, err);
    long long want = 0;
    for (int i = 0; i < n; i++)
        want += chunk_frames[i];
    if (rc == 0 && want != s.sn)
        rc = vr_err_set(err, VR_EFORMAT, "stitch: the chunks should hold %lld frames but the "
                        "source %s has %lld", want, src, s.sn);
    for (int c = 0; rc == 0 && c < n; c++)
        rc = stitch_copy_chunk(&s, c, chunks[c], chunk_frames[c], err);
    if (rc == 0)
        rc = stitch_finish(&s, out, err);
    stitch_release(&s);
    return rc;
}

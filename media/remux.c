/*
 * remux.c - probe and keyframe split by stream copy (see remux.h).
 * libavformat only: nothing is decoded or encoded here. The stitch is
 * remux_stitch.c; what both use, remux_io.c.
 */
#include "remux.h"

#include "remux_gop.h"
#include "remux_io.h"
#include "url_root.h"
#include "src_io.h"
#include "vio_video.h"

#include "log.h"
#include "storage.h"

#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (!url_root_is_url(in) && stat(in, &st) < 0)
        return vr_err_set(err, VR_ENOENT, "%s: no such file", in);
    if (!url_root_is_url(in) && !S_ISREG(st.st_mode))
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
    info->streams = (int)ic->nb_streams;
    snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(s->codecpar->codec_id));
    const char *dm = ic->iformat->name;
    size_t dl = strlen(dm);
    info->still = !strcmp(dm, "image2") || (dl > 5 && !strcmp(dm + dl - 5, "_pipe"));
    src_close_input(&ic);
    return rc;
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

/* Writes the pre-roll (the GOPs before the cut) at the head of a new chunk,
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
    const struct remux_split_opts *opt;
    AVFormatContext *ic;
    AVStream *ist;               /* the video stream */
    int vs;
    double tb;                   /* seconds per ist time base unit */
    struct remux_out o;          /* the chunk being written */
    struct remux_gop gop;        /* the GOPs so far: the next chunk's pre-roll */
    struct remux_chunk *cur;     /* in out->chunks */
    int cap, open_noted;
    int64_t chunk_start, chunk_base, first_ts, last_ts;
    struct remux_split *out;
};

/* Whether pkt (a video packet at ts) starts a new chunk, and with a
 * pre-roll: a cut is due chunk_seconds after the current chunk's start, at
 * a keyframe that can be cut (remux_clean_cut, or an HEVC CRA with the GOP
 * before it as its references). With a warm-up every cut gets as many GOPs
 * before it as the filter's depth takes (remux_gop.h). */
static int split_cut_here(struct split *sp, const AVPacket *pkt, int64_t ts, int *preroll)
{
    int key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
    int due = sp->o.oc && (ts - sp->chunk_start) * sp->tb >= sp->opt->chunk_seconds - 1e-6;
    int clean = due && remux_clean_cut(sp->ist->codecpar, pkt);
    int open = due && !clean && remux_preroll_cut(sp->ist->codecpar, pkt);
    *preroll = (open || (clean && sp->opt->warmup > 0)) && remux_gop_usable(&sp->gop);
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

/* Commits the current chunk's file and hands it to the caller. */
static int split_end_chunk(struct split *sp, vr_err *err)
{
    int rc;
    if ((rc = remux_preroll_check(sp->cur, sp->in, err)) < 0 ||
        (rc = remux_out_finish(&sp->o, err)) < 0)
        return rc;
    if (!sp->opt->chunk_ready)
        return 0;
    return sp->opt->chunk_ready(sp->opt->ctx, sp->out->nchunks - 1, sp->cur, err);
}

/* Finishes the current chunk file (if any) and opens the next one, at ts,
 * with its pre-roll written first when it has one. */
static int split_new_chunk(struct split *sp, int64_t ts, int preroll, vr_err *err)
{
    struct remux_split *out = sp->out;
    int rc;
    if (sp->o.oc && (rc = split_end_chunk(sp, err)) < 0)
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
    if ((rc = remux_write_preroll(&sp->o, &sp->gop, sp->ist->time_base, sp->opt->warmup, cur, err)) < 0)
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
        remux_gop_key(&sp->gop, !remux_clean_cut(sp->ist->codecpar, pkt));
    /* HEVC open-GOP cuts, and any cut that warms the filter up, need it */
    if (sp->ist->codecpar->codec_id == AV_CODEC_ID_HEVC || sp->opt->warmup > 0)
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
    /* a read error at the end of the file is its end, as for the decoder
     * (vio_decode.c): what follows says whether the file was cut short */
    if (rc == 0 && ret != AVERROR_EOF && !(avio_feof(sp->ic->pb) && !sp->ic->pb->error))
        rc = remux_averr(ret, "cannot read", sp->in, err);
    if (rc == 0 && !sp->o.oc)
        rc = vr_err_set(err, VR_EFORMAT, "%s: the video stream has no frames", sp->in);
    /* a file cut short is refused as `vr-worker process` refuses it, not
     * finished with the frames it still has */
    if (rc == 0)
        rc = vio_check_duration(sp->in, sp->ic, sp->vs, sp->out->frames, sp->first_ts,
                                sp->last_ts, err);
    if (rc == 0)
        rc = split_end_chunk(sp, err);
    return rc;
}

int remux_split(const char *in, const char *dir, const struct remux_split_opts *o,
                struct remux_split *out, vr_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(o->chunk_seconds > 0))
        return vr_err_set(err, VR_EINVAL, "chunk length must be > 0 seconds");
    struct split sp = { .in = in, .dir = dir, .opt = o,
                        .cap = 64, .chunk_start = AV_NOPTS_VALUE, .first_ts = AV_NOPTS_VALUE,
                        .out = out };
    int rc = remux_open(in, &sp.ic, &sp.vs, err);
    if (rc < 0)
        return rc;
    sp.ist = sp.ic->streams[sp.vs];
    sp.tb = av_q2d(sp.ist->time_base);
    /* a pre-roll reaches back as many GOPs as the warm-up takes */
    sp.gop.keep = o->warmup;
    sp.gop.leading = remux_leading_max(sp.ist->codecpar);
    sp.gop.from_start = 1;
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
    src_close_input(&sp.ic);
    return rc;
}

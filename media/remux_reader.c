/*
 * remux_reader.c - one chunk's range of the source, read in place
 * (remux_range.h): seek to the planned keyframe, check that the packet
 * there is the one planned, read the pre-roll ahead (its timestamps decide
 * which decoded frames are references and which warm the filter up), then
 * hand out the range's packets in file order up to the next chunk's
 * keyframe, and a short tail after it for the other streams' packets that
 * a muxer stored behind it.
 */
#include "remux_range.h"

#include "remux_gop.h"
#include "remux_io.h"

#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far past its video end a range reads for the other streams'
 * packets of its window (muxers interleave within a second or two). */
#define READER_TAIL_S 5

enum rd_state { RD_PREROLL, RD_OWN, RD_TAIL, RD_DONE };

struct remux_reader {
    AVFormatContext *ic;         /* the caller's */
    struct chunk_range r;
    char path[1024];
    AVRational vtb;
    enum rd_state state;
    AVPacket **q;                /* read ahead (the pre-roll, interleaved packets) */
    int qn, qhead, qcap;
    int64_t *pre;                /* the pre-roll's pts */
    int npre;
    long long pre_bytes;
    int64_t until, warm_from;    /* remux_reader_preroll */
    int64_t tail_end;            /* video time at which the tail stops */
    unsigned char *passed;       /* [nb_streams]: a packet at or after own_to came */
    int waiting;                 /* streams not passed yet */
    long long vpackets;
    int64_t vdts_out;            /* the last video packet handed out: its dts (INT64_MIN) */
    int64_t vpts_max;            /* the highest video pts handed out (INT64_MIN) */
    int64_t other_out;           /* the latest other stream's packet handed out, video time */
};

/* ---- small helpers ---- */

static int64_t rd_time(const AVPacket *p)
{
    return p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
}

/* A packet is named by its pts, unique in a video stream; by its dts only
 * where it has no pts (Matroska's dts are derived, and differ after a seek). */
static int rd_is(const AVPacket *p, const struct chunk_key *k)
{
    return k->pts != AV_NOPTS_VALUE ? p->pts == k->pts : p->dts == k->dts;
}

static double rd_secs(const struct remux_reader *rd, int64_t t)
{
    return t == AV_NOPTS_VALUE ? 0 : t * av_q2d(rd->vtb);
}

/* Whether a packet of another stream is this range's: its time lies in
 * the window; one without a time belongs to the range it is read in. */
static int rd_owns(const struct remux_reader *rd, const AVPacket *p)
{
    int64_t t = rd_time(p);
    if (t == AV_NOPTS_VALUE)
        return rd->state == RD_OWN;
    AVRational tb = rd->ic->streams[p->stream_index]->time_base;
    if (rd->r.own_from != INT64_MIN && av_compare_ts(t, tb, rd->r.own_from, rd->vtb) < 0)
        return 0;
    return rd->r.own_to == INT64_MAX || av_compare_ts(t, tb, rd->r.own_to, rd->vtb) < 0;
}

/* Streams whose packets a range hands out besides the video. */
static int rd_counts(const struct remux_reader *rd, int s)
{
    const AVStream *st = rd->ic->streams[s];
    return s != rd->r.vs && st->discard < AVDISCARD_ALL &&
           st->codecpar->codec_type != AVMEDIA_TYPE_ATTACHMENT;
}

static int rd_push(struct remux_reader *rd, AVPacket *p, vr_err *err)
{
    if (rd->qn == rd->qcap) {
        int cap = rd->qcap ? 2 * rd->qcap : 64;
        AVPacket **q = realloc(rd->q, (size_t)cap * sizeof *q);
        if (!q)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        rd->q = q;
        rd->qcap = cap;
    }
    if (!(rd->q[rd->qn] = av_packet_alloc()))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    av_packet_move_ref(rd->q[rd->qn++], p);
    return 0;
}

/* ---- open: seek, check, the pre-roll ---- */

static int rd_check_stream(const struct remux_reader *rd, vr_err *err)
{
    const struct chunk_range *r = &rd->r;
    const AVFormatContext *ic = rd->ic;
    if (strcmp(ic->iformat->name, r->demuxer))
        return vr_err_set(err, VR_EFORMAT, "%s: the source changed since it was planned: read "
                          "by the %s demuxer, planned with %s", rd->path, ic->iformat->name,
                          r->demuxer);
    if (r->vs < 0 || (unsigned)r->vs >= ic->nb_streams ||
        ic->streams[r->vs]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO ||
        ic->streams[r->vs]->time_base.num != r->tb_num ||
        ic->streams[r->vs]->time_base.den != r->tb_den)
        return vr_err_set(err, VR_EFORMAT, "%s: the source changed since it was planned: its "
                          "video is not stream %d with time base %d/%d", rd->path, r->vs,
                          r->tb_num, r->tb_den);
    return 0;
}

/* One pre-roll video packet: the pre-roll keyframe's own leading pictures
 * (pts before it) are left out, as the copy split leaves them out. */
static int rd_preroll_packet(struct remux_reader *rd, AVPacket *p, vr_err *err)
{
    if (rd->npre && p->pts != AV_NOPTS_VALUE && p->pts < rd->r.first.pts) {
        av_packet_unref(p);
        return 0;
    }
    if (p->pts == AV_NOPTS_VALUE)
        return vr_err_set(err, VR_EFORMAT, "%s: chunk at %.2f s: its pre-roll's packets have no "
                          "presentation timestamps", rd->path, rd->r.start_s);
    rd->pre_bytes += p->size;
    if (rd->npre >= REMUX_GOP_MAX_PACKETS || rd->pre_bytes > (long long)REMUX_GOP_MAX_BYTES)
        return vr_err_set(err, VR_EFORMAT, "%s: chunk at %.2f s: its pre-roll is longer than "
                          "%d packets or %u MB", rd->path, rd->r.start_s, REMUX_GOP_MAX_PACKETS,
                          REMUX_GOP_MAX_BYTES >> 20);
    rd->pre[rd->npre++] = p->pts;
    return rd_push(rd, p, err);
}

/* The first video packet after the seek must be the planned one. */
static int rd_first_packet(struct remux_reader *rd, const AVPacket *p, vr_err *err)
{
    if (rd_is(p, &rd->r.first) && (p->flags & AV_PKT_FLAG_KEY))
        return 0;
    return vr_err_set(err, VR_EFORMAT, "%s: the source changed since it was planned: the "
                      "packet at %.3f s is not the keyframe planned there (pts %lld, planned "
                      "%lld)", rd->path, rd_secs(rd, rd->r.first.pts), (long long)p->pts,
                      (long long)rd->r.first.pts);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Reads from the seek point to the chunk's own keyframe (inclusive). */
static int rd_read_head(struct remux_reader *rd, AVPacket *p, vr_err *err)
{
    int seen_first = 0, rc = 0;
    while (rc == 0 && rd->state == RD_PREROLL) {
        int ret = av_read_frame(rd->ic, p);
        if (ret < 0)
            return ret == AVERROR_EOF
                       ? vr_err_set(err, VR_EFORMAT, "%s: the source ends before the chunk's "
                                    "keyframe at %.3f s (changed since it was planned?)",
                                    rd->path, rd_secs(rd, rd->r.start.pts))
                       : remux_averr(ret, "cannot read", rd->path, err);
        if (p->stream_index != rd->r.vs) {
            rc = rd_counts(rd, p->stream_index) && rd_owns(rd, p) ? rd_push(rd, p, err) : 0;
        } else if (!seen_first++ && (rc = rd_first_packet(rd, p, err)) < 0) {
            break;
        } else if (rd_is(p, &rd->r.start)) {
            rd->state = RD_OWN;
            rc = rd_push(rd, p, err);
        } else if (!rd->r.preroll) {
            rc = vr_err_set(err, VR_EFORMAT, "%s: internal: a packet before the chunk's "
                            "keyframe in a range without a pre-roll", rd->path);
        } else {
            rc = rd_preroll_packet(rd, p, err);
        }
        av_packet_unref(p);
    }
    return rc;
}

/* The pre-roll's thresholds: all its frames are references; its last
 * `warmup` (by presentation) warm the filter up (remux.c does the same). */
static void rd_thresholds(struct remux_reader *rd)
{
    rd->until = INT64_MIN;
    rd->warm_from = INT64_MAX;
    if (!rd->npre)
        return;
    qsort(rd->pre, (size_t)rd->npre, sizeof *rd->pre, cmp_i64);
    rd->until = rd->pre[rd->npre - 1] + 1;
    if (rd->r.warmup > 0)
        rd->warm_from = rd->pre[rd->npre > rd->r.warmup ? rd->npre - rd->r.warmup : 0];
}

void remux_reader_free(struct remux_reader **rdp)
{
    struct remux_reader *rd = rdp ? *rdp : NULL;
    if (!rd)
        return;
    for (int i = rd->qhead; i < rd->qn; i++)
        av_packet_free(&rd->q[i]);
    free(rd->q);
    free(rd->pre);
    free(rd->passed);
    free(rd);
    *rdp = NULL;
}

int remux_reader_open(AVFormatContext *ic, const struct chunk_range *r, const char *path,
                      struct remux_reader **out, vr_err *err)
{
    *out = NULL;
    struct remux_reader *rd = calloc(1, sizeof *rd);
    AVPacket *p = av_packet_alloc();
    int rc = 0;
    if (!rd || !p) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    rd->ic = ic;
    rd->r = *r;
    rd->vdts_out = rd->vpts_max = rd->other_out = INT64_MIN;
    snprintf(rd->path, sizeof rd->path, "%s", path);
    rd->vtb = (AVRational){ r->tb_num, r->tb_den };
    if ((rc = rd_check_stream(rd, err)) < 0)
        goto fail;
    if (!(rd->passed = calloc(ic->nb_streams, 1)) ||
        (r->preroll && !(rd->pre = malloc(REMUX_GOP_MAX_PACKETS * sizeof *rd->pre)))) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    if (r->seek != INT64_MIN && avformat_seek_file(ic, r->vs, r->seek, r->seek, r->seek, 0) < 0) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: cannot seek to the keyframe at %.3f s (the source "
                        "changed since it was planned?)", path, rd_secs(rd, r->seek));
        goto fail;
    }
    if ((rc = rd_read_head(rd, p, err)) < 0)
        goto fail;
    rd_thresholds(rd);
    av_packet_free(&p);
    *out = rd;
    return 0;
fail:
    av_packet_free(&p);
    remux_reader_free(&rd);
    return rc;
}

void remux_reader_preroll(const struct remux_reader *rd, int64_t *until, int64_t *warm_from)
{
    *until = rd->until;
    *warm_from = rd->warm_from;
}

long long remux_reader_video_packets(const struct remux_reader *rd)
{
    return rd->vpackets;
}

int remux_reader_has_end(const struct remux_reader *rd)
{
    return rd->r.has_end;
}

/* ---- a cut asked while reading (struct remux_cut) ---- */

/* Whether what was handed out stays before cut c: no video packet at or
 * after its keyframe (by dts, file order), no other stream's at or after
 * its window's end; and the old end is not reached. */
static int rd_cut_in_time(const struct remux_reader *rd, const struct remux_cut *c)
{
    if (rd->state != RD_OWN)
        return 0;
    if (c->end.dts != AV_NOPTS_VALUE && rd->vdts_out != INT64_MIN && rd->vdts_out >= c->end.dts)
        return 0;
    /* No dts to tell by (Matroska's index has none): by pts. A picture
     * decoded before the cut's keyframe is shown before it (H.264/HEVC
     * order rules), so the keyframe is not out yet while every pts handed
     * out is below its own. */
    if (c->end.dts == AV_NOPTS_VALUE &&
        (c->end.pts == AV_NOPTS_VALUE ? rd->vdts_out != INT64_MIN
                                      : rd->vpts_max != INT64_MIN && rd->vpts_max >= c->end.pts))
        return 0;
    return rd->other_out == INT64_MIN || rd->other_out < c->own_to;
}

static void rd_take_cut(struct remux_reader *rd)
{
    struct remux_cut *c = rd->r.cut;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->state == REMUX_CUT_ASKED) {
        if (rd_cut_in_time(rd, c)) {
            rd->r.end = c->end;
            rd->r.has_end = 1;
            rd->r.own_to = c->own_to;
            c->state = REMUX_CUT_TAKEN;
            c->taken = c->end;
            c->taken_any = 1;
        } else {
            c->state = REMUX_CUT_REFUSED;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

/* Notes a packet handed out (rd_cut_in_time). */
static void rd_handed(struct remux_reader *rd, const AVPacket *p)
{
    if (p->stream_index == rd->r.vs) {
        rd->vpackets++;
        if (p->dts != AV_NOPTS_VALUE)
            rd->vdts_out = p->dts;
        if (p->pts != AV_NOPTS_VALUE && p->pts > rd->vpts_max)
            rd->vpts_max = p->pts;
        if (rd->r.cut && p->dts != AV_NOPTS_VALUE && p->dts >= rd->r.start.dts)
            __atomic_add_fetch(&rd->r.cut->read, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t t = rd_time(p);
    if (t == AV_NOPTS_VALUE)
        return;
    t = av_rescale_q_rnd(t, rd->ic->streams[p->stream_index]->time_base, rd->vtb,
                         AV_ROUND_UP | AV_ROUND_PASS_MINMAX);
    if (t > rd->other_out)
        rd->other_out = t;
}

/* ---- reading on ---- */

/* The next chunk's keyframe was read: what is left is the tail, until
 * every other stream has passed the window or READER_TAIL_S of video. */
static void rd_begin_tail(struct remux_reader *rd)
{
    rd->state = RD_TAIL;
    int64_t end = rd->r.end.pts != AV_NOPTS_VALUE ? rd->r.end.pts : rd->r.end.dts;
    rd->tail_end = end + av_rescale_q(READER_TAIL_S, (AVRational){ 1, 1 }, rd->vtb);
    for (unsigned s = 0; s < rd->ic->nb_streams; s++)
        rd->waiting += rd_counts(rd, (int)s);
    if (!rd->waiting)
        rd->state = RD_DONE;
}

/* A video packet read after the pre-roll: 1 to hand out, 0 to drop. */
static int rd_video(struct remux_reader *rd, const AVPacket *p, vr_err *err)
{
    if (rd->state == RD_TAIL) {
        int64_t t = rd_time(p);
        if (t != AV_NOPTS_VALUE && t > rd->tail_end)
            rd->state = RD_DONE;
        return 0;
    }
    if (!rd->r.has_end)
        return 1;
    if (rd_is(p, &rd->r.end)) {
        rd_begin_tail(rd);
        return 0;
    }
    /* a keyframe after the planned one, that one never seen */
    if ((p->flags & AV_PKT_FLAG_KEY) && rd->r.end.pts != AV_NOPTS_VALUE &&
        p->pts != AV_NOPTS_VALUE && p->pts > rd->r.end.pts)
        return vr_err_set(err, VR_EFORMAT, "%s: the next chunk's keyframe at %.3f s is not where "
                          "it was planned (the source changed since?)", rd->path,
                          rd_secs(rd, rd->r.end.pts));
    return 1;
}

/* Another stream's packet: 1 to hand out, 0 to drop; counts the streams
 * that have passed the window during the tail. */
static int rd_other(struct remux_reader *rd, const AVPacket *p)
{
    int s = p->stream_index;
    if (!rd_counts(rd, s))
        return 0;
    int own = rd_owns(rd, p);
    int64_t t = rd_time(p);
    if (rd->state == RD_TAIL && !rd->passed[s] && t != AV_NOPTS_VALUE &&
        av_compare_ts(t, rd->ic->streams[s]->time_base, rd->r.own_to, rd->vtb) >= 0) {
        rd->passed[s] = 1;
        if (--rd->waiting == 0)
            rd->state = RD_DONE;
    }
    return own;
}

int remux_reader_next(struct remux_reader *rd, AVPacket *pkt, vr_err *err)
{
    rd_take_cut(rd);
    if (rd->qhead < rd->qn) {
        av_packet_move_ref(pkt, rd->q[rd->qhead]);
        av_packet_free(&rd->q[rd->qhead++]);
        rd_handed(rd, pkt);
        return 1;
    }
    while (rd->state != RD_DONE) {
        int ret = av_read_frame(rd->ic, pkt);
        if (ret == AVERROR_EOF || (ret < 0 && avio_feof(rd->ic->pb) && !rd->ic->pb->error)) {
            if (rd->state == RD_OWN && rd->r.has_end)
                return vr_err_set(err, VR_EFORMAT, "%s: the source ends before the next chunk's "
                                  "keyframe at %.3f s (cut short since it was planned?)",
                                  rd->path, rd_secs(rd, rd->r.end.pts));
            rd->state = RD_DONE;
            break;
        }
        if (ret < 0)
            return remux_averr(ret, "cannot read", rd->path, err);
        int keep = pkt->stream_index == rd->r.vs ? rd_video(rd, pkt, err) : rd_other(rd, pkt);
        if (keep < 0) {
            av_packet_unref(pkt);
            return keep;
        }
        if (keep) {
            rd_handed(rd, pkt);
            return 1;
        }
        av_packet_unref(pkt);
    }
    return 0;
}

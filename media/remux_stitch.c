/*
 * remux_stitch.c - the processed chunks back into one file by stream copy,
 * with the source's timestamps, its other streams (audio, subtitles, other
 * video, data: vio_streams.h, the rule `process` follows), the video's tags and
 * side data (remux.h).
 */
#include "remux.h"
#include "remux_stitch.h"

#include "remux_carry.h"
#include "remux_io.h"
#include "remux_ts.h"
#include "src_io.h"
#include "vio_streams.h"

#include "log.h"

#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct remux_stitch_state {
    AVFormatContext *src;        /* source, for its other streams; with ranges (the chunks
                                  * carry their streams and times) only for the streams a
                                  * chunk cannot hold (remux_carry.h), else NULL */
    int src_vs;
    int *amap;                   /* source stream -> output stream, -1 = drop (ranges:
                                  * chunk stream -> output stream) */
    int *smap;                   /* src's stream -> output stream, -1 = not read from src:
                                  * amap, or with ranges the streams carried */
    AVPacket *apkt;              /* next packet of a copied stream, or empty */
    int audio_eof;               /* no more of them */
    struct remux_out o;          /* the output, under its temporary name */
    AVPacket *pkt;               /* a chunk's packet in flight */
    int64_t *spts;               /* the source's frame pts, presentation order (ranges:
                                  * those of the chunks added so far) */
    long long sn, scap;          /* their count; ranges: the array's room */
    int64_t *last_odts;          /* ranges: per output stream, its last dts (output tb) */
    AVRational stb;              /* the source video's time base */
    int64_t sdur;                /* one frame, stb */
    long long base;              /* source frames before the current chunk */
    long long written;           /* video packets written */
    long long dropped;           /* copied chunks: range frames their decoders dropped */
    int64_t *wpts;               /* [written]: the source pts each was given */
    long long wcap;
    int64_t last_dts;            /* output time base */
    char note[600];              /* streams of the source left out (vio_streams_plan), or "" */
};

/* Writes the source's copied packets (audio, subtitles, ...) up to (and
 * including) the time `until` (in tb), or all of them when until is
 * INT64_MAX. */
static int remux_audio_upto(struct remux_stitch_state *s, struct remux_out *o,
                            int64_t until, AVRational tb, vr_err *err)
{
    while (s->src) { /* ranges: the chunks carry the rest */
        if (!s->apkt->data && !s->audio_eof) {
            int ret;
            for (;;) {
                ret = av_read_frame(s->src, s->apkt);
                if (ret < 0)
                    break;
                if (s->smap[s->apkt->stream_index] >= 0)
                    break;
                av_packet_unref(s->apkt);
            }
            if (ret == AVERROR_EOF) {
                s->audio_eof = 1;
            } else if (ret < 0) {
                return remux_averr(ret, "cannot read the streams of", s->src->url, err);
            }
        }
        if (s->audio_eof)
            return 0;
        AVStream *is = s->src->streams[s->apkt->stream_index];
        int64_t ats = s->apkt->dts != AV_NOPTS_VALUE ? s->apkt->dts : s->apkt->pts;
        if (until != INT64_MAX && ats != AV_NOPTS_VALUE &&
            av_compare_ts(ats, is->time_base, until, tb) > 0)
            return 0;
        int os = s->smap[s->apkt->stream_index];
        s->apkt->stream_index = os;
        av_packet_rescale_ts(s->apkt, is->time_base, o->oc->streams[os]->time_base);
        s->apkt->pos = -1;
        int ret = av_interleaved_write_frame(o->oc, s->apkt);
        av_packet_unref(s->apkt);
        if (ret < 0)
            return remux_averr(ret, "cannot write copied streams to", o->path, err);
    }
    return 0;
}

/* ---- stitch: open, copy one chunk, finish ---- */

static void stitch_release(struct remux_stitch_state *s)
{
    remux_out_abort(&s->o);
    src_close_input(&s->src);
    av_packet_free(&s->pkt);
    av_packet_free(&s->apkt);
    if (s->smap != s->amap)
        free(s->smap);
    free(s->amap);
    free(s->spts);
    free(s->wpts);
    free(s->last_odts);
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

/* Output stream 0, the matte (opened from chunk 0), with the time base tb
 * and the frame rates, metadata and side data of the video stream vst. */
static void stitch_video_like(AVFormatContext *oc, const AVStream *vst, AVRational tb,
                              const char *out)
{
    AVStream *ovs = oc->streams[0];
    ovs->time_base = tb;
    ovs->avg_frame_rate = vst->avg_frame_rate;
    ovs->r_frame_rate = vst->r_frame_rate;
    /* the source's tags in the source's order, as `process` writes them
     * (vio_encode.c): copied over chunk 0's, they kept the order the
     * chunk's read gave them (VENDOR_ID before HANDLER_NAME), 46 bytes off */
    av_dict_free(&ovs->metadata);
    av_dict_copy(&ovs->metadata, vst->metadata, 0);
    av_dict_set(&ovs->metadata, "encoder", NULL, 0);
    vio_streams_side_data(ovs, vst, oc->oformat, out);
}

/* Output streams for ic's other streams (ic's video: vi) that `process`
 * copies too (vio_streams_plan): s->amap[i] gets each one's output index,
 * -1 for the rest, which ic then discards. With t (a chunk's sidecar) a
 * copied stream counts in its source stream's time base, and a stream the
 * sidecar does not list is not copied. */
static int stitch_other_streams(struct remux_stitch_state *s, AVFormatContext *ic, int vi,
                                const struct remux_ts *t, const char *out, vr_err *err)
{
    AVFormatContext *oc = s->o.oc;
    if (!(s->amap = malloc((ic->nb_streams ? ic->nb_streams : 1) * sizeof *s->amap)))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    vio_streams_plan(ic, vi, oc->oformat, out, s->amap, s->note, sizeof s->note);
    for (unsigned i = 0; i < ic->nb_streams; i++) {
        if (!s->amap[i] || (t && (int)i >= t->nstreams)) {
            s->amap[i] = -1;
            ic->streams[i]->discard = AVDISCARD_ALL;
            continue;
        }
        AVStream *os = stitch_copy_stream(oc, ic->streams[i]);
        if (!os)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        if (t)
            os->time_base = (AVRational){ t->s[i].tb_num, t->s[i].tb_den };
        s->amap[i] = (int)oc->nb_streams - 1;
    }
    return 0;
}

/* Opens the source (timestamps, other streams) and the output: stream 0
 * is the matte video with the parameters of the first chunk and the source
 * video's time base, metadata and side data (stereo, spherical, rotation),
 * then every other stream of the source that `process` copies too
 * (vio_streams_plan), however many. Writes the header. */
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
    /* this pass reads only the other streams: MP4 then skips the video's bytes */
    s->src->streams[s->src_vs]->discard = AVDISCARD_ALL;
    /* no container tags: `process` copies none (an AVI's SOFTWARE tag
     * made the two files differ) */
    AVFormatContext *oc = s->o.oc;
    av_dict_free(&oc->metadata);
    stitch_video_like(oc, s->src->streams[s->src_vs], s->stb, out);
    if ((rc = stitch_other_streams(s, s->src, s->src_vs, NULL, out, err)) < 0)
        return rc;
    s->smap = s->amap;
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
    long long k = s->base + r;
    int64_t pts = s->spts[k];
    /* a frame lasts until the next one (VFR sources keep their rhythm) */
    int64_t dur = k + 1 < s->sn ? s->spts[k + 1] - pts : s->sdur;
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
    if (s->written == s->wcap) {
        long long cap = s->wcap ? s->wcap * 2 : 1024;
        int64_t *w = realloc(s->wpts, (size_t)cap * sizeof *w);
        if (!w)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        s->wpts = w;
        s->wcap = cap;
    }
    s->wpts[s->written] = pts;
    pkt->duration = dur > 0 ? av_rescale_q(dur, s->stb, otb) : 0;
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

/* Copies chunk c (`path`, which must hold `frames` frames) into the output.
 * With its input copy (`input`, or NULL) it may hold fewer: frames its
 * decoder dropped, placed by time (remux_place_by_input). */
static int stitch_copy_chunk(struct remux_stitch_state *s, int c, const char *path,
                             const char *input, long long frames, vr_err *err)
{
    int64_t *cpts = NULL, cfd;
    long long cn, *place = NULL;
    AVRational ctb;
    AVFormatContext *cc = NULL;
    int cvs, ret = 0;
    int rc = remux_pts_list_made(path, &cpts, &cn, &ctb, &cfd, err);
    if (rc < 0) {
        vr_err_prefix(err, "chunk %d", c);
        goto out;
    }
    if (cn != frames && (!input || cn > frames || cn < 1)) {
        rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): %lld frames, expected %lld", c, path,
                        cn, frames);
        goto out;
    }
    if (cn < frames) {
        if (!(place = malloc((size_t)cn * sizeof *place))) {
            rc = vr_err_set(err, VR_ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = remux_place_by_input(input, cpts, cn, ctb, frames, place, err)) < 0) {
            vr_err_prefix(err, "chunk %d (%s)", c, path);
            goto out;
        }
    }
    if ((rc = remux_open_made(path, &cc, &cvs, err)) < 0)
        goto out;
    while (rc == 0 && (ret = av_read_frame(cc, s->pkt)) >= 0) {
        long long r = s->pkt->stream_index == cvs ? remux_rank(cpts, cn, remux_ts(s->pkt)) : -2;
        if (r == -1)
            rc = vr_err_set(err, VR_EFORMAT, "chunk %d: packet without timestamp", c);
        else if (r >= 0)
            rc = stitch_write_packet(s, s->pkt, place ? place[r] : r, ctb, err);
        av_packet_unref(s->pkt);
    }
    if (rc == 0 && ret != AVERROR_EOF)
        rc = remux_averr(ret, "cannot read", path, err);
    s->base += frames;
    s->dropped += frames - cn;
out:
    avformat_close_input(&cc);
    free(cpts);
    free(place);
    return rc;
}

/* ---- chunks read in place: the source only for what they cannot hold ---- */

/* Output streams for the source's streams that the output holds but a
 * chunk cannot (remux_carry.h), read from `src` as the stitch goes; the
 * note then says what the output leaves out of the source, as `process`
 * says it. A source that cannot be opened is said in the note, and the
 * stitch goes on with what the chunks hold. */
static int stitch_carry(struct remux_stitch_state *s, const char *src, vr_err *err)
{
    vr_err e = { 0 };
    if (remux_carry_plan(src, s->o.oc->oformat, &s->src, &s->smap, s->note, sizeof s->note,
                         &e) < 0) {
        snprintf(s->note, sizeof s->note, "the source's streams a chunk cannot hold are not "
                 "carried: %s", e.msg);
        return 0;
    }
    for (unsigned i = 0; s->src && i < s->src->nb_streams; i++) {
        if (!s->smap[i]) {
            s->smap[i] = -1;
            continue;
        }
        if (!stitch_copy_stream(s->o.oc, s->src->streams[i]))
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        s->smap[i] = (int)s->o.oc->nb_streams - 1;
    }
    return 0;
}

/* Opens the output from chunk 0 and its sidecar: stream 0 the matte with
 * the source video's time base, then chunk 0's other streams that the
 * container holds, each with its source stream's time base. */
static int stitch_open_ranges(struct remux_stitch_state *s, const char *src, const char *chunk0,
                              const char *ts0, const char *out, vr_err *err)
{
    s->last_dts = INT64_MIN;
    struct remux_ts t;
    AVFormatContext *cc = NULL;
    int cvs, rc;
    if (!(s->pkt = av_packet_alloc()) || !(s->apkt = av_packet_alloc()))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    if ((rc = remux_ts_read(ts0, &t, err)) < 0)
        return rc;
    if ((rc = remux_open(chunk0, &cc, &cvs, err)) < 0 ||
        (rc = remux_out_open(&s->o, out, NULL, cc, &cvs, 1, err)) < 0)
        goto out;
    s->stb = (AVRational){ t.s[0].tb_num, t.s[0].tb_den };
    AVFormatContext *oc = s->o.oc;
    stitch_video_like(oc, cc->streams[cvs], s->stb, out);
    if (t.has_matrix)
        vio_streams_rotation(oc->streams[0], t.matrix, oc->oformat, out);
    if ((rc = stitch_other_streams(s, cc, cvs, &t, out, err)) < 0 ||
        (src && (rc = stitch_carry(s, src, err)) < 0))
        goto out;
    if (!(s->last_odts = malloc(oc->nb_streams * sizeof *s->last_odts)))
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    for (unsigned i = 0; rc == 0 && i < oc->nb_streams; i++)
        s->last_odts[i] = INT64_MIN;
    int ret = rc == 0 ? avformat_write_header(oc, NULL) : 0;
    if (ret < 0)
        rc = remux_averr(ret, "cannot write", out, err);
out:
    avformat_close_input(&cc);
    remux_ts_release(&t);
    return rc;
}

/* Adds chunk c's frame times (its sidecar's stream 0) after the last
 * chunk's: they must come after them. */
static int stitch_add_times(struct remux_stitch_state *s, int c, const struct remux_ts_stream *v,
                            vr_err *err)
{
    if (v->tb_num != s->stb.num || v->tb_den != s->stb.den)
        return vr_err_set(err, VR_EFORMAT, "chunk %d: its frame times count in %d/%d s, chunk 0's "
                          "in %d/%d", c, v->tb_num, v->tb_den, s->stb.num, s->stb.den);
    if (s->sn && v->n && v->pts[0] <= s->spts[s->sn - 1])
        return vr_err_set(err, VR_EFORMAT, "chunk %d starts at %.3f s, before chunk %d ends "
                          "(%.3f s): the chunks overlap", c, v->pts[0] * av_q2d(s->stb), c - 1,
                          s->spts[s->sn - 1] * av_q2d(s->stb));
    if (!v->n) /* a chunk without frames fails its count check */
        return 0;
    if (s->sn + v->n > s->scap) {
        long long cap = (s->sn + v->n) * 2;
        int64_t *p = realloc(s->spts, (size_t)cap * sizeof *p);
        if (!p)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        s->spts = p;
        s->scap = cap;
    }
    memcpy(s->spts + s->sn, v->pts, (size_t)v->n * sizeof *v->pts);
    s->sn += v->n;
    if (s->sn >= 2) /* the last frame lasts as long as the one before it */
        s->sdur = s->spts[s->sn - 1] - s->spts[s->sn - 2];
    return 0;
}

/* Another stream's packet of chunk c (its j-th of stream k) with the
 * sidecar's exact times, written after checking that its stream's dts do
 * not go back. */
static int stitch_write_other(struct remux_stitch_state *s, int c, AVPacket *pkt,
                              const struct remux_ts_stream *t, long long j, vr_err *err)
{
    int os = s->amap[pkt->stream_index];
    AVRational otb = s->o.oc->streams[os]->time_base, itb = { t->tb_num, t->tb_den };
    pkt->pts = t->pts[j];
    pkt->dts = t->dts[j];
    pkt->duration = t->dur[j];
    av_packet_rescale_ts(pkt, itb, otb);
    pkt->stream_index = os;
    pkt->pos = -1;
    if (pkt->dts != AV_NOPTS_VALUE) {
        if (s->last_odts[os] != INT64_MIN && pkt->dts < s->last_odts[os])
            return vr_err_set(err, VR_EFORMAT, "chunk %d: stream %d goes back in time (dts "
                              "%.3f s after %.3f s)", c, os, pkt->dts * av_q2d(otb),
                              s->last_odts[os] * av_q2d(otb));
        s->last_odts[os] = pkt->dts;
    }
    int ret = av_interleaved_write_frame(s->o.oc, pkt);
    return ret < 0 ? remux_averr(ret, "cannot write", s->o.path, err) : 0;
}

/* Copies chunk c (`path`, its times in `tspath`) into the output, read
 * once: its k-th video packet is its k-th frame, which takes the k-th time
 * of its sidecar. That holds for the workers' encoders (no B-frames:
 * vio_encode.c); a chunk whose codec reorders frames, or whose packets go
 * back in time, is refused rather than given wrong times. */
static int stitch_copy_range(struct remux_stitch_state *s, int c, const char *path,
                             const char *tspath, vr_err *err)
{
    struct remux_ts t;
    int64_t last = AV_NOPTS_VALUE;
    long long nv = 0, *seen = NULL;
    AVFormatContext *cc = NULL;
    int cvs, ret = 0;
    int rc = remux_ts_read(tspath, &t, err);
    if (rc < 0)
        return vr_err_prefix(err, "chunk %d", c);
    if ((rc = remux_open_made(path, &cc, &cvs, err)) < 0)
        goto out;
    AVRational ctb = cc->streams[cvs]->time_base;
    /* known when probed (not Matroska); else the order check below */
    if (cc->streams[cvs]->codecpar->video_delay > 0) {
        rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): its frames are reordered (B-frames); "
                        "the stitch takes chunks coded in presentation order", c, path);
        goto out;
    }
    if (cvs != 0 || (int)cc->nb_streams != t.nstreams ||
        !(seen = calloc(cc->nb_streams, sizeof *seen))) {
        rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): %u streams, its timestamps list %d", c,
                        path, cc->nb_streams, t.nstreams);
        goto out;
    }
    if ((rc = stitch_add_times(s, c, &t.s[0], err)) < 0)
        goto out;
    while (rc == 0 && (ret = av_read_frame(cc, s->pkt)) >= 0) {
        int k = s->pkt->stream_index;
        if (k == cvs) {
            int64_t ts = remux_ts(s->pkt);
            if (ts == AV_NOPTS_VALUE)
                rc = vr_err_set(err, VR_EFORMAT, "chunk %d: packet without timestamp", c);
            else if (last != AV_NOPTS_VALUE && ts <= last)
                rc = vr_err_set(err, VR_EFORMAT, "chunk %d: frame %lld is stored before the one "
                                "it follows (its frames are reordered: B-frames?); the stitch "
                                "takes chunks coded in presentation order", c, nv);
            else if (nv >= t.s[0].n)
                rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): more frames than the %lld its "
                                "timestamps list", c, path, t.s[0].n);
            else
                rc = stitch_write_packet(s, s->pkt, nv, ctb, err);
            last = ts;
            nv++;
        } else if (seen[k] >= t.s[k].n) {
            rc = vr_err_set(err, VR_EFORMAT, "chunk %d: stream %d holds more packets than its "
                            "timestamps list (%lld)", c, k, t.s[k].n);
        } else if (s->amap[k] >= 0) {
            rc = stitch_write_other(s, c, s->pkt, &t.s[k], seen[k], err);
        }
        if (k != cvs && k < t.nstreams)
            seen[k]++;
        av_packet_unref(s->pkt);
    }
    if (rc == 0 && ret != AVERROR_EOF)
        rc = remux_averr(ret, "cannot read", path, err);
    if (rc == 0 && nv != t.s[0].n)
        rc = vr_err_set(err, VR_EFORMAT, "chunk %d (%s): %lld frames, its timestamps list %lld",
                        c, path, nv, t.s[0].n);
    for (int k = 1; rc == 0 && k < t.nstreams; k++)
        if (seen[k] != t.s[k].n)
            rc = vr_err_set(err, VR_EFORMAT, "chunk %d: stream %d holds %lld packets, its "
                            "timestamps list %lld", c, k, seen[k], t.s[k].n);
    s->base += nv;
out:
    avformat_close_input(&cc);
    free(seen);
    remux_ts_release(&t);
    return rc;
}

/* Every frame of the output at its source frame's time, relative to the
 * first (a muxer may shift the whole timeline), within one tick of the
 * coarser time base and one more for the dts nudges of stitch_write_packet.
 * Packet durations are not compared: containers store them loosely (MP4's
 * last sample, Matroska's default duration), timestamps exactly. */
static int stitch_check_times(const struct remux_stitch_state *s, const int64_t *opts,
                              long long n, AVRational otb, vr_err *err)
{
    double tick = av_q2d(otb) > av_q2d(s->stb) ? av_q2d(otb) : av_q2d(s->stb);
    for (long long k = 0; k < n; k++) {
        double want = (s->wpts[k] - s->wpts[0]) * av_q2d(s->stb);
        double got = (opts[k] - opts[0]) * av_q2d(otb);
        if (got < want - 2 * tick - 1e-9 || got > want + 2 * tick + 1e-9)
            return vr_err_set(err, VR_EFORMAT, "stitch %s: frame %lld at %.3f s, source %.3f s "
                              "(from the first frame)", s->o.path, k, got, want);
    }
    return 0;
}

/* The rest of the copied streams and the trailer; then the frame count and
 * every frame's time are checked from the file itself before it is
 * published under its name, so a bad stitch never replaces anything; and
 * published only if `may` (when given) still allows it. */
static int stitch_finish(struct remux_stitch_state *s, remux_publish_fn may, void *ctx,
                         vr_err *err)
{
    int rc = remux_audio_upto(s, &s->o, INT64_MAX, s->stb, err);
    if (rc < 0 || (rc = remux_out_close(&s->o, err)) < 0)
        return rc;
    int64_t *opts, ofd;
    long long got;
    AVRational otb;
    if ((rc = remux_pts_list_made(s->o.tmp, &opts, &got, &otb, &ofd, err)) < 0)
        return rc;
    if (got != s->written || s->written + s->dropped != s->sn)
        rc = vr_err_set(err, VR_EFORMAT, "stitch %s: %lld frames written%s, %s %lld", s->o.path,
                        got, s->dropped ? " and some dropped" : "",
                        !s->last_odts ? "source has" : "the chunks' timestamps list", s->sn);
    else
        rc = stitch_check_times(s, opts, got, otb, err);
    free(opts);
    if (rc == 0 && may && (rc = may(ctx, err)) == 0) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err && err->msg[0] ? err->msg : "refused");
        rc = vr_err_set(err, VR_ECANCELED, "stitch %s: checked but not published: %s", s->o.path,
                        why);
    }
    return rc < 0 ? rc : remux_out_commit(&s->o, err);
}

/* ---- the incremental stitch (remux.h) ---- */

struct remux_stitcher {
    struct remux_stitch_state st;
    int ranges;                  /* begun by remux_stitch_begin_ranges */
    long long *chunk_frames;     /* [n], copied; NULL for ranges */
    int n, added;
    int broken;                  /* an add failed: only abort is left */
};

const char *remux_stitch_note(const struct remux_stitcher *s)
{
    return s ? s->st.note : "";
}

void remux_stitch_abort(struct remux_stitcher **sp)
{
    struct remux_stitcher *s = *sp;
    if (!s)
        return;
    stitch_release(&s->st);
    free(s->chunk_frames);
    free(s);
    *sp = NULL;
}

int remux_stitch_begin(const char *src, const char *chunk0, const long long *chunk_frames,
                       int n, const char *out, struct remux_stitcher **sp, vr_err *err)
{
    *sp = NULL;
    if (n < 1 || n > REMUX_MAX_CHUNKS)
        return vr_err_set(err, VR_EINVAL, "stitch: %d chunks", n);
    struct remux_stitcher *s = calloc(1, sizeof *s);
    if (!s || !(s->chunk_frames = malloc((size_t)n * sizeof *s->chunk_frames))) {
        free(s);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    memcpy(s->chunk_frames, chunk_frames, (size_t)n * sizeof *chunk_frames);
    s->n = n;
    int rc = stitch_open(&s->st, src, chunk0, out, err);
    long long want = 0;
    for (int i = 0; i < n; i++)
        want += chunk_frames[i];
    if (rc == 0 && want != s->st.sn)
        rc = vr_err_set(err, VR_EFORMAT, "stitch: the chunks should hold %lld frames but the "
                        "source %s has %lld", want, src, s->st.sn);
    if (rc < 0) {
        remux_stitch_abort(&s);
        return rc;
    }
    *sp = s;
    return 0;
}

int remux_stitch_begin_ranges(const char *src, const char *chunk0, const char *chunk0_ts, int n,
                              const char *out, struct remux_stitcher **sp, vr_err *err)
{
    *sp = NULL;
    if (n < 1 || n > REMUX_MAX_CHUNKS)
        return vr_err_set(err, VR_EINVAL, "stitch: %d chunks", n);
    struct remux_stitcher *s = calloc(1, sizeof *s);
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    s->n = n;
    s->ranges = 1;
    int rc = stitch_open_ranges(&s->st, src, chunk0, chunk0_ts, out, err);
    if (rc < 0) {
        remux_stitch_abort(&s);
        return rc;
    }
    *sp = s;
    return 0;
}

int remux_stitch_added(const struct remux_stitcher *s)
{
    return s->added;
}

void remux_stitch_expect(struct remux_stitcher *s, int n)
{
    s->n = n;
}

long long remux_stitch_frames(const struct remux_stitcher *s)
{
    return s->st.written;
}

/* Whether a chunk may be added (in this mode); then the add's result. */
static int stitch_can_add(const struct remux_stitcher *s, int ranges, vr_err *err)
{
    if (s->broken || s->added >= s->n)
        return vr_err_set(err, VR_EINVAL, "stitch: chunk %d: %s", s->added,
                          s->broken ? "an earlier chunk failed" : "all chunks are in");
    if (s->ranges != ranges)
        return vr_err_set(err, VR_EINVAL, "stitch: chunk %d: %s", s->added, ranges
                          ? "a sidecar for a stitch of copied chunks"
                          : "no sidecar for a stitch of ranges");
    return 0;
}

static int stitch_added(struct remux_stitcher *s, int rc)
{
    if (rc < 0) {
        s->broken = 1;
    } else {
        s->added++;
        remux_out_write_behind(&s->st.o);
    }
    return rc;
}

int remux_stitch_add(struct remux_stitcher *s, const char *chunk, const char *input,
                     vr_err *err)
{
    int rc = stitch_can_add(s, 0, err);
    if (rc < 0)
        return rc;
    return stitch_added(s, stitch_copy_chunk(&s->st, s->added, chunk, input,
                                             s->chunk_frames[s->added], err));
}

int remux_stitch_add_ts(struct remux_stitcher *s, const char *chunk, const char *ts, vr_err *err)
{
    int rc = stitch_can_add(s, 1, err);
    if (rc < 0)
        return rc;
    return stitch_added(s, stitch_copy_range(&s->st, s->added, chunk, ts, err));
}

int remux_stitch_end(struct remux_stitcher **sp, vr_err *err)
{
    return remux_stitch_end_if(sp, NULL, NULL, err);
}

void remux_stitch_publish_as(struct remux_stitcher *s, const struct storage_publish *pub)
{
    s->st.o.pub = pub;
    /* private while it is written: the publish gives it pub's owner and
     * mode (a 0600 input's stitch is never a 0644 temp beside the output) */
    if (pub && s->st.o.tmp[0])
        chmod(s->st.o.tmp, 0600);
}

int remux_stitch_end_if(struct remux_stitcher **sp, remux_publish_fn may, void *ctx, vr_err *err)
{
    struct remux_stitcher *s = *sp;
    int rc = s->broken || s->added < s->n
                 ? vr_err_set(err, VR_EINVAL, "stitch: %d of %d chunks added", s->added, s->n)
                 : stitch_finish(&s->st, may, ctx, err);
    remux_stitch_abort(sp); /* removes the temporary file unless it was published */
    return rc;
}

int remux_stitch(const char *src, const char *const *chunks, int n,
                 const long long *chunk_frames, const char *out, vr_err *err)
{
    struct remux_stitcher *s;
    int rc = remux_stitch_begin(src, chunks[0], chunk_frames, n, out, &s, err);
    if (rc == 0 && remux_stitch_note(s)[0])
        log_warn("%s: %s", out, remux_stitch_note(s));
    for (int c = 0; rc == 0 && c < n; c++)
        rc = remux_stitch_add(s, chunks[c], NULL, err);
    if (rc == 0)
        return remux_stitch_end(&s, err);
    remux_stitch_abort(&s);
    return rc;
}

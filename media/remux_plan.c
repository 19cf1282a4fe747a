/*
 * remux_plan.c - a source planned as ranges (remux_range.h): the keyframes
 * from the container's own index (MP4 sample tables, Matroska Cues), a cut
 * about every chunk_seconds at a keyframe a chunk can start at, each cut
 * checked by one exact seek of its own, and the source's fingerprint.
 * Nothing is written and, besides the index, one packet per cut is read.
 * The reader that workers use is remux_reader.c.
 */
#include "remux_range.h"

#include "remux.h"
#include "remux_gop.h"
#include "remux_io.h"
#include "src_io.h"

#include "log.h"
#include "storage.h"

#include <errno.h>
#include <libavutil/avutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Packets a read after a seek may take before the video's comes. */
#define PLAN_SEEK_READ_MAX 4096
/* A gap between listed keyframes longer than this, or an index ending
 * well before the video does, means the index is partial: a Matroska file
 * without Cues lists only the clusters the demuxer has walked. */
#define PLAN_INDEX_GAP_MAX_S 60.0

/* ---- fingerprint ---- */

int remux_fingerprint(int fd, char *out, size_t n, vr_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return storage_errno(errno, "cannot stat", "the source", err);
    int w = snprintf(out, n, "%llu:%lld:%lld.%09ld", (unsigned long long)st.st_ino,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    if (w < 0 || (size_t)w >= n)
        return vr_err_set(err, VR_EINVAL, "fingerprint: buffer too small");
    return 0;
}

/* ---- the plan in progress ---- */

struct plan {
    const char *in;
    const struct remux_plan_opts *o;
    AVFormatContext *ic;
    AVStream *st;
    int vs;
    AVRational tb;
    const char *method;          /* what the index is, NULL: none we trust */
    AVIndexEntry *ents;          /* a copy of the video's index: libavformat's grows and
                                  * moves as the checks read (Matroska adds entries) */
    int *keys, nkeys;            /* positions in ents of the keyframe entries */
    int nentries;
    int every_frame;             /* the index lists every frame (MP4) */
    AVPacket *pkt;
    int open_noted;
    struct remux_plan *out;
    int cap;
};

static void plan_free(struct plan *p)
{
    free(p->keys);
    free(p->ents);
    av_packet_free(&p->pkt);
    src_close_input(&p->ic);
}

static int64_t key_ts(const struct chunk_key *k)
{
    return k->pts != AV_NOPTS_VALUE ? k->pts : k->dts;
}

/* Reads on to the next video packet (after a seek, or at the start): the
 * other streams' packets before it are skipped. pkt holds it on success. */
static int plan_read_video(struct plan *p, vr_err *err)
{
    for (int i = 0; i < PLAN_SEEK_READ_MAX; i++) {
        av_packet_unref(p->pkt);
        int ret = av_read_frame(p->ic, p->pkt);
        if (ret == AVERROR_EOF)
            return vr_err_set(err, VR_ENOTSUP, "%s: no video packet after a seek", p->in);
        if (ret < 0)
            return remux_averr(ret, "cannot read", p->in, err);
        if (p->pkt->stream_index == p->vs)
            return 0;
    }
    return vr_err_set(err, VR_ENOTSUP, "%s: no video packet within %d packets of a seek", p->in,
                      PLAN_SEEK_READ_MAX);
}

/* Seeks to index entry e exactly and reads the packet there: a keyframe
 * whose decode (MP4) or presentation (Matroska) time is the entry's. */
static int plan_seek_key(struct plan *p, const AVIndexEntry *e, struct chunk_key *k, vr_err *err)
{
    int64_t ts = e->timestamp;
    int ret = avformat_seek_file(p->ic, p->vs, ts, ts, ts, 0);
    if (ret < 0)
        return vr_err_set(err, VR_ENOTSUP, "%s: cannot seek to the keyframe at %.3f s", p->in,
                          ts * av_q2d(p->tb));
    int rc = plan_read_video(p, err);
    if (rc < 0)
        return rc;
    const AVPacket *k0 = p->pkt;
    if (!(k0->flags & AV_PKT_FLAG_KEY) || (k0->dts != ts && k0->pts != ts))
        return vr_err_set(err, VR_ENOTSUP, "%s: a seek to the keyframe at %.3f s lands on "
                          "another packet (pts %lld)", p->in, ts * av_q2d(p->tb),
                          (long long)k0->pts);
    k->pts = k0->pts;
    k->dts = k0->dts;
    if (key_ts(k) == AV_NOPTS_VALUE)
        return vr_err_set(err, VR_ENOTSUP, "%s: video packets without timestamps", p->in);
    return 0;
}

/* ---- the index ---- */

/* The demuxers whose index lists the video's keyframes. */
static const char *plan_index_kind(const AVFormatContext *ic)
{
    const char *d = ic->iformat->name;
    if (!strcmp(d, "mov,mp4,m4a,3gp,3g2,mj2"))
        return "mp4 sample tables";
    if (!strcmp(d, "matroska,webm"))
        return "matroska cues";
    return NULL;
}

static double plan_stream_end_s(const struct plan *p)
{
    if (p->st->duration != AV_NOPTS_VALUE && p->st->duration > 0)
        return (p->st->duration + (p->st->start_time != AV_NOPTS_VALUE ? p->st->start_time : 0)) *
               av_q2d(p->tb);
    return p->ic->duration > 0 ? p->ic->duration / (double)AV_TIME_BASE : 0;
}

/* The keyframe entries of the video's index; VR_ENOTSUP when there is no
 * index that lists them all. Matroska reads its Cues on the first seek. */
static int plan_index(struct plan *p, vr_err *err)
{
    if (!(p->method = plan_index_kind(p->ic)))
        return vr_err_set(err, VR_ENOTSUP, "%s: %s files keep no keyframe index", p->in,
                          p->ic->iformat->name);
    if (!strcmp(p->method, "matroska cues"))
        av_seek_frame(p->ic, p->vs, p->st->start_time != AV_NOPTS_VALUE ? p->st->start_time : 0,
                      AVSEEK_FLAG_BACKWARD);
    p->nentries = avformat_index_get_entries_count(p->st);
    if (p->nentries > 0 && (!(p->keys = malloc((size_t)p->nentries * sizeof *p->keys)) ||
                            !(p->ents = malloc((size_t)p->nentries * sizeof *p->ents))))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    double last = -1e300, gap = 0; /* the longest interval between listed keyframes */
    for (int i = 0; i < p->nentries; i++) {
        const AVIndexEntry *e = &p->ents[i];
        p->ents[i] = *avformat_index_get_entry(p->st, i);
        if (!(e->flags & AVINDEX_KEYFRAME))
            continue;
        double t = e->timestamp * av_q2d(p->tb);
        if (p->nkeys && t - last > gap)
            gap = t - last;
        last = t;
        p->keys[p->nkeys++] = i;
    }
    /* the last GOP may be as long as any other, and then some */
    double end = plan_stream_end_s(p), tail = end - last;
    double tail_max = p->nkeys > 1 ? 2 * gap + 1 : PLAN_INDEX_GAP_MAX_S;
    if (end <= 0) /* a live Matroska file: no duration, no Cues */
        return vr_err_set(err, VR_ENOTSUP, "%s: no duration: an index cannot be trusted to "
                          "cover the file", p->in);
    if (!p->nkeys || gap > PLAN_INDEX_GAP_MAX_S || tail > tail_max)
        return vr_err_set(err, VR_ENOTSUP, "%s: the %s list %s", p->in, p->method,
                          !p->nkeys ? "no keyframe" : gap > PLAN_INDEX_GAP_MAX_S
                          ? "too few keyframes (a gap of over 60 s)"
                          : "no keyframe near the end (an index that covers only part of the "
                            "file)");
    p->every_frame = !strcmp(p->method, "mp4 sample tables") &&
                     p->st->nb_frames > 0 && p->nentries >= p->st->nb_frames;
    return 0;
}

/* Frames from keyframe keys[a] up to keys[b] (not included): counted where
 * the index lists every frame; else the larger of the keyframes listed
 * between them (each a frame) and their length at the lower of the
 * stream's frame rates (a variable rate's average is below its peak). */
static long long plan_frames(const struct plan *p, int a, int b)
{
    const AVIndexEntry *ea = &p->ents[p->keys[a]], *eb = &p->ents[p->keys[b]];
    if (p->every_frame)
        return p->keys[b] - p->keys[a];
    double fps = 60;
    AVRational r = p->st->r_frame_rate, avg = p->st->avg_frame_rate;
    if (r.num > 0 && r.den > 0)
        fps = av_q2d(r);
    if (avg.num > 0 && avg.den > 0 && av_q2d(avg) < fps)
        fps = av_q2d(avg);
    long long est = (long long)((eb->timestamp - ea->timestamp) * av_q2d(p->tb) * fps);
    return est > b - a ? est : b - a;
}

/* Whether the packets of keyframe entries k0 .. k1 (index positions) fit a
 * pre-roll (remux_gop.h's limits): counted where the index lists every
 * frame, else estimated from its length and its bytes in the file. */
static int plan_gop_fits(const struct plan *p, int k0, int k1)
{
    const AVIndexEntry *a = &p->ents[k0];
    const AVIndexEntry *b = &p->ents[k1];
    long long frames = k1 - k0, bytes = b->pos - a->pos;
    if (!p->every_frame) {
        AVRational fr = av_guess_frame_rate(p->ic, p->st, NULL);
        double fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 60;
        frames = (long long)((b->timestamp - a->timestamp) * av_q2d(p->tb) * fps + 0.5);
    } else {
        bytes = 0;
        for (int i = k0; i < k1; i++)
            bytes += p->ents[i].size;
    }
    return frames <= REMUX_GOP_MAX_PACKETS && bytes <= (long long)REMUX_GOP_MAX_BYTES;
}

/* Where the pre-roll of a chunk cut at keys[ki] starts: as many GOPs back
 * as it takes to decode the temporal filter's depth (o->warmup) of frames
 * before the cut, or from the file's first keyframe; an open-GOP keyframe
 * there loses its leading pictures (remux_reader.c), so it must hold that
 * many more. Without a warm-up, the GOP before (an HEVC CRA's references).
 * Returns the keys[] position with *first read there (plan_seek_key), -1
 * when the pre-roll would be too long (remux_gop.h), or VR_E*. */
static int plan_preroll_key(struct plan *p, int ki, struct chunk_key *first, vr_err *err)
{
    int need = p->o->warmup;
    for (int kj = ki - 1; kj >= 0; kj--) {
        long long n = plan_frames(p, kj, ki);
        if (kj > 0 && n < need)
            continue;
        if (!plan_gop_fits(p, p->keys[kj], p->keys[ki]))
            return -1;
        int rc = plan_seek_key(p, &p->ents[p->keys[kj]], first, err);
        if (rc < 0)
            return rc;
        if (need == 0 || kj == 0 || remux_clean_cut(p->st->codecpar, p->pkt) ||
            n >= need + remux_leading_max(p->st->codecpar))
            return kj;
    }
    return -1;
}

/* ---- cuts ---- */

static struct chunk_range *plan_add(struct plan *p, vr_err *err)
{
    struct remux_plan *out = p->out;
    if (out->nchunks >= REMUX_MAX_CHUNKS) {
        vr_err_set(err, VR_EINVAL, "%s: more than %d chunks; use a longer chunk length", p->in,
                   REMUX_MAX_CHUNKS);
        return NULL;
    }
    if (out->nchunks == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        void *n = realloc(out->chunks, (size_t)cap * sizeof *out->chunks);
        if (!n) {
            vr_err_set(err, VR_ENOMEM, "out of memory");
            return NULL;
        }
        out->chunks = n;
        p->cap = cap;
    }
    struct chunk_range *r = &out->chunks[out->nchunks++];
    memset(r, 0, sizeof *r);
    r->seek = INT64_MIN;
    r->own_from = INT64_MIN;
    r->own_to = INT64_MAX;
    r->frames = -1;
    r->vs = p->vs;
    r->tb_num = p->tb.num;
    r->tb_den = p->tb.den;
    snprintf(r->demuxer, sizeof r->demuxer, "%s", p->ic->iformat->name);
    return r;
}

/* Chunk 0: from the file's first video packet, read without a seek. */
static int plan_first(struct plan *p, vr_err *err)
{
    int rc = plan_read_video(p, err);
    if (rc < 0)
        return rc == VR_ENOTSUP ? vr_err_set(err, VR_EFORMAT, "%s: the video stream has no "
                                             "frames", p->in) : rc;
    if (!(p->pkt->flags & AV_PKT_FLAG_KEY))
        return vr_err_set(err, VR_EFORMAT, "%s: video does not start with a keyframe", p->in);
    struct chunk_range *r = plan_add(p, err);
    if (!r)
        return VR_ENOMEM;
    r->first.pts = r->start.pts = p->pkt->pts;
    r->first.dts = r->start.dts = p->pkt->dts;
    if (key_ts(&r->start) == AV_NOPTS_VALUE)
        return vr_err_set(err, VR_ENOTSUP, "%s: video packets without timestamps", p->in);
    return 0;
}

/* Whether the keyframe at index position keys[ki] (just read into pkt)
 * can start a chunk: 1 (cut), 0 (not), or VR_E*. With a pre-roll, *pre
 * gets where it starts (plan_preroll_key) and *first its keyframe, when
 * the cut needs or wants one (an HEVC CRA; any cut with a warm-up) and it
 * fits; else -1. The same rule as the copy split (remux.c split_cut_here). */
static int plan_cut_ok(struct plan *p, int ki, int *pre, struct chunk_key *first, vr_err *err)
{
    const AVCodecParameters *par = p->st->codecpar;
    int clean = remux_clean_cut(par, p->pkt);
    int open = !clean && remux_preroll_cut(par, p->pkt);
    *pre = -1;
    if (ki > 0 && (open || (clean && p->o->warmup > 0)) &&
        (*pre = plan_preroll_key(p, ki, first, err)) < -1)
        return *pre;
    if (!clean && *pre < 0 && !p->open_noted) {
        log_info("%s: %s", p->in, open ? "an open-GOP keyframe whose GOP before it is too long "
                 "for a pre-roll is not cut" : "open-GOP keyframes of this codec are not cut; "
                 "chunks start only at IDR frames, so they may be longer");
        p->open_noted = 1;
    }
    return clean || (open && *pre >= 0);
}

/* A chunk starting at keyframe entry keys[ki] (`start`, checked by
 * plan_seek_key), with the pre-roll from keys[pre] (its keyframe `first`)
 * when pre >= 0. */
static int plan_cut(struct plan *p, int ki, const struct chunk_key *start, int pre,
                    const struct chunk_key *first, vr_err *err)
{
    int64_t seek = p->ents[p->keys[pre >= 0 ? pre : ki]].timestamp;
    struct chunk_range *r = plan_add(p, err); /* may move the array */
    if (!r)
        return VR_ENOMEM;
    struct chunk_range *prev = r - 1;
    prev->end = *start;
    prev->has_end = 1;
    prev->own_to = key_ts(start);
    r->seek = seek;
    r->first = pre >= 0 ? *first : *start;
    r->start = *start;
    r->preroll = pre >= 0;
    r->warmup = pre >= 0 ? p->o->warmup : 0;
    r->own_from = key_ts(start);
    r->start_s = (key_ts(start) - key_ts(&p->out->chunks[0].start)) * av_q2d(p->tb);
    return 0;
}

/* Chunk c's frames from its time span at the stream's frame rate (its
 * keyframes' presentation times; the last up to the stream's end): exact
 * for a constant rate, whose keyframe times are whole frames apart. */
static long long plan_span_frames(const struct plan *p, int c)
{
    const struct chunk_range *r = &p->out->chunks[c];
    AVRational fr = av_guess_frame_rate(p->ic, p->st, NULL);
    double fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 0;
    double a = key_ts(&r->start) * av_q2d(p->tb);
    double b = r->has_end ? key_ts(&r->end) * av_q2d(p->tb) : plan_stream_end_s(p);
    return fps > 0 && b > a ? (long long)((b - a) * fps + 0.5) : -1;
}

/* Frames of each chunk where the index lists every frame and none is to
 * be discarded (an MP4 edit list hides frames: then the decoder decides);
 * every chunk's estimate for the cuts (chunk_range.frames_est). */
static void plan_count_frames(struct plan *p, const int *start_entry)
{
    struct remux_plan *out = p->out;
    out->frames = p->every_frame ? 0 : -1;
    for (int c = 0; c < out->nchunks && p->every_frame; c++) {
        int a = c ? start_entry[c] : 0;
        int b = c + 1 < out->nchunks ? start_entry[c + 1] : p->nentries;
        long long n = 0;
        for (int i = a; i < b && n >= 0; i++)
            n = p->ents[i].flags & AVINDEX_DISCARD_FRAME ? -1 : n + 1;
        out->chunks[c].frames = n;
        out->frames = n < 0 || out->frames < 0 ? -1 : out->frames + n;
    }
    for (int c = 0; c < out->nchunks; c++)
        out->chunks[c].frames_est = out->chunks[c].frames >= 0 ? out->chunks[c].frames
                                                               : plan_span_frames(p, c);
}

/* How far the last wave's lengths spread around their mean: its first
 * chunk 1 - GRADE times as long, its last 1 + GRADE; the wave's total and
 * its chunk count stay as the even plan made them. */
#define PLAN_WAVE_GRADE 0.4

/* The last wave of a plan, graded (remux_plan_opts.wave_slots). */
struct plan_wave {
    int first, n;                /* its first chunk and how many it has */
    double mean_s;               /* their mean length */
};

/* The length chunk c should have: chunk_seconds, or its place in the
 * graded wave w. */
static double plan_target_s(const struct plan *p, const struct plan_wave *w, int c)
{
    if (!w || c < w->first)
        return p->o->chunk_seconds;
    double j = c - w->first;
    return w->mean_s * (1 - PLAN_WAVE_GRADE + 2 * PLAN_WAVE_GRADE * j / (w->n - 1));
}

/* ---- where the pre-roll is shortest ---- */

/* How far (a fraction of the chunk's length) a cut may move from the
 * first keyframe at or past its length to one whose pre-roll decodes
 * fewer frames that are only dropped (issue 43: those frames delay every
 * chunk's first output, and an even plan on a source with scene-cut
 * keyframes often cuts right where the GOP before is longest). */
#define PLAN_CUT_SLACK 0.25

/* Whether a pre-roll of a is worth moving a cut from one of b: shorter by
 * a tenth and a frame at least, so that an estimate's rounding (Matroska
 * keyframes a millisecond short of a whole frame count) moves no cut of a
 * source with even GOPs. */
static int plan_clearly_less(long long a, long long b)
{
    return a < b - 1 && a * 10 < b * 9;
}

/* Frames a cut at keys[ki] would decode before its warm-up, from the index
 * alone: the GOPs back to the last keyframe that leaves o->warmup frames
 * before the cut (plan_preroll_key's rule without its check of that
 * keyframe's kind, which needs a read). */
static long long plan_preroll_drop(const struct plan *p, int ki)
{
    int need = p->o->warmup;
    for (int kj = ki - 1; kj >= 0; kj--) {
        long long n = plan_frames(p, kj, ki);
        if (n >= need || kj == 0)
            return n > need ? n - need : 0;
    }
    return 0;
}

/* The keyframe (keys[] position) to try first for a cut once the walk,
 * from the chunk's start `cur`, reaches keys[ki] at least (1 - SLACK) x
 * `target` seconds on: among the keyframes up to (1 + SLACK) x target, the
 * one whose pre-roll drops the fewest frames, when it drops fewer than
 * the first keyframe at or past the target (the even plan's cut); else
 * that one. -1: no keyframe at or past the target (the last chunk runs to
 * the end, as in the even plan), or no warm-up (pre-rolls only for open
 * GOPs, which the index does not tell). */
static int plan_best_cut(const struct plan *p, int ki, int64_t cur, double target)
{
    if (p->o->warmup <= 0)
        return -1;
    int even = -1, best = -1;
    long long even_drop = 0, best_drop = 0;
    for (int kj = ki; kj < p->nkeys; kj++) {
        double at = (p->ents[p->keys[kj]].timestamp - cur) * av_q2d(p->tb);
        int in = at <= target * (1 + PLAN_CUT_SLACK) + 1e-6;
        if (!in && even >= 0)
            break;
        long long d = plan_preroll_drop(p, kj);
        if (even < 0 && at >= target - 1e-6) {
            even = kj;
            even_drop = d;
        }
        if (in && (best < 0 || d < best_drop)) {
            best = kj;
            best_drop = d;
        }
    }
    return even < 0 ? -1 : best >= 0 && plan_clearly_less(best_drop, even_drop) ? best : even;
}

/* Cuts at keys[ki] when it can start a chunk: 1 (cut), 0 (not a cut), or
 * VR_E*. */
static int plan_try_cut(struct plan *p, int ki, int *start_entry, int *start_key, vr_err *err)
{
    struct chunk_key k, first;
    int pre, rc;
    if ((rc = plan_seek_key(p, &p->ents[p->keys[ki]], &k, err)) < 0 ||
        (rc = plan_cut_ok(p, ki, &pre, &first, err)) <= 0 ||
        (rc = plan_cut(p, ki, &k, pre, &first, err)) < 0)
        return rc;
    start_entry[p->out->nchunks - 1] = p->keys[ki];
    start_key[p->out->nchunks - 1] = ki;
    return 1;
}

/* Walks the keyframes after keys[ki0], where the plan's last chunk starts,
 * cutting each chunk about plan_target_s long, at the keyframe nearby
 * with the shortest pre-roll (plan_best_cut), else at the first at or past
 * that length that can start a chunk; start_entry and start_key get where
 * each new chunk starts (its index entry, its keys[] position). */
static int plan_walk(struct plan *p, int ki0, const struct plan_wave *w, int *start_entry,
                     int *start_key, vr_err *err)
{
    int looked = 0, failed = -1; /* plan_best_cut asked for this chunk; its pick that
                                      * could not start one */
    int64_t cur = p->ents[p->keys[ki0]].timestamp;
    for (int ki = ki0 + 1; ki < p->nkeys; ki++) {
        double target = plan_target_s(p, w, p->out->nchunks - 1);
        double at = (p->ents[p->keys[ki]].timestamp - cur) * av_q2d(p->tb);
        if (at < target * (1 - PLAN_CUT_SLACK) - 1e-6)
            continue;
        int cut = 0;
        if (!looked) {
            int best = plan_best_cut(p, ki, cur, target);
            looked = 1;
            if (best >= 0 && (cut = plan_try_cut(p, best, start_entry, start_key, err)) < 0)
                return cut;
            failed = cut ? -1 : best;
            ki = cut ? best : ki;
        }
        if (!cut && at >= target - 1e-6 && ki != failed &&
            (cut = plan_try_cut(p, ki, start_entry, start_key, err)) < 0)
            return cut; /* else 0: not a cut, the next keyframe */
        if (cut) {
            cur = p->ents[p->keys[ki]].timestamp;
            looked = 0;
        }
    }
    return 0;
}

/* The even plan's last wave (as many chunks as wave_slots, or all) cut
 * again from its first chunk's start, graded from short to long: the slots
 * that run it side by side then end one after another, and the stitch
 * takes each chunk as it ends instead of all of them at the end. */
static int plan_grade_last_wave(struct plan *p, int *start_entry, int *start_key, vr_err *err)
{
    struct remux_plan *out = p->out;
    int n = out->nchunks, slots = p->o->wave_slots;
    struct plan_wave w = { .n = slots < n ? slots : n };
    if (slots < 2 || w.n < 2)
        return 0;
    w.first = n - w.n;
    int64_t t0 = p->ents[p->keys[start_key[w.first]]].timestamp;
    w.mean_s = (plan_stream_end_s(p) - t0 * av_q2d(p->tb)) / w.n;
    if (!(w.mean_s > 0))
        return 0;
    out->nchunks = w.first + 1; /* its first chunk stays, open-ended until cut again */
    struct chunk_range *r = &out->chunks[w.first];
    r->end = (struct chunk_key){ 0 };
    r->has_end = 0;
    r->own_to = INT64_MAX;
    return plan_walk(p, start_key[w.first], &w, start_entry, start_key, err);
}

/* Walks the keyframes, cutting about every chunk_seconds, then grades the
 * last wave when asked (remux_plan_opts.wave_slots). */
static int plan_cuts(struct plan *p, vr_err *err)
{
    int *start_entry = calloc((size_t)p->nkeys + 1, sizeof *start_entry);
    int *start_key = calloc((size_t)p->nkeys + 1, sizeof *start_key);
    int rc = start_entry && start_key ? 0 : vr_err_set(err, VR_ENOMEM, "out of memory");
    if (rc == 0)
        rc = plan_walk(p, 0, NULL, start_entry, start_key, err);
    if (rc == 0)
        rc = plan_grade_last_wave(p, start_entry, start_key, err);
    if (rc == 0)
        plan_count_frames(p, start_entry);
    free(start_entry);
    free(start_key);
    return rc;
}

/* ---- an elastic plan's chunks: groups of pieces ---- */

/* A chunk's pre-roll, in its time base (0: none). */
static int64_t plan_preroll_span(const struct chunk_range *r)
{
    return r->preroll ? key_ts(&r->start) - key_ts(&r->first) : 0;
}

/* The piece to start a group at, once the one starting at piece `from` has
 * reached chunk_s at piece `even`: among the pieces PLAN_CUT_SLACK of
 * chunk_s either side, the one with the shortest pre-roll when it is
 * shorter than even's (its warm-up is the same, so the rest is what it
 * only drops), else even. */
static int plan_group_pick(const struct remux_plan *pl, int from, int even, double chunk_s)
{
    int best = even;
    int64_t span = plan_preroll_span(&pl->chunks[even]);
    for (int j = from + 1; j < pl->nchunks; j++) {
        double at = pl->chunks[j].start_s - pl->chunks[from].start_s;
        if (at > chunk_s * (1 + PLAN_CUT_SLACK) + 1e-6)
            break;
        if (at >= chunk_s * (1 - PLAN_CUT_SLACK) - 1e-6 &&
            plan_clearly_less(plan_preroll_span(&pl->chunks[j]), span)) {
            best = j;
            span = plan_preroll_span(&pl->chunks[j]);
        }
    }
    return best;
}

int remux_plan_groups(const struct remux_plan *pl, double chunk_s, int **starts)
{
    int n = 0;
    if (!(*starts = malloc(((size_t)pl->nchunks + 1) * sizeof **starts)))
        return VR_ENOMEM;
    for (int i = 0; i < pl->nchunks; i++)
        if (i == 0 || pl->chunks[i].start_s - pl->chunks[(*starts)[n - 1]].start_s >=
                          chunk_s - 1e-6) {
            if (i > 0)
                i = plan_group_pick(pl, (*starts)[n - 1], i, chunk_s);
            (*starts)[n++] = i;
        }
    (*starts)[n] = pl->nchunks;
    return n;
}

/* ---- the plan ---- */

void remux_plan_release(struct remux_plan *pl)
{
    if (!pl)
        return;
    free(pl->chunks);
    memset(pl, 0, sizeof *pl);
}

int remux_plan(const char *in, const struct remux_plan_opts *o, struct remux_plan *out,
               vr_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(o->chunk_seconds > 0))
        return vr_err_set(err, VR_EINVAL, "chunk length must be > 0 seconds");
    struct plan p = { .in = in, .o = o, .out = out };
    int rc = remux_open(in, &p.ic, &p.vs, err);
    if (rc < 0)
        return rc;
    p.st = p.ic->streams[p.vs];
    p.tb = p.st->time_base;
    if (!(p.pkt = av_packet_alloc()))
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    /* chunk 0 first, as a worker reads it: from the start, no seek */
    if (rc == 0)
        rc = plan_first(&p, err);
    if (rc == 0)
        rc = plan_index(&p, err);
    if (rc == 0)
        rc = plan_cuts(&p, err);
    if (rc == 0) {
        snprintf(out->method, sizeof out->method, "%s", p.method);
        out->duration_s = plan_stream_end_s(&p) -
                          key_ts(&out->chunks[0].start) * av_q2d(p.tb);
        out->bytes_read = p.ic->pb ? p.ic->pb->bytes_read : 0;
        if (src_fingerprint(p.ic, out->fingerprint, sizeof out->fingerprint) < 0)
            out->fingerprint[0] = '\0';
    } else {
        remux_plan_release(out);
    }
    plan_free(&p);
    return rc;
}

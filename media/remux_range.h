/*
 * remux_range.h - chunks as ranges of the source, read in place: the plan
 * (where each chunk starts and ends, from the container's own keyframe
 * index), the fingerprint that tells a worker the source is still the one
 * planned, and the reader that gives a worker exactly its range's packets.
 *
 * A chunk is named by packets, not bytes: the keyframe it starts at and the
 * keyframe the next chunk starts at, each by its (pts, dts) in the video
 * stream's time base as libavformat reports them. The plan checks every cut
 * with one exact seek of its own (avformat_seek_file to the index entry's
 * timestamp, min = max = ts), and a worker repeats that seek with a demuxer
 * opened the same way (default options: MP4 edit lists shift every pts, so
 * both sides must see the same), checks that the first packet is the one
 * planned and reads until the next chunk's keyframe. The packets of all
 * chunks, concatenated, are those of a full read: nothing is copied.
 *
 * Other streams (audio, subtitles, other video) go to the chunk whose
 * window [own_from, own_to) holds their timestamp, so each packet lands in
 * exactly one chunk output; the reader reads a little past its video end
 * for the other streams' packets that are stored after it.
 *
 * Pre-roll: a chunk that starts at an HEVC CRA (open GOP) starts reading
 * at the keyframe before its own (the GOP before it, from the index); any
 * chunk but the first, when the temporal filter needs warm-up frames,
 * starts as many keyframes back as it takes to decode `warmup` frames
 * before its cut (an all-intra source: `warmup` keyframes back), or at the
 * file's first. Those packets are decoded for references and, the last
 * `warmup` of them, to warm the filter up; none is output (remux.h says
 * the same of the copy split's pre-roll, and the two agree frame for
 * frame).
 *
 * Where the cuts go: about every chunk_seconds, at the keyframe within a
 * quarter of that length (either way) whose pre-roll drops the fewest
 * frames before its warm-up, when it drops fewer than the first keyframe
 * at or past that length; on a source with scene-cut keyframes an even
 * plan often cuts right after the longest GOP (issue 43). Sources with
 * even GOPs are cut as before.
 *
 * Where ranges cannot be read exactly (no keyframe index in the container,
 * a cut whose seek lands elsewhere, packets without timestamps) remux_plan
 * says why with VR_ENOTSUP and the caller takes the copy split (remux.h).
 */
#ifndef VR_REMUX_RANGE_H
#define VR_REMUX_RANGE_H

#include "chunk_range.h"
#include "vr_err.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct AVFormatContext;
struct AVPacket;

#define REMUX_FP_MAX CHUNK_FP_MAX
/* A cut while a range is read (queue/rq_cut.h, work stealing): another
 * thread asks the reader to stop at an earlier keyframe of the range, the
 * next chunk's start now; the reader takes it at its next packet unless it
 * has handed out a packet at or past it already (a video packet at or
 * after `end`, another stream's at or after own_to): then it refuses, and
 * reads on to its old end. Ask again for a later cut of the same range. */
enum { REMUX_CUT_NONE, REMUX_CUT_ASKED, REMUX_CUT_TAKEN, REMUX_CUT_REFUSED };
struct remux_cut {
    pthread_mutex_t mu;      /* guards the fields below */
    int state;               /* REMUX_CUT_* */
    struct chunk_key end;    /* the keyframe it now stops before */
    int64_t own_to;          /* the end of its window for the other streams */
    struct chunk_key taken;  /* the end of the last cut taken (state may say a later one
                              * was refused since); valid once one was taken */
    int taken_any;
    long long read;          /* the range's own video packets handed out so far (stored
                              * by the reader, atomically, outside mu) */
};

/* One chunk, what a worker reads, decodes and outputs: struct chunk_range
 * (common/chunk_range.h, shared with the task of queue/job.h). */

/* How to plan. */
struct remux_plan_opts {
    double chunk_seconds;    /* a cut at the first usable keyframe this long after the last */
    int warmup;              /* frames of history the temporal filter needs (0: none) */
    int wave_slots;          /* >1: the last wave's chunks (this many, the slots that run
                              * them side by side) graded from short to long around
                              * chunk_seconds, so they end one after another and the stitch
                              * keeps up with them; 0: every chunk about chunk_seconds */
};

struct remux_plan {
    int nchunks;
    struct chunk_range *chunks;  /* owned; remux_plan_release frees */
    long long frames;            /* the source's frames when every chunk's is known, else -1 */
    double duration_s;           /* of the video, from the index */
    char method[32];             /* where the keyframes came from: "mp4 sample tables",
                                  * "matroska cues" */
    long long bytes_read;        /* of the source, by the plan (index and checks) */
    char fingerprint[REMUX_FP_MAX]; /* a URL source's identity (http_io.h), "" for a file */
};

/* Plans `in` in chunks of about o->chunk_seconds. Reads the index and one
 * packet per cut, writes nothing. Returns 0, VR_ENOTSUP with the reason
 * when a range cannot be read exactly (take the copy split), or VR_E*
 * (VR_ENOENT, VR_EFORMAT: not a video, ...). *out is filled on success. */
int remux_plan(const char *in, const struct remux_plan_opts *o, struct remux_plan *out,
               vr_err *err);

/* Frees what remux_plan allocated; accepts a zeroed struct. */
void remux_plan_release(struct remux_plan *p);

/* An elastic plan's chunks (pl planned in pieces): whole pieces about
 * chunk_s long, each indexed by its first piece. A chunk starts at the
 * first piece chunk_s after the last chunk's start, or at a piece within a
 * quarter of chunk_s of it whose pre-roll is shorter (fewer frames decoded
 * only to be dropped). *starts (owned by the caller, free()) gets n+1
 * entries, the last the pieces' count. Returns n, or VR_ENOMEM. */
int remux_plan_groups(const struct remux_plan *pl, double chunk_s, int **starts);

/* ---- fingerprint ---- */

/* The source's identity as a worker can check it: inode, size and mtime
 * (ns) of the open file `fd` ("ino:size:mtime_s.mtime_ns"; the demuxer is
 * checked by the reader, chunk_range.demuxer). The device number is left
 * out: it differs between hosts that mount the same NFS export. Returns 0
 * or VR_EIO. */
int remux_fingerprint(int fd, char *out, size_t n, vr_err *err);

/* ---- reading a range ---- */

struct remux_reader;

/* Reads r's range of ic (opened by the caller, default options, nothing
 * read yet): checks the stream and time base, seeks, checks the first
 * packet and reads the whole pre-roll ahead (at most REMUX_GOP_MAX_*,
 * remux_gop.h). ic stays the caller's. Returns 0 or VR_EFORMAT ("the
 * source changed: ...") naming `path`. */
int remux_reader_open(struct AVFormatContext *ic, const struct chunk_range *r, const char *path,
                      struct remux_reader **out, vr_err *err);

/* The next packet of the range, in file order: the range's video packets
 * (pre-roll first) and the other streams' packets it owns. Returns 1 with
 * pkt filled (the caller unrefs it), 0 at the range's end, or VR_E* (a
 * read error, the next chunk's keyframe not where the plan put it). */
int remux_reader_next(struct remux_reader *rd, struct AVPacket *pkt, vr_err *err);

/* With a pre-roll: decoded frames with pts below *until are pre-roll (not
 * output), and of those, frames at or after *warm_from warm the filter up.
 * Without one: *until = INT64_MIN. Stream time base. Valid after open. */
void remux_reader_preroll(const struct remux_reader *rd, int64_t *until, int64_t *warm_from);

/* Whether the range stops before the end of the file: planned so, or cut
 * since (struct remux_cut). */
int remux_reader_has_end(const struct remux_reader *rd);

/* Video packets handed out so far (pre-roll included). */
long long remux_reader_video_packets(const struct remux_reader *rd);

/* Frees; accepts NULL and clears the pointer. */
void remux_reader_free(struct remux_reader **rd);

#endif

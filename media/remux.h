/*
 * remux.h - split a video into chunks at keyframes and stitch processed
 * chunks back, both by stream copy through libavformat (no re-encode).
 *
 * Split: every video packet of the source goes into exactly one chunk file
 * (Matroska, video only); a new chunk starts at the first keyframe at least
 * `chunk_seconds` after the current chunk's start. Audio stays in the source.
 *
 * Stitch: the chunks' video packets, in chunk order, with the SOURCE's
 * presentation timestamps (the k-th frame of the output gets the k-th
 * timestamp of the source, whatever timestamps the chunk files carry), plus
 * the source's other streams by stream copy (audio, subtitles, other video,
 * data: the streams `vr-worker process` copies, vio_streams.h), the
 * container and stream metadata and the video stream's side data (stereo,
 * spherical, rotation). Then the frame count and every frame's time are
 * checked against the source.
 *
 * A source whose video ends well before the duration its container
 * declares is refused by the split with the words the decoder uses
 * ("truncated: ..."), so the fleet and `process` refuse it alike.
 *
 * Open GOPs: the leading pictures after an HEVC CRA reference the GOP
 * before it. A chunk that starts at a CRA therefore begins with a pre-roll,
 * a copy of that previous GOP (from its keyframe on). The worker decodes it
 * for the references and outputs only frames at or after `preroll_until`.
 * Warm-up: the temporal filter looks at a few frames before each one, so
 * with it on every chunk after the first gets a pre-roll too, of as many
 * GOPs before the cut as hold that many frames (one GOP of a long-GOP
 * source, five of an all-intra one), and the worker segments its last
 * frames (from `warmup_from`) without outputting them.
 * Clean cuts (IDR, BLA, remux_clean_cut) need no pre-roll. H.264
 * open-GOP keyframes are not cut at all: fewer, longer chunks. The
 * per-chunk frame count check guards every case.
 */
#ifndef VR_REMUX_H
#define VR_REMUX_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#define REMUX_MAX_CHUNKS 100000 /* = JOB_MAX_CHUNKS (queue/job.h), checked where both meet */

struct AVCodecParameters;
struct AVPacket;

/* 1 when the video packet is a keyframe a chunk can start at: HEVC IDR/BLA,
 * H.264 IDR (not an open-GOP CRA or recovery-point I picture), any keyframe
 * of other codecs. Reads only the packet's NAL headers. */
int remux_clean_cut(const struct AVCodecParameters *par, const struct AVPacket *pkt);

/* 1 when the packet is an HEVC CRA: a cut there needs the GOP before it as
 * a pre-roll. libavcodec drops the leading pictures of the first CRA it
 * decodes, so the pre-roll decodes cleanly. H.264 recovery points are not
 * cut at all: its decoder reports their leading pictures' missing
 * references as errors. */
int remux_preroll_cut(const struct AVCodecParameters *par, const struct AVPacket *pkt);

/* The most leading pictures a keyframe that is not a clean cut may have
 * (a pre-roll starting there leaves them out): the stream's reorder depth,
 * or REMUX_LEADING_MAX when it is not known. */
#define REMUX_LEADING_MAX 16
int remux_leading_max(const struct AVCodecParameters *par);

/* What submit needs to know about an input before enqueueing it. */
struct remux_info {
    int width, height;
    double fps;            /* average frame rate, 0 when unknown */
    double duration_s;     /* container duration, 0 when unknown */
    long long frames_est;  /* nb_frames or duration*fps, 0 when unknown */
    int has_audio;
    int streams;           /* every stream of the file (video, audio, subtitles, data) */
    char codec[32];
    int still;             /* a still image (an image demuxer: jpeg_pipe, png_pipe, image2...) */
};

/* Opens `in` and finds its video stream. Errors: VR_ENOENT (missing file),
 * VR_EFORMAT (not a media file, or no video stream), with the path named. */
int remux_probe(const char *in, struct remux_info *info, vr_err *err);

struct remux_chunk {
    long long first_frame; /* index of its first frame in presentation order */
    long long frames;      /* video packets (= frames) in it, not counting the pre-roll */
    int preroll_frames;    /* packets of the GOPs before it, at the file's head (0: none) */
    long long preroll_until; /* with a pre-roll: decoded frames with pts (ms, the chunk
                              * file's timeline) below this are references only */
    long long warmup_from; /* with a pre-roll: its frames from this pts (ms) on warm the
                            * temporal filter up (LLONG_MAX: none) */
    double start_s;        /* source pts of its first keyframe, seconds */
    double duration_s;
    long long bytes;       /* packet payload bytes */
};

struct remux_split {
    int nchunks;
    struct remux_chunk *chunks;  /* owned; remux_split_release frees */
    long long frames;            /* total video packets of the source */
    double duration_s;
};

/* How to split, and who hears of each chunk as soon as its file exists. */
struct remux_split_opts {
    double chunk_seconds;  /* a cut at the first usable keyframe this long after the last */
    int warmup;            /* frames of history the temporal filter needs (0: none) */
    /* Called once per chunk, in order, right after its file is committed and
     * before the split reads on, so the caller can queue it while the rest
     * of the source is still being cut (a long input streams). A return < 0
     * stops the split with that error (a cancelled job, a queue gone). */
    int (*chunk_ready)(void *ctx, int idx, const struct remux_chunk *c, vr_err *err);
    void *ctx;
};

/* Splits `in` into dir/NNNNN.mkv (00000, 00001, ...), Matroska (pts in ms).
 * With o->warmup > 0 every chunk after the first carries the GOPs before it
 * that hold `warmup` frames as a pre-roll whose last `warmup` frames warm the filter up
 * (remux_chunk.warmup_from), so each chunk's mattes equal a whole run's.
 * Each file is written under a temporary name, fsync'd and renamed, then
 * handed to o->chunk_ready. Returns 0 or VR_E* (a full disk is VR_ENOSPC
 * naming the file). *out is filled on success. */
int remux_split(const char *in, const char *dir, const struct remux_split_opts *o,
                struct remux_split *out, vr_err *err);

/* Frees what remux_split allocated; accepts a zeroed struct. */
void remux_split_release(struct remux_split *s);

/* Path of chunk i in dir ("dir/00012.mkv"); returns 0 or VR_EINVAL. */
int remux_chunk_name(const char *dir, int i, char *out, size_t n, vr_err *err);

/* 0 when the stitch can write `path`'s container (by its extension: .mkv,
 * .mp4, .mov), else VR_ENOTSUP with a message naming the file (VR_EINVAL,
 * "is a directory", for a directory or a name ending in /). Submit and
 * run check this before a job is queued. */
int remux_out_check(const char *path, vr_err *err);

/* Counts the video packets of `path` and its video duration in seconds
 * (last pts + one frame - first pts). */
int remux_count(const char *path, long long *frames, double *duration_s, vr_err *err);

/* the stitch, declared in its own header (remux_stitch.c); included here
 * so that a caller of remux.h has it */
#include "remux_stitch.h"

#endif

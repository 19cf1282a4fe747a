/*
 * chunk_range.h - a chunk read in place: the range of the source it
 * covers. One type for the planner (media/remux_plan.c makes them), the
 * task (queue/job.c writes and reads its numbers as JSON), the controller
 * (ctl_range.c, ctl_cut.c) and the worker's reader (media/remux_reader.c);
 * it lives here, the lowest room, so that queue/ and media/ share it
 * without copying it field by field. What the numbers mean, and how a
 * range is planned and read: media/remux_range.h.
 */
#ifndef VR_CHUNK_RANGE_H
#define VR_CHUNK_RANGE_H

#include <stdint.h>

#define CHUNK_FP_MAX 96          /* a fingerprint (media/remux_range.h), with its NUL */

/* One video packet as both the planner and a worker see it (stream time
 * base; INT64_MIN where libavformat gives none). */
struct chunk_key {
    int64_t pts, dts;
};

struct remux_cut; /* media/remux_range.h: a cut asked while the range is read */

struct chunk_range {
    int64_t seek;            /* index timestamp to seek to (stream time base); INT64_MIN:
                              * read from the start of the file, no seek */
    struct chunk_key first;  /* the first video packet after the seek: the pre-roll's
                              * keyframe, else the chunk's own */
    struct chunk_key start;  /* the chunk's own first keyframe */
    struct chunk_key end;    /* the next chunk's first keyframe (not read); unused when
                              * !has_end */
    int has_end;             /* 0: the chunk reads to the end of the file */
    int preroll;             /* 1: packets from `first` up to `start` are a pre-roll */
    int warmup;              /* its last `warmup` frames warm the temporal filter up: the
                              * filter's depth, which the pre-roll holds (or all frames
                              * before the cut, when fewer) */
    int64_t own_from, own_to;/* other streams' packets with a time in [own_from, own_to)
                              * (video time base) are this chunk's; INT64_MIN / INT64_MAX:
                              * open ends */
    long long frames;        /* frames the chunk outputs when the index says (MP4 sample
                              * tables), -1 when it cannot (Matroska Cues hold keyframes);
                              * not in a task (its own `frames` says) */
    long long frames_est;    /* frames for placing a cut (controller/ctl_cut.c): `frames`
                              * where known, else its time span at the stream's frame rate:
                              * exact for a constant rate; for a variable one an estimate,
                              * which only moves a cut off the middle (never checked
                              * against what a worker writes); not in a task */
    char demuxer[32];        /* the demuxer's name (ic->iformat->name), checked by the reader */
    int vs;                  /* the video stream's index, checked by the reader */
    int tb_num, tb_den;      /* its time base, checked by the reader */
    double start_s;          /* its start in seconds from the first frame (logs, events);
                              * not in a task */
    char fingerprint[CHUNK_FP_MAX]; /* the source as planned: a URL's identity (http_io.h),
                              * which the reader checks; a file's remux_fingerprint, which
                              * the worker checks by its descriptor before (and clears for
                              * the reader) */
    struct remux_cut *cut;   /* where a cut is asked while it is read; NULL: none (not in
                              * a task) */
};

#endif

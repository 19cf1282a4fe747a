/*
 * remux_io.h - what the split and the stitch share inside media/: libav
 * error mapping, opening an input at its video stream, an output written
 * under a temporary name and published atomically (storage_temp/commit),
 * and a file's sorted video timestamps. Not for use outside media/.
 */
#ifndef VR_REMUX_IO_H
#define VR_REMUX_IO_H

#include "storage.h"
#include "vr_err.h"

#include <libavformat/avformat.h>

/* A libav error as VR_E* with what was being done and to which path. */
int remux_averr(int ret, const char *what, const char *path, vr_err *err);

/* Opens `path` and finds its best video stream; a codec nothing here
 * decodes is refused (VR_ENOTSUP) now rather than in every worker later. */
int remux_open(const char *path, AVFormatContext **ic, int *vs, vr_err *err);

/* remux_open for a file only read for its packets (a chunk output after
 * the first, a stitch's output read back): a Matroska file is not probed
 * (avformat_find_stream_info), so its codec parameters are only the
 * header's (no pixel format, no video_delay) and its best video stream is
 * chosen without frame counts. Other containers are probed as before. */
int remux_open_made(const char *path, AVFormatContext **ic, int *vs, vr_err *err);

/* A packet's presentation time, else its decode time. */
static inline int64_t remux_ts(const AVPacket *p)
{
    return p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
}

/* An output under a temporary name beside `path` until remux_out_finish. */
#define REMUX_MAX_REORDER 16    /* libavformat's MAX_REORDER_DELAY */

struct remux_out {
    AVFormatContext *oc;
    char tmp[STORAGE_PATH_MAX], path[STORAGE_PATH_MAX];
    int fd;                      /* the temporary file, open while tmp[0] (else -1) */
    const struct storage_publish *pub; /* how remux_out_commit publishes (NULL: storage_commit) */
    /* remux_out_write: the last pts of stream 0, lowest first, from which a
     * packet without a dts gets one (remux_out_open fills it with NOPTS) */
    int64_t pts_buf[REMUX_MAX_REORDER + 1];
};

/* Opens o for writing with copies of the streams `copy` of ic; `fmt` names
 * the muxer (NULL: from the extension of path). */
int remux_out_open(struct remux_out *o, const char *path, const char *fmt, AVFormatContext *ic,
                   const int *copy, int ncopy, vr_err *err);

/* Writes pkt (time base tb) as stream 0 on a timeline starting at `base`;
 * *pts gets the pts written (o's time base). pkt's timestamps change. */
int remux_out_write(struct remux_out *o, AVPacket *pkt, int64_t base, AVRational tb,
                    int64_t *pts, vr_err *err);

/* Starts the writeback of what o holds so far (sync_file_range, not
 * waiting): a stitch of gigabytes then leaves little to its final fsync. */
void remux_out_write_behind(struct remux_out *o);

/* Trailer and close; the file stays under its temporary name (o->tmp),
 * to be checked before remux_out_commit (or dropped by remux_out_abort). */
int remux_out_close(struct remux_out *o, vr_err *err);

/* fsync and rename a closed output into place. */
int remux_out_commit(struct remux_out *o, vr_err *err);

/* remux_out_close, then remux_out_commit. */
int remux_out_finish(struct remux_out *o, vr_err *err);

/* Drops an unfinished output and its temporary file; safe to repeat. */
void remux_out_abort(struct remux_out *o);

/* Every video pts of `path`, sorted (malloc'd), with the stream's time base
 * and the duration of one frame (0 when the packets carry none). */
int remux_pts_list(const char *path, int64_t **pts, long long *n, AVRational *tb,
                   int64_t *frame_dur, vr_err *err);

/* The same, the file opened with remux_open_made. */
int remux_pts_list_made(const char *path, int64_t **pts, long long *n, AVRational *tb,
                        int64_t *frame_dur, vr_err *err);

/* Position of v in the sorted array a (binary search; -1 when absent). */
long long remux_rank(const int64_t *a, long long n, int64_t v);

/* For a copied chunk whose matte holds cn < frames frames (its decoder
 * dropped damaged ones): place[j] gets the position in the chunk's range
 * of the matte's j-th frame (cpts sorted, time base ctb), found by its time
 * in the chunk's input copy `input`; VR_EFORMAT when a frame is not one of
 * the input's (remux_place.c). */
int remux_place_by_input(const char *input, const int64_t *cpts, long long cn, AVRational ctb,
                         long long frames, long long *place, vr_err *err);

#endif

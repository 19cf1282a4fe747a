/*
 * remux_ts.h - the exact source timestamps of one chunk output, written by
 * the worker beside it (<output>.ts) and read by the stitch, so that the
 * stitch needs no source: a Matroska chunk output keeps times in ms, the
 * source may count in 1/90000 s or 1/48000 s.
 *
 * Stream 0 is the video: the pts of every frame the chunk output holds, in
 * presentation order (sorted), in the source video's time base. Stream k > 0
 * is output stream k (a stream copied from the source): every packet's pts,
 * dts and duration in its source stream's time base, in the order the
 * chunk output holds them.
 *
 * The file is small text ("vrseg-ts 1", the source video's display matrix
 * when it has one, then per stream a header line and one line per packet),
 * bounded when read (REMUX_TS_MAX_*).
 */
#ifndef VR_REMUX_TS_H
#define VR_REMUX_TS_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#define REMUX_TS_MAX_STREAMS 64

/* 0 when a source of `streams` streams fits a chunk's sidecar; else
 * VR_ENOTSUP naming `path`, the count and the limit: the fleet refuses it
 * at submit and when the controller takes the job, not at the stitch after
 * all the work (issue 41, finding 11). */
int remux_ts_streams_check(const char *path, int streams, vr_err *err);
#define REMUX_TS_MAX_PACKETS 10000000LL   /* per stream: 46 h at 60 fps */

struct remux_ts_stream {
    int tb_num, tb_den;       /* the source stream's time base */
    long long n;
    int64_t *pts, *dts, *dur; /* [n] each, owned; stream 0: dts = dur = NULL */
};

struct remux_ts {
    int nstreams;
    struct remux_ts_stream *s; /* [nstreams], owned */
    int has_matrix;            /* the source video's display matrix (rotation), which a
                                * Matroska chunk output cannot hold */
    int32_t matrix[9];
};

/* Writes t to path under a temporary name, fsync'd and renamed (durable
 * before the chunk output it describes is renamed into place). 0 or VR_E*
 * (a full disk is VR_ENOSPC naming the file). */
int remux_ts_write(const char *path, const struct remux_ts *t, vr_err *err);

/* Reads and checks path (format, limits, stream 0 strictly increasing).
 * 0 or VR_ENOENT / VR_EFORMAT naming the file and line. */
int remux_ts_read(const char *path, struct remux_ts *t, vr_err *err);

/* Frees what _read or a writer allocated; accepts a zeroed struct. */
void remux_ts_release(struct remux_ts *t);

/* The sidecar's name for a chunk output: "<out>.ts". 0 or VR_EINVAL. */
int remux_ts_name(const char *out, char *buf, size_t n, vr_err *err);

#endif

/*
 * src_io.h - a source opened for libavformat by name: a file (by path, as
 * libav opens it) or an object of a store (an http(s):// or s3:// URL,
 * http_io.h) behind an AVIOContext with read-ahead. The planner, the copy
 * split and a worker's decoder all open their source here, so a URL is
 * read by ranges everywhere a path is read by seeks.
 *
 * Read-ahead: after a seek a read fetches SRC_IO_BLOCK_MIN bytes, each
 * following sequential read twice the last, up to SRC_IO_BLOCK_MAX (an 8K
 * HEVC at 150 Mbit/s is ~19 MB/s: a full block is most of a second of
 * video, one request), so the plan's one-packet reads after each seek
 * stay small and a chunk's long read is a few large requests.
 *
 * A read that fails after its retries leaves its message (HTTP status,
 * object) for the thread that read it: src_io_take_error hands it to
 * whoever turns libav's AVERROR into a message.
 */
#ifndef VR_SRC_IO_H
#define VR_SRC_IO_H

#include "vr_err.h"

#include <stddef.h>

struct AVFormatContext;

#define SRC_IO_BLOCK_MIN (256 << 10)
#define SRC_IO_BLOCK_MAX (16 << 20)

/* avformat_open_input of path (a file or a URL, default options). For a
 * URL with want_fp, the object must be the one with that fingerprint
 * (http_obj_fp). Returns libav's code (0, or < 0: the message, when the
 * store said more than libav, waits in src_io_take_error). */
int src_open_input(struct AVFormatContext **ic, const char *path, const char *want_fp);

/* avformat_close_input, and the store's object and read-ahead with it.
 * Accepts NULL and *ic NULL. */
void src_close_input(struct AVFormatContext **ic);

/* The fingerprint of a URL source opened by src_open_input into fp; 0, or
 * -1 for a file. */
int src_fingerprint(const struct AVFormatContext *ic, char *fp, size_t n);

/* 1 and err filled when this thread's last store read failed with a
 * message libav could not carry (cleared); 0 otherwise. */
int src_io_take_error(vr_err *err);

#endif

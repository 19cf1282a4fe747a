/*
 * http_io.h - one object of an HTTP(S) or S3 store, read by byte ranges:
 * the source of a job that no shared filesystem holds (README.md, "A fleet
 * without shared storage").
 *
 * Every read is a GET with a Range header on one kept-alive connection.
 * 5xx, 429, connection resets, timeouts and a response shorter than the
 * range asked are retried with a doubling back-off (http_io_configure); a
 * short response is never handed on. The object's identity (size and ETag,
 * else Last-Modified) is pinned by the first response and checked on every
 * later one: an object replaced mid-job fails the read with "changed"
 * (VR_EFORMAT), as the local path's fingerprint does for a file.
 *
 * Where a request may go: http, https (and s3:// mapped to one), for the
 * URL and each redirect; every address libcurl connects to passes the
 * address rule (net_addr.h) unless the operator allowed private addresses.
 * Messages name the object without its query string (a presigned URL's
 * signature) and without user info; s3:// credentials come from the
 * environment or a 0600 file (http_s3.h), never from a job.
 */
#ifndef VR_HTTP_IO_H
#define VR_HTTP_IO_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#define HTTP_IO_FP_MAX 96     /* a fingerprint's room, its NUL included */

/* Process-wide settings, set once at start (before any thread reads). */
struct http_io_cfg {
    int allow_private;        /* --storage-allow-private: loopback, private and link-local
                               * addresses may be reached */
    int tries;                /* tries of one range in all (>= 1) */
    int backoff_ms;           /* the first wait between tries, doubled each time */
};
void http_io_configure(const struct http_io_cfg *cfg);

/* The operator's leave to reach private addresses (--storage-allow-private),
 * the other settings kept. */
void http_io_configure_private(int allow);

/* The settings in force (a write, http_put.h, follows the same). */
struct http_io_cfg http_io_settings(void);

/* After try t of a request failed with err (a retryable failure): VR_EIO
 * "... (after t tries)" when the tries are spent, else 0 after waiting
 * *wait ms (logged), *wait doubled up to 10 s. Start *wait at the
 * settings' backoff_ms. */
int http_io_retry_wait(int t, long *wait, vr_err *err);

/* libcurl's global set-up, once per process (any thread). */
void http_io_global_init(void);

/* url as it may be shown: scheme, host and path, no user info, no query
 * or fragment. */
void http_io_shown(const char *url, char *buf, size_t n);

struct http_obj;

/* Opens url: one request for its first byte learns its size and pins its
 * identity. With want_fp (a fingerprint from http_obj_fp of an earlier
 * open, the plan's) the object must still be that one, else VR_EFORMAT
 * "changed". Returns 0 and *out (http_obj_free), or VR_E* naming the
 * object and the HTTP status. */
int http_obj_open(const char *url, const char *want_fp, struct http_obj **out, vr_err *err);

/* The object's size in bytes. */
int64_t http_obj_size(const struct http_obj *o);

/* "http:<size>:<etag or last-modified>": the object's identity. */
const char *http_obj_fp(const struct http_obj *o);

/* Reads exactly len bytes at off into buf (off + len <= size), retrying
 * as the file's comment says. Returns 0 or VR_E*. */
int http_obj_read(struct http_obj *o, int64_t off, uint8_t *buf, size_t len, vr_err *err);

/* Requests made and tries retried so far (logs, tests). */
void http_obj_counts(const struct http_obj *o, long long *requests, long long *retries);

/* Frees; accepts NULL and clears the pointer. */
void http_obj_free(struct http_obj **o);

#endif

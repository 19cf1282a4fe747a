/*
 * rq_warm.h - what a host's workers last decoded, remembered in Redis so
 * that a worker starting later (a fresh fleet, a replaced worker) can warm
 * its decoder for it before it takes a chunk (issue 43). One hash a host,
 * vr:warm:<host> {source, format, ms}, written by the worker when a chunk's
 * input opened with a format other than the one remembered, read once at
 * start. A hint, never an order: the reader checks the source lies under
 * its input root and still has that format before it opens anything.
 */
#ifndef VR_RQ_WARM_H
#define VR_RQ_WARM_H

#include "rq.h"

#define RQ_WARM_PREFIX "vr:warm:" /* + host: hash {source, format, ms} */
#define RQ_WARM_TTL_S  (30 * 24 * 3600) /* a host unused for a month forgets */
#define RQ_WARM_FORMAT_MAX 64   /* "hevc:8192x4096:yuv420p" */
#define RQ_WARM_SOURCE_MAX 4096

/* Whether `host` may name a key: 1..64 of [A-Za-z0-9._-]. */
int rq_warm_host_valid(const char *host);

/* Whether `fmt` may be a stream format as the worker writes it
 * ("codec:WxH:pix_fmt", pipeline_format): 1..63 of [a-z0-9_:]. */
int rq_warm_format_valid(const char *fmt);

/* Remembers that `host`'s workers last decoded `source` (an absolute path)
 * of format `fmt`. Returns 0, VR_EINVAL for a bad host, source or format,
 * or the Redis error. */
int rq_warm_remember(struct rq *q, const char *host, const char *source, const char *fmt,
                     vr_err *err);

/* Reads what `host` remembers: 1 found (source and fmt filled, both
 * checked: an absolute path without control characters, a valid format),
 * 0 nothing (or a record that fails the checks: said in err, code 0), <0 a
 * Redis error. */
int rq_warm_recall(struct rq *q, const char *host, char *source, size_t ns, char *fmt,
                   size_t nf, vr_err *err);

#endif

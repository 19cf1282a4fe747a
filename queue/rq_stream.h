/*
 * rq_stream.h - the stream verbs of rq_stream.c: one bounded entry
 * (struct rq_msg), the consumer groups, reads (one stream, or several at
 * once), reclaims and acknowledgements, and the wait for a Redis that
 * answers (rq_ready). rq.h includes it.
 */
#ifndef VR_RQ_STREAM_H
#define VR_RQ_STREAM_H

#include "rq.h"

/* ---- streams ---- */

/* One stream entry, bounded: fields point into buf. */
struct rq_msg {
    char stream[64];
    char id[RQ_ID_MAX];
    int nfields;
    const char *key[RQ_MAX_FIELDS];
    const char *val[RQ_MAX_FIELDS];
    char *buf;            /* owned; rq_msg_release frees it */
};

/* Frees m->buf and zeroes *m; accepts a zeroed or released msg. */
void rq_msg_release(struct rq_msg *m);

/* The value of field `k`, or NULL. */
const char *rq_msg_get(const struct rq_msg *m, const char *k);

/* XGROUP CREATE stream group 0 MKSTREAM; an existing group is success. */
int rq_group_ensure(struct rq *q, const char *stream, const char *group,
                    vr_err *err);

/* What a daemon (controller, worker) does before its loop, and again when
 * Redis comes back empty: connects to `url` when *q is NULL, then waits,
 * backing off, until Redis answers and, when `group` is NULL (the
 * controller), has every stream group and may not evict keys
 * (rq_check_noeviction). A worker (group RQ_G_WORKERS) only waits for an
 * answer: its ACL user may neither create groups nor read the server's
 * config, and its reads wait on NOGROUP until a controller made them. A Redis
 * that is down is waited for (logged once); one that can never work (a bad
 * address, an evicting maxmemory-policy, a refused password or ACL) is
 * logged and returns its error at once. Returns 0, that error, or
 * VR_ECANCELED when *stop became non-zero. */
int rq_ready(struct rq **q, const char *url, const char *group,
             const volatile sig_atomic_t *stop, vr_err *err);

/* XREADGROUP of at most one new entry of streams[0] (nstreams must be 1:
 * a read of several delivers one entry from each, rq_read_all), blocking
 * up to block_ms (kept below the command timeout). Returns 1 with *m
 * filled (release it), 0 when nothing came, <0 error. An entry that breaks
 * the limits is acknowledged, logged and skipped (0), so one bad message
 * cannot wedge a consumer. */
int rq_read(struct rq *q, const char *group, const char *consumer,
            const char *const *streams, int nstreams, int block_ms,
            struct rq_msg *m, vr_err *err);

/* The same over 1..4 streams at once: each stream that has a new entry
 * delivers one (XREADGROUP's COUNT is per stream), into out[0..n-1]
 * (release each). Returns n, 0 when nothing came, <0 error. */
int rq_read_all(struct rq *q, const char *group, const char *consumer,
                const char *const *streams, int nstreams, int block_ms,
                struct rq_msg *out, vr_err *err);

/* XAUTOCLAIM one entry of `stream` idle for at least min_idle_ms to
 * `consumer`: 1 with *m, 0 none, <0 error. (Jobs a dead controller held.) */
int rq_autoclaim(struct rq *q, const char *stream, const char *group,
                 const char *consumer, long long min_idle_ms,
                 struct rq_msg *m, vr_err *err);

/* XACK. */
int rq_ack(struct rq *q, const char *stream, const char *group, const char *id,
           vr_err *err);

#endif

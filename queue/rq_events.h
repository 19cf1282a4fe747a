/*
 * rq_events.h - reading a job's event log (vr:events:<id>, written by
 * rq_event) and the one server condition that stalls every job without an
 * error anywhere in Redis: a full maxmemory, under which no write (commit,
 * heartbeat, event) is accepted. `vrctl events`, `status` and `watch` show
 * both, so a stalled job reads as stalled, with its cause.
 */
#ifndef VR_RQ_EVENTS_H
#define VR_RQ_EVENTS_H

#include "rq.h"

/* One event. chunk and worker are read from the text ("chunk 3: worker
 * host:cpu:1a2b stopped renewing ..."), so every writer's lines have them. */
struct rq_event_entry {
    char id[RQ_ID_MAX];     /* stream id: "<ms>-<seq>" */
    long long ms;           /* wall clock of the XADD */
    int chunk;              /* -1 when the event names no chunk */
    char worker[128];       /* "" when it names no worker */
    char msg[512];
};

/* Events of job `id` into out (at most max): those after stream id `after`
 * when it is non-NULL (for --follow), else the last `max` ones; oldest
 * first. Returns the count or <0. */
int rq_events_read(struct rq *q, const char *id, const char *after, struct rq_event_entry *out,
                   int max, vr_err *err);

/* Waits up to ms for an event of job `id` logged after stream id `after`
 * (n bytes, in and out: "" the first time, then events from now on; set
 * to the newest one that came), by XREAD BLOCK. Returns 1 when one came, 0
 * when none did in time, <0 on error (VR_EINVAL: this user may not XREAD;
 * the caller sleeps instead). */
int rq_events_wait(struct rq *q, const char *id, char *after, size_t n, int ms, vr_err *err);

/* Whether Redis refuses writes for lack of memory (used_memory at or over
 * maxmemory): 1 with a sentence for the user in buf, 0 when not (buf ""),
 * <0 when INFO fails. */
int rq_memory_full(struct rq *q, char *buf, size_t n, vr_err *err);

#endif

/*
 * rq_lease.h - leases on the controller's own clock (issue 41, finding 7).
 *
 * Why: a worker's user may XREADGROUP, and Redis ACLs cannot refuse a
 * command's arguments, so a worker can re-read its pending entries (ID 0:
 * their idle time drops to 0), read under another worker's consumer name,
 * read with NOACK (the entry is delivered, never pending) or take COUNT N
 * entries under one claim. The stream's idle time is therefore not a lease.
 * The lease is the chunk record's `lease_by` (the claim and entry, as
 * "consumer/id") and `lease_ms` (Redis's clock), written only by the
 * controller: when it first sees the entry pending under that claim, and
 * on each start or renew report that proves the claim (rq_claim.h). The
 * scripts here are the lease's own, apart from rq_scripts.c's.
 */
#ifndef VR_RQ_LEASE_H
#define VR_RQ_LEASE_H

#include "rq.h"
#include "rq_fleet.h"

/* Why an entry is taken back. */
enum rq_lapse {
    RQ_LAPSE_NONE = 0,
    RQ_LAPSE_LEASE,  /* no proven start or renew for a lease */
    RQ_LAPSE_STALE,  /* not the chunk's current entry: nothing can commit it */
    RQ_LAPSE_EXTRA,  /* a second entry under one claim (COUNT N) */
};

/* Stamps the lease of chunk job/idx: its record's entry is `id` and
 * `consumer` holds it (XPENDING). The controller calls it after a start or
 * renew report proved its claim. `frames` (the attempt's frames so far:
 * 0 at its start, the renew report's; -1 not said) goes into the record's
 * `lease_frames`, which a death of the attempt keeps as its lost work
 * (rq_scripts.c, FAIL_LUA). Returns 1 stamped, 0 not held, <0. */
int rq_lease_stamp(struct rq *q, const char *stream, const char *consumer, const char *id,
                   const char *job, int idx, long long frames, vr_err *err);

/* Every entry of `stream` pending to the workers' group whose lease
 * lapsed, up to max, into out, with why[i] saying why; an entry seen under
 * a claim for the first time is stamped now. Returns the count or <0. */
int rq_leases_lapsed(struct rq *q, const char *stream, long long lease_ms,
                     struct rq_pending *out, enum rq_lapse *why, int max, vr_err *err);

/* Entries of `stream` delivered (at or before the group's last-delivered
 * id) but pending to no one, while their chunk's record still names them
 * and the chunk is unfinished in a live job: read with NOACK. Each such
 * chunk gets a fresh entry now. Looks at up to 100 entries after *cursor
 * (RQ_ID_MAX bytes, "0-0" at first), which moves on. Returns the chunks
 * enqueued again, or <0. */
int rq_noack_sweep(struct rq *q, const char *stream, char *cursor, vr_err *err);

#endif

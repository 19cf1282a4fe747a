/*
 * rq_pause.h - the fleet-wide pause on storage errors (issue 42, finding 2):
 * a storage failure seen by several workers at once is the storage's, not
 * theirs nor the chunks': the queue pauses (every worker stops taking work)
 * for a backoff that doubles while it goes on, instead of each worker
 * failing chunk after chunk and quarantining itself alone.
 */
#ifndef VR_RQ_PAUSE_H
#define VR_RQ_PAUSE_H

#include "rq.h"

#define RQ_PAUSE         "vr:pause"          /* hash reason, workers, until_ms; expires at its end */
#define RQ_PAUSE_SEEN    "vr:pause:seen"     /* sorted set: workers by their last storage fault (ms) */
#define RQ_PAUSE_BACKOFF "vr:pause:backoff"  /* the last pause's length; expires after 4 of them */

#define RQ_PAUSE_QUORUM    2      /* distinct workers ... */
#define RQ_PAUSE_WINDOW_MS 10000  /* ... within this long (Redis's clock) */
#define RQ_PAUSE_FIRST_MS  2000   /* the first pause; each next one while it goes on doubles */
#define RQ_PAUSE_MAX_MS    60000

/* Notes that worker `worker` failed a chunk on the shared storage with
 * `reason` (one script, on Redis's clock). When RQ_PAUSE_QUORUM workers
 * did so within the window and the fleet is not paused yet, pauses it:
 * returns the pause's length in ms (> 0) and the workers seen, space
 * separated, in workers; 0 when it did not pause; <0 on error. */
long long rq_pause_note(struct rq *q, const char *worker, const char *reason, char *workers,
                        size_t n, vr_err *err);

/* Whether the fleet is paused now: 1 with its reason in buf, 0 not, <0
 * error (the caller goes on as if not paused). */
int rq_pause_get(struct rq *q, char *buf, size_t n, vr_err *err);

#endif

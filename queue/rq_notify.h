/*
 * rq_notify.h - job-end webhooks as Redis keeps them: the deliveries the
 * job-end scripts schedule, the claim a controller's delivery thread
 * (controller/ctl_notify.c) takes on one, and the record of each round of
 * POSTs.
 *
 * Where the URLs come from: the job hash's `notify` field, one URL a line.
 * The submit script sets it to the spec's `notify` (vrctl submit --notify);
 * the controller that starts the job rewrites it with the URLs it checked:
 * the spec's (when the spec is valid) and its own --notify. A job that ends
 * with a non-empty `notify` gets a delivery, scheduled by the SAME script
 * that ends it (rq_jobs.c: done, fail, cancel), so no end is ever without
 * its delivery, whatever dies when:
 *
 *   vr:notify               sorted set: delivery ids "<job>:<seq>" by the
 *                           time they are due (ms since the epoch)
 *   vr:notify:<job>:<seq>   hash: what the event says (a snapshot of the job
 *                           at its end: a retried job may change before it
 *                           goes out), the URLs, `attempts` (rounds done),
 *                           `ok:<i>` for each URL that had its 2xx and
 *                           `failed:<i>` for each one given up, `claim`
 *                           (the controller holding it), `last_error`
 *
 * seq counts the job's notified ends (`notify_seq` in the job hash), so a
 * retried job that ends again is a new delivery with a new id. A claim
 * moves the delivery's score to now + lease: no other controller takes it
 * meanwhile, and one that dies holding it leaves it to the next after the
 * lease. A finished delivery (every URL had its 2xx, or the sender gave
 * up) is removed, its outcome written into the job hash: notify_state
 * (pending -> delivered | failed), notify_attempts, notify_ms, notify_error.
 * So the guarantee is at least once per URL and job end; a POST that
 * succeeded just before its controller died is sent again, under the same
 * delivery id, which receivers dedupe on.
 */
#ifndef VR_RQ_NOTIFY_H
#define VR_RQ_NOTIFY_H

#include "rq.h"

#define RQ_NOTIFY_MAX_URLS 4     /* URLs one delivery goes to (the job's + the controller's) */
#define RQ_NOTIFY_URL_MAX  1024  /* one URL with its NUL (= JOB_NOTIFY_MAX) */
#define RQ_NOTIFY_ID_MAX   64    /* "<job>:<seq>" */

/* One delivery, as claimed: caller storage (it is large: allocate it). */
struct rq_notify {
    char id[RQ_NOTIFY_ID_MAX];   /* the delivery id "<job>:<seq>" (X-Vrseg-Delivery) */
    char job[48];
    long long seq;
    char state[16];              /* the end: done | failed | cancelled */
    char error[512];             /* the job's error ("" when done) */
    long long created_ms, started_ms, finished_ms;
    long long frames_done, frames_total;
    int attempts;                /* rounds tried before this one */
    int nurls;
    char urls[RQ_NOTIFY_MAX_URLS][RQ_NOTIFY_URL_MAX]; /* "" for a line over the limit:
                                                       * the sender refuses it */
    int done[RQ_NOTIFY_MAX_URLS]; /* URL i in an earlier round: RQ_NOTIFY_DELIVERED,
                                   * RQ_NOTIFY_GIVEN_UP, or 0 (still to do) */
};

/* What a round did for one URL (rq_notify_record's outcome[i]). */
enum { RQ_NOTIFY_TRY_AGAIN = 0, RQ_NOTIFY_DELIVERED = 1, RQ_NOTIFY_GIVEN_UP = 2 };

/* Fills d (zeroed, its id set) from the delivery record's HGETALL pairs
 * `f` (borrowed): texts cut to their fields, numbers range-checked, URL
 * lines over RQ_NOTIFY_URL_MAX kept as "" (refused by the sender), a URL
 * list over RQ_MAX_FIELD refused. 0, or VR_EFORMAT when it lacks its job.
 * Separate from rq_notify_claim for the fuzzer (fuzz/fuzz_records.c). */
int rq_notify_fill(const redisReply *f, struct rq_notify *d, vr_err *err);

/* Claims the first delivery due at `now_ms` for controller `me` until
 * now_ms + lease_ms, into *d. Returns 1 claimed, 0 none due, <0 error. A
 * queued id whose record is gone (removed by hand) is dropped on the way
 * (0); one whose record is malformed is dropped too (VR_EFORMAT, naming
 * it). */
int rq_notify_claim(struct rq *q, const char *me, long long now_ms, long long lease_ms,
                    struct rq_notify *d, vr_err *err);

/* Records a round of delivery d by `me`: outcome[i] (d->nurls of them)
 * says what it did for URL i (a 2xx: RQ_NOTIFY_DELIVERED; refused for good:
 * RQ_NOTIFY_GIVEN_UP); `error` (may be "") says why the others failed.
 * With next_ms > 0 the URLs left are tried again at next_ms; with next_ms
 * = 0 the delivery is finished, the URLs left given up. Returns 1 finished
 * and delivered to every URL (notify_state delivered), 2 finished with URLs
 * given up (notify_state failed), 0 to be tried again, RQ_NOTIFY_GONE when
 * the delivery was finished meanwhile (by another controller, after this
 * one's lease ran out), <0 error. */
#define RQ_NOTIFY_GONE 3
int rq_notify_record(struct rq *q, const struct rq_notify *d, const char *me,
                     const int *outcome, long long next_ms, const char *error, vr_err *err);

/* The job's delivery state: notify_state ("" when the job never had a
 * delivery; pending, delivered or failed) into state (n bytes), and
 * notify_error into error (en bytes; may be NULL). 1 found, 0 no such
 * field, <0 error. */
int rq_notify_state(struct rq *q, const char *job, char *state, size_t n, char *error,
                    size_t en, vr_err *err);

#endif

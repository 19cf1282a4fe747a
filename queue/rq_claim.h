/*
 * rq_claim.h - a worker's claims on chunk entries, and the reports it sends
 * the controller instead of writing chunk state itself.
 *
 * Why: Redis runs a script (EVAL, FCALL) with its caller's rights, so a
 * worker's user that may call a commit script may also send the script's
 * HSET by hand, fail any chunk, XCLAIM another worker's entry (issue 27,
 * finding 2). Only the controller writes chunk and job state now. The
 * worker's user may read job and chunk records, XREADGROUP the chunk
 * streams, XADD to vr:reports (write only: it cannot read what others sent)
 * and keep its heartbeat (deploy/redis-users.acl); the controller turns a
 * report into the state change its scripts always made (rq_scripts.c),
 * after checking that the sender holds the claim.
 *
 * A claim binds a delivery to a secret that only its worker knows. Each
 * worker has a claim key K (32 random bytes, hex; `serve --slots` gives each
 * child its own). Claim k has the token T = HMAC(K, k), the proof P = H(T)
 * and the commitment C = H(P) (the first 32 hex digits; H is HMAC-SHA256
 * under a fixed label). The worker reads under the consumer name
 * "<name>+<k>+<C>", so the delivery lands in the group's pending list
 * under a name that commits to T, atomically, before anyone could learn
 * the entry. Reports show P while the claim lasts (start, renew) and T to
 * end it (done, fail, skip): the controller recomputes C from what is shown
 * and compares it with the consumer that holds the entry (XPENDING). P
 * cannot give T, nor C give P; a revealed T is spent (the entry is acked).
 * The parent of a killed worker shows K itself (kind died): the claims of
 * that name made under K are then released at once, as a lapsed lease
 * would be.
 */
#ifndef VR_RQ_CLAIM_H
#define VR_RQ_CLAIM_H

#include "hmac.h"
#include "rq.h"

#define RQ_CONSUMER_MAX 160           /* name (<= 100) + "+k+" + 32 hex digits */
#define RQ_CLAIM_KEY_HEX 65           /* 64 hex digits + NUL */
#define RQ_CLAIM_C_HEX  32            /* digits of C in a consumer name */

/* ---- claims ---- */

struct rq_claim {
    char consumer[RQ_CONSUMER_MAX]; /* the XREADGROUP consumer: name+k+C */
    char token[HMAC_SHA256_HEX];    /* T: shown once, to end the claim */
    char proof[HMAC_SHA256_HEX];    /* P = H(T): shown while the claim lasts */
};

/* A fresh random claim key into key. Returns 0 or VR_EIO. */
int rq_claim_key_new(char key[RQ_CLAIM_KEY_HEX], vr_err *err);

/* Whether s is a claim key (64 lowercase hex digits). */
int rq_claim_key_valid(const char *s);

/* Claim k of worker `name` (<= 100 of [A-Za-z0-9:._-]) under key. Returns
 * 0, or VR_EINVAL for a bad name or key. */
int rq_claim_make(const char *name, const char *key, long long k, struct rq_claim *c,
                  vr_err *err);

/* What a report shows of its claim. */
enum rq_shown { RQ_SHOWN_PROOF, RQ_SHOWN_TOKEN };

/* Whether `shown` (a proof or a token) opens the commitment of consumer:
 * 1 yes, 0 no (a malformed consumer or secret too). */
int rq_claim_proves(const char *consumer, const char *shown, enum rq_shown what);

/* Whether consumer is a claim of worker `name` made under key: 1 yes. */
int rq_claim_of_key(const char *consumer, const char *name, const char *key);

/* The worker's name in a consumer ("name+k+C" -> "name"; another name is
 * copied whole) into buf of size n. */
void rq_consumer_worker(const char *consumer, char *buf, size_t n);

/* ---- what a worker may read of the chunk it holds ---- */

/* The entry a worker was delivered, with the claim it read under. */
struct rq_held {
    char stream[64];
    char id[RQ_ID_MAX];
    char job[48];
    int idx;
    struct rq_claim claim;
    char end[48];            /* where the worker stopped (rq_cut.h's text; "" the task's
                              * own end): its done report names it */
};

#define RQ_HELD_LOST      0 /* another entry, or the chunk ended: the claim is over */
#define RQ_HELD_YES       1
#define RQ_HELD_JOB_ENDED 2 /* the job is no longer splitting or running */

/* Reads the chunk record and its job's state (the same checks the
 * controller's start script makes): RQ_HELD_YES while the record names
 * h's entry and the chunk is neither done nor dead and its job is live,
 * else RQ_HELD_LOST or RQ_HELD_JOB_ENDED with *why (whyn bytes) saying
 * which; <0 error. With st != NULL, st->task gets the task and
 * st->attempt the attempt this delivery will be (VR_EFORMAT when the task
 * is missing or over st->task's size). */
int rq_chunk_peek(struct rq *q, const struct rq_held *h, struct rq_start *st, char *why,
                  size_t whyn, vr_err *err);

/* ---- reports (XADD vr:reports; the controller acts on them) ---- */

/* The chunk was started (shows the proof): the controller marks it running
 * and counts the attempt. */
int rq_report_start(struct rq *q, const struct rq_held *h, vr_err *err);

/* The lease goes on (shows the proof): the controller resets its idle time
 * and keeps `frames`, the attempt's frames so far: a killed worker's
 * partial work, shown by `vrctl report`. */
int rq_report_renew(struct rq *q, const struct rq_held *h, long long frames, vr_err *err);

/* The output is durable (shows the token): the controller commits frames,
 * fps, metrics JSON and the output's sum (NULL: none); each line of `note`
 * (NULL: none) becomes an event of the chunk once the commit stands. */
int rq_report_done(struct rq *q, const struct rq_held *h, long long frames, double fps,
                   const char *metrics_json, const char *sum, const char *note, vr_err *err);

/* The attempt failed (shows the token): the controller requeues after a
 * backoff, or dead-letters (permanent 1: at once); RQ_FAIL_WORKER: the
 * worker's own environment failed, charged to it, not to the chunk
 * (rq_chunk_fail_ex); RQ_FAIL_STORAGE: the same, on the shared storage. */
int rq_report_fail(struct rq *q, const struct rq_held *h, const char *reason, int permanent,
                   vr_err *err);

/* The entry is not to be run (stale, or the chunk or job ended; shows the
 * token): the controller acks it when its own check agrees. */
int rq_report_skip(struct rq *q, const struct rq_held *h, const char *why, vr_err *err);

/* Worker `name` was killed (its parent shows the worker's key): the
 * controller releases its claims now, as a lapsed lease would. */
int rq_report_died(struct rq *q, const char *name, const char *key, const char *reason,
                   vr_err *err);

/* ---- the controller's side ---- */

/* One report as read back (everything in it is untrusted): the fields
 * checked and bounded; pointers into m. */
struct rq_report {
    const char *kind;     /* start renew done fail skip died */
    const char *consumer; /* the claim (not for died) */
    const char *stream;   /* RQ_CHUNKS or RQ_CHUNKS_HI */
    const char *id;       /* the entry */
    const char *job;      /* a valid job id, or "" (skip of a malformed entry) */
    int idx;              /* -1 with job "" */
    const char *shown;    /* proof or token (for died: the key) */
    const char *worker;   /* died: the worker's name */
    long long frames;     /* done; renew: so far (-1 not said) */
    double fps;           /* done */
    const char *metrics;  /* done: JSON text (the script parses it with care) */
    const char *sum;      /* done: "" or a storage sum */
    const char *note;     /* done, skip: "" or text for the events (escaped there) */
    const char *end;      /* done: "" or where the worker stopped (rq_cut.h) */
    const char *reason;   /* fail, died */
    int permanent;        /* fail */
};

/* Parses and range-checks report m into *r. Returns 0, or VR_EFORMAT with
 * text saying which field is wrong. */
int rq_report_parse(const struct rq_msg *m, struct rq_report *r, vr_err *err);

/* Whether the report shows the secret its kind needs for its consumer
 * (died: whether it is a well-formed key; rq_worker_died checks it
 * against every claim it releases). */
int rq_report_proves(const struct rq_report *r);

/* Acks entry `id` of `stream` for `consumer` when it holds it and the
 * entry is not the chunk's current one, or the chunk or its job ended
 * (a skip the controller agrees with). Returns 1 acked, 0 left to its
 * lease, <0 error. */
int rq_chunk_skip(struct rq *q, const char *stream, const char *consumer, const char *id,
                  const char *job, int idx, vr_err *err);

/* Deletes the consumers of `stream`'s workers' group that hold nothing and
 * were idle for at least idle_ms (spent claims; atomic: one that got an
 * entry meanwhile stays). Returns how many, or <0. */
long long rq_consumers_sweep(struct rq *q, const char *stream, long long idle_ms, vr_err *err);

#endif

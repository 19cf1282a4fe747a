/*
 * rq_scripts.h - the Lua-script verbs of rq_scripts.c, each one atomic on
 * the server: a chunk's lease renewal, start, commit, failure and retry,
 * its creation and requeue, a result counted into its job, a job claimed
 * by a controller, a stream trimmed. rq.h includes it.
 */
#ifndef VR_RQ_SCRIPTS_H
#define VR_RQ_SCRIPTS_H

#include "rq.h"

/* ---- scripts: each one atomic on the server ---- */

/* The worker's lease renewal: if `consumer` still owns entry `id` of job
 * `job`, XCLAIM it with JUSTID (resets idle, keeps the delivery count) and
 * return 1; if another consumer reclaimed it, or it was requeued, return 0
 * (never takes it back); if the job is no longer splitting or running
 * (cancelled, failed, gone) return RQ_RENEW_JOB_ENDED: the worker should
 * drop the chunk. <0 on error. */
#define RQ_RENEW_JOB_ENDED 2
int rq_lease_renew(struct rq *q, const char *stream, const char *consumer,
                   const char *id, const char *job, vr_err *err);

/* Outcome of rq_chunk_start. */
struct rq_start {
    int attempt;          /* this delivery's attempt number (1-based) */
    char task[8192];      /* the chunk task JSON */
};

/* Takes entry `id` (delivered to `consumer`) for processing: checks
 * ownership, that the entry is the chunk's current one, that the chunk is not
 * done and its job is live; raises the attempt count in the chunk record.
 * Returns 1 = process it, 0 = skip (already acknowledged: stale, done or
 * cancelled; *why says which), <0 error. An error with st->attempt > 0
 * (the caller zeroes *st) came after the attempt was taken: the task is
 * missing or over the size of st->task (VR_EFORMAT), and the caller fails
 * the chunk at once rather than leaving it to its lease. */
int rq_chunk_start(struct rq *q, const char *stream, const char *consumer, const char *id,
                   const char *job, int idx, struct rq_start *st,
                   char *why, size_t whyn, vr_err *err);

/* Commits a processed chunk after its output is durable: only if `consumer`
 * still owns `id`, records frames, fps, metrics and the output's checksum
 * `sum` (storage_sum_fds; NULL: none) in the chunk record, XADDs the result
 * (naming `id`: the controller counts the chunk into its job,
 * rq_chunk_result) and XACKs. Returns 1 committed,
 * 0 lease lost (nothing written, nothing acked), RQ_COMMIT_JOB_ENDED the job
 * is no longer splitting or running (acked, nothing counted, the chunk left
 * unfinished for a retry), <0 error. */
#define RQ_COMMIT_JOB_ENDED 2
int rq_chunk_commit(struct rq *q, const char *stream, const char *consumer, const char *id,
                    const char *job, int idx, long long frames, double fps,
                    const char *metrics_json, const char *sum, vr_err *err);

/* The same from a worker that stopped at `end` (rq_cut_end_text of the
 * range it read; NULL or "": the task's own end). A chunk cut meanwhile
 * (queue/rq_cut.h) commits only at the end it was cut to: else the output
 * is refused and the chunk queued again with its shorter range
 * (RQ_COMMIT_CUT_MISSED). */
#define RQ_COMMIT_CUT_MISSED 3
int rq_chunk_commit_end(struct rq *q, const char *stream, const char *consumer, const char *id,
                        const char *job, int idx, long long frames, double fps,
                        const char *metrics_json, const char *sum, const char *end,
                        vr_err *err);

/* ---- failures and retries ----
 *
 * A chunk's record counts `attempts` (deliveries started), `failures` (the
 * chunk's own: its worker reported an error) and `deaths` (its worker
 * stopped renewing the lease: killed, stopped, partitioned; not the
 * chunk's fault, so it has its own, higher limit). A failure with attempts
 * left waits out a backoff in the retry set (vr:retry) before its entry
 * is added: RQ_RETRY_BASE_MS * 2^(failures-1), at most RQ_RETRY_CAP_MS,
 * plus up to half of it at random, so a transient fault (read-only or
 * full storage, an I/O error, Redis timing out) has seconds to pass (with
 * the default 3 attempts, at least 6 s) and chunks failing together do
 * not come back together. A death is requeued at once. */
#define RQ_RETRY_BASE_MS 2000
#define RQ_RETRY_CAP_MS  60000
#define RQ_MAX_DEATHS    10
#define RQ_MAX_FAULTS    20  /* failures charged to workers (RQ_FAIL_WORKER) */

/* The controller's check of one result read from vr:results: chunk
 * job/idx ended `kind` (done | dead) under stream entry `entry` (the
 * result's own field). A result that does not match the chunk record (a
 * requeued chunk's stale result, or one written by hand: any Redis user
 * that may XADD vr:results) changes nothing. A done chunk is counted into
 * its job (chunks_done, frames_done) here, once: the worker's user may not
 * write job records. Returns 1 the result stands (a done chunk counted
 * now), 2 it stands and was counted before (read twice), 3 a done chunk of
 * a job that has ended (not counted), 0 it does not match: ignore it, <0
 * error. */
int rq_chunk_result(struct rq *q, const char *job, int idx, const char *kind, const char *entry,
                    vr_err *err);

/* The audit's half of the same: counts chunk job/idx into its job when it
 * is done under its current entry and not counted yet (a result that a
 * dead controller read and never handled). Returns as rq_chunk_result, or
 * 4: its result still waits in vr:results, undelivered, and the loop
 * counts it in its turn. */
int rq_chunk_count_done(struct rq *q, const char *job, int idx, vr_err *err);

/* A failed attempt. With consumer != NULL: the worker reports its own failure
 * (owner checked; a failure). With consumer == NULL: the controller reclaims
 * an entry idle for at least min_idle_ms (atomic XCLAIM, so a renewal in
 * between wins; a death). Then: failures >= max_attempts or deaths >=
 * RQ_MAX_DEATHS -> dead-letter (vr:dead + a "dead" result, the record's
 * `dead_by` says which), else requeue (a failure after its backoff).
 * Returns 1 requeued, 2 dead-lettered, 0 not taken (renewed, lost or
 * stale), <0 error. */
int rq_chunk_fail(struct rq *q, const char *stream, const char *consumer, const char *id,
                  const char *job, int idx, const char *reason,
                  long long min_idle_ms, vr_err *err);

/* The same, saying whether the failure is permanent: a deterministic one
 * (a corrupt bitstream, an input the engine cannot take) is dead-lettered at
 * once, whatever attempts are left; the chunk record gets permanent=1.
 * permanent = RQ_FAIL_WORKER: the worker's own environment failed (input
 * missing, storage not writable, its decoder or GPU): counted in the
 * chunk's `faults`, not its failures, and requeued at once; dead-lettered
 * only at RQ_MAX_FAULTS.
 * RQ_FAIL_STORAGE (reports only): the same, on the shared storage; the
 * controller also notes it for the fleet-wide pause (rq_pause.h) and
 * passes RQ_FAIL_WORKER here.
 * *retry_in_ms (when not NULL) gets the backoff of a requeue (0: at once). */
#define RQ_FAIL_WORKER 2
#define RQ_FAIL_STORAGE 3
int rq_chunk_fail_ex(struct rq *q, const char *stream, const char *consumer, const char *id,
                     const char *job, int idx, const char *reason, int permanent,
                     long long min_idle_ms, long long *retry_in_ms, vr_err *err);

/* Gives the chunks whose backoff ended their entry in the priority stream
 * (at most 100 a call; the controller calls it with its reclaims).
 * Returns how many, or <0. */
long long rq_retry_due(struct rq *q, vr_err *err);

/* The chunk stream for a job priority: RQ_CHUNKS_HI above 0, else RQ_CHUNKS.
 * `stream` arguments above are the entry's stream (rq_msg.stream). */
const char *rq_chunk_stream(int priority);

/* Creates the chunk record (with its stream) and its entry in
 * rq_chunk_stream(priority) unless the record exists (idempotent: a
 * controller that re-runs a split enqueues nothing twice).
 * Returns 1 created, 0 existed, <0 error. */
int rq_chunk_create(struct rq *q, const char *job, int idx, const char *task,
                    int max_attempts, int priority, vr_err *err);

/* Re-adds the stream entry of a chunk (a new id; the record points to it).
 * force 0: only a queued or running chunk whose entry vanished (lost XADD);
 * force 1: any chunk but a dead one, a done one too (its output went
 * missing: the job's counters are lowered again); force 2: only a dead chunk
 * (vrctl retry; its attempt count restarts at 0); force 3: a queued or
 * running chunk whatever its entry, its attempt count restarting at 0 too
 * (vrctl retry of any unfinished chunk of a failed or cancelled job),
 * unless its entry is pending to a live worker (2: left to that worker,
 * whose commit the retried job takes).
 * Returns 1 re-added, 0 not needed, 2 (force 3) held by a live worker,
 * VR_ENOENT without a record, <0 error. */
int rq_chunk_requeue_lost(struct rq *q, const char *job, int idx, int force,
                          vr_err *err);

/* Moves a job to state `to` for controller `me` when its state is one of the
 * comma-separated `from`, or is `to` already under a controller whose
 * heartbeat key (vr:controller:<name>) expired. 1 taken, with the claim's
 * fencing token (> 0, rq_jobs.h) in *token when token is not NULL; 0 not. */
int rq_job_claim(struct rq *q, const char *job, const char *from, const char *to,
                 const char *me, long long *token, vr_err *err);

/* Trims `stream` to the oldest entry that any group still needs (pending or
 * not yet delivered): never drops pending work. Returns entries removed. */
long long rq_trim_safe(struct rq *q, const char *stream, vr_err *err);

#endif

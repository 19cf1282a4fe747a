/*
 * rq_jobs.h - a job's life in Redis: every state change is one Lua script
 * that checks the state it leaves (rq_jobs.c), so two parties racing for a
 * job (a user's cancel and the controller's stitch, two controllers, a
 * retry and a late failure) end with one answer, never a mix of both.
 *
 *   submit   -> queued                          (vrctl submit/run)
 *   claim    queued -> splitting -> running -> stitching  (rq_job_claim, rq.h)
 *   running  splitting (held by me) -> running, with the split's figures
 *   reopen   stitching (held by me) -> running (a chunk's output vanished)
 *   done     stitching (held by me) -> done, with the final figures
 *   fail     any live state -> failed, with the reason (a holder's own
 *            failure: only while it holds the job)
 *   cancel   any live state -> cancelled        (vrctl cancel)
 *   retry    failed | cancelled -> running (queued before a split)  (vrctl retry)
 *
 * "Live" is queued, splitting, running or stitching; done, failed and
 * cancelled have ended (job_state_ended). A job that ends leaves the active
 * set in the same script, and when it has webhooks (its `notify` field)
 * that script also schedules the end's delivery (rq_notify.h).
 *
 * "Held by me" is the controller's name and the fencing token of its claim
 * (rq_job_claim): the job's `claim` counter, raised by every claim, so a
 * holder that was paused while another controller claimed the job is
 * refused by every script below, even one with its own name.
 */
#ifndef VR_RQ_JOBS_H
#define VR_RQ_JOBS_H

#include "rq.h"

/* Records a new job in one script: the hash (spec, state queued, counters),
 * the index, the active set and its vr:jobs entry. VR_EINVAL when a job
 * with that id exists. */
int rq_job_submit(struct rq *q, const char *id, const char *spec_json, long long created_ms,
                  long long frames_est, int priority, vr_err *err);

/* The job's spec text into buf (n bytes): 1, 0 when the job or its spec is
 * missing, <0 on error. */
int rq_job_spec(struct rq *q, const char *id, char *buf, size_t n, vr_err *err);

/* The job's state ("" when there is no such job) into buf: 1 found, 0 not,
 * <0 error. */
int rq_job_state(struct rq *q, const char *id, char *buf, size_t n, vr_err *err);

/* A number field of the job hash (chunks_total, chunks_done...): 1, 0 absent. */
int rq_job_number(struct rq *q, const char *id, const char *field, long long *v, vr_err *err);

/* Writes a descriptive field (started_ms, layout, notify: the webhook URLs,
 * one a line): never `state`, the counters or the webhook's sequence and
 * state, which only the scripts change. */
int rq_job_note(struct rq *q, const char *id, const char *field, const char *value,
                vr_err *err);

/* The same for n fields at once, n = 1..16 (one HSET, one round trip): a
 * job's start writes its notes together (controller/ctl_notes.c). Refuses
 * all when one is a scripted field. */
int rq_job_notes(struct rq *q, const char *id, const char *const *fields,
                 const char *const *values, int n, vr_err *err);

/* splitting -> running for controller `me` under claim `token`, with the
 * split's figures. 1 moved, 0 the job is no longer this controller's split
 * (cancelled, failed or taken over), <0 error. */
int rq_job_running(struct rq *q, const char *id, const char *me, long long token,
                   int chunks_total, long long frames_total, double split_s, vr_err *err);

/* stitching -> running for controller `me` under claim `token` (outputs
 * to redo). 1, 0, <0. */
int rq_job_reopen(struct rq *q, const char *id, const char *me, long long token, vr_err *err);

/* 1 when the job is in `state` held by `me` under claim `token`, 0 not,
 * <0 error. Asked before a step that cannot be undone on the storage
 * (publishing the output, removing another's temporary files). */
int rq_job_holds(struct rq *q, const char *id, const char *state, const char *me,
                 long long token, vr_err *err);

/* stitching -> done for controller `me` under claim `token`, with the
 * stitch time and the merged metrics (JSON); leaves the active set. 1
 * done, 0 not, <0. On 0 *still_held (may be NULL) says whether the claim
 * was still this one's (a cancel or a failure ended the job meanwhile:
 * nobody else can have published) or another controller's. */
int rq_job_done(struct rq *q, const char *id, const char *me, long long token, double stitch_s,
                const char *metrics_json, int *still_held, vr_err *err);

/* Live -> failed with `reason` by controller `me` ("" for others); leaves
 * the active set. With token > 0 it is the holder's own failure (its
 * split or stitch failed): refused unless the job is still held under
 * that claim. token 0: a failure of the job's work (a dead chunk, a bad
 * spec), whoever holds it. 1 failed now, 0 it had already ended, 2 not
 * held (nothing changed), <0. */
int rq_job_fail(struct rq *q, const char *id, const char *me, long long token,
                const char *reason, vr_err *err);

/* Webhooks (rq_notify.h): `on` when this process (a controller) has a
 * --notify of its own, so the deliveries its done and fail schedule name
 * it ("@controller", never the URL). Set once, before any job ends. */
void rq_job_notify_global(int on);

/* The controller's half of a cancel: schedules the delivery of the jobs
 * vrctl cancelled (vr:cancels), for each one whose record says cancelled
 * and whose end was not scheduled yet. The ids taken (<= 64), or <0. */
int rq_job_notify_cancels(struct rq *q, vr_err *err);

/* Live -> cancelled with `reason`; leaves the active set. 1 cancelled now,
 * 0 it had already ended (its state into `state`, n bytes), VR_ENOENT no
 * such job, <0 error. Schedules no webhook (vrctl may not write vr:notify*):
 * the id goes to vr:cancels, for a controller's rq_job_notify_cancels. */
int rq_job_cancel(struct rq *q, const char *id, const char *reason, char *state, size_t n,
                  vr_err *err);

/* failed | cancelled -> running (queued when it was never split), error
 * cleared, back in the active set; *chunks_total gets the job's chunk
 * count so the caller can re-arm them. 1 moved, 0 the job is in another
 * state (into `state`), VR_ENOENT no such job, <0 error. */
int rq_job_retry(struct rq *q, const char *id, long long *chunks_total, char *state, size_t n,
                 vr_err *err);

/* ---- retention ---- */

/* Deletes an ended job's records (the job hash, its events, its chunk
 * records; its index, active and cleanup entries) when it ended before
 * ended_before_ms (0: whenever it ended). A live job is never touched.
 * Returns 1 purged, 0 live (its state into `state` when not NULL), 2
 * ended too recently, VR_ENOENT no such job, <0 error. Files are not this
 * call's: the controller removes storage/jobs/<id>. */
int rq_job_purge(struct rq *q, const char *id, long long ended_before_ms, char *state,
                 size_t n, vr_err *err);

/* Up to max job ids created before before_ms, oldest first (caller storage
 * of max * 48 bytes): the candidates for a purge of jobs that ended before
 * then. Count or <0. */
int rq_jobs_created_before(struct rq *q, long long before_ms, char (*ids)[48], int max,
                           vr_err *err);

/* ---- the active set: jobs a controller must look after ---- */

/* Up to max active job ids (caller storage of max * 48 bytes): count, <0. */
int rq_active_list(struct rq *q, char (*ids)[48], int max, vr_err *err);

/* Drops an ended (or vanished) job from the active set. */
int rq_active_forget(struct rq *q, const char *id, vr_err *err);

/* ---- the cleanup set: ended jobs whose chunk files or objects may go ----
 *
 * The done script puts the job there, due RQ_CLEANUP_DELAY_MS later: long
 * enough for Redis to have made the done durable (AOF everysec syncs each
 * second). A crash that loses the done loses the entry with it, so a job
 * rolled back to its stitch still finds its chunk files (issue 26). */
#define RQ_CLEANUP_DELAY_MS 3000

/* A failed or cancelled job goes there too, from the script that ends it,
 * due this much later: its chunk files stay (`vrctl retry` resumes from
 * them) but its chunk objects on a --storage URL are swept (ctl_chunk_gc.c),
 * once a PUT a worker had begun before it heard of the end has landed. A
 * retry within it resumes whole; one after computes the chunks again. */
#define RQ_CLEANUP_ENDED_DELAY_MS 10000

/* Up to max job ids whose cleanup is due (caller storage of max * 48
 * bytes): count, <0. */
int rq_cleanup_due(struct rq *q, char (*ids)[48], int max, vr_err *err);

/* Drops a job from the cleanup set (its files removed, or not wanted). */
int rq_cleanup_forget(struct rq *q, const char *id, vr_err *err);

/* Makes job id's cleanup due at due_ms (Redis time): later, while it is
 * under way or after it failed. */
int rq_cleanup_at(struct rq *q, const char *id, long long due_ms, vr_err *err);

#endif

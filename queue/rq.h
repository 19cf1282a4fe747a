/*
 * rq.h - the Redis queue: one hiredis connection per thread, the address
 * syntax, bounded replies, reconnection with backoff, and the stream and
 * Lua-script operations the controller, the workers and vrctl share.
 *
 * Addresses: `redis://[user:password@]host:port[/db]` or `unix:///path.sock`,
 * from --redis or $VR_REDIS. A `struct rq` is not thread-safe: give every
 * thread its own (hiredis contexts are single-threaded). After any I/O or
 * protocol error the context is dropped and the next command reconnects, so
 * a restarting Redis costs errors, never a crash; daemons call rq_backoff()
 * between failed attempts. Every command counts one round trip
 * (rq_round_trips), which the benchmark reports per chunk.
 *
 * Keys (all under "vr:"): vr:jobs (stream, group controllers), vr:job:<id>
 * (hash), vr:chunk:<id>:<idx> (hash: the chunk record with its attempt count),
 * vr:chunks and vr:chunks:hi (streams, group workers; jobs with priority > 0
 * go to the second, which workers read first), vr:results (stream, group
 * controllers),
 * vr:dead (stream), vr:worker:<name> (hash with TTL), vr:workers (set),
 * vr:controller:<name> (key with TTL), vr:controllers (set of their names),
 * vr:active (set of live jobs),
 * vr:index (sorted set of job ids), vr:events:<id> (capped stream),
 * vr:notify (sorted set of webhook deliveries by due time) and
 * vr:notify:<id>:<seq> (hash: one delivery, rq_notify.h). Every
 * key is spelled in queue/ only; the verbs are here, in rq_jobs.h (a job's
 * state changes) and rq_fleet.h (workers and controllers).
 */
#ifndef VR_RQ_H
#define VR_RQ_H

#include "vr_err.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stddef.h>

/* ---- limits on what Redis may hand us ---- */
#define RQ_MAX_FIELD   (256 * 1024) /* one stream field or hash value */
#define RQ_MAX_FIELDS  32           /* fields in one stream entry */
#define RQ_MAX_ELEMS   100000       /* elements of one array reply */
#define RQ_ID_MAX      48           /* "ms-seq" stream ids */

/* ---- keys and groups ---- */
#define RQ_JOBS     "vr:jobs"
#define RQ_CHUNKS   "vr:chunks"     /* chunks of jobs with priority <= 0 */
/* chunks of jobs with priority > 0, and chunks tried again: workers look here first */
#define RQ_CHUNKS_HI "vr:chunks:hi"
#define RQ_RESULTS  "vr:results"
#define RQ_REPORTS  "vr:reports"   /* workers' reports to the controllers (rq_claim.h) */
#define RQ_DEAD     "vr:dead"
#define RQ_WORKERS  "vr:workers"
#define RQ_WORKERS_SEEN "vr:workers:seen" /* hash: worker_seen_ms, the last heartbeat of any
                                           * worker (a key of the workers' own) */
#define RQ_INDEX    "vr:index"
#define RQ_ACTIVE   "vr:active"    /* set: jobs a controller must look after */
#define RQ_STATS    "vr:stats"     /* hash: fleet counters (rq_fleetstats.h) */
#define RQ_ENDED    "vr:ended"     /* hash: jobs ended, jobs_<state> (vrctl's cancel counts
                                    * there too; it may not write vr:stats) */
#define RQ_STATS_HIST "vr:stats:hist" /* hash: fleet stage histograms (rq_fleetstats.h) */
#define RQ_RETRY    "vr:retry"     /* sorted set: "<job>/<idx>" waiting out a backoff, by due ms */
#define RQ_CLEANUP  "vr:cleanup"   /* sorted set: done jobs whose chunk files go, by due ms */
#define RQ_NOTIFY   "vr:notify"    /* sorted set: webhook deliveries by due time (rq_notify.h) */
#define RQ_MAX_BULK (1 << 20) /* the proto-max-bulk-len a fleet's Redis should have */
#define RQ_CANCELS  "vr:cancels"   /* set: jobs vrctl cancelled whose webhook a controller
                                    * has yet to schedule (rq_job_notify_cancels) */
#define RQ_WORKER_PREFIX     "vr:worker:"     /* + name: hash with a TTL (heartbeat) */
#define RQ_CONTROLLER_PREFIX "vr:controller:" /* + name: key with a TTL (heartbeat) */
#define RQ_CONTROLLERS "vr:controllers" /* set: controllers' names (their keys may have expired) */
#define RQ_G_WORKERS     "workers"
#define RQ_G_CONTROLLERS "controllers"

/* ---- address ---- */
struct rq_url {
    int is_unix;          /* 1: path is a unix socket */
    char host[256];
    int port;
    char path[108];       /* sun_path size */
    char user[128];       /* empty: no ACL user (AUTH password only) */
    char pass[256];       /* empty: no AUTH */
    int db;
};

/* Parses `s` into *u. Errors name the URL part that is wrong and never
 * contain the password. User and password may be %XX-escaped (a '@', ':'
 * or '/' in them); an IPv6 host is written [addr]:port. rediss:// (TLS) is
 * refused with a pointer to the tunnel recipe (README.md, 'Security'):
 * Debian 12's hiredis 0.14 has no TLS. */
int rq_url_parse(const char *s, struct rq_url *u, vr_err *err);

/* Whether `s` parses (rq_url_parse's errors), nothing kept: for commands
 * that say a malformed address before they start. */
int rq_url_check(const char *s, vr_err *err);

/* Copies `s` into buf (size n) with the password replaced by "***". */
void rq_url_redact(const char *s, char *buf, size_t n);

/* The password file (--redis-password-file; NULL or "" clears it): its
 * first line is the password for every later rq_open, so it need not be in
 * the URL, where `ps` shows it. Without one, $VR_REDIS_PASSWORD_FILE is
 * used. A password both there and in the URL is an error. Call before
 * starting threads. */
void rq_password_file(const char *path);

/* The address to use: `flag` when non-empty, else $VR_REDIS, else
 * RQ_URL_DEFAULT (Redis's own default, as redis-cli has it). Static or
 * caller storage. */
#define RQ_URL_DEFAULT "redis://127.0.0.1:6379"
const char *rq_url_pick(const char *flag);

/* ---- connection ---- */
struct rq;

/* Connects (once; the caller decides whether to retry) with a command
 * timeout of `timeout_ms` (0 = 10000). Runs AUTH and SELECT. On failure
 * *out is still set: the handle reconnects on its next command, so a daemon
 * can start while Redis is down. Returns 0, VR_EREDIS with text (Redis is
 * unreachable: worth retrying), or VR_EINVAL (a bad address or password
 * file, *out NULL; or AUTH refused: retrying will not help). Error replies
 * NOAUTH and ACL denials (NOPERM, or a script's "can't run this command")
 * from any later command are VR_EINVAL too. */
int rq_open(const char *url, int timeout_ms, struct rq **out, vr_err *err);

/* Closes and frees; accepts NULL and clears the pointer. */
void rq_free(struct rq **q);

/* Runs one command (printf-style like redisCommand). Returns the reply,
 * owned by the caller (freeReplyObject), or NULL with err set: VR_EREDIS for
 * an error reply (message from Redis) or a lost connection (the context is
 * dropped; the next call reconnects). */
redisReply *rq_cmd(struct rq *q, vr_err *err, const char *fmt, ...);

/* Same with an argument vector (binary-safe; lens may be NULL). */
redisReply *rq_cmdargv(struct rq *q, vr_err *err, int argc, const char **argv,
                       const size_t *lens);

/* Sleeps the current backoff (100 ms doubling to 5 s) and raises it;
 * a successful command resets it. Returns the milliseconds slept. */
int rq_backoff(struct rq *q);

/* Commands sent since rq_open (one per round trip). */
long long rq_round_trips(const struct rq *q);

/* 1 when the last command reached Redis, 0 while disconnected. */
int rq_connected(const struct rq *q);

/* Refuses to run against a Redis that may evict keys: maxmemory-policy must
 * be noeviction (an evicted chunk record is a lost chunk). A server that
 * forbids CONFIG is accepted with a warning. */
int rq_check_noeviction(struct rq *q, vr_err *err);

/* ---- reply helpers (all check type and size) ---- */

/* Copies a string/status/integer reply into buf (size n); VR_EFORMAT when it
 * is longer than n-1 or of another type; 1 = copied, 0 = nil. */
int rq_reply_str(const redisReply *r, char *buf, size_t n, vr_err *err);

/* Integer or numeric string reply into *v; nil gives 0 and returns 0. */
int rq_reply_ll(const redisReply *r, long long *v, vr_err *err);

/* Reads one hash field (HGET) into buf: 1 found, 0 absent, <0 error. */
int rq_hget(struct rq *q, const char *key, const char *field, char *buf,
            size_t n, vr_err *err);
int rq_hget_ll(struct rq *q, const char *key, const char *field,
               long long *v, vr_err *err);

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

/* ---- scripts (rq_scripts.c): each one atomic on the server ---- */

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

/* Key builders (buf of 128 bytes is enough for ids within job.h's limit). */
void rq_key_job(char *buf, size_t n, const char *job);
void rq_key_chunk(char *buf, size_t n, const char *job, int idx);
void rq_key_events(char *buf, size_t n, const char *job);

/* Appends a progress line to the job's capped event stream (best effort). */
void rq_event(struct rq *q, const char *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Milliseconds since the epoch (the clock stored in records). */
long long rq_now_ms(void);

/* Milliseconds since the epoch by Redis's clock (TIME), the one clock the
 * fleet shares: a host's clock may jump or be skewed (issue 42). Falls back
 * to rq_now_ms when Redis does not answer. */
long long rq_server_ms(struct rq *q);

/* The largest number a record holds: a count, or a wall clock in ms (the
 * year 33658); 0..RQ_RECORD_MAX keeps every sum and difference of two in
 * range. */
#define RQ_RECORD_MAX 1000000000000000LL

/* A number read back from a record (Redis is not trusted): the decimal
 * integer or decimal `s` when it is one and lies in 0..RQ_RECORD_MAX,
 * else 0 (negative, too large, NaN, trailing text, empty, NULL). */
long long rq_record_ll(const char *s);
double rq_record_double(const char *s);

#endif

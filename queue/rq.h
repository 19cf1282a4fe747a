/*
 * rq.h - the Redis queue: one hiredis connection per thread, the address
 * syntax, bounded replies, reconnection with backoff; the stream verbs
 * (rq_stream.h) and the Lua-script verbs (rq_scripts.h) that the
 * controller, the workers and vrctl share have their own headers, which
 * this one includes.
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
#define RQ_CLEANUP  "vr:cleanup"   /* sorted set: ended jobs whose chunk files go, by due ms */
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

/* Stops a Redis of one's own (SHUTDOWN: its AOF written, then it exits at
 * once, where a SIGTERM waits for its next cron tick, up to 0.1 s). The
 * connection goes with it, which is what was asked: no "connection lost"
 * warning. */
void rq_server_shutdown(struct rq *q);

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

/* The job and chunk a queue stream's entry e names (an element of an
 * XRANGE / XREADGROUP reply: its id, then [field, value, ...]; fields job
 * and idx): 1, or 0 when it names none (no job id, idx not 0..1000000). */
int rq_entry_names(const redisReply *e, char *job, size_t jn, int *idx);

/* Integer or numeric string reply into *v; nil gives 0 and returns 0. */
int rq_reply_ll(const redisReply *r, long long *v, vr_err *err);

/* Reads one hash field (HGET) into buf: 1 found, 0 absent, <0 error. */
int rq_hget(struct rq *q, const char *key, const char *field, char *buf,
            size_t n, vr_err *err);
int rq_hget_ll(struct rq *q, const char *key, const char *field,
               long long *v, vr_err *err);

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

/* the verbs of the two files others call most, declared in their own
 * headers; included here so that a caller of rq.h has them all */
#include "rq_stream.h"
#include "rq_scripts.h"

#endif

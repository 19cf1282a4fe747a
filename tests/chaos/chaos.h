/*
 * chaos.h - the chaos suite's harness (tests/chaos/, `make chaos`): a whole
 * system (real redis-server, controller, CPU workers, from util-redis.h)
 * put through one fault per test, and the checks every test ends with:
 * nothing lost, no chunk committed twice, the output identical to a clean
 * run's, the job's final state and message.
 *
 * Exact output: jobs run with a lossless matte (FFV1, `-c` overrides) and
 * the fast profile, whose result per chunk equals `vr-worker process` on
 * the whole clip (tests/t-dist-one-answer.c), so the clean run is one
 * `vr-worker process` and every decoded frame must match it.
 */
#ifndef VR_CHAOS_H
#define VR_CHAOS_H

#include "rq.h"
#include "util-redis.h"

#include <sys/types.h>

struct chaos {
    struct tdist d;
    struct rq *q;           /* the test's own connection */
    char cfg[400];          /* {"encoder": "ffv1"} */
};
extern struct chaos CH;

/* Criterion .fini of every chaos suite: stops everything, removes the dir. */
void chaos_teardown(void);

/* Redis (AOF when aof), a controller with `lease_s`, `workers` CPU workers
 * with heartbeat hb_ms whose frames each take frame_delay_ms more
 * (VR_TEST_FRAME_DELAY_MS; 0 = none), the lossless config, a connection. */
void chaos_up(int aof, double lease_s, int workers, int frame_delay_ms, int hb_ms);

/* A controller (one more, or again after a kill) with the harness's
 * options: the defaults, chunks removed when a job is done; with
 * VR_CHAOS_KEEP_CHUNKS=1 in the environment `--keep-chunks` as well (the
 * suite ran only that way until issue 26: run it both ways). Returns its
 * pid (also CH.d.ctl). */
pid_t chaos_controller(void);
/* The same under a wrapper command (tproc_spawn_under): in its own PID
 * namespace, with a clock set ahead. */
pid_t chaos_controller_under(const char *const *prefix);

/* One more worker with test delays: VR_TEST_FRAME_DELAY_MS=frame_ms and
 * VR_TEST_COMMIT_DELAY_MS=commit_ms (0 = none). Returns its pid. */
pid_t chaos_worker(int frame_ms, int commit_ms);

/* kill -9 of the worker in slot `slot` (CH.d.w) and a new one in its place
 * with VR_TEST_FRAME_DELAY_MS=frame_ms. Returns its pid. */
pid_t chaos_worker_replace(int slot, int frame_ms);

/* A clip <dir>/<name>: `seconds` of vtest at 10 fps, width w, a keyframe
 * a second, no audio. Returns the path (static storage per call slot). */
const char *chaos_clip(const char *name, double seconds, int w);

/* `vrctl submit in -o <dir>/<out>` with the lossless config, 1 s chunks and
 * `extra`; the job id into id (64 bytes), the output path into out (400). */
void chaos_submit(const char *in, const char *outname, const char *const *extra, char *id,
                  char *out);

/* The clean run: `vr-worker process` of `in` into <dir>/<refname>. */
void chaos_ref(const char *in, const char *refname, char *ref);

/* Drops the test's connection and opens it again (after a Redis restart). */
void chaos_reconnect(void);

/* HGET key field into v (n bytes); "" when absent. */
void chaos_hget(const char *key, const char *field, char *v, size_t n);
long long chaos_job_ll(const char *id, const char *field);
long long chaos_chunk_ll(const char *id, int idx, const char *field);

/* Polls until chunk idx's / the job's `field` equals want; fails after
 * timeout_ms with the processes' log. */
void chaos_wait_chunk(const char *id, int idx, const char *field, const char *want, int timeout_ms);
void chaos_wait_job(const char *id, const char *field, const char *want, int timeout_ms);
/* Polls until the job's numeric field is >= min. */
void chaos_wait_job_min(const char *id, const char *field, long long min, int timeout_ms);
/* Polls until the file exists. */
void chaos_wait_file(const char *path, int timeout_ms);
/* 1 when the processes' log has `needle` within timeout_ms. */
int chaos_log_has(const char *needle, int timeout_ms);

/* `vrctl watch id`; asserts its exit status (0 done, 1 failed/cancelled). */
void chaos_watch(const char *id, int want_rc, int timeout_ms);

/* `vrctl ARGS... --redis URL` into out; returns its status. */
int chaos_vrctl(char *out, size_t n, const char *const *args);

/* SIGKILL and reap. */
void chaos_kill9(pid_t *pid);

/* The end checks of a job that must be done: state done, no error, every
 * chunk done with exactly one commit, at least one attempt and no stale
 * error, one `done` result
 * at most per chunk in vr:results, the job's
 * counters equal to the chunks' sums (lost = 0, committed twice = 0), the
 * output's frame count that of `in`, each decoded frame equal to ref's,
 * and its last event "done: <out>". */
void chaos_check_done(const char *id, const char *in, const char *out, const char *ref);

/* No temporary file (".<name>.tmp-...") is left under the output's
 * directory or the storage root within timeout_ms. */
void chaos_check_no_temps(const char *out, int timeout_ms);

/* 1 once the job's events (vr:events:<id>) hold a line equal to msg,
 * within timeout_ms. */
int chaos_event_seen(const char *id, const char *msg, int timeout_ms);

/* The job's events (`vrctl events id`) into a static buffer. */
const char *chaos_events(const char *id);

void chaos_msleep(int ms);

#endif

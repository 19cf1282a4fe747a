/*
 * serve.h - `vr-worker serve` internals, shared by worker/cmd_serve.c and
 * worker/serve_*.c.
 *
 * The main thread pulls one chunk at a time (XREADGROUP, group "workers",
 * under a claim: rq_claim.h), runs pipeline_run() on it, makes the output
 * durable and reports it done; the controller commits it (result recorded
 * -> XACK, only while the claim still holds the entry). A heartbeat thread
 * with its own Redis connection refreshes vr:worker:<name> (TTL), reports
 * the lease renewed for the chunk being processed and stops the pipeline
 * when the chunk record shows it lost or the job ended.
 */
#ifndef VR_SERVE_H
#define VR_SERVE_H

#include "pipeline.h"
#include "remux_range.h"
#include "rq.h"
#include "rq_claim.h"
#include "rq_warm.h"
#include "storage.h"
#include "url_root.h"

#include <pthread.h>
#include <signal.h>

struct serve {
    char url[512];
    char storage[STORAGE_PATH_MAX];   /* "" with --storage URL alone */
    char storage_url[URL_ROOT_MAX];   /* --storage URL: chunk outputs go up there by WebDAV
                                       * (serve_url.c); "": into the storage directory */
    char input_root[STORAGE_PATH_MAX]; /* range tasks' sources lie under it (--input-root) */
    char input_url_root[URL_ROOT_MAX]; /* range tasks' URL sources lie under it (--input-root
                                        * URL; "": none allowed) */
    char name[128];               /* worker name host:gpuN|cpu:nonce */
    char claim_key[RQ_CLAIM_KEY_HEX]; /* its claims' key ($VR_WORKER_CLAIM_KEY from a
                                   * `serve --slots` parent, else drawn at start) */
    long long claims;             /* claims made: the next read's is claim `claims` */
    struct rq_claim claim;        /* the next read's claim (a new one after each delivery) */
    enum seg_backend backend;
    int gpu;
    int hb_ms;                    /* heartbeat and lease renewal period */
    long long max_chunks;         /* stop after this many (0 = no limit) */
    int encode_threads;           /* --encode-threads (0: one per core) */
    int host_slots;               /* --host-slots: workers sharing this host's cores (0: 1) */
    struct rq *q;                 /* main thread's connection */
    struct pipe_warm warm;        /* main thread's engine, kept across chunks */
    int cold;                     /* VR_WARM_ENGINE=0: a new engine per chunk */
    char warm_from[STORAGE_PATH_MAX]; /* --warm-from (resolved), or "" */
    int warm_together;            /* --warm-together: a lane's warm-ups at once (0: auto) */
    char host[65];                /* this host's name for vr:warm:<host>, or "" (none fits) */
    char warm_src[RQ_WARM_SOURCE_MAX]; /* what this worker last remembered there */
    char warm_fmt[RQ_WARM_FORMAT_MAX];
    volatile sig_atomic_t *drain; /* SIGTERM: finish the chunk, take no more */
    struct log_ctx *logctx;       /* its log group (a worker of several in one process:
                                   * --slot-mode threads), which its threads join; NULL
                                   * the process's */
    int env_fault;                /* the last chunk failed on this worker's own files
                                   * (serve_chunk.c serve_error_mine) */
    int storage_fault;            /* ... on the shared storage (its root, the output side):
                                   * reported as such for the fleet's pause (rq_pause.h) */
    int faults_in_row;            /* chunks failed on its own environment, in a row */
    double quarantine_s;          /* the quarantine's backoff now (0: none yet) */
    double probe_at;              /* quarantined: monotonic time of the next probe */

    pthread_mutex_t mu;           /* guards the fields below */
    int busy;
    int warming;                  /* serve_warmup under way: the heartbeat says "warming" */
    struct rq_held held;          /* the entry being processed, and its claim */
    long long started_ms;
    long long chunk_frames;       /* frames encoded of the chunk in hand (the pipeline stores
                                   * it atomically, outside mu; pipe_opts.frames_live) */
    volatile int cancel;          /* handed to pipeline_run */
    int lost;                     /* lease lost: never commit or ack */
    int job_ended;                /* job cancelled or failed meanwhile */
    int committing;               /* the done report is under way: the chunk record may
                                   * show it done now, which is no loss */
    int quarantined;              /* takes no work until probe_at (shown by the heartbeat) */
    int fleet_paused;             /* the fleet is paused (rq_pause.h): no work taken; the
                                   * heartbeat thread looks each beat */
    long long chunks_done, frames_done;
    double last_fps;
    double last_gpu_util;         /* of the last chunk, percent; -1 unknown */
    long long last_gpu_mem;       /* peak device bytes of the last chunk; 0 unknown */
    int stop_hb;
    long long hb_trips;           /* heartbeat thread's round trips, set when it ends */
    char cut_seen[48];            /* the last cut of the chunk in hand asked of its reader
                                   * (the record's `end`, rq_cut.h); "" none */
    long long cut_frames;         /* the frames of the range it was cut to (-1: unknown) */
    char cut_prev[48];            /* the cut asked before it, which the reader may have taken */
    long long cut_prev_frames;
    int aside_heard;              /* the chunk in hand was cut for this worker's slowness */
    double aside_until;           /* stepping aside from the tails until then (monotonic s;
                                   * 0 not: serve_aside.c) */
    char aside_job[48];           /* ... or until this job (the cut chunk's) ends */

    struct remux_cut cut;         /* the reader's end, moved by a cut (its own lock) */
};

/* Quarantine (issue 42, finding 2): a worker whose chunks fail this many
 * times in a row on its own environment (its input root, a read-only
 * storage mount, its GPU) takes no work, and takes one chunk as a probe
 * after SERVE_PROBE_FIRST_S, doubling at each failed probe up to
 * SERVE_PROBE_MAX_S; a chunk done ends it. */
#define SERVE_QUARANTINE_AFTER 3
/* Codec failures of a chunk charged to workers before the chunk's own
 * (serve_chunk.c, serve_codec_mine). */
#define SERVE_CODEC_FAULTS 3
#define SERVE_PROBE_FIRST_S    4.0
#define SERVE_PROBE_MAX_S      60.0

/* The environment variable a `serve --slots` parent hands each child its
 * claim key in (never on the command line, which `ps` shows). */
#define SERVE_CLAIM_KEY_ENV "VR_WORKER_CLAIM_KEY"

/* How a GPU's slots run (`serve --slot-mode`): a process each, or threads
 * of one process a GPU (one for all CPU slots), which share one CUDA
 * context: 16 NVDEC sessions decoded 8K HEVC at 382 fps as threads of one
 * process, 296 fps as 16 processes (H200, issue 43), and the serve fleet
 * ran 674 fps on 2 H200s as threads against 585 as processes. The default
 * is SERVE_SLOT_MODE_DEFAULT, here, in one place: threads for GPU slots,
 * processes for CPU slots (no context to share; a crash takes one). */
enum serve_slot_mode { SERVE_SLOTS_PROCESSES, SERVE_SLOTS_THREADS, SERVE_SLOTS_DEFAULT };
#define SERVE_SLOT_MODE_DEFAULT(gpu) ((gpu) ? SERVE_SLOTS_THREADS : SERVE_SLOTS_PROCESSES)

/* `vr-worker serve --gpu all` / `--slots N` (worker/serve_slots.c): runs
 * `slots` workers on each GPU (all: every GPU, else GPU `gpu`; gpu < 0:
 * CPU workers; slots 0: auto), as processes or as threads of a process
 * per GPU (mode); replaces a worker process killed by a signal and
 * requeues its workers' chunks through Redis at `url`; returns the exit
 * status (0 when every worker drained or ended well). */
int serve_slots(int argc, char **argv, int all, int gpu, int slots, enum serve_slot_mode mode,
                const char *url);

/* Most workers a process runs (--slots' bound). */
#define SERVE_SLOTS_MAX 16
/* --slot-names: SERVE_SLOTS_MAX names of at most 100 bytes, comma-separated */
#define SERVE_SLOT_NAMES_LEN (SERVE_SLOTS_MAX * 101 + 1)

/* A worker name's rule (--name, --slot-names): 1..100 of [A-Za-z0-9:._-].
 * 1 or 0. */
int serve_name_valid(const char *s);

/* Runs the workers named in `names` (comma-separated, each valid, at most
 * SERVE_SLOTS_MAX) as threads of this process (worker/serve_threads.c),
 * each a copy of `base` (options resolved, claim key set) under its own
 * name, Redis connections, heartbeat, claims and kept decoder and engine,
 * each thread running `run` (serve_run: passed in, so that this file and
 * cmd_serve.c do not call each other). Returns the exit status: 0 when
 * every one drained or ended well. */
int serve_threads(const struct serve *base, const char *names, int (*run)(struct serve *));

/* One worker's run (cmd_serve.c): Redis, the heartbeat thread, the
 * warm-up and the pull loop until a drain (s->drain) or its end; the exit
 * status. */
int serve_run(struct serve *s);

/* A worker's name in Redis: host:dev:8 random hex digits (dev "gpu0",
 * "cpu"), into buf of size n. */
void serve_name_make(char *buf, size_t n, const char *dev);

/* Warms the worker before its first chunk (worker/serve_warmup.c): the
 * decoder, engine and encoder probe for --warm-from's source, else for the
 * source this host's last job read (vr:warm:<host>), one worker of the
 * host at a time; s->warming meanwhile. A warm-up that cannot be made is
 * logged and skipped: the worker serves anyway. */
void serve_warmup(struct serve *s);

/* After a chunk read in place from `source` succeeded: remembers its
 * format and source for the host (vr:warm:<host>) when either changed. */
void serve_warm_note(struct serve *s, const char *source);

/* Cuts (worker/serve_cut.c, queue/rq_cut.h). serve_cut_reset: a new chunk
 * in hand, none asked. serve_cut_poll (the heartbeat, with the lease
 * renewal): a cut of h found in its record is asked of the reader.
 * serve_cut_end (the pipeline ended): the end the worker stopped at into
 * end (n bytes; rq_cut_end_text, the task's own end when no cut was taken)
 * and the frames its range holds into *frames; 1 when a cut was taken. */
struct chunk_task;
void serve_cut_reset(struct serve *s);
void serve_cut_poll(struct serve *s, struct rq *q, const struct rq_held *h);
int serve_cut_end(struct serve *s, const struct chunk_task *t, char *end, size_t n,
                  long long *frames);

/* A straggler steps aside from the tails (worker/serve_aside.c, rq_cut.h
 * RQ_CUT_ASIDE_MS). serve_aside_heard (the heartbeat, with a fresh cut of
 * h): notes whether the cut was for this worker's slowness.
 * serve_aside_begin (s->mu held, the chunk in hand ended): the step aside
 * starts when it was. serve_aside (the pull loop, each turn): 1 while the
 * worker steps aside (it reads no priority stream), 0 not. */
void serve_aside_heard(struct serve *s, struct rq *q, const struct rq_held *h);
void serve_aside_begin(struct serve *s);
int serve_aside(struct serve *s);

/* Heartbeat thread body (arg: struct serve *). */
void *serve_hb_main(void *arg);

/* The claim the next read is made under: claim s->claims of s->name.
 * Returns 0 or VR_E*. */
int serve_claim_next(struct serve *s, vr_err *err);

/* Processes one entry delivered under `claim` end to end (start, pipeline,
 * done or failure reported). Returns 0, or <0 on a Redis error (the entry
 * stays pending and is reclaimed after the lease). */
int serve_chunk(struct serve *s, const struct rq_msg *m, const struct rq_claim *claim);

/* Reports about the chunk in hand (its start, its done) are retried with
 * backoff (rq_backoff) while Redis is unreachable or refuses writes (a
 * restart, maxmemory), for at most SERVE_RETRY_S: past the controller's
 * lease (30 s by default) the chunk has most likely been reclaimed, and
 * the controller refuses the report once Redis is back; the limit only
 * keeps a worker from waiting forever on a Redis that never returns
 * (worker/serve_retry.c). */
#define SERVE_RETRY_S 120.0

struct serve_retry {
    double t0;          /* monotonic time of the first try */
    int tries;          /* tries failed so far */
    char first[256];    /* the first failure's first line */
};

void serve_retry_begin(struct serve_retry *r);

/* After a failed try (its error in e): 1 once q's backoff was slept and
 * another try is due, 0 when the tries have lasted SERVE_RETRY_S. */
int serve_retry_again(struct serve_retry *r, struct rq *q, const vr_err *e);

/* Checks the delivered entry h against its chunk record (rq_chunk_peek,
 * the task into st) and reports it started, retrying both while Redis is
 * unreachable or refuses writes (worker/serve_start.c). Returns
 * RQ_HELD_YES started, VR_EFORMAT started with a task that cannot be read
 * (err says why: the chunk fails at once), RQ_HELD_LOST or
 * RQ_HELD_JOB_ENDED (why, whyn bytes, says which: to be skipped), or
 * another error <0, logged (given up: the entry waits out its lease). */
int serve_start(struct serve *s, const struct rq_held *h, struct rq_start *st, char *why,
                size_t whyn, vr_err *err);

/* Reports the finished chunk done (rq_report_done, with its output's
 * checksum `sum` and `note` for the job's events), retrying with backoff
 * while Redis is unreachable or refuses writes, until the heartbeat sees
 * the chunk lost or the job ended, or SERVE_RETRY_S has passed.
 * Returns 1 reported, 0 lost, RQ_COMMIT_JOB_ENDED, or the last error
 * (<0). The controller commits it while the claim still holds the entry. */
int serve_commit(struct serve *s, const struct rq_held *h, long long frames, double fps,
                 const char *metrics_json, const char *sum, const char *note, vr_err *err);

/* ---- chunk outputs by HTTP (serve_url.c) ---- */

/* A new staging directory under $TMPDIR (its name in dir): its descriptor,
 * or VR_E*. */
int serve_url_stage(char *dir, size_t n, vr_err *err);

/* Puts the staged output (and its sidecar, ts_path non-NULL) to
 * <--storage URL><rel>: PUT to a temporary name, then MOVE. 0 or VR_E*. */
int serve_url_put(const struct serve *s, const char *rel, const char *out_path,
                  const char *ts_path, vr_err *err);

#endif

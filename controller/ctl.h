/*
 * ctl.h - the controller's internals, shared by controller/ctl_*.c.
 *
 * One controller process owns one Redis connection for its loop and one for
 * each of its threads (hiredis contexts are per thread): the heartbeat, the
 * reports, the webhooks and the stitch (a job's stitch and its publish run
 * there, beside the loop, ctl_stitch_thread.c). The loop: read new
 * jobs and results (XREADGROUP, group "controllers"), reclaim chunks whose
 * lease lapsed, audit every active job against its manifest (lost XADDs,
 * missing outputs, finished jobs, jobs a dead controller held), trim the
 * streams safely. Redis state is the truth, so a restarted controller (or a
 * second one) carries on where another stopped.
 */
#ifndef VR_CTL_H
#define VR_CTL_H

#include "job.h"
#include "remux.h"
#include "rq.h"
#include "storage.h"
#include "url_root.h"

#include <signal.h>

/* ---- webhooks (ctl_notify.c) ---- */

#define CTL_NOTIFY_SECRET_MAX   1024      /* bytes of the signing secret */
#define CTL_NOTIFY_RETRY_MS     1000      /* the first retry's delay; it doubles */
#define CTL_NOTIFY_RETRY_MAX_MS 300000    /* ... up to 5 minutes */
#define CTL_HB_TTL_MS           10000     /* the heartbeat key lapses this long after a beat */
#define CTL_READ_BLOCK_MS       500       /* the loop's read of jobs and results blocks this long */

/* What `vr-controller run` was told about webhooks. */
struct ctl_notify_cfg {
    char url[JOB_NOTIFY_MAX];     /* --notify: every job's end is POSTed here too; "" none */
    char secret[CTL_NOTIFY_SECRET_MAX]; /* --notify-secret-file's first line; "" = unsigned */
    size_t secret_len;
    double timeout_s;             /* --notify-timeout: one POST, its redirects included */
    int max_attempts;             /* --notify-attempts: rounds before a URL is given up */
    int allow_private;            /* --notify-allow-private: loopback, private and
                                   * link-local addresses may be POSTed to */
    int test_public_port;         /* tests only (VR_TEST_NOTIFY_PUBLIC_PORT): a loopback
                                   * address on this port counts as public, the first
                                   * hop of a redirect test; 0 none */
    long long retry_ms;           /* the first retry's delay (CTL_NOTIFY_RETRY_MS, or
                                   * VR_TEST_NOTIFY_RETRY_MS in tests) */
};

#define CTL_SUBMITTERS_MAX 64

struct ctl {
    struct rq *q;                 /* the loop's connection */
    char url[512];
    char storage[STORAGE_PATH_MAX];
    char input_root[STORAGE_PATH_MAX];  /* jobs' inputs lie under it (--input-root) */
    char input_url_root[URL_ROOT_MAX];  /* jobs' URL inputs lie under it (--input-root URL;
                                         * "": none allowed) */
    char output_root[STORAGE_PATH_MAX]; /* jobs' outputs lie under it (--output-root) */
    char output_url_root[URL_ROOT_MAX]; /* jobs' URL outputs lie under it (--output-root URL;
                                         * "": none allowed) */
    char storage_url[URL_ROOT_MAX];     /* chunk outputs lie under it (--storage URL,
                                         * ctl_chunk_url.c); "": beneath the storage root */
    char name[128];               /* consumer name host:ctl:nonce, unique per start */
    long long lease_ms;           /* idle time after which a chunk is reclaimed */
    int keep_chunks;              /* keep storage/jobs/<id>/ after success */
    long long keep_jobs_ms;       /* --keep-jobs: an ended job is purged this long after its
                                   * end (0: kept for ever) */
    int retain_each_audit;        /* tests only (VR_TEST_RETAIN_EACH_AUDIT=1): retention
                                   * every audit (a second), not every fifth */
    int hb_ttl_ms;                /* the heartbeat key's TTL (CTL_HB_TTL_MS; tests may
                                   * shorten it: VR_TEST_CTL_HB_TTL_MS), a beat a fifth of it */
    int read_block_ms;            /* the loop's read blocks this long (CTL_READ_BLOCK_MS; tests
                                   * may lengthen it: VR_TEST_CTL_READ_BLOCK_MS) */
    volatile sig_atomic_t *stop;
    struct ctl_stitch *stitches;  /* jobs stitched ahead (ctl_stitch.c): the stitch
                                   * thread's copy holds them, the loop's none */
    int nstitches;
    struct ctl_stitcher *stitcher; /* the stitch thread (ctl_stitch_thread.c); NULL: the
                                   * stitch runs where it is asked for */
    const struct ctl *stitch_view; /* the stitch thread's copy, whose pulse (set while it
                                   * works on a job, 0 idle) counts as this one's */
    struct ctl_chunk_gc *chunk_gc; /* the chunk objects' sweeper (ctl_chunk_gc.c); NULL:
                                   * sweeps run where they are asked for */
    long long last_reclaim_ms;    /* monotonic: the loop's and the split's last reclaim */
    double oom_seen_s;            /* monotonic: when Redis was last seen out of memory (0
                                   * never): a lease that lapsed since was refused, not lost */
    void (*between_chunks)(struct ctl *c); /* the loop's hook, run by a copy split between
                                  * chunks: the results waiting, lapsed leases; NULL none */
    struct ctl_notify_cfg notify; /* webhooks */
    long long loop_turn_ms;       /* monotonic: the loop's last turn or step of progress (a
                                   * split's chunk, a stitched chunk); 0 before the loop.
                                   * Read by the heartbeat and /healthz threads (atomics) */
    long long stall_ms;           /* --loop-stall-seconds: no turn for this long = stuck */
    int max_chunks;               /* --max-chunks: a job's chunk length is widened to keep
                                   * it within this many (issue 41, finding 9) */
    struct ctl_submitter {        /* --submitter NAME:MAX[:CHUNKS] (ctl_submitters.c) */
        char name[32];
        int max_live;             /* its jobs queued or running at once, at most */
        int max_chunks;           /* chunks its live jobs hold at once, at most (0: no
                                   * limit but --max-chunks): a live count */
    } submitters[CTL_SUBMITTERS_MAX];
    int nsubmitters;
};

/* Submitters who act as themselves (ctl_submitters.c, queue/rq_submit.h):
 * `--submitter NAME:MAX` (usage errors said; 0 or the exit code), and the
 * loop's intake of their streams: each job asked for is checked against
 * the submitter's roots (NAME/ under --input-root and --output-root) and
 * limit, then recorded with owner NAME, or recorded failed saying why. */
int ctl_submitter_option(struct ctl *c, const char *arg);
void ctl_submitters_intake(struct ctl *c);

/* A cancel or retry entry of s's stream (ctl_submit_cmd.c): done only for
 * s's own job, answered in vr:reply:NAME:<entry>. 0 handled (ack it), <0
 * Redis failed (taken again). */
int ctl_submitter_cmd(struct ctl *c, const struct ctl_submitter *s, const struct rq_msg *m);

/* A job entry m of s's stream (ctl_submit_check.c), untrusted: its spec
 * parsed into js (its id the entry's), its frame estimate into *frames.
 * 0, or 1 malformed (why said, n bytes). */
int ctl_submit_parse(const struct ctl_submitter *s, const struct rq_msg *m, struct job_spec *js,
                     long long *frames, char *why, size_t n);

/* Why s may not have job js ("" when it may): a path outside the roots
 * (s's own NAME/ under them for a submitter), a profile or override the
 * job's start would refuse, a submitter's limit reached. <0 when Redis
 * failed (try again next turn). */
int ctl_submit_refusal(struct ctl *c, const struct ctl_submitter *s, const struct job_spec *js,
                       char *why, size_t n);

/* The operator's purge (ctl_operator.c), asked in vr:submit:@ops: cmd
 * "purge" of job arg, or "purge-before" of every job ended before arg
 * (ms). The answer's code (0 done, 1 live, 2 none or malformed) and text;
 * <0 Redis failed. */
int ctl_operator_purge(struct ctl *c, const char *cmd, const char *arg, char *text, size_t n);

/* The most chunks job id may have (ctl_submitter_chunks.c): --max-chunks,
 * or less for a job of a submitter with a chunk limit: what its other
 * live jobs leave of its CHUNKS, one kept for each job it may still start
 * (noted in the job's record as chunk_cap, and read back on a resumed
 * split). ctl_submitter_may_add_chunks: 1 when n more chunks of job id
 * (an elastic cut's tails) keep its submitter within CHUNKS, else 0. */
int ctl_submitter_chunk_cap(struct ctl *c, const char *id);
int ctl_submitter_may_add_chunks(struct ctl *c, const char *id, int n);

/* The loop made progress (ctl_run.c): a turn, a chunk of a copy split, a
 * chunk stitched. */
void ctl_loop_pulse(struct ctl *c);

/* Seconds since the loop's last pulse when that is more than c->stall_ms
 * (the loop is stuck: a blocking open, a huge file summed), or since the
 * stitch thread's while it works on a job, else 0. Safe from any thread. */
double ctl_loop_stalled(const struct ctl *c);

/* The stitch thread (ctl_stitch_thread.c): job ends stitched and
 * published beside the loop, with a connection of its own, so results,
 * claims and starts never wait behind a stitch or an upload.
 * ctl_stitcher_start: 0, or VR_E* (then everything stitches on the loop,
 * as ctl_stitcher_post says). ctl_stitcher_stop: after *c->stop, lets the
 * job under way end, joins and frees; no thread is fine. */
int ctl_stitcher_start(struct ctl *c, vr_err *err);

/* A thread's view of the controller (the stitch thread's, the chunk
 * sweeper's): a shallow copy of c without the loop's own state (its
 * connection, stitches, hooks, the webhook secret) and with a Redis
 * connection of its own. 0, or VR_E* (tc->q is then NULL). */
int ctl_thread_view(struct ctl *tc, const struct ctl *c, vr_err *err);
void ctl_stitcher_stop(struct ctl *c);

/* Asks for job id's stitch: ahead (a running job's done chunks appended,
 * ctl_stitch_progress) when `ahead`, then its end (ctl_stitch_finish) if
 * it is due. Queued for the thread and returns at once; with no thread,
 * done here. */
void ctl_stitcher_post(struct ctl *c, const char *id, int ahead);

/* Asks for the stitches ahead of jobs no longer running to be dropped
 * (ctl_stitch_sweep), on the thread that holds them. */
void ctl_stitcher_sweep(struct ctl *c);

struct ctl_paths;        /* a job's files, held beneath the roots (below) */
struct remux_stitcher;

/* Controller entry point (the "run" row of vr-controller's table). */
int cmd_controller_run(int argc, char **argv);

/* The Prometheus endpoint (ctl_prom.c): serves /metrics and /healthz on
 * `listen` ("[ADDR:]PORT", "[V6]:PORT"; no ADDR: 127.0.0.1) from threads
 * of its own (ctl_http.c) with its own connection to `url`, each scrape
 * from a snapshot at most a second old. Returns 0, or VR_E* with the
 * reason (bad address, cannot bind); *out is set on success. */
struct ctl_prom;
int ctl_prom_start(const char *listen, const char *url, struct ctl_prom **out, vr_err *err);

/* Stops serving and frees; accepts NULL and clears the pointer. */
void ctl_prom_stop(struct ctl_prom **p);

/* From now on /healthz answers 503 while c's loop is stuck
 * (ctl_loop_stalled), naming how long: a controller whose Redis answers
 * but whose loop does nothing is not healthy. c outlives p. */
void ctl_prom_watch(struct ctl_prom *p, const struct ctl *c);

/* The Prometheus text of `fs` (ctl_prom_text.c): *out is malloc'd (the
 * caller frees it), *len its length. VR_ENOMEM when it would pass 4 MiB or
 * memory ran out (nothing is returned then). */
struct rq_fleetstats;
int ctl_prom_text(const struct rq_fleetstats *fs, char **out, size_t *len);

/* Webhooks (ctl_notify.c). The delivery thread, with its own Redis
 * connection, claims the deliveries that job ends scheduled
 * (queue/rq_notify.h), POSTs each job's event to its URLs through one
 * sender per receiver (ctl_notify_send.h: a thread, a libcurl handle and
 * a bounded queue each) and records the round, so a slow or dead receiver
 * never holds up the loop nor another receiver.
 * Started for every controller (a job may carry its own URL); stops when
 * *c->stop is set, a POST in flight being cut short. curl_global_init must
 * have run. Returns 0, or VR_E* when the thread cannot start (*out NULL). */
struct ctl_notify;
int ctl_notify_start(struct ctl *c, struct ctl_notify **out, vr_err *err);

/* Joins the thread and frees; accepts NULL and clears the pointer. */
void ctl_notify_stop(struct ctl_notify **n);

/* ---- the notes a job's start writes, in one call (ctl_notes.c) ---- */
#define CTL_NOTES_MAX 12
struct ctl_notes {
    int n, lost;                  /* lost: one did not fit (ctl_notes_write refuses) */
    const char *field[CTL_NOTES_MAX]; /* static texts */
    size_t off[CTL_NOTES_MAX], used; /* each value's place in text */
    char text[JOB_NOTIFY_MAX + 512];
};
/* Adds field = value (copied) to the notes. */
void ctl_note(struct ctl_notes *nt, const char *field, const char *value);
void ctl_note_ll(struct ctl_notes *nt, const char *field, long long v);
/* Writes the notes gathered so far to job id's record in one round trip
 * (rq_job_notes) and empties them; none: nothing is sent. 0 or VR_E*. */
int ctl_notes_write(struct ctl *c, const char *id, struct ctl_notes *nt, vr_err *err);

/* Notes the URL job `id`'s end goes to (its `notify` field) in nt: the
 * spec's own (js; NULL when the spec is invalid: its URL is not trusted;
 * this controller's --notify stays in its config). Called when the
 * controller starts the job. */
void ctl_notify_urls(const struct job_spec *js, struct ctl_notes *nt);

/* Reads the signing secret (--notify-secret-file, else $VR_NOTIFY_SECRET_FILE
 * when path is NULL; neither: unsigned) into cfg. 0 or VR_EINVAL with the
 * reason. */
int ctl_notify_secret(const char *path, struct ctl_notify_cfg *cfg, vr_err *err);

/* The start-up sweep of the output directories (ctl_sweep.c): the
 * temporary outputs that controllers which died left beside the recent
 * jobs' outputs, by the rule of the storage sweep (their owner's lease
 * lapsed in Redis). Returns the count removed. */
long long ctl_sweep_outputs(struct ctl *c);

/* storage_owner_live_fn over c's Redis (rq_owner_live); ctx is the ctl. */
int ctl_temp_owner_live(void *ctx, const char *owner);

/* Splits job `id` and enqueues its chunks if this controller can take it
 * (state queued, or splitting under a dead controller). Failures mark the job
 * failed with the reason; returns <0 only for Redis errors (retry later). */
int ctl_job_start(struct ctl *c, const char *id);

/* Stitches a job whose chunks are all done (if this controller can take it),
 * verifies it, records the figures; requeues chunks whose outputs vanished. */
int ctl_stitch_finish(struct ctl *c, const char *id);

/* Stitching ahead (ctl_stitch.c): appends the chunks of running job `id`
 * that are done, in order, to its output under a temporary name (begun
 * once chunk 0 is done). Drops the job's stitcher once it is not running. */
void ctl_stitch_progress(struct ctl *c, const char *id);

/* Hands job id's stitcher to the end of the job (NULL when there is none
 * or an append failed: the end then stitches the whole job), with the
 * job's files it writes through (*files, the caller's to close; closed
 * ones when NULL is returned) and the first chunk index it lacks (*next). */
struct remux_stitcher *ctl_stitch_take(struct ctl *c, const char *id, struct ctl_paths *files,
                                       int *next);

/* 1 when job id is elastic: planned in pieces, its chunks cut as it runs
 * (ctl_cut.c); its chunk indices are the pieces some chunk starts at. */
int ctl_stitch_elastic(struct ctl *c, const char *id);

/* Checksums taken side by side ahead of the stitch's in-order copy
 * (ctl_stitch_sums.c). ctl_sums_ahead sums chunk idx[k]'s files fds[k]
 * (its output, and its sidecar or -1; the caller's, left open) on up to 8
 * threads and keeps each sum with the files' identity; returns how many
 * it kept. ctl_sums_take: 1 with `out` set when a sum of job id's chunk
 * idx was kept for the very files fd and tfd (-1: none) are, consumed;
 * else 0 and the caller sums them itself. */
int ctl_sums_ahead(const char *id, const int *idx, const int (*fds)[2], int n);
int ctl_sums_take(const char *id, int idx, int fd, int tfd, char out[STORAGE_SUM_LEN]);

/* Drops job id's stitcher (its temporary output too); all of them at exit. */
void ctl_stitch_drop(struct ctl *c, const char *id);
void ctl_stitch_drop_all(struct ctl *c);

/* Drops the stitchers of jobs no longer running (failed, cancelled, taken
 * to the stitch by another controller, gone), with their temporary
 * outputs and descriptors. Run by every audit: an ended job leaves the
 * active set, so the audit's walk never reaches it again (issue 26,
 * finding 5: cancelled jobs' temps piled up in the output directory and
 * their slots stayed full until a restart). */
void ctl_stitch_sweep(struct ctl *c);

/* Removes the chunk files (storage/jobs/<id>/{in,out}) of the done jobs
 * whose cleanup is due (rq_cleanup_due), unless --keep-chunks, and with a
 * --storage URL posts every due ended job to the chunk objects' sweeper.
 * Run by every audit: the files go only once Redis has made the done
 * durable, so a crash that rolls the done back leaves the stitch what it
 * needs. */
void ctl_cleanup_due(struct ctl *c);

#define CTL_KEEP_JOBS_DEFAULT_MS (7LL * 86400 * 1000) /* --keep-jobs: a week */
#define CTL_MAX_CHUNKS   1000 /* --max-chunks: queued at ~0.5 ms each, the loop's pause
                               * stays under a second */
#define CTL_LOOP_STALL_S 60.0 /* --loop-stall-seconds: a plan of 20 000 chunks takes ~11 s */

/* Purges the jobs that ended more than --keep-jobs ago: their Redis
 * records and storage/jobs/<id> (ctl_retain.c). Run by the deep audit. */
void ctl_retain(struct ctl *c);

/* Removes storage/jobs/<id> directories without a job record in Redis once
 * they have been orphans (first seen by Redis's clock, kept in
 * vr:orphan-dirs) longer than --keep-jobs, or an hour when that is 0
 * (ctl_retain_dirs.c). Run by ctl_retain. */
void ctl_retain_orphan_dirs(struct ctl *c);

/* Marks a job failed with `reason` (unless it already ended). token: the
 * claim under which this controller holds the job when the failure is its
 * own split's or stitch's (refused, with a line, once another controller
 * claimed the job meanwhile); 0 for a failure of the job's work (a dead
 * chunk), whoever holds it. */
int ctl_jobfiles_fail(struct ctl *c, const char *id, long long token, const char *reason);

/* Reclaims chunk entries idle for longer than the lease: requeue or
 * dead-letter (rq_chunk_fail), once the reports a dead controller left
 * unhandled are handled. Returns entries handled or <0. */
int ctl_reclaim(struct ctl *c);

/* Walks the active jobs (vr:active): starts, finishes, fails, repairs. */
int ctl_audit(struct ctl *c, int deep);

/* Says at error level that job id's record lost its state although the job
 * was live here (in the active set, or stitching): a purge deletes a record
 * and its active entry in one script, so Redis lost writes (an AOF it
 * refused to replay on restart, a stale replica, a hand-made DEL). */
void ctl_lost_job(struct ctl *c, const char *id);

/* Handles one worker report (vr:reports, ctl_reports.c) on connection q:
 * the state change it asks for, once it proves its claim (rq_claim.h); one
 * that does not is logged and changes nothing. Returns what the change
 * returned, or CTL_REPORT_LATER when Redis refused its writes (maxmemory):
 * nothing was changed, and the report is left pending, unacked, for
 * ctl_reclaim to handle again. */
#define CTL_REPORT_LATER (-9000)
int ctl_report(struct rq *q, const struct rq_msg *m);

/* Handles and acks up to max reports waiting, without blocking, on the
 * loop's connection. Returns how many, or <0 when Redis failed. */
int ctl_reports_drain(struct ctl *c, int max);

/* The thread that reads the reports as they come, with a connection of
 * its own, until *c->stop. Returns 0 or VR_ENOMEM; *out is set. */
/* A worker's failure on the shared storage (report r, RQ_FAIL_STORAGE),
 * noted for the fleet-wide pause; pausing raises an alert and an event
 * (ctl_pause.c). */
struct rq_report;
void ctl_pause_note(struct rq *q, const struct rq_report *r, const char *reason);

struct ctl_reports;
int ctl_reports_start(struct ctl *c, struct ctl_reports **out, vr_err *err);

/* Joins the thread (after *c->stop) and frees; accepts NULL, clears it. */
void ctl_reports_stop(struct ctl_reports **t);

/* Handles one vr:results entry: chunk idx of job ended `kind` under stream
 * entry `entry` ("" when the result names none: ignored, as is any result
 * that does not match the chunk record; ctl_results.c). */
int ctl_result(struct ctl *c, const char *job, int idx, const char *kind, const char *entry);

/* What every chunk of a job is processed with (ctl_decide.c). */
struct ctl_decision {
    int warmup;                   /* frames of history the temporal filter needs */
    int wave_slots;               /* auto chunk length: the last wave graded over this many
                                   * slots (remux_plan_opts); 0: even chunks */
    char layout[8];               /* mono | sbs | tb */
    const char *why;              /* how the layout was decided (static text) */
    double piece_s;               /* > 0: an elastic job (auto chunk length, ranges): planned
                                   * in pieces this long, its chunks whole pieces that a cut
                                   * may part again (ctl_cut.c); 0: chunks never cut */
    double duration_s;            /* the source's, from the start's probe (0: unknown) */
};

/* The source's probe at a job's start: taken once (ctl_job.c) and read by
 * each step that needs it (the chunk length, its bound, ctl_decide), where
 * each probed the source again before. */
struct ctl_probe {
    int rc;                       /* remux_probe's: 0, or VR_E* with the reason in err */
    vr_err err;
    struct remux_info info;       /* the source's, when rc is 0 */
};

/* Decides from the spec and the source (opened as `in`, named by
 * js->input; p: its probe): the config (profile + overrides) must load,
 * the source must have probed and open. Returns 0 or VR_E* with the
 * reason (the probe's own when it failed). */
int ctl_decide(const struct job_spec *js, const char *in, const struct ctl_probe *p,
               struct ctl_decision *d, vr_err *err);

/* ---- chunking a job: ranges (ctl_plan.c) or the copy split (ctl_split.c) ---- */

/* Plans job id's source (p->in, open beneath the input root) as ranges
 * read in place, writes the manifest (ranges = 1) and queues every chunk
 * (records created once: a controller that takes a half-planned job over
 * plans again, deterministically). The start's notes nt, with the plan's
 * (chunks_planned, chunking, an elastic job's pieces), are written in one
 * call before the first chunk is queued. *man gets the manifest. Returns 0,
 * VR_ENOTSUP with the reason when ranges cannot be read exactly (the
 * caller takes the copy split), or VR_E*. */
int ctl_plan(struct ctl *c, const char *id, const struct job_spec *js,
             const struct ctl_decision *d, const struct ctl_paths *p, struct ctl_notes *nt,
             struct job_manifest *man, vr_err *err);

/* Elastic jobs (ctl_plan.c, ctl_cut.c). ctl_range_merge: pieces [a, b) of
 * pl as one range. ctl_range_task_json: chunk idx's task of range r, its
 * source's fingerprint fp, as JSON into *task (free). ctl_cut_keep: keeps
 * pl (taken: *pl is zeroed) as job id's pieces. ctl_cut_turn: a turn of
 * the loop; cuts a running chunk for an idle worker when no chunk waits
 * (at most every 250 ms). */
struct remux_plan;
struct chunk_range;
void ctl_range_merge(const struct remux_plan *pl, int a, int b, struct chunk_range *out);
int ctl_range_task_json(const char *id, const struct job_spec *js, const char *layout,
                        int idx, const struct chunk_range *r, const char *fp, char **task,
                        vr_err *err);
void ctl_cut_keep(struct ctl *c, const char *id, struct remux_plan *pl, const char *fp);
void ctl_cut_turn(struct ctl *c);

/* Cuts job id's source into chunk files and queues each as it is cut
 * (between chunks c->between_chunks runs), or queues the chunks of a
 * manifest a split finished before. *man gets the manifest. 0, or
 * VR_ECANCELED (the job stopped splitting meanwhile), or VR_E*. */
int ctl_split(struct ctl *c, const char *id, const struct job_spec *js,
              const struct ctl_decision *d, const struct ctl_paths *p,
              struct job_manifest *man, vr_err *err);

/* ---- a job's files, held beneath the roots (ctl_paths.c) ---- */

/* The input and output of a job as opened beneath --input-root and
 * --output-root, with the names libav is given for them. */
struct ctl_paths {
    int in;                             /* the input, O_RDONLY (-1: closed) */
    int out_dir;                        /* the output's directory (-1: not opened) */
    char in_path[JOB_PATH_MAX + 64];    /* /proc/self/fd/<in>, or the input's URL (in -1) */
    char out_path[JOB_PATH_MAX + 64];   /* /proc/self/fd/<out_dir>/<output's name> */
    char out_dir_real[JOB_PATH_MAX];    /* the output's directory, for messages */
    struct storage_publish pub;         /* how the stitch publishes (ctl_paths_owner) */
};
#define CTL_PATHS_OUTPUT 1u             /* also create and open the output's directory */

/* Checks that js->input lies under the input root and js->output under the
 * output root (names: no "..", no path outside), opens the input (a regular
 * file) beneath its root without following links, and refuses an output
 * that is the input. With CTL_PATHS_OUTPUT the output's directory is
 * created and opened beneath the output root too. On failure err names the
 * root and its option, nothing is created and nothing is left open;
 * ctl_paths_close releases a success. */
/* The owned job's part of ctl_paths_open (ctl_paths_owner.c): its paths
 * under its submitter's roots, its input (si; NULL for a URL) readable by
 * that submitter's Unix user, and p->pub: the output's owner and mode, no
 * replace unless js->replace. */
struct stat;
int ctl_paths_owner(struct ctl *c, const struct job_spec *js, const struct stat *si,
                    struct ctl_paths *p, vr_err *err);

int ctl_paths_open(struct ctl *c, const struct job_spec *js, unsigned flags,
                   struct ctl_paths *p, vr_err *err);
void ctl_paths_close(struct ctl_paths *p);

/* The directory of js->output opened beneath the output root (not
 * created), its real name into dir (n bytes), the output's name into base
 * (nb bytes). Returns the descriptor (the caller closes it) or <0. */
int ctl_output_dir_open(struct ctl *c, const struct job_spec *js, char *dir, size_t n,
                        char *base, size_t nb);

/* Turns the /proc/self/fd names of p in err's message back into js's. */
void ctl_paths_unmask(const struct ctl_paths *p, const struct job_spec *js, vr_err *err);

/* ---- a job's output by URL (ctl_url_out.c) ---- */

/* ctl_paths_open's output part for a URL output: under --output-root URL,
 * a plain file name, no object there unless js->replace (flags 0, the
 * job's take); with CTL_PATHS_OUTPUT p's output is a local staging file
 * beneath the storage root (url-out/<hash>/<name>). 0 or VR_E*. */
int ctl_url_out_open(struct ctl *c, const struct job_spec *js, unsigned flags,
                     struct ctl_paths *p, vr_err *err);

/* After the stitch published p's output: for a URL output, uploads it
 * whole (PUT to a temporary name, MOVE) and removes the local copy; 0 or
 * VR_E* naming the object and the HTTP status. Nothing for a path. */
int ctl_url_out_publish(const struct job_spec *js, const struct ctl_paths *p, vr_err *err);

/* Removes a published output: the object (DELETE) or the file at out_path. */
void ctl_url_out_remove(const char *output, const char *out_path);

/* Adds chunk i of job id to the stitch *s, its output opened beneath the
 * storage root; begins the stitch (*s NULL) with the job's files p, open
 * with CTL_PATHS_OUTPUT, which must stay open until the stitch ends.
 * Returns 0, <0, or CTL_CHUNK_DAMAGED: the output (or its sidecar) does
 * not match the checksum its commit recorded (damaged or truncated on the
 * storage since): nothing added, said in the log and the job's events; the
 * caller requeues the chunk (ctl_chunk_redo). */
#define CTL_CHUNK_DAMAGED 1
int ctl_stitch_chunk(struct ctl *c, const char *id, int i, struct remux_stitcher **s,
                     const struct job_spec *js, const struct job_manifest *man,
                     const struct ctl_paths *p, vr_err *err);

/* 1 when running job id is this controller's: it holds it (its name on
 * the job), or the holder's heartbeat key expired and this one claimed it
 * now; 0 when another live controller holds it. Only the holder stitches
 * a job ahead and at its end. */
int ctl_stitch_mine(struct ctl *c, const char *id);

/* Queues done chunk i of a running job again (its output damaged or
 * missing): the job's counters and the chunk's commits lowered, a new
 * entry. Returns rq_chunk_requeue_lost's answer (logged when <0). */
int ctl_chunk_redo(struct ctl *c, const char *id, int i);

/* Opens rel beneath the storage root without following links: a regular
 * file to read (beneath_open_file: a FIFO or device is refused without
 * waiting; its size in *size, which may be NULL), or (dir) a directory
 * created as needed. Returns the descriptor (the caller closes it) with
 * its /proc/self/fd name in fdpath, or <0. */
int ctl_storage_open(struct ctl *c, const char *rel, int dir, char *fdpath, size_t n,
                     long long *size, vr_err *err);

/* storage/jobs/<id> relative paths. */
void ctl_jobfiles_dir(char *buf, size_t n, const char *id, const char *sub);

/* Chunk i's file under the job's `sub` ("in", "out"), relative to the
 * storage root ("" when too long). */
void ctl_chunk_rel(char *buf, size_t n, const char *id, const char *sub, int i);

/* The job's manifest: its absolute path; written durably through the
 * job's directory opened beneath the storage root. */
void ctl_manifest_path(struct ctl *c, const char *id, char *buf, size_t n);
int ctl_manifest_write(struct ctl *c, const char *id, const struct job_manifest *man,
                       vr_err *err);

/* 1 when chunk idx's output (path gets its name) is on the storage, with
 * its sidecar (remux_ts.h) when the job's chunks are ranges; 0 with path
 * naming the file that is missing (the output, or its sidecar). */
int ctl_chunk_output_ready(struct ctl *c, const char *id, int idx, int ranges, char *path,
                           size_t n);

/* ---- chunk outputs by URL (ctl_chunk_url.c, --storage URL) ---- */

/* ctl_chunk_output_ready for chunks under --storage URL: both objects
 * answer (HEAD); path gets the URL. */
int ctl_chunk_url_ready(struct ctl *c, const char *id, int idx, int ranges, char *path,
                        size_t n);

/* Reads chunk i's output and (ranges) sidecar from the store into the
 * job's out/ beneath the storage root (range GETs, a temporary name): 0,
 * <0 naming the object and the HTTP status, or CTL_CHUNK_DAMAGED: one is
 * over its bound (max[0] the output's, max[1] the sidecar's), not read,
 * said in the log and the events. */
int ctl_chunk_url_fetch(struct ctl *c, const char *id, int i, int ranges, const long long max[2],
                        vr_err *err);

/* Removes everything under the job's collection <URL>jobs/<id>/ (one
 * DELETE, Depth: infinity), or each chunk object by the job's manifest
 * where the store deletes no collection; given up once *c->stop. shown
 * gets the collection's URL as messages name it. 0 or <0 (why in err). */
int ctl_chunk_url_sweep(struct ctl *c, const char *id, char *shown, size_t n, vr_err *err);

/* The chunk objects' sweeper (ctl_chunk_gc.c): a thread with a connection
 * of its own, so that a slow or hung store never holds the loop. start:
 * 0, or VR_E* (then each sweep runs where it is asked for); stop: after
 * *c->stop, gives up the DELETE under way and joins; no thread is fine.
 * post: job id's objects swept if it has ended (its cleanup entry held
 * meanwhile, removed once they are gone, due again later if not). */
int ctl_chunk_gc_start(struct ctl *c, vr_err *err);
void ctl_chunk_gc_stop(struct ctl *c);
void ctl_chunk_gc_post(struct ctl *c, const char *id);

/* The absolute path of chunk i's file under the job's `sub` ("in", "out"). */
void ctl_chunk_path(struct ctl *c, const char *id, const char *sub, int i, char *buf, size_t n);

/* The job's spec from its record (VR_EFORMAT when missing or invalid),
 * read through the loop's connection, or through q (another thread's). */
int ctl_jobfiles_spec(struct ctl *c, const char *id, struct job_spec *js, vr_err *err);
int ctl_jobfiles_spec_via(struct rq *q, const char *id, struct job_spec *js, vr_err *err);

#endif

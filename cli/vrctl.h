/*
 * vrctl.h - vrctl's commands (cli/cmd_*.c) and the helpers they share:
 * connecting to Redis and the live progress display.
 */
#ifndef VR_VRCTL_H
#define VR_VRCTL_H

#include "job.h"
#include "remux.h"
#include "rq.h"
#include "rq_opts.h"

#include <jansson.h>
#include <stdio.h>

int cmd_submit(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_workers(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_purge(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_completion(int argc, char **argv);
int cmd_man(int argc, char **argv);

struct rq_event_entry;
/* One event as a line ("12:03:04.512  chunk 3  requeued  worker  text") or,
 * with json, one compact JSON object per line (id, time_ms, chunk, worker,
 * event, msg). */
void vrctl_event_print(const struct rq_event_entry *e, int json, FILE *f);

/* Connects to --redis, else $VR_REDIS, else redis://127.0.0.1:6379
 * (rq_url_pick) into *q. Returns 0, or the exit code after printing the
 * reason: 2 for a malformed address (bad usage), 1 for one that does not
 * answer. */
int vrctl_connect(const char *url, struct rq **q);

/* The submitter of the last vrctl_connect's address: NAME when its user is
 * vrsub-NAME (its jobs go through vr:submit:NAME, queue/rq_submit.h), ""
 * for any other user. */
const char *vrctl_submitter(void);

/* Who asks a controller for cancel, retry and purge (its stream
 * vr:submit:<it>): the submitter NAME, RQ_OPERATOR when the address's user
 * is the operator's `vrctl` (whose ACL line writes no job state), or ""
 * (any other user, `vrctl run`'s: vrctl does them itself). */
const char *vrctl_asker(void);

/* A new job id into buf (n >= JOB_ID_MAX): as a submitter, one of its own
 * (rq_submit_new_id: the keys its Redis user may read), else job_new_id. */
void vrctl_new_id(char *buf, size_t n);

/* The jobs `status` and `watch` list with no id: the newest max of the
 * index (vr:index); as a submitter, its own live jobs (vr:owned:NAME, the
 * index being no key of its), newest id first. The count, or <0. */
int vrctl_job_list(struct rq *q, char (*ids)[48], int max, vr_err *err);

struct vrctl_session;

/* `vrctl CMD JOB` (cmd "cancel" or "retry") as vrctl_asker(): asked
 * through its own stream, a controller's answer awaited and printed
 * (vrctl_ask.c). The exit status: 0 done, 1 refused, failed or no answer,
 * 2 no such job of the submitter's. vrctl_ask: the same for cmd and arg
 * on connection q (purge's). */
int vrctl_ask_controller(struct vrctl_session *v, const char *cmd);
int vrctl_ask(struct rq *q, const char *cmd, const char *arg);

/* What the job commands share: their arguments and the connection. */
struct vrctl_session {
    const char *id;      /* the job id argument (checked with job_id_valid), or NULL */
    int json;            /* --json was given */
    const char *output;  /* -o FILE (with VRCTL_WANT_OUT, required) */
    int follow;          /* --follow was given (with VRCTL_WANT_FOLLOW) */
    int replace;         /* -y: -o may replace an existing file (with VRCTL_WANT_OUT) */
    const char *state;   /* --state S[,S...] (with VRCTL_WANT_STATE), each a known state;
                          * NULL: all */
    struct rq *q;        /* connected to --redis / $VR_REDIS */
};
enum { VRCTL_WANT_ID = 1 << 0, VRCTL_MAY_ID = 1 << 1, VRCTL_WANT_JSON = 1 << 2,
       VRCTL_WANT_OUT = 1 << 3, VRCTL_WANT_FOLLOW = 1 << 4, VRCTL_WANT_STATE = 1 << 5 };

/* The prologue of status, watch, workers, metrics, report, cancel and
 * retry: parses --redis URL, --json (with VRCTL_WANT_JSON), -o FILE and
 * -y / -n (with VRCTL_WANT_OUT) and a job id (required
 * with VRCTL_WANT_ID, optional with VRCTL_MAY_ID), then connects. Returns
 * 0 with s->q open (vrctl_end closes it), or the exit code: 2 usage, 1 no
 * connection (the reason printed). */
int vrctl_begin(int argc, char **argv, unsigned want, struct vrctl_session *s);
void vrctl_end(struct vrctl_session *s);

/* How --json output is dumped: 12 significant digits, so figures rounded
 * to milliseconds print as 0.463, not 0.46300000000000002. */
#define VRCTL_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))

/* What would keep a job from moving, as up to two lines of text in hint[]
 * ("no controller alive ...", "no worker has been seen for N s ..."):
 * returns how many (0 when a controller and a worker are alive, or Redis
 * could not tell). vrctl_liveness.c. */
int vrctl_liveness_hints(struct rq *q, char hint[2][200]);

/* Prints "vrctl CMD: no job 'ID'" and returns 2: the one answer of every
 * command to a job that does not exist (a bad argument, as usage errors
 * are; 1 would read as "the job failed"). */
int vrctl_no_job(const char *id);

/* The job-spec options `submit` and `run` share, as `vr-worker process`
 * has them: VRCTL_OPT_PROFILE, VRCTL_OPT_OUTPUT, VRCTL_OPT_CHUNK,
 * VRCTL_OPT_CHUNKING, VRCTL_OPT_DECODE_ERROR, VRCTL_OPT_LAYOUT, VRCTL_OPT_NOTIFY (the webhook URL, checked here: a bad
 * one is a usage error before anything is queued) as getopt codes and 'c'
 * (-c FILE, the config overrides:
 * its path goes into js->config, which vrctl_prepare replaces with the
 * file's checked text). Applies option
 * `o` with `arg` to *js and returns 1 when `o` is one of them, 0 when it
 * is not, or an exit code (2 usage, 1 unreadable file) for a bad value. */
enum { VRCTL_OPT_PROFILE = 0x100, VRCTL_OPT_OUTPUT, VRCTL_OPT_CHUNK, VRCTL_OPT_LAYOUT,
       VRCTL_OPT_NOTIFY, VRCTL_OPT_CHUNKING, VRCTL_OPT_DECODE_ERROR, VRCTL_OPT_ALPHA_AREA,
       VRCTL_OPT_CRF, VRCTL_OPT_ENCODER, VRCTL_OPT_JSON };
#define VRCTL_OPTSTRING "o:c:yn"  /* short options of submit and run */
/* Their long options, for the two commands' getopt tables. */
#define VRCTL_SPEC_LONGOPTS                                          \
    { "profile", required_argument, 0, VRCTL_OPT_PROFILE },         \
    { "output", required_argument, 0, VRCTL_OPT_OUTPUT },           \
    { "chunk-seconds", required_argument, 0, VRCTL_OPT_CHUNK },     \
    { "layout", required_argument, 0, VRCTL_OPT_LAYOUT },           \
    { "notify", required_argument, 0, VRCTL_OPT_NOTIFY },           \
    { "chunking", required_argument, 0, VRCTL_OPT_CHUNKING },       \
    { "on-decode-error", required_argument, 0, VRCTL_OPT_DECODE_ERROR }, \
    { "alpha-area", required_argument, 0, VRCTL_OPT_ALPHA_AREA },   \
    { "crf", required_argument, 0, VRCTL_OPT_CRF },                 \
    { "encoder", required_argument, 0, VRCTL_OPT_ENCODER },         \
    { "json", no_argument, 0, VRCTL_OPT_JSON },                     \
    { "config", required_argument, 0, 'c' }
int vrctl_spec_option(int o, const char *arg, struct job_spec *js);

/* What --crf N and --encoder NAME (VRCTL_OPT_CRF, VRCTL_OPT_ENCODER) and
 * --json (VRCTL_OPT_JSON) set: vrctl_spec_option keeps them here, and
 * vrctl_prepare puts the first two into the job's config overrides, over
 * -c's file, as `vr-worker process --crf/--encoder` does. */
struct vrctl_flags {
    int crf;                    /* -1: the profile's (or -c's) */
    char encoder[32];           /* "": the profile's (or -c's) */
    int json;                   /* print the result as one JSON object on stdout */
};
extern struct vrctl_flags vrctl_flags;

/* submit --json, run --json: job id's figures as one JSON object on stdout
 * (rq_job_status_json's keys: id, state, error, input, output, frames,
 * fps, wall_s, ...) with "exit": the code vrctl exits with; only id,
 * state "unknown" and exit when Redis cannot tell. */
void vrctl_print_result(struct rq *q, const char *id, int exit_code);

/* Validates a job before anything is enqueued: the input exists and probes
 * as video, the output's directory exists and its container is known, the
 * output is no input (-c's file included) and replaces an existing file
 * only when `replace` (-y) and only a regular one, the
 * profile loads with the job's config overrides on top (the same messages
 * as `vr-worker process -c`; js->config is rewritten compact). Fills
 * js->input/output (absolute); an existing output only with replace (-y).
 * Returns 0, or 2 after printing the reason: every refusal here is an
 * argument the user can fix (bad usage). */
int vrctl_prepare(const char *in, const char *out, int replace, struct job_spec *js,
                  struct remux_info *info);

/* Records job js (id and created_ms set): rq_job_submit with its JSON; as
 * a submitter, asked in its stream; as the operator's user `vrctl`,
 * vrctl_ask_submit. 0, <0 failed (err), or >0 the exit code of a
 * controller's refusal (err says it). */
int vrctl_enqueue(struct rq *q, const struct job_spec *js, long long frames_est, vr_err *err);

/* The operator's submit (vrctl_ask.c): job js (spec: its JSON) asked in
 * vr:submit:@ops, and a live controller's answer awaited (30 s): 0
 * recorded (or no controller alive: the first to start records it), <0
 * Redis or no answer (err), >0 refused, the exit code (err: why). */
int vrctl_ask_submit(struct rq *q, const struct job_spec *js, const char *spec,
                     long long frames_est, vr_err *err);

/* Waits until job id is recorded (a controller takes the operator's or a
 * submitter's ask once it runs): 0, or <0 Redis failed. With the ask's
 * stream entry (vrctl_asked()), a controller's refusal of it ends the wait:
 * its exit code, the answer said on stderr. */
int vrctl_wait_recorded(struct rq *q, const char *id, const char *entry);

/* For `watch ID` and `status ID` of a job this user asked for that no
 * controller has recorded yet (submit returns at once when none is
 * alive): 1 when id is such a job, with its stream entry into entry (64
 * bytes), 0 when not (or a controller refused it), <0 Redis failed. */
int vrctl_asked(struct rq *q, const char *id, char *entry);

/* Shows a progress bar (fps, ETA, a line per worker, the last events) on
 * stderr until job `id` ends; prints the final line (vrctl_watch.c). The
 * bar never goes backwards, a worker that stops answering is an event
 * line, so is a Redis outage, and every line fits the terminal. Returns 0
 * when it is done, 1 when it failed or was cancelled, 2 on Redis errors
 * that did not heal within a minute. `stop` (may be NULL) ends the wait
 * early (returns 3). With `hints`, says while the job is live when no
 * controller or no worker is alive (vrctl_liveness_hints; `vrctl run`,
 * which starts its own, passes 0). */
int vrctl_watch(struct rq *q, const char *id, volatile int *stop, int hints);

/* The same for every job live now or submitted while it runs (at most 50),
 * a bar each, until all have ended: 0 when all are done, 1 when one
 * failed or was cancelled, 0 at once (after saying so) when none is live. */
int vrctl_watch_all(struct rq *q, volatile int *stop);

/* How job id's chunks were made, as its controller noted it (job field
 * `chunking`): "range" (read in place from the input) or "copy" (cut into
 * chunk files), into out (n bytes); "" before the controller decided, from
 * one that does not note it, or for any other value (Redis is not
 * trusted: only the two words are passed on). */
void vrctl_job_chunking(struct rq *q, const char *id, char *out, size_t n);

/* What the controller's chunking step is called for that answer: "plan"
 * for ranges (nothing is cut), "split" for a copy or an unknown one. */
const char *vrctl_chunk_step(const char *chunking);

#endif

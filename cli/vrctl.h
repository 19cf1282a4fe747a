/*
 * vrctl.h - vrctl's commands (cli/cmd_*.c) and the helpers they share:
 * connecting to Redis and the live progress display.
 */
#ifndef VR_VRCTL_H
#define VR_VRCTL_H

#include "job.h"
#include "rq.h"

int cmd_submit(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_workers(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Connects to --redis/VR_REDIS; on failure prints the reason and returns
 * NULL (callers exit 1). A NULL `url` with no VR_REDIS is a usage error
 * printed here too. */
struct rq *vrctl_connect(const char *url);

/* The arguments of the job commands: --redis URL, --json when json is not
 * NULL, and an optional job id (required with need_id, checked with
 * job_id_valid). Returns 0 or a usage error's exit code. */
int vrctl_args(int argc, char **argv, const char **redis, int *json, const char **id,
               int need_id);

/* The job-spec options `submit` and `run` share, as `vr-worker process`
 * has them: VRCTL_OPT_PROFILE, VRCTL_OPT_OUTPUT, VRCTL_OPT_CHUNK,
 * VRCTL_OPT_LAYOUT as getopt codes and 'c' (-c FILE, the config overrides:
 * its path goes into js->config, which vrctl_prepare replaces with the
 * file's checked text). Applies option
 * `o` with `arg` to *js and returns 1 when `o` is one of them, 0 when it
 * is not, or an exit code (2 usage, 1 unreadable file) for a bad value. */
enum { VRCTL_OPT_PROFILE = 0x100, VRCTL_OPT_OUTPUT, VRCTL_OPT_CHUNK, VRCTL_OPT_LAYOUT };
#define VRCTL_OPTSTRING "o:c:"  /* short options of submit and run */
int vrctl_spec_option(int o, const char *arg, struct job_spec *js);

/* Validates a job before anything is enqueued: the input exists and probes
 * as video, the output's directory exists and its container is known, the
 * profile loads with the job's config overrides on top (the same messages
 * as `vr-worker process -c`; js->config is rewritten compact). Fills
 * js->input/output (absolute). Prints the reason and returns -1 on failure. */
int vrctl_prepare(const char *in, const char *out, struct job_spec *js, long long *frames_est);

/* Records job js (id and created_ms set) in one MULTI/EXEC: hash, index,
 * active set, vr:jobs entry. */
int vrctl_enqueue(struct rq *q, const struct job_spec *js, long long frames_est, vr_err *err);

/* Shows a progress bar (fps, ETA, a line per worker) on stderr until job `id`
 * ends; prints the final line. Returns 0 when it is done, 1 when it failed
 * or was cancelled, 2 on Redis errors that did not heal within a minute.
 * `stop` (may be NULL) ends the wait early (returns 3). */
int vrctl_watch(struct rq *q, const char *id, volatile int *stop);

#endif

/*
 * run_workdir.h - `vrctl run`'s work directory, which lets a stopped run be
 * resumed (`--resume`, as av1an's): a mkdtemp name that records the
 * digest of the job's options inside, holding the private Redis with its
 * AOF, the chunks and the job's id
 * (cli/run_workdir.c).
 */
#ifndef VR_RUN_WORKDIR_H
#define VR_RUN_WORKDIR_H

#include "job.h"
#include "rq.h"

#define RUN_WORKDIR_NAME "vrctl-run-" /* in run_workdir_base() */
#define RUN_WORKDIR_MAX 96

struct run_workdir {
    char dir[RUN_WORKDIR_MAX];    /* <base>/RUN_WORKDIR_NAME<6 random characters> */
    char job[JOB_ID_MAX];         /* the job kept there; "" when starting afresh */
    int resuming;                 /* 1: carry on with `job` */
    int lock_fd;                  /* flock'd while the run lives; -1 none */
    long long stopped_ms;         /* resuming: when the stopped run last wrote its Redis's
                                   * AOF (wall clock ms; 0 unknown) */
};

/* Where work dirs go: $XDG_RUNTIME_DIR when it is a private directory of
 * ours, else $TMPDIR as mktemp has it, else /tmp (absolute and at most 48
 * bytes, so the Redis socket's path in it fits its 108). */
const char *run_workdir_base(void);

/* Opens the work dir of job `js` (a private directory of ours in the base
 * whose recorded digest is the job's; else a new one, mkdtemp) and locks
 * it. With resume and a job kept there, w->resuming is set; otherwise
 * whatever an earlier run left is removed. Returns 0, or VR_E* (another
 * run holds it, it cannot be created) with the reason. */
int run_workdir_open(const struct job_spec *js, int resume, struct run_workdir *w, vr_err *err);

/* Records the job's id there, durably, before the job runs. */
int run_workdir_save_job(struct run_workdir *w, const char *id, vr_err *err);

/* Unlocks; removes the directory unless keep. Accepts a closed one. */
void run_workdir_close(struct run_workdir *w, int keep);

/* A resumed run's first step: every chunk the stopped run's workers held
 * goes back to the queue now (rq_worker_died for each), not after its
 * lease. Returns the chunks requeued or <0. */
int run_release_dead(struct rq *q, vr_err *err);

#endif

/*
 * util-retain.h - the fleet the retention tests start from (the purge of
 * ended jobs, t-controller-retention.c; a directory without a record,
 * t-dist-orphan-dirs.c): a controller with --keep-jobs 4s (its retention
 * pass each second: VR_TEST_RETAIN_EACH_AUDIT) and one CPU worker, and one
 * job, cut into files, run to its end.
 */
#ifndef VR_UTIL_RETAIN_H
#define VR_UTIL_RETAIN_H

#include "rq.h"
#include "util-redis.h"

struct tretain {
    char in[400];        /* a 1 s clip, for more jobs */
    char out[400];       /* the done job's output (another job there needs -y) */
    char done_id[64];    /* the job run to its end */
    char dir[600];       /* its storage/jobs/<id>, checked to be there */
};

/* Starts d (a controller with --keep-jobs 4s, one worker), connects *q and
 * runs a 1 s clip's job with --chunking copy (files under storage/jobs/<id>)
 * to its end. Fails the test on any error. */
void tretain_start(struct tdist *d, struct rq **q, struct tretain *t);

/* Kills d's worker: a job submitted from here on stays live. */
void tretain_no_worker(struct tdist *d);

#endif

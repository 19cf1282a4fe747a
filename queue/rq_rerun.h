/*
 * rq_rerun.h - a failed or cancelled job run again (`vrctl retry`, and a
 * controller answering a submitter's retry through its own stream,
 * queue/rq_submit.h): the job is live again first (rq_job_retry), then
 * each unfinished chunk is re-armed or given a fresh entry, one a live
 * worker still runs left to it.
 */
#ifndef VR_RQ_RERUN_H
#define VR_RQ_RERUN_H

#include "rq.h"

/* Runs failed or cancelled job id again; what was done ("3 chunks
 * enqueued again", "splitting again", ...) into what (n bytes) and the
 * job's events. 1 retried, 0 the job is in another state (its state in
 * what), VR_ENOENT no such job, <0 error (err). */
int rq_job_rerun(struct rq *q, const char *id, char *what, size_t n, vr_err *err);

#endif

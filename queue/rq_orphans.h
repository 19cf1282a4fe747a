/*
 * rq_orphans.h - storage/jobs/<id> directories whose job record Redis no
 * longer holds (a FLUSHALL, a lost AOF tail: issue 42). When each was first
 * seen so is kept in Redis, by Redis's clock, so every controller (a
 * restarted one, one with a skewed clock) counts the same grace before the
 * directory goes (controller/ctl_retain_dirs.c).
 */
#ifndef VR_RQ_ORPHANS_H
#define VR_RQ_ORPHANS_H

#include "rq.h"

#define RQ_ORPHAN_DIRS "vr:orphan-dirs" /* hash: job id -> ms its directory was first
                                         * seen without a record (Redis's clock) */

/* 1 when Redis holds job id's record, 0 when not, <0 when Redis did not say. */
int rq_job_exists(struct rq *q, const char *id);

/* When job id's directory was first seen without a record (now, recorded,
 * when never): ms by Redis's clock in *seen and the current one in *now.
 * Returns 0 or <0 when Redis did not answer. */
int rq_orphan_dir_seen(struct rq *q, const char *id, long long *seen, long long *now);

/* Forgets id's sighting (its record is back, or its directory is gone). */
void rq_orphan_dir_forget(struct rq *q, const char *id);

#endif

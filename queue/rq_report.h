/*
 * rq_report.h - a job's chunks as Redis holds them, for `vrctl report`: when
 * each was queued, started and committed, by whom, how often it was tried,
 * its GPU figures (the job's events: rq_events.h).
 */
#ifndef VR_RQ_REPORT_H
#define VR_RQ_REPORT_H

#include "rq.h"

struct metrics;

#include <stdint.h>

struct rq_chunk_rec {
    int idx;
    char state[16];             /* queued running done dead */
    char worker[128];           /* last worker that took it ("" = none) */
    char error[256];            /* last failure, cut at 255 bytes ("" = none) */
    long long queued_ms;        /* its latest queue entry's time (a requeue moves it) */
    long long started_ms;       /* latest start by a worker (0 = never) */
    long long done_ms;          /* commit (0 = not done) */
    long long frames;           /* frames written (done chunks) */
    long long attempts;         /* deliveries to a worker so far (1 = first try) */
    long long cuts;             /* times it was cut for an idle worker (rq_cut.h) */
    char cut_for[128];          /* a cut's tail: the idle worker it was cut for ("" none) */
    char lost_by[128];          /* the last worker that died holding it ("" none) */
    long long lost_from_ms;     /* that attempt's start */
    long long lost_to_ms;       /* its last renewal, when it had done lost_frames */
    long long lost_frames;      /* frames it had done then (redone by a later attempt) */
    double gpu_util;            /* mean NVML utilisation while it ran, -1 unknown */
    uint64_t gpu_mem_peak;      /* bytes, 0 unknown */
};

/* Reads chunk records 0..n-1 of job `id` into recs (caller storage of n;
 * an elastic job's n is its chunk_slots, rq_stats.h). Returns 0 or VR_E*
 * (a missing record reads as state ""). */
int rq_report_chunks(struct rq *q, const char *id, int n, struct rq_chunk_rec *recs,
                     vr_err *err);

/* Fills *c (its idx and gpu_util -1 set by the caller) from the HMGET
 * reply `r` (borrowed) of state worker error entry started_ms done_ms
 * frames attempts cuts cut_for lost_by lost_from lost_to lost_frames
 * metrics: texts cut to their fields, numbers range-
 * checked (rq_record_ll), the metrics JSON parsed into *m (scratch) when
 * it is one. A reply of another shape leaves *c as it was. Separate from
 * rq_report_chunks for the fuzzer (fuzz/fuzz_records.c). */
void rq_chunk_rec_fill(struct rq_chunk_rec *c, const redisReply *r, struct metrics *m);

#endif

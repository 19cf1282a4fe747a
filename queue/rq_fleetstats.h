/*
 * rq_fleetstats.h - the whole fleet's figures as read from Redis, for the
 * controller's Prometheus endpoint: counters kept in Redis (so they survive
 * controller restarts and add up across controllers), jobs by state, the
 * jobs in flight with their chunks' states, the live workers, the
 * fleet-wide per-stage histograms and the Redis round trip.
 *
 * Where the counters come from: the chunk commit script adds each committed
 * chunk's frames and stage histograms (RQ_STATS, RQ_STATS_HIST: once per
 * chunk, atomically with the commit); the scripts that end a job count its
 * end by state (rq_jobs.c); the controller notes its splits,
 * stitches, lease reclaims and refused reports with rq_fleetstats_note.
 */
#ifndef VR_RQ_FLEETSTATS_H
#define VR_RQ_FLEETSTATS_H

#include "metrics.h"
#include "rq.h"
#include "rq_fleet.h"

#define RQ_FLEET_MAX_JOBS    100    /* jobs in flight listed one by one */
#define RQ_FLEET_MAX_WORKERS 256    /* workers listed */
#define RQ_FLEET_INDEX_SCAN  10000  /* newest jobs counted by state */
#define RQ_FLEET_MAX_STATES  16
/* Chunk records one read looks at, all jobs in flight together: a job's
 * chunks_total (up to 100000 each) must not make a scrape run seconds of
 * Lua on Redis. Past it, chunks are counted in chunks_uncounted. */
#define RQ_FLEET_CHUNK_BUDGET 20000

/* Chunk states, the index of rq_flight_job.chunks[]. */
enum { RQ_CK_QUEUED, RQ_CK_RUNNING, RQ_CK_DONE, RQ_CK_DEAD, RQ_CK_NSTATES };

/* "queued", "running", "done", "dead"; NULL out of range. */
const char *rq_chunk_state_name(int s);

/* "done", "failed", "cancelled" (the index of jobs_ended[]); NULL out of
 * range. The job-ending scripts count each end once in RQ_STATS under
 * "jobs_<state>". */
const char *rq_job_end_state(int s);

/* One job in flight (in vr:active). */
struct rq_flight_job {
    char id[48];
    char state[16];
    long long frames_total, frames_done;
    long long chunks[RQ_CK_NSTATES];
    double fps;                 /* frames_done / seconds since it started */
};

struct rq_fleetstats {
    /* counters (monotonic while Redis keeps its data) */
    long long frames;           /* frames of committed chunks */
    long long chunks;           /* chunks committed */
    long long reclaimed;        /* chunks whose lease lapsed (requeued or dead-lettered) */
    long long reports_refused;  /* worker reports malformed or not proving their claim */
    long long webhooks_dropped; /* webhook POSTs not queued: their receiver's queue was full */
    long long splits, stitches;
    double split_s, stitch_s;   /* controllers' seconds splitting and stitching */
    long long jobs_ended[3];    /* jobs that ended done, failed, cancelled (rq_job_end_state) */
    long long dead_letters;     /* entries in the dead-letter stream vr:dead */
    long long worker_seen_ms;   /* wall clock of the last heartbeat of any worker; 0 none yet */

    /* jobs by state over the newest RQ_FLEET_INDEX_SCAN jobs of the index */
    int nstates;
    struct { char state[16]; long long n; } jobs[RQ_FLEET_MAX_STATES];

    long long active;           /* jobs in vr:active (all of them) */
    long long chunks_uncounted; /* chunks of listed jobs past RQ_FLEET_CHUNK_BUDGET */
    int njobs;                  /* of which listed in job[] */
    struct rq_flight_job job[RQ_FLEET_MAX_JOBS];

    int nworkers;
    struct rq_worker_info workers[RQ_FLEET_MAX_WORKERS];

    struct hist stage[MET_NSTAGES]; /* every committed chunk's, merged */

    double redis_rtt_s;         /* one PING's round trip */
};

/* Reads everything into *fs (caller storage, large: allocate it). Returns
 * 0 or VR_E* (Redis unreachable, unexpected reply). */
int rq_fleetstats_read(struct rq *q, struct rq_fleetstats *fs, vr_err *err);

/* What a controller notes (one round trip each). */
enum rq_fleet_note { RQ_NOTE_SPLIT, RQ_NOTE_STITCH, RQ_NOTE_RECLAIM, RQ_NOTE_REFUSED,
                     RQ_NOTE_WEBHOOK_DROPPED };

/* Counts one split or stitch that took `seconds`, or one reclaim, one
 * refused report or one dropped webhook POST (seconds ignored). Returns 0 or VR_E*. */
int rq_fleetstats_note(struct rq *q, enum rq_fleet_note what, double seconds, vr_err *err);

/* A PING: 0 when Redis answers, VR_EREDIS otherwise. */
int rq_ping(struct rq *q, vr_err *err);

#endif

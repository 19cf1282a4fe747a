/*
 * rq_stats.h - a job's figures as read from Redis, for `vrctl status`,
 * `vrctl watch`, `vrctl metrics` and the controller's final record: counts
 * from the job hash, per-worker throughput and the per-stage histograms
 * merged from the chunk records (merged histograms, never averaged
 * percentiles).
 */
#ifndef VR_RQ_STATS_H
#define VR_RQ_STATS_H

#include "metrics.h"
#include "rq.h"

#include <jansson.h>

#define RQ_STATS_MAX_WORKERS 64

struct rq_worker_stat {
    char name[128];
    long long chunks, frames;
    double busy_s;              /* sum of its chunks' processing times */
};

struct rq_job_status {
    char id[48];
    char state[16];             /* queued splitting running stitching done failed cancelled */
    char error[512];
    char input[1024], output[1024];
    char output_kind[16];       /* the spec's: mask | alpha | greenscreen ("" unknown) */
    long long frames_total, frames_done;
    long long frames_running;   /* frames encoded so far by chunks still running (live
                                 * workers' heartbeats): progress within a chunk; 0 ended */
    long long chunks_total, chunks_done, chunks_running, chunks_dead;
    long long chunks_queued;    /* neither done, dead nor running: an ended job's unfinished
                                 * chunks all count here (none runs any more) */
    long long cuts;             /* running chunks cut for idle workers (rq_cut.h) */
    long long chunk_slots;      /* the chunk indices its records span: chunks_total, or
                                 * an elastic job's pieces (a chunk's index is its first
                                 * piece's, ctl_cut.c), at most 100000 */
    long long created_ms, started_ms, finished_ms;
    double split_s, stitch_s;   /* seconds, 0 until done */
    double wall_s;              /* started (or created) -> finished (or now) */
    double fps;                 /* frames_done / wall_s; while running (frames_done +
                                 * frames_running) / wall_s, from the first second */
    double eta_s;               /* -1 unknown */
    long long chunk_frames_sum; /* sum of done chunks' frames (must equal frames_done) */
    int nworkers;
    struct rq_worker_stat workers[RQ_STATS_MAX_WORKERS];
    int have_chunks;            /* the chunk records were read (with_chunks): the
                                 * chunks_running/dead/queued, chunk_frames_sum and
                                 * workers figures are real, not zeros */
    int have_metrics;           /* at least one chunk reported metrics */
    struct metrics merged;      /* all done chunks' metrics merged */
};

/* Reads job `id`. with_chunks: also read every chunk record (per-worker
 * figures, merged metrics). Returns 0, VR_ENOENT (no such job) or VR_E*.
 * `st` is caller storage (it is large: allocate it). */
/* What rq_job_status makes of the job hash: *st (zeroed, its id set) from
 * the HGETALL reply `r` (borrowed): texts cut to their fields and stripped
 * of control characters, numbers range-checked (rq_record_ll), figures
 * derived. 0, VR_ENOENT (an empty hash) or VR_EFORMAT. Separate for the
 * fuzzer (fuzz/fuzz_records.c). */
int rq_job_status_fill(struct rq_job_status *st, const redisReply *r, vr_err *err);

int rq_job_status(struct rq *q, const char *id, int with_chunks,
                  struct rq_job_status *st, vr_err *err);

/* JSON object of the status (caller owns). Keys: id, state, error, input,
 * output, frames, frames_done, chunks_total, chunks_done, cuts, fps, wall_s,
 * split_s, stitch_s, eta_s; with have_chunks also chunks_running,
 * chunks_dead, chunk_frames_sum, workers{}; with have_metrics stages{}.
 * Seconds and fps are rounded to 3 decimals (dump with
 * JSON_REAL_PRECISION(12) so they print as such). */
json_t *rq_job_status_json(const struct rq_job_status *st);

/* Job ids, newest first (at most max), from the vr:index sorted set.
 * Returns the count or <0. ids is caller storage of max * 48 bytes. */
int rq_job_list(struct rq *q, char (*ids)[48], int max, vr_err *err);

#endif

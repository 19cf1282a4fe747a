/*
 * rq_cut.h - work stealing for chunks read as ranges (issue 44): a running
 * chunk is cut in two, its worker keeps the head and the tail is queued
 * for an idle worker, so workers that join late or a slow one never leave
 * the rest of the fleet idle at a job's end.
 *
 * The controller decides the cut (controller/ctl_cut.c) and one script
 * makes it, atomically: the chunk's record gets its shorter task and
 * `end` (where its range now stops, rq_cut_end_text), and the tail's
 * record and entry are created in the priority stream, its job's
 * chunks_total and `cuts` raised. The script checks that the chunk is
 * still running under the entry the controller saw, that it was not cut
 * meanwhile (its `end` as seen) and that the tail's record does not exist:
 * two cutters racing for one chunk (two controllers, or two idle workers'
 * turns) cut it once. A controller killed mid-cut left either no cut or
 * the whole cut.
 *
 * The running worker reads the record's `end` with its lease renewal
 * (rq_cut_peek) and stops there; its done report names the end it stopped
 * at, and the commit script refuses one past the end the record holds
 * (rq.h, rq_chunk_commit_end): the chunk then runs again, shorter. A worker
 * that dies after the cut leaves its lease to lapse: the chunk is requeued
 * with its shorter task, the tail is already queued.
 *
 * A chunk's index is the position of its first piece in the job's plan
 * (ctl_plan.c), so chunks in index order are the ranges in source order,
 * and a tail's index (its first piece) was never a chunk of its own.
 */
#ifndef VR_RQ_CUT_H
#define VR_RQ_CUT_H

#include "job.h"
#include "rq.h"

#define RQ_CUT_END_MAX 48 /* "<pts>:<dts>" of two long longs, or "open" */

/* Where range r stops, as the record's `end` and a done report name it:
 * "<end_pts>:<end_dts>", or "open" when it reads to the end of the file. */
void rq_cut_end_text(const struct chunk_range *r, char *buf, size_t n);

/* One cut: chunk job/idx, running under stream entry `entry`, whose end was
 * `seen_end` ("" while it was never cut), keeps head_task (its range up to
 * the cut, ending at head_end) and chunk tail_idx gets tail_task, queued in
 * the priority stream; `worker` names who the tail is cut for (events).
 * `slow`: the cut is for its worker's slowness, and the chunk's record
 * says so (`aside`: the entry it runs under), so that this worker steps
 * aside from the tails once it ends it (rq_cut_aside). Returns 1 cut, 0 not
 * (the chunk ended, was requeued or cut meanwhile, the tail exists, the job
 * is not running), <0 error. */
int rq_chunk_cut(struct rq *q, const char *job, int idx, const char *entry,
                 const char *seen_end, const char *head_task, const char *head_end,
                 int tail_idx, const char *tail_task, int max_attempts, const char *worker,
                 int slow, vr_err *err);

/* The tails one cut may queue: a straggler's is parted among the workers
 * expected free first, so that none of them holds the job's end alone
 * (controller/ctl_cut_slow.c). 7: a script takes 32 keys and arguments. */
#define RQ_CUT_TAILS_MAX 7

/* rq_chunk_cut with the tail parted into ntails (1..RQ_CUT_TAILS_MAX)
 * chunks, tail_idx[i] getting tail_task[i], all queued in the priority
 * stream in that order: one cut, whole or absent; the job's `cuts` and
 * chunks_total grow by ntails. Returns as rq_chunk_cut does. */
int rq_chunk_cut_tails(struct rq *q, const char *job, int idx, const char *entry,
                       const char *seen_end, const char *head_task, const char *head_end,
                       int ntails, const int *tail_idx, const char *const *tail_task,
                       int max_attempts, const char *worker, int slow, vr_err *err);

/* A straggler steps aside (issue 44): the worker whose chunk was cut for
 * its slowness reads nothing from the priority stream, where the tails
 * wait, for this long after it ends that chunk, or until the chunk's job
 * ends. Ending a chunk, it would read that stream at once, while idle
 * workers look there only between their blocking reads of the normal
 * stream: so it took the tails, its own among them, at a fifth of their
 * speed. Its heartbeat says "aside" meanwhile, and no tail is cut for it.
 * Bounded: with every faster worker dead or busy, a tail waits this long
 * at most for one. */
#define RQ_CUT_ASIDE_MS 10000

/* Whether the worker running chunk job/idx under stream entry `entry` was
 * cut for its slowness (the record's `aside` names that entry; a chunk
 * requeued to another worker runs under another): 1 yes, 0 no, <0 error. */
int rq_cut_aside(struct rq *q, const char *job, int idx, const char *entry, vr_err *err);

/* What a worker reads of its chunk's record with each renewal: its `end`
 * into end (n bytes; "" when never cut) and, when it is not "", the task
 * it was cut to into task (tn bytes). Returns 1 cut, 0 not, <0 error. */
int rq_cut_peek(struct rq *q, const char *job, int idx, char *end, size_t n, char *task,
                size_t tn, vr_err *err);

/* A running chunk of an elastic job as the controller saw it. */
struct rq_cut_seen {
    char entry[RQ_ID_MAX];    /* the stream entry it runs under */
    char end[RQ_CUT_END_MAX]; /* its record's `end` ("" never cut) */
    long long piece_ms;       /* its job's piece length */
};

/* What a cut needs of chunk job/idx, in one script call: into *seen and
 * its task into task (tn bytes). Returns 1 when it is running and its job
 * is elastic (piece_ms set, in range), 0 not, <0 error. */
int rq_cut_running(struct rq *q, const char *job, int idx, struct rq_cut_seen *seen,
                   char *task, size_t tn, vr_err *err);

/* Whether the chunk streams hold entries no worker was delivered yet
 * (work waiting: no cut is needed). 1 yes, 0 no, <0 error. */
int rq_chunks_waiting(struct rq *q, vr_err *err);

#endif

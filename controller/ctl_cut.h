/*
 * ctl_cut.h - the parts of the controller's cut planning (ctl_cut.c) that
 * its rules in files of their own use: how long each worker has been idle
 * (ctl_cut_idle.c) and which running chunk's worker runs so slowly that
 * its chunk is cut before anyone is idle (ctl_cut_slow.c).
 */
#ifndef VR_CTL_CUT_H
#define VR_CTL_CUT_H

#include "rq_fleet.h"

/* A chunk's set-up on the worker that takes a tail (claim, input open and
 * seek, encoder open), besides its warm-up frames at that worker's rate: a
 * cut saves less than it costs when the wait it ends is shorter. 200 ms:
 * a kept decoder opens in 4-22 ms (issue 43), and 500 put late joiners
 * at the edge of their 1.3x under load. */
#define CTL_CUT_SETUP_MS 200

/* A running chunk that may be cut, as the straggler rule weighs it. */
struct ctl_cut_rate {
    int wi;          /* its worker's index in the turn's list */
    long long done;  /* frames encoded */
    long long left;  /* frames left to encode */
    double fps;      /* its worker's rate on it (0 unknown: ctl_cut_rate_of) */
    double fps_low;  /* its heartbeat's rate, set-up in (lower; 0 unknown) */
    int warmup;      /* warm-up frames a tail of it starts with */
};

/* Notes the turn's worker list (n workers, Redis's clock srv): when each
 * idle worker's wait started. */
void ctl_cut_idle_note(const struct rq_worker_info *w, int n, long long srv);

/* New work was queued (a job planned): every wait starts again at the next
 * note. */
void ctl_cut_idle_restart(void);

/* A tail was cut for worker `name`: it takes it within a heartbeat that
 * may still say idle, so its wait starts again (Redis's clock srv). */
void ctl_cut_idle_served(const char *name, long long srv);

/* How long worker w (as listed) has been idle by the notes, until srv, in
 * ms: 0 when it is not, or no heartbeat said so since its wait started. */
long long ctl_cut_idle_for(const struct rq_worker_info *w, long long srv);

/* Whether idle worker w has waited longer than the set-up of a chunk that
 * starts with `warmup` warm-up frames, at its last chunk's rate, or never
 * ran a chunk (it joined: no gap): 1 yes. */
int ctl_cut_idle_waited(const struct rq_worker_info *w, long long srv, int warmup);

/* Notes the turn's worker list (n workers): each busy worker's first
 * heartbeat with a frame of its chunk encoded (ctl_cut_rate.c). */
void ctl_cut_rate_note(const struct rq_worker_info *w, int n);

/* Busy worker w's rate on its chunk (as listed) by the notes: frames a
 * second since that heartbeat, over two heartbeats at least; 0 unknown. */
double ctl_cut_rate_of(const struct rq_worker_info *w);

/* Of the running chunks r[0..n), the one whose worker is expected to end
 * well after the fleet could drain all that is left (ctl_cut_slow.c): its
 * index, with the frames it should keep encoding into *want and the index
 * of the chunk whose worker is expected to be free first into *first; -1
 * none. */
int ctl_cut_slow_pick(const struct ctl_cut_rate *r, int n, long long *want, int *first);

#endif

/*
 * rq_fleet.h - who is working: workers' and controllers' heartbeats (keys
 * with a TTL, so a dead process disappears by itself), the list `vrctl
 * workers` and `watch` show, and the controller's scan for chunk entries
 * whose worker stopped renewing its lease.
 */
#ifndef VR_RQ_FLEET_H
#define VR_RQ_FLEET_H

#include "rq.h"

/* What a worker says of itself at each heartbeat. */
struct rq_worker_info {
    char name[160];               /* consumer name host:gpu:nonce */
    char gpu[16];                 /* device index, or "cpu" */
    char state[16];               /* idle | busy | draining | warming | quarantined | paused
                                   * | aside (a straggler off the tails, rq_cut.h) */
    char chunk[96];               /* "<job>/<idx>" while busy, else "-" */
    double fps;                   /* of its last chunk */
    double gpu_util;              /* mean GPU utilisation (percent) over its last
                                   * chunk; -1 unknown (CPU, no NVML, none yet) */
    long long gpu_mem;            /* peak device memory of its last chunk, bytes (0 unknown) */
    long long chunks_done, frames_done;
    long long chunk_frames;       /* frames encoded so far of the chunk in hand (0 idle) */
    long long chunk_read;         /* frames of it its reader has handed on (read ahead of the
                                   * encoder: a cut goes past them, controller/ctl_cut.c) */
    int hb_ms;                    /* its heartbeat period */
    long long seen_ms;            /* Redis's clock (TIME) at its last heartbeat: the hosts'
                                   * clocks may jump (rq_server_ms; read only) */
};

/* Every state a worker's heartbeat says (rq_worker_info.state), in the
 * order metrics list them (controller/ctl_prom_text.c): a state left out
 * there would hide its workers from vrseg_workers. */
#define RQ_WORKER_NSTATES 7
extern const char *const rq_worker_states[RQ_WORKER_NSTATES];

/* A worker silent for 3 heartbeats (killed, stopped, or Redis refusing its
 * writes) while its key has not expired yet: lists show it as "silent",
 * `watch` leaves it out. */
int rq_worker_silent(const struct rq_worker_info *w, long long now_ms);

/* The longest TTL a worker's heartbeat sets (its --heartbeat-ms x 5, at
 * most): a record without a TTL, or with a longer one, is not a heartbeat
 * and rq_workers_list leaves it out. */
#define RQ_WORKER_TTL_MAX_S 3600

/* Writes worker `w->name`'s record with a TTL of ttl_s seconds and lists it
 * among the workers (one script: one round trip). */
int rq_worker_heartbeat(struct rq *q, const struct rq_worker_info *w, int ttl_s, vr_err *err);

/* A worker that stops cleanly removes its record. */
int rq_worker_gone(struct rq *q, const char *name, vr_err *err);

/* Up to max live workers into out; records whose TTL ran out are dropped
 * from the list on the way. Returns the count or <0. */
int rq_workers_list(struct rq *q, struct rq_worker_info *out, int max, vr_err *err);

/* A controller's heartbeat key (TTL ttl_ms), listed among the controllers
 * and its time noted in the fleet's stats (controller_seen_ms), and its
 * removal at exit: how rq_job_claim tells a dead controller's half-done
 * step from a slow one, and vrctl that none is alive. */
int rq_controller_heartbeat(struct rq *q, const char *name, int ttl_ms, vr_err *err);
int rq_controller_gone(struct rq *q, const char *name, vr_err *err);

/* Whether a temp owner's lease lives (storage.h, "temporaries owned"):
 * "c:<name>" a controller's heartbeat key, "w:<name>" a worker's, both
 * expiring by Redis's clock. 1 lives, 0 lapsed, <0 cannot tell (Redis
 * away, an owner of no known kind): the caller keeps the temp. */
int rq_owner_live(struct rq *q, const char *owner);

/* Who is alive, for the hints of `vrctl status`, `watch` and `submit`
 * ("no controller alive", "no worker has been seen for N s"). */
struct rq_liveness {
    int controllers;              /* controllers whose heartbeat key lives */
    int workers;                  /* live workers that are not silent */
    long long controller_seen_ms; /* wall clock of any controller's last heartbeat; 0 never */
    long long worker_seen_ms;     /* the same for workers */
};

/* Reads *lv (a few round trips per controller and worker). Returns 0 or
 * VR_E*. */
int rq_liveness_read(struct rq *q, struct rq_liveness *lv, vr_err *err);

/* A chunk entry pending longer than its lease allows. */
struct rq_pending {
    char id[RQ_ID_MAX];           /* stream entry id */
    char owner[128];              /* the worker that holds it (its name) */
    char consumer[160];           /* the claim it holds it under (rq_claim.h) */
    char job[48];
    int idx;
};

/* Up to max entries of `stream` (group workers) idle for at least
 * min_idle_ms, with the job and chunk each names; entries that name none
 * are acknowledged and skipped (nothing could ever run them). Returns the
 * count or <0. */
int rq_pending_idle(struct rq *q, const char *stream, long long min_idle_ms,
                    struct rq_pending *out, int max, vr_err *err);

/* Worker `name` died and its parent saw it (`serve --slots`, through the
 * controller: rq_report_died) or `vrctl run` stopped it: every chunk entry
 * it holds under a claim made with `key` (NULL: under any claim; for a
 * caller that owns the fleet) is failed now, as the lease reclaim would
 * fail it once the lease lapsed (an attempt counted: requeued, or
 * dead-lettered at the attempt limit), `reason` in the chunk's error and
 * the job's events; its record goes. Returns the chunks released or <0. */
int rq_worker_died(struct rq *q, const char *name, const char *key, const char *reason,
                   vr_err *err);

/* Wakes every client blocked in a read (a loop's XREADGROUP ... BLOCK) as
 * if its timeout had come (CLIENT UNBLOCK): processes told to stop leave
 * their loops now, not when their reads end. For a Redis of one's own
 * fleet (`vrctl run`'s): it takes CLIENT LIST. Returns how many were
 * woken, or <0. */
int rq_unblock_all(struct rq *q, vr_err *err);


#endif

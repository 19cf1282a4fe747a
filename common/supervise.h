/*
 * supervise.h - child processes a command starts and must account for:
 * `vrctl run` (redis-server, a controller, workers) and `vr-worker serve
 * --gpu all` (one worker per GPU). Spawning with a log file, noticing and
 * describing deaths, and stopping them in order (SIGTERM, a grace period,
 * then SIGKILL) live here once.
 *
 * A `struct sup` is used from one thread at a time (the caller hands it
 * from a monitor thread to the main thread only after joining).
 */
#ifndef VR_SUPERVISE_H
#define VR_SUPERVISE_H

#include "vr_err.h"

#include <stddef.h>
#include <sys/types.h>

enum sup_flags {
    SUP_OWN_GROUP  = 1 << 0, /* own process group: a terminal's Ctrl-C reaches only us,
                              * and we stop the children in order */
    SUP_SEARCH_PATH = 1 << 1, /* prog without a '/' is looked up in PATH */
    SUP_DIE_WITH_PARENT = 1 << 2, /* SIGKILL, not SIGTERM, when we die: for children
                                   * whose work is worthless without us (`vrctl run`'s
                                   * fleet, whose temp dir goes too), so none drains
                                   * a chunk for minutes after a kill -9 */
};

struct sup_child {
    pid_t pid;                /* 0 once reaped */
    char name[64];            /* for messages: "controller", "worker-gpu0-1" */
    char log[256];            /* its stdout+stderr file, or "" (inherited) */
    int status;               /* waitpid status once reaped */
    int group;                /* leads its own process group (SUP_OWN_GROUP): killed
                               * with the processes it started (serve --gpu all's) */
};

struct sup {
    struct sup_child *child;  /* owned */
    int n, cap;
};

/* Starts prog with argv (argv[0] included, NULL-terminated), stdout and
 * stderr appended to `log` when not NULL. The child gets SIGTERM if we die
 * (PR_SET_PDEATHSIG; SIGKILL with SUP_DIE_WITH_PARENT), so nothing outlives
 * a crashed parent. Returns the
 * child's index (>= 0) or VR_E* with the reason. */
int sup_spawn(struct sup *s, const char *name, const char *prog, char *const *argv,
              const char *log, unsigned flags, vr_err *err);

/* Starts child i again, a reaped one (its name and log kept), with prog
 * and argv as sup_spawn takes them: a supervisor that replaces a dead
 * child reuses its entry. Returns 0 or VR_E*. */
int sup_respawn(struct sup *s, int i, const char *prog, char *const *argv, unsigned flags,
                vr_err *err);

/* Reaps one child that has exited: its index, or -1 when none has (block
 * 0, which looks at this table's children only), or when interrupted by a
 * signal / no child is left (block 1, which waits for any child of the
 * process: use it where all of them are in this table). */
int sup_reap(struct sup *s, int block);

/* Children not reaped yet. */
int sup_running(const struct sup *s);

/* "exited with status 3" / "killed by signal 9 (Killed)". */
void sup_describe(int status, char *buf, size_t n);

/* Sends sig to every running child. */
void sup_signal(struct sup *s, int sig);

/* Stops every running child, the last spawned first: SIGTERM to all, then
 * each is given until grace_ms after the signal to exit, then SIGKILL
 * (sup_kill). */
void sup_stop(struct sup *s, int grace_ms);

/* SIGKILL to child i if it runs, and to its process group when it leads
 * one, so that the processes it started die with it (a `serve --gpu all`
 * parent's workers would drain on their own, orphaned); not reaped. */
void sup_kill(struct sup *s, int i);

/* Waits up to ms for child i to exit: 1 reaped (or was), 0 still running. */
int sup_wait(struct sup *s, int i, int ms);

/* From a signal handler (async-signal-safe): every sup_stop, the one
 * running and those after, gives no more grace (a second Ctrl-C). */
void sup_hurry(void);

/* Frees the table (does not stop anyone: sup_stop first); accepts a zeroed
 * struct. */
void sup_release(struct sup *s);

#endif

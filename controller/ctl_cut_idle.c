/*
 * ctl_cut_idle.c - how long each worker has been idle (issue 44's rule: a
 * chunk is cut for an idle worker only once it has waited longer than a
 * chunk's set-up, so a short gap, a worker about to be handed work, makes
 * no churn). Kept by the controller that watches, from its turns' lists:
 * a wait starts at the heartbeat that first said "idle", or when new work
 * was queued since (ctl_cut_idle_restart: a planned job's chunks go to
 * the idle workers within a heartbeat, which may still say "idle"; so
 * does the worker a tail was cut for, ctl_cut_idle_served), and lasts
 * while its heartbeats say idle, one at least since it started (Redis's
 * clock). A controller that starts (or took over) counts from its first
 * look.
 */
#include "ctl_cut.h"

#include <stdio.h>
#include <string.h>

#define CTL_CUT_IDLE_MAX 256

struct ctl_cut_idle {
    char name[160];
    long long since; /* Redis's clock: its wait's start */
};

static struct ctl_cut_idle idle_now[CTL_CUT_IDLE_MAX], idle_was[CTL_CUT_IDLE_MAX];
static int n_now, restart;

void ctl_cut_idle_restart(void)
{
    restart = 1;
}

void ctl_cut_idle_note(const struct rq_worker_info *w, int n, long long srv)
{
    int n_was = n_now;
    memcpy(idle_was, idle_now, (size_t)n_was * sizeof idle_was[0]);
    n_now = 0;
    for (int i = 0; i < n && n_now < CTL_CUT_IDLE_MAX; i++) {
        if (strcmp(w[i].state, "idle") || rq_worker_silent(&w[i], srv))
            continue;
        struct ctl_cut_idle *e = &idle_now[n_now++];
        snprintf(e->name, sizeof e->name, "%s", w[i].name);
        e->since = w[i].seen_ms;
        for (int j = 0; j < n_was; j++)
            if (!strcmp(idle_was[j].name, w[i].name)) {
                e->since = idle_was[j].since;
                break;
            }
        if (restart && e->since < srv)
            e->since = srv;
    }
    restart = 0;
}

void ctl_cut_idle_served(const char *name, long long srv)
{
    for (int i = 0; i < n_now; i++)
        if (!strcmp(idle_now[i].name, name))
            idle_now[i].since = srv;
}

long long ctl_cut_idle_for(const struct rq_worker_info *w, long long srv)
{
    for (int i = 0; i < n_now; i++)
        if (!strcmp(idle_now[i].name, w->name))
            return w->seen_ms >= idle_now[i].since && srv > idle_now[i].since
                       ? srv - idle_now[i].since
                       : 0;
    return 0;
}

int ctl_cut_idle_waited(const struct rq_worker_info *w, long long srv, int warmup)
{
    /* a worker that just joined: its wait is no gap, none will end it; but
     * a heartbeat since work was queued says so (one from before a job's
     * plan said idle while the worker took a chunk of it: a cut for it at
     * 0 frames done held the straggler's cut back until its tail was taken) */
    if (w->chunks_done <= 0)
        return ctl_cut_idle_for(w, srv) > 0;
    double fps = w->fps > 0 && w->fps < 1e5 ? w->fps : 0; /* its last chunk's rate */
    long long setup = CTL_CUT_SETUP_MS + (fps > 0 ? (long long)(warmup * 1000 / fps) : 0);
    return ctl_cut_idle_for(w, srv) > setup;
}

/*
 * vrctl_liveness.c - the hints `vrctl status`, `watch` and `submit` give
 * when nothing would move a job: no controller alive (a job stays
 * "queued" forever), no worker alive (chunks wait "queued"). Read from the
 * heartbeats (queue/rq_fleet.h).
 */
#include "vrctl.h"

#include "rq_fleet.h"

#include <stdio.h>
#include <string.h>

/* "N s ago" since a wall-clock time, or "never" for 0. */
static void since(long long seen_ms, long long now_ms, char *buf, size_t n)
{
    long long s = (now_ms - seen_ms) / 1000;
    if (seen_ms <= 0)
        snprintf(buf, n, "never");
    else
        snprintf(buf, n, "%lld s", s > 0 ? s : 0);
}

int vrctl_liveness_hints(struct rq *q, char hint[2][200])
{
    struct rq_liveness lv;
    hint[0][0] = hint[1][0] = '\0';
    if (rq_liveness_read(q, &lv, NULL) < 0)
        return 0;
    long long now = rq_now_ms();
    char ago[32];
    int n = 0;
    if (lv.controllers == 0) {
        since(lv.controller_seen_ms, now, ago, sizeof ago);
        if (lv.controller_seen_ms > 0)
            snprintf(hint[n++], 200, "no controller alive (the last one was seen %s ago): jobs "
                     "stay queued until one runs (vr-controller run)", ago);
        else
            snprintf(hint[n++], 200, "no controller alive (none has been seen): jobs stay queued "
                     "until one runs (vr-controller run)");
    }
    if (lv.workers == 0) {
        since(lv.worker_seen_ms, now, ago, sizeof ago);
        if (lv.worker_seen_ms > 0)
            snprintf(hint[n++], 200, "no worker has been seen for %s: chunks wait until one "
                     "runs (vr-worker serve)", ago);
        else
            snprintf(hint[n++], 200, "no worker has been seen yet: chunks wait until one runs "
                     "(vr-worker serve)");
    }
    return n;
}

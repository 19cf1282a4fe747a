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

int vrctl_liveness_hints(struct rq *q, char hint[2][200])
{
    struct rq_liveness lv;
    hint[0][0] = hint[1][0] = '\0';
    if (rq_liveness_read(q, &lv, NULL) < 0)
        return 0;
    /* who, how many alive, last seen; the text when seen before and when never */
    const struct {
        int alive;
        long long seen_ms;
        const char *seen, *never;
    } who[2] = {
        { lv.controllers, lv.controller_seen_ms,
          "no controller alive (the last one was seen %s ago): jobs stay queued until one runs "
          "(vr-controller run)",
          "no controller alive (none has been seen): jobs stay queued until one runs "
          "(vr-controller run)" },
        { lv.workers, lv.worker_seen_ms,
          "no worker has been seen for %s: chunks wait until one runs (vr-worker serve)",
          "no worker has been seen yet: chunks wait until one runs (vr-worker serve)" },
    };
    long long now = rq_now_ms();
    int n = 0;
    for (int k = 0; k < 2; k++) {
        if (who[k].alive)
            continue;
        char ago[32];
        snprintf(ago, sizeof ago, "%lld s", who[k].seen_ms < now ? (now - who[k].seen_ms) / 1000 : 0);
        if (who[k].seen_ms > 0)
            snprintf(hint[n++], 200, who[k].seen, ago);
        else
            snprintf(hint[n++], 200, "%s", who[k].never);
    }
    return n;
}

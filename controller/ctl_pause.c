/*
 * ctl_pause.c - a worker's failure on the shared storage, noted for the
 * fleet-wide pause (queue/rq_pause.h, issue 42, finding 2): when several
 * workers see storage errors at once, the storage is at fault, and the
 * whole queue waits out a backoff instead of each worker burning chunks
 * (and quarantining itself) on its own.
 */
#include "ctl.h"

#include "log.h"
#include "rq_claim.h"
#include "rq_pause.h"

#include <stdio.h>
#include <string.h>

void ctl_pause_note(struct rq *q, const struct rq_report *r, const char *reason)
{
    char worker[RQ_CONSUMER_MAX], who[1200];
    size_t len = strcspn(r->consumer, "+"); /* "name+k+C": the claim's worker */
    snprintf(worker, sizeof worker, "%.*s", (int)len, r->consumer);
    vr_err e = { 0 };
    long long ms = rq_pause_note(q, worker, reason, who, sizeof who, &e);
    if (ms < 0) {
        log_warn("job %s chunk %d: cannot note the storage failure for the fleet's pause: %s",
                 r->job, r->idx, e.msg);
        return;
    }
    if (ms == 0)
        return;
    log_error("alert: storage errors on %d or more workers at once (%s): the fleet pauses for "
              "%.1f s, chunks keep their attempts; last: %s", RQ_PAUSE_QUORUM, who, ms / 1000.0,
              reason);
    rq_event(q, r->job, "fleet paused %.1f s: storage errors on workers %s at once; last: %s",
             ms / 1000.0, who, reason);
}

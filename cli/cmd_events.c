/*
 * cmd_events.c - `vrctl events JOB [--follow] [--json]`: the job's event log
 * (split, chunks done, requeues with the worker that lost its lease,
 * commits that had to wait, failure, stitch), oldest first, with --follow
 * until the job ends. Its lines are also what `status JOB` and `watch`
 * show as the last events: the cause of a stall is there, not only in a
 * worker's log.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "rq_events.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cmd_events(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID | VRCTL_WANT_JSON | VRCTL_WANT_FOLLOW, &v);
    if (rc)
        return rc;
    enum { BATCH = 200 };
    struct rq_event_entry *ev = calloc(BATCH, sizeof *ev);
    char state[32] = "", last[RQ_ID_MAX] = "0";
    vr_err e = { 0 };
    rc = 1;
    if (!ev)
        goto out;
    int found = rq_job_state(v.q, v.id, state, sizeof state, &e);
    if (found == 0) {
        rc = vrctl_no_job(v.id);
        goto out;
    }
    if (found < 0) {
        fprintf(stderr, "vrctl events: %s\n", e.msg);
        goto out;
    }
    for (int fails = 0;;) {
        int n = rq_events_read(v.q, v.id, last, ev, BATCH, &e);
        if (n < 0) {
            if (!v.follow || ++fails > 120) {
                fprintf(stderr, "vrctl events: %s\n", e.msg);
                goto out;
            }
            rq_backoff(v.q);
            continue;
        }
        fails = 0;
        for (int i = 0; i < n; i++)
            vrctl_event_print(&ev[i], v.json, stdout);
        if (n)
            snprintf(last, sizeof last, "%s", ev[n - 1].id);
        fflush(stdout);
        if (n == BATCH)
            continue;
        if (!v.follow)
            break;
        /* the job's last events are written before its end state */
        if (job_state_ended(state))
            break;
        if (rq_job_state(v.q, v.id, state, sizeof state, NULL) < 0)
            state[0] = '\0';
        usleep(300000);
    }
    rc = 0;
out:
    free(ev);
    vrctl_end(&v);
    return rc;
}

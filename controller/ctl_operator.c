/*
 * ctl_operator.c - the operator's purge, asked through its stream
 * vr:submit:@ops (issue 41: the shared `vrctl` user writes no job or chunk
 * state, so `vrctl purge` logged in as it asks a controller, as cancel
 * and retry do: ctl_submit_cmd.c). The same as vrctl purge does with a
 * user that may write: one ended job by id, or every job that ended
 * before a time; a live job is refused, never touched. Records only, as
 * vrctl purge's: storage/jobs/<id> goes at the controller's own
 * retention (ctl_retain.c).
 */
#include "ctl.h"

#include "job.h"
#include "log.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_PURGE_SCAN 100000 /* jobs looked at by one purge-before */

/* Job id purged: the answer's code (0, 1 live, 2 none) and text, <0 Redis. */
static int ctl_operator_purge_one(struct ctl *c, const char *id, char *text, size_t n)
{
    char state[32] = "";
    vr_err e = { 0 };
    int rc = rq_job_purge(c->q, id, 0, state, sizeof state, &e);
    if (rc == 1) {
        log_info("job %s purged by the operator (vrctl purge)", id);
        snprintf(text, n, "%s purged", id);
        return 0;
    }
    if (rc == 0) {
        snprintf(text, n, "job %s is %s; only ended jobs are purged (vrctl cancel it first)", id,
                 state);
        return 1;
    }
    if (rc == VR_ENOENT) {
        snprintf(text, n, "no job '%s'", id);
        return 2;
    }
    return rc;
}

/* Every job that ended before `before` (ms, as text) purged. */
static int ctl_operator_purge_before(struct ctl *c, const char *before, char *text, size_t n)
{
    char *end = NULL;
    long long ms = before ? strtoll(before, &end, 10) : 0;
    if (!before || end == before || *end || ms <= 0) {
        snprintf(text, n, "not a time");
        return 2;
    }
    char (*ids)[48] = malloc(CTL_PURGE_SCAN * sizeof *ids);
    if (!ids)
        return VR_ENOMEM;
    vr_err e = { 0 };
    int k = rq_jobs_created_before(c->q, ms, ids, CTL_PURGE_SCAN, &e), purged = 0, rc = 0;
    if (k < 0)
        rc = k;
    for (int i = 0; i < k && rc == 0; i++) {
        int r = job_id_valid(ids[i]) ? rq_job_purge(c->q, ids[i], ms, NULL, 0, &e) : 2;
        if (r < 0 && r != VR_ENOENT)
            rc = r;
        purged += r == 1;
    }
    free(ids);
    if (rc < 0) {
        log_warn("the operator's purge waits: %s", e.msg);
        return rc;
    }
    log_info("%d job%s purged by the operator (vrctl purge --older-than)", purged,
             purged == 1 ? "" : "s");
    snprintf(text, n, "%d job%s purged", purged, purged == 1 ? "" : "s");
    return 0;
}

int ctl_operator_purge(struct ctl *c, const char *cmd, const char *arg, char *text, size_t n)
{
    if (!strcmp(cmd, "purge-before"))
        return ctl_operator_purge_before(c, arg, text, n);
    if (!arg || !job_id_valid(arg)) {
        snprintf(text, n, "not a job id");
        return 2;
    }
    int rc = ctl_operator_purge_one(c, arg, text, n);
    if (rc < 0)
        log_warn("job %s: the operator's purge waits: redis failed (%d)", arg, rc);
    return rc;
}

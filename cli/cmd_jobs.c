/*
 * cmd_jobs.c - `vrctl cancel` and `vrctl retry`: state changes a user asks
 * for. Cancel marks the job; workers holding its chunks stop at their next
 * heartbeat and queued chunks are skipped. Retry re-arms a failed job's
 * dead-lettered chunks (attempts restart at 0) and lets a controller carry
 * on from its manifest: a job that failed in its split is split again, one
 * that failed in its stitch (all chunks done) is stitched again
 * (queue/rq_rerun.h). Logged in as a submitter (vrsub-NAME), vrctl asks a
 * controller through NAME's own stream instead, which does either only
 * for NAME's own jobs (vrctl_ask.c).
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "job.h"
#include "rq_jobs.h"
#include "rq_rerun.h"

#include <stdio.h>
#include <string.h>

int cmd_cancel(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID, &v);
    if (rc)
        return rc;
    if (vrctl_asker()[0]) {
        rc = vrctl_ask_controller(&v, "cancel");
        vrctl_end(&v);
        return rc;
    }
    char state[32];
    vr_err e = { 0 };
    rc = rq_job_cancel(v.q, v.id, "cancelled by the user", state, sizeof state, &e);
    if (rc == 1) {
        rq_event(v.q, v.id, "cancelled");
        printf("%s cancelled\n", v.id);
    } else if (rc == 0) {
        fprintf(stderr, "vrctl cancel: job %s already %s\n", v.id, state);
    } else if (rc == VR_ENOENT) {
        rc = vrctl_no_job(v.id);
    } else {
        fprintf(stderr, "vrctl cancel: %s\n", e.msg);
    }
    vrctl_end(&v);
    return rc == 1 ? 0 : rc == 2 ? 2 : 1;
}

int cmd_retry(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID, &v);
    if (rc)
        return rc;
    if (vrctl_asker()[0]) {
        rc = vrctl_ask_controller(&v, "retry");
        vrctl_end(&v);
        return rc;
    }
    char what[256] = "";
    vr_err e = { 0 };
    rc = rq_job_rerun(v.q, v.id, what, sizeof what, &e);
    if (rc == 1)
        printf("%s: retrying (%s)\n", v.id, what);
    else if (rc == 0)
        fprintf(stderr, "vrctl retry: job %s is %s; only failed or cancelled jobs are retried\n",
                v.id, what);
    else if (rc == VR_ENOENT)
        rc = vrctl_no_job(v.id);
    else
        fprintf(stderr, "vrctl retry: %s\n", e.msg);
    vrctl_end(&v);
    return rc == 1 ? 0 : rc == 2 ? 2 : 1;
}

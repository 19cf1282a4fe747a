/*
 * cmd_jobs.c - `vrctl cancel` and `vrctl retry`: state changes a user asks
 * for. Cancel marks the job; workers holding its chunks stop at their next
 * heartbeat and queued chunks are skipped. Retry re-arms a failed job's
 * dead-lettered chunks (attempts restart at 0) and lets a controller carry
 * on from its manifest: a job that failed in its split is split again, one
 * that failed in its stitch (all chunks done) is stitched again.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "job.h"
#include "rq_jobs.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

int cmd_cancel(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID, &v);
    if (rc)
        return rc;
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
    char state[32] = "";
    long long total = 0;
    vr_err e = { 0 };
    /* The job is live again before its chunks are, or workers skip them. */
    rc = rq_job_retry(v.q, v.id, &total, state, sizeof state, &e);
    if (rc == 0)
        fprintf(stderr, "vrctl retry: job %s is %s; only failed or cancelled jobs are retried\n",
                v.id, state);
    if (rc <= 0)
        goto fail;
    int again = 0, held = 0;
    /* A job cancelled mid-split has no total yet: its chunks so far are
     * records 0, 1, ... (the split creates them in order); the controller
     * splits it again and creates the rest. */
    long long upto = total > 0 ? total : JOB_MAX_CHUNKS;
    for (long long i = 0; i < upto; i++) {
        /* A dead chunk is re-armed; any other unfinished one gets a fresh
         * entry, its old one having been skipped; both restart their
         * attempts at 0 (the job's failure was not theirs). Never
         * both: a re-armed chunk is queued, and a second entry would run it
         * twice at once. Nor one a live worker still runs (2): its commit
         * is taken once the job runs again. */
        rc = rq_chunk_requeue_lost(v.q, v.id, (int)i, 2, &e);
        if (rc == 0)
            rc = rq_chunk_requeue_lost(v.q, v.id, (int)i, 3, &e);
        if (rc == VR_ENOENT && total <= 0)
            break;
        if (rc < 0 && rc != VR_ENOENT)
            goto fail;
        again += rc == 1;
        held += rc == 2; /* a live worker still runs it: its commit counts */
    }
    /* With nothing to re-run the controller's audit picks the job up
     * again within a second: no chunks, it splits; all chunks done (the
     * stitch failed), it stitches. Say which, not "0 chunks". */
    long long done = 0;
    rq_job_number(v.q, v.id, "chunks_done", &done, NULL);
    char what[128];
    if (total == 0)
        snprintf(what, sizeof what, "splitting again");
    else if (again == 0 && done >= total)
        snprintf(what, sizeof what, "all %lld chunks are done: stitching again", total);
    else if (held > 0)
        snprintf(what, sizeof what, "%d chunk%s enqueued again, %d left to the live workers "
                 "running them", again, text_plural(again), held);
    else
        snprintf(what, sizeof what, "%d chunk%s enqueued again", again, text_plural(again));
    rq_event(v.q, v.id, "retry: %s", what);
    printf("%s: retrying (%s)\n", v.id, what);
    vrctl_end(&v);
    return 0;
fail:
    /* Only the job's own record answers VR_ENOENT here: a missing chunk
     * record is skipped above. */
    if (rc == VR_ENOENT)
        rc = vrctl_no_job(v.id);
    else if (rc < 0)
        fprintf(stderr, "vrctl retry: %s\n", e.msg);
    vrctl_end(&v);
    return rc == 2 ? 2 : 1;
}

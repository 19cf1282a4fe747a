/*
 * rq_rerun.c - a failed or cancelled job run again (see rq_rerun.h): the
 * one retry vrctl and a controller share.
 */
#include "rq_rerun.h"

#include "job.h"
#include "rq_jobs.h"
#include "rq_scripts.h"
#include "text.h"

#include <stdio.h>

/* Re-arms job id's unfinished chunks (total: its count, 0 when never
 * split): the re-armed and the held ones into *again and *held. 0 or <0. */
static int rq_rerun_chunks(struct rq *q, const char *id, long long total, int *again,
                           int *held, vr_err *err)
{
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
        int rc = rq_chunk_requeue_lost(q, id, (int)i, 2, err);
        if (rc == 0)
            rc = rq_chunk_requeue_lost(q, id, (int)i, 3, err);
        if (rc == VR_ENOENT && total <= 0)
            break;
        if (rc < 0 && rc != VR_ENOENT)
            return rc;
        *again += rc == 1;
        *held += rc == 2; /* a live worker still runs it: its commit counts */
    }
    return 0;
}

int rq_job_rerun(struct rq *q, const char *id, char *what, size_t n, vr_err *err)
{
    long long total = 0;
    /* The job is live again before its chunks are, or workers skip them. */
    int rc = rq_job_retry(q, id, &total, what, n, err);
    if (rc <= 0)
        return rc;
    int again = 0, held = 0;
    if ((rc = rq_rerun_chunks(q, id, total, &again, &held, err)) < 0)
        return rc; /* only the job's own record answers VR_ENOENT: a chunk's is skipped */
    /* With nothing to re-run the controller's audit picks the job up
     * again within a second: no chunks, it splits; all chunks done (the
     * stitch failed), it stitches. Say which, not "0 chunks". */
    long long done = 0;
    rq_job_number(q, id, "chunks_done", &done, NULL);
    if (total == 0)
        snprintf(what, n, "splitting again");
    else if (again == 0 && done >= total)
        snprintf(what, n, "all %lld chunks are done: stitching again", total);
    else if (held > 0)
        snprintf(what, n, "%d chunk%s enqueued again, %d left to the live workers running them",
                 again, text_plural(again), held);
    else
        snprintf(what, n, "%d chunk%s enqueued again", again, text_plural(again));
    rq_event(q, id, "retry: %s", what);
    return 1;
}

/*
 * serve_commit.c - reports a finished chunk done, and keeps trying while
 * Redis is unreachable or refuses writes (restart, OOM). Dropping the
 * report there would cost a whole lease of waiting and then a recompute;
 * retrying is safe because the controller checks the claim itself: once the
 * report arrives, a chunk reclaimed meanwhile is refused, never committed
 * twice.
 */
#include "serve.h"

#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

/* How long a finished chunk's report is retried. Past the controller's
 * lease (30 s by default) the chunk has most likely been reclaimed, and the
 * controller refuses the report once Redis is back; the limit only keeps a
 * worker from waiting forever on a Redis that never returns. */
#define SERVE_COMMIT_RETRY_S 120.0

int serve_commit(struct serve *s, const struct rq_held *h, long long frames, double fps,
                 const char *metrics_json, const char *sum, const char *note, vr_err *err)
{
    double t0 = clock_mono_s();
    char first[256] = "", notes[1024];
    pthread_mutex_lock(&s->mu);
    s->committing = 1; /* cleared with busy (serve_set_busy) */
    pthread_mutex_unlock(&s->mu);
    for (int tries = 1;; tries++) {
        /* the cause could not be recorded while Redis refused it; the
         * controller puts it in the job's events with the commit */
        if (tries > 1)
            snprintf(notes, sizeof notes, "%s%sworker %s committed on try %d after: %s",
                     note ? note : "", note && note[0] ? "\n" : "", s->name, tries, first);
        else
            snprintf(notes, sizeof notes, "%s", note ? note : "");
        int rc = rq_report_done(s->q, h, frames, fps, metrics_json, sum, notes, err);
        if (rc >= 0) {
            if (tries > 1)
                log_info("job %s chunk %d: done reported on try %d", h->job, h->idx, tries);
            return 1;
        }
        pthread_mutex_lock(&s->mu);
        int lost = s->lost, ended = s->job_ended;
        pthread_mutex_unlock(&s->mu);
        if (lost)
            return 0; /* the heartbeat saw the chunk reclaimed */
        if (ended)
            return RQ_COMMIT_JOB_ENDED;
        if (clock_mono_s() - t0 > SERVE_COMMIT_RETRY_S)
            return rc;
        if (tries == 1) {
            snprintf(first, sizeof first, "%.*s", (int)strcspn(err->msg, "\n"), err->msg);
            log_warn("job %s chunk %d: cannot commit: %s; retrying while the lease may still "
                     "be ours", h->job, h->idx, err->msg);
        }
        rq_backoff(s->q);
    }
}

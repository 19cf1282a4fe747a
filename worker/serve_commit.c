/*
 * serve_commit.c - reports a finished chunk done, and keeps trying while
 * Redis is unreachable or refuses writes (restart, OOM). Dropping the
 * report there would cost a whole lease of waiting and then a recompute;
 * retrying is safe because the controller checks the claim itself: once the
 * report arrives, a chunk reclaimed meanwhile is refused, never committed
 * twice.
 */
#include "serve.h"

#include "log.h"

#include <stdio.h>

int serve_commit(struct serve *s, const struct rq_held *h, long long frames, double fps,
                 const char *metrics_json, const char *sum, const char *note, vr_err *err)
{
    struct serve_retry r;
    serve_retry_begin(&r);
    char notes[1024];
    pthread_mutex_lock(&s->mu);
    s->committing = 1; /* cleared with busy (serve_set_busy) */
    pthread_mutex_unlock(&s->mu);
    for (;;) {
        /* the cause could not be recorded while Redis refused it; the
         * controller puts it in the job's events with the commit */
        if (r.tries > 0)
            snprintf(notes, sizeof notes, "%s%sworker %s committed on try %d after: %s",
                     note ? note : "", note && note[0] ? "\n" : "", s->name, r.tries + 1,
                     r.first);
        else
            snprintf(notes, sizeof notes, "%s", note ? note : "");
        int rc = rq_report_done(s->q, h, frames, fps, metrics_json, sum, notes, err);
        if (rc >= 0) {
            if (r.tries > 0)
                log_info("job %s chunk %d: done reported on try %d", h->job, h->idx,
                         r.tries + 1);
            return 1;
        }
        pthread_mutex_lock(&s->mu);
        int lost = s->lost, ended = s->job_ended;
        pthread_mutex_unlock(&s->mu);
        if (lost)
            return 0; /* the heartbeat saw the chunk reclaimed */
        if (ended)
            return RQ_COMMIT_JOB_ENDED;
        if (r.tries == 0)
            log_warn("job %s chunk %d: cannot commit: %s; retrying while the lease may still "
                     "be ours", h->job, h->idx, err->msg);
        if (!serve_retry_again(&r, s->q, err))
            return rc;
    }
}

/*
 * serve_commit.c - commits a finished chunk, and keeps trying while Redis is
 * unreachable or refuses writes (restart, OOM). Dropping the result there
 * would cost a whole lease of waiting and then a recompute; retrying is
 * safe because the commit script checks ownership itself: once Redis
 * answers, a chunk reclaimed meanwhile is refused (0), never committed twice.
 */
#include "serve.h"

#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

/* How long a finished chunk's commit is retried. Past the controller's
 * lease (30 s by default) the chunk has most likely been reclaimed, and the
 * script's answer says so once Redis is back; the limit only keeps a worker
 * from waiting forever on a Redis that never returns. */
#define SERVE_COMMIT_RETRY_S 120.0

int serve_commit(struct serve *s, const struct rq_msg *msg, const char *job, int idx,
                 long long frames, double fps, const char *metrics_json, const char *sum,
                 vr_err *err)
{
    double t0 = clock_mono_s();
    char first[256] = "";
    pthread_mutex_lock(&s->mu);
    s->committing = 1; /* cleared with busy (serve_set_busy) */
    pthread_mutex_unlock(&s->mu);
    for (int tries = 1;; tries++) {
        int rc = rq_chunk_commit(s->q, msg->stream, s->name, msg->id, job, idx, frames, fps,
                                 metrics_json, sum, err);
        if (rc >= 0) {
            if (tries > 1) {
                log_info("job %s chunk %d: commit went through on try %d", job, idx, tries);
                /* The cause could not be recorded while Redis refused it;
                 * now the job's events say why this chunk stalled. */
                rq_event(s->q, job, "chunk %d: worker %s committed on try %d after: %s", idx,
                         s->name, tries, first);
            }
            return rc;
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
            /* Redis appends "script: <sha>, on @user_script:N." to a
             * refused script: not for users */
            snprintf(first, sizeof first, "%.*s", (int)strcspn(err->msg, "\n"), err->msg);
            char *tail = strstr(first, " script: ");
            if (tail)
                *tail = '\0';
            rq_event(s->q, job, "chunk %d: worker %s cannot commit: %s; retrying", idx, s->name,
                     first);
        }
        if (tries == 1)
            log_warn("job %s chunk %d: cannot commit: %s; retrying while the lease may still "
                     "be ours", job, idx, err->msg);
        rq_backoff(s->q);
    }
}

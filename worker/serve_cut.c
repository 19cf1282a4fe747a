/*
 * serve_cut.c - a cut of the chunk in hand (queue/rq_cut.h): the heartbeat
 * reads the chunk record's `end` with each lease renewal and, when the
 * controller cut the chunk, asks the range's reader to stop there (struct
 * remux_cut); the done report then names the end the worker stopped at,
 * which the commit script checks against the record.
 */
#include "serve.h"

#include "job.h"
#include "log.h"
#include "rq_cut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void serve_cut_reset(struct serve *s)
{
    pthread_mutex_lock(&s->cut.mu);
    s->cut.state = REMUX_CUT_NONE;
    s->cut.taken_any = 0;
    pthread_mutex_unlock(&s->cut.mu);
    pthread_mutex_lock(&s->mu);
    s->aside_heard = 0;
    pthread_mutex_unlock(&s->mu);
    s->cut_prev[0] = '\0';
    __atomic_store_n(&s->cut.read, 0, __ATOMIC_RELAXED);
    s->cut_seen[0] = '\0';
    s->cut_frames = -1;
}

void serve_cut_poll(struct serve *s, struct rq *q, const struct rq_held *h)
{
    char end[RQ_CUT_END_MAX];
    char *task = malloc(JOB_MAX_JSON);
    struct chunk_task *t = malloc(sizeof *t);
    vr_err e = { 0 };
    /* VR_TEST_CUT_DEAF (tests only): the renewal's answer is lost, the
     * worker reads on to its old end (the commit script's check, rq_cut.h) */
    if (!task || !t || getenv("VR_TEST_CUT_DEAF") ||
        rq_cut_peek(q, h->job, h->idx, end, sizeof end, task, JOB_MAX_JSON, &e) != 1)
        goto out;
    pthread_mutex_lock(&s->mu);
    int fresh = s->busy && !strcmp(s->held.id, h->id) && strcmp(end, s->cut_seen);
    pthread_mutex_unlock(&s->mu);
    if (!fresh)
        goto out;
    /* the record is Redis's: the head must be this chunk's, a range with an end */
    char mine[RQ_CUT_END_MAX];
    if (chunk_task_parse(task, strlen(task), t, &e) < 0 || strcmp(t->job, h->job) ||
        t->idx != h->idx || !t->is_range || !t->range.has_end ||
        (rq_cut_end_text(&t->range, mine, sizeof mine), strcmp(mine, end))) {
        log_warn("job %s chunk %d: its record names a cut this worker cannot take (%s); "
                 "reading on", h->job, h->idx, e.msg[0] ? e.msg : "not its range");
        goto out;
    }
    pthread_mutex_lock(&s->cut.mu);
    s->cut.end = t->range.end;
    s->cut.own_to = t->range.own_to;
    s->cut.state = REMUX_CUT_ASKED;
    pthread_mutex_unlock(&s->cut.mu);
    pthread_mutex_lock(&s->mu);
    snprintf(s->cut_prev, sizeof s->cut_prev, "%s", s->cut_seen);
    s->cut_prev_frames = s->cut_frames;
    snprintf(s->cut_seen, sizeof s->cut_seen, "%s", end);
    s->cut_frames = t->frames;
    pthread_mutex_unlock(&s->mu);
    log_info("job %s chunk %d: cut by the controller (its range now ends at %s); stopping there",
             h->job, h->idx, end);
    serve_aside_heard(s, q, h);
out:
    free(task);
    free(t);
}

int serve_cut_end(struct serve *s, const struct chunk_task *t, char *end, size_t n,
                  long long *frames)
{
    end[0] = '\0';
    *frames = t->frames;
    if (!t->is_range)
        return 0;
    rq_cut_end_text(&t->range, end, n);
    /* the reader stopped at the last cut it took: the last asked, or the
     * one before when that one came too late */
    pthread_mutex_lock(&s->cut.mu);
    int taken = s->cut.taken_any;
    char taken_end[RQ_CUT_END_MAX];
    snprintf(taken_end, sizeof taken_end, "%lld:%lld", (long long)s->cut.taken.pts,
             (long long)s->cut.taken.dts);
    s->cut.state = REMUX_CUT_NONE; /* a cut heard from now on is too late */
    pthread_mutex_unlock(&s->cut.mu);
    if (!taken)
        return 0;
    pthread_mutex_lock(&s->mu);
    int prev = strcmp(taken_end, s->cut_seen) != 0;
    snprintf(end, n, "%s", prev ? s->cut_prev : s->cut_seen);
    *frames = prev ? s->cut_prev_frames : s->cut_frames;
    pthread_mutex_unlock(&s->mu);
    return 1;
}

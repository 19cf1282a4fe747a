/*
 * serve_aside.c - a straggler steps aside from the tails (issue 44,
 * queue/rq_cut.h RQ_CUT_ASIDE_MS). When the controller cut the chunk in
 * hand for this worker's slowness (heard with the lease renewal, as the
 * cut itself), the worker, once it ends that chunk, reads nothing from the
 * priority stream for a while: the tails cut there, its own among them,
 * are for the faster workers, which look there only between their
 * blocking reads of the normal stream, and a tail taken at a fifth of
 * their speed becomes the job's end again. It still reads the normal
 * stream. The step aside ends with the chunk's job or after
 * RQ_CUT_ASIDE_MS; its heartbeat says "aside" meanwhile, so that the
 * controller cuts no tail for it either.
 */
#include "serve.h"

#include "clock.h"
#include "log.h"
#include "rq_cut.h"
#include "rq_jstate.h"

#include <stdio.h>
#include <string.h>

void serve_aside_heard(struct serve *s, struct rq *q, const struct rq_held *h)
{
    vr_err e = { 0 };
    if (rq_cut_aside(q, h->job, h->idx, h->id, &e) != 1)
        return;
    pthread_mutex_lock(&s->mu);
    s->aside_heard = 1;
    snprintf(s->aside_job, sizeof s->aside_job, "%s", h->job);
    pthread_mutex_unlock(&s->mu);
}

void serve_aside_begin(struct serve *s)
{
    if (!s->aside_heard)
        return;
    s->aside_heard = 0;
    s->aside_until = clock_mono_s() + RQ_CUT_ASIDE_MS / 1000.0;
    log_info("worker %s: its chunk of job %s was cut for its slowness: it takes no tail for "
             "%d s or until the job ends", s->name, s->aside_job, RQ_CUT_ASIDE_MS / 1000);
}

int serve_aside(struct serve *s)
{
    pthread_mutex_lock(&s->mu);
    double until = s->aside_until;
    char job[sizeof s->aside_job];
    snprintf(job, sizeof job, "%s", s->aside_job);
    pthread_mutex_unlock(&s->mu);
    if (until <= 0)
        return 0;
    char st[32] = "";
    vr_err e = { 0 };
    /* the job's end (or Redis's error: the read that follows says it) ends it */
    int over = clock_mono_s() >= until,
        ended = !over && (rq_jstate_get(s->q, job, st, sizeof st, &e) != 1 ||
                          (strcmp(st, "running") && strcmp(st, "splitting")));
    if (!over && !ended)
        return 1;
    pthread_mutex_lock(&s->mu);
    s->aside_until = 0;
    pthread_mutex_unlock(&s->mu);
    log_info("worker %s: takes tails again (%s)", s->name,
             over ? "its step aside is over" : "its job ended");
    return 0;
}

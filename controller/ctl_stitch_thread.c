/*
 * ctl_stitch_thread.c - the stitch and its publish on a thread beside the
 * loop (issue 43). Summing and copying a job's chunks (~250 MB/s) and
 * uploading a URL output (with its retries) used to run on the loop, and
 * every result, claim and start waited behind them. The loop now only
 * says which job may have something to stitch (ctl_stitcher_post); this
 * thread does it, one job at a time, with a connection of its own
 * (hiredis contexts are one per thread) and a copy of the controller's
 * settings whose stitches ahead are its alone.
 *
 * Nothing of the job's life changes: the thread runs ctl_stitch_progress
 * and ctl_stitch_finish as the loop did, so the claim (running ->
 * stitching under this controller's name and token), the publish check,
 * "done" recorded only once the output is in place, and failures recorded
 * as the job's error are theirs. A controller killed mid-stitch leaves the
 * job stitching under a name whose heartbeat lapses; the next controller's
 * audit claims it and stitches again, as before. The thread's steps are
 * the controller's pulse too (ctl_loop_stalled), so a stitch stuck in one
 * call still withdraws the heartbeat and lets another controller take the
 * job over.
 *
 * A request is a job id, kept once however often it is asked for; the
 * audit asks again every second, so a request dropped (queue full, Redis
 * away during the stitch) is only late.
 */
#include "ctl.h"

#include "clock.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CTL_STITCH_QUEUE_MAX 1024 /* jobs waiting for the thread; more wait for the audit */

struct ctl_stitch_req {
    char id[JOB_ID_MAX];
    int ahead;                    /* the job runs: stitch ahead what is done first */
};

struct ctl_stitcher {
    struct ctl tc;                /* the thread's controller: its connection, its stitches */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ctl_stitch_req queue[CTL_STITCH_QUEUE_MAX];
    int n;                        /* requests waiting, oldest first */
    int sweep;                    /* the audit asked for the stitches of ended jobs to go */
    int quit;
};

/* The oldest request into *r (1), or a sweep (2), or 0 on quit; waits. */
static int ctl_stitcher_next(struct ctl_stitcher *s, struct ctl_stitch_req *r)
{
    pthread_mutex_lock(&s->mu);
    while (!s->quit && !*s->tc.stop && s->n == 0 && !s->sweep) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1; /* *stop is a signal's flag: looked at every second */
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    int got = 0;
    if (!s->quit && !*s->tc.stop) {
        if (s->n > 0) {
            *r = s->queue[0];
            memmove(&s->queue[0], &s->queue[1], (size_t)(s->n - 1) * sizeof s->queue[0]);
            s->n--;
            got = 1;
        } else {
            s->sweep = 0;
            got = 2;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return got;
}

static void *ctl_stitcher_main(void *arg)
{
    struct ctl_stitcher *s = arg;
    struct ctl *tc = &s->tc;
    struct ctl_stitch_req r;
    int got;
    while ((got = ctl_stitcher_next(s, &r)) != 0) {
        ctl_loop_pulse(tc); /* busy: its steps count as the controller's pulse */
        if (got == 2) {
            ctl_stitch_sweep(tc);
        } else {
            log_ctx_thread(r.id, -1);
            if (r.ahead)
                ctl_stitch_progress(tc, r.id);
            ctl_stitch_finish(tc, r.id);
            log_ctx_thread(NULL, -1);
        }
        __atomic_store_n(&tc->loop_turn_ms, 0, __ATOMIC_RELAXED); /* idle is not stuck */
        if (!rq_connected(tc->q))
            rq_backoff(tc->q);
    }
    ctl_stitch_drop_all(tc);
    return NULL;
}

int ctl_stitcher_start(struct ctl *c, vr_err *err)
{
    struct ctl_stitcher *s = calloc(1, sizeof *s);
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = ctl_thread_view(&s->tc, c, err);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->th, NULL, ctl_stitcher_main, s) != 0) {
        rq_free(&s->tc.q);
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return vr_err_set(err, VR_ENOMEM, "cannot start the stitch thread");
    }
    c->stitcher = s;
    c->stitch_view = &s->tc;
    return 0;
}

void ctl_stitcher_stop(struct ctl *c)
{
    struct ctl_stitcher *s = c->stitcher;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL); /* a stitch under way ends first, as on the loop before */
    c->stitch_view = NULL;
    c->stitcher = NULL;
    rq_free(&s->tc.q);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void ctl_stitcher_post(struct ctl *c, const char *id, int ahead)
{
    struct ctl_stitcher *s = c->stitcher;
    if (!s) { /* no thread (it could not start, or this is it): in place */
        if (ahead)
            ctl_stitch_progress(c, id);
        ctl_stitch_finish(c, id);
        return;
    }
    pthread_mutex_lock(&s->mu);
    int i = 0;
    while (i < s->n && strcmp(s->queue[i].id, id))
        i++;
    if (i < s->n) {
        s->queue[i].ahead |= ahead;
    } else if (s->n < CTL_STITCH_QUEUE_MAX) {
        snprintf(s->queue[s->n].id, sizeof s->queue[s->n].id, "%s", id);
        s->queue[s->n++].ahead = ahead;
    }
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void ctl_stitcher_sweep(struct ctl *c)
{
    struct ctl_stitcher *s = c->stitcher;
    if (!s) {
        ctl_stitch_sweep(c);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->sweep = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/*
 * ctl_chunk_gc.c - the chunk objects' sweeper (--storage URL, issue 46):
 * an ended job's chunk objects are deleted on a thread beside the loop.
 * The DELETEs used to run on the loop, and a slow or hung store (each
 * request may wait out its timeouts and retries) held every result,
 * claim and start behind them.
 *
 * The work list is Redis's cleanup set (vr:cleanup): a done job enters it
 * from the done script, a failed or cancelled one from the script that
 * ends it (RQ_CLEANUP_ENDED_DELAY_MS later), so a controller that dies
 * mid-sweep leaves the entry for the next. The loop (ctl_cleanup_due)
 * posts each due job here and pushes its entry CTL_CHUNK_GC_HOLD_MS on,
 * so that it is not posted again while the thread works on it; the
 * thread removes the entry once the job's collection is gone, or makes it
 * due again CTL_CHUNK_GC_RETRY_MS later, saying so in the log with the
 * collection and the store's answer. A job retried meanwhile (live again)
 * keeps its objects: its next end enters it again.
 *
 * The thread has its own connection (hiredis contexts are one per thread)
 * and its own libcurl handles (one a request, http_put.c).
 */
#include "ctl.h"

#include "job.h"
#include "log.h"
#include "rq_jobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CTL_CHUNK_GC_QUEUE_MAX 256     /* jobs waiting; more wait for the next audit */
#define CTL_CHUNK_GC_HOLD_MS 600000LL  /* an entry posted is not due again before this */
#define CTL_CHUNK_GC_RETRY_MS 60000LL  /* a sweep that failed is tried again after this */

struct ctl_chunk_gc {
    struct ctl tc;                /* the thread's controller: its connection */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char queue[CTL_CHUNK_GC_QUEUE_MAX][JOB_ID_MAX];
    int n;                        /* jobs waiting, oldest first */
    char busy[JOB_ID_MAX];        /* the job under way ("" none) */
    int quit;
};

/* Sweeps job id's objects if it has ended, and settles its cleanup entry. */
static void ctl_chunk_gc_job(struct ctl *c, const char *id)
{
    char state[32] = "", shown[URL_ROOT_MAX + 128] = "";
    vr_err e = { 0 };
    if (rq_job_state(c->q, id, state, sizeof state, &e) < 0) {
        log_warn("job %s: its chunk objects were not removed: Redis: %s; tried again in %lld s",
                 id, e.msg, CTL_CHUNK_GC_RETRY_MS / 1000);
        return; /* the entry is due again when its hold ends */
    }
    if (state[0] && !job_state_ended(state)) { /* retried: the objects are its new attempt's */
        rq_cleanup_forget(c->q, id, NULL);
        return;
    }
    if (ctl_chunk_url_sweep(c, id, shown, sizeof shown, &e) == 0) {
        log_info("job %s: its chunk objects removed (%s)", id, shown);
        rq_cleanup_forget(c->q, id, NULL);
        return;
    }
    log_warn("job %s: its chunk objects under %s were not removed: %s; tried again in %lld s",
             id, shown[0] ? shown : "the store", e.msg, CTL_CHUNK_GC_RETRY_MS / 1000);
    rq_cleanup_at(c->q, id, rq_now_ms() + CTL_CHUNK_GC_RETRY_MS, NULL);
}

/* The oldest job into id (1), or 0 on quit; waits. */
static int ctl_chunk_gc_next(struct ctl_chunk_gc *g, char *id)
{
    pthread_mutex_lock(&g->mu);
    g->busy[0] = '\0';
    while (!g->quit && !*g->tc.stop && g->n == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1; /* *stop is a signal's flag: looked at every second */
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    int got = !g->quit && !*g->tc.stop && g->n > 0;
    if (got) {
        memcpy(id, g->queue[0], JOB_ID_MAX);
        memmove(&g->queue[0], &g->queue[1], (size_t)(g->n - 1) * sizeof g->queue[0]);
        g->n--;
        memcpy(g->busy, id, JOB_ID_MAX);
    }
    pthread_mutex_unlock(&g->mu);
    return got;
}

static void *ctl_chunk_gc_main(void *arg)
{
    struct ctl_chunk_gc *g = arg;
    char id[JOB_ID_MAX];
    while (ctl_chunk_gc_next(g, id)) {
        log_ctx_thread(id, -1);
        ctl_chunk_gc_job(&g->tc, id);
        log_ctx_thread(NULL, -1);
        if (!rq_connected(g->tc.q))
            rq_backoff(g->tc.q);
    }
    return NULL;
}

int ctl_chunk_gc_start(struct ctl *c, vr_err *err)
{
    if (!c->storage_url[0])
        return 0; /* nothing of a store to sweep */
    struct ctl_chunk_gc *g = calloc(1, sizeof *g);
    if (!g)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = ctl_thread_view(&g->tc, c, err); /* read: the storage root, the URL, the stop flag */
    if (rc < 0) {
        free(g);
        return rc;
    }
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->th, NULL, ctl_chunk_gc_main, g) != 0) {
        rq_free(&g->tc.q);
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return vr_err_set(err, VR_ENOMEM, "cannot start the chunk objects' sweeper");
    }
    c->chunk_gc = g;
    return 0;
}

void ctl_chunk_gc_stop(struct ctl *c)
{
    struct ctl_chunk_gc *g = c->chunk_gc;
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->quit = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->th, NULL); /* a DELETE under way gives up on *stop (http_delete_tree) */
    c->chunk_gc = NULL;
    rq_free(&g->tc.q);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void ctl_chunk_gc_post(struct ctl *c, const char *id)
{
    struct ctl_chunk_gc *g = c->chunk_gc;
    if (!g) { /* no thread (it could not start): here */
        ctl_chunk_gc_job(c, id);
        return;
    }
    pthread_mutex_lock(&g->mu);
    int i = 0;
    while (i < g->n && strcmp(g->queue[i], id))
        i++;
    int take = i == g->n && g->n < CTL_CHUNK_GC_QUEUE_MAX && strcmp(g->busy, id);
    pthread_mutex_unlock(&g->mu);
    if (!take)
        return; /* waiting or under way already; or no room: the next audit posts it */
    /* held before it is queued: the thread's own verdict comes after */
    if (rq_cleanup_at(c->q, id, rq_now_ms() + CTL_CHUNK_GC_HOLD_MS, NULL) < 0)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->n < CTL_CHUNK_GC_QUEUE_MAX) {
        snprintf(g->queue[g->n++], JOB_ID_MAX, "%s", id);
        pthread_cond_signal(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

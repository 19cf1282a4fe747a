/*
 * serve_hb.c - the worker's heartbeat thread: vr:worker:<name> with a TTL
 * (GPU, state, current chunk, fps), the lease renewal of the chunk in hand
 * (a report: the controller renews it), and the stop signal for the
 * pipeline when the chunk record shows the chunk lost or the job ended.
 */
#include "serve.h"

#include "log.h"
#include "rq_fleet.h"
#include "rq_pause.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void serve_hb_once(struct serve *s, struct rq *q)
{
    pthread_mutex_lock(&s->mu);
    int busy = s->busy, lost = s->lost, warming = s->warming;
    struct rq_held h = s->held;
    const char *job = h.job;
    int idx = h.idx;
    long long cd = s->chunks_done, fd = s->frames_done;
    double fps = s->last_fps, gpu_util = s->last_gpu_util;
    long long gpu_mem = s->last_gpu_mem, started = s->started_ms;
    pthread_mutex_unlock(&s->mu);
    /* a chunk in hand: its frames so far and their rate, so progress moves
     * within a chunk and the worker line shows what it does now */
    long long live = busy ? __atomic_load_n(&s->chunk_frames, __ATOMIC_RELAXED) : 0;
    double secs = (rq_now_ms() - started) / 1000.0;
    if (live > 0 && secs > 0)
        fps = live / secs;

    if (busy && !lost) {
        vr_err e = { 0 };
        char why[128];
        rq_report_renew(q, &h, live, &e);
        int rc = rq_chunk_peek(q, &h, NULL, why, sizeof why, &e);
        pthread_mutex_lock(&s->mu);
        int in_hand = s->busy && !s->committing && !strcmp(s->held.id, h.id);
        pthread_mutex_unlock(&s->mu);
        if (rc == RQ_HELD_LOST && !in_hand) {
            /* the chunk is done because our report was committed a moment
             * ago, or the chunk is no longer in hand; logging a lost lease
             * here followed every few hundred good commits */
        } else if (rc == RQ_HELD_LOST) {
            log_warn("job %s chunk %d: lease lost (reclaimed by the controller); stopping it, "
                     "no result will be written", job, idx);
            pthread_mutex_lock(&s->mu);
            s->lost = 1;
            s->cancel = 1;
            pthread_mutex_unlock(&s->mu);
        } else if (rc == RQ_HELD_YES) {
            serve_cut_poll(s, q, &h); /* a cut comes with the renewal's answer */
        } else if (rc == RQ_HELD_JOB_ENDED) {
            /* cancelled or failed: the chunk's result is no longer wanted */
            pthread_mutex_lock(&s->mu);
            if (!s->job_ended)
                log_info("job %s no longer running: stopping chunk %d", job, idx);
            s->job_ended = 1;
            s->cancel = 1;
            pthread_mutex_unlock(&s->mu);
        }
    }
    struct rq_worker_info w = { .fps = fps, .chunks_done = cd, .frames_done = fd,
                                .chunk_frames = live,
                                .chunk_read = busy ? __atomic_load_n(&s->cut.read,
                                                                     __ATOMIC_RELAXED) : 0,
                                .hb_ms = s->hb_ms, .gpu_util = gpu_util,
                                .gpu_mem = gpu_mem };
    snprintf(w.name, sizeof w.name, "%s", s->name);
    if (s->backend == SEG_CUDA)
        snprintf(w.gpu, sizeof w.gpu, "%d", s->gpu);
    else
        snprintf(w.gpu, sizeof w.gpu, "cpu");
    if (busy)
        snprintf(w.chunk, sizeof w.chunk, "%.47s/%d", job, idx);
    else
        snprintf(w.chunk, sizeof w.chunk, "-");
    /* the fleet's pause (rq_pause.h): looked at here, once a beat, so the
     * pull loop's round trips stay as they were */
    char why[1100];
    int paused = rq_pause_get(q, why, sizeof why, NULL) == 1;
    pthread_mutex_lock(&s->mu);
    int quarantined = s->quarantined, aside = s->aside_until > 0;
    if (paused && !s->fleet_paused)
        log_warn("worker %s: the fleet is paused (storage errors on several workers): taking "
                 "no work until it ends", s->name);
    else if (!paused && s->fleet_paused)
        log_info("worker %s: the fleet's pause ended", s->name);
    s->fleet_paused = paused;
    pthread_mutex_unlock(&s->mu);
    snprintf(w.state, sizeof w.state, "%s", *s->drain ? "draining" : busy ? "busy"
             : quarantined ? "quarantined" : paused ? "paused" : warming ? "warming"
             : aside ? "aside" : "idle");
    rq_worker_heartbeat(q, &w, s->hb_ms * 5 / 1000 + 2, NULL);
}

void *serve_hb_main(void *arg)
{
    struct serve *s = arg;
    log_ctx_use(s->logctx); /* its worker's lines, one of several in a process */
    struct rq *q = NULL;
    rq_open(s->url, 5000, &q, NULL);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop_hb;
        pthread_mutex_unlock(&s->mu);
        if (stop || !q)
            break;
        serve_hb_once(s, q);
        for (int waited = 0; waited < s->hb_ms; waited += 50) {
            usleep(50000);
            pthread_mutex_lock(&s->mu);
            stop = s->stop_hb;
            pthread_mutex_unlock(&s->mu);
            if (stop)
                break;
        }
    }
    if (q)
        rq_worker_gone(q, s->name, NULL);
    pthread_mutex_lock(&s->mu);
    s->hb_trips = rq_round_trips(q);
    pthread_mutex_unlock(&s->mu);
    rq_free(&q);
    return NULL;
}

/*
 * serve_hb.c - the worker's heartbeat thread: vr:worker:<name> with a TTL
 * (GPU, state, current chunk, fps), lease renewal of the chunk in hand, and
 * the stop signal for the pipeline when the lease is lost or the job ended.
 */
#include "serve.h"

#include "log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void serve_hb_once(struct serve *s, struct rq *q)
{
    pthread_mutex_lock(&s->mu);
    int busy = s->busy, lost = s->lost;
    char id[RQ_ID_MAX], job[48], stream[64];
    snprintf(id, sizeof id, "%s", s->id);
    snprintf(stream, sizeof stream, "%s", s->stream);
    snprintf(job, sizeof job, "%s", s->job);
    int idx = s->idx;
    long long cd = s->chunks_done, fd = s->frames_done;
    double fps = s->last_fps;
    pthread_mutex_unlock(&s->mu);

    if (busy && !lost) {
        vr_err e = { 0 };
        int rc = rq_lease_renew(q, stream, s->name, id, &e);
        if (rc == 0) {
            log_warn("job %s chunk %d: lease lost (reclaimed by the controller); stopping it, "
                     "no result will be written", job, idx);
            pthread_mutex_lock(&s->mu);
            s->lost = 1;
            s->cancel = 1;
            pthread_mutex_unlock(&s->mu);
        }
        char jk[128], state[32] = "";
        rq_key_job(jk, sizeof jk, job);
        if (rq_hget(q, jk, "state", state, sizeof state, NULL) > 0 &&
            (!strcmp(state, "cancelled") || !strcmp(state, "failed"))) {
            pthread_mutex_lock(&s->mu);
            if (!s->job_ended)
                log_info("job %s %s: stopping chunk %d", job, state, idx);
            s->job_ended = 1;
            s->cancel = 1;
            pthread_mutex_unlock(&s->mu);
        }
    }
    char key[192], gpu[16], chunk[96];
    snprintf(key, sizeof key, "vr:worker:%s", s->name);
    if (s->backend == SEG_CUDA)
        snprintf(gpu, sizeof gpu, "%d", s->gpu);
    else
        snprintf(gpu, sizeof gpu, "cpu");
    snprintf(chunk, sizeof chunk, "%s/%d", busy ? job : "", busy ? idx : -1);
    const char *state = *s->drain ? "draining" : busy ? "busy" : "idle";
    int ttl = s->hb_ms * 5 / 1000 + 2;
    redisReply *r = rq_cmd(q, NULL, "HSET %s gpu %s state %s chunk %s fps %.2f chunks_done %lld "
                           "frames_done %lld seen_ms %lld", key, gpu, state, busy ? chunk : "-",
                           fps, cd, fd, rq_now_ms());
    if (r)
        freeReplyObject(r);
    r = rq_cmd(q, NULL, "EXPIRE %s %d", key, ttl);
    if (r)
        freeReplyObject(r);
    r = rq_cmd(q, NULL, "SADD %s %s", RQ_WORKERS, s->name);
    if (r)
        freeReplyObject(r);
}

void *serve_hb_main(void *arg)
{
    struct serve *s = arg;
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
    if (q) {
        redisReply *r = rq_cmd(q, NULL, "DEL vr:worker:%s", s->name);
        if (r)
            freeReplyObject(r);
        r = rq_cmd(q, NULL, "SREM %s %s", RQ_WORKERS, s->name);
        if (r)
            freeReplyObject(r);
    }
    pthread_mutex_lock(&s->mu);
    s->hb_trips = rq_round_trips(q);
    pthread_mutex_unlock(&s->mu);
    rq_free(&q);
    return NULL;
}

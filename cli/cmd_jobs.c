/*
 * cmd_jobs.c - `vrctl cancel` and `vrctl retry`: state changes a user asks
 * for. Cancel marks the job; workers holding its chunks stop at their next
 * heartbeat and queued chunks are skipped. Retry re-arms a failed job's
 * dead-lettered chunks (attempts restart at 0) and lets a controller carry
 * on from its manifest.
 */
#include "vrctl.h"

#include "cli.h"
#include "job.h"

#include <stdio.h>
#include <string.h>

int cmd_cancel(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int rc = vrctl_args(argc, argv, &redis, NULL, &id, 1);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    char jk[128], state[32] = "";
    vr_err e = { 0 };
    rq_key_job(jk, sizeof jk, id);
    rc = rq_hget(q, jk, "state", state, sizeof state, &e);
    if (rc <= 0) {
        fprintf(stderr, "vrctl cancel: %s\n", rc < 0 ? e.msg : "no such job");
        rq_free(&q);
        return 1;
    }
    if (job_state_ended(state)) {
        fprintf(stderr, "vrctl cancel: job %s already %s\n", id, state);
        rq_free(&q);
        return 1;
    }
    redisReply *r = rq_cmd(q, &e, "HSET %s state cancelled finished_ms %lld error %s", jk,
                           rq_now_ms(), "cancelled by the user");
    if (r)
        freeReplyObject(r);
    else
        fprintf(stderr, "vrctl cancel: %s\n", e.msg);
    rq_event(q, id, "cancelled");
    rq_free(&q);
    if (r)
        printf("%s cancelled\n", id);
    return r ? 0 : 1;
}

int cmd_retry(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int rc = vrctl_args(argc, argv, &redis, NULL, &id, 1);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    char jk[128], state[32] = "";
    long long total = 0;
    vr_err e = { 0 };
    rq_key_job(jk, sizeof jk, id);
    if (rq_hget(q, jk, "state", state, sizeof state, &e) <= 0 ||
        rq_hget_ll(q, jk, "chunks_total", &total, &e) < 0) {
        fprintf(stderr, "vrctl retry: %s\n", e.msg[0] ? e.msg : "no such job");
        rq_free(&q);
        return 1;
    }
    if (strcmp(state, "failed") && strcmp(state, "cancelled")) {
        fprintf(stderr, "vrctl retry: job %s is %s; only failed or cancelled jobs are retried\n",
                id, state);
        rq_free(&q);
        return 1;
    }
    /* The job must be live before its chunks are, or workers skip them. */
    redisReply *r = rq_cmd(q, &e, "HSET %s state %s error %s finished_ms 0", jk,
                           total > 0 ? "running" : "queued", "");
    if (!r)
        goto fail;
    freeReplyObject(r);
    int again = 0;
    for (long long i = 0; i < total; i++) {
        /* A dead chunk is re-armed (attempts from 0); any other unfinished
         * one gets a fresh entry, its old one having been skipped. Never
         * both: a re-armed chunk is queued, and a second entry would run it
         * twice at once. */
        rc = rq_chunk_requeue_lost(q, id, (int)i, 2, &e);
        if (rc == 0)
            rc = rq_chunk_requeue_lost(q, id, (int)i, 3, &e);
        if (rc < 0 && rc != VR_ENOENT)
            goto fail;
        again += rc == 1;
    }
    if (!(r = rq_cmd(q, &e, "SADD vr:active %s", id)))
        goto fail;
    freeReplyObject(r);
    rq_event(q, id, "retry: %d chunks enqueued again", again);
    printf("%s: retrying (%d chunks enqueued again)\n", id, again);
    rq_free(&q);
    return 0;
fail:
    fprintf(stderr, "vrctl retry: %s\n", e.msg);
    rq_free(&q);
    return 1;
}

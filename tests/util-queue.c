/*
 * util-queue.c - see util-queue.h.
 */
#include "util-queue.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

void tqueue_start(struct tredis *t, int aof, struct rq **q, int chunks_total)
{
    cr_assert_eq(tredis_start(t, aof), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(t->url, 2000, q, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(*q, RQ_CHUNKS, RQ_G_WORKERS, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(*q, RQ_CHUNKS_HI, RQ_G_WORKERS, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(*q, RQ_RESULTS, RQ_G_CONTROLLERS, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmd(*q, &e, "HSET vr:job:j1 state running chunks_total %d", chunks_total);
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
    r = rq_cmd(*q, &e, "SET vr:jstate:j1 running"); /* what a worker reads (rq_jstate.h) */
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
}

int tqueue_take(struct rq *q, const char *consumer, struct rq_msg *m, struct rq_start *st)
{
    const char *hi[] = { RQ_CHUNKS_HI }, *normal[] = { RQ_CHUNKS };
    vr_err e = { 0 };
    int rc = rq_read(q, RQ_G_WORKERS, consumer, hi, 1, 0, m, &e);
    if (rc == 0)
        rc = rq_read(q, RQ_G_WORKERS, consumer, normal, 1, 0, m, &e);
    cr_assert_geq(rc, 0, "%s", e.msg);
    if (rc == 0)
        return 0;
    char why[64] = "";
    rc = rq_chunk_start(q, m->stream, consumer, m->id, rq_msg_get(m, "job"),
                        atoi(rq_msg_get(m, "idx")), st, why, sizeof why, &e);
    cr_assert_geq(rc, 0, "%s", e.msg);
    return rc;
}

long long tqueue_job_ll(struct rq *q, const char *id, const char *f)
{
    char jk[128];
    long long v = 0;
    rq_key_job(jk, sizeof jk, id);
    rq_hget_ll(q, jk, f, &v, NULL);
    return v;
}

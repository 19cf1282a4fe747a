/*
 * t-queue-retry.c - a chunk's failures and its workers' deaths, against a
 * real redis-server (issue 26, finding 6): a worker's own failure waits
 * out a backoff in the retry set (on Redis's clock) before its entry
 * comes back, and counts as a failure; a reclaim (the worker died) comes
 * back at once and counts as a death, with its own limit; `vrctl retry`
 * takes a waiting chunk out of the retry set.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct tredis T;
static struct rq *Q;

static void setup(void)
{
    unsetenv("VR_TEST_RETRY_BASE_MS"); /* the real backoff */
    cr_assert_eq(tredis_start(&T, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(T.url, 2000, &Q, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(Q, RQ_CHUNKS, RQ_G_WORKERS, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(Q, RQ_CHUNKS_HI, RQ_G_WORKERS, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_group_ensure(Q, RQ_RESULTS, RQ_G_CONTROLLERS, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmd(Q, &e, "HSET vr:job:j1 state running chunks_total 1");
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&T);
}

TestSuite(queue_retry, .init = setup, .fini = teardown, .timeout = 60);

/* Delivers the next entry to `consumer` and starts it: 1, or 0 none. */
static int take(const char *consumer, struct rq_msg *m)
{
    const char *hi[] = { RQ_CHUNKS_HI }, *normal[] = { RQ_CHUNKS };
    vr_err e = { 0 };
    int rc = rq_read(Q, RQ_G_WORKERS, consumer, hi, 1, 0, m, &e);
    if (rc == 0)
        rc = rq_read(Q, RQ_G_WORKERS, consumer, normal, 1, 0, m, &e);
    cr_assert_geq(rc, 0, "%s", e.msg);
    if (rc == 0)
        return 0;
    struct rq_start st;
    char why[64] = "";
    rc = rq_chunk_start(Q, m->stream, consumer, m->id, "j1", 0, &st, why, sizeof why, &e);
    cr_assert_eq(rc, 1, "%s %s", why, e.msg);
    return 1;
}

static long long field(const char *f)
{
    long long v = -1;
    cr_assert_geq(rq_hget_ll(Q, "vr:chunk:j1:0", f, &v, NULL), 0);
    return v;
}

Test(queue_retry, a_failure_waits_its_backoff_a_death_does_not)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    cr_assert_eq(take("A:cpu:1", &m), 1);
    long long wait = -1;
    cr_assert_eq(rq_chunk_fail_ex(Q, m.stream, "A:cpu:1", m.id, "j1", 0,
                                  "cannot write: Read-only file system", 0, 0, &wait, &e), 1,
                 "%s", e.msg);
    rq_msg_release(&m);
    /* the first backoff: the base, plus up to half of it */
    cr_assert(wait >= RQ_RETRY_BASE_MS && wait < RQ_RETRY_BASE_MS * 3 / 2, "%lld ms", wait);
    cr_assert_eq(field("failures"), 1);
    /* not due yet: no entry, and the audit's lost-entry repair leaves it */
    cr_assert_eq(rq_retry_due(Q, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 0, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(take("B:cpu:2", &m), 0, "a failed chunk came back before its backoff");
    tmsleep(wait + 200);
    cr_assert_eq(rq_retry_due(Q, &e), 1, "%s", e.msg);
    cr_assert_eq(take("B:cpu:2", &m), 1);
    cr_assert_str_eq(m.stream, RQ_CHUNKS_HI);
    cr_assert_eq(field("attempts"), 2);

    /* B dies: its lease lapses. The reclaim is a death, not a failure, and
     * the chunk comes back at once. */
    tmsleep(120);
    cr_assert_eq(rq_chunk_fail(Q, m.stream, NULL, m.id, "j1", 0, "worker B stopped renewing", 100,
                               &e), 1, "%s", e.msg);
    rq_msg_release(&m);
    cr_assert_eq(field("deaths"), 1);
    cr_assert_eq(field("failures"), 1);
    cr_assert_eq(take("C:cpu:3", &m), 1, "a death waited a backoff");
    rq_msg_release(&m);
}

Test(queue_retry, deaths_have_their_own_limit)
{
    vr_err e = { 0 };
    /* one attempt allowed: a single failure would dead-letter it */
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 1, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    for (int i = 1; i <= RQ_MAX_DEATHS; i++) {
        cr_assert_eq(take("A:cpu:1", &m), 1, "death %d: no entry", i);
        tmsleep(60);
        int rc = rq_chunk_fail(Q, m.stream, NULL, m.id, "j1", 0, "killed", 50, &e);
        rq_msg_release(&m);
        cr_assert_eq(rc, i < RQ_MAX_DEATHS ? 1 : 2, "death %d: %d %s", i, rc, e.msg);
    }
    char by[16] = "", state[16] = "";
    rq_hget(Q, "vr:chunk:j1:0", "dead_by", by, sizeof by, NULL);
    rq_hget(Q, "vr:chunk:j1:0", "state", state, sizeof state, NULL);
    cr_assert_str_eq(state, "dead");
    cr_assert_str_eq(by, "deaths");
    cr_assert_eq(field("failures"), 0);
}

Test(queue_retry, retry_takes_a_waiting_chunk_out_of_the_retry_set)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    cr_assert_eq(take("A:cpu:1", &m), 1);
    cr_assert_eq(rq_chunk_fail(Q, m.stream, "A:cpu:1", m.id, "j1", 0, "EIO", 0, &e), 1);
    rq_msg_release(&m);
    /* `vrctl retry` of the (failed, say) job re-arms it at once */
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 0, 3, &e), 1, "%s", e.msg);
    cr_assert_eq(field("failures"), 0);
    cr_assert_eq(take("B:cpu:2", &m), 1);
    /* its old place in the retry set, once due, adds no second entry */
    tmsleep(RQ_RETRY_BASE_MS * 3 / 2 + 200);
    cr_assert_eq(rq_retry_due(Q, &e), 0, "%s", e.msg);
    struct rq_msg m2 = { 0 };
    cr_assert_eq(take("C:cpu:3", &m2), 0, "a retried chunk was queued twice");
    rq_msg_release(&m);
}

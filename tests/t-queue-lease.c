/*
 * t-queue-lease.c - the Redis queue pitfalls from design.md, each against a
 * real redis-server: renewal after a reclaim must not steal the chunk back;
 * a late worker's commit neither records nor acks; trimming keeps pending
 * and undelivered entries; the attempt count lives in the chunk record and
 * survives an AOF reload; dead-lettering after N attempts; a lost XADD is
 * found and re-added; a duplicate commit counts once; a cancel mid-chunk is
 * told by the renewal and a racing commit counts nothing; retry restarts
 * the attempts of every unfinished chunk; a worker's own failure waits a
 * backoff in the retry set (Redis's clock) and counts as a failure, a
 * reclaim (its worker died) comes back at once and counts as a death,
 * with its own limit; retry takes a waiting chunk out of the retry set;
 * the audit counts only a result that some controller was delivered.
 */
#include "rq.h"
#include "util-queue.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct tredis T;
static struct rq *Q;

static void setup(void)
{
    tqueue_start(&T, 1, &Q, 3);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&T);
}

static long long hll(const char *key, const char *field)
{
    long long v = -1;
    cr_assert_geq(rq_hget_ll(Q, key, field, &v, NULL), 0);
    return v;
}

/* Entries delivered and not acked, in both chunk streams. */
static long long pending(void)
{
    long long n = 0;
    const char *streams[] = { RQ_CHUNKS, RQ_CHUNKS_HI };
    for (int i = 0; i < 2; i++) {
        redisReply *r = rq_cmd(Q, NULL, "XPENDING %s %s", streams[i], RQ_G_WORKERS);
        cr_assert_not_null(r);
        n += r->element[0]->integer;
        freeReplyObject(r);
    }
    return n;
}

TestSuite(queue_lease, .init = setup, .fini = teardown, .timeout = 30);

Test(queue_lease, renewal_after_reclaim_does_not_steal_back)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{\"t\":0}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg a = { 0 }, b = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "hostA:0:aaaa", &a, &st), 1);
    cr_assert_eq(st.attempt, 1);
    cr_assert_str_eq(st.task, "{\"t\":0}");

    /* While alive, renewal keeps the entry even past the lease. */
    tmsleep(120);
    cr_assert_eq(rq_lease_renew(Q, RQ_CHUNKS, "hostA:0:aaaa", a.id, "j1", &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_fail(Q, RQ_CHUNKS, NULL, a.id, "j1", 0, "lease expired", 100, &e), 0,
                 "renewed entry was reclaimed");

    /* Worker A stalls: the controller reclaims, worker B takes the new entry. */
    tmsleep(150);
    cr_assert_eq(rq_chunk_fail(Q, RQ_CHUNKS, NULL, a.id, "j1", 0, "lease expired", 100, &e), 1, "%s", e.msg);
    cr_assert_eq(tqueue_take(Q, "hostB:0:bbbb", &b, &st), 1);
    cr_assert_eq(st.attempt, 2);

    /* A wakes up and renews: it must learn it lost the chunk. */
    cr_assert_eq(rq_lease_renew(Q, RQ_CHUNKS, "hostA:0:aaaa", a.id, "j1", &e), 0);
    cr_assert_str_eq(b.stream, RQ_CHUNKS_HI, "a chunk tried again goes ahead of the queue");
    cr_assert_eq(rq_lease_renew(Q, b.stream, "hostB:0:bbbb", b.id, "j1", &e), 1);
    redisReply *r = rq_cmd(Q, &e, "XPENDING %s %s - + 10", b.stream, RQ_G_WORKERS);
    cr_assert_eq(r->elements, 1);
    cr_assert_str_eq(r->element[0]->element[1]->str, "hostB:0:bbbb");
    freeReplyObject(r);
    rq_msg_release(&a);
    rq_msg_release(&b);
}

/* The audit counts a done chunk whose result a controller was delivered
 * and never handled (it died); one still waiting in vr:results is the
 * loop's to count, in the results' order. It was counted by whichever came
 * first: an audit while the loop stitched ahead ended a normal job before
 * the priority job whose results were queued ahead of it. */
Test(queue_lease, audit_counts_only_a_result_some_controller_was_delivered)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg a = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", &a, &st), 1);
    cr_assert_eq(rq_chunk_commit(Q, a.stream, "A:cpu:1", a.id, "j1", 0, 10, 5.0, "{}", NULL, &e),
                 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_count_done(Q, "j1", 0, &e), 4, "%s", e.msg);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 0);

    /* a controller reads the result and dies before handling it */
    redisReply *r = rq_cmd(Q, &e, "XREADGROUP GROUP %s dead:ctl:1 COUNT 1 STREAMS %s >",
                           RQ_G_CONTROLLERS, RQ_RESULTS);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "%s", e.msg);
    freeReplyObject(r);
    cr_assert_eq(rq_chunk_count_done(Q, "j1", 0, &e), 1, "%s", e.msg);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 1);
    cr_assert_eq(hll("vr:job:j1", "frames_done"), 10);
    cr_assert_eq(rq_chunk_count_done(Q, "j1", 0, &e), 2);
    rq_msg_release(&a);
}

Test(queue_lease, late_worker_neither_commits_nor_acks)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 1, "{}", 3, 0, &e), 1);
    struct rq_msg a = { 0 }, b = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", &a, &st), 1);
    tmsleep(80);
    cr_assert_eq(rq_chunk_fail(Q, RQ_CHUNKS, NULL, a.id, "j1", 1, "lease expired", 50, &e), 1);
    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &b, &st), 1);

    /* A finishes late: nothing recorded, B's delivery still pending. */
    cr_assert_eq(rq_chunk_commit(Q, RQ_CHUNKS, "A:cpu:1", a.id, "j1", 1, 10, 5.0, "{}", NULL, &e), 0);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 0);
    cr_assert_eq(pending(), 1);
    /* Its failure report is refused too (B owns the chunk). */
    cr_assert_eq(rq_chunk_fail(Q, RQ_CHUNKS, "A:cpu:1", a.id, "j1", 1, "boom", 0, &e), 0);

    cr_assert_eq(rq_chunk_commit(Q, b.stream, "B:cpu:2", b.id, "j1", 1, 10, 5.0, "{}", NULL, &e), 1, "%s", e.msg);
    cr_assert_eq(pending(), 0);
    /* The worker's commit writes no job record; the controller counts the
     * chunk when its result, naming B's entry, is checked, and once only.
     * A result naming A's old entry, or the wrong end, changes nothing. */
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 0);
    cr_assert_eq(rq_chunk_result(Q, "j1", 1, "done", a.id, &e), 0);
    cr_assert_eq(rq_chunk_result(Q, "j1", 1, "dead", b.id, &e), 0);
    cr_assert_eq(rq_chunk_result(Q, "j1", 1, "done", "", &e), 0);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 0);
    cr_assert_eq(rq_chunk_result(Q, "j1", 1, "done", b.id, &e), 1, "%s", e.msg);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 1);
    cr_assert_eq(hll("vr:job:j1", "frames_done"), 10);
    cr_assert_eq(rq_chunk_result(Q, "j1", 1, "done", b.id, &e), 2);
    cr_assert_eq(rq_chunk_count_done(Q, "j1", 1, &e), 2);
    /* A duplicate commit (same owner, already acked) changes nothing. */
    cr_assert_eq(rq_chunk_commit(Q, b.stream, "B:cpu:2", b.id, "j1", 1, 10, 5.0, "{}", NULL, &e), 0);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 1);
    rq_msg_release(&a);
    rq_msg_release(&b);
}

Test(queue_lease, trim_keeps_pending_and_undelivered)
{
    vr_err e = { 0 };
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rq_chunk_create(Q, "j1", i, "{}", 3, 0, &e), 1);
    struct rq_msg m0 = { 0 }, m1 = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:0:x", &m0, &st), 1);  /* idx 0: pending */
    cr_assert_eq(tqueue_take(Q, "A:0:x", &m1, &st), 1);  /* idx 1: committed */
    cr_assert_eq(rq_chunk_commit(Q, RQ_CHUNKS, "A:0:x", m1.id, "j1", 1, 5, 1, "{}", NULL, &e), 1);
    /* idx 2: never delivered */
    cr_assert_eq(rq_trim_safe(Q, RQ_CHUNKS, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmd(Q, &e, "XLEN %s", RQ_CHUNKS);
    cr_assert_eq(r->integer, 3);
    freeReplyObject(r);

    /* Once 0 is done, 0 and 1 can go; 2 (undelivered) must stay. */
    cr_assert_eq(rq_chunk_commit(Q, RQ_CHUNKS, "A:0:x", m0.id, "j1", 0, 5, 1, "{}", NULL, &e), 1);
    cr_assert_geq(rq_trim_safe(Q, RQ_CHUNKS, &e), 1);
    struct rq_msg m2 = { 0 };
    cr_assert_eq(tqueue_take(Q, "A:0:x", &m2, &st), 1);
    cr_assert_str_eq(rq_msg_get(&m2, "idx"), "2");
    rq_msg_release(&m0);
    rq_msg_release(&m1);
    rq_msg_release(&m2);
}

Test(queue_lease, attempts_survive_aof_reload_and_dead_letter)
{
    /* no backoff here: the failure's entry comes at once (t-queue-retry.c
     * has the backoff) */
    setenv("VR_TEST_RETRY_BASE_MS", "0", 1);
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 2, "{}", 2, 0, &e), 1);
    struct rq_msg m = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:0:1", &m, &st), 1);
    cr_assert_eq(rq_chunk_fail(Q, RQ_CHUNKS, "A:0:1", m.id, "j1", 2, "cannot decode", 0, &e), 1, "%s", e.msg);
    rq_msg_release(&m);

    /* Redis restarts from its AOF: the attempt count is still there. */
    cr_assert_eq(tredis_restart(&T), 0);
    /* The old connection is dead: the first command reports it, the next
     * one reconnects (what the daemons' retry loops rely on). */
    redisReply *p = rq_cmd(Q, NULL, "PING");
    if (!p)
        p = rq_cmd(Q, &e, "PING");
    cr_assert_not_null(p, "%s", e.msg);
    freeReplyObject(p);
    cr_assert_eq(hll("vr:chunk:j1:2", "attempts"), 1);
    cr_assert_eq(tqueue_take(Q, "B:0:2", &m, &st), 1);
    cr_assert_eq(st.attempt, 2);
    cr_assert_eq(rq_chunk_fail(Q, m.stream, "B:0:2", m.id, "j1", 2, "cannot decode: bad NAL", 0, &e), 2);
    rq_msg_release(&m);

    char state[32], err[256];
    cr_assert_eq(rq_hget(Q, "vr:chunk:j1:2", "state", state, sizeof state, &e), 1);
    cr_assert_str_eq(state, "dead");
    cr_assert_eq(rq_hget(Q, "vr:chunk:j1:2", "error", err, sizeof err, &e), 1);
    cr_assert_str_eq(err, "cannot decode: bad NAL");
    redisReply *r = rq_cmd(Q, &e, "XLEN %s", RQ_DEAD);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(pending(), 0);
    /* Nothing left to deliver. */
    cr_assert_eq(tqueue_take(Q, "C:0:3", &m, &st), 0);
    /* The controller hears about it on the results stream. */
    const char *rs[] = { RQ_RESULTS };
    cr_assert_eq(rq_read(Q, RQ_G_CONTROLLERS, "ctl:1", rs, 1, 0, &m, &e), 1);
    cr_assert_str_eq(rq_msg_get(&m, "kind"), "dead");
    rq_msg_release(&m);
}

Test(queue_lease, lost_xadd_is_requeued_and_create_is_idempotent)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1);
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 0);
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 0, 0, &e), 0); /* entry present */
    char id[RQ_ID_MAX];
    cr_assert_eq(rq_hget(Q, "vr:chunk:j1:0", "entry", id, sizeof id, &e), 1);
    redisReply *r = rq_cmd(Q, &e, "XDEL %s %s", RQ_CHUNKS, id); /* the lost XADD */
    freeReplyObject(r);
    struct rq_msg m = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:0:1", &m, &st), 0);
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 0, 0, &e), 1, "%s", e.msg);
    cr_assert_eq(tqueue_take(Q, "A:0:1", &m, &st), 1);
    cr_assert_eq(st.attempt, 1);
    rq_msg_release(&m);
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 9, 0, &e), VR_ENOENT);
}

Test(queue_lease, cancelled_job_chunks_are_skipped)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1);
    redisReply *r = rq_cmd(Q, &e, "HSET vr:job:j1 state cancelled");
    freeReplyObject(r);
    const char *streams[] = { RQ_CHUNKS };
    struct rq_msg m = { 0 };
    cr_assert_eq(rq_read(Q, RQ_G_WORKERS, "A:0:1", streams, 1, 0, &m, &e), 1);
    struct rq_start st;
    char why[64];
    cr_assert_eq(rq_chunk_start(Q, RQ_CHUNKS, "A:0:1", m.id, "j1", 0, &st, why, sizeof why, &e), 0);
    cr_assert(strstr(why, "cancelled"), "%s", why);
    cr_assert_eq(pending(), 0);
    rq_msg_release(&m);
}

/* Cancel lands while a worker holds a chunk: its next renewal says the job
 * ended (not "lost"), and a commit that races the cancel is acked without
 * counting, so a cancelled job never shows chunks done after the cancel. */
Test(queue_lease, cancel_mid_chunk_renew_says_so_and_commit_counts_nothing)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1);
    redisReply *r = rq_cmd(Q, &e, "HSET vr:job:j1 chunks_done 0");
    freeReplyObject(r);
    struct rq_msg a = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", &a, &st), 1);
    cr_assert_eq(rq_lease_renew(Q, RQ_CHUNKS, "A:cpu:1", a.id, "j1", &e), 1, "%s", e.msg);
    r = rq_cmd(Q, &e, "HSET vr:job:j1 state cancelled");
    freeReplyObject(r);
    cr_assert_eq(rq_lease_renew(Q, RQ_CHUNKS, "A:cpu:1", a.id, "j1", &e), RQ_RENEW_JOB_ENDED);
    cr_assert_eq(rq_chunk_commit(Q, RQ_CHUNKS, "A:cpu:1", a.id, "j1", 0, 10, 5.0, "{}", NULL, &e),
                 RQ_COMMIT_JOB_ENDED, "%s", e.msg);
    cr_assert_eq(hll("vr:job:j1", "chunks_done"), 0, "a cancelled job's chunk was counted");
    cr_assert_eq(pending(), 0, "the entry of the ended job stays pending");
    char v[32] = "";
    rq_hget(Q, "vr:chunk:j1:0", "state", v, sizeof v, NULL);
    cr_assert_str_eq(v, "queued", "retry must find the chunk unfinished");
    rq_msg_release(&a);
}

/* vrctl retry re-arms every unfinished chunk with its attempts from 0 (a job
 * that failed for a full disk must not find its other chunks one attempt
 * from the dead letter), and leaves done chunks alone. */
Test(queue_lease, retry_restarts_attempts_of_every_unfinished_chunk)
{
    vr_err e = { 0 };
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rq_chunk_create(Q, "j1", i, "{}", 3, 0, &e), 1);
    redisReply *r = rq_cmd(Q, &e, "HSET vr:chunk:j1:0 state running attempts 2 error full");
    freeReplyObject(r);
    r = rq_cmd(Q, &e, "HSET vr:chunk:j1:1 state dead attempts 3 error full");
    freeReplyObject(r);
    r = rq_cmd(Q, &e, "HSET vr:chunk:j1:2 state done attempts 2");
    freeReplyObject(r);
    /* cli/cmd_jobs.c's loop: a dead chunk is re-armed, else any unfinished one */
    for (int i = 0; i < 3; i++) {
        int rc = rq_chunk_requeue_lost(Q, "j1", i, 2, &e);
        if (rc == 0)
            rc = rq_chunk_requeue_lost(Q, "j1", i, 3, &e);
        cr_assert_eq(rc, i < 2, "chunk %d: %d %s", i, rc, e.msg);
    }
    cr_assert_eq(hll("vr:chunk:j1:0", "attempts"), 0);
    cr_assert_eq(hll("vr:chunk:j1:1", "attempts"), 0);
    cr_assert_eq(hll("vr:chunk:j1:2", "attempts"), 2, "a done chunk was touched");
    char v[32] = "";
    rq_hget(Q, "vr:chunk:j1:0", "error", v, sizeof v, NULL);
    cr_assert_str_eq(v, "");
}

Test(queue_lease, malformed_entry_is_skipped_not_wedged)
{
    vr_err e = { 0 };
    char big[RQ_MAX_FIELD + 16];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *argv[] = { "XADD", RQ_CHUNKS, "*", "job", big };
    redisReply *r = rq_cmdargv(Q, &e, 5, argv, NULL);
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1);
    struct rq_msg m = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:0:1", &m, &st), 0);  /* oversized: acked and skipped */
    cr_assert_eq(pending(), 0);
    cr_assert_eq(tqueue_take(Q, "A:0:1", &m, &st), 1);  /* the next one flows */
    rq_msg_release(&m);
}

/* ---- failures and deaths (issue 26, finding 6) ---- */

static long long field(const char *f)
{
    return hll("vr:chunk:j1:0", f);
}

Test(queue_lease, a_failure_waits_its_backoff_a_death_does_not)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", &m, &st), 1);
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
    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &m, &st), 0, "a failed chunk came back before its backoff");
    tmsleep(wait + 200);
    cr_assert_eq(rq_retry_due(Q, &e), 1, "%s", e.msg);
    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &m, &st), 1);
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
    cr_assert_eq(tqueue_take(Q, "C:cpu:3", &m, &st), 1, "a death waited a backoff");
    rq_msg_release(&m);
}

Test(queue_lease, deaths_have_their_own_limit)
{
    vr_err e = { 0 };
    /* one attempt allowed: a single failure would dead-letter it */
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 1, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    struct rq_start st;
    for (int i = 1; i <= RQ_MAX_DEATHS; i++) {
        cr_assert_eq(tqueue_take(Q, "A:cpu:1", &m, &st), 1, "death %d: no entry", i);
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

Test(queue_lease, retry_takes_a_waiting_chunk_out_of_the_retry_set)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{}", 3, 0, &e), 1, "%s", e.msg);
    struct rq_msg m = { 0 };
    struct rq_start st;
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", &m, &st), 1);
    cr_assert_eq(rq_chunk_fail(Q, m.stream, "A:cpu:1", m.id, "j1", 0, "EIO", 0, &e), 1);
    rq_msg_release(&m);
    /* `vrctl retry` of the (failed, say) job re-arms it at once */
    cr_assert_eq(rq_chunk_requeue_lost(Q, "j1", 0, 3, &e), 1, "%s", e.msg);
    cr_assert_eq(field("failures"), 0);
    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &m, &st), 1);
    /* its old place in the retry set, once due, adds no second entry */
    tmsleep(RQ_RETRY_BASE_MS * 3 / 2 + 200);
    cr_assert_eq(rq_retry_due(Q, &e), 0, "%s", e.msg);
    struct rq_msg m2 = { 0 };
    cr_assert_eq(tqueue_take(Q, "C:cpu:3", &m2, &st), 0, "a retried chunk was queued twice");
    rq_msg_release(&m);
}

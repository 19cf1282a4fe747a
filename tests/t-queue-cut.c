/*
 * t-queue-cut.c - work stealing's queue half (rq_cut.h) against a real
 * redis-server: a cut gives the running chunk its shorter task and queues
 * the tail in the priority stream, once (two cutters racing, a chunk cut
 * meanwhile, requeued or done are refused); the worker that stopped at the
 * cut commits, one that never heard of it cannot commit past it (its chunk
 * runs again, shorter); a worker dying after the cut leaves the shorter
 * task to the next; work waiting in the streams is seen, delivered work not;
 * a straggler's tail parted in three is queued whole or not at all.
 */
#include "rq.h"
#include "rq_cut.h"
#include "util-queue.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct tredis T;
static struct rq *Q;

static void setup(void)
{
    tqueue_start(&T, 0, &Q, 1);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&T);
}

TestSuite(queue_cut, .init = setup, .fini = teardown, .timeout = 30);

static void hstr(const char *key, const char *field, char *buf, size_t n)
{
    buf[0] = '\0';
    cr_assert_geq(rq_hget(Q, key, field, buf, n, NULL), 0);
}

static long long hll(const char *key, const char *field)
{
    long long v = -1;
    cr_assert_geq(rq_hget_ll(Q, key, field, &v, NULL), 0);
    return v;
}

/* Chunk 0 of j1 running under worker A: its entry in *a. */
static void running_chunk(struct rq_msg *a)
{
    vr_err e = { 0 };
    struct rq_start st;
    cr_assert_eq(rq_chunk_create(Q, "j1", 0, "{\"whole\":1}", 3, 0, &e), 1, "%s", e.msg);
    cr_assert_eq(tqueue_take(Q, "A:cpu:1", a, &st), 1);
    cr_assert_eq(rq_chunks_waiting(Q, &e), 0, "%s", e.msg);
}

Test(queue_cut, cut_queues_the_tail_and_the_worker_commits_the_head)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 }, b = { 0 };
    struct rq_start st;
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"head\":1}", "100:90", 5, "{\"tail\":1}",
                              3, "B:cpu:2", 0, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunks_waiting(Q, &e), 1, "the tail waits for a worker");
    char end[RQ_CUT_END_MAX], task[256];
    cr_assert_eq(rq_cut_peek(Q, "j1", 0, end, sizeof end, task, sizeof task, &e), 1);
    cr_assert_str_eq(end, "100:90");
    cr_assert_str_eq(task, "{\"head\":1}");
    cr_assert_eq(hll("vr:job:j1", "chunks_total"), 2);
    cr_assert_eq(hll("vr:job:j1", "cuts"), 1);

    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &b, &st), 1);
    cr_assert_str_eq(rq_msg_get(&b, "idx"), "5");
    cr_assert_str_eq(st.task, "{\"tail\":1}");
    cr_assert_eq(rq_chunks_waiting(Q, &e), 0);
    cr_assert_eq(rq_chunk_commit_end(Q, a.stream, "A:cpu:1", a.id, "j1", 0, 10, 5.0, "{}", NULL,
                                     "100:90", &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_commit_end(Q, b.stream, "B:cpu:2", b.id, "j1", 5, 7, 5.0, "{}", NULL,
                                     "open", &e), 1, "%s", e.msg);
    cr_assert_eq(hll("vr:chunk:j1:0", "commits"), 1);
    cr_assert_eq(hll("vr:chunk:j1:5", "commits"), 1);
    rq_msg_release(&a);
    rq_msg_release(&b);
}

Test(queue_cut, a_worker_that_never_heard_of_the_cut_cannot_commit_past_it)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 }, c = { 0 };
    struct rq_start st;
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"head\":1}", "100:90", 5, "{\"tail\":1}",
                              3, "B:cpu:2", 0, &e), 1, "%s", e.msg);
    /* A read to the chunk's planned end, the tail's frames included */
    cr_assert_eq(rq_chunk_commit_end(Q, a.stream, "A:cpu:1", a.id, "j1", 0, 20, 5.0, "{}", NULL,
                                     "open", &e), RQ_COMMIT_CUT_MISSED, "%s", e.msg);
    cr_assert_eq(rq_chunk_commit(Q, a.stream, "A:cpu:1", a.id, "j1", 0, 20, 5.0, "{}", NULL, &e),
                 0, "its entry is acked: nothing more from it");
    char state[32];
    hstr("vr:chunk:j1:0", "state", state, sizeof state);
    cr_assert_str_eq(state, "queued", "the head runs again");
    cr_assert_eq(hll("vr:chunk:j1:0", "commits"), 0);
    cr_assert_eq(hll("vr:stats", "chunks"), 0, "nothing counted");
    /* the next worker gets the shorter task (the tail first: priority order) */
    int got_head = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tqueue_take(Q, "C:cpu:3", &c, &st), 1);
        if (!strcmp(rq_msg_get(&c, "idx"), "0")) {
            got_head = 1;
            cr_assert_str_eq(st.task, "{\"head\":1}");
            cr_assert_eq(rq_chunk_commit_end(Q, c.stream, "C:cpu:3", c.id, "j1", 0, 10, 5.0,
                                             "{}", NULL, "100:90", &e), 1, "%s", e.msg);
        }
        rq_msg_release(&c);
    }
    cr_assert(got_head);
    cr_assert_eq(hll("vr:chunk:j1:0", "commits"), 1);
    rq_msg_release(&a);
}

Test(queue_cut, two_cutters_racing_cut_once)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 };
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"h\":1}", "100:90", 5, "{\"t\":5}", 3,
                              "B:cpu:2", 0, &e), 1, "%s", e.msg);
    /* the second saw the chunk uncut: refused, whatever tail it chose */
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"h\":2}", "50:40", 3, "{\"t\":3}", 3,
                              "C:cpu:3", 0, &e), 0);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"h\":2}", "100:90", 5, "{\"t\":5}", 3,
                              "C:cpu:3", 0, &e), 0);
    /* one who saw the cut may cut the head again, at another tail */
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "100:90", "{\"h\":3}", "50:40", 3, "{\"t\":3}",
                              3, "C:cpu:3", 0, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "50:40", "{\"h\":4}", "30:20", 5, "{\"t\":5}",
                              3, "D:cpu:4", 0, &e), 0, "a tail that exists is not made twice");
    cr_assert_eq(hll("vr:job:j1", "chunks_total"), 3);
    cr_assert_eq(hll("vr:job:j1", "cuts"), 2);
    redisReply *r = rq_cmd(Q, &e, "XLEN %s", RQ_CHUNKS_HI);
    cr_assert_eq(r->integer, 2, "two tails queued, no more");
    freeReplyObject(r);
    rq_msg_release(&a);
}

Test(queue_cut, no_cut_of_a_chunk_done_requeued_or_of_an_ended_job)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 };
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, "1-1", "", "{}", "1:1", 5, "{}", 3, "B", 0, &e), 0,
                 "another entry");
    redisReply *r = rq_cmd(Q, &e, "HSET vr:job:j1 state cancelled");
    freeReplyObject(r);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{}", "1:1", 5, "{}", 3, "B", 0, &e), 0,
                 "job ended");
    r = rq_cmd(Q, &e, "HSET vr:job:j1 state running");
    freeReplyObject(r);
    cr_assert_eq(rq_chunk_commit(Q, a.stream, "A:cpu:1", a.id, "j1", 0, 20, 5.0, "{}", NULL, &e),
                 1, "uncut: any end commits");
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{}", "1:1", 5, "{}", 3, "B", 0, &e), 0,
                 "done");
    cr_assert_eq(hll("vr:job:j1", "chunks_total"), 1);
    rq_msg_release(&a);
}

Test(queue_cut, a_worker_dead_after_the_cut_leaves_the_shorter_task)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 }, c = { 0 };
    struct rq_start st;
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"head\":1}", "100:90", 5, "{\"tail\":1}",
                              3, "B:cpu:2", 0, &e), 1, "%s", e.msg);
    struct timespec ts = { 0, 120 * 1000000L };
    nanosleep(&ts, NULL);
    cr_assert_eq(rq_chunk_fail(Q, a.stream, NULL, a.id, "j1", 0, "lease lapsed", 100, &e), 1,
                 "%s", e.msg);
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tqueue_take(Q, "C:cpu:3", &c, &st), 1);
        if (!strcmp(rq_msg_get(&c, "idx"), "0")) {
            cr_assert_str_eq(st.task, "{\"head\":1}");
            seen++;
        }
        rq_msg_release(&c);
    }
    cr_assert_eq(seen, 1);
    rq_msg_release(&a);
}

/* A cut for its worker's slowness marks the chunk's record with the entry
 * that worker runs it under (rq_cut_aside: it steps aside from the tails
 * once it ends it); an idle worker's cut does not, and the chunk requeued
 * under another entry (another worker) is not that worker's. */
Test(queue_cut, a_cut_for_slowness_marks_its_worker_to_step_aside)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 };
    running_chunk(&a);
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "", "{\"h\":1}", "100:90", 5, "{\"t\":5}", 3,
                              "B:cpu:2", 0, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_cut_aside(Q, "j1", 0, a.id, &e), 0, "a cut for an idle worker");
    cr_assert_eq(rq_chunk_cut(Q, "j1", 0, a.id, "100:90", "{\"h\":2}", "50:40", 3, "{\"t\":3}",
                              3, "B:cpu:2", 1, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_cut_aside(Q, "j1", 0, a.id, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_cut_aside(Q, "j1", 0, "1-1", &e), 0, "another entry's worker");
    cr_assert_eq(rq_cut_aside(Q, "j1", 3, a.id, &e), 0, "the tail's");
    rq_msg_release(&a);
}

/* A straggler's cut parts its tail (controller/ctl_cut.c): one script
 * queues every part in order, or none when one of them exists already;
 * the job counts a cut and a chunk for each part; each part is taken and
 * committed once. */
Test(queue_cut, a_tail_parted_in_three_is_queued_whole_or_not_at_all)
{
    vr_err e = { 0 };
    struct rq_msg a = { 0 }, t = { 0 };
    struct rq_start st;
    running_chunk(&a);
    const int idx[] = { 5, 7, 9 };
    const char *tasks[] = { "{\"t\":5}", "{\"t\":7}", "{\"t\":9}" };
    cr_assert_eq(rq_chunk_create(Q, "j1", 7, "{\"other\":1}", 3, 0, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_chunk_cut_tails(Q, "j1", 0, a.id, "", "{\"h\":1}", "100:90", 3, idx, tasks,
                                    3, "B:cpu:2", 1, &e), 0, "a part's record exists: no cut");
    char end[RQ_CUT_END_MAX] = "", task[64];
    cr_assert_eq(rq_cut_peek(Q, "j1", 0, end, sizeof end, task, sizeof task, &e), 0);
    char st5[32];
    hstr("vr:chunk:j1:5", "state", st5, sizeof st5);
    cr_assert_str_eq(st5, "", "no part was written");
    cr_assert_eq(rq_cut_aside(Q, "j1", 0, a.id, &e), 0);
    /* chunk 7 taken and done: it was the stream's; now cut anew at 11, 13, 15 */
    struct rq_msg o = { 0 };
    cr_assert_eq(tqueue_take(Q, "B:cpu:2", &o, &st), 1);
    rq_msg_release(&o);
    const int idx2[] = { 11, 13, 15 };
    const char *tasks2[] = { "{\"t\":11}", "{\"t\":13}", "{\"t\":15}" };
    long long total = hll("vr:job:j1", "chunks_total");
    cr_assert_eq(rq_chunk_cut_tails(Q, "j1", 0, a.id, "", "{\"h\":1}", "100:90", 3, idx2, tasks2,
                                    3, "B:cpu:2", 1, &e), 1, "%s", e.msg);
    cr_assert_eq(hll("vr:job:j1", "chunks_total"), total + 3);
    cr_assert_eq(hll("vr:job:j1", "cuts"), 3);
    cr_assert_eq(rq_cut_aside(Q, "j1", 0, a.id, &e), 1, "the cut for slowness is marked");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tqueue_take(Q, "C:cpu:3", &t, &st), 1);
        char want[8];
        snprintf(want, sizeof want, "%d", idx2[i]);
        cr_assert_str_eq(rq_msg_get(&t, "idx"), want, "the parts in source order");
        cr_assert_str_eq(st.task, tasks2[i]);
        cr_assert_eq(rq_chunk_commit_end(Q, t.stream, "C:cpu:3", t.id, "j1", idx2[i], 5, 5.0,
                                         "{}", NULL, "open", &e), 1, "%s", e.msg);
        rq_msg_release(&t);
    }
    cr_assert_eq(rq_chunks_waiting(Q, &e), 0);
    cr_assert_eq(rq_chunk_cut_tails(Q, "j1", 0, a.id, "100:90", "{}", "1:1", 8, idx2, tasks2, 3,
                                    "B", 1, &e), VR_EINVAL, "more parts than a script takes");
    rq_msg_release(&a);
}

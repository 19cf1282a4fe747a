/*
 * t-queue-cancel-stitch.c - a user's cancel racing the controller's stitch
 * ends with one answer, decided on the server (queue/rq_jobs.c): the job is
 * cancelled or done, never both, never neither, and its fields are those of
 * the side that won. Both orders one at a time, then two threads on their
 * own connections racing over many jobs; also a cancel during the split and
 * a failure against a late done. A real redis-server, no mocks.
 */
#include "rq_jobs.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct tredis T;
static struct rq *Q;

static void setup(void)
{
    cr_assert_eq(tredis_start(&T, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(T.url, 5000, &Q, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&T);
}

TestSuite(queue_cancel_stitch, .init = setup, .fini = teardown, .timeout = 60);

/* A job submitted, split by controller `ctl` and now stitching under it;
 * returns the stitch's claim token. */
static long long job_stitching(const char *id, const char *ctl)
{
    vr_err e = { 0 };
    long long split = 0, stitch = 0;
    cr_assert_eq(rq_job_submit(Q, id, "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_claim(Q, id, "queued", "splitting", ctl, &split, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_job_running(Q, id, ctl, split, 2, 10, 0.5, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_job_claim(Q, id, "running", "stitching", ctl, &stitch, &e), 1, "%s", e.msg);
    cr_assert_gt(stitch, split, "a claim's token is not new");
    return stitch;
}

static void field(const char *id, const char *f, char *buf, size_t n)
{
    char key[128];
    rq_key_job(key, sizeof key, id);
    buf[0] = '\0';
    cr_assert_geq(rq_hget(Q, key, f, buf, n, NULL), 0);
}

static int active(const char *id)
{
    char ids[64][48];
    int n = rq_active_list(Q, ids, 64, NULL);
    for (int i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return 1;
    return 0;
}

/* The job's fields are those of the winner, and nothing of the loser. */
static void assert_one_answer(const char *id, int done_won)
{
    char state[32], err[128], metrics[64], stitch[32];
    field(id, "state", state, sizeof state);
    field(id, "error", err, sizeof err);
    field(id, "metrics", metrics, sizeof metrics);
    field(id, "stitch_s", stitch, sizeof stitch);
    if (done_won) {
        cr_assert_str_eq(state, "done", "%s", id);
        cr_assert_str_eq(metrics, "{\"m\":1}", "%s: the stitch's figures are missing", id);
        cr_assert_str_eq(err, "", "%s: done but carries a cancel's error '%s'", id, err);
    } else {
        cr_assert_str_eq(state, "cancelled", "%s", id);
        cr_assert_str_eq(err, "cancelled by the user", "%s", id);
        cr_assert_str_eq(metrics, "", "%s: cancelled but carries the stitch's figures", id);
        cr_assert_str_eq(stitch, "", "%s: cancelled but carries a stitch time", id);
    }
    cr_assert_not(active(id), "%s ended but is still in the active set", id);
}

Test(queue_cancel_stitch, cancel_first_wins_and_done_is_refused)
{
    long long t = job_stitching("j-cancel-first", "ctl-a");
    char state[32];
    vr_err e = { 0 };
    cr_assert_eq(rq_job_cancel(Q, "j-cancel-first", "cancelled by the user", state, sizeof state,
                               &e), 1, "%s", e.msg);
    int held = 0;
    cr_assert_eq(rq_job_done(Q, "j-cancel-first", "ctl-a", t, 1.5, "{\"m\":1}", &held, &e), 0,
                 "done overwrote a cancel");
    cr_assert_eq(held, 1, "the claim was still ctl-a's: its output is its own to remove");
    assert_one_answer("j-cancel-first", 0);
}

Test(queue_cancel_stitch, done_first_wins_and_cancel_says_so)
{
    long long t = job_stitching("j-done-first", "ctl-a");
    char state[32];
    vr_err e = { 0 };
    cr_assert_eq(rq_job_done(Q, "j-done-first", "ctl-a", t, 1.5, "{\"m\":1}", NULL, &e), 1, "%s",
                 e.msg);
    cr_assert_eq(rq_job_cancel(Q, "j-done-first", "cancelled by the user", state, sizeof state,
                               &e), 0, "a cancel changed a finished job");
    cr_assert_str_eq(state, "done");
    assert_one_answer("j-done-first", 1);
}

Test(queue_cancel_stitch, only_the_stitching_controller_finishes)
{
    long long t = job_stitching("j-owner", "ctl-a");
    vr_err e = { 0 };
    cr_assert_eq(rq_job_done(Q, "j-owner", "ctl-b", t, 1.0, "{}", NULL, &e), 0,
                 "another controller finished a stitch it does not hold");
    cr_assert_eq(rq_job_done(Q, "j-owner", "ctl-a", t, 1.0, "{\"m\":1}", NULL, &e), 1, "%s",
                 e.msg);
}

/* Issue 26, finding 3: ctl-a paused past its heartbeat while ctl-b claimed
 * the stitch. Every script ctl-a's old claim reaches is refused, even one
 * with its own name (ctl-a claimed again later), and a holder's failure
 * no longer fails a job another holds. */
Test(queue_cancel_stitch, a_stale_claim_is_fenced_off)
{
    long long old = job_stitching("j-fence", "ctl-a");
    vr_err e = { 0 };
    /* ctl-a's heartbeat key never existed here: its claim counts as dead */
    long long b = 0, a2 = 0;
    cr_assert_eq(rq_job_claim(Q, "j-fence", "running", "stitching", "ctl-b", &b, &e), 1);
    cr_assert_gt(b, old);
    cr_assert_eq(rq_job_holds(Q, "j-fence", "stitching", "ctl-a", old, &e), 0);
    cr_assert_eq(rq_job_holds(Q, "j-fence", "stitching", "ctl-b", b, &e), 1);
    cr_assert_eq(rq_job_fail(Q, "j-fence", "ctl-a", old, "stitch: gone", &e), 2,
                 "a stale holder failed the job");
    cr_assert_eq(rq_job_reopen(Q, "j-fence", "ctl-a", old, &e), 0);
    /* the same name with a stale token: still refused */
    cr_assert_eq(rq_job_claim(Q, "j-fence", "running", "stitching", "ctl-a", &a2, &e), 1);
    int held = 1;
    cr_assert_eq(rq_job_done(Q, "j-fence", "ctl-a", old, 1.0, "{}", &held, &e), 0,
                 "a stale claim of the same controller published");
    cr_assert_eq(held, 0, "a stale claim was told it still held the job");
    cr_assert_eq(rq_job_done(Q, "j-fence", "ctl-a", a2, 1.0, "{}", NULL, &e), 1, "%s", e.msg);
    char state[32];
    field("j-fence", "state", state, sizeof state);
    cr_assert_str_eq(state, "done");
}

Test(queue_cancel_stitch, cancel_during_the_split_is_not_revived)
{
    vr_err e = { 0 };
    char state[32];
    cr_assert_eq(rq_job_submit(Q, "j-split", "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    long long t = 0;
    cr_assert_eq(rq_job_claim(Q, "j-split", "queued", "splitting", "ctl-a", &t, &e), 1);
    cr_assert_eq(rq_job_cancel(Q, "j-split", "cancelled by the user", state, sizeof state, &e), 1);
    cr_assert_eq(rq_job_running(Q, "j-split", "ctl-a", t, 3, 30, 0.1, &e), 0,
                 "the end of a split revived a cancelled job");
    field("j-split", "state", state, sizeof state);
    cr_assert_str_eq(state, "cancelled");
}

Test(queue_cancel_stitch, a_failure_first_leaves_no_done)
{
    long long t = job_stitching("j-fail", "ctl-a");
    vr_err e = { 0 };
    cr_assert_eq(rq_job_fail(Q, "j-fail", "ctl-a", t, "disk full", &e), 1, "%s", e.msg);
    cr_assert_eq(rq_job_done(Q, "j-fail", "ctl-a", t, 1.0, "{}", NULL, &e), 0);
    cr_assert_eq(rq_job_fail(Q, "j-fail", "ctl-a", t, "again", &e), 0, "failed twice");
    char state[32], err[64];
    field("j-fail", "state", state, sizeof state);
    field("j-fail", "error", err, sizeof err);
    cr_assert_str_eq(state, "failed");
    cr_assert_str_eq(err, "disk full");
}

/* ---- the race ---- */

enum { NJOBS = 300 };

struct racer {
    int cancel;                  /* 1: the user's side, 0: the controller's */
    int won[NJOBS];
    const long long *tokens;     /* each job's stitch claim (the controller's side) */
    pthread_barrier_t *go;
    char err[400];
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct rq *q = NULL;
    vr_err e = { 0 };
    if (rq_open(T.url, 5000, &q, &e) < 0) {
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        pthread_barrier_wait(r->go);
        return NULL;
    }
    pthread_barrier_wait(r->go);
    for (int i = 0; i < NJOBS; i++) {
        /* the two sides walk the jobs in opposite orders, so they meet in
         * the middle and each wins about half */
        int j = r->cancel ? NJOBS - 1 - i : i;
        char id[32], state[32];
        snprintf(id, sizeof id, "race-%03d", j);
        int rc = r->cancel ? rq_job_cancel(q, id, "cancelled by the user", state, sizeof state, &e)
                           : rq_job_done(q, id, "ctl-a", r->tokens[j], 2.0, "{\"m\":1}", NULL,
                                         &e);
        if (rc < 0) {
            snprintf(r->err, sizeof r->err, "%s: %s", id, e.msg);
            break;
        }
        r->won[j] = rc == 1;
    }
    rq_free(&q);
    return NULL;
}

Test(queue_cancel_stitch, racing_sides_end_every_job_with_one_answer)
{
    static long long tokens[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        char id[32];
        snprintf(id, sizeof id, "race-%03d", i);
        tokens[i] = job_stitching(id, "ctl-a");
    }
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    static struct racer user, ctl;
    memset(&user, 0, sizeof user);
    memset(&ctl, 0, sizeof ctl);
    user.cancel = 1;
    ctl.tokens = tokens;
    user.go = ctl.go = &go;
    pthread_t a, b;
    pthread_create(&a, NULL, race, &user);
    pthread_create(&b, NULL, race, &ctl);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&go);
    cr_assert_str_eq(user.err, "");
    cr_assert_str_eq(ctl.err, "");
    int cancelled = 0, done = 0;
    for (int i = 0; i < NJOBS; i++) {
        char id[32];
        snprintf(id, sizeof id, "race-%03d", i);
        cr_assert(user.won[i] != ctl.won[i], "%s: %s", id,
                  user.won[i] ? "both sides won" : "neither side won");
        assert_one_answer(id, ctl.won[i]);
        cancelled += user.won[i];
        done += ctl.won[i];
    }
    cr_log_info("race: %d done, %d cancelled", done, cancelled);
    cr_assert(cancelled > 0 && done > 0, "the sides never met (%d done, %d cancelled)", done,
              cancelled);
}

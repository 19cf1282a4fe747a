/*
 * t-dist-elastic-aside.c - a straggler steps aside from the tails (issue
 * 44, queue/rq_cut.h RQ_CUT_ASIDE_MS) through the whole system: a real
 * redis-server, vr-controller and two CPU vr-workers, one slowed 5x
 * (VR_TEST_FRAME_DELAY_MS). The straggler's chunk is cut for its slowness
 * while the fast worker is busy; the fast one is then stopped (SIGSTOP),
 * so that the tail still waits in the priority stream when the straggler
 * ends its head: the straggler must leave it there (its heartbeat says
 * "aside"), and the fast worker, let go on, commits it. Which worker
 * committed which chunk is asserted, not a time: before the change the
 * straggler took the tail the moment it ended its head.
 */
#include "rq.h"
#include "rq_fleet.h"
#include "util-queue.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct tdist D;
static struct rq *Q;
static pid_t stopped; /* the fast worker while it is stopped */

static void teardown(void)
{
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    if (stopped > 0)
        kill(stopped, SIGCONT);
    stopped = 0;
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_elastic_aside, .fini = teardown, .timeout = 240);

/* Field f of chunk idx of job id into buf ("" absent). */
static void chunk_field(const char *id, int idx, const char *f, char *buf, size_t n)
{
    char ck[128];
    rq_key_chunk(ck, sizeof ck, id, idx);
    buf[0] = '\0';
    if (rq_hget(Q, ck, f, buf, n, NULL) <= 0)
        buf[0] = '\0';
}

/* The job's chunk records by role: the cut head (its record has an `end`),
 * its tail (a `cut_for`) and the other chunk; -1 where none. */
static void roles(const char *id, int *head, int *tail, int *other)
{
    *head = *tail = *other = -1;
    for (int i = 0; i < 200; i++) {
        char v[128];
        chunk_field(id, i, "state", v, sizeof v);
        if (!v[0])
            continue;
        char end[64], cut_for[160];
        chunk_field(id, i, "end", end, sizeof end);
        chunk_field(id, i, "cut_for", cut_for, sizeof cut_for);
        if (end[0])
            *head = i;
        else if (cut_for[0])
            *tail = i;
        else
            *other = i;
    }
}

/* Worker `name`'s state as its heartbeat says ("" not listed). */
static void worker_state(const char *name, char *buf, size_t n)
{
    struct rq_worker_info w[8];
    int k = rq_workers_list(Q, w, 8, NULL);
    buf[0] = '\0';
    for (int i = 0; i < k; i++)
        if (!strcmp(w[i].name, name))
            snprintf(buf, n, "%s", w[i].state);
}

static long long job_ll(const char *id, const char *f)
{
    return tqueue_job_ll(Q, id, f);
}

Test(dist_elastic_aside, a_straggler_leaves_the_tails_to_the_faster_worker)
{
    /* a 60 s lease: the fast worker's chunk outlives its stop */
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    cr_assert_eq(tdist_start(&D, 0, 60, 1, 1), 0);
    pid_t fast = D.w[0];
    setenv("VR_TEST_FRAME_DELAY_MS", "500", 1);
    cr_assert_gt(tdist_worker(&D), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[400], cfg[400], id[64] = "", buf[256] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(cfg, sizeof cfg, "%s/lossless.json", D.r.dir);
    cr_assert_eq(tclip_make(in, 12, 160, 5, 1), 0);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\", \"batch\": 1}' > '%s'", cfg), 0);
    tmsleep(1500); /* both up and idle: each takes one of the two chunks */
    const char *args[] = { "submit", in, "-o", out, "--profile", "fast", "-c", cfg, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, args), 0, "%s", buf);
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(id, sizeof id, "%s", buf);

    /* the straggler's chunk is cut for its slowness, the fast one still busy */
    for (int t = 0; t < 600 && job_ll(id, "cuts") < 1; t++)
        tmsleep(50);
    cr_assert_eq(kill(fast, SIGSTOP), 0);
    stopped = fast;
    cr_assert_eq(job_ll(id, "cuts"), 1, "the straggler's chunk was not cut");
    cr_assert_eq(tsh("grep -q 'its worker runs slow' '%s'", D.log), 0,
                 "the cut was not for the straggler's slowness");
    int head, tail, other;
    roles(id, &head, &tail, &other);
    cr_assert(head >= 0 && tail >= 0 && other >= 0, "head %d, tail %d, other %d", head, tail,
              other);
    char slow[160], quick[160], st[32];
    chunk_field(id, head, "worker", slow, sizeof slow);
    chunk_field(id, other, "worker", quick, sizeof quick);
    chunk_field(id, other, "state", st, sizeof st);
    cr_assert_str_eq(st, "running", "the fast worker's chunk ended before the cut");

    /* the straggler ends its head while the tail waits: it steps aside */
    for (int t = 0; t < 1200; t++, tmsleep(50)) {
        worker_state(slow, buf, sizeof buf);
        chunk_field(id, tail, "state", st, sizeof st);
        if (!strcmp(buf, "aside") || strcmp(st, "queued"))
            break;
    }
    chunk_field(id, head, "state", buf, sizeof buf);
    cr_assert_str_eq(buf, "done", "the straggler's head");
    chunk_field(id, tail, "state", st, sizeof st);
    chunk_field(id, tail, "worker", buf, sizeof buf);
    cr_assert_str_eq(st, "queued", "the straggler took the tail cut from its chunk (%s by %s)",
                     st, buf);
    worker_state(slow, buf, sizeof buf);
    cr_assert_str_eq(buf, "aside", "the straggler's heartbeat");

    /* the fast worker, let go on, ends its chunk and takes the tail */
    kill(fast, SIGCONT);
    stopped = 0;
    cr_assert_eq(tdist_watch(&D, id, 90000), 0);
    chunk_field(id, tail, "worker", buf, sizeof buf);
    cr_assert_str_eq(buf, quick, "the tail was committed by %s, not the fast worker", buf);
    chunk_field(id, head, "worker", buf, sizeof buf);
    cr_assert_str_eq(buf, slow);
    chunk_field(id, other, "worker", buf, sizeof buf);
    cr_assert_str_eq(buf, quick);
    for (int i = 0; i < 3; i++) {
        int idx = i == 0 ? head : i == 1 ? tail : other;
        long long commits = 0;
        char ck[128];
        rq_key_chunk(ck, sizeof ck, id, idx);
        rq_hget_ll(Q, ck, "commits", &commits, NULL);
        cr_assert_eq(commits, 1, "chunk %d committed %lld times", idx, commits);
    }
    cr_assert_eq(job_ll(id, "chunks_done"), 3);
    cr_assert_eq(job_ll(id, "chunks_total"), 3);
}

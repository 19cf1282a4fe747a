/*
 * t-controller-cut-rules.c - the controller's two rules for when to cut a
 * running chunk (issue 44; controller/ctl_cut_idle.c, ctl_cut_slow.c), on
 * worker records as the fleet's heartbeats write them: a worker idle for
 * less than a chunk's set-up makes no cut and one idle longer does (its
 * wait starting again when a job is planned); a worker whose rate makes it
 * end well after the fleet could drain what is left has its chunk cut
 * before anyone is idle, keeping what it encodes in that time, while
 * workers of one speed (rates jittering) make no cut; a worker's rate is
 * the frames between its heartbeats, its chunk's set-up left out. The
 * whole system's
 * cuts: t-dist-elastic.c.
 */
#include "ctl_cut.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(controller_cut_rules);

/* A worker's record at Redis time seen_ms, heartbeat every 300 ms, that
 * ran 3 chunks. */
static struct rq_worker_info worker(const char *name, const char *state, long long seen_ms)
{
    struct rq_worker_info w = { .hb_ms = 300, .seen_ms = seen_ms, .fps = 10,
                                .chunks_done = 3 };
    snprintf(w.name, sizeof w.name, "%s", name);
    snprintf(w.state, sizeof w.state, "%s", state);
    return w;
}

Test(controller_cut_rules, a_short_idle_gap_makes_no_cut_a_long_one_does)
{
    long long t = 1000000;
    struct rq_worker_info w[2] = { worker("gpu0", "idle", t), worker("gpu1", "busy", t) };
    ctl_cut_idle_note(w, 2, t + 100);
    cr_assert_eq(ctl_cut_idle_for(&w[0], t + 100), 100, "from its first idle heartbeat");
    cr_assert_eq(ctl_cut_idle_for(&w[1], t + 100), 0, "a busy worker does not wait");
    /* a gap shorter than the set-up (CTL_CUT_SETUP_MS) is short */
    const long long S = CTL_CUT_SETUP_MS, gap = S / 2;
    w[0].seen_ms = w[1].seen_ms = t + gap;
    ctl_cut_idle_note(w, 2, t + gap);
    cr_assert_eq(ctl_cut_idle_for(&w[0], t + gap), gap);
    cr_assert_not(ctl_cut_idle_waited(&w[0], t + gap, 0), "a %lld ms gap made a cut", gap);
    /* past the set-up a cut is made; with the tail's warm-up (4 frames at
     * its last 10 fps: 400 ms more) not yet */
    ctl_cut_idle_note(w, 2, t + S + 100);
    cr_assert(ctl_cut_idle_waited(&w[0], t + S + 100, 0), "%lld ms idle made no cut", S + 100);
    cr_assert_not(ctl_cut_idle_waited(&w[0], t + S + 100, 4), "the tail's warm-up left out");
    ctl_cut_idle_note(w, 2, t + S + 500);
    cr_assert(ctl_cut_idle_waited(&w[0], t + S + 500, 4));
    /* busy for one heartbeat, then idle again: the wait starts again */
    const long long u = t + S + 700;
    snprintf(w[0].state, sizeof w[0].state, "busy");
    w[0].seen_ms = u;
    ctl_cut_idle_note(w, 2, u + 50);
    cr_assert_eq(ctl_cut_idle_for(&w[0], u + 50), 0);
    snprintf(w[0].state, sizeof w[0].state, "idle");
    w[0].seen_ms = u + 300;
    ctl_cut_idle_note(w, 2, u + 350);
    cr_assert_eq(ctl_cut_idle_for(&w[0], u + 350 + gap - 50), gap);
    cr_assert_not(ctl_cut_idle_waited(&w[0], u + 350 + gap - 50, 0));
    /* a worker that just joined (no chunk run yet) is served at once */
    w[1] = worker("gpu9", "idle", u + 600);
    w[1].chunks_done = 0;
    ctl_cut_idle_note(w, 2, u + 650);
    cr_assert(ctl_cut_idle_waited(&w[1], u + 650, 0), "a joiner waited for a gap's end");
}

/* A job planned hands its chunks to the idle workers, a tail goes to the
 * worker it was cut for, and their heartbeats may still say "idle" a
 * moment: their waits start again, and count once a heartbeat after says
 * idle. */
Test(controller_cut_rules, a_planned_job_or_a_tail_starts_the_wait_again)
{
    long long t = 2000000;
    struct rq_worker_info w = worker("gpu2", "idle", t);
    ctl_cut_idle_note(&w, 1, t + 100);
    w.seen_ms = t + 4900;
    ctl_cut_idle_note(&w, 1, t + 5000);
    cr_assert(ctl_cut_idle_waited(&w, t + 5000, 0), "idle 5 s made no cut");
    ctl_cut_idle_restart();
    ctl_cut_idle_note(&w, 1, t + 5100);
    cr_assert_eq(ctl_cut_idle_for(&w, t + 5900), 0, "no heartbeat since the plan");
    w.seen_ms = t + 5150;
    ctl_cut_idle_note(&w, 1, t + 5160);
    cr_assert_not(ctl_cut_idle_waited(&w, t + 5160, 0), "a worker just handed work");
    cr_assert(ctl_cut_idle_waited(&w, t + 5700, 0));
    ctl_cut_idle_served("gpu2", t + 5700);
    cr_assert_eq(ctl_cut_idle_for(&w, t + 6500), 0, "cut for it twice");
    w.seen_ms = t + 6000;
    ctl_cut_idle_note(&w, 1, t + 6050);
    cr_assert_eq(ctl_cut_idle_for(&w, t + 6100), 400);
}

Test(controller_cut_rules, a_slow_worker_is_cut_before_anyone_is_idle)
{
    /* four workers 60 frames each; three at 10 fps, one at 2 fps */
    struct ctl_cut_rate r[4] = {
        { .wi = 0, .done = 20, .left = 40, .fps = 10, .warmup = 2 },
        { .wi = 1, .done = 4, .left = 56, .fps = 2, .warmup = 2 },
        { .wi = 2, .done = 22, .left = 38, .fps = 10, .warmup = 2 },
        { .wi = 3, .done = 19, .left = 41, .fps = 10, .warmup = 2 },
    };
    long long want = -1;
    int first = -1;
    cr_assert_eq(ctl_cut_slow_pick(r, 4, &want, &first), 1);
    cr_assert_eq(first, 2, "the tail is for the worker expected free first");
    /* all that is left (175 frames) at the fleet's 32 fps: 5.47 s, of
     * which the slow worker encodes 10 frames past its 4 */
    cr_assert_eq(want, 4 + 10, "keeps %lld", want);
    /* a rate not yet known (ctl_cut_rate_of: 0) is left out */
    r[1].fps = 0;
    cr_assert_eq(ctl_cut_slow_pick(r, 4, &want, &first), -1);
}

Test(controller_cut_rules, workers_of_one_speed_make_no_cut)
{
    /* rates that jitter by 20% and progress a few frames apart: each ends
     * within the drain time's slack and a set-up */
    struct ctl_cut_rate r[4] = {
        { .wi = 0, .done = 30, .left = 30, .fps = 9, .warmup = 2 },
        { .wi = 1, .done = 25, .left = 35, .fps = 11, .warmup = 2 },
        { .wi = 2, .done = 30, .left = 30, .fps = 10, .warmup = 2 },
        { .wi = 3, .done = 22, .left = 38, .fps = 10, .warmup = 2 },
    };
    long long want = -1;
    int first = -1;
    cr_assert_eq(ctl_cut_slow_pick(r, 4, &want, &first), -1, "cut to keep %lld", want);
    /* the one that jitters slowest at 7 fps: still one speed */
    r[0].fps = 7;
    cr_assert_eq(ctl_cut_slow_pick(r, 4, &want, &first), -1, "cut to keep %lld", want);
    /* one worker alone is no fleet to compare with */
    r[1].fps = 1;
    cr_assert_eq(ctl_cut_slow_pick(r + 1, 1, &want, &first), -1);
}

/* Set-up counts in a heartbeat's rate (frames since the chunk started);
 * the rule's rate counts from the first heartbeat with a frame encoded. */
Test(controller_cut_rules, a_rate_leaves_the_set_up_out)
{
    long long t = 3000000;
    struct rq_worker_info w = worker("gpu3", "busy", t);
    snprintf(w.chunk, sizeof w.chunk, "job-a/0");
    w.chunk_frames = 0; /* setting up */
    ctl_cut_rate_note(&w, 1);
    w.seen_ms = t + 2000, w.chunk_frames = 1;
    ctl_cut_rate_note(&w, 1);
    cr_assert_eq(ctl_cut_rate_of(&w), 0, "a rate from one heartbeat");
    w.seen_ms = t + 2300, w.chunk_frames = 2;
    ctl_cut_rate_note(&w, 1);
    cr_assert_eq(ctl_cut_rate_of(&w), 0, "a rate over one heartbeat");
    w.seen_ms = t + 3000, w.chunk_frames = 3;
    ctl_cut_rate_note(&w, 1);
    cr_assert_float_eq(ctl_cut_rate_of(&w), 2.0, 1e-9);
    /* its next chunk: counted afresh */
    snprintf(w.chunk, sizeof w.chunk, "job-a/7");
    w.seen_ms = t + 3300, w.chunk_frames = 1;
    ctl_cut_rate_note(&w, 1);
    cr_assert_eq(ctl_cut_rate_of(&w), 0);
}

/*
 * t-dist-threads.c - `vr-worker serve --slots N --slot-mode threads`: the
 * N workers run as threads of one worker process (one a GPU; one for CPU
 * workers), each still a worker of its own in Redis. Two CPU workers as
 * threads: both listed, in one process, a job's matte the one `vr-worker
 * process` makes (lossless, every frame); the process killed with SIGKILL
 * mid-chunk: each thread's chunk requeued at once, the process replaced,
 * the job done with the same matte; SIGTERM drains both threads, exit 0.
 */
#include "rq.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_threads, .fini = teardown, .timeout = 240);

/* The live workers (names into `names`), or -1. */
static int live_workers(char *names, size_t n)
{
    int warming;
    return tdist_workers(&D, names, n, &warming);
}

/* `serve --cpu --slots 2 --slot-mode threads` under the test's Redis; its
 * pid. delay_ms > 0: each worker makes every frame that slow. */
static pid_t serve_threads(int delay_ms)
{
    char delay[16];
    snprintf(delay, sizeof delay, "%d", delay_ms);
    if (delay_ms > 0)
        setenv("VR_TEST_FRAME_DELAY_MS", delay, 1);
    const char *argv[] = { "vr-worker", "serve", "--cpu", "--slots", "2", "--slot-mode",
                           "threads", "--redis", D.r.url, "--storage", D.storage,
                           "--input-root", D.r.dir, "--heartbeat-ms", "300", NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
    return p;
}

/* Waits until `want` workers run: listed, and past the parent's "warming"
 * (their own heartbeat: their names into names). A serve that exits
 * meanwhile (an option it does not know) fails at once. */
static void wait_workers(int want, char *names, size_t n)
{
    int k = -1, st = 0, warming = 0;
    pid_t p = D.w[D.nw - 1];
    for (int i = 0; i < 600 && (k != want || warming); i++) {
        usleep(100000);
        k = tdist_workers(&D, names, n, &warming);
        if (k != want && waitpid(p, &st, WNOHANG) == p) {
            D.w[D.nw - 1] = 0;
            tsh("tail -20 '%s' >&2", D.log);
            cr_assert_fail("serve exited (status %d) before %d workers were listed", st, want);
        }
    }
    if (k != want || warming)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert(k == want && !warming, "live workers: %d (%s), %d warming", k, names, warming);
}

/* The pid of the worker process the parent logged last ("pid N, workers
 * a,b"), and that the line names both `names` (space-separated). */
static pid_t worker_process(const char *names)
{
    char line[1024] = "";
    tsh_out(line, sizeof line, "grep -o 'pid [0-9]*, workers .*$' '%s' | tail -1", D.log);
    cr_assert(line[0], "the parent logged no worker process of two workers");
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", names);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
        cr_assert(strstr(line, t), "worker %s is not a thread of the process: %s", t, line);
    return (pid_t)atoi(line + 4);
}

/* The clip, the lossless config (FFV1 matte) and `vr-worker process`'s
 * matte of it into ref. */
static void reference(const char *in, double secs, const char *cfg, const char *ref)
{
    cr_assert_eq(tclip_make(in, secs, 160, 10, 0), 0);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    const char *pargv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg,
                            "--output", "mask", in, "-o", ref, NULL };
    cr_assert_eq(tproc_run("vr-worker", pargv, NULL, 0), 0, "process failed on %s", in);
}

/* Every frame of the two mattes equal. */
static void same_matte(const char *a, const char *b)
{
    struct tv_file fa, fb;
    cr_assert_eq(tv_read(a, 1, &fa), 0);
    cr_assert_eq(tv_read(b, 1, &fb), 0);
    tv_assert_same_timing(&fa, &fb);
    cr_assert(fa.w == fb.w && fa.h == fb.h && fa.nframes == fb.nframes && fa.nframes > 0,
              "mattes differ: %dx%d x%d vs %dx%d x%d", fa.w, fa.h, fa.nframes, fb.w, fb.h,
              fb.nframes);
    for (int i = 0; i < fa.nframes; i++)
        cr_assert_eq(memcmp(fa.luma[i], fb.luma[i], (size_t)fa.w * fa.h), 0,
                     "frame %d differs between process and the threads' fleet", i);
    tv_free(&fa);
    tv_free(&fb);
}

Test(dist_threads, two_workers_one_process_the_answer_of_process)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    char in[400], out[400], ref[400], cfg[400], id[64], names[1024];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(ref, sizeof ref, "%s/ref.mkv", D.r.dir);
    snprintf(cfg, sizeof cfg, "%s/lossless.json", D.r.dir);
    reference(in, 4, cfg, ref);
    serve_threads(0);
    wait_workers(2, names, sizeof names);
    worker_process(names);
    cr_assert_eq(tsh("grep -q '2 workers as threads of process' '%s'", D.log), 0);

    const char *extra[] = { "-c", cfg, "--output", "mask", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 150000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    same_matte(ref, out);
    /* each chunk was done by one of the listed workers (4 chunks of 1 s) */
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    for (int c = 0; c < 4; c++) {
        char ck[128], w[160] = "";
        rq_key_chunk(ck, sizeof ck, id, c);
        rq_hget(q, ck, "worker", w, sizeof w, NULL);
        cr_assert(w[0] && strstr(names, w), "chunk %d done by '%s', not one of %s", c, w, names);
    }
    rq_free(&q);
}

/* HGET key field into v (size n); "" when absent. */
static void hget(struct rq *q, const char *key, const char *field, char *v, size_t n)
{
    v[0] = '\0';
    rq_hget(q, key, field, v, n, NULL);
}

Test(dist_threads, the_killed_process_s_chunks_requeued_at_once)
{
    /* A 60 s lease: the chunks must be back long before it lapses. Chunks
     * made slow by the workers themselves (300 ms a frame, 20 frames: at
     * least 6 s each), so the kill lands mid-chunk whatever the machine. */
    cr_assert_eq(tdist_start(&D, 0, 60, 1, 0), 0);
    char in[400], out[400], ref[400], cfg[400], id[64], names[1024], v[256];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(ref, sizeof ref, "%s/ref.mkv", D.r.dir);
    snprintf(cfg, sizeof cfg, "%s/lossless.json", D.r.dir);
    reference(in, 4, cfg, ref);
    serve_threads(300);
    wait_workers(2, names, sizeof names);
    pid_t victim = worker_process(names);
    cr_assert_gt(victim, 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);

    const char *extra[] = { "--chunk-seconds", "2", "-c", cfg, "--output", "mask", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
    char ck[2][128], held[2][160] = { "", "" };
    rq_key_chunk(ck[0], sizeof ck[0], id, 0);
    rq_key_chunk(ck[1], sizeof ck[1], id, 1);
    /* both threads hold a chunk */
    for (int t = 0; t < 600 && !(held[0][0] && held[1][0]); t++) {
        for (int c = 0; c < 2; c++) {
            hget(q, ck[c], "state", v, sizeof v);
            if (!strcmp(v, "running"))
                hget(q, ck[c], "worker", held[c], sizeof held[c]);
        }
        tmsleep(100);
    }
    cr_assert(held[0][0] && held[1][0], "the two chunks never ran at once (%s, %s)", held[0],
              held[1]);
    cr_assert(strcmp(held[0], held[1]), "one worker holds both chunks");
    cr_assert_eq(kill(victim, SIGKILL), 0);

    /* Each chunk is taken again within seconds (the lease would take 60),
     * and failed as the process's death. */
    for (int c = 0; c < 2; c++) {
        int t = 0;
        for (; t < 200; t++) {
            hget(q, ck[c], "attempts", v, sizeof v);
            if (atoi(v) >= 2)
                break;
            tmsleep(100);
        }
        if (t == 200)
            tsh("tail -30 '%s' >&2", D.log);
        cr_assert_lt(t, 200, "chunk %d not taken again 20 s after its worker died", c);
        hget(q, ck[c], "error", v, sizeof v);
        cr_assert(strstr(v, "killed by signal 9"), "chunk %d's error: '%s'", c, v);
    }
    /* a new process of two threads, the dead ones gone from the list */
    char now[1024];
    int k = -1;
    for (int i = 0; i < 300; i++) {
        k = live_workers(now, sizeof now);
        if (k == 2 && !strstr(now, held[0]) && !strstr(now, held[1]))
            break;
        tmsleep(100);
    }
    cr_assert(k == 2 && !strstr(now, held[0]) && !strstr(now, held[1]),
              "live workers: %d (%s), dead ones %s %s", k, now, held[0], held[1]);
    cr_assert_neq(worker_process(now), victim);

    int rc = tdist_watch(&D, id, 150000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    char evs[16384];
    const char *eargs[] = { "events", id, NULL };
    tdist_vrctl(&D, evs, sizeof evs, eargs);
    cr_assert(!strstr(evs, "stopped renewing its lease"), "the lease reclaimed one: %s", evs);
    /* the parent's line counts every thread's chunk, not one */
    cr_assert_eq(tsh("grep -q 'killed by signal 9 (Killed); the chunks its 2 workers held go "
                     "back to the queue; 2 new workers in 1 s' '%s'", D.log), 0,
                 "the parent's line does not say both chunks go back");
    same_matte(ref, out);
    rq_free(&q);
}

Test(dist_threads, sigterm_drains_every_thread)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char names[1024];
    pid_t p = serve_threads(0);
    wait_workers(2, names, sizeof names);
    worker_process(names);
    kill(p, SIGTERM);
    int rc = tproc_wait(p, 30000);
    D.w[0] = 0;
    if (rc != 0)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "serve --slot-mode threads exit %d after SIGTERM", rc);
    cr_assert_eq(tsh("grep -c 'drained after' '%s' | grep -qx 2", D.log), 0,
                 "both workers did not drain");
    /* each drained worker's line is tagged with its name */
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", names);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
        cr_assert_eq(tsh("grep -q '\\[%s\\] worker %s: drained after' '%s'", t, t, D.log), 0,
                     "no tagged drain line of %s", t);
    cr_assert_eq(live_workers(names, sizeof names), 0, "still listed: %s", names);
}

/* The process's own lines are no one worker's: in JSON its "workers as
 * threads" line has no worker (it named the first thread's). */
Test(dist_threads, the_process_s_own_lines_name_no_worker)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char names[1024], line[1024] = "";
    setenv("VR_LOG_FORMAT", "json", 1);
    pid_t p = serve_threads(0);
    unsetenv("VR_LOG_FORMAT");
    wait_workers(2, names, sizeof names);
    kill(p, SIGTERM);
    cr_assert_eq(tproc_wait(p, 30000), 0);
    D.w[0] = 0;
    tsh_out(line, sizeof line, "grep 'workers as threads of process' '%s' | tail -1", D.log);
    cr_assert(line[0], "no line of the worker process");
    cr_assert(strstr(line, "\"worker\":null"), "the process's line names a worker: %s", line);
}

/* Each warm-up in the log as "start end" (ms of the day), in the order
 * they ended (t-dist-warm.c's warm_spans, one lane). */
static int warm_spans(double *start, double *end, int max)
{
    char out[1024] = "";
    tsh_out(out, sizeof out, "grep 'warmed for' '%s' | sed -E 's/^[^T]*T([0-9]+):([0-9]+):"
            "([0-9.]+).* in ([0-9]+) ms.*/\\1 \\2 \\3 \\4/' | awk '{ e = ($1 * 3600 + $2 * 60 + "
            "$3) * 1000; printf \"%%.0f %%.0f\\n\", e - $4, e }'", D.log);
    int n = 0;
    for (char *p = out; n < max && *p; n++) {
        int used = 0;
        if (sscanf(p, "%lf %lf%n", &start[n], &end[n], &used) != 2)
            break;
        p += used;
        while (*p == '\n')
            p++;
    }
    return n;
}

/* The warm-up lock holds between threads (a flock belongs to each thread's
 * own descriptor): three threads of one lane with --warm-together 2, each
 * warm-up made 1.5 s slow, run two at once, never three. */
Test(dist_threads, warm_together_limits_a_process_s_threads)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0);
    char a[400];
    snprintf(a, sizeof a, "%s/a.mp4", D.r.dir);
    cr_assert_eq(tclip_make(a, 1, 160, 10, 0), 0);
    setenv("VR_TEST_WARM_DELAY_MS", "1500", 1);
    setenv("VR_TEST_WARM_LANE", "gpu0", 1);
    const char *argv[] = { "vr-worker", "serve", "--cpu", "--slots", "3", "--slot-mode",
                           "threads", "--redis", D.r.url, "--storage", D.storage,
                           "--input-root", D.r.dir, "--heartbeat-ms", "300", "--warm-from", a,
                           "--warm-together", "2", NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    unsetenv("VR_TEST_WARM_LANE");
    unsetenv("VR_TEST_WARM_DELAY_MS");
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
    char names[1024];
    wait_workers(3, names, sizeof names);
    cr_assert_eq(tsh("grep -q '3 workers as threads of process' '%s'", D.log), 0);
    int n = 0;
    for (int t = 0; t < 300 && n < 3; t++, tmsleep(100))
        n = tsh("test $(grep -c 'warmed for' '%s') -ge 3", D.log) == 0 ? 3 : 0;
    double st[3], en[3];
    if (n < 3 || warm_spans(st, en, 3) != 3)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(warm_spans(st, en, 3), 3);
    int pairs = 0;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            pairs += st[j] < en[i] - 20 && st[i] < en[j] - 20;
    cr_assert(pairs >= 1, "no two warm-ups of the threads ran at once with --warm-together 2");
    int three = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            three &= st[j] < en[i] - 20;
    cr_assert(!three, "three warm-ups ran at once with --warm-together 2: %.0f-%.0f, %.0f-%.0f, "
              "%.0f-%.0f", st[0], en[0], st[1], en[1], st[2], en[2]);
}

/* The parent lists its workers as "warming" as it starts them, before
 * their own first heartbeat (here 4 s late), so a job submitted as the
 * fleet starts is planned over all of them, not over the first to
 * register. */
Test(dist_threads, the_parent_lists_its_workers_before_they_start)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    setenv("VR_TEST_SERVE_START_DELAY_MS", "4000", 1);
    serve_threads(0);
    unsetenv("VR_TEST_SERVE_START_DELAY_MS");
    char names[1024] = "";
    int k = -1, warming = 0;
    for (int i = 0; i < 20 && k != 2; i++) { /* 2 s: half the children's delay */
        usleep(100000);
        k = tdist_workers(&D, names, sizeof names, &warming);
    }
    cr_assert_eq(k, 2, "workers listed before they start: %d (%s)", k, names);
    cr_assert_eq(warming, 2, "%d of them listed as warming (%s)", warming, names);
    wait_workers(2, names, sizeof names);
    worker_process(names); /* the names listed are the ones the parent started */
}

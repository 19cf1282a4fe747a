/*
 * t-dist-run.c - `vrctl run`, the all-in-one mode: it starts its own
 * redis-server, controller and CPU workers, produces the output, and leaves
 * nothing behind; interrupted with Ctrl-C (SIGINT) or kill -9 mid-job it
 * keeps its committed chunks, and --resume finishes the job with the
 * output an uninterrupted run gives; when its only worker dies it says so
 * and exits instead of waiting forever.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char W[64];

static void setup(void)
{
    snprintf(W, sizeof W, "/tmp/vrtest-run-XXXXXX");
    cr_assert_not_null(mkdtemp(W));
}

static void teardown(void)
{
    tsh("rm -rf '%s'", W);
}

TestSuite(dist_run, .init = setup, .fini = teardown, .timeout = 120);

/* The temp dir vrctl run announced in its log, or "". */
static void temp_dir_of(const char *log, char *out, size_t n)
{
    tsh_out(out, n, "sed -n 's/.*temp dir \\(\\/[^ ]*vrctl-run-[A-Za-z0-9-]*\\).*/\\1/p' '%s' | "
            "tail -1", log);
    out[strcspn(out, "\n")] = '\0';
}

Test(dist_run, processes_a_clip_and_cleans_up)
{
    char in[128], out[128], log[128], tmp[128], n[64];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 3, 128, 5, 1), 0);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "2", "--profile",
                           "fast", "--chunk-seconds", "1", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    int rc = tproc_wait(p, 90000);
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);
    temp_dir_of(log, tmp, sizeof tmp);
    cr_assert_neq(tmp[0], '\0', "no temp dir announced");
    cr_assert_neq(access(tmp, F_OK), 0, "%s left behind", tmp);
    cr_assert_neq(tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1), 0, "processes of %s still run", tmp);
}

/* Starts `vrctl run` with one CPU worker on a 20 s clip and returns once
 * the job is under way (a chunk done); fills the paths it used. */
static pid_t start_run_mid_job(char *out, char *log, char *tmp, size_t n)
{
    char in[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, n, "%s/out.mp4", W);
    snprintf(log, n, "%s/run.log", W);
    tmp[0] = '\0';
    cr_assert_eq(tclip_make(in, 20, 480, 10, 0), 0);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "1", "--profile",
                           "fast", "--chunk-seconds", "1", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    for (int i = 0; i < 300 && !tmp[0]; i++) {
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
        temp_dir_of(log, tmp, n);
    }
    cr_assert_neq(tmp[0], '\0', "no temp dir announced");
    for (int i = 0; i < 300 && tsh("grep -q 'chunks [1-9]' '%s'", log) != 0; i++) {
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    return p;
}

/* Nothing of the run is left: no temp dir, process or partial output. */
static void assert_nothing_left(const char *tmp, const char *out)
{
    cr_assert_neq(access(tmp, F_OK), 0, "%s left behind", tmp);
    cr_assert_neq(tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1), 0, "processes of %s still run", tmp);
    cr_assert_neq(access(out, F_OK), 0, "a partial output was left");
}

/* `vrctl run` of the 4 s clip in 1 s chunks, one CPU worker, to `out`
 * (more arguments in extra, NULL-terminated), its log in `log`. */
static pid_t run_small(const char *out, const char *log, const char *extra)
{
    char in[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--profile", "fast",
                           "--chunk-seconds", "1", extra, NULL };
    return tproc_spawn("vrctl", argv, log);
}

/* Waits until `log` holds `pattern` (grep -E); 1 seen, 0 not in time. */
static int log_seen(const char *log, const char *pattern, int timeout_ms)
{
    for (int t = 0;; t += 50, tmsleep(50)) {
        if (tsh("grep -qE '%s' '%s'", pattern, log) == 0)
            return 1;
        if (t >= timeout_ms)
            return 0;
    }
}

static double tnow_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void video_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:v -c copy -f framemd5 - | grep -v '^#' | "
            "md5sum", path);
}

Test(dist_run, ctrl_c_and_kill9_keep_chunks_and_resume_gives_the_same_output, .timeout = 240)
{
    char in[128], out[128], clean[128], log[128], tmp[128], a[64], b[64];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(clean, sizeof clean, "%s/clean.mkv", W);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 0), 0);

    /* Chunks made slow by the worker itself (150 ms a frame, 10 frames). */
    setenv("VR_TEST_FRAME_DELAY_MS", "150", 1);
    snprintf(log, sizeof log, "%s/run1.log", W);
    double ran = tnow_s(); /* the three runs' own time, summed */
    pid_t p = run_small(out, log, NULL);
    cr_assert(log_seen(log, "chunks [2-3]/4", 90000), "two chunks never committed");
    temp_dir_of(log, tmp, sizeof tmp);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(p, SIGINT);
    int rc = tproc_wait(p, 30000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(rc, 130, "exit %d", rc);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(took, 10, "Ctrl-C took %.1f s", took);
    ran = tnow_s() - ran;
    cr_assert_eq(access(tmp, F_OK), 0, "the work dir %s was removed", tmp);
    cr_assert_neq(tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1), 0, "processes of %s still run", tmp);
    cr_assert_neq(access(out, F_OK), 0, "a partial output was left");

    /* stopped a while: time "done in" must leave out (with the 3 s below,
     * 5 s: ten times the 0.5 s slack the assertion allows) */
    tmsleep(2000);
    /* Resumed, then killed with SIGKILL: its children follow it. */
    snprintf(log, sizeof log, "%s/run2.log", W);
    double run2 = tnow_s();
    p = run_small(out, log, "--resume");
    cr_assert(log_seen(log, "resuming job .*: [2-4] of 4 chunks done", 60000),
              "run 2 did not resume");
    kill(p, SIGKILL);
    tproc_wait(p, 10000);
    ran += tnow_s() - run2;
    for (int i = 0; i < 300 && tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1) == 0; i++)
        tmsleep(100);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tmsleep(3000);

    snprintf(log, sizeof log, "%s/run3.log", W);
    double run3 = tnow_s();
    p = run_small(out, log, "--resume");
    rc = tproc_wait(p, 90000);
    ran += tnow_s() - run3;
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    int resumed = log_seen(log, "resuming job .*: [2-4] of 4 chunks done", 0);
    if (!resumed)
        tsh("grep -v '#' '%s' >&2", log);
    cr_assert(resumed, "the committed chunks were not kept");
    /* "done in" counts the runs, not the 5 s and more it was stopped */
    char said[64] = "";
    tsh_out(said, sizeof said, "grep -oE 'done in [0-9.]+ s' '%s' | head -1 | tr -dc '0-9.'", log);
    double done_in = atof(said);
    cr_assert_gt(done_in, 0, "no 'done in' in %s", log);
    cr_assert_leq(done_in, ran + 0.5, "done in %.1f s, but the runs took %.1f s", done_in, ran);
    cr_assert_neq(access(tmp, F_OK), 0, "%s left after the job ended", tmp);

    snprintf(log, sizeof log, "%s/run4.log", W);
    cr_assert_eq(tproc_wait(run_small(clean, log, NULL), 90000), 0);
    video_md5(out, a, sizeof a);
    video_md5(clean, b, sizeof b);
    cr_assert_str_eq(a, b, "the resumed output differs from an uninterrupted run's");
}

/* A second Ctrl-C cuts the stop short: the busy worker, which the first
 * gives 2 s to let go of its chunk, is killed at once, and so is the rest. */
Test(dist_run, second_ctrl_c_stops_at_once)
{
    char in[128], out[128], log[128], tmp[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 0), 0);
    setenv("VR_TEST_FRAME_DELAY_MS", "1000", 1); /* a chunk takes 10 s */
    pid_t p = run_small(out, log, NULL);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    cr_assert(log_seen(log, "frames [1-9]", 60000), "no frame done");
    temp_dir_of(log, tmp, sizeof tmp);
    kill(p, SIGINT);
    cr_assert(log_seen(log, "interrupted; stopping", 10000), "the first Ctrl-C not heard");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(p, SIGINT);
    int rc = tproc_wait(p, 30000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(rc, 130, "exit %d", rc);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_eq(tsh("grep -q 'interrupted again; stopping at once' '%s'", log), 0,
                 "the second Ctrl-C not said");
    cr_assert_lt(took, 1.5, "the second Ctrl-C still took %.1f s (the worker's grace is 2 s)",
                 took);
    cr_assert_neq(tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1), 0, "processes of %s still run", tmp);
}

Test(dist_run, dead_worker_ends_the_run_with_a_reason)
{
    char out[128], log[128], tmp[128];
    pid_t p = start_run_mid_job(out, log, tmp, sizeof tmp);
    /* the lease is 30 s: without the check vrctl would wait far longer */
    cr_assert_eq(tsh("pkill -KILL -f '[v]r-worker serve .*%s'", tmp), 0, "no worker to kill");
    int rc = tproc_wait(p, 15000);
    if (rc != 1)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 1, "exit %d", rc);
    cr_assert_eq(tsh("grep -q 'a worker killed by signal 9' '%s'", log), 0, "death not reported");
    cr_assert_eq(tsh("grep -q 'cannot finish: no worker is left' '%s'", log), 0, "no reason given");
    assert_nothing_left(tmp, out);
}

/* Issue 27, finding 12: a kill -9 of vrctl cannot clean up. Its fleet dies
 * with it (SIGKILL on the parent's death, not a drain of minutes), and the
 * next run removes the temp dir, whose owner is gone. */
Test(dist_run, kill_9_leaves_no_process_and_the_next_run_reaps_its_temp)
{
    char out[128], log[128], tmp[128], in2[128], out2[128], log2[128];
    /* its own temp root: another test's run would reap the old dir too */
    setenv("TMPDIR", W, 1);
    /* slow frames: a worker that drained its chunk would outlive the check */
    setenv("VR_TEST_FRAME_DELAY_MS", "300", 1);
    pid_t p = start_run_mid_job(out, log, tmp, sizeof tmp);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    kill(p, SIGKILL);
    tproc_wait(p, 10000);
    int alive = 1;
    for (int i = 0; i < 100 && alive; i++) {
        alive = tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1) == 0;
        tmsleep(50);
    }
    cr_assert(!alive, "processes of %s outlived vrctl by 5 s", tmp);
    cr_assert_eq(access(tmp, F_OK), 0, "kill -9 cannot have removed %s", tmp);
    /* kept for --resume; a run of another job leaves it until nobody has
     * resumed it for a day (RUN_TEMP_KEEP_S): make it that old */
    cr_assert_eq(tsh("touch -d '2 days ago' '%s'", tmp), 0);

    snprintf(in2, sizeof in2, "%s/in2.mp4", W);
    snprintf(out2, sizeof out2, "%s/out2.mkv", W);
    snprintf(log2, sizeof log2, "%s/run2.log", W);
    cr_assert_eq(tclip_make(in2, 1, 96, 5, 0), 0);
    const char *argv[] = { "vrctl", "run", in2, "-o", out2, "--cpu", "--profile", "fast", NULL };
    int rc = tproc_wait(tproc_spawn("vrctl", argv, log2), 90000);
    unsetenv("TMPDIR");
    if (rc)
        tsh("cat '%s' >&2", log2);
    cr_assert_eq(rc, 0);
    cr_assert_neq(access(tmp, F_OK), 0, "the next run left %s", tmp);
    cr_assert_eq(tsh("grep -q 'removed %s, left by a run that was stopped' '%s'", tmp, log2), 0);
}

/* No --chunk-seconds: the run picks chunks that fill its workers in whole
 * waves (4 s of 0.5 s GOPs over 2 workers: two chunks of 2 s), and, as a
 * serve fleet's auto length, they are cut again for a worker that comes
 * free (issue 43: a run's slots warm one after another). */
Test(dist_run, chunk_length_chosen_from_its_workers)
{
    char in[128], out[128], log[128], n[64];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 4, 128, 5, 0), 0);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "2", "--profile",
                           "fast", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    int rc = tproc_wait(p, 90000);
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(tsh("grep -q 'chunks of 2.00 s (4.0 s over 2 workers)' '%s'", log), 0);
    cr_assert_eq(tsh("grep -q 'planned 2 chunks as ranges .*cut again for idle workers' '%s'",
                     log), 0, "the run's chunks are not cut again");
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 40);
}

/* Without --workers, a CPU run starts a worker per core it may run on:
 * one on two cores took twice as long (issue 45, item 7). */
Test(dist_run, cpu_workers_default_to_one_per_core)
{
    char in[128], out[128], log[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 2, 128, 5, 0), 0);
    const char *two[] = { "taskset", "-c", "0,1", NULL };
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--profile", "fast", NULL };
    int rc = tproc_wait(tproc_spawn_under(two, "vrctl", argv, log), 90000);
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(tsh("grep -q 'vrctl run: 2 CPU workers' '%s'", log), 0, "not 2 workers on 2 cores");
}

/* The run's workers warm for the source while the controller plans it
 * (serve --warm-from the input): each says so, and the first chunks take
 * the warmed decoder instead of a new one (issue 43). */
Test(dist_run, its_workers_warm_for_the_source)
{
    char in[128], out[128], log[128], kept[256] = "", n[64] = "";
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 4, 128, 5, 0), 0);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "2", "--profile",
                           "fast", "--chunk-seconds", "1", "--keep-temp", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    int rc = tproc_wait(p, 90000);
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    tsh_out(kept, sizeof kept, "sed -n 's/^vrctl run: kept \\([^ ]*\\) .*/\\1/p' '%s' | tail -1",
            log);
    kept[strcspn(kept, "\n")] = '\0';
    cr_assert_neq(kept[0], '\0', "no kept dir announced");
    tsh_out(n, sizeof n, "cat '%s'/worker-cpu*.log | grep -c 'warmed for h264:.* (--warm-from)'",
            kept);
    cr_assert_eq(atoi(n), 2, "%s workers said they warmed", n);
    cr_assert_eq(tsh("cat '%s'/worker-cpu*.log | grep -q 'its decoder warmed before the first "
                     "chunk'", kept), 0, "no chunk took a warmed decoder");
    tsh("rm -rf '%s'", kept);
}


/* Waits for run p's job to be done (its log), then for the run to exit
 * well; returns the seconds from the one to the other. */
static double exit_after_done(pid_t p, const char *log)
{
    cr_assert(log_seen(log, ": done in [0-9.]+ s", 90000), "the job never ended");
    double t0 = tnow_s();
    int rc = tproc_wait(p, 90000);
    double took = tnow_s() - t0;
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    return took;
}
/* Once the job is done (its output complete and durable) the run ends
 * without waiting for its workers' drain and teardown, which on a GPU
 * takes seconds (releasing decoders, engines, the context: issue 43). The
 * workers here take 60 s to exit after their drain (a test hook); the run
 * gave them 10 s before it killed them, and now kills them once its
 * controller is gone: nothing of theirs is left behind either way. */
Test(dist_run, a_done_run_does_not_wait_for_its_workers_to_exit)
{
    char in[128], out[128], log[128], tmp[128], n[64];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 3, 128, 5, 1), 0);
    setenv("VR_TEST_SERVE_EXIT_DELAY_MS", "60000", 1);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "2", "--profile",
                           "fast", "--chunk-seconds", "1", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    unsetenv("VR_TEST_SERVE_EXIT_DELAY_MS");
    double took = exit_after_done(p, log);
    cr_assert_lt(took, 5, "the run took %.1f s after the job was done", took);
    cr_assert_neq(tsh("grep -qE 'connection lost|unreachable' '%s'", log), 0,
                  "the Redis the run stopped itself is reported lost");
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);
    temp_dir_of(log, tmp, sizeof tmp);
    cr_assert_neq(tmp[0], '\0', "no temp dir announced");
    cr_assert_neq(access(tmp, F_OK), 0, "%s left behind", tmp);
    cr_assert_neq(tsh("pgrep -f '[/]%s' >/dev/null", tmp + 1), 0, "processes of %s still run", tmp);
}

/* The same end with the controller's read blocking 30 s (a test hook; it
 * blocks 0.5 s): the run wakes it (CLIENT UNBLOCK) instead of waiting for
 * the read, or 5 s, before it kills it; the controller stops by itself
 * and says so in its log. */
Test(dist_run, a_done_run_wakes_its_controller_from_its_read)
{
    char in[128], out[128], log[128], kept[256] = "";
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 2, 128, 5, 0), 0);
    setenv("VR_TEST_CTL_READ_BLOCK_MS", "30000", 1);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "1", "--profile",
                           "fast", "--keep-temp", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    unsetenv("VR_TEST_CTL_READ_BLOCK_MS");
    double took = exit_after_done(p, log);
    tsh_out(kept, sizeof kept, "sed -n 's/^vrctl run: kept \\([^ ]*\\) .*/\\1/p' '%s' | tail -1",
            log);
    kept[strcspn(kept, "\n")] = '\0';
    cr_assert_neq(kept[0], '\0', "no kept dir announced");
    int stopped = tsh("grep -q 'stopping; redis round trips' '%s/controller.log'", kept) == 0;
    tsh("rm -rf '%s'", kept);
    cr_assert(stopped, "the controller did not stop by itself");
    cr_assert_lt(took, 4, "the run took %.1f s after the job was done", took);
}

/* The run ends with its job, not a watch's pause later: the watch waits
 * for the job's next event, the "done" among them, instead of sleeping
 * its pause out (lengthened to 60 s here by a test hook; 0.3 s). */
Test(dist_run, the_run_ends_with_its_job_not_a_pause_later)
{
    char in[128], out[128], log[128];
    snprintf(in, sizeof in, "%s/in.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    cr_assert_eq(tclip_make(in, 2, 128, 5, 0), 0);
    setenv("VR_TEST_WATCH_PAUSE_MS", "60000", 1);
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "1", "--profile",
                           "fast", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    unsetenv("VR_TEST_WATCH_PAUSE_MS");
    int t = 0;
    for (; t < 1800 && access(out, F_OK) != 0; t++) /* published as the job is done */
        tmsleep(50);
    cr_assert_lt(t, 1800, "no output in 90 s");
    double t0 = tnow_s();
    cr_assert(log_seen(log, ": done in [0-9.]+ s", 90000), "the run never said the job ended");
    double took = tnow_s() - t0;
    cr_assert_eq(tproc_wait(p, 30000), 0);
    cr_assert_lt(took, 10, "the run said its job ended %.1f s after the output was there", took);
}

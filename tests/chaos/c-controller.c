/*
 * c-controller.c - chaos: faults of controllers. kill -9 during the
 * enqueue (mid-split), after the split, and mid-stitch, each replaced by a
 * fresh controller; two controllers sharing ten jobs; a controller paused
 * (SIGSTOP) inside its stitch while another takes the job over, before and
 * after it published: it neither replaces nor removes the other's output;
 * a controller's start sweeps the temporary outputs dead ones left beside
 * the recent jobs' outputs; a controller stalled between its publish check
 * and its rename says why its rename failed.
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(chaos_ctl, .fini = chaos_teardown, .timeout = 300);

static pid_t controller_with(const char *env, int ms)
{
    char v[16];
    snprintf(v, sizeof v, "%d", ms);
    setenv(env, v, 1);
    pid_t p = chaos_controller();
    unsetenv(env);
    return p;
}

Test(chaos_ctl, kill9_during_enqueue)
{
    chaos_up(0, 3, 0, 0, 100);
    chaos_kill9(&CH.d.ctl);
    controller_with("VR_TEST_SPLIT_DELAY_MS", 400);
    chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 5, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    char ck[128], v[32] = "";
    rq_key_chunk(ck, sizeof ck, id, 1);
    for (int t = 0; t < 60000 && !v[0]; t += 10) {
        chaos_hget(ck, "state", v, sizeof v);
        if (!v[0])
            chaos_msleep(10);
    }
    cr_assert(v[0], "chunk 1 was never queued");
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    chaos_hget(jk, "state", v, sizeof v);
    cr_assert_str_eq(v, "splitting", "the split ended before the kill");
    chaos_kill9(&CH.d.ctl);
    chaos_controller();
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
}

Test(chaos_ctl, kill9_after_the_split)
{
    chaos_up(0, 3, 1, 100, 100);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job(id, "state", "running", 60000);
    chaos_kill9(&CH.d.ctl);
    chaos_controller();
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
}

Test(chaos_ctl, kill9_mid_stitch)
{
    /* The stitch waits 1 s after it starts; the kill lands there. Nothing
     * is published by the dead one; the next controller (once the dead
     * one's heartbeat key expires) stitches again. */
    chaos_up(0, 3, 0, 0, 100);
    chaos_kill9(&CH.d.ctl);
    controller_with("VR_TEST_STITCH_DELAY_MS", 1000);
    chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job(id, "state", "stitching", 120000);
    chaos_kill9(&CH.d.ctl);
    cr_assert_neq(access(out, F_OK), 0, "the output was published mid-stitch");
    /* the dead one's stitch-ahead left its temporary output beside it */
    char dir[400];
    snprintf(dir, sizeof dir, "%s", out);
    *strrchr(dir, '/') = '\0';
    cr_assert_eq(tsh("ls -a '%s' | grep -q '^\\.out\\.mkv\\.tmp-'", dir), 0,
                 "no temporary output was left: the test proves nothing");
    chaos_controller();
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
    /* the controller that claimed the stitch removed it */
    cr_assert_neq(tsh("ls -a '%s' | grep '^\\.out\\.mkv\\.tmp-'", dir), 0,
                  "the dead stitch's temporary output is still there");
}

Test(chaos_ctl, two_controllers_ten_jobs)
{
    chaos_up(0, 5, 3, 0, 100);
    pid_t first = CH.d.ctl;
    chaos_controller(); /* a second one */
    const char *in = chaos_clip("in.mp4", 2, 160);
    char ids[10][64], outs[10][400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "out%d.mkv", i);
        chaos_submit(in, name, NULL, ids[i], outs[i]);
    }
    for (int i = 0; i < 10; i++)
        chaos_watch(ids[i], 0, 240000);
    for (int i = 0; i < 10; i++)
        chaos_check_done(ids[i], in, outs[i], ref);
    chaos_kill9(&first);
}

Test(chaos_ctl, two_controllers_stitch_a_job_ahead_once)
{
    /* Every controller's audit stitched every running job ahead into a
     * temp of its own beside the output (N controllers, N full copies),
     * and the one that claimed the stitch removed the others' while they
     * wrote. Now only the job's holder stitches it, ahead and at the end
     * (issue 26, finding 8). Slow chunks keep the stitch ahead going. */
    chaos_up(0, 5, 1, 300, 100);
    chaos_controller(); /* a second one */
    const char *in = chaos_clip("in.mp4", 6, 160);
    char id[64], out[400], ref[400], n[32], state[32] = "";
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job_min(id, "chunks_done", 1, 60000);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    int most = 0;
    for (int t = 0; t < 2400 && strcmp(state, "done") && strcmp(state, "failed"); t++) {
        tsh_out(n, sizeof n, "ls -a '%s' | grep -c '^\\.out\\.mkv\\.tmp-'", CH.d.r.dir);
        if (atoi(n) > most)
            most = atoi(n);
        chaos_msleep(50);
        chaos_hget(jk, "state", state, sizeof state);
    }
    chaos_watch(id, 0, 120000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 30000);
    cr_assert_leq(most, 1, "%d temporary outputs beside %s at once", most, out);
    /* storage_drop_temps_of's line ("... from a writer (pid N) that no
     * longer holds it"; a refused done report's line holds those words too) */
    cr_assert_eq(chaos_log_has("from a writer (pid", 0), 0, "a controller removed another's temp");
}

/* Waits until the job's `controller` differs from `from` (another claim),
 * polling Redis directly: the test delays last at most a second. */
static void wait_controller_change(const char *id, const char *from, int timeout_ms)
{
    char jk[128], v[128] = "";
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t <= timeout_ms; t += 10) {
        chaos_hget(jk, "controller", v, sizeof v);
        if (v[0] && strcmp(v, from))
            return;
        chaos_msleep(10);
    }
    tsh("tail -30 '%s' >&2", CH.d.log);
    cr_assert_fail("job %s still held by %s after %d ms", id, v, timeout_ms);
}

Test(chaos_ctl, paused_stitcher_leaves_anothers_output)
{
    /* Issue 26, finding 3, as found: A takes over a dead controller's
     * stitch (so it has no stitch ahead) and is stopped inside it (the
     * stitch delay, 1 s); once A's heartbeat key expires B claims,
     * publishes, and the job is done; A wakes. It published over B's
     * output and then removed it, the job staying done with no file.
     * Chunks are kept (as in the runs): without them A's late
     * stitch fails on the missing chunk outputs instead. */
    chaos_up(0, 3, 0, 0, 100);
    chaos_kill9(&CH.d.ctl);
    CH.d.ctl_args[0] = "--keep-chunks";
    pid_t dead = controller_with("VR_TEST_STITCH_DELAY_MS", 1000);
    chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400], jk[128], first[128];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job(id, "state", "stitching", 120000);
    chaos_kill9(&dead);
    cr_assert_neq(access(out, F_OK), 0, "published before the kill: the test proves nothing");
    rq_key_job(jk, sizeof jk, id);
    chaos_hget(jk, "controller", first, sizeof first);
    pid_t a = controller_with("VR_TEST_STITCH_DELAY_MS", 1000);
    wait_controller_change(id, first, 60000); /* once the dead one's key expired */
    kill(a, SIGSTOP);
    chaos_controller(); /* B */
    chaos_watch(id, 0, 120000);
    cr_assert_eq(access(out, F_OK), 0, "B's output is not there");
    kill(a, SIGCONT);
    int noticed = chaos_log_has("its stitch was claimed by another controller meanwhile", 15000);
    chaos_check_done(id, in, out, ref);
    cr_assert(noticed, "the paused controller did not say it lost the stitch");
    chaos_check_no_temps(out, 5000);
    chaos_kill9(&a);
}

Test(chaos_ctl, paused_after_publishing_leaves_the_output)
{
    /* The same with the defaults, where the window is between A's publish
     * and its done (widened by VR_TEST_DONE_DELAY_MS): B publishes the same
     * stitch over A's and ends the job; A's done is refused, and the file
     * may be B's, so A leaves it. */
    chaos_up(0, 3, 0, 0, 100);
    chaos_kill9(&CH.d.ctl);
    pid_t a = controller_with("VR_TEST_DONE_DELAY_MS", 1000);
    chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400], state[32];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_file(out, 120000);
    kill(a, SIGSTOP);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    chaos_hget(jk, "state", state, sizeof state);
    cr_assert_str_eq(state, "stitching", "A recorded done before the stop: the test proves nothing");
    chaos_controller(); /* B */
    chaos_watch(id, 0, 120000);
    kill(a, SIGCONT);
    int noticed = chaos_log_has("left as it is", 15000);
    chaos_check_done(id, in, out, ref);
    cr_assert(noticed, "the paused controller did not say it lost the stitch");
    chaos_check_no_temps(out, 5000);
    chaos_kill9(&a);
}

Test(chaos_ctl, start_sweeps_leftover_temps_beside_outputs)
{
    /* Issue 26, finding 5: the start-up sweep looked under the storage
     * only, and a stitch's temp lies beside the job's output. Issue 42,
     * finding 3: a temp goes when its owner's lease (its heartbeat key) has
     * lapsed in Redis, however fresh; one whose owner lives is kept however
     * old and whatever its pid; so is anything not named after a job's
     * output. */
    chaos_up(0, 3, 1, 0, 100);
    const char *in = chaos_clip("in.mp4", 2, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_watch(id, 0, 120000);
    pid_t dead = fork(); /* a pid that is no live process */
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char key[200];
    snprintf(key, sizeof key, RQ_WORKER_PREFIX "elsewhere:gpu0"); /* a worker alive on another host */
    redisReply *r = rq_cmd(CH.q, NULL, "SET %s 1 EX 120", key);
    cr_assert_not_null(r);
    freeReplyObject(r);
    char old[600], fresh[600], other[600];
    snprintf(old, sizeof old, "%s/.out.mkv.tmp-%d-0123abcd@c:gone:ctl:00000000", CH.d.r.dir,
             (int)getpid());
    snprintf(fresh, sizeof fresh, "%s/.out.mkv.tmp-%d-4567cdef@w:elsewhere:gpu0", CH.d.r.dir,
             (int)dead);
    snprintf(other, sizeof other, "%s/.notours.mkv.tmp-%d-89abcdef@c:gone:ctl:00000000",
             CH.d.r.dir, (int)dead);
    cr_assert_eq(tsh("touch '%s' '%s' '%s' && touch -d '-5 hours' '%s' '%s'", old, fresh, other,
                     fresh, other), 0);
    chaos_kill9(&CH.d.ctl);
    chaos_controller();
    for (int t = 0; t < 15000 && access(old, F_OK) == 0; t += 50)
        chaos_msleep(50);
    cr_assert_neq(access(old, F_OK), 0, "the lapsed owner's temp %s is still there", old);
    cr_assert_eq(access(fresh, F_OK), 0, "a live owner's old temp was removed");
    cr_assert_eq(access(other, F_OK), 0, "a file not named after a job's output was removed");
    unlink(fresh);
    unlink(other);
    chaos_check_done(id, in, out, ref);
}

/* Names in `dir` (ls -a) that match the grep pattern `re`, into out (one a
 * line); the count. */
static int names_matching(const char *dir, const char *re, char *out, size_t n)
{
    out[0] = 0;
    tsh_out(out, n, "find '%s' -name '.*' -type f | grep -E '%s'", dir, re);
    int k = 0;
    for (const char *p = out; *p; p++)
        k += *p == '\n';
    return k;
}

/* Issue 42, finding 3: a second controller starting "elsewhere" (prefix:
 * its own PID namespace, or its clock 2 h ahead) while the stitch waits on
 * a slow chunk. The stitch-ahead temp beside the output and the slow
 * worker's chunk temp, set untouched for hours (as a slow 8K chunk leaves
 * them), belong to a controller and a worker whose leases live: the new
 * controller's start-up sweep keeps both, the job ends identical to one
 * `process`, and every chunk ran once. Before, its sweep judged them by a
 * pid it could not see and by its own clock, and removed both. */
static void controller_elsewhere_keeps_live_temps(const char *const *prefix)
{
    chaos_up(0, 3, 0, 0, 100);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400], stitch[2048], chunk[2048], dir[600], v[32];
    chaos_ref(in, "ref.mkv", ref);
    chaos_worker(100, 0); /* A: chunk 0, then chunk 2, about a second each */
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_chunk(id, 0, "state", "running", 60000);
    chaos_worker(1500, 0); /* B: chunk 1, 1.5 s a frame */
    chaos_wait_chunk(id, 1, "state", "running", 60000);
    chaos_wait_chunk(id, 0, "state", "done", 60000);
    snprintf(dir, sizeof dir, "%s/jobs/%s", CH.d.storage, id);
    int ns = 0, nc = 0;
    for (int t = 0; t < 30000 && !(ns && nc); t += 100) {
        ns = names_matching(CH.d.r.dir, "/\\.out\\.mkv\\.tmp-", stitch, sizeof stitch);
        nc = names_matching(dir, "/\\.00001\\.[a-z0-9]+\\.tmp-", chunk, sizeof chunk);
        chaos_msleep(100);
    }
    cr_assert(ns == 1 && nc == 1, "no stitch-ahead temp (%d) or slow chunk temp (%d) to keep",
              ns, nc);
    stitch[strcspn(stitch, "\n")] = 0;
    chunk[strcspn(chunk, "\n")] = 0;
    chaos_wait_chunk(id, 1, "state", "running", 0); /* still waiting on it */
    cr_assert_eq(tsh("touch -d '-3 hours' '%s' '%s'", stitch, chunk), 0);

    pid_t first = CH.d.ctl;
    pid_t second = chaos_controller_under(prefix);
    CH.d.ctl = first;
    /* its heartbeat comes after its start-up sweeps: two controllers listed */
    long long n = 0;
    for (int t = 0; t < 30000 && n < 2; t += 50) {
        redisReply *r = rq_cmd(CH.q, NULL, "SCARD %s", RQ_CONTROLLERS);
        n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        if (r)
            freeReplyObject(r);
        chaos_msleep(50);
    }
    cr_assert_eq(n, 2, "the second controller did not start");
    char ck[128];
    rq_key_chunk(ck, sizeof ck, id, 1);
    chaos_hget(ck, "state", v, sizeof v);
    cr_assert_str_eq(v, "running", "the slow chunk ended before the sweep: the test proves nothing");
    cr_assert_eq(access(stitch, F_OK), 0, "the waiting stitch's temp %s was removed", stitch);
    cr_assert_eq(access(chunk, F_OK), 0, "the slow chunk's temp %s was removed", chunk);
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(chaos_chunk_ll(id, i, "attempts"), 1, "chunk %d was computed twice", i);
    cr_assert_eq(chaos_log_has("whose lease has lapsed", 0), 0, "a live owner's temp was swept");
    cr_assert_eq(chaos_log_has("from a writer (pid", 0), 0, "a controller removed another's temp");
    chaos_kill9(&second);
    /* the second controller is gone with its pid, not a wrapper alone (the
     * faketime one forked it and left it running; unshare --kill-child's
     * goes on its parent's death, a moment later) */
    int left = tproc_left("vr-controller", CH.d.r.dir);
    for (int t = 0; t < 10000 && left > 1; t += 100) {
        chaos_msleep(100);
        left = tproc_left("vr-controller", CH.d.r.dir);
    }
    cr_assert_eq(left, 1, "%d controllers left running, not the first alone", left);
}

Test(chaos_ctl, controller_in_its_own_pid_namespace_keeps_live_temps)
{
    const char *prefix[] = { "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", NULL };
    controller_elsewhere_keeps_live_temps(prefix);
}

Test(chaos_ctl, controller_with_its_clock_ahead_keeps_live_temps)
{
    const char *const *prefix = tfaketime("+2h");
    cr_assert(prefix, "libfaketime is not installed");
    controller_elsewhere_keeps_live_temps(prefix);
}

Test(chaos_ctl, stalled_before_the_rename_says_why_it_failed)
{
    /* Issue 42 (minor): A stalls between its publish check and its rename
     * (a test hook, stopped there); B claims the stitch once A's heartbeat
     * key expires, drops A's temporary output, publishes and ends the job.
     * A wakes, its rename fails, and it said nothing about it. */
    chaos_up(0, 3, 0, 0, 100);
    chaos_kill9(&CH.d.ctl);
    pid_t a = controller_with("VR_TEST_PUBLISH_DELAY_MS", 1000);
    chaos_worker(0, 0);
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    cr_assert(chaos_log_has("between the publish check and the rename", 120000),
              "A never reached its rename");
    kill(a, SIGSTOP);
    cr_assert_neq(access(out, F_OK), 0, "A published before the stop: the test proves nothing");
    chaos_controller(); /* B */
    chaos_watch(id, 0, 120000);
    kill(a, SIGCONT);
    int noticed = chaos_log_has("not failed by this controller", 15000);
    chaos_check_done(id, in, out, ref);
    cr_assert(noticed, "the stalled controller's failed rename left no line in its log");
    chaos_check_no_temps(out, 5000);
    chaos_kill9(&a);
}

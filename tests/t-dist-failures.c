/*
 * t-dist-failures.c - the system under failure, with CPU workers and a real
 * redis-server: a worker killed with SIGKILL mid-chunk (the job completes,
 * output identical to a clean run); a corrupt chunk dead-lettered at its
 * first attempt (a permanent error: retrying cannot help) failing its job
 * with a reason while another job completes, and a
 * bad job record failing alone; a controller killed mid-job and restarted
 * (plus a lost chunk XADD) finishing the job; Redis restarted mid-job (AOF)
 * losing nothing; cancel and retry; cancel mid-chunk abandons the chunk;
 * one damaged packet concealed (counted in the events) or, with
 * --on-decode-error fail, failing the job.
 */
#include "rq.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_failures, .fini = teardown, .timeout = 150);

static void connect_q(void)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
}

/* Polls HGET key field until it equals `want` (or, when want is NULL, until
 * it is an integer >= min). Fails the test after timeout_ms. */
static void wait_field(const char *key, const char *field, const char *want, long long min,
                       int timeout_ms)
{
    char v[256] = "";
    for (int t = 0; t < timeout_ms; t += 10) {
        v[0] = '\0';
        if (rq_hget(Q, key, field, v, sizeof v, NULL) > 0) {
            if (want ? strcmp(v, want) == 0 : atoll(v) >= min)
                return;
        }
        tmsleep(10);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("%s %s is '%s' after %d ms", key, field, v, timeout_ms);
}

static void job_field(const char *id, const char *field, char *out, size_t n)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    out[0] = '\0';
    rq_hget(Q, jk, field, out, n, NULL);
}

static void video_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:v -c copy -f framemd5 - | grep -v '^#' | md5sum",
            path);
}

static int frames_of(const char *path)
{
    char b[64];
    tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", path);
    return atoi(b);
}

Test(dist_failures, kill9_worker_mid_chunk_output_identical_to_clean_run)
{
    /* the first worker slowed (100 ms a frame, 2 s a chunk) so the kill
     * lands mid-chunk; the profile (fast) is not what is tested */
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    cr_assert_eq(tdist_start(&D, 0, 2, 1, 1), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    connect_q();
    char in[400], out1[400], out2[400], id1[64], id2[64], ck[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out1, sizeof out1, "%s/killed.mp4", D.r.dir);
    snprintf(out2, sizeof out2, "%s/clean.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 240, 10, 1), 0);
    const char *two_s[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, in, out1, two_s, id1, sizeof id1), 0);

    /* The only worker dies with SIGKILL while it holds chunk 0. */
    rq_key_chunk(ck, sizeof ck, id1, 0);
    wait_field(ck, "state", "running", 0, 30000);
    kill(D.w[0], SIGKILL);
    waitpid(D.w[0], NULL, 0);
    D.w[0] = 0;
    tdist_worker(&D);
    tdist_worker(&D);
    int rc = tdist_watch(&D, id1, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    long long att = 0;
    rq_hget_ll(Q, ck, "attempts", &att, NULL);
    cr_assert_geq(att, 2, "chunk 0 ran %lld times", att);
    /* The reclaim is in the job's events; the done chunk carries no stale
     * error, and `vrctl events` shows the requeue with its worker. */
    char why[256] = "";
    cr_assert_eq(rq_hget(Q, ck, "error", why, sizeof why, NULL), 0, "stale error: %s", why);
    static char ev[16384];
    const char *eargs[] = { "events", id1, NULL };
    cr_assert_eq(tdist_vrctl(&D, ev, sizeof ev, eargs), 0);
    cr_assert(strstr(ev, "stopped renewing its lease") && strstr(ev, "requeued"), "%s", ev);

    cr_assert_eq(tdist_submit(&D, in, out2, two_s, id2, sizeof id2), 0);
    cr_assert_eq(tdist_watch(&D, id2, 60000), 0);
    char a[128], b[128];
    video_md5(out1, a, sizeof a);
    video_md5(out2, b, sizeof b);
    cr_assert_str_eq(a, b, "output after a kill -9 differs from a clean run");
    cr_assert_eq(frames_of(out1), 40);
}

/* A chunk whose worker died goes ahead of the chunks still queued behind
 * it (the priority stream): at the back it would be the job's tail. One
 * worker holds chunk 0 and is killed; the other runs the rest one by one,
 * and must take chunk 0 again before the last one. The workers are slowed
 * (VR_TEST_FRAME_DELAY_MS) so the queue is still full after the lease. */
Test(dist_failures, a_chunk_tried_again_runs_before_the_queue_behind_it)
{
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    cr_assert_eq(tdist_start(&D, 0, 1, 1, 1), 0);
    connect_q();
    char in[400], out[400], id[64], ck0[128], ck5[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 6, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_chunk(ck0, sizeof ck0, id, 0);
    rq_key_chunk(ck5, sizeof ck5, id, 5);
    wait_field(ck0, "state", "running", 0, 30000);
    kill(D.w[0], SIGKILL);
    waitpid(D.w[0], NULL, 0);
    D.w[0] = 0;
    tdist_worker(&D);
    int rc = tdist_watch(&D, id, 120000);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    long long att = 0, s0 = 0, s5 = 0;
    rq_hget_ll(Q, ck0, "attempts", &att, NULL);
    rq_hget_ll(Q, ck0, "started_ms", &s0, NULL);
    rq_hget_ll(Q, ck5, "started_ms", &s5, NULL);
    cr_assert_geq(att, 2, "chunk 0 was not tried again");
    cr_assert_lt(s0, s5, "chunk 0, tried again, waited behind the whole queue");
}

Test(dist_failures, corrupt_chunk_dead_lettered_other_jobs_go_on)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0);
    connect_q();
    char in[400], outa[400], outb[400], ida[64], idb[64], jk[128], chunk[512];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(outa, sizeof outa, "%s/a.mp4", D.r.dir);
    snprintf(outb, sizeof outb, "%s/b.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    /* chunk files (--chunking copy): one of them is spoiled below */
    const char *two[] = { "--max-attempts", "2", "--chunking", "copy", NULL };
    cr_assert_eq(tdist_submit(&D, in, outa, two, ida, sizeof ida), 0);
    cr_assert_eq(tdist_submit(&D, in, outb, NULL, idb, sizeof idb), 0);
    rq_key_job(jk, sizeof jk, ida);
    wait_field(jk, "state", "running", 0, 30000);
    rq_key_job(jk, sizeof jk, idb);
    wait_field(jk, "state", "running", 0, 30000);

    /* Chunk 1 of job A becomes garbage before any worker sees it. */
    snprintf(chunk, sizeof chunk, "%s/jobs/%s/in/00001.mkv", D.storage, ida);
    cr_assert_eq(tsh("head -c 20000 /dev/urandom > '%s'", chunk), 0);
    /* A bad job record and an entry with a hostile id, straight into Redis. */
    redisReply *r = rq_cmd(Q, NULL, "HSET vr:job:badjson-1 spec {not-json state queued");
    freeReplyObject(r);
    r = rq_cmd(Q, NULL, "SADD vr:active badjson-1");
    freeReplyObject(r);
    r = rq_cmd(Q, NULL, "XADD %s * job badjson-1", RQ_JOBS);
    freeReplyObject(r);
    r = rq_cmd(Q, NULL, "XADD %s * job ../../etc", RQ_JOBS);
    freeReplyObject(r);

    tdist_worker(&D);
    tdist_worker(&D);
    cr_assert_eq(tdist_watch(&D, ida, 60000), 1, "job A did not fail");
    cr_assert_eq(tdist_watch(&D, idb, 60000), 0, "job B did not complete");
    char err[512];
    job_field(ida, "error", err, sizeof err);
    cr_assert(strstr(err, "chunk 1") && strstr(err, "permanent"), "%s", err);
    cr_assert(strstr(err, "worker ") && strstr(err, ":cpu:"), "no worker named: %s", err); /* 42 */
    char ck[128];
    rq_key_chunk(ck, sizeof ck, ida, 1);
    long long att = 0;
    rq_hget_ll(Q, ck, "attempts", &att, NULL);
    cr_assert_eq(att, 1, "a permanent error was retried: %lld attempts", att);
    r = rq_cmd(Q, NULL, "XLEN %s", RQ_DEAD);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(frames_of(outb), 30);
    job_field("badjson-1", "state", err, sizeof err);
    cr_assert_str_eq(err, "failed");
    job_field("badjson-1", "error", err, sizeof err);
    cr_assert(strstr(err, "job spec"), "%s", err);

    /* retry of A: its dead chunk is still corrupt, so it fails again, with
     * the attempt count started over (and again not retried). */
    const char *rargs[] = { "retry", ida, NULL };
    cr_assert_eq(tdist_vrctl(&D, err, sizeof err, rargs), 0);
    cr_assert_eq(tdist_watch(&D, ida, 60000), 1);
    rq_hget_ll(Q, ck, "attempts", &att, NULL);
    cr_assert_eq(att, 1, "attempts after retry: %lld", att);
}

Test(dist_failures, damaged_packet_concealed_by_default_or_fails_the_job)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    connect_q();
    char src[400], in[400], out[400], id[64], buf[8192];
    snprintf(src, sizeof src, "%s/clean.mp4", D.r.dir);
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(src, 3, 160, 10, 0), 0);
    cr_assert_eq(tv_damage_packet(src, in, 13), 0);

    const char *fail[] = { "--on-decode-error", "fail", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, fail, id, sizeof id), 0);
    cr_assert_eq(tdist_watch(&D, id, 60000), 1, "a damaged packet did not fail the job");
    job_field(id, "error", buf, sizeof buf);
    cr_assert(strstr(buf, "cannot decode") || strstr(buf, "corrupt frame"), "%s", buf);

    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "a damaged packet failed the job by default");
    const char *eargs[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, eargs), 0);
    cr_assert(strstr(buf, "decode errors concealed"), "not in the events: %s", buf);
    int n = frames_of(out);
    cr_assert(n >= 29 && n <= 30, "%d frames of 30", n);
}

Test(dist_failures, controller_restarted_mid_job_finishes_it_and_lost_xadd)
{
    cr_assert_eq(tdist_start(&D, 0, 3, 1, 0), 0);
    connect_q();
    char in[400], out[400], id[64], jk[128], ck[128], entry[64];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 5, 160, 5, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_job(jk, sizeof jk, id);
    wait_field(jk, "state", "running", 0, 30000);

    /* Chunk 3's queue entry is lost (as after a Redis crash). */
    rq_key_chunk(ck, sizeof ck, id, 3);
    cr_assert_eq(rq_hget(Q, ck, "entry", entry, sizeof entry, NULL), 1);
    redisReply *r = rq_cmd(Q, NULL, "XDEL %s %s", RQ_CHUNKS, entry);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);

    tdist_worker(&D);
    wait_field(jk, "chunks_done", NULL, 1, 30000);
    kill(D.ctl, SIGKILL);
    waitpid(D.ctl, NULL, 0);
    tdist_controller(&D);
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(frames_of(out), 50);
    char ctl[160];
    job_field(id, "controller", ctl, sizeof ctl);
    cr_assert_str_neq(ctl, "", "no controller recorded");
}

/* Reports of kind `kind` in vr:reports. */
static int reports_of(const char *kind)
{
    redisReply *r = rq_cmd(Q, NULL, "XRANGE %s - +", RQ_REPORTS);
    int n = tentries_with(r, "kind", kind);
    freeReplyObject(r);
    return n;
}

/* A controller read the done reports and died before handling them: the
 * workers renew those chunks no more, so their leases lapse before the
 * reports look orphaned to the deep audit (5 s). The next controller
 * handles them before it reclaims leases, and each chunk commits once
 * under its first attempt: it used to be reclaimed and run again (seen as
 * "chunk 0 ran 2 times" in dist_stream's kill mid-split, under ASan). */
Test(dist_failures, done_reports_a_dead_controller_read_are_handled_before_a_reclaim)
{
    cr_assert_eq(tdist_start(&D, 0, 2, 1, 0), 0);
    connect_q();
    char in[400], out[400], id[64], jk[128], ck[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    const char *one_s[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, one_s, id, sizeof id), 0);
    rq_key_job(jk, sizeof jk, id);
    wait_field(jk, "state", "running", 0, 30000);
    long long total = 0;
    rq_hget_ll(Q, jk, "chunks_total", &total, NULL);
    cr_assert_geq(total, 2);
    kill(D.ctl, SIGKILL);
    waitpid(D.ctl, NULL, 0);

    /* no controller: a worker does every chunk, its reports wait */
    tdist_worker(&D);
    for (int t = 0; t < 60000 && reports_of("done") < total; t += 50)
        tmsleep(50);
    cr_assert_eq(reports_of("done"), total, "the worker did not report every chunk done");
    /* a controller reads them all, acks all but the done reports, dies */
    redisReply *r = rq_cmd(Q, NULL, "XREADGROUP GROUP %s dead:ctl:1 COUNT 10000 STREAMS %s >",
                           RQ_G_CONTROLLERS, RQ_REPORTS);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    const redisReply *msgs = r->element[0]->element[1];
    for (size_t i = 0; i < msgs->elements; i++)
        if (!tentry_has(msgs->element[i], "kind", "done"))
            freeReplyObject(rq_cmd(Q, NULL, "XACK %s %s %s", RQ_REPORTS, RQ_G_CONTROLLERS,
                                   msgs->element[i]->element[0]->str));
    freeReplyObject(r);
    tmsleep(2500); /* every lease lapses */

    tdist_controller(&D);
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    for (int i = 0; i < total; i++) {
        long long attempts = 0, deaths = 0, commits = 0;
        rq_key_chunk(ck, sizeof ck, id, i);
        rq_hget_ll(Q, ck, "attempts", &attempts, NULL);
        rq_hget_ll(Q, ck, "deaths", &deaths, NULL);
        rq_hget_ll(Q, ck, "commits", &commits, NULL);
        cr_assert(attempts == 1 && deaths == 0 && commits == 1,
                  "chunk %d: attempts %lld deaths %lld commits %lld", i, attempts, deaths,
                  commits);
    }
    cr_assert_eq(frames_of(out), 20);
}

Test(dist_failures, redis_restart_mid_job_loses_nothing)
{
    cr_assert_eq(tdist_start(&D, 1, 3, 1, 2), 0);
    connect_q();
    char in[400], out[400], id[64], jk[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 5, 200, 5, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_job(jk, sizeof jk, id);
    wait_field(jk, "chunks_done", NULL, 1, 30000);
    tredis_kill(&D.r);
    tmsleep(1500);
    cr_assert_eq(tredis_restart(&D.r), 0);
    rq_free(&Q);
    connect_q();
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(frames_of(out), 50);
    /* Every process is still alive: nobody crashed on the outage. */
    cr_assert_eq(kill(D.ctl, 0), 0);
    cr_assert_eq(waitpid(D.w[0], NULL, WNOHANG), 0);
    cr_assert_eq(waitpid(D.w[1], NULL, WNOHANG), 0);
}

Test(dist_failures, cancel_then_retry)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0);
    connect_q();
    char in[400], out[400], id[64], jk[128], buf[256];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 128, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_job(jk, sizeof jk, id);
    wait_field(jk, "state", "running", 0, 30000);
    const char *cargs[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 0);
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 1, "cancelled twice");
    tdist_worker(&D);
    cr_assert_eq(tdist_watch(&D, id, 20000), 1);
    tmsleep(1500); /* the worker skips the cancelled job's chunks */
    job_field(id, "chunks_done", buf, sizeof buf);
    cr_assert_eq(atoi(buf), 0);
    const char *rargs[] = { "retry", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, rargs), 0);
    cr_assert_eq(tdist_watch(&D, id, 60000), 0);
    cr_assert_eq(frames_of(out), 30);
}

Test(dist_failures, lease_renewed_on_long_chunks_and_sigterm_drains)
{
    /* Lease 0.5 s (heartbeat 0.1 s), chunks that take longer: renewal must
     * keep every chunk on its first attempt. The chunks are made slow by the
     * worker itself (40 ms a frame, 30 frames: 1.2 s), whatever the machine. */
    cr_assert_eq(tdist_start(&D, 0, 0.5, 1, 0), 0);
    D.hb_ms = 100;
    setenv("VR_TEST_FRAME_DELAY_MS", "40", 1);
    tdist_worker(&D);
    connect_q();
    char in[400], out[400], id[64], ck[128], jk[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 6, 320, 30, 0), 0);
    const char *three[] = { "--chunk-seconds", "3", "--profile", "fast", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, three, id, sizeof id), 0);
    rq_key_chunk(ck, sizeof ck, id, 0);
    wait_field(ck, "state", "running", 0, 30000);

    /* SIGTERM: chunk 0 is finished and committed, chunk 1 is not taken. */
    kill(D.w[0], SIGTERM);
    int st;
    cr_assert_eq(waitpid(D.w[0], &st, 0), D.w[0]);
    D.w[0] = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker exit status %d", st);
    char v[64];
    rq_hget(Q, ck, "state", v, sizeof v, NULL);
    cr_assert_str_eq(v, "done", "the draining worker did not finish its chunk");
    rq_key_chunk(ck, sizeof ck, id, 1);
    rq_hget(Q, ck, "state", v, sizeof v, NULL);
    cr_assert_str_eq(v, "queued");

    tdist_worker(&D);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    cr_assert_eq(tdist_watch(&D, id, 60000), 0);
    rq_key_job(jk, sizeof jk, id);
    double longest = 0;
    for (int i = 0; i < 2; i++) {
        long long att = 0, t0 = 0, t1 = 0;
        rq_key_chunk(ck, sizeof ck, id, i);
        rq_hget_ll(Q, ck, "attempts", &att, NULL);
        rq_hget_ll(Q, ck, "started_ms", &t0, NULL);
        rq_hget_ll(Q, ck, "done_ms", &t1, NULL);
        cr_assert_eq(att, 1, "chunk %d was taken away from a live worker (%lld attempts)", i, att);
        if ((t1 - t0) / 1000.0 > longest)
            longest = (t1 - t0) / 1000.0;
    }
    cr_assert_gt(longest, 0.5, "chunks took %.2f s: not longer than the lease, test proves nothing",
                 longest);
}

/* Polls the processes' log for `needle`; 1 when seen within timeout_ms. */
static int log_has(const char *needle, int timeout_ms)
{
    for (int t = 0;; t += 50) {
        if (tsh("grep -qF -- '%s' '%s'", needle, D.log) == 0)
            return 1;
        if (t >= timeout_ms)
            return 0;
        tmsleep(50);
    }
}

Test(dist_failures, cancel_mid_chunk_abandons_it_and_the_worker_goes_on)
{
    /* Chunks made slow by the worker itself (300 ms a frame, 20 frames:
     * at least 6 s each), whatever the machine, so the cancel lands mid-chunk. */
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    D.hb_ms = 100;
    setenv("VR_TEST_FRAME_DELAY_MS", "300", 1);
    tdist_worker(&D);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    connect_q();
    char ina[400], inb[400], outa[400], outb[400], ida[64], idb[64], ck[128], buf[512];
    snprintf(ina, sizeof ina, "%s/a.mp4", D.r.dir);
    snprintf(inb, sizeof inb, "%s/b.mp4", D.r.dir);
    snprintf(outa, sizeof outa, "%s/a.mkv", D.r.dir);
    snprintf(outb, sizeof outb, "%s/b.mkv", D.r.dir);
    cr_assert_eq(tclip_make(ina, 4, 160, 10, 0), 0);
    cr_assert_eq(tclip_make(inb, 1, 160, 10, 0), 0);
    const char *two[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, ina, outa, two, ida, sizeof ida), 0);
    rq_key_chunk(ck, sizeof ck, ida, 0);
    wait_field(ck, "state", "running", 0, 30000);
    cr_assert_eq(tdist_submit(&D, inb, outb, two, idb, sizeof idb), 0);

    const char *cargs[] = { "cancel", ida, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 0);
    /* The heartbeat learns it from the renewal and the pipeline stops
     * mid-chunk: no output file, no commit. */
    char needle[160];
    snprintf(needle, sizeof needle, "job %s chunk 0: job ended; chunk abandoned", ida);
    int seen = log_has(needle, 30000);
    if (!seen)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(seen, "the worker did not abandon the cancelled chunk");
    cr_assert(log_has("cancelled at frame", 1000),
              "the chunk was not stopped mid-way");
    snprintf(buf, sizeof buf, "%s/jobs/%s/out/00000.mkv", D.storage, ida);
    cr_assert_neq(access(buf, F_OK), 0, "a cancelled chunk's output was written");

    /* The worker goes on with the other job; the cancelled one never moves. */
    int rc = tdist_watch(&D, idb, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(frames_of(outb), 10);
    job_field(ida, "state", buf, sizeof buf);
    cr_assert_str_eq(buf, "cancelled");
    job_field(ida, "chunks_done", buf, sizeof buf);
    cr_assert_eq(atoi(buf), 0, "chunks counted after the cancel");
    job_field(ida, "frames_done", buf, sizeof buf);
    cr_assert_eq(atoi(buf), 0);
    rq_hget(Q, ck, "state", buf, sizeof buf, NULL);
    cr_assert_str_neq(buf, "done");
}

Test(dist_failures, commit_during_redis_outage_is_retried_not_recomputed)
{
    /* Redis (AOF) goes away while the only worker is mid-chunk; the chunk
     * finishes during the outage, so its commit fails. Redis comes back
     * well within the lease (30 s): the worker must commit the finished
     * chunk once instead of dropping it for a recompute after the lease. */
    cr_assert_eq(tdist_start(&D, 1, 30, 1, 0), 0);
    D.hb_ms = 100;
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    tdist_worker(&D);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    connect_q();
    char in[400], out[400], id[64], ck[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 10, 0), 0);
    const char *two[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, two, id, sizeof id), 0);
    rq_key_chunk(ck, sizeof ck, id, 0);
    wait_field(ck, "state", "running", 0, 30000);
    tredis_kill(&D.r);
    rq_free(&Q);
    /* No guess at the chunk's length: wait until the worker has tried. */
    char needle[160];
    snprintf(needle, sizeof needle, "job %s chunk 0: cannot commit", id);
    int seen = log_has(needle, 60000);
    cr_assert_eq(tredis_restart(&D.r), 0);
    connect_q();
    if (!seen)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(seen, "the worker never tried to commit during the outage");
    int rc = tdist_watch(&D, id, 25000); /* shorter than the lease: no reclaim */
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    long long att = 0;
    rq_hget_ll(Q, ck, "attempts", &att, NULL);
    cr_assert_eq(att, 1, "chunk 0 was computed %lld times", att);
    cr_assert_eq(frames_of(out), 20);
    char buf[64];
    job_field(id, "chunks_done", buf, sizeof buf);
    cr_assert_eq(atoi(buf), 1);
}

Test(dist_failures, controller_start_sweeps_leftover_temps)
{
    /* What a kill -9 or a full disk leaves: a temp beside a chunk output
     * whose owner's lease has lapsed (no heartbeat key in Redis), however
     * fresh. One of a worker whose lease lives stays, however old (issue
     * 42, finding 3: owners, not pids or clocks). */
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    connect_q();
    char dir[400], old[600], fresh[600], key[200];
    snprintf(key, sizeof key, RQ_WORKER_PREFIX "node7:gpu0");
    redisReply *r = rq_cmd(Q, NULL, "SET %s 1 EX 120", key);
    cr_assert_not_null(r);
    freeReplyObject(r);
    snprintf(dir, sizeof dir, "%s/jobs/j1/out", D.storage);
    cr_assert_eq(tsh("mkdir -p '%s'", dir), 0);
    snprintf(old, sizeof old, "%s/.00002.mkv.tmp-999999-0000abcd@w:node3:gpu1", dir);
    snprintf(fresh, sizeof fresh, "%s/.00003.mkv.tmp-999999-0000abce@w:node7:gpu0", dir);
    cr_assert_eq(tsh("echo x > '%s' && echo x > '%s' && touch -d '2 hours ago' '%s'", old,
                     fresh, fresh), 0);
    tdist_controller(&D);
    int gone = 0;
    for (int t = 0; t < 20000 && !gone; t += 50) {
        gone = access(old, F_OK) != 0;
        if (!gone)
            tmsleep(50);
    }
    cr_assert(gone, "the controller left %s", old);
    cr_assert_eq(access(fresh, F_OK), 0, "a live worker's temp was removed");
}

/* Damage the decoder refuses (0xff over the first frames' slice data), with
 * the default conceal: the frames the decoder drops are dropped, as in one
 * `process`, and the job still ends well, its timestamps the ones `process`
 * writes (the stitch takes the worker's count of frames lost, not the
 * plan's). */
Test(dist_failures, dropped_frames_concealed_stitch_as_process_does)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    connect_q();
    char bad[400], a[400], b[400], id[64], buf[8192], ma[128], mb[128];
    snprintf(bad, sizeof bad, "%s/corrupt.mp4", D.r.dir);
    snprintf(a, sizeof a, "%s/process.mkv", D.r.dir);
    snprintf(b, sizeof b, "%s/fleet.mkv", D.r.dir);
    cr_assert_eq(tclip_make_damaged_head(bad), 0);
    const char *pargv[] = { "vr-worker", "process", "--cpu", "--output", "mask", "-c",
                            "configs/balanced.json", bad, "-o", a, NULL };
    cr_assert_eq(tproc_run("vr-worker", pargv, buf, sizeof buf), 0, "process: %s", buf);
    int n = frames_of(a);
    cr_assert(n > 0 && n < 20, "process kept %d frames of 20: the damage did not drop any", n);

    cr_assert_eq(tdist_submit(&D, bad, b, NULL, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "frames dropped by concealment failed the job");
    tsh_out(ma, sizeof ma, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", a);
    tsh_out(mb, sizeof mb, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", b);
    cr_assert_eq(frames_of(b), n, "fleet %d frames, process %d", frames_of(b), n);
    cr_assert_str_eq(ma, mb, "the fleet's frame times differ from process's");
}

/* Issue 42, finding 2: a worker that cannot see the inputs (a wrong
 * --input-root, a missing mount) failed each chunk at once, as the chunk's
 * own permanent error: every job it touched failed. Now the failure is
 * charged to the worker, not the chunk (its attempts and failures stay),
 * the chunk goes back at once to a healthy worker, and after 3 in a row
 * the blind worker quarantines itself: `vrctl workers` shows it, the job's
 * events say so, and the job finishes with two healthy workers beside it. */
Test(dist_failures, blind_worker_quarantined_and_the_job_finishes)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    connect_q();
    char blind_root[400], in[400], out[400], id[64], buf[8192], ck[128];
    snprintf(blind_root, sizeof blind_root, "%s/elsewhere", D.r.dir);
    cr_assert_eq(tsh("mkdir -p '%s'", blind_root), 0);
    const char *bargv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                            "--input-root", blind_root, "--cpu", "--heartbeat-ms", "300",
                            "--name", "blind:cpu:0", NULL };
    pid_t blind = tproc_spawn("vr-worker", bargv, D.log);
    cr_assert_gt(blind, 0);
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 6, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    /* the blind worker alone first: it takes chunks and fails them */
    int quarantined = 0;
    for (int t = 0; t < 30000 && !quarantined; t += 100) {
        const char *wargs[] = { "workers", NULL };
        tdist_vrctl(&D, buf, sizeof buf, wargs);
        quarantined = strstr(buf, "blind:cpu:0") && strstr(buf, "quarantined");
        if (!quarantined)
            tmsleep(100);
    }
    if (!quarantined)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(quarantined, "`vrctl workers` does not show the blind worker quarantined:\n%s", buf);
    tdist_worker(&D);
    tdist_worker(&D);
    int rc = tdist_watch(&D, id, 120000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not finish beside a blind worker");
    cr_assert_eq(frames_of(out), 60);
    long long faults = 0;
    for (int i = 0; i < 6; i++) {
        long long f = 0, w = 0;
        rq_key_chunk(ck, sizeof ck, id, i);
        rq_hget_ll(Q, ck, "failures", &f, NULL);
        rq_hget_ll(Q, ck, "faults", &w, NULL);
        cr_assert_eq(f, 0, "chunk %d: %lld failures charged to it", i, f);
        faults += w;
    }
    cr_assert_geq(faults, 3, "the blind worker's failures were not counted as its faults");
    const char *eargs[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, eargs), 0);
    cr_assert(strstr(buf, "worker blind:cpu:0") && strstr(buf, "quarantined") &&
              strstr(buf, "not under this worker's --input-root"),
              "the events do not name the blind worker and why:\n%s", buf);
    kill(blind, SIGKILL);
    waitpid(blind, NULL, 0);
}

/* Issue 42 (minor): a worker's heartbeat was stamped by its own clock and
 * `vrctl workers` compared it with its own: a host whose clock is 2 h
 * behind showed a live worker "silent". Both now read Redis's clock. */
Test(dist_failures, a_worker_whose_clock_is_behind_is_not_called_silent)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    const char *const *prefix = tfaketime("-2h");
    cr_assert(prefix, "libfaketime is not installed");
    const char *argv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                           "--input-root", D.r.dir, "--cpu", "--heartbeat-ms", "200",
                           "--name", "behind:cpu:0", NULL };
    pid_t w = tproc_spawn_under(prefix, "vr-worker", argv, D.log);
    cr_assert_gt(w, 0);
    char buf[4096] = "";
    int listed = 0;
    for (int t = 0; t < 20000 && !listed; t += 100) {
        const char *wargs[] = { "workers", NULL };
        tdist_vrctl(&D, buf, sizeof buf, wargs);
        listed = strstr(buf, "behind:cpu:0") != NULL;
        if (!listed)
            tmsleep(100);
    }
    cr_assert(listed, "the worker never showed up:\n%s", buf);
    tmsleep(1000); /* several heartbeats */
    const char *wargs[] = { "workers", NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, wargs), 0);
    cr_assert(strstr(buf, "idle") && !strstr(buf, "silent"), "a live worker is called:\n%s", buf);
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
    cr_assert_eq(tproc_left("vr-worker", D.r.dir), 0, "the worker outlived its kill");
}

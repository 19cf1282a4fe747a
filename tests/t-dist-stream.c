/*
 * t-dist-stream.c - the streaming split, with CPU workers and a real
 * redis-server: chunks are queued as the source is cut, not after; a
 * controller killed mid-split is replaced and the job finishes with no
 * chunk computed twice and the output of a clean run; a cancel mid-split
 * stops the split, and a retry finishes the job; the output is stitched as
 * the chunks finish, and a done chunk's input is removed at once. The
 * controller sleeps after each chunk it queues (VR_TEST_SPLIT_DELAY_MS), so
 * the split is slow whatever the machine's speed.
 */
#include "rq.h"
#include "rq_fleet.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void setup(void)
{
    setenv("VR_TEST_SPLIT_DELAY_MS", "400", 1);
}

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_stream, .init = setup, .fini = teardown, .timeout = 150);

/* Redis, a controller, `workers` CPU workers, a 6 s clip of 0.5 s GOPs (six
 * 1 s chunks, so the split takes at least 6 x 0.4 s), and the job's id.
 * With keep 0 the controller runs without --keep-chunks (the suite's keep
 * the chunks, for tests that look inside) and removes a done chunk's input. */
static void start_job_ex(int workers, int keep, char *in, char *out, const char *name, char *id,
                         size_t n)
{
    cr_assert_eq(tdist_start(&D, 0, 5, keep, workers), 0);
    if (!keep) {
        const char *argv[] = { "vr-controller", "run", "--redis", D.r.url, "--storage",
                               D.storage, "--input-root", D.r.dir, "--output-root", D.r.dir,
                               "--lease-seconds", "5", NULL };
        cr_assert_gt(D.ctl = tproc_spawn("vr-controller", argv, D.log), 0);
    }
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    snprintf(in, 400, "%s/in.mp4", D.r.dir);
    snprintf(out, 400, "%s/%s", D.r.dir, name);
    cr_assert_eq(tclip_make(in, 6, 160, 5, 1), 0);
    /* the split into chunk files is what these tests watch: not ranges */
    const char *copy[] = { "--chunking", "copy", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, copy, id, n), 0);
}

static void start_job(int workers, char *in, char *out, const char *name, char *id, size_t n)
{
    start_job_ex(workers, 1, in, out, name, id, n);
}

static void field(const char *key, const char *f, char *out, size_t n)
{
    out[0] = '\0';
    rq_hget(Q, key, f, out, n, NULL);
}

/* Waits until chunk idx of job id has a record; returns the job's state
 * seen right after. */
static void wait_chunk(const char *id, int idx, char *state, size_t n)
{
    char ck[128], jk[128], v[32];
    rq_key_chunk(ck, sizeof ck, id, idx);
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t < 30000; t += 10) {
        field(ck, "state", v, sizeof v);
        if (v[0]) {
            field(jk, "state", state, n);
            return;
        }
        tmsleep(10);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("chunk %d of %s was never queued", idx, id);
}

static void finish(const char *id, int want)
{
    int rc = tdist_watch(&D, id, 90000);
    if (rc != want)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, want);
}

static int frames_of(const char *path)
{
    char b[64];
    tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", path);
    return atoi(b);
}

static void video_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:v -c copy -f framemd5 - | grep -v '^#' | md5sum",
            path);
}

/* 1 when the job's events hold the line msg. */
static int event_seen(const char *id, const char *msg)
{
    char ek[128];
    rq_key_events(ek, sizeof ek, id);
    redisReply *r = rq_cmd(Q, NULL, "XRANGE %s - +", ek);
    int seen = tentries_with(r, "msg", msg) > 0;
    freeReplyObject(r);
    return seen;
}

/* Waits until the controller has handled chunk 0's result (its "chunk 0
 * done" event), then checks that the chunk's input is still there: a
 * copy-split input is kept until the job ends, so that a commit a Redis
 * crash rolls back can run again (issue 26, finding 1). */
static void wait_first_result_handled(const char *id)
{
    char first[600];
    snprintf(first, sizeof first, "%s/jobs/%s/in/00000.mkv", D.storage, id);
    for (int t = 0; t < 60000; t += 10) {
        if (event_seen(id, "chunk 0 done")) {
            cr_assert_eq(access(first, F_OK), 0, "chunk 0's input was removed while its job "
                         "runs");
            return;
        }
        tmsleep(10);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("chunk 0's result was never handled");
}

Test(dist_stream, chunks_are_queued_while_the_source_is_still_being_split)
{
    char in[400], out[400], id[64], state[32];
    start_job(1, in, out, "out.mp4", id, sizeof id);
    wait_chunk(id, 0, state, sizeof state);
    char last[600];
    snprintf(last, sizeof last, "%s/jobs/%s/in/00005.mkv", D.storage, id);
    cr_assert_neq(access(last, F_OK), 0, "chunk 0 was queued only after the whole split");
    cr_assert_str_eq(state, "splitting", "chunk 0 was queued only after the split (%s)", state);
    finish(id, 0);
    cr_assert_eq(frames_of(out), 60);
    char jk[128], total[16];
    rq_key_job(jk, sizeof jk, id);
    field(jk, "chunks_total", total, sizeof total);
    cr_assert_eq(atoi(total), 6);
}

Test(dist_stream, controller_killed_mid_split_is_replaced_and_no_chunk_runs_twice)
{
    char in[400], out[400], clean[400], id[64], id2[64], state[32];
    start_job(2, in, out, "killed.mkv", id, sizeof id);
    wait_chunk(id, 2, state, sizeof state);
    cr_assert_str_eq(state, "splitting");
    kill(D.ctl, SIGKILL);
    waitpid(D.ctl, NULL, 0);
    /* The new controller takes the split over once the dead one's
     * heartbeat has expired, and cuts the source again from the start. */
    tdist_controller(&D);
    finish(id, 0);
    cr_assert_eq(frames_of(out), 60);
    for (int i = 0; i < 6; i++) {
        char ck[128], att[16];
        rq_key_chunk(ck, sizeof ck, id, i);
        field(ck, "attempts", att, sizeof att);
        if (atoi(att) != 1)
            tsh("grep -v 'mask output\\|set-up' '%s' | tail -80 >&2", D.log);
        cr_assert_eq(atoi(att), 1, "chunk %d ran %s times", i, att);
    }
    snprintf(clean, sizeof clean, "%s/clean.mkv", D.r.dir);
    cr_assert_eq(tdist_submit(&D, in, clean, NULL, id2, sizeof id2), 0);
    finish(id2, 0);
    char a[128], b[128];
    video_md5(out, a, sizeof a);
    video_md5(clean, b, sizeof b);
    cr_assert_str_eq(a, b, "a split taken over mid-way gives another output");
}

Test(dist_stream, cancel_mid_split_stops_it_and_retry_finishes_the_job)
{
    char in[400], out[400], id[64], state[32], buf[256];
    start_job(0, in, out, "out.mkv", id, sizeof id);
    wait_chunk(id, 1, state, sizeof state);
    cr_assert_str_eq(state, "splitting");
    const char *cargs[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 0);
    finish(id, 1);
    /* The split stops at the next chunk it would queue. */
    char ck[128], last[32] = "";
    rq_key_chunk(ck, sizeof ck, id, 5);
    tmsleep(1500);
    field(ck, "state", last, sizeof last);
    cr_assert_str_eq(last, "", "the split went on to the last chunk after the cancel");
    cr_assert_eq(tsh("grep -q 'split stopped: the job is cancelled' '%s'", D.log), 0);

    const char *rargs[] = { "retry", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, rargs), 0);
    tdist_worker(&D);
    finish(id, 0);
    cr_assert_eq(frames_of(out), 60);
}

Test(dist_stream, the_output_is_stitched_while_the_chunks_finish)
{
    /* slow chunks: the controller sees each one finish on its own */
    setenv("VR_TEST_FRAME_DELAY_MS", "50", 1);
    char in[400], out[400], id[64], line[256];
    start_job(1, in, out, "out.mp4", id, sizeof id);
    finish(id, 0);
    cr_assert_eq(frames_of(out), 60);
    cr_assert_eq(tsh_out(line, sizeof line, "grep -o '[0-9]* of 6 chunks stitched ahead' '%s'",
                         D.log), 0);
    cr_assert_geq(atoi(line), 5, "only %s", line);
}

/* A long split does not hold the fleet's results up: the controller reads
 * them between the chunks it cuts, so a done chunk's input goes (and a
 * lapsed lease would be reclaimed) while the job is still splitting. Each
 * chunk is cut 3 s apart; the job is cancelled once it has shown it. */
Test(dist_stream, results_are_handled_while_the_split_goes_on)
{
    setenv("VR_TEST_SPLIT_DELAY_MS", "3000", 1);
    char in[400], out[400], id[64], jk[128], v[32], state[32], buf[256];
    start_job_ex(1, 0, in, out, "out.mkv", id, sizeof id);
    wait_first_result_handled(id);
    rq_key_job(jk, sizeof jk, id);
    field(jk, "state", state, sizeof state);
    field(jk, "chunks_total", v, sizeof v);
    cr_assert_str_eq(state, "splitting", "chunk 0's result was handled only once the split had "
                     "ended (the job %s, %s chunks)", state, v);
    const char *cargs[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 0);
    finish(id, 1);
}

/* Submitted with --chunk-seconds auto: the controller picks a length that
 * fills the workers alive in whole waves and records it before the split
 * (4 s of 0.5 s GOPs over 2 workers: 2 s, two chunks planned). */
Test(dist_stream, auto_chunk_length_from_the_workers_alive)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 2), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[400], id[64], jk[128], v[32];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 5, 0), 0);
    struct rq_worker_info w[4];
    for (int t = 0; t < 300 && rq_workers_list(Q, w, 4, NULL) < 2; t++)
        tmsleep(100); /* both workers have said hello */
    cr_assert_eq(rq_workers_list(Q, w, 4, NULL), 2);
    const char *extra[] = { "--chunk-seconds", "auto", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
    finish(id, 0);
    rq_key_job(jk, sizeof jk, id);
    field(jk, "chunk_ms", v, sizeof v);
    cr_assert_eq(atoi(v), 2000, "chunk_ms %s", v);
    /* the planned count: a busy machine may let a worker idle long enough
     * for the controller to cut a chunk for it (ctl_cut.c), which adds one */
    char cuts[32];
    field(jk, "chunks_total", v, sizeof v);
    field(jk, "cuts", cuts, sizeof cuts); /* absent: atoi("") is 0 */
    cr_assert_eq(atoi(v) - atoi(cuts), 2, "chunks_total %s, cuts %s", v, cuts);
    cr_assert_eq(frames_of(out), 40);
}

/* A done chunk's copy of the source stays while later chunks still run
 * (a Redis crash may roll its commit back: issue 26, finding 1), and the
 * job's chunk files go once it is done (no --keep-chunks). */
Test(dist_stream, a_done_chunks_input_is_kept_until_the_job_is_done)
{
    /* One worker at >= 1.5 s a chunk: chunk 5 cannot be done before ~7.5 s,
     * long after the split (6 x 0.4 s) has let the controller read chunk
     * 0's result, however busy the machine is. */
    setenv("VR_TEST_FRAME_DELAY_MS", "150", 1);
    char in[400], out[400], id[64], ck5[128], v[32], dir[600];
    start_job_ex(1, 0, in, out, "out.mp4", id, sizeof id);
    wait_first_result_handled(id);
    rq_key_chunk(ck5, sizeof ck5, id, 5);
    field(ck5, "state", v, sizeof v);
    cr_assert_str_neq(v, "done", "the job had already finished: the test proves nothing");
    finish(id, 0);
    cr_assert_eq(frames_of(out), 60);
    snprintf(dir, sizeof dir, "%s/jobs/%s/in", D.storage, id);
    /* removed once the done is durable: 3 s after it, at the next audit */
    for (int t = 0; t < 10000 && access(dir, F_OK) == 0; t += 20)
        tmsleep(20);
    cr_assert_neq(access(dir, F_OK), 0, "the done job's chunk inputs %s are still there", dir);
}

/*
 * t-dist-codec.c - codec failures charged to who caused them (issue 42),
 * with CPU workers and a real redis-server: a worker whose decoder fails
 * (a test hook, as a broken libav* build or NVDEC would) on a source the
 * others decode quarantines itself and the job finishes with no chunk's
 * attempt burned; a source no worker decodes is the chunk's, and its job
 * fails naming the worker and the reason instead of every worker
 * quarantining in turn; a job failed on two workers names both.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    unsetenv("VR_TEST_CODEC_BROKEN");
    unsetenv("VR_TEST_RETRY_BASE_MS");
    rq_free(&Q);
    tdist_stop(&D, 0);
}

/* The second test waits out the worker's quarantine and the chunk's three
 * attempts (about 10 s of backoff on its one chunk, more on a loaded
 * machine): the job's end is awaited by its state, with room to spare. */
TestSuite(dist_codec, .fini = teardown, .timeout = 330);

static int frames_of(const char *path)
{
    char b[64];
    tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", path);
    return atoi(b);
}

/* A CPU worker named `name` whose decoder fails to open. */
static pid_t broken_worker(const char *name)
{
    const char *argv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                           "--cpu", "--heartbeat-ms", "300", "--name", name, NULL };
    setenv("VR_TEST_CODEC_BROKEN", "1", 1);
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    unsetenv("VR_TEST_CODEC_BROKEN");
    cr_assert_gt(p, 0);
    if (D.nw < 8)
        D.w[D.nw++] = p;
    return p;
}

/* A clip of `secs` s (a chunk a second) submitted; its paths and job id. */
static void submit(const char *name, double secs, char *in, char *out, size_t n, char *id,
                   size_t nid)
{
    snprintf(in, n, "%s/%s.mp4", D.r.dir, name);
    snprintf(out, n, "%s/%s.mkv", D.r.dir, name);
    cr_assert_eq(tclip_make(in, secs, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, nid), 0);
}

/* Waits up to timeout_ms for job `id` to fail (a source nobody decodes);
 * its error into err. */
static void failed_job_error(const char *id, int timeout_ms, char *err, size_t n)
{
    int rc = tdist_watch(&D, id, timeout_ms);
    cr_assert_neq(rc, 0, "the job of a source nobody decodes did not fail");
    vr_err e = { 0 };
    char jk[128];
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    rq_key_job(jk, sizeof jk, id);
    rq_hget(Q, jk, "error", err, n, NULL);
}

Test(dist_codec, a_broken_decoder_is_the_workers_fault)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[400], id[64], buf[8192];
    broken_worker("nodec:cpu:0");
    submit("in", 4, in, out, sizeof in, id, sizeof id);
    /* the broken worker alone first: it takes chunks and fails them */
    int quarantined = 0;
    const char *wargs[] = { "workers", NULL };
    for (int t = 0; t < 30000 && !quarantined; t += 100) {
        tdist_vrctl(&D, buf, sizeof buf, wargs);
        quarantined = strstr(buf, "nodec:cpu:0") && strstr(buf, "quarantined");
        if (!quarantined)
            tmsleep(100);
    }
    if (!quarantined)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(quarantined, "`vrctl workers` does not show the broken worker quarantined:\n%s",
              buf);
    tdist_worker(&D);
    int rc = tdist_watch(&D, id, 120000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not finish beside a worker whose decoder fails");
    cr_assert_eq(frames_of(out), 40);
    const char *eargs[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, eargs), 0);
    cr_assert(strstr(buf, "worker nodec:cpu:0") && strstr(buf, "cannot open the decoder"),
              "the events do not name the broken worker and why:\n%s", buf);
}

/* One chunk: with four, each needs its three faults before it is the
 * chunk's, and the worker's quarantine doubled between them (4..60 s):
 * 97 s for the same answer. */
Test(dist_codec, a_source_no_worker_decodes_fails_its_job_naming_why)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    char in[400], out[400], id[64], err[1024] = "";
    broken_worker("nodec:cpu:1");
    submit("in", 1, in, out, sizeof in, id, sizeof id);
    failed_job_error(id, 300000, err, sizeof err);
    cr_assert(strstr(err, "worker nodec:cpu:1") && strstr(err, "no worker decodes it"),
              "the job's error: %s", err);
}

Test(dist_codec, a_job_failed_on_two_workers_names_both)
{
    /* One chunk no worker decodes, two broken workers: one of them
     * quarantines itself after three faults in a row, so both take it; the
     * job's error named only the last (issue 42). The retry's backoff is
     * cut to 50 ms (the controller reads it) so the chunk's own three
     * attempts come at once. */
    setenv("VR_TEST_RETRY_BASE_MS", "50", 1);
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    char in[400], out[400], id[64], err[4096] = "";
    snprintf(in, sizeof in, "%s/one.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/one.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    broken_worker("nodec:cpu:2");
    broken_worker("nodec:cpu:3");
    failed_job_error(id, 120000, err, sizeof err);
    cr_assert(strstr(err, "nodec:cpu:2") && strstr(err, "nodec:cpu:3") &&
              strstr(err, "workers involved"), "the job's error names not both: %s", err);
}

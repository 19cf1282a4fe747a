/*
 * t-dist-sec-storage.c - what a worker (or anyone) that can write the
 * storage can no longer do to the fleet (issue 41, findings 1 and 2, and
 * "a health that tells the truth"), against a real redis-server under
 * deploy/redis-users.acl, each process logged in as its own role:
 *
 * - a FIFO put at a chunk's output between its rename and its done report
 *   no longer blocks the controller's loop for good: the job fails naming
 *   the chunk and its file, and a second job completes meanwhile;
 * - an 8 GiB sparse file there is refused by its size, before a byte of it
 *   is summed, and the chunk is computed again;
 * - a FIFO at a copied chunk's input fails that chunk (and its job) with a
 *   message naming it, instead of holding a worker and its lease for ever;
 * - a loop that does not turn makes /healthz say 503 and withdraws the
 *   controller's heartbeat, so another controller takes over; both come
 *   back once it turns.
 */
#include "job.h"
#include "rq.h"
#include "rq_claim.h"
#include "rq_jobs.h"
#include "util-acl.h"
#include "util-http.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* the test's admin connection */

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_storage, .fini = teardown, .timeout = 240);

/* `vrctl submit` as the vrctl user (one chunk a second of source); the id. */
static void submit(const char *name, double seconds, const char *chunking, char *id, size_t n)
{
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/%s.mp4", D.r.dir, name);
    snprintf(out, sizeof out, "%s/%s.mkv", D.r.dir, name);
    cr_assert_eq(tclip_make(in, seconds, 160, 5, 0), 0);
    const char *extra[] = { "--chunk-seconds", "1", chunking ? "--chunking" : NULL, chunking,
                            NULL };
    cr_assert_eq(tacl_submit(&A, in, out, extra, id, n), 0, "vrctl submit %s failed", in);
}

/* `vrctl watch ID` as the vrctl user, at most timeout_ms; its status
 * (-1: still watching when the time was up). */
static int watch(const char *id, int timeout_ms)
{
    const char *argv[] = { "vrctl", "watch", id, "--redis", A.uv, "--redis-password-file", A.pv,
                           NULL };
    int rc = tproc_wait(tproc_spawn("vrctl", argv, NULL), timeout_ms);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    return rc;
}

static void state_of(const char *id, char *st, size_t n)
{
    char jk[160];
    rq_key_job(jk, sizeof jk, id);
    st[0] = '\0';
    rq_hget(Q, jk, "state", st, n, NULL);
}

/* Waits up to timeout_ms for job id to be `want`; its error into why. */
static void wait_state(const char *id, const char *want, int timeout_ms, char *why, size_t n)
{
    char st[32] = "", jk[160];
    for (int t = 0; t < timeout_ms && strcmp(st, want); t += 50) {
        state_of(id, st, sizeof st);
        tmsleep(50);
    }
    if (strcmp(st, want))
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_str_eq(st, want, "job %s is '%s', not %s, after %d ms", id, st, want, timeout_ms);
    rq_key_job(jk, sizeof jk, id);
    why[0] = '\0';
    rq_hget(Q, jk, "error", why, n, NULL);
}

/* The path of job id's chunk 0 file under `sub` (in, out). */
static void chunk0(const char *id, const char *sub, char *path, size_t n)
{
    snprintf(path, n, "%s/jobs/%s/%s/00000.mkv", D.storage, id, sub);
}

/* Waits until path exists (the controller cut a chunk there). */
static void wait_file(const char *path, int timeout_ms)
{
    for (int t = 0; t < timeout_ms && access(path, F_OK); t += 10)
        tmsleep(10);
    cr_assert_eq(access(path, F_OK), 0, "%s never appeared", path);
}

/* The lines of the processes' log that match `what` (grep); the log's
 * tail on stderr when there is none. */
static int log_count(const char *what)
{
    char n[32] = "";
    tsh_out(n, sizeof n, "grep -c -- '%s' '%s'", what, D.log);
    if (!atoi(n))
        tsh("tail -40 '%s' >&2", D.log);
    return atoi(n);
}

#define ZEROS32 "00000000000000000000000000000000"
#define ZEROS64 ZEROS32 ZEROS32 /* a well-formed sum that is not the file's */

/* A worker of the fleet gone bad: logged in as the worker's user, it
 * takes job id's chunk 0 under a claim of its own, reports it started,
 * puts `what` at the chunk's output (by `make`, a shell command given the
 * path; a small sidecar beside it) and reports it done with a sum that is
 * not the file's. All a worker's user and a storage writer may do. */
static void bad_worker_done(const char *id, const char *make)
{
    char url[200], key[RQ_CLAIM_KEY_HEX], out0[600], ck[160], st[32] = "";
    snprintf(url, sizeof url, "redis://vr-worker:pw-worker@127.0.0.1:%d", A.port);
    struct rq *w = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &w, &e), 0, "%s", e.msg);
    struct rq_held h = { .idx = 0 };
    cr_assert_eq(rq_claim_key_new(key, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_claim_make("bad:cpu:0", key, 0, &h.claim, &e), 0, "%s", e.msg);
    const char *streams[] = { RQ_CHUNKS };
    struct rq_msg m;
    int got = 0;
    for (int t = 0; t < 60 && got != 1; t++)
        got = rq_read(w, RQ_G_WORKERS, h.claim.consumer, streams, 1, 1000, &m, &e);
    cr_assert_eq(got, 1, "the bad worker got no chunk: %s", e.msg);
    snprintf(h.stream, sizeof h.stream, "%s", m.stream);
    snprintf(h.id, sizeof h.id, "%s", m.id);
    snprintf(h.job, sizeof h.job, "%s", id);
    rq_msg_release(&m);
    cr_assert_eq(rq_report_start(w, &h, &e), 0, "%s", e.msg);
    rq_key_chunk(ck, sizeof ck, id, 0);
    for (int t = 0; t < 30000 && strcmp(st, "running"); t += 50) {
        rq_hget(Q, ck, "state", st, sizeof st, NULL);
        tmsleep(50);
    }
    cr_assert_str_eq(st, "running", "the bad worker's start was not taken");
    chunk0(id, "out", out0, sizeof out0);
    cr_assert_eq(tsh("mkdir -p \"$(dirname '%s')\" && %s '%s' && echo ts > '%s.ts'", out0, make,
                     out0, out0), 0);
    cr_assert_eq(rq_report_done(w, &h, 10, 10, "{}", "sha256:" ZEROS64, "", &e), 0, "%s", e.msg);
    rq_free(&w);
}

/* A fleet under the ACL with no worker yet; job a (one chunk) whose chunk 0
 * a bad worker reports done over `make`'s file; then a good worker and a
 * second job b, which must complete (the loop goes on). Their ids. */
static void bad_output_then_second_job(const char *make, char *id1, char *id2, size_t n)
{
    tacl_start(&D, &A);
    Q = tacl_admin(&A);
    tacl_controller(&D, &A, NULL);
    submit("a", 1, NULL, id1, n);
    bad_worker_done(id1, make);
    tacl_worker(&D, &A);
    submit("b", 2, NULL, id2, n);
    cr_assert_eq(watch(id2, 90000), 0, "the second job did not complete while job %s's chunk 0 "
                 "was made by '%s'", id1, make);
}

/* Finding 1: the FIFO. Before the fix the controller's loop sat in
 * open(2) on it for good: the second job never even started. */
Test(dist_sec_storage, a_fifo_chunk_output_fails_its_job_and_the_loop_goes_on)
{
    char id1[64], id2[64], why[1100];
    bad_output_then_second_job("mkfifo -m 644", id1, id2, sizeof id1);
    wait_state(id1, "failed", 30000, why, sizeof why);
    cr_assert(strstr(why, "chunk 0") && strstr(why, "00000.mkv") && strstr(why, "a FIFO"),
              "the job's error does not name the chunk and its FIFO: %s", why);
}

/* Finding 1: the sparse file. Before the fix the controller summed its
 * 8 GiB of zeros on its loop (25 s on the finder's machine, 70 s here),
 * again on each requeue; now its size alone refuses it and the chunk runs
 * again. */
Test(dist_sec_storage, a_huge_sparse_chunk_output_is_refused_by_size_not_summed)
{
    char id1[64], id2[64], why[1100];
    bad_output_then_second_job("truncate -s 8G", id1, id2, sizeof id1);
    /* chunk 0 computed again by the good worker: the first job ends done */
    wait_state(id1, "done", 90000, why, sizeof why);
    cr_assert_geq(log_count("chunk 0.s output .*00000.mkv is 8589934592 bytes, more than its "
                            "frames can hold"), 1, "the refusal does not name the chunk");
    cr_assert_eq(log_count("does not match the checksum"), 0, "the 8 GiB file was summed");
    redisReply *r = rq_cmd(Q, NULL, "XRANGE vr:events:%s - +", id1);
    int said = 0;
    for (size_t i = 0; r && i < r->elements; i++)
        for (size_t j = 0; j < r->element[i]->element[1]->elements; j++)
            said |= strstr(r->element[i]->element[1]->element[j]->str,
                           "chunk 0: its output is 8589934592 bytes") != NULL;
    freeReplyObject(r);
    cr_assert(said, "the job's events do not say why chunk 0 ran again");
}

/* Finding 2: a copied chunk's input made a FIFO before a worker takes it.
 * Before the fix the worker blocked in open(2) for good while its
 * heartbeat renewed the lease: the job never ended. */
Test(dist_sec_storage, a_fifo_chunk_input_fails_the_chunk_naming_it)
{
    tacl_start(&D, &A);
    Q = tacl_admin(&A);
    tacl_controller(&D, &A, NULL);
    char id[64], in0[600], why[1100], st[32] = "";
    submit("a", 1, "copy", id, sizeof id);
    wait_state(id, "running", 60000, why, sizeof why);
    chunk0(id, "in", in0, sizeof in0);
    long long total = 0;
    char jk[160];
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t < 60000 && total < 1; t += 50) { /* the split is over */
        rq_hget_ll(Q, jk, "chunks_total", &total, NULL);
        tmsleep(50);
    }
    wait_file(in0, 10000);
    cr_assert_eq(unlink(in0), 0);
    cr_assert_eq(mkfifo(in0, 0644), 0);
    tacl_worker(&D, &A);
    wait_state(id, "failed", 60000, why, sizeof why);
    state_of(id, st, sizeof st);
    cr_assert(strstr(why, "chunk input") && strstr(why, "00000.mkv") && strstr(why, "a FIFO"),
              "the job's error does not name the chunk's FIFO input: %s", why);
}

/* "A health that tells the truth": the controller's loop held in a plan
 * (VR_TEST_SPLIT_DELAY_MS: 4 s after each chunk queued, no turn between)
 * past --loop-stall-seconds 1. Before the fix /healthz said 200 and the
 * heartbeat went on, so no other controller would take over. */
Test(dist_sec_storage, a_stuck_loop_fails_healthz_and_withdraws_the_heartbeat)
{
    tacl_start(&D, &A);
    Q = tacl_admin(&A);
    int port = tfree_port("127.0.0.1");
    cr_assert_gt(port, 0);
    char listen[32], url[96], id[64], why[1100];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "http://%s/healthz", listen);
    const char *extra[] = { "--metrics-listen", listen, "--loop-stall-seconds", "1", NULL };
    setenv("VR_TEST_SPLIT_DELAY_MS", "4000", 1);
    tacl_controller(&D, &A, extra);
    unsetenv("VR_TEST_SPLIT_DELAY_MS");
    char *body = NULL;
    long code = 0;
    for (int t = 0; t < 30000 && code != 200; t += 100) {
        free(body);
        code = thttp_get(url, &body, 5);
        tmsleep(100);
    }
    cr_assert_eq(code, 200, "/healthz: %ld %s", code, body);
    redisReply *r = rq_cmd(Q, NULL, "KEYS vr:controller:*");
    cr_assert(r && r->elements == 1, "no heartbeat key for the controller");
    freeReplyObject(r);

    submit("a", 3, NULL, id, sizeof id); /* 3 chunks: 12 s in the plan */
    for (int t = 0; t < 30000 && code == 200; t += 100) {
        free(body);
        code = thttp_get(url, &body, 5);
        tmsleep(100);
    }
    cr_assert_eq(code, 503, "/healthz kept saying %ld while the loop was held", code);
    cr_assert(strstr(body, "controller loop stuck"), "%s", body);
    size_t keys = 1;
    for (int t = 0; t < 10000 && keys; t += 100) {
        r = rq_cmd(Q, NULL, "KEYS vr:controller:*");
        keys = r ? r->elements : 1;
        freeReplyObject(r);
        tmsleep(100);
    }
    cr_assert_eq(keys, 0, "the heartbeat went on while the loop was held");
    cr_assert_geq(log_count("heartbeat withdrawn so another controller takes over"), 1);

    /* the plan ends, the loop turns: healthy again, the heartbeat back */
    for (int t = 0; t < 60000 && code != 200; t += 100) {
        free(body);
        code = thttp_get(url, &body, 5);
        tmsleep(100);
    }
    cr_assert_eq(code, 200, "/healthz did not come back: %ld %s", code, body);
    free(body);
    for (int t = 0; t < 10000 && !keys; t += 100) {
        r = rq_cmd(Q, NULL, "KEYS vr:controller:*");
        keys = r ? r->elements : 0;
        freeReplyObject(r);
        tmsleep(100);
    }
    cr_assert_eq(keys, 1, "the heartbeat did not come back");
    tacl_worker(&D, &A);
    wait_state(id, "done", 120000, why, sizeof why);
}

/*
 * t-dist-sec-acl.c - the per-role Redis users of deploy/redis-users.acl, as
 * README.md's "Security" section gives them: a redis-server takes those
 * exact lines (passwords filled in), its default user is turned off, and a
 * real CPU job runs with the controller, the worker and vrctl each logged
 * in as its own user (passwords from files), with a webhook (to a port
 * nobody listens on, given up after one try: the end's delivery, its claim
 * and its record all run as the controller's user). Nothing is denied on
 * the way (ACL LOG stays empty), and a role cannot do another's work: the
 * worker's user may not submit a job.
 *
 * Issue 27, finding 2: each call the worker's or vrctl's user must not make
 * (create, run, rewrite or fail a job behind the controller's back, write
 * a chunk record, ack, claim or list pending entries, read the server's
 * config, list or flush keys, write another role's keys, any script for
 * the worker) is refused by Redis itself (NOPERM). What the worker's user
 * may send, a report, changes nothing unless it proves the claim that
 * holds the chunk (rq_claim.h): forged ones are logged, the job ends done.
 */
#include "rq.h"
#include "rq_claim.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_acl, .fini = teardown, .timeout = 150);

/* The fleet's addresses and password files, one per role (util-acl.h). */
static struct tacl A;

static void acl_redis(void)
{
    tacl_start(&D, &A);
}

static struct rq *admin(void)
{
    return tacl_admin(&A);
}

static void spawn_controller(void)
{
    tacl_controller(&D, &A, NULL);
}

static void spawn_worker(void)
{
    tacl_worker(&D, &A);
}

Test(dist_sec_acl, each_role_runs_a_job_as_its_own_user)
{
    acl_redis();
    spawn_controller();
    spawn_worker();

    char in[400], out[400], id[128], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    /* a port that was free a moment ago: the POST is refused */
    int dead = tfree_port("127.0.0.1");
    cr_assert_gt(dead, 0);
    char hook[64];
    snprintf(hook, sizeof hook, "http://127.0.0.1:%d/hook", dead);
    const char *sub[] = { "--chunk-seconds", "1", "--notify", hook, NULL };
    int rc = tacl_submit(&A, in, out, sub, id, sizeof id);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "vrctl submit as vrctl failed");
    const char *watch[] = { "watch", id, NULL };
    rc = tacl_vrctl(A.uv, A.pv, buf, sizeof buf, watch);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not complete under per-role users");
    const char *status[] = { "status", id, "--json", NULL };
    const char *workers[] = { "workers", NULL };
    const char *metrics[] = { "metrics", id, NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, status), 0);
    cr_assert(strstr(buf, "\"done\""), "%s", buf);
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, workers), 0);
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, metrics), 0);
    char n[64];
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);

    /* nothing was denied on the way */
    struct rq *q = admin();
    vr_err e = { 0 };
    char jk[160], ns[32] = "";
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t < 30000 && strcmp(ns, "failed"); t += 50) {
        rq_hget(q, jk, "notify_state", ns, sizeof ns, NULL);
        tmsleep(50);
    }
    cr_assert_str_eq(ns, "failed", "the webhook's delivery did not run to its end");
    redisReply *r = rq_cmd(q, &e, "ACL LOG");
    cr_assert_not_null(r, "%s", e.msg);
    size_t denied = r->elements;
    for (size_t i = 0; i < denied; i++) /* username, object, ... as flat pairs */
        for (size_t j = 0; j + 1 < r->element[i]->elements; j += 2)
            if (r->element[i]->element[j + 1]->type == REDIS_REPLY_STRING)
                fprintf(stderr, "denied: %s=%s\n", r->element[i]->element[j]->str,
                        r->element[i]->element[j + 1]->str);
    freeReplyObject(r);
    rq_free(&q);
    cr_assert_eq(denied, 0, "ACL LOG has %zu denials", denied);

    /* least privilege: the worker's user cannot submit */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/vrctl submit '%s' -o '%s' -y --profile fast --redis '%s' "
             "--redis-password-file '%s' 2>&1", getenv("VR_BIN_DIR") ? getenv("VR_BIN_DIR") : "bin",
             in, out, A.uw, A.pw);
    rc = tsh_out(buf, sizeof buf, "%s", cmd);
    cr_assert_eq(rc, 1, "the worker's user submitted a job: %s", buf);
    cr_assert(strstr(buf, "ACL user lacks"), "%s", buf);
}

static int denied(const char *role, const char **argv);

/* The state key of job id as the admin reads it ("" when absent). */
static void jstate_of(const char *id, char *out, size_t n)
{
    struct rq *q = admin();
    vr_err e = { 0 };
    redisReply *r = rq_cmd(q, &e, "GET vr:jstate:%s", id);
    cr_assert_not_null(r, "%s", e.msg);
    snprintf(out, n, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    rq_free(&q);
}

/* Issue 41: the worker's user reads a job's state key (vr:jstate:<id>),
 * which every script that moves the job writes, never the job record
 * (the spec's paths and options, its webhook URL); a job still runs to
 * its end, and vrctl's cancel and purge keep the key true. */
Test(dist_sec_acl, a_worker_reads_a_jobs_state_never_its_record)
{
    acl_redis();
    spawn_controller();
    spawn_worker();
    char in[400], out[400], id[128], id2[128], buf[8192], st[32];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    const char *sub[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tacl_submit(&A, in, out, sub, id, sizeof id), 0, "%s", id);
    const char *watch[] = { "watch", id, NULL };
    int rc = tacl_vrctl(A.uv, A.pv, buf, sizeof buf, watch);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not complete with the worker reading state keys");
    jstate_of(id, st, sizeof st);
    cr_assert_str_eq(st, "done");

    char jk[160], sk[160];
    snprintf(jk, sizeof jk, "vr:job:%s", id);
    snprintf(sk, sizeof sk, "vr:jstate:%s", id);
    const char *spec[] = { "HGET", jk, "spec", NULL };
    const char *all[] = { "HGETALL", jk, NULL };
    const char *state[] = { "GET", sk, NULL };
    cr_assert(denied("worker", spec), "the worker's user read the job's spec");
    cr_assert(denied("worker", all), "the worker's user read the job record");
    cr_assert_not(denied("worker", state));

    /* vrctl's cancel, then its purge, as its own user */
    snprintf(out, sizeof out, "%s/out2.mkv", D.r.dir);
    cr_assert_eq(kill(D.w[0], SIGSTOP), 0); /* the job stays live for the cancel */
    cr_assert_eq(tacl_submit(&A, in, out, sub, id2, sizeof id2), 0, "%s", id2);
    const char *cancel[] = { "cancel", id2, NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, cancel), 0, "%s", buf);
    kill(D.w[0], SIGCONT);
    jstate_of(id2, st, sizeof st);
    cr_assert_str_eq(st, "cancelled");
    const char *purge[] = { "purge", id2, NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, purge), 0, "%s", buf);
    jstate_of(id2, st, sizeof st);
    cr_assert_str_eq(st, "", "the purge left the state key");
}

/* ---- what each role may not do ---- */

/* Sends argv as `role` (its password pw-<role>); 1 when Redis refused it
 * for the ACL (NOPERM, or a script's command denied), 0 when it ran. */
static int denied(const char *role, const char **argv)
{
    char url[200];
    snprintf(url, sizeof url, "redis://%s:pw-%s@127.0.0.1:%d",
             !strcmp(role, "vrctl") ? "vrctl" : !strcmp(role, "worker") ? "vr-worker"
                                                                         : "vr-controller",
             role, A.port);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &q, &e), 0, "%s", e.msg);
    int n = 0;
    while (argv[n])
        n++;
    redisReply *r = rq_cmdargv(q, &e, n, argv, NULL);
    int refused = !r && strstr(e.msg, "ACL user lacks");
    cr_assert(r || refused, "%s %s: an error that is not the ACL's: %s", role, argv[0], e.msg);
    freeReplyObject(r);
    rq_free(&q);
    return refused;
}

#define REFUSED(role, ...)                                                                  \
    do {                                                                                    \
        const char *av_[] = { __VA_ARGS__, NULL };                                          \
        cr_assert(denied(role, av_), "%s may run: %s %s %s", role, av_[0], av_[1], av_[2]); \
    } while (0)

Test(dist_sec_acl, each_role_is_refused_what_it_must_not_do)
{
    /* a real job record and chunk to aim at, before the default user is off */
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    const char *job[] = { "HSET", "vr:job:victim", "state", "running", "spec", "{}", NULL };
    const char *chunk[] = { "HSET", "vr:chunk:victim:0", "state", "queued", "entry", "1-1", NULL };
    cr_assert_eq(tredis_cmd(&D.r, job), 0);
    cr_assert_eq(tredis_cmd(&D.r, chunk), 0);
    acl_redis();

    /* the worker: issue 27's invisible job, and every write to a job */
    REFUSED("worker", "HSET", "vr:job:X", "spec", "{}", "state", "queued");
    REFUSED("worker", "SADD", "vr:active", "X");
    REFUSED("worker", "XADD", "vr:jobs", "*", "job", "X");
    REFUSED("worker", "HSET", "vr:job:victim", "state", "failed");
    REFUSED("worker", "HINCRBY", "vr:job:victim", "chunks_done", "1");
    REFUSED("worker", "ZADD", "vr:index", "1", "X");
    REFUSED("worker", "DEL", "vr:chunk:victim:0");
    REFUSED("worker", "CONFIG", "GET", "*");
    REFUSED("worker", "KEYS", "*");
    REFUSED("worker", "FLUSHALL");
    REFUSED("worker", "FLUSHDB");
    REFUSED("worker", "ZADD", "vr:notify", "1", "victim:1");
    /* ... and every write to a chunk: only the controller makes one, on a
     * report that proves its claim (rq_claim.h) */
    REFUSED("worker", "HSET", "vr:chunk:victim:0", "state", "dead");
    REFUSED("worker", "XADD", "vr:results", "*", "job", "victim", "idx", "0", "kind", "dead");
    REFUSED("worker", "XADD", "vr:dead", "*", "job", "victim", "idx", "0");
    REFUSED("worker", "XADD", "vr:events:victim", "*", "msg", "forged");
    REFUSED("worker", "XADD", "vr:chunks", "*", "job", "victim", "idx", "0");
    REFUSED("worker", "XACK", "vr:chunks", "workers", "1-1");
    REFUSED("worker", "XCLAIM", "vr:chunks", "workers", "me", "0", "1-1");
    REFUSED("worker", "XAUTOCLAIM", "vr:chunks", "workers", "me", "0", "0");
    REFUSED("worker", "XPENDING", "vr:chunks", "workers");
    REFUSED("worker", "XGROUP", "CREATE", "vr:chunks", "evil", "0");
    REFUSED("worker", "XRANGE", "vr:reports", "-", "+");
    REFUSED("worker", "HINCRBY", "vr:stats", "frames", "1");
    REFUSED("worker", "ZADD", "vr:retry", "1", "victim/0");
    REFUSED("worker", "EVAL", "return 1", "0");
    /* no script at all (one could hold the server busy) */
    REFUSED("worker", "EVAL", "return redis.call('HSET', KEYS[1], 'state', 'failed')", "1",
            "vr:job:victim");
    /* vrctl (the submitter): no worker's or controller's keys, no admin */
    REFUSED("vrctl", "XADD", "vr:results", "*", "job", "victim", "idx", "0", "kind", "dead");
    REFUSED("vrctl", "XADD", "vr:dead", "*", "job", "victim", "idx", "0");
    REFUSED("vrctl", "HINCRBY", "vr:stats", "frames", "1");
    REFUSED("vrctl", "HSET", "vr:worker:fake", "state", "idle");
    REFUSED("vrctl", "XREADGROUP", "GROUP", "workers", "me", "COUNT", "1", "STREAMS", "vr:chunks",
            ">");
    REFUSED("vrctl", "DEL", "vr:job:victim");
    REFUSED("vrctl", "CONFIG", "GET", "*");
    REFUSED("vrctl", "KEYS", "*");
    REFUSED("vrctl", "FLUSHALL");
    REFUSED("vrctl", "EVAL", "return redis.call('XADD', KEYS[1], '*', 'kind', 'dead')", "1",
            "vr:results");
    /* what they need still runs: a worker reads the job's state, vrctl all */
    const char *wget[] = { "GET", "vr:jstate:victim", NULL };
    const char *vget[] = { "HGETALL", "vr:chunk:victim:0", NULL };
    cr_assert_not(denied("worker", wget));
    cr_assert_not(denied("vrctl", vget));
    char state[32] = "";
    struct rq *q = admin();
    rq_hget(q, "vr:job:victim", "state", state, sizeof state, NULL);
    rq_free(&q);
    cr_assert_str_eq(state, "running", "a refused call changed the job");
}

/* XADDs a report as the worker's user (which may: nothing is denied) for
 * entry `entry` of chunk idx of job `id`, under `consumer`, showing
 * `shown` as the kind's secret. */
static void forge(const char *kind, const char *id, const char *idx, const char *entry,
                  const char *consumer, const char *shown)
{
    int proof = !strcmp(kind, "start") || !strcmp(kind, "renew");
    const char *av[] = { "XADD", "vr:reports", "*", "kind", kind, "consumer", consumer,
                         "stream", "vr:chunks", "entry", entry, "job", id, "idx", idx,
                         proof ? "proof" : "token", shown, "frames", "5", "fps", "1",
                         "reason", "forged", "permanent", "1", NULL };
    cr_assert_not(denied("worker", av), "the worker's user may not send a report");
}

/* Issue 27, finding 2: the worker's user writes no chunk state, and what
 * it reports for a chunk it does not hold changes nothing. Forged first
 * under a claim of the forger's own (consistent: it proves itself, but
 * holds no entry), then under the real holder's consumer with secrets the
 * forger cannot know, and a "died" for the holder with a key that made
 * none of its claims. The job ends done, each chunk committed once. */
Test(dist_sec_acl, forged_reports_change_nothing_and_each_chunk_commits_once)
{
    acl_redis();
    spawn_controller();
    char in[400], out[400], id[128], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    const char *one_s[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tacl_submit(&A, in, out, one_s, id, sizeof id), 0);
    char jk[160], ck[160], st[32] = "", entry[64] = "";
    struct rq *q = admin();
    rq_key_job(jk, sizeof jk, id);
    rq_key_chunk(ck, sizeof ck, id, 0);
    for (int t = 0; t < 60000 && strcmp(st, "running"); t += 50) {
        rq_hget(q, jk, "state", st, sizeof st, NULL);
        tmsleep(50);
    }
    cr_assert_str_eq(st, "running");
    rq_hget(q, ck, "entry", entry, sizeof entry, NULL);
    cr_assert(entry[0], "chunk 0 has no entry");

    /* the forger's own claim: it opens its own commitment, holds nothing */
    char key[RQ_CLAIM_KEY_HEX];
    struct rq_claim own;
    vr_err e = { 0 };
    cr_assert_eq(rq_claim_key_new(key, &e), 0);
    cr_assert_eq(rq_claim_make("evil:cpu:1", key, 0, &own, &e), 0);
    cr_assert(rq_claim_proves(own.consumer, own.token, RQ_SHOWN_TOKEN));
    const char *kinds[] = { "start", "renew", "done", "fail", "skip" };
    for (int k = 0; k < 5; k++)
        forge(kinds[k], id, "0", entry, own.consumer, k < 2 ? own.proof : own.token);

    /* a worker whose commits wait behind a gate file: chunk 0 is held
     * while the rest is forged, however slow the box */
    char gate[600];
    snprintf(gate, sizeof gate, "%s/commit.gate", D.r.dir);
    cr_assert_eq(tsh("touch '%s'", gate), 0);
    setenv("VR_TEST_COMMIT_GATE", gate, 1);
    spawn_worker();
    unsetenv("VR_TEST_COMMIT_GATE");
    char holder[RQ_CONSUMER_MAX] = "";
    for (int t = 0; t < 60000 && !holder[0]; t += 50) {
        redisReply *r = rq_cmd(q, &e, "XPENDING vr:chunks workers - + 10");
        for (size_t i = 0; r && i < r->elements; i++)
            if (!strcmp(r->element[i]->element[0]->str, entry))
                snprintf(holder, sizeof holder, "%s", r->element[i]->element[1]->str);
        freeReplyObject(r);
        tmsleep(50);
    }
    cr_assert(holder[0], "chunk 0 was never taken");
    char name[128];
    rq_consumer_worker(holder, name, sizeof name);
    forge("done", id, "0", entry, holder, own.token);
    forge("fail", id, "0", entry, holder, own.token);
    forge("skip", id, "0", entry, holder, own.proof);
    forge("renew", id, "0", entry, holder, own.token);
    const char *died[] = { "XADD", "vr:reports", "*", "kind", "died", "worker", name, "key", key,
                           "reason", "forged death", NULL };
    cr_assert_not(denied("worker", died));
    long long held = -1;
    rq_hget_ll(q, ck, "commits", &held, NULL);
    cr_assert_eq(held, 0, "chunk 0 was committed while its gate was shut");
    unlink(gate); /* the holder commits now */

    const char *watch[] = { "watch", id, NULL };
    int rc = tacl_vrctl(A.uv, A.pv, buf, sizeof buf, watch);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not complete after the forged reports");
    char n[16] = "";
    tsh_out(n, sizeof n, "grep -c 'does not prove its claim' '%s'", D.log);
    cr_assert_geq(atoi(n), 4, "the forgeries under the holder's name were not all refused");
    long long refused = 0;
    rq_hget_ll(q, "vr:stats", "reports_refused", &refused, NULL);
    cr_assert_geq(refused, 4, "the refused forgeries were not counted");
    for (int i = 0; i < 3; i++) {
        long long commits = -1, failures = 0, deaths = 0, attempts = 0;
        rq_key_chunk(ck, sizeof ck, id, i);
        rq_hget_ll(q, ck, "commits", &commits, NULL);
        rq_hget_ll(q, ck, "failures", &failures, NULL);
        rq_hget_ll(q, ck, "deaths", &deaths, NULL);
        rq_hget_ll(q, ck, "attempts", &attempts, NULL);
        cr_assert(commits == 1 && failures == 0 && deaths == 0 && attempts == 1,
                  "chunk %d: commits %lld failures %lld deaths %lld attempts %lld", i, commits,
                  failures, deaths, attempts);
    }
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);
    redisReply *r = rq_cmd(q, &e, "ACL LOG");
    cr_assert_not_null(r, "%s", e.msg);
    size_t denied_calls = r->elements; /* the forged reports were allowed, and refused after */
    freeReplyObject(r);
    rq_free(&q);
    cr_assert_eq(denied_calls, 0, "the fleet was denied %zu calls", denied_calls);
}

/* A worker's user flooding vr:reports: 300 forgeries that do not prove
 * their claim and 50 malformed reports are each counted (the stats behind
 * vrseg_reports_refused_total) and acked, and the controller's log has 10
 * lines of them, not 350. */
Test(dist_sec_acl, a_flood_of_forged_reports_is_counted_not_logged_line_by_line)
{
    acl_redis();
    spawn_controller();
    char url[200], key[RQ_CLAIM_KEY_HEX];
    snprintf(url, sizeof url, "redis://vr-worker:pw-worker@127.0.0.1:%d", A.port);
    struct rq *w = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &w, &e), 0, "%s", e.msg);
    struct rq_claim mine, other;
    cr_assert_eq(rq_claim_key_new(key, &e), 0);
    cr_assert_eq(rq_claim_make("evil:cpu:1", key, 0, &mine, &e), 0);
    cr_assert_eq(rq_claim_make("evil:cpu:1", key, 1, &other, &e), 0);
    for (int i = 0; i < 350; i++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        const char *forged[] = { "XADD", "vr:reports", "*", "kind", "done", "consumer",
                                 mine.consumer, "stream", "vr:chunks", "entry", "1-0", "job",
                                 "20261127-000000-00000000", "idx", idx, "token", other.token,
                                 "frames", "5", "fps", "1", NULL };
        const char *malformed[] = { "XADD", "vr:reports", "*", "kind", "bogus", "idx", idx, NULL };
        const char **av = i < 300 ? forged : malformed;
        int n = 0;
        while (av[n])
            n++;
        redisReply *r = rq_cmdargv(w, &e, n, av, NULL);
        cr_assert_not_null(r, "%s", e.msg);
        freeReplyObject(r);
    }
    rq_free(&w);

    struct rq *q = admin();
    long long refused = 0, pending = -1;
    for (int t = 0; t < 60000 && refused < 350; t += 100) {
        rq_hget_ll(q, "vr:stats", "reports_refused", &refused, NULL);
        tmsleep(100);
    }
    cr_assert_eq(refused, 350, "%lld of 350 refused reports counted", refused);
    redisReply *r = rq_cmd(q, &e, "XPENDING vr:reports controllers");
    cr_assert_not_null(r, "%s", e.msg);
    pending = r->element[0]->integer;
    freeReplyObject(r);
    rq_free(&q);
    cr_assert_eq(pending, 0, "%lld refused reports left unacked", pending);
    char n[16] = "";
    tsh_out(n, sizeof n, "grep -c 'does not prove its claim\\|a malformed report' '%s'", D.log);
    cr_assert_eq(atoi(n), 10, "the controller logged %s lines of refused reports", n);
}

/* README's Security section shows the users to paste: the very lines of
 * deploy/redis-users.acl, which the tests above load (they had drifted). */
Test(dist_sec_acl, readme_shows_the_lines_the_tests_load)
{
    const char *data = getenv("VR_DATA_DIR");
    char acl[600], readme[600];
    snprintf(acl, sizeof acl, "%s/deploy/redis-users.acl", data ? data : ".");
    snprintf(readme, sizeof readme, "%s/README.md", data ? data : ".");
    cr_assert_eq(tsh("test $(grep -c '^user ' '%s') -eq 4", acl), 0);
    cr_assert_eq(tsh("grep '^user ' '%s' | while IFS= read -r l; do "
                     "grep -qxF \"    $l\" '%s' || { echo \"README lacks: $l\" >&2; exit 1; }; "
                     "done", acl, readme), 0, "README's ACL lines differ from %s", acl);
}

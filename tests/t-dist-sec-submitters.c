/*
 * t-dist-sec-submitters.c - submitters who act as themselves (issue 41,
 * findings 3 and 9), against a real redis-server under
 * deploy/redis-users.acl plus deploy/redis-submitter.acl.in made for two
 * submitters, alice and bob, and a controller with `--submitter alice:2
 * --submitter bob:2`. vrctl logs in as vrsub-alice (or vrsub-bob), so its
 * jobs go through that user's own stream:
 *
 * - alice's job inside INPUT-ROOT/alice and OUTPUT-ROOT/alice is recorded
 *   with owner alice; one reading bob's input, or writing into bob's
 *   outputs, is recorded failed, naming alice's root;
 * - alice's third live job is refused by her limit (2) while bob's job is
 *   still taken;
 * - alice cannot write bob's stream, a job record, the job stream or run
 *   a script (NOPERM): she cannot submit as bob nor around the controller;
 * - alice cancels and retries her own jobs through her stream, never bob's
 *   (no such job), and her retry counts against her limit;
 * - `--submitter alice:2:6`: her live jobs hold at most 6 chunks in flight
 *   whatever --chunk-seconds she asks, a live count: alone a job gets 5
 *   (one kept for her second), the second what the first leaves, and a
 *   cancelled job's chunks are hers no longer;
 * - `--submitter alice:1:2`: no elastic cut for an idle worker takes her
 *   job past her 2 chunks in flight (the cut's guard, finding 9);
 * - a controller killed between reading her entry and recording the job
 *   (a test hook stalls it there) loses nothing: the entry was not acked,
 *   and the next controller records the job;
 * - alice reads her own jobs (ids aliceS...: record, chunks, events,
 *   `vrctl status`, `events`, `report`) and none of bob's: his record,
 *   chunks and events are NOPERM to her, `vrctl status` lists only hers,
 *   and the job index, the active set and the job stream are no keys of
 *   hers either.
 */
#include "rq.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_submitters, .fini = teardown, .timeout = 240);

/* The template made for `name` (vrsub-<name>, password pw-sub-<name>),
 * loaded while the default user is still on; its password file into pw. */
static void submitter(const char *name, char *pw, size_t pn)
{
    const char *data = getenv("VR_DATA_DIR");
    char acl[400];
    snprintf(acl, sizeof acl, "%s/%s.acl", D.r.dir, name);
    cr_assert_eq(tsh("sed 's/NAME/%s/g' '%s/deploy/redis-submitter.acl.in' > '%s'", name,
                     data ? data : ".", acl), 0);
    cr_assert_eq(tacl_load_file(&D, acl), 1);
    snprintf(pw, pn, "%s/sub-%s.pw", D.r.dir, name);
    cr_assert_eq(tsh("umask 077; echo 'pw-sub-%s' > '%s'", name, pw), 0);
}

static char ua[200], pa[400], ub[200], pb[400];

/* vrctl submit IN -o OUT [--chunk-seconds CS] as a submitter: its exit
 * status, the id in id. */
static int submit_cs(const char *url, const char *pw, const char *in, const char *out,
                     const char *cs, char *id, size_t n)
{
    char i[400], o[400];
    snprintf(i, sizeof i, "%s/%s", D.r.dir, in);
    snprintf(o, sizeof o, "%s/%s", D.r.dir, out);
    const char *args[] = { "submit", i, "-o", o, "--profile", "fast", cs ? "--chunk-seconds" : NULL,
                            cs, NULL };
    int rc = tacl_vrctl(url, pw, id, n, args);
    id[strcspn(id, "\n")] = '\0';
    return rc;
}

static int submit_as(const char *url, const char *pw, const char *in, const char *out, char *id,
                     size_t n)
{
    return submit_cs(url, pw, in, out, NULL, id, n);
}

/* Waits for job id to be recorded and to leave `queued` (or to fail);
 * its state into st. */
static void wait_taken(const char *id, char *st, size_t n)
{
    st[0] = '\0';
    for (int t = 0; t < 30000 && (!st[0] || !strcmp(st, "queued")); t += 100) {
        tmsleep(100);
        tacl_job_field(Q, id, "state", st, n);
    }
    if (!st[0])
        tsh("tail -30 '%s' >&2", D.log);
}

/* A job asked for as url's submitter is recorded failed, its error
 * holding `why`. */
static void refused(const char *url, const char *pw, const char *in, const char *out,
                    const char *why)
{
    char id[64], st[32], v[512];
    cr_assert_eq(submit_as(url, pw, in, out, id, sizeof id), 0, "%s", id);
    wait_taken(id, st, sizeof st);
    cr_assert_str_eq(st, "failed", "%s -> %s: %s", in, out, st);
    tacl_job_field(Q, id, "error", v, sizeof v);
    cr_assert(strstr(v, why), "%s", v);
}

/* Redis with alice's and bob's users, their clips (alice/a.mp4,
 * bob/b.mp4: secs long, a keyframe every gop frames), a controller taking both with
 * `--submitter alice:<alice> --submitter bob:2`. */
static void start_with(const char *alice, double secs, int gop)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    submitter("alice", pa, sizeof pa);
    submitter("bob", pb, sizeof pb);
    Q = tacl_up(&D, &A);
    snprintf(ua, sizeof ua, "redis://vrsub-alice@127.0.0.1:%d", A.port);
    snprintf(ub, sizeof ub, "redis://vrsub-bob@127.0.0.1:%d", A.port);
    cr_assert_eq(tsh("mkdir -p '%s/alice' '%s/bob'", D.r.dir, D.r.dir), 0);
    const char *clips[] = { "alice/a.mp4", "bob/b.mp4" };
    for (int i = 0; i < 2; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", D.r.dir, clips[i]);
        cr_assert_eq(tclip_make(p, secs, 160, gop, 0), 0);
    }
    const char *extra[] = { "--submitter", alice, "--submitter", "bob:2", NULL };
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
}

static void start(void)
{
    start_with("alice:2", 1, 5);
}

/* argv sent as alice: 1 when Redis answered, 0 when NOPERM refused it. */
static int alice_may(int argc, const char **argv)
{
    char url[200];
    snprintf(url, sizeof url, "redis://vrsub-alice:pw-sub-alice@127.0.0.1:%d", A.port);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &q, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmdargv(q, &e, argc, argv, NULL);
    cr_assert(r || strstr(e.msg, "NOPERM"), "alice's %s %s: %s", argv[0], argv[1], e.msg);
    freeReplyObject(r);
    rq_free(&q);
    return r != NULL;
}

/* NOPERM for argv as alice. */
static void alice_refused(int argc, const char **argv)
{
    cr_assert(!alice_may(argc, argv), "alice ran %s %s", argv[0], argv[1]);
}

Test(dist_sec_submitters, each_submitter_acts_as_itself_within_its_roots_and_limit)
{
    start();
    char id[64], st[32], v[512];

    /* her own files: recorded as hers */
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/a1.mkv", id, sizeof id), 0, "%s", id);
    wait_taken(id, st, sizeof st);
    cr_assert(!strcmp(st, "running") || !strcmp(st, "splitting"), "%s: %s", id, st);
    tacl_job_field(Q, id, "owner", v, sizeof v);
    cr_assert_str_eq(v, "alice");

    /* bob's input, or an output among bob's: failed, naming her root */
    refused(ua, pa, "bob/b.mp4", "alice/b.mkv", "outside submitter alice's input root");
    refused(ua, pa, "alice/a.mp4", "bob/stolen.mkv", "outside submitter alice's output root");

    /* her limit: two live jobs, the third refused; bob's still taken */
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/a2.mkv", id, sizeof id), 0);
    wait_taken(id, st, sizeof st);
    cr_assert_neq(strcmp(st, "failed"), 0, "alice's second job failed");
    refused(ua, pa, "alice/a.mp4", "alice/a3.mkv",
            "submitter alice has 2 jobs queued or running");
    cr_assert_eq(submit_as(ub, pb, "bob/b.mp4", "bob/b1.mkv", id, sizeof id), 0);
    wait_taken(id, st, sizeof st);
    cr_assert_neq(strcmp(st, "failed"), 0, "bob's job failed");
    tacl_job_field(Q, id, "owner", v, sizeof v);
    cr_assert_str_eq(v, "bob");

    /* and nothing around the controller, nor as bob */
    const char *as_bob[] = { "XADD", "vr:submit:bob", "*", "id", "x", "spec", "{}" };
    alice_refused(7, as_bob);
    const char *job[] = { "HSET", "vr:job:x", "state", "queued" };
    alice_refused(4, job);
    const char *jobs[] = { "XADD", "vr:jobs", "*", "job", "x" };
    alice_refused(5, jobs);
    const char *eval[] = { "EVAL", "return 1", "0" };
    alice_refused(3, eval);
}

/* vrctl CMD ID as url's submitter: its exit status. */
static int ask(const char *url, const char *pw, const char *cmd, const char *id)
{
    char out[400];
    const char *args[] = { cmd, id, NULL };
    return tacl_vrctl(url, pw, out, sizeof out, args);
}

static void state_is(const char *id, const char *want)
{
    char st[32];
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert_str_eq(st, want, "job %s", id);
}

Test(dist_sec_submitters, a_submitter_cancels_and_retries_its_own_jobs_and_no_one_elses)
{
    start();
    char a1[64], a2[64], a3[64], b1[64], st[32];
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/c1.mkv", a1, sizeof a1), 0);
    cr_assert_eq(submit_as(ub, pb, "bob/b.mp4", "bob/c1.mkv", b1, sizeof b1), 0);
    tacl_wait_state(Q, &D, a1, "running", 30000, st, sizeof st);
    tacl_wait_state(Q, &D, b1, "running", 30000, st, sizeof st);
    state_is(b1, "running"); /* no worker: both stay running */

    /* bob's job is no job of alice's, whatever she asks */
    cr_assert_eq(ask(ua, pa, "cancel", b1), 2);
    cr_assert_eq(ask(ua, pa, "retry", b1), 2);
    state_is(b1, "running");

    /* her own: cancelled, then run again */
    cr_assert_eq(ask(ua, pa, "cancel", a1), 0);
    state_is(a1, "cancelled");
    cr_assert_eq(ask(ub, pb, "retry", a1), 2); /* nor bob hers */
    state_is(a1, "cancelled");
    cr_assert_eq(ask(ua, pa, "cancel", a1), 1); /* already cancelled */
    cr_assert_eq(ask(ua, pa, "retry", a1), 0);
    tacl_job_field(Q, a1, "state", st, sizeof st);
    cr_assert(!strcmp(st, "running") || !strcmp(st, "queued"), "%s", st);

    /* a retry counts against her 2 live jobs */
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/c2.mkv", a2, sizeof a2), 0);
    wait_taken(a2, st, sizeof st);
    cr_assert_eq(ask(ua, pa, "cancel", a2), 0);
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/c3.mkv", a3, sizeof a3), 0);
    wait_taken(a3, st, sizeof st);
    cr_assert_neq(strcmp(st, "failed"), 0);
    cr_assert_eq(ask(ua, pa, "retry", a2), 1);
    state_is(a2, "cancelled");
}

/* Job id's chunks_total once it is chunked. */
static int chunks_of(const char *id)
{
    char st[32], v[32] = "";
    wait_taken(id, st, sizeof st);
    for (int t = 0; t < 20000 && !v[0]; t += 100) {
        tmsleep(100);
        tacl_job_field(Q, id, "chunks_total", v, sizeof v);
    }
    return atoi(v);
}

Test(dist_sec_submitters, a_submitters_live_jobs_hold_at_most_its_chunks_in_flight)
{
    start_with("alice:2:6", 4, 1); /* 4 s, every frame a keyframe; no worker: nothing ends */
    char k0[64], k1[64], k2[64], id[64];
    /* 0.2 s asks for 20 chunks; alone she gets 6 less one kept for her second job */
    cr_assert_eq(submit_cs(ua, pa, "alice/a.mp4", "alice/k0.mkv", "0.2", k0, sizeof k0), 0);
    int n0 = chunks_of(k0);
    cr_assert(n0 > 3 && n0 <= 5, "alice's first job %s has %d chunks (4..5: a live count, "
              "not 6 / 2 a job)", k0, n0);
    /* her second gets what the first leaves: both hold at most 6 */
    cr_assert_eq(submit_cs(ua, pa, "alice/a.mp4", "alice/k1.mkv", "0.2", k1, sizeof k1), 0);
    int n1 = chunks_of(k1);
    cr_assert(n1 >= 1 && n0 + n1 <= 6, "alice's jobs hold %d + %d chunks (at most 6)", n0, n1);
    /* the first cancelled, its chunks are no longer hers in flight */
    cr_assert_eq(ask(ua, pa, "cancel", k0), 0);
    cr_assert_eq(submit_cs(ua, pa, "alice/a.mp4", "alice/k2.mkv", "0.2", k2, sizeof k2), 0);
    int n2 = chunks_of(k2);
    cr_assert(n2 > n1 && n1 + n2 <= 6, "alice's live jobs hold %d + %d chunks", n1, n2);
    /* bob has no chunk limit: his 0.2 s chunks are his */
    cr_assert_eq(submit_cs(ub, pb, "bob/b.mp4", "bob/k.mkv", "0.2", id, sizeof id), 0);
    cr_assert_gt(chunks_of(id), 6, "bob's job");
}

Test(dist_sec_submitters, a_cut_for_an_idle_worker_never_passes_her_chunks_in_flight)
{
    /* alice:1:2: her one elastic job holds both her chunks; of three slowed
     * workers one stays idle, which a cut would feed (ctl_cut.c): the cut
     * must be refused (ctl_submitter_may_add_chunks), the job end uncut */
    start_with("alice:1:2", 4, 5);
    setenv("VR_TEST_FRAME_DELAY_MS", "200", 1);
    for (int i = 0; i < 3; i++)
        cr_assert_gt(tacl_worker(&D, &A), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tmsleep(1500); /* the workers are up and idle: the plan counts three */
    char id[64], st[32], cuts[32] = "";
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/g.mkv", id, sizeof id), 0, "%s", id);
    int n = chunks_of(id);
    cr_assert(n >= 1 && n <= 2, "alice's job %s has %d chunks (at most 2)", id, n);
    tacl_wait_state(Q, &D, id, "done", 120000, st, sizeof st);
    cr_assert_str_eq(st, "done", "job %s", id);
    tacl_job_field(Q, id, "cuts", cuts, sizeof cuts);
    tacl_job_field(Q, id, "chunks_total", st, sizeof st);
    cr_assert(atoi(cuts) == 0 && atoi(st) == n, "job %s was cut %s times to %s chunks, past "
              "alice's 2 in flight", id, cuts[0] ? cuts : "0", st);
}

/* Entries of alice's stream read and not acknowledged. */
static long long alice_pending(void)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(Q, &e, "XPENDING vr:submit:alice controllers");
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    freeReplyObject(r);
    return n;
}

Test(dist_sec_submitters, a_controller_killed_between_read_and_record_loses_no_entry)
{
    setenv("VR_TEST_INTAKE_DELAY_MS", "1000", 1); /* its intake stalls after each read */
    start();
    unsetenv("VR_TEST_INTAKE_DELAY_MS");
    char id[64], st[32], v[64];
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/k.mkv", id, sizeof id), 0);
    /* read, not yet recorded: the entry must still be pending */
    int seen = 0;
    for (int t = 0; t < 10000 && !seen; t += 20) {
        tmsleep(20);
        tacl_job_field(Q, id, "state", st, sizeof st);
        seen = alice_pending() == 1 && !st[0];
    }
    cr_assert(seen, "the entry was acknowledged before the job was recorded (state '%s')", st);
    kill(D.ctl, SIGKILL);
    tproc_wait(D.ctl, 5000);
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert_str_eq(st, "", "killed in the stall, yet the job was recorded");

    /* the next controller takes the entry its dead reader left */
    const char *extra[] = { "--submitter", "alice:2", "--submitter", "bob:2", NULL };
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
    wait_taken(id, st, sizeof st);
    cr_assert(!strcmp(st, "running") || !strcmp(st, "splitting"), "%s: %s", id, st);
    tacl_job_field(Q, id, "owner", v, sizeof v);
    cr_assert_str_eq(v, "alice");
    for (int t = 0; t < 5000 && alice_pending() != 0; t += 100)
        tmsleep(100);
    cr_assert_eq(alice_pending(), 0);
}

/* Field `f` of key k as alice: 1 read, 0 NOPERM. */
static int alice_reads(const char *k, const char *f)
{
    const char *hget[] = { "HGET", k, f };
    return alice_may(3, hget);
}

Test(dist_sec_submitters, a_submitter_reads_its_own_jobs_and_no_one_elses)
{
    start();
    cr_assert_gt(tacl_worker(&D, &A), 0);
    char a1[64], b1[64], st[32], out[8192], k[128];
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/r1.mkv", a1, sizeof a1), 0, "%s", a1);
    cr_assert_eq(submit_as(ub, pb, "bob/b.mp4", "bob/secret-name.mkv", b1, sizeof b1), 0);
    cr_assert(!strncmp(a1, "aliceS", 6) && !strncmp(b1, "bobS", 4), "ids %s %s", a1, b1);
    tacl_wait_state(Q, &D, a1, "done", 90000, st, sizeof st);
    tacl_wait_state(Q, &D, b1, "done", 90000, st, sizeof st);

    /* hers: record, chunk, events, by hand and through vrctl */
    snprintf(k, sizeof k, "vr:job:%s", a1);
    cr_assert(alice_reads(k, "state"));
    snprintf(k, sizeof k, "vr:chunk:%s:0", a1);
    cr_assert(alice_reads(k, "state"));
    snprintf(k, sizeof k, "vr:events:%s", a1);
    const char *ev[] = { "XRANGE", k, "-", "+" };
    cr_assert(alice_may(4, ev));
    const char *st_a[] = { "status", a1, NULL };
    cr_assert_eq(tacl_vrctl(ua, pa, out, sizeof out, st_a), 0, "%s", out);
    cr_assert(strstr(out, "done") && strstr(out, "r1.mkv"), "%s", out);
    const char *ev_a[] = { "events", a1, NULL };
    cr_assert_eq(tacl_vrctl(ua, pa, out, sizeof out, ev_a), 0, "%s", out);
    char sheet[400];
    snprintf(sheet, sizeof sheet, "%s/alice/r1.html", D.r.dir);
    const char *rep_a[] = { "report", a1, "-o", sheet, NULL };
    cr_assert_eq(tacl_vrctl(ua, pa, out, sizeof out, rep_a), 0, "%s", out);

    /* bob's: nothing, not even through vrctl */
    snprintf(k, sizeof k, "vr:job:%s", b1);
    cr_assert(!alice_reads(k, "spec"), "alice read bob's job record");
    snprintf(k, sizeof k, "vr:chunk:%s:0", b1);
    cr_assert(!alice_reads(k, "state"), "alice read bob's chunk record");
    snprintf(k, sizeof k, "vr:events:%s", b1);
    const char *ev_b[] = { "XRANGE", k, "-", "+" };
    cr_assert(!alice_may(4, ev_b), "alice read bob's events");
    const char *index[] = { "ZREVRANGE", "vr:index", "0", "-1" };
    alice_refused(4, index);
    const char *active[] = { "SMEMBERS", "vr:active" };
    alice_refused(2, active);
    const char *jobs[] = { "XRANGE", "vr:jobs", "-", "+" };
    alice_refused(4, jobs);
    const char *owned[] = { "SMEMBERS", "vr:owned:bob" };
    alice_refused(2, owned);
    /* her own asks she may read back (status/watch of a job not recorded
     * yet), bob's not */
    const char *asks_a[] = { "XRANGE", "vr:submit:alice", "-", "+" };
    cr_assert(alice_may(4, asks_a), "alice cannot read her own stream");
    const char *asks_b[] = { "XRANGE", "vr:submit:bob", "-", "+" };
    alice_refused(4, asks_b);
    const char *st_b[] = { "status", b1, NULL };
    cr_assert_neq(tacl_vrctl(ua, pa, out, sizeof out, st_b), 0, "%s", out);
    cr_assert(!strstr(out, "secret-name"), "%s", out);

    /* her list: her live jobs, none of bob's */
    char a2[64];
    cr_assert_eq(submit_as(ua, pa, "alice/a.mp4", "alice/r2.mkv", a2, sizeof a2), 0, "%s", a2);
    cr_assert_eq(submit_as(ub, pb, "bob/b.mp4", "bob/secret-two.mkv", b1, sizeof b1), 0);
    tacl_wait_state(Q, &D, a2, "done", 90000, st, sizeof st);
    tacl_wait_state(Q, &D, b1, "done", 90000, st, sizeof st);
    const char *list[] = { "status", "--json", NULL };
    int rc = tacl_vrctl(ua, pa, out, sizeof out, list);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, a2) && !strstr(out, "secret") && !strstr(out, "bobS"), "%s", out);
}

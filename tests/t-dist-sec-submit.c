/*
 * t-dist-sec-submit.c - the operator's `vrctl submit` behind a controller
 * (issue 41, finding 3), against a real redis-server under
 * deploy/redis-users.acl: the shared `vrctl` user has no EVAL and writes
 * no job record, index or active set, so vrctl asks in vr:submit:@ops and
 * a controller records the job, after checking every field of the ask
 * again (it is untrusted: anyone with the user may XADD anything), and
 * answers; vrctl prints a refusal and exits 2.
 */
#include "job.h"
#include "rq.h"
#include "rq_submit.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <jansson.h>
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

TestSuite(dist_sec_submit, .fini = teardown, .timeout = 200);

/* The vrctl user's connection (rq_free it). */
static struct rq *as_vrctl(void)
{
    char url[200];
    snprintf(url, sizeof url, "redis://vrctl:pw-vrctl@127.0.0.1:%d", A.port);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &q, &e), 0, "%s", e.msg);
    return q;
}

#define REFUSED(...) TACL_VRCTL_REFUSED(&A, __VA_ARGS__)

Test(dist_sec_submit, the_vrctl_user_has_no_eval_and_a_controller_records_its_job)
{
    Q = tacl_up(&D, &A);
    char indir[400], in[480], out[480], outside[480], id[128], st[32], log[480];
    snprintf(indir, sizeof indir, "%s/in", D.r.dir);
    const char *extra[] = { "--input-root", indir, NULL };
    cr_assert_eq(tsh("mkdir -p '%s'", indir), 0); /* before the controller that checks it */
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
    snprintf(in, sizeof in, "%s/a.mp4", indir);
    snprintf(outside, sizeof outside, "%s/b.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("cp '%s' '%s'", in, outside), 0);

    /* no script, no job record, state key, index, active set or job stream */
    REFUSED("EVAL", "return 1", "0");
    REFUSED("HSET", "vr:job:20261129-000000-00000000", "state", "queued");
    REFUSED("SET", "vr:jstate:20261129-000000-00000000", "queued");
    REFUSED("ZADD", "vr:index", "1", "20261129-000000-00000000");
    REFUSED("SADD", "vr:active", "20261129-000000-00000000");
    REFUSED("XADD", "vr:jobs", "*", "job", "20261129-000000-00000000");

    /* submit prints the id once a controller recorded the job */
    cr_assert_eq(tacl_submit(&A, in, out, NULL, id, sizeof id), 0, "%s", id);
    cr_assert(job_id_valid(id), "not an id: '%s'", id);
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert(!strcmp(st, "queued") || !strcmp(st, "splitting") || !strcmp(st, "running"),
              "job %s is '%s' when submit returned", id, st);

    /* vrctl's own checks pass; the controller's root refuses: vrctl says why */
    snprintf(log, sizeof log, "%s/submit.err", D.r.dir);
    const char *bin = getenv("VR_BIN_DIR");
    cr_assert_eq(tsh("'%s/vrctl' submit '%s' -o '%s/o2.mkv' --profile fast --redis '%s' "
                     "--redis-password-file '%s' >/dev/null 2>'%s'; test $? = 2",
                     bin ? bin : "bin", outside, D.r.dir, A.uv, A.pv, log), 0);
    cr_assert_eq(tsh("grep 'vrctl submit: input .*b.mp4 is outside the input root' '%s'", log),
                 0);
}

/* A hand-written ask as the vrctl user: {id, spec, frames_est}; the key
 * of the controller's answer ("<code> <text>") into key (n bytes). */
static void ask_send(const char *id, const char *spec, const char *frames, char *key, size_t n)
{
    struct rq *q = as_vrctl();
    vr_err e = { 0 };
    const char *argv[] = { "XADD", "vr:submit:@ops", "*", "id", id, "spec", spec,
                           "frames_est", frames };
    redisReply *r = rq_cmdargv(q, &e, 9, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "XADD: %s", e.msg);
    snprintf(key, n, "vr:reply:@ops:%s", r->str);
    freeReplyObject(r);
    rq_free(&q);
}

/* The answer under key (of job id's ask) into text (n bytes). */
static void ask_answer(const char *id, const char *key, char *text, size_t n)
{
    text[0] = '\0';
    for (int t = 0; t < 20000 && !text[0]; t += 50) {
        rq_hget(Q, key, "text", text, n, NULL);
        tmsleep(50);
    }
    cr_assert(text[0], "no answer to job %s", id);
}

/* A spec of in -> out under id, with field `key` set to `v` (NULL: none). */
static char *spec_with(const char *id, const char *in, const char *out, const char *key,
                       json_t *v)
{
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.id, sizeof js.id, "%s", id);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s", out);
    snprintf(js.profile, sizeof js.profile, "fast");
    char *text = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &text, &e), 0, "%s", e.msg);
    json_t *o = json_loads(text, 0, NULL);
    free(text);
    if (key)
        json_object_set_new(o, key, v);
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* Ask with field key = v (NULL: a good spec): the answer must begin with
 * `want`; the job's record state then is `state` ("" none, "live" queued
 * or on its way). The asks are all sent first and answered in their order
 * (the controller drains its stream once a second: one by one, 13 asks
 * took 13 s); checks_answered() waits and checks. */
static struct asked {
    char id[64], key[160], want[128], state[16], what[32];
} asked[16];
static int nasked;

static void check(const char *id, const char *key, json_t *v, const char *frames,
                  const char *want, const char *state)
{
    cr_assert_lt(nasked, 16);
    struct asked *a = &asked[nasked++];
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/%s.mkv", D.r.dir, id);
    snprintf(a->id, sizeof a->id, "%s", id);
    snprintf(a->want, sizeof a->want, "%s", want);
    snprintf(a->state, sizeof a->state, "%s", state);
    snprintf(a->what, sizeof a->what, "%s", key ? key : "good");
    char *spec = spec_with(id, in, out, key, v);
    ask_send(id, spec, frames, a->key, sizeof a->key);
    free(spec);
}

static void checks_answered(void)
{
    for (int i = 0; i < nasked; i++) {
        const struct asked *a = &asked[i];
        char text[600], st[32];
        ask_answer(a->id, a->key, text, sizeof text);
        cr_assert(!strncmp(text, a->want, strlen(a->want)), "job %s (%s): answered '%s'", a->id,
                  a->what, text);
        tacl_job_field(Q, a->id, "state", st, sizeof st);
        if (!strcmp(a->state, "live"))
            cr_assert(st[0] && !job_state_ended(st), "job %s is '%s'", a->id, st);
        else
            cr_assert_str_eq(st, a->state, "job %s (%s)", a->id, a->what);
    }
    nasked = 0;
}

Test(dist_sec_submit, every_field_of_a_hand_written_ask_is_checked)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0); /* no worker: a good job stays live */
    char in[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);

    /* malformed: answered, never recorded */
    check("20261129-000001-00000001", "priority", json_integer(500), "10", "2 job spec", "");
    check("20261129-000001-00000002", "max_attempts", json_integer(0), "10", "2 job spec", "");
    check("20261129-000001-00000003", "output_kind", json_string("x"), "10", "2 job spec", "");
    check("20261129-000001-00000004", "input", json_string("rel/in.mp4"), "10", "2 job spec", "");
    check("20261129-000001-00000005", NULL, NULL, "-3", "2 frames_est", "");
    check("20261129-000001-00000006", NULL, NULL, "99999999999", "2 frames_est", "");
    check("aliceS0001", NULL, NULL, "10", "2 job id aliceS0001 is not of the form", "");
    /* checked against the roots and the profile: recorded failed, saying why */
    check("20261129-000001-00000007", "output", json_string("/etc/x.mkv"), "10",
          "2 output /etc/x.mkv is outside the output root", "failed");
    check("20261129-000001-00000008", "input", json_string("/etc/passwd"), "10",
          "2 input /etc/passwd is outside the input root", "failed");
    check("20261129-000001-00000009", "profile", json_string("ultra"), "10",
          "2 unknown profile 'ultra'", "failed");
    check("20261129-000001-00000010", "config", json_string("{\"no_such_key\": 1}"), "10",
          "2 the job's config: unknown key 'no_such_key'", "failed");
    /* a good one: recorded, its id the answer; its id again: not a second job */
    check("20261129-000001-00000011", NULL, NULL, "10", "0 20261129-000001-00000011", "live");
    check("20261129-000001-00000011", "priority", json_integer(5), "10",
          "1 job 20261129-000001-00000011 exists already", "live");
    checks_answered();
}

/* Submitted as the vrctl user with no controller alive, a job is recorded
 * when one starts, and submit returns at once. `vrctl status ID` says it
 * is asked, and `vrctl watch ID` waits for a controller to record it and
 * follows it to done: it said "no job" before (seen in CI, watch right
 * after submit while the test's controller was still starting). An id
 * nobody asked for is still "no job" at once. */
Test(dist_sec_submit, watch_waits_for_a_job_asked_before_any_controller, .timeout = 150)
{
    Q = tacl_up(&D, &A);
    char in[400], out[400], id[128], buf[2048], log[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(log, sizeof log, "%s/watch.log", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tacl_submit(&A, in, out, NULL, id, sizeof id), 0, "%s", id);
    cr_assert(job_id_valid(id), "not an id: '%s'", id);

    const char *status[] = { "status", id, NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, status), 0, "%s", buf);
    cr_assert(strstr(buf, "asked, not recorded yet"), "%s", buf);
    const char *other[] = { "watch", "20261129-000002-00000001", NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, other), 2, "%s", buf);

    const char *watch[] = { "vrctl", "watch", id, "--redis", A.uv, "--redis-password-file", A.pv,
                            NULL };
    pid_t w = tproc_spawn("vrctl", watch, log);
    tmsleep(1500); /* watch is waiting: no controller has recorded it */
    cr_assert_eq(kill(w, 0), 0, "watch ended before any controller ran");
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0);
    cr_assert_gt(tacl_worker(&D, &A), 0);
    int rc = tproc_wait(w, 120000);
    if (rc)
        tsh("tail -20 '%s' >&2", log);
    cr_assert_eq(rc, 0, "watch did not follow job %s to done", id);
    cr_assert_eq(tsh("grep -q 'waiting for a controller' '%s'", log), 0);
    char st[32];
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert_str_eq(st, "done");
}

/*
 * t-dist-sec-redis.c - bad input caught early and secrets kept out of sight:
 * numbers given as options are parsed strictly (exit 2 naming the option);
 * `vrctl run --lease-seconds 0` is refused before anything starts; the
 * password file keeps the password out of /proc/PID/cmdline; a wrong or
 * missing password ends the controller and the worker at once; a job whose
 * profile is unknown or whose spec names another id fails at its start
 * with no chunk made; a corrupt bitstream and a 1x1 video fail their chunk
 * once, as a permanent error, not max_attempts times.
 */
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_redis, .fini = teardown, .timeout = 150);

/* Runs `$VR_BIN_DIR/<cmdline>` with stderr into out; returns the status. */
static int run_bin(char *out, size_t n, const char *cmdline)
{
    const char *bin = getenv("VR_BIN_DIR");
    return tsh_out(out, n, "%s/%s 2>&1", bin ? bin : "bin", cmdline);
}

/* ---- strict numbers ---- */

Test(dist_sec_redis, bad_numbers_are_usage_errors_naming_the_option, .timeout = 60)
{
    static const struct { const char *cmd, *opt; } bad[] = {
        { "vrctl submit in.mp4 -o o.mkv --priority abc", "--priority" },
        { "vrctl submit in.mp4 -o o.mkv --priority 5x", "--priority" },
        { "vrctl submit in.mp4 -o o.mkv --chunk-seconds 0.5xyz", "--chunk-seconds" },
        { "vrctl submit in.mp4 -o o.mkv --max-attempts 1e2", "--max-attempts" },
        { "vrctl submit in.mp4 -o o.mkv --max-attempts ' 2'", "--max-attempts" },
        { "vrctl run in.mp4 -o o.mkv --workers 0x2", "--workers" },
        { "vrctl run in.mp4 -o o.mkv --per-gpu 2.0", "--per-gpu" },
        { "vr-controller run --storage /tmp --lease-seconds 30s", "--lease-seconds" },
        { "vr-controller run --storage /tmp --lease-seconds nan", "--lease-seconds" },
        { "vr-worker serve --cpu --storage /tmp --heartbeat-ms 1e3", "--heartbeat-ms" },
        { "vr-worker serve --cpu --storage /tmp --max-chunks -1", "--max-chunks" },
        { "vr-worker serve --gpu 1x --storage /tmp --redis unix:///nonexistent", "--gpu" },
        { "vr-worker tune --size 64x64junk", "--size" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[2048];
        int rc = run_bin(out, sizeof out, bad[i].cmd);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", bad[i].cmd, rc, out);
        cr_assert(strstr(out, bad[i].opt), "%s: '%s' not named: %s", bad[i].cmd, bad[i].opt, out);
    }
}

Test(dist_sec_redis, run_refuses_lease_zero_before_starting_anything, .timeout = 60)
{
    char dir[64], in[128], cmd[512], out[2048];
    snprintf(dir, sizeof dir, "/tmp/vrtest-lease-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(in, sizeof in, "%s/in.mp4", dir);
    cr_assert_eq(tclip_make(in, 1, 128, 5, 0), 0);
    /* a good clip and output: without the check this would start Redis */
    snprintf(cmd, sizeof cmd, "vrctl run '%s' -o '%s/o.mkv' --cpu --lease-seconds 0", in, dir);
    int rc = run_bin(out, sizeof out, cmd);
    tsh("rm -rf '%s'", dir);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--lease-seconds 0: out of range"), "%s", out);
    cr_assert_null(strstr(out, "temp dir"), "it started: %s", out);
}

/* ---- the password ---- */

/* Makes Redis want `pass` and writes it, and a wrong one, into files. */
static void want_password(const char *pass, char *file, char *bad, size_t n)
{
    const char *set[] = { "CONFIG", "SET", "requirepass", pass, NULL };
    cr_assert_eq(tredis_cmd(&D.r, set), 0);
    snprintf(file, n, "%s/pw", D.r.dir);
    snprintf(bad, n, "%s/badpw", D.r.dir);
    cr_assert_eq(tsh("printf '%%s\\n' '%s' > '%s' && chmod 600 '%s'", pass, file, file), 0);
    cr_assert_eq(tsh("echo wrong-guess > '%s' && chmod 600 '%s'", bad, bad), 0);
}

static int log_has(const char *what)
{
    return tsh("grep -q -- '%s' '%s'", what, D.log) == 0;
}

Test(dist_sec_redis, wrong_or_missing_password_ends_controller_and_worker)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char file[320], bad[320];
    want_password("Tr0ub4dor&3", file, bad, sizeof file);
    const char *ctl[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                          "--redis-password-file", bad, NULL };
    const char *wk[] = { "vr-worker", "serve", "--cpu", "--redis", D.r.url, "--storage", D.storage,
                         "--redis-password-file", bad, NULL };
    const char *nopw[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                           NULL };
    cr_assert_neq(tproc_wait(tproc_spawn("vr-controller", ctl, D.log), 10000), 0);
    cr_assert_neq(tproc_wait(tproc_spawn("vr-worker", wk, D.log), 10000), 0);
    cr_assert_neq(tproc_wait(tproc_spawn("vr-controller", nopw, D.log), 10000), 0);
    cr_assert(log_has("AUTH refused: WRONGPASS"), "no AUTH message");
    cr_assert(log_has("NOAUTH"), "no NOAUTH message");
    cr_assert(!log_has("wrong-guess"), "the password was logged");
    cr_assert(!log_has("waiting for it"), "a wrong password was waited on");
    char out[2048], cmd[800];
    snprintf(cmd, sizeof cmd, "vrctl status --redis '%s' --redis-password-file '%s'", D.r.url, bad);
    cr_assert_eq(run_bin(out, sizeof out, cmd), 1, "%s", out);
    cr_assert(strstr(out, "AUTH refused"), "%s", out);
}

/* 1 when /proc/<pid>/cmdline holds `s`. */
static int cmdline_has(pid_t pid, const char *s)
{
    return tsh("tr '\\0' ' ' < /proc/%d/cmdline | grep -qF -- '%s'", (int)pid, s) == 0;
}

Test(dist_sec_redis, password_file_keeps_it_out_of_argv)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char file[320], bad[320];
    want_password("c0rrect-h0rse", file, bad, sizeof file);
    const char *ctl[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                          "--redis-password-file", file, NULL };
    pid_t c = tproc_spawn("vr-controller", ctl, D.log);
    setenv("VR_REDIS_PASSWORD_FILE", file, 1); /* the worker takes the variable */
    const char *wk[] = { "vr-worker", "serve", "--cpu", "--redis", D.r.url, "--storage", D.storage,
                         NULL };
    pid_t w = tproc_spawn("vr-worker", wk, D.log);
    unsetenv("VR_REDIS_PASSWORD_FILE");
    rq_password_file(file);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    rq_password_file(NULL);
    long long nw = 0, nc = 0;
    for (int i = 0; i < 300 && (nw < 1 || nc < 1); i++) {
        tmsleep(50);
        redisReply *r = rq_cmd(Q, NULL, "SCARD " RQ_WORKERS);
        nw = r ? r->integer : 0;
        freeReplyObject(r);
        r = rq_cmd(Q, NULL, "KEYS " RQ_CONTROLLER_PREFIX "*");
        nc = r ? (long long)r->elements : 0;
        freeReplyObject(r);
    }
    cr_assert_eq(nw, 1, "the worker did not come up");
    cr_assert_eq(nc, 1, "the controller did not come up");
    cr_assert(cmdline_has(c, "--redis-password-file"));
    cr_assert(!cmdline_has(c, "c0rrect-h0rse"), "password in the controller's argv");
    cr_assert(!cmdline_has(w, "c0rrect-h0rse"), "password in the worker's argv");
    cr_assert_neq(tsh("grep -q c0rrect-h0rse /proc/%d/environ", (int)w), 0);
    kill(c, SIGTERM);
    kill(w, SIGTERM);
    cr_assert_eq(tproc_wait(c, 20000), 0);
    cr_assert_eq(tproc_wait(w, 20000), 0);
}

/* ---- checks at the start of a job ---- */

/* Puts a spec straight into Redis under `key` (what a buggy or hostile
 * client could do; vrctl checks all this before it submits). */
static void put_spec(const char *key, const char *spec_id, const char *profile, const char *in)
{
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.id, sizeof js.id, "%s", spec_id);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s/out-%s.mkv", D.r.dir, key);
    snprintf(js.profile, sizeof js.profile, "%s", profile);
    js.chunk_seconds = 1;
    js.created_ms = rq_now_ms();
    char *json = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &json, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_submit(Q, key, json, js.created_ms, 30, 0, &e), 0, "%s", e.msg);
    free(json);
}

static void wait_state(const char *id, const char *want, int timeout_ms)
{
    char st[32] = "";
    for (int t = 0; t < timeout_ms; t += 50) {
        if (rq_job_state(Q, id, st, sizeof st, NULL) > 0 && !strcmp(st, want))
            return;
        tmsleep(50);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("job %s is '%s', not %s, after %d ms", id, st, want, timeout_ms);
}

static void job_error(const char *id, char *out, size_t n)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    out[0] = '\0';
    rq_hget(Q, jk, "error", out, n, NULL);
}

static long long chunk_keys(const char *id)
{
    redisReply *r = rq_cmd(Q, NULL, "KEYS vr:chunk:%s:*", id);
    long long n = r ? (long long)r->elements : -1;
    freeReplyObject(r);
    return n;
}

Test(dist_sec_redis, bad_profile_or_foreign_id_fails_the_job_at_once)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 1), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], a[64], b[64], c[64], err[512];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 128, 5, 0), 0);
    job_new_id(a, sizeof a);
    job_new_id(b, sizeof b);
    job_new_id(c, sizeof c);
    put_spec(a, a, "turbo", in);
    put_spec(b, c, "fast", in); /* key b, spec says c */
    wait_state(a, "failed", 30000);
    wait_state(b, "failed", 30000);
    job_error(a, err, sizeof err);
    cr_assert(strstr(err, "unknown profile 'turbo'") && strstr(err, "fast, balanced, quality"),
              "%s", err);
    job_error(b, err, sizeof err);
    cr_assert(strstr(err, "another id") && strstr(err, c), "%s", err);
    cr_assert_eq(chunk_keys(a), 0, "chunks made for a job with a bad profile");
    cr_assert_eq(chunk_keys(b), 0, "chunks made for a job with a foreign spec");
    cr_assert_eq(chunk_keys(c), 0);
}

/* ---- permanent chunk failures ---- */

static void chunk_of_error(const char *err, int *idx)
{
    const char *p = strstr(err, "chunk ");
    cr_assert_not_null(p, "%s", err);
    cr_assert_eq(sscanf(p, "chunk %d", idx), 1, "%s", err);
}

Test(dist_sec_redis, corrupt_bitstream_and_1x1_fail_once_as_permanent)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 1), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char bad[400], tiny[400], oa[400], ob[400], ida[64], idb[64], err[512];
    snprintf(bad, sizeof bad, "%s/corrupt.mp4", D.r.dir);
    snprintf(tiny, sizeof tiny, "%s/tiny.mkv", D.r.dir);
    snprintf(oa, sizeof oa, "%s/a.mkv", D.r.dir);
    snprintf(ob, sizeof ob, "%s/b.mkv", D.r.dir);
    cr_assert_eq(tclip_make_damaged_head(bad), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=s=1x1:r=10 -t 2 -c:v ffv1 '%s'",
                     tiny), 0);
    /* fail, not the default conceal: the damage is the point here */
    const char *strict[] = { "--on-decode-error", "fail", NULL };
    cr_assert_eq(tdist_submit(&D, bad, oa, strict, ida, sizeof ida), 0);
    cr_assert_eq(tdist_submit(&D, tiny, ob, NULL, idb, sizeof idb), 0);
    cr_assert_eq(tdist_watch(&D, ida, 90000), 1, "the corrupt clip did not fail");
    cr_assert_eq(tdist_watch(&D, idb, 90000), 1, "the 1x1 clip did not fail");
    const char *ids[] = { ida, idb };
    const char *why[] = { "cannot decode", "too small" };
    for (int k = 0; k < 2; k++) {
        int idx;
        job_error(ids[k], err, sizeof err);
        cr_assert(strstr(err, "permanent") && strstr(err, why[k]), "%s", err);
        chunk_of_error(err, &idx);
        char ck[128], perm[8] = "";
        long long att = 0, max = 0;
        rq_key_chunk(ck, sizeof ck, ids[k], idx);
        rq_hget_ll(Q, ck, "attempts", &att, NULL);
        rq_hget_ll(Q, ck, "max_attempts", &max, NULL);
        rq_hget(Q, ck, "permanent", perm, sizeof perm, NULL);
        cr_assert_eq(att, 1, "job %s chunk %d tried %lld times", ids[k], idx, att);
        cr_assert_gt(max, 1);
        cr_assert_str_eq(perm, "1");
    }
}

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
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_acl, .fini = teardown, .timeout = 150);

/* ACL SETUSER for every `user NAME RULES...` line of the file, with each
 * ">CHANGE-ME-<role>" password made ">pw-<role>". Returns the users set. */
static int load_acl_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[2048];
    int users = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "user ", 5))
            continue;
        const char *argv[64] = { "ACL", "SETUSER" };
        char words[64][80];
        int n = 2;
        for (char *w = strtok(line + 5, " \n"); w && n < 63; w = strtok(NULL, " \n")) {
            if (!strncmp(w, ">CHANGE-ME-", 11))
                snprintf(words[n], sizeof words[n], ">pw-%s", w + 11);
            else
                snprintf(words[n], sizeof words[n], "%s", w);
            argv[n] = words[n];
            n++;
        }
        argv[n] = NULL;
        cr_assert_eq(tredis_cmd(&D.r, argv), 0, "ACL SETUSER %s refused", argv[2]);
        users++;
    }
    fclose(f);
    return users;
}

/* Writes pw-<role> into <dir>/<role>.pw (mode 600); the path into out. */
static void pw_file(const char *role, char *out, size_t n)
{
    snprintf(out, n, "%s/%s.pw", D.r.dir, role);
    cr_assert_eq(tsh("umask 077; echo 'pw-%s' > '%s'", role, out), 0);
}

/* vrctl ARGS as the given user; stdout into out; the exit status. */
static int vrctl_as(const char *url, const char *pw, char *out, size_t n, const char *const *args)
{
    const char *argv[24] = { "vrctl" };
    int k = 1;
    for (int i = 0; args[i]; i++)
        argv[k++] = args[i];
    argv[k++] = "--redis";
    argv[k++] = url;
    argv[k++] = "--redis-password-file";
    argv[k++] = pw;
    argv[k] = NULL;
    return tproc_run("vrctl", argv, out, n);
}

Test(dist_sec_acl, each_role_runs_a_job_as_its_own_user)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    int port = tredis_tcp(&D.r, "127.0.0.1");
    cr_assert_gt(port, 0);
    char acl[4200];
    const char *data = getenv("VR_DATA_DIR");
    snprintf(acl, sizeof acl, "%s/deploy/redis-users.acl", data ? data : ".");
    cr_assert_eq(load_acl_file(acl), 3);
    /* an admin user for this test's own look at ACL LOG, then no default */
    const char *admin[] = { "ACL", "SETUSER", "test-admin", "on", ">admin-pw", "~*", "&*", "+@all",
                            NULL };
    const char *off[] = { "ACL", "SETUSER", "default", "off", NULL };
    cr_assert_eq(tredis_cmd(&D.r, admin), 0);
    cr_assert_eq(tredis_cmd(&D.r, off), 0);

    char uc[128], uw[128], uv[128], pc[320], pw[320], pv[320];
    snprintf(uc, sizeof uc, "redis://vr-controller@127.0.0.1:%d", port);
    snprintf(uw, sizeof uw, "redis://vr-worker@127.0.0.1:%d", port);
    snprintf(uv, sizeof uv, "redis://vrctl@127.0.0.1:%d", port);
    pw_file("controller", pc, sizeof pc);
    pw_file("worker", pw, sizeof pw);
    pw_file("vrctl", pv, sizeof pv);
    const char *ctl[] = { "vr-controller", "run", "--redis", uc, "--redis-password-file", pc,
                          "--storage", D.storage, "--input-root", D.r.dir, "--output-root",
                          D.r.dir, "--lease-seconds", "5", "--notify-attempts", "1", NULL };
    const char *wk[] = { "vr-worker", "serve", "--cpu", "--redis", uw, "--redis-password-file", pw,
                         "--storage", D.storage, "--input-root", D.r.dir, "--heartbeat-ms",
                         "300", NULL };
    D.ctl = tproc_spawn("vr-controller", ctl, D.log);
    D.w[D.nw++] = tproc_spawn("vr-worker", wk, D.log);

    char in[400], out[400], id[128], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    /* a port that was free a moment ago: the POST is refused */
    int dead = tfree_port("127.0.0.1");
    cr_assert_gt(dead, 0);
    char hook[64];
    snprintf(hook, sizeof hook, "http://127.0.0.1:%d/hook", dead);
    const char *sub[] = { "submit", in, "-o", out, "--profile", "fast", "--chunk-seconds", "1",
                          "--notify", hook, NULL };
    int rc = vrctl_as(uv, pv, id, sizeof id, sub);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "vrctl submit as vrctl failed");
    id[strcspn(id, "\n")] = '\0';
    const char *watch[] = { "watch", id, NULL };
    rc = vrctl_as(uv, pv, buf, sizeof buf, watch);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not complete under per-role users");
    const char *status[] = { "status", id, "--json", NULL };
    const char *workers[] = { "workers", NULL };
    const char *metrics[] = { "metrics", id, NULL };
    cr_assert_eq(vrctl_as(uv, pv, buf, sizeof buf, status), 0);
    cr_assert(strstr(buf, "\"done\""), "%s", buf);
    cr_assert_eq(vrctl_as(uv, pv, buf, sizeof buf, workers), 0);
    cr_assert_eq(vrctl_as(uv, pv, buf, sizeof buf, metrics), 0);
    char n[64];
    tsh_out(n, sizeof n, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(n), 30);

    /* nothing was denied on the way */
    char ua[128];
    snprintf(ua, sizeof ua, "redis://test-admin:admin-pw@127.0.0.1:%d", port);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(ua, 2000, &q, &e), 0, "%s", e.msg);
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
             in, out, uw, pw);
    rc = tsh_out(buf, sizeof buf, "%s", cmd);
    cr_assert_eq(rc, 1, "the worker's user submitted a job: %s", buf);
    cr_assert(strstr(buf, "ACL user lacks"), "%s", buf);
}

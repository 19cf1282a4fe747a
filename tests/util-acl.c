/*
 * util-acl.c - a test fleet whose processes log in as the users of
 * deploy/redis-users.acl (see util-acl.h).
 */
#include "util-acl.h"

#include "job.h"
#include "rq.h"
#include "rq_fleet.h"
#include "rq_jobs.h"
#include "rq_submit.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int tacl_load_file(struct tdist *d, const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[2048];
    int users = 0;
    while (fgets(line, sizeof line, f)) {
        /* the default user's line is the caller's (tacl_start turns it off
         * last, since the test's own connections log in as it until then) */
        if (strncmp(line, "user ", 5) || !strncmp(line, "user default ", 13))
            continue;
        const char *argv[64] = { "ACL", "SETUSER" };
        char words[64][160];
        int n = 2, in_selector = 0;
        for (char *w = strtok(line + 5, " \n"); w && n < 63; w = strtok(NULL, " \n")) {
            if (in_selector) { /* "(~k +cmd ...)" is one argument */
                size_t l = strlen(words[n - 1]);
                snprintf(words[n - 1] + l, sizeof words[n - 1] - l, " %s", w);
                in_selector = !strchr(w, ')');
                continue;
            }
            if (!strncmp(w, ">CHANGE-ME-", 11))
                snprintf(words[n], sizeof words[n], ">pw-%s", w + 11);
            else
                snprintf(words[n], sizeof words[n], "%s", w);
            in_selector = w[0] == '(' && !strchr(w, ')');
            argv[n] = words[n];
            n++;
        }
        argv[n] = NULL;
        cr_assert_eq(tredis_cmd(&d->r, argv), 0, "ACL SETUSER %s refused", argv[2]);
        users++;
    }
    fclose(f);
    return users;
}

/* Writes pw-<role> into <dir>/<role>.pw (mode 600); the path into out. */
static void tacl_pw_file(const struct tdist *d, const char *role, char *out, size_t n)
{
    snprintf(out, n, "%s/%s.pw", d->r.dir, role);
    cr_assert_eq(tsh("umask 077; echo 'pw-%s' > '%s'", role, out), 0);
}

/* The users' addresses on a->port and their password files. */
static void tacl_roles(const struct tdist *d, struct tacl *a)
{
    snprintf(a->uc, sizeof a->uc, "redis://vr-controller@127.0.0.1:%d", a->port);
    snprintf(a->uw, sizeof a->uw, "redis://vr-worker@127.0.0.1:%d", a->port);
    snprintf(a->uv, sizeof a->uv, "redis://vrctl@127.0.0.1:%d", a->port);
    tacl_pw_file(d, "controller", a->pc, sizeof a->pc);
    tacl_pw_file(d, "worker", a->pw, sizeof a->pw);
    tacl_pw_file(d, "vrctl", a->pv, sizeof a->pv);
}

static const char *tacl_shipped(char *out, size_t n)
{
    const char *data = getenv("VR_DATA_DIR");
    snprintf(out, n, "%s/deploy/redis-users.acl", data ? data : ".");
    return out;
}

void tacl_start_aclfile(struct tdist *d, struct tacl *a)
{
    cr_assert_eq(tdist_start(d, 1, 5, 0, 0), 0);
    char shipped[4200];
    tacl_shipped(shipped, sizeof shipped);
    snprintf(d->r.aclfile, sizeof d->r.aclfile, "%s/users.acl", d->r.dir);
    cr_assert_eq(tsh("sed 's/>CHANGE-ME-/>pw-/' '%s' > '%s' && "
                     "echo 'user test-admin on >admin-pw ~* &* +@all' >> '%s'",
                     shipped, d->r.aclfile, d->r.aclfile), 0);
    d->r.port = a->port = tfree_port("127.0.0.1");
    cr_assert_gt(a->port, 0);
    cr_assert_eq(tredis_restart(&d->r), 0, "redis-server refused %s", d->r.aclfile);
    tacl_roles(d, a);
}

void tacl_start(struct tdist *d, struct tacl *a)
{
    if (!d->r.dir[0])
        cr_assert_eq(tdist_start(d, 0, 5, 0, 0), 0);
    a->port = tredis_tcp(&d->r, "127.0.0.1");
    cr_assert_gt(a->port, 0);
    char acl[4200];
    cr_assert_eq(tacl_load_file(d, tacl_shipped(acl, sizeof acl)), 3);
    const char *admin[] = { "ACL", "SETUSER", "test-admin", "on", ">admin-pw", "~*", "&*", "+@all",
                            NULL };
    const char *off[] = { "ACL", "SETUSER", "default", "off", NULL };
    cr_assert_eq(tredis_cmd(&d->r, admin), 0);
    cr_assert_eq(tredis_cmd(&d->r, off), 0);
    tacl_roles(d, a);
}

/* A connection to a's server as user:password (rq_free it). */
static struct rq *tacl_connect(const struct tacl *a, const char *user, const char *pw)
{
    char url[200];
    snprintf(url, sizeof url, "redis://%s:%s@127.0.0.1:%d", user, pw, a->port);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 5000, &q, &e), 0, "%s", e.msg);
    return q;
}

struct rq *tacl_admin(const struct tacl *a)
{
    return tacl_connect(a, "test-admin", "admin-pw");
}

pid_t tacl_controller(struct tdist *d, const struct tacl *a, const char *const *extra)
{
    const char *ctl[40] = { "vr-controller", "run", "--redis", a->uc, "--redis-password-file",
                            a->pc, "--storage", d->storage, "--input-root", d->r.dir,
                            "--output-root", d->r.dir, "--lease-seconds", "5",
                            "--notify-attempts", "1", "--notify-allow-private" };
    int k = 17;
    for (int i = 0; extra && extra[i] && k < 39; i++)
        ctl[k++] = extra[i];
    ctl[k] = NULL;
    d->ctl = tproc_spawn("vr-controller", ctl, d->log);
    /* alive before the test goes on: vrctl's submit with no controller
     * alive leaves the job for the first to start (so it is not recorded
     * when submit returns), and a loaded box starts one late */
    struct rq *q = tacl_admin(a);
    struct rq_liveness lv = { 0 };
    int gone = 0;
    for (int t = 0; t < 30000 && d->ctl > 0 && !gone; t += 50) {
        if (rq_liveness_read(q, &lv, NULL) == 0 && lv.controllers > 0)
            break;
        gone = waitpid(d->ctl, NULL, WNOHANG) == d->ctl;
        tmsleep(50);
    }
    rq_free(&q);
    if (gone)
        d->ctl = 0;
    if (lv.controllers == 0)
        tsh("tail -20 '%s' >&2", d->log);
    cr_assert(!gone, "the controller exited at start");
    cr_assert_gt(lv.controllers, 0, "the controller is not alive after 30 s");
    return d->ctl;
}

pid_t tacl_worker(struct tdist *d, const struct tacl *a)
{
    const char *wk[] = { "vr-worker", "serve", "--cpu", "--redis", a->uw, "--redis-password-file",
                         a->pw, "--storage", d->storage, "--input-root", d->r.dir,
                         "--heartbeat-ms", "300", NULL };
    return d->w[d->nw++] = tproc_spawn("vr-worker", wk, d->log);
}

int tacl_vrctl(const char *url, const char *pw, char *out, size_t n, const char *const *args)
{
    const char *argv[24] = { "vrctl" };
    int k = 1;
    for (int i = 0; args[i] && k < 19; i++)
        argv[k++] = args[i];
    argv[k++] = "--redis";
    argv[k++] = url;
    argv[k++] = "--redis-password-file";
    argv[k++] = pw;
    argv[k] = NULL;
    return tproc_run("vrctl", argv, out, n);
}

int tacl_submit(const struct tacl *a, const char *in, const char *out, const char *const *extra,
                char *id, size_t n)
{
    const char *args[16] = { "submit", in, "-o", out, "--profile", "fast" };
    int k = 6;
    for (int i = 0; extra && extra[i] && k < 15; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    int rc = tacl_vrctl(a->uv, a->pv, id, n, args);
    id[strcspn(id, "\n")] = '\0';
    return rc;
}

void tacl_spec_by_hand(const struct tacl *a, const char *in, const char *out, char *id, size_t n)
{
    char url[200];
    snprintf(url, sizeof url, "redis://vrctl:pw-vrctl@127.0.0.1:%d", a->port);
    struct rq *v = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &v, &e), 0, "%s", e.msg);
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s", out);
    snprintf(js.profile, sizeof js.profile, "fast");
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    char *spec = NULL;
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0, "%s", e.msg);
    /* its user writes no job record (issue 41): an entry a controller checks */
    cr_assert_eq(rq_submit_as(v, RQ_OPERATOR, js.id, spec, 10, 0, NULL, 0, &e), 0, "%s", e.msg);
    free(spec);
    rq_free(&v);
    snprintf(id, n, "%s", js.id);
}

struct rq *tacl_up(struct tdist *d, struct tacl *a)
{
    tacl_start(d, a);
    return tacl_admin(a);
}

void tacl_down(struct tdist *d, struct rq **q)
{
    rq_free(q);
    tdist_stop(d, 0);
}

int tacl_refused(const struct tacl *a, const char *user, const char *pw, int argc,
                 const char **argv)
{
    struct rq *q = tacl_connect(a, user, pw);
    vr_err e = { 0 };
    redisReply *r = rq_cmdargv(q, &e, argc, argv, NULL);
    int refused = !r && strstr(e.msg, "NOPERM");
    cr_assert(r || refused, "%s's %s: %s", user, argv[0], e.msg);
    freeReplyObject(r);
    rq_free(&q);
    return refused;
}

struct rq *tacl_as_worker(const struct tacl *a)
{
    return tacl_connect(a, "vr-worker", "pw-worker");
}

void tacl_job_field(struct rq *q, const char *id, const char *field, char *out, size_t n)
{
    char jk[160];
    rq_key_job(jk, sizeof jk, id);
    out[0] = '\0';
    rq_hget(q, jk, field, out, n, NULL);
}

void tacl_wait_state(struct rq *q, const struct tdist *d, const char *id, const char *state,
                     int timeout_ms, char *st, size_t n)
{
    st[0] = '\0';
    for (int t = 0; t < timeout_ms; t += 50) {
        tacl_job_field(q, id, "state", st, n);
        if (state ? !strcmp(st, state) : job_state_ended(st))
            return;
        tmsleep(50);
    }
    tsh("tail -30 '%s' >&2", d->log);
}

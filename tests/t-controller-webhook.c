/*
 * t-controller-webhook.c - job-end webhooks (README.md, "Webhooks") through a real
 * redis-server, controller and CPU worker, received by an HTTP server in
 * this process (libmicrohttpd) that records every request. A done, a
 * failed, a cancelled and a retried-then-failed-again job each get exactly
 * one POST per URL and end (the job's own and the controller's), signed,
 * with the event's fields; a spec put into Redis with a file:// webhook
 * fails its job and reaches the controller's URL only. With the receiver
 * really stopped when the job ends, the event arrives once it is back, once;
 * so it does when the controller is killed (-9) before it could deliver and
 * a new one starts. `vrctl run --notify` delivers before it stops its
 * processes. A redirect is followed to http(s) only. Bad URLs are
 * usage errors before anything is queued. At the queue level: one claim at
 * a time, and a lapsed claim passes to the next controller.
 *
 * Issue 27, findings 3 and 4: the signature covers a timestamp, the
 * delivery id and the event with the body; a notify record whose state
 * holds CR LF is never POSTed (no header injected); loopback (the receiver
 * itself), link-local (169.254.169.254) and a redirect to loopback are
 * refused unless --notify-allow-private, which every other test here
 * passes; what the submitter sees says "not delivered" and the HTTP status
 * class, the detail is in the controller's log only.
 *
 * Retries are made fast (VR_TEST_NOTIFY_RETRY_MS) and every wait polls
 * with a generous limit, so nothing here depends on the machine's speed.
 */
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "rq_notify.h"
#include "hmac.h"
#include "util-redis.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "webhook-secret-7f3a-\xc3\xa9" /* bytes, not only ASCII */

static struct tdist D;
static struct rq *Q;

/* ---- the receiver: an HTTP server in this process ---- */

#define HOOK_MAX  64
#define HOOK_BODY 8192

struct hook_req {
    char path[128], method[16], event[32], delivery[96], sig[128], ctype[64];
    char body[HOOK_BODY];
    size_t len;
};

static struct {
    struct MHD_Daemon *d;
    int port;                     /* kept across a stop, to come back on it */
    int ftp_port;                 /* where /redir-ftp points */
    pthread_mutex_t mu;           /* guards n and req */
    int n;
    struct hook_req req[HOOK_MAX];
} H = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct hook_upload {
    char body[HOOK_BODY];
    size_t len;
};

static void hook_copy_header(struct MHD_Connection *c, const char *name, char *out, size_t n)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(out, n, "%s", v ? v : "");
}

/* Records each request once its body is in; /redir-http answers 302 to
 * /hook, /redir-ftp 302 to an ftp:// URL, /redir-loop 302 to loopback on
 * H.ftp_port, /err503 503, everything else 200. */
static enum MHD_Result hook_answer(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *data,
                                   size_t *size, void **state)
{
    (void)cls, (void)version;
    struct hook_upload *u = *state;
    if (!u) {
        *state = u = calloc(1, sizeof *u);
        return u ? MHD_YES : MHD_NO;
    }
    if (*size) {
        size_t room = sizeof u->body - 1 - u->len, take = *size < room ? *size : room;
        memcpy(u->body + u->len, data, take);
        u->len += take;
        *size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&H.mu);
    if (H.n < HOOK_MAX) {
        struct hook_req *r = &H.req[H.n++];
        snprintf(r->path, sizeof r->path, "%s", url);
        snprintf(r->method, sizeof r->method, "%s", method);
        hook_copy_header(c, "X-Vrseg-Event", r->event, sizeof r->event);
        hook_copy_header(c, "X-Vrseg-Delivery", r->delivery, sizeof r->delivery);
        hook_copy_header(c, "X-Vrseg-Signature", r->sig, sizeof r->sig);
        hook_copy_header(c, "Content-Type", r->ctype, sizeof r->ctype);
        memcpy(r->body, u->body, u->len + 1);
        r->len = u->len;
    }
    pthread_mutex_unlock(&H.mu);
    char loc[96] = "";
    if (!strcmp(url, "/redir-http"))
        snprintf(loc, sizeof loc, "/hook");
    else if (!strcmp(url, "/redir-ftp"))
        snprintf(loc, sizeof loc, "ftp://127.0.0.1:%d/x", H.ftp_port);
    else if (!strcmp(url, "/redir-loop"))
        snprintf(loc, sizeof loc, "http://127.0.0.1:%d/x", H.ftp_port);
    struct MHD_Response *resp = MHD_create_response_from_buffer(3, "ok\n", MHD_RESPMEM_PERSISTENT);
    if (loc[0])
        MHD_add_response_header(resp, "Location", loc);
    unsigned code = loc[0] ? 302 : !strcmp(url, "/err503") ? 503 : 200;
    enum MHD_Result ok = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    return ok;
}

static void hook_completed(void *cls, struct MHD_Connection *c, void **state,
                           enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    free(*state);
    *state = NULL;
}

/* Serves on 127.0.0.1:port (0: a free one, kept in H.port). */
static void hook_start(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    for (int i = 0; i < 100 && !H.d; i++) {
        H.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, hook_answer, NULL,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                               MHD_OPTION_NOTIFY_COMPLETED, hook_completed, NULL, MHD_OPTION_END);
        if (!H.d)
            tmsleep(100); /* the port may still be held for a moment */
    }
    cr_assert_not_null(H.d, "cannot serve on 127.0.0.1:%d", port);
    H.port = MHD_get_daemon_info(H.d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

/* Stops serving: from now on a POST meets a refused connection. */
static void hook_stop(void)
{
    if (H.d)
        MHD_stop_daemon(H.d);
    H.d = NULL;
}

/* Requests at `path` so far (all paths when NULL), and for `delivery` when
 * not NULL; the last one into *out when out is not NULL. */
static int hook_count(const char *path, const char *delivery, struct hook_req *out)
{
    int n = 0;
    pthread_mutex_lock(&H.mu);
    for (int i = 0; i < H.n; i++)
        if ((!path || !strcmp(H.req[i].path, path)) &&
            (!delivery || !strcmp(H.req[i].delivery, delivery))) {
            n++;
            if (out)
                *out = H.req[i];
        }
    pthread_mutex_unlock(&H.mu);
    return n;
}

static void hook_url(char *buf, size_t n, const char *path)
{
    snprintf(buf, n, "http://127.0.0.1:%d%s", H.port, path);
}

/* ---- the system ---- */

static char all_url[128], secret_path[400];

static void teardown(void)
{
    hook_stop();
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(controller_webhook, .fini = teardown, .timeout = 120);

/* A controller posting every job's end to the receiver's `all_path` too,
 * signed with SECRET, with fast retries (200 ms, doubling); with
 * `allow_private` (--notify-allow-private) it may reach the receiver on
 * loopback. */
static void start_controller(const char *all_path, int allow_private)
{
    hook_url(all_url, sizeof all_url, all_path);
    snprintf(secret_path, sizeof secret_path, "%s/hook.secret", D.r.dir);
    FILE *f = fopen(secret_path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", SECRET);
    fclose(f);
    chmod(secret_path, 0600);
    setenv("VR_TEST_NOTIFY_RETRY_MS", "200", 1);
    const char *args[] = { "--notify", all_url, "--notify-secret-file", secret_path,
                           "--notify-timeout", "2",
                           allow_private ? "--notify-allow-private" : NULL, NULL };
    memcpy(D.ctl_args, args, sizeof args);
    cr_assert_gt(tdist_controller(&D), 0);
}

/* Redis, the receiver (stopped again unless `up`) and start_controller. */
static void start_ex(int up, const char *all_path, int allow_private)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    hook_start(0);
    if (!up)
        hook_stop();
    start_controller(all_path, allow_private);
}

static void start(int up, const char *all_path)
{
    start_ex(up, all_path, 1);
}

static void job_field(const char *id, const char *field, char *out, size_t n)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    out[0] = '\0';
    rq_hget(Q, jk, field, out, n, NULL);
}

/* Polls the job's `field` until it equals want (or, want NULL, is a number
 * >= min); fails the test after timeout_ms. */
static void wait_job(const char *id, const char *field, const char *want, long long min,
                     int timeout_ms)
{
    char v[512] = "";
    for (int t = 0; t < timeout_ms; t += 20) {
        job_field(id, field, v, sizeof v);
        if (want ? !strcmp(v, want) : v[0] && atoll(v) >= min)
            return;
        tmsleep(20);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("job %s: %s is '%s' after %d ms", id, field, v, timeout_ms);
}

/* Submits in -> out with `--notify own` (own may be NULL): the job id into id. */
static void submit(const char *in, const char *out, const char *own, char *id, size_t n)
{
    const char *extra[] = { own ? "--notify" : NULL, own, NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, n), 0);
    cr_assert(job_id_valid(id), "submit printed '%s'", id);
}

/* A job that fails at once, before any worker (its output is outside the
 * controller's output root), with the receiver's `path` as its own URL
 * (none when NULL); its input is made when `in` is NULL. */
static void submit_failing(const char *in, const char *path, char *id, size_t n)
{
    char out[128], own[128], clip[400];
    if (!in) {
        snprintf(clip, sizeof clip, "%s/in.mp4", D.r.dir);
        cr_assert_eq(tclip_make(clip, 1, 160, 5, 0), 0);
        in = clip;
    }
    snprintf(out, sizeof out, "/tmp/vrtest-webhook-outside-%d.mkv", (int)getpid());
    if (path)
        hook_url(own, sizeof own, path);
    submit(in, out, path ? own : NULL, id, n);
}

/* The one POST of delivery "<id>:<seq>" at `path`: method, headers, a
 * valid signature, the event's id, state and delivery. Returns the body
 * (json_decref it); the raw text into raw when not NULL. */
static json_t *delivered_once(const char *path, const char *id, int seq, const char *state,
                              struct hook_req *raw)
{
    char did[96], want[64], sig[96];
    snprintf(did, sizeof did, "%s:%d", id, seq);
    static struct hook_req r;
    int n = hook_count(path, did, &r);
    cr_assert_eq(n, 1, "%d POSTs of %s at %s", n, did, path);
    cr_assert_str_eq(r.method, "POST");
    cr_assert_str_eq(r.ctype, "application/json");
    snprintf(want, sizeof want, "job.%s", state);
    cr_assert_str_eq(r.event, want);
    /* t=<unix seconds>,v1=<hex HMAC of "<t>.<delivery>.<event>.<body>">, t recent */
    long long t = 0;
    char v1[80] = "", hex[HMAC_SHA256_HEX];
    cr_assert_eq(sscanf(r.sig, "t=%lld,v1=%79s", &t, v1), 2, "signature header '%s'", r.sig);
    cr_assert(llabs(t - rq_now_ms() / 1000) < 600, "t=%lld is not now", t);
    snprintf(sig, sizeof sig, "%lld", t);
    const struct hmac_part parts[] = { { sig, strlen(sig) }, { ".", 1 }, { did, strlen(did) },
                                       { ".", 1 }, { want, strlen(want) }, { ".", 1 },
                                       { r.body, r.len } };
    cr_assert_eq(hmac_sha256_hex(SECRET, strlen(SECRET), parts, 7, hex), 0);
    cr_assert_str_eq(v1, hex, "bad signature on %s", did);
    json_error_t je;
    json_t *o = json_loadb(r.body, r.len, 0, &je);
    cr_assert_not_null(o, "%s: %s", je.text, r.body);
    cr_assert_str_eq(json_string_value(json_object_get(o, "event")), want);
    cr_assert_str_eq(json_string_value(json_object_get(o, "id")), id);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), state);
    cr_assert_str_eq(json_string_value(json_object_get(o, "delivery")), did);
    if (raw)
        *raw = r;
    return o;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    cr_assert_not_null(s, "no string '%s'", k);
    return s;
}

/* ---- each end, once ---- */

Test(controller_webhook, done_failed_cancelled_and_retried_ends_each_posted_once_signed)
{
    start(1, "/all");
    char in[400], out[400], outc[400], own[128], idd[64], idf[64], idc[64], v[1024];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(outc, sizeof outc, "%s/cancelled.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    hook_url(own, sizeof own, "/hook");

    /* cancelled: no worker yet, so it cannot finish before the cancel */
    submit(in, outc, own, idc, sizeof idc);
    wait_job(idc, "state", "running", 0, 30000);
    const char *cancel[] = { "cancel", idc, NULL };
    cr_assert_eq(tdist_vrctl(&D, v, sizeof v, cancel), 0);
    /* failed */
    submit_failing(in, "/hook", idf, sizeof idf);
    /* a spec put straight into Redis with a file:// webhook: the job fails
     * on its spec, and only the controller's URL hears of it */
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.id, sizeof js.id, "bad-notify-1");
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s/bad.mkv", D.r.dir);
    snprintf(js.notify, sizeof js.notify, "file:///etc/passwd");
    char *spec = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0);
    cr_assert_eq(rq_job_submit(Q, js.id, spec, rq_now_ms(), 10, 0, &e), 0, "%s", e.msg);
    free(spec);
    /* done: a worker now */
    tdist_worker(&D);
    submit(in, out, own, idd, sizeof idd);
    cr_assert_eq(tdist_watch(&D, idd, 90000), 0);

    const char *ids[] = { idd, idf, idc, "bad-notify-1" };
    for (int i = 0; i < 4; i++)
        wait_job(ids[i], "notify_state", "delivered", 0, 30000);
    tmsleep(1500); /* time for a duplicate to show up */
    cr_assert_eq(hook_count("/hook", NULL, NULL), 3, "POSTs at the jobs' own URL");
    cr_assert_eq(hook_count("/all", NULL, NULL), 4, "POSTs at the controller's URL");

    struct hook_req raw;
    json_t *o = delivered_once("/hook", idd, 1, "done", &raw);
    json_decref(delivered_once("/all", idd, 1, "done", NULL));
    cr_assert_str_eq(jstr(o, "input"), in);
    cr_assert_str_eq(jstr(o, "output"), out);
    cr_assert_str_eq(jstr(o, "error"), "");
    cr_assert_eq(json_integer_value(json_object_get(o, "frames")), 20);
    cr_assert_eq(json_integer_value(json_object_get(o, "frames_total")), 20);
    cr_assert_gt(json_real_value(json_object_get(o, "fps")), 0);
    cr_assert_gt(json_real_value(json_object_get(o, "wall_s")), 0);
    cr_assert_gt(json_integer_value(json_object_get(o, "finished_ms")), 0);
    json_decref(o);
    /* the signature as README.md tells receivers to check it */
    char body_path[400], line[512];
    snprintf(body_path, sizeof body_path, "%s/body.json", D.r.dir);
    FILE *f = fopen(body_path, "wb");
    cr_assert_not_null(f);
    fwrite(raw.body, 1, raw.len, f);
    fclose(f);
    long long t = atoll(raw.sig + 2);
    cr_assert_eq(tsh_out(line, sizeof line, "{ printf '%%s.%%s.%%s.' %lld '%s' '%s'; cat '%s'; } | "
                         "openssl dgst -sha256 -hmac \"$(head -n1 '%s')\"", t, raw.delivery,
                         raw.event, body_path, secret_path), 0);
    cr_assert(strstr(line, strstr(raw.sig, "v1=") + 3), "openssl says %s, header %s", line,
              raw.sig);

    o = delivered_once("/hook", idf, 1, "failed", NULL);
    cr_assert(strstr(jstr(o, "error"), "output root"), "%s", jstr(o, "error"));
    cr_assert_eq(json_integer_value(json_object_get(o, "frames")), 0);
    json_decref(o);
    json_decref(delivered_once("/all", idf, 1, "failed", NULL));
    o = delivered_once("/hook", idc, 1, "cancelled", NULL);
    cr_assert_str_eq(jstr(o, "error"), "cancelled by the user");
    json_decref(o);
    json_decref(delivered_once("/all", idc, 1, "cancelled", NULL));
    o = delivered_once("/all", "bad-notify-1", 1, "failed", NULL);
    cr_assert(strstr(jstr(o, "error"), "notify") && strstr(jstr(o, "error"), "http"), "%s",
              jstr(o, "error"));
    json_decref(o);
    cr_assert_eq(hook_count("/hook", "bad-notify-1:1", NULL), 0);
    job_field("bad-notify-1", "notify", v, sizeof v);
    /* issue 41, finding 5: nor is the controller's own URL copied in */
    cr_assert_str_eq(v, "", "the file:// URL (or the controller's) was kept");

    /* a retry that fails again is a new end: a new delivery, <id>:2 */
    const char *retry[] = { "retry", idf, NULL };
    cr_assert_eq(tdist_vrctl(&D, v, sizeof v, retry), 0);
    wait_job(idf, "notify_seq", NULL, 2, 30000);
    wait_job(idf, "notify_state", "delivered", 0, 30000);
    tmsleep(1000);
    json_decref(delivered_once("/hook", idf, 2, "failed", NULL));
    json_decref(delivered_once("/hook", idf, 1, "failed", NULL));
    cr_assert_eq(hook_count("/hook", NULL, NULL), 4);
}

/* ---- down, then back ---- */

Test(controller_webhook, receiver_down_when_the_job_ends_gets_it_later_once)
{
    start(0, "/all");
    char id[64], v[1024];
    submit_failing(NULL, "/hook", id, sizeof id);
    wait_job(id, "state", "failed", 0, 30000);
    /* tries refused while the receiver is down, recorded in Redis */
    wait_job(id, "notify_attempts", NULL, 2, 30000);
    job_field(id, "notify_state", v, sizeof v);
    cr_assert_str_eq(v, "pending");
    job_field(id, "notify_error", v, sizeof v);
    cr_assert(strstr(v, "/hook: ") && strstr(v, "/all: "), "refused tries not recorded: '%s'", v);
    hook_start(H.port);
    wait_job(id, "notify_state", "delivered", 0, 30000);
    tmsleep(1500);
    json_decref(delivered_once("/hook", id, 1, "failed", NULL));
    json_decref(delivered_once("/all", id, 1, "failed", NULL));
    cr_assert_eq(hook_count(NULL, NULL, NULL), 2);
    wait_job(id, "notify_attempts", NULL, 3, 1000);
    job_field(id, "notify_error", v, sizeof v);
    cr_assert_str_eq(v, "");
}

Test(controller_webhook, controller_killed_before_delivering_delivers_after_restart_once)
{
    start(0, "/all");
    char id[64];
    submit_failing(NULL, "/hook", id, sizeof id);
    /* the job has ended, and its delivery could not go out yet */
    wait_job(id, "notify_attempts", NULL, 1, 30000);
    kill(D.ctl, SIGKILL);
    waitpid(D.ctl, NULL, 0);
    D.ctl = 0;
    hook_start(H.port);
    tmsleep(1000);
    cr_assert_eq(hook_count(NULL, NULL, NULL), 0, "delivered with no controller running");
    cr_assert_gt(tdist_controller(&D), 0);
    /* a claim the killed one held lapses after its lease (13 s at most here) */
    wait_job(id, "notify_state", "delivered", 0, 45000);
    tmsleep(1500);
    json_decref(delivered_once("/hook", id, 1, "failed", NULL));
    json_decref(delivered_once("/all", id, 1, "failed", NULL));
    cr_assert_eq(hook_count(NULL, NULL, NULL), 2);
}

/* ---- vrctl run ---- */

Test(controller_webhook, vrctl_run_posts_the_jobs_end_signed_before_it_stops)
{
    /* only for its temp dir and the receiver: vrctl run brings its own Redis */
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    hook_start(0);
    char in[400], out[400], log[400], own[128], sec[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(log, sizeof log, "%s/run.log", D.r.dir);
    snprintf(sec, sizeof sec, "%s/hook.secret", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 128, 5, 0), 0);
    cr_assert_eq(tsh("umask 077; printf '%%s\\n' '%s' > '%s'", SECRET, sec), 0);
    hook_url(own, sizeof own, "/hook");
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--profile", "fast",
                           "--notify", own, "--notify-secret-file", sec,
                           "--notify-allow-private", NULL };
    int rc = tproc_wait(tproc_spawn("vrctl", argv, log), 90000);
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(hook_count(NULL, NULL, NULL), 1);
    struct hook_req r;
    hook_count("/hook", NULL, &r);
    char *colon = strrchr(r.delivery, ':');
    cr_assert(colon && !strcmp(colon, ":1"), "delivery '%s'", r.delivery);
    *colon = '\0';
    json_t *o = delivered_once("/hook", r.delivery, 1, "done", NULL);
    cr_assert_str_eq(jstr(o, "output"), out);
    cr_assert_eq(json_integer_value(json_object_get(o, "frames")), 10);
    json_decref(o);
    cr_assert_eq(tsh("grep -q 'webhook delivered' '%s'", log), 0, "vrctl run did not say so");
}

/* A receiver that is not there (a closed port): vrctl run says the
 * delivery failed after its first attempt instead of waiting out the
 * retries for a minute; the job itself is done (exit 0). */
Test(controller_webhook, vrctl_run_to_a_closed_port_does_not_wait_a_minute)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char in[400], out[400], log[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(log, sizeof log, "%s/run.log", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 128, 5, 0), 0);
    /* port 9 (discard) on loopback: nothing listens there in a test box */
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--profile", "fast",
                           "--notify", "http://127.0.0.1:9/hook", NULL };
    long long t0 = rq_now_ms();
    int rc = tproc_wait(tproc_spawn("vrctl", argv, log), 90000);
    long long waited = rq_now_ms() - t0;
    if (rc)
        tsh("cat '%s' >&2", log);
    cr_assert_eq(rc, 0);
    cr_assert_eq(tsh("grep -q 'webhook not delivered' '%s'", log), 0, "vrctl run did not say so");
    /* the job and one refused connection, not 60 s of retries: the job
     * takes seconds on a loaded box, the old wait a full minute on top */
    cr_assert_lt(waited, 55000, "vrctl run took %lld ms", waited);
}

/* ---- redirects ---- */

Test(controller_webhook, redirects_followed_to_http_only)
{
    /* the "ftp server": a listener that must never see a connection */
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    cr_assert(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 4) == 0 &&
              getsockname(lfd, (struct sockaddr *)&a, &al) == 0);
    H.ftp_port = ntohs(a.sin_port);
    start(1, "/redir-ftp");
    char id[64], v[512];
    submit_failing(NULL, "/redir-http", id, sizeof id);
    /* the job's URL redirects (302) to /hook: followed, still a POST; the
     * controller's redirects to ftp://: refused at once, never retried */
    wait_job(id, "notify_state", "failed", 0, 30000);
    tmsleep(1000);
    json_decref(delivered_once("/hook", id, 1, "failed", NULL));
    cr_assert_eq(hook_count("/redir-http", NULL, NULL), 1);
    cr_assert_eq(hook_count("/redir-ftp", NULL, NULL), 1);
    /* the submitter reads "not delivered", the reason is in the log */
    job_field(id, "notify_error", v, sizeof v);
    cr_assert(strstr(v, "/redir-ftp: not delivered") && !strstr(v, "scheme"), "%s", v);
    cr_assert_eq(tsh("grep -q 'redir-ftp given up: refused: a redirect to a scheme' '%s'", D.log),
                 0, "the reason is not in the controller's log");
    job_field(id, "notify_attempts", v, sizeof v);
    cr_assert_str_eq(v, "1");
    int cfd = accept(lfd, NULL, NULL);
    cr_assert(cfd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "the ftp:// URL was contacted");
    close(lfd);
}

/* Records a job with a webhook and ends it (cancel), then schedules its
 * delivery as a controller does (rq_job_notify_cancels): it is queued. */
static void queue_ended_job(const char *id, const char *notify)
{
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.id, sizeof js.id, "%s", id);
    snprintf(js.input, sizeof js.input, "/in.mp4");
    snprintf(js.output, sizeof js.output, "/out.mkv");
    snprintf(js.notify, sizeof js.notify, "%s", notify);
    char *spec = NULL, state[32];
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0);
    cr_assert_eq(rq_job_submit(Q, id, spec, rq_now_ms(), 10, 0, &e), 0, "%s", e.msg);
    free(spec);
    cr_assert_eq(rq_job_cancel(Q, id, "cancelled by the user", state, sizeof state, &e), 1);
    cr_assert_eq(rq_job_notify_cancels(Q, &e), 1, "%s", e.msg);
}

/* ---- issue 27: what a record or a submitter cannot make the sender do ---- */

/* A loopback listener that must never see a connection: its port. */
static int untouchable_listener(int *fd)
{
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    cr_assert(*fd >= 0 && bind(*fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(*fd, 4) == 0 &&
              getsockname(*fd, (struct sockaddr *)&a, &al) == 0);
    return ntohs(a.sin_port);
}

static void assert_never_contacted(int fd, const char *what)
{
    int cfd = accept(fd, NULL, NULL);
    cr_assert(cfd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "%s was contacted", what);
    close(fd);
}

/* What a submitter reads of a failed delivery (the line at text): no
 * reason, no address. */
static void assert_no_detail(const char *text)
{
    cr_assert_not_null(text);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(text, "\n"), text);
    static const char *detail[] = { "refused", "address", "private", "loopback", "connect",
                                    "169.254", "Failed", "port", "reply" };
    for (size_t i = 0; i < sizeof detail / sizeof detail[0]; i++)
        cr_assert_null(strstr(line, detail[i]), "'%s' tells the submitter: %s", detail[i], line);
}

/* `vrctl events ID` (what a submitter reads) has `line`, with no detail. */
static void events_say(const char *id, const char *line)
{
    char v[8192];
    const char *events[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, v, sizeof v, events), 0);
    cr_assert(strstr(v, line), "no '%s' in: %s", line, v);
    assert_no_detail(strstr(v, line));
}

Test(controller_webhook, loopback_and_link_local_refused_unless_allowed)
{
    /* no --notify-allow-private: the receiver on 127.0.0.1 (the job's URL)
     * and the cloud metadata address (the controller's) are refused after
     * DNS, given up at once, never connected to */
    start_ex(1, "/all", 0);
    char id[64], v[1024], meta[] = "http://169.254.169.254/latest/meta-data/";
    submit_failing(NULL, "/hook", id, sizeof id);
    wait_job(id, "notify_state", "failed", 0, 30000);
    cr_assert_eq(hook_count(NULL, NULL, NULL), 0, "a POST reached 127.0.0.1");
    job_field(id, "notify_attempts", v, sizeof v);
    cr_assert_str_eq(v, "1", "a refused address was tried again");
    job_field(id, "notify_error", v, sizeof v);
    cr_assert(strstr(v, "/hook: not delivered"), "%s", v);
    assert_no_detail(strstr(v, "/hook: "));
    events_say(id, "/hook given up: not delivered");
    cr_assert_eq(tsh("grep -q 'address 127.0.0.1 is loopback, private or link-local' '%s'", D.log),
                 0, "the reason is not in the controller's log");

    /* the controller's own --notify to 169.254.169.254: refused alike */
    kill(D.ctl, SIGTERM);
    waitpid(D.ctl, NULL, 0);
    D.ctl = 0;
    const char *args[] = { "--notify", meta, "--notify-timeout", "2", NULL };
    memset(D.ctl_args, 0, sizeof D.ctl_args);
    memcpy(D.ctl_args, args, sizeof args);
    cr_assert_gt(tdist_controller(&D), 0);
    submit_failing(NULL, NULL, id, sizeof id);
    wait_job(id, "notify_state", "failed", 0, 30000);
    job_field(id, "notify_error", v, sizeof v);
    cr_assert(strstr(v, "not delivered"), "%s", v);
    assert_no_detail(strstr(v, ": not"));
    cr_assert_eq(tsh("grep -q 'address 169.254.169.254 is loopback' '%s'", D.log), 0);
}

Test(controller_webhook, a_redirect_to_loopback_refused_and_errors_show_the_status_class)
{
    /* the receiver's port counts as public (tests only), so its 302 to
     * another loopback port is the redirect a public host could send */
    int lfd;
    H.ftp_port = untouchable_listener(&lfd);
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    hook_start(0);
    char port[16], id[64], v[1024];
    snprintf(port, sizeof port, "%d", H.port);
    setenv("VR_TEST_NOTIFY_PUBLIC_PORT", port, 1);
    start_controller("/redir-loop", 0);
    submit_failing(NULL, "/err503", id, sizeof id);
    wait_job(id, "notify_attempts", NULL, 2, 30000);
    cr_assert_geq(hook_count("/redir-loop", NULL, NULL), 1);
    assert_never_contacted(lfd, "the loopback address a redirect named");
    job_field(id, "notify_error", v, sizeof v);
    cr_assert(strstr(v, "/err503: not delivered (HTTP 5xx)"), "%s", v);
    assert_no_detail(v);
    events_say(id, "/redir-loop given up: not delivered");
    cr_assert_eq(tsh("grep -q 'redir-loop given up: refused: the address 127.0.0.1' '%s'", D.log),
                 0, "the reason is not in the controller's log");
}

Test(controller_webhook, control_characters_in_a_record_never_reach_a_header)
{
    /* a delivery whose record (written by a Redis user, not by vrseg) has
     * CR LF in its state: nothing is POSTed, the delivery is given up */
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    hook_start(0);
    char own[128], rk[160], v[512];
    hook_url(own, sizeof own, "/hook");
    queue_ended_job("j-inject", own);
    snprintf(rk, sizeof rk, "%s:j-inject:1", RQ_NOTIFY);
    const char *hset[] = { "HSET", rk, "state", "x\r\nX-Inj: 1", NULL };
    cr_assert_eq(tredis_cmd(&D.r, hset), 0);
    start_controller("/all", 1);
    wait_job("j-inject", "notify_state", "failed", 0, 30000);
    tmsleep(500);
    cr_assert_eq(hook_count("/hook", NULL, NULL), 0, "a POST with an injected header went out");
    cr_assert_eq(hook_count("/all", NULL, NULL), 0);
    job_field("j-inject", "notify_error", v, sizeof v);
    cr_assert(strstr(v, "not delivered"), "%s", v);
    cr_assert_eq(tsh("grep -q 'control character' '%s'", D.log), 0);
}

/* ---- bad URLs ---- */

/* Runs a shell command line of the binaries with stderr into out; its status. */
static int cli(char *out, size_t n, const char *cmd)
{
    const char *bin = getenv("VR_BIN_DIR") ? getenv("VR_BIN_DIR") : "bin";
    return tsh_out(out, n, "cd '%s' && %s 2>&1", bin, cmd);
}

Test(controller_webhook, non_http_urls_refused_before_anything_is_queued)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char in[400], cmd[2048], out[2048];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 160, 5, 0), 0);
    static const char *bad[] = { "ftp://x/hook", "file:///etc/passwd", "gopher://x", "http://",
                                 "https:///path", "http://a b/c", "localhost:80/x", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "./vrctl submit '%s' -o '%s/o.mkv' --notify '%s' --redis '%s'", in,
                 D.r.dir, bad[i], D.r.url);
        cr_assert_eq(cli(out, sizeof out, cmd), 2, "%s: %s", bad[i], out);
        cr_assert(strstr(out, "--notify") && (strstr(out, "http") || strstr(out, "host")),
                  "%s: %s", bad[i], out);
    }
    snprintf(cmd, sizeof cmd, "./vrctl run '%s' -o '%s/o.mkv' --cpu --notify ftp://x", in, D.r.dir);
    cr_assert_eq(cli(out, sizeof out, cmd), 2, "%s", out);
    cr_assert(strstr(out, "--notify ftp://x: not an http:// or https:// URL"), "%s", out);
    snprintf(cmd, sizeof cmd, "./vr-controller run --redis '%s' --storage '%s' --notify "
             "file:///etc/passwd", D.r.url, D.storage);
    cr_assert_eq(cli(out, sizeof out, cmd), 2, "%s", out);
    cr_assert(strstr(out, "--notify file:///etc/passwd"), "%s", out);
    snprintf(cmd, sizeof cmd, "./vr-controller run --redis '%s' --storage '%s' "
             "--notify-secret-file /nonexistent/secret", D.r.url, D.storage);
    cr_assert_eq(cli(out, sizeof out, cmd), 2, "%s", out);
    cr_assert(strstr(out, "--notify-secret-file") && strstr(out, "/nonexistent/secret"), "%s", out);
    /* nothing reached Redis */
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmd(Q, &e, "DBSIZE");
    cr_assert_not_null(r, "%s", e.msg);
    cr_assert_eq(r->integer, 0, "%lld keys in Redis", r->integer);
    freeReplyObject(r);
}

/* ---- the queue: claims ---- */

static long long zscore(const char *member)
{
    redisReply *r = rq_cmd(Q, NULL, "ZSCORE %s %s", RQ_NOTIFY, member);
    cr_assert_not_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

Test(controller_webhook, one_claim_at_a_time_and_a_lapsed_claim_passes_on)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    queue_ended_job("j-none", "");
    cr_assert_eq(zscore("j-none:1"), -1, "a job without a webhook got a delivery");
    queue_ended_job("j-claim", "http://127.0.0.1:9/x");
    char v[128];
    job_field("j-claim", "notify", v, sizeof v);
    cr_assert_str_eq(v, "http://127.0.0.1:9/x");
    job_field("j-claim", "notify_state", v, sizeof v);
    cr_assert_str_eq(v, "pending");

    static struct rq_notify a, b;
    long long t = rq_now_ms();
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", t, 10000, &a, &e), 1, "%s", e.msg);
    cr_assert_str_eq(a.id, "j-claim:1");
    cr_assert_str_eq(a.job, "j-claim");
    cr_assert_str_eq(a.state, "cancelled");
    cr_assert_str_eq(a.error, "cancelled by the user");
    cr_assert_eq(a.nurls, 1);
    cr_assert_str_eq(a.urls[0], "http://127.0.0.1:9/x");
    cr_assert_eq(a.attempts, 0);
    cr_assert_eq(rq_notify_claim(Q, "ctl-b", t, 10000, &b, &e), 0, "claimed twice");
    /* a failed round: due again later, attempts and error in the job */
    int again[RQ_NOTIFY_MAX_URLS] = { RQ_NOTIFY_TRY_AGAIN };
    cr_assert_eq(rq_notify_record(Q, &a, "ctl-a", again, t + 5000, "HTTP 500", &e), 0, "%s", e.msg);
    job_field("j-claim", "notify_attempts", v, sizeof v);
    cr_assert_str_eq(v, "1");
    job_field("j-claim", "notify_error", v, sizeof v);
    cr_assert_str_eq(v, "HTTP 500");
    cr_assert_eq(rq_notify_claim(Q, "ctl-b", t + 4999, 1000, &b, &e), 0, "claimed before due");
    cr_assert_eq(rq_notify_claim(Q, "ctl-b", t + 5000, 1000, &b, &e), 1);
    cr_assert_eq(b.attempts, 1);
    /* ctl-b "dies" holding it: after its lease ctl-a takes it */
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", t + 5999, 10000, &a, &e), 0);
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", t + 6000, 10000, &a, &e), 1);
    /* a late record by the old holder does not move the new holder's time */
    cr_assert_eq(rq_notify_record(Q, &b, "ctl-b", again, t + 7000, "timeout", &e), 0);
    cr_assert_eq(zscore("j-claim:1"), t + 16000);
    int ok[RQ_NOTIFY_MAX_URLS] = { RQ_NOTIFY_DELIVERED };
    cr_assert_eq(rq_notify_record(Q, &a, "ctl-a", ok, 0, "", &e), 1, "%s", e.msg);
    cr_assert_eq(zscore("j-claim:1"), -1);
    job_field("j-claim", "notify_state", v, sizeof v);
    cr_assert_str_eq(v, "delivered");
    job_field("j-claim", "notify_attempts", v, sizeof v);
    cr_assert_str_eq(v, "3");
    cr_assert_eq(rq_notify_record(Q, &b, "ctl-b", ok, 0, "", &e), RQ_NOTIFY_GONE);
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", t + 100000, 1000, &a, &e), 0);

    /* retried and ended again: a new delivery, given up after its rounds */
    long long total = 0;
    cr_assert_eq(rq_job_retry(Q, "j-claim", &total, v, sizeof v, &e), 1);
    char state[32];
    cr_assert_eq(rq_job_cancel(Q, "j-claim", "again", state, sizeof state, &e), 1);
    cr_assert_eq(rq_job_notify_cancels(Q, &e), 1, "%s", e.msg);
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", rq_now_ms(), 1000, &a, &e), 1);
    cr_assert_str_eq(a.id, "j-claim:2");
    cr_assert_str_eq(a.error, "again");
    cr_assert_eq(rq_notify_record(Q, &a, "ctl-a", again, 0, "HTTP 503", &e), 2);
    job_field("j-claim", "notify_state", v, sizeof v);
    cr_assert_str_eq(v, "failed");
    job_field("j-claim", "notify_error", v, sizeof v);
    cr_assert_str_eq(v, "HTTP 503");

    /* a record no script wrote (no job) is refused and dropped, not retried */
    redisReply *r = rq_cmd(Q, NULL, "HSET %s:x-1:1 urls http://a/x", RQ_NOTIFY);
    freeReplyObject(r);
    r = rq_cmd(Q, NULL, "ZADD %s 0 x-1:1", RQ_NOTIFY);
    freeReplyObject(r);
    cr_assert_eq(rq_notify_claim(Q, "ctl-a", rq_now_ms(), 1000, &a, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "x-1:1"), "%s", e.msg);
    cr_assert_eq(zscore("x-1:1"), -1);
}

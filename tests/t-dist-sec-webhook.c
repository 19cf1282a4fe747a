/*
 * t-dist-sec-webhook.c - what a submitter can no longer make the webhook
 * sender do (issue 41, findings 4 and 5), against a real redis-server
 * under deploy/redis-users.acl, a controller and vrctl each as its own
 * user, and an HTTP receiver in this process (libmicrohttpd, a thread per
 * connection) that records every request:
 *
 * - a delivery the vrctl user writes by hand (job.done for a job it then
 *   cancels) is refused by Redis and never POSTed: the only event is the
 *   cancel the controller itself scheduled (finding 4);
 * - the controller's --notify URL, its query token included, is in no job
 *   record and no delivery record, and still hears every end (finding 5);
 *   nor is its signing secret;
 * - a receiver that accepts and never answers (a tarpit: the controller's
 *   --notify here, a raw socket of this process) delays no job's own
 *   webhook: each reaches the healthy receiver well within the POST
 *   timeout, while the tarpit holds its POSTs; the tarpit's queue is
 *   bounded, the overflow dropped, logged and counted (finding 6).
 */
#include "job.h"
#include "rq.h"
#include "util-acl.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <poll.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "tok-5e1c7a" /* the controller's --notify query token */

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

/* ---- the receiver ---- */

#define HOOK_MAX 64

static struct {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    int n;
    struct { char path[64], event[32], delivery[96]; long long ms; } req[HOOK_MAX];
} H = { .mu = PTHREAD_MUTEX_INITIALIZER };

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Records each request once its body is in and answers 200. */
static enum MHD_Result hook_answer(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *data,
                                   size_t *size, void **state)
{
    (void)cls, (void)method, (void)version, (void)data;
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    const char *ev = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Vrseg-Event");
    const char *dl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Vrseg-Delivery");
    pthread_mutex_lock(&H.mu);
    if (H.n < HOOK_MAX) {
        snprintf(H.req[H.n].path, sizeof H.req[H.n].path, "%s", url);
        snprintf(H.req[H.n].event, sizeof H.req[H.n].event, "%s", ev ? ev : "");
        snprintf(H.req[H.n].delivery, sizeof H.req[H.n].delivery, "%s", dl ? dl : "");
        H.req[H.n++].ms = now_ms();
    }
    pthread_mutex_unlock(&H.mu);
    struct MHD_Response *r = MHD_create_response_from_buffer(3, "ok\n", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static void hook_start(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    H.d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                           NULL, NULL, hook_answer, NULL, MHD_OPTION_SOCK_ADDR,
                           (struct sockaddr *)&a, MHD_OPTION_END);
    cr_assert_not_null(H.d);
    H.port = MHD_get_daemon_info(H.d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

/* POSTs of `event` for job id at a path starting with `path` (NULL: any
 * event); the time the last came in into *ms when not NULL. */
static int hook_count(const char *path, const char *id, const char *event, long long *ms)
{
    int n = 0;
    pthread_mutex_lock(&H.mu);
    for (int i = 0; i < H.n; i++)
        if (!strncmp(H.req[i].path, path, strlen(path)) &&
            !strncmp(H.req[i].delivery, id, strlen(id)) && H.req[i].delivery[strlen(id)] == ':' &&
            (!event || !strcmp(H.req[i].event, event))) {
            n++;
            if (ms)
                *ms = H.req[i].ms;
        }
    pthread_mutex_unlock(&H.mu);
    return n;
}

static void wait_hook(const char *path, const char *id, const char *event, int timeout_ms)
{
    for (int t = 0; t < timeout_ms && !hook_count(path, id, event, NULL); t += 50)
        tmsleep(50);
    if (!hook_count(path, id, event, NULL))
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_gt(hook_count(path, id, event, NULL), 0, "no %s for %s at %s", event, id, path);
}

static void hook_url(char *buf, size_t n, const char *path)
{
    snprintf(buf, n, "http://127.0.0.1:%d%s", H.port, path);
}

/* ---- the system ---- */

/* ---- the tarpit: accepts every connection, reads nothing, never answers ---- */

#define TARPIT_MAX 64

static struct {
    int fd, port;
    pthread_t th;
    volatile int stop, accepted;
    int held[TARPIT_MAX];
} T = { .fd = -1 };

static void *tarpit_main(void *arg)
{
    (void)arg;
    while (!T.stop) {
        struct pollfd p = { .fd = T.fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        int c = accept(T.fd, NULL, NULL);
        if (c >= 0 && T.accepted < TARPIT_MAX)
            T.held[T.accepted++] = c;
        else if (c >= 0)
            close(c);
    }
    return NULL;
}

static void tarpit_start(void)
{
    T.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    cr_assert(T.fd >= 0 && bind(T.fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              listen(T.fd, 64) == 0 && getsockname(T.fd, (struct sockaddr *)&a, &al) == 0);
    T.port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&T.th, NULL, tarpit_main, NULL), 0);
}

static void tarpit_stop(void)
{
    if (T.fd < 0)
        return;
    T.stop = 1;
    pthread_join(T.th, NULL);
    for (int i = 0; i < T.accepted; i++)
        close(T.held[i]);
    close(T.fd);
    T.fd = -1;
}

static void teardown(void)
{
    if (H.d)
        MHD_stop_daemon(H.d);
    H.d = NULL;
    tarpit_stop();
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_webhook, .fini = teardown, .timeout = 180);

/* Redis under the ACL, the receiver, a controller whose own --notify is
 * /all?token=TOKEN at `port` (the receiver's when 0), signed, each POST
 * timing out after `timeout` seconds; no worker, so a job stays running. */
static void start_at(int port, const char *timeout)
{
    tacl_start(&D, &A);
    Q = tacl_admin(&A);
    hook_start();
    static char all[160], secret[400];
    snprintf(all, sizeof all, "http://127.0.0.1:%d/all?token=" TOKEN, port ? port : H.port);
    snprintf(secret, sizeof secret, "%s/hook.secret", D.r.dir);
    FILE *f = fopen(secret, "w");
    cr_assert_not_null(f);
    fprintf(f, "s3cret\n");
    fclose(f);
    chmod(secret, 0600);
    const char *extra[] = { "--notify", all, "--notify-secret-file", secret, "--notify-timeout",
                            timeout, NULL };
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
}

static void start(void)
{
    start_at(0, "20");
}

/* Submits a 1 s clip as the vrctl user with `--notify <receiver>/own_path`. */
static void submit(const char *name, const char *own_path, char *id, size_t n)
{
    char in[400], out[400], own[160];
    snprintf(in, sizeof in, "%s/%s.mp4", D.r.dir, name);
    snprintf(out, sizeof out, "%s/%s_mask.mkv", D.r.dir, name);
    cr_assert_eq(tclip_make(in, 1, 160, 5, 0), 0);
    hook_url(own, sizeof own, own_path);
    const char *extra[] = { "--notify", own, NULL };
    cr_assert_eq(tacl_submit(&A, in, out, extra, id, n), 0, "submit: %s", id);
    cr_assert(job_id_valid(id), "submit printed '%s'", id);
}

static void cancel(const char *id)
{
    char out[256];
    const char *args[] = { "cancel", id, NULL };
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, out, sizeof out, args), 0, "cancel: %s", out);
}

/* No value of any key matching `pattern` (hashes) holds `text`. */
static void nowhere_in(const char *pattern, const char *text)
{
    redisReply *k = rq_cmd(Q, NULL, "KEYS %s", pattern);
    cr_assert(k && k->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < k->elements; i++) {
        redisReply *h = rq_cmd(Q, NULL, "HGETALL %s", k->element[i]->str);
        for (size_t j = 0; h && h->type == REDIS_REPLY_ARRAY && j < h->elements; j++)
            cr_assert(!h->element[j]->str || !strstr(h->element[j]->str, text),
                      "%s holds '%s': %s", k->element[i]->str, text, h->element[j]->str);
        freeReplyObject(h);
    }
    freeReplyObject(k);
}

/* ---- findings 4 and 5 ---- */

Test(dist_sec_webhook, a_delivery_written_by_vrctl_is_never_posted_and_global_urls_stay_out)
{
    start();
    char id[64];
    submit("a", "/own", id, sizeof id);
    char jk[160], st[32] = "";
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t < 30000 && strcmp(st, "running"); t += 50) {
        tmsleep(50);
        rq_hget(Q, jk, "state", st, sizeof st, NULL);
    }
    cr_assert_str_eq(st, "running");

    /* the forgery: a job.done delivery for this job, due first, written as
     * the vrctl user could before */
    char url[200], own[160], rk[160], did[96];
    snprintf(url, sizeof url, "redis://vrctl:pw-vrctl@127.0.0.1:%d", A.port);
    struct rq *v = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(url, 2000, &v, &e), 0, "%s", e.msg);
    hook_url(own, sizeof own, "/own");
    snprintf(did, sizeof did, "%s:99", id);
    snprintf(rk, sizeof rk, "vr:notify:%s", did);
    const char *hset[] = { "HSET", rk, "job", id, "seq", "99", "urls", own, "state", "done",
                           "attempts", "0", "frames_done", "5", "frames_total", "5" };
    redisReply *r = rq_cmdargv(v, NULL, 16, hset, NULL);
    int refused = !r || r->type == REDIS_REPLY_ERROR;
    freeReplyObject(r);
    const char *zadd[] = { "ZADD", "vr:notify", "0", did };
    r = rq_cmdargv(v, NULL, 4, zadd, NULL);
    refused = refused && (!r || r->type == REDIS_REPLY_ERROR);
    freeReplyObject(r);
    rq_free(&v);

    /* the real end: the sender takes the earliest due first, so a forged
     * delivery (due at 0) would be POSTed before this one */
    cancel(id);
    wait_hook("/own", id, "job.cancelled", 30000);
    wait_hook("/all", id, "job.cancelled", 30000);
    cr_assert_eq(hook_count("/", id, "job.done", NULL), 0, "a forged job.done was POSTed");
    cr_assert(refused, "the vrctl user wrote a webhook delivery");
    cr_assert_eq(hook_count("/own", id, NULL, NULL), 1);

    /* the controller's URL and token are in no record */
    nowhere_in("vr:job:*", TOKEN);
    nowhere_in("vr:notify:*", TOKEN);
    nowhere_in("vr:job:*", "/all");
    nowhere_in("vr:job:*", "s3cret"); /* nor its signing secret */
    nowhere_in("vr:notify:*", "s3cret");

    /* and cancelling again (by hand, the id put back) posts nothing new */
    const char *sadd[] = { "SADD", "vr:cancels", id };
    freeReplyObject(rq_cmdargv(Q, NULL, 3, sadd, NULL));
    char id2[64];
    submit("b", "/own", id2, sizeof id2);
    tmsleep(50);
    cancel(id2);
    wait_hook("/own", id2, "job.cancelled", 30000);
    cr_assert_eq(hook_count("/own", id, NULL, NULL), 1, "one cancel, posted twice");
}

/* ---- finding 6 ---- */

#define JOBS 12 /* more than one receiver's sender holds: CTL_SEND_QUEUE (8) + 1 in flight */

static void wait_running(const char *id)
{
    char st[32] = "";
    tacl_wait_state(Q, &D, id, "running", 60000, st, sizeof st);
    cr_assert_str_eq(st, "running");
}

/* `vrctl ARGS` as the vrctl user, started and not waited for: its output
 * into `log`. The controller takes asks in once a second, so the submits
 * go at once, not one a second. */
static pid_t vrctl_start(const char *const *args, const char *log)
{
    const char *argv[24] = { "vrctl" };
    int k = 1;
    for (int i = 0; args[i] && k < 19; i++)
        argv[k++] = args[i];
    const char *tail[] = { "--redis", A.uv, "--redis-password-file", A.pv, NULL };
    for (int i = 0; tail[i]; i++)
        argv[k++] = tail[i];
    argv[k] = NULL;
    return tproc_spawn("vrctl", argv, log);
}

/* The job id `vrctl submit` printed into `log` (its notes are lines too). */
static void id_from(const char *log, char *id, size_t n)
{
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f, "%s", log);
    char line[256];
    id[0] = '\0';
    while (!id[0] && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        if (len < n && job_id_valid(line))
            memcpy(id, line, len + 1);
    }
    fclose(f);
    cr_assert(id[0], "no job id in %s", log);
}

Test(dist_sec_webhook, a_tarpit_receiver_delays_no_other_and_its_queue_is_bounded)
{
    tarpit_start();
    start_at(T.port, "60"); /* each tarpit POST holds its sender for a minute */
    char id[JOBS][64], in[400], out[JOBS][400], own[160], log[JOBS][400];
    pid_t p[JOBS];
    snprintf(in, sizeof in, "%s/t.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 160, 5, 0), 0); /* one clip for all: what differs is the job */
    hook_url(own, sizeof own, "/own");
    for (int i = 0; i < JOBS; i++) {
        snprintf(out[i], sizeof out[i], "%s/t%d_mask.mkv", D.r.dir, i);
        snprintf(log[i], sizeof log[i], "%s/submit%d.log", D.r.dir, i);
        const char *args[] = { "submit", in, "-o", out[i], "--profile", "fast", "--notify", own,
                               NULL };
        p[i] = vrctl_start(args, log[i]);
        cr_assert_gt(p[i], 0);
    }
    for (int i = 0; i < JOBS; i++) {
        cr_assert_eq(tproc_wait(p[i], 60000), 0, "submit %d failed (%s)", i, log[i]);
        id_from(log[i], id[i], sizeof id[i]);
    }
    for (int i = 0; i < JOBS; i++)
        wait_running(id[i]);
    /* the cancels one by one: 12 ends at once to the one healthy /own
     * would overflow its own queue (8) */
    long long t0 = now_ms();
    for (int i = 0; i < JOBS; i++)
        cancel(id[i]);

    /* every job's own webhook within 20 s: one sender before this waited
     * out each tarpit POST's timeout (60 s) in turn */
    for (int i = 0; i < JOBS; i++)
        wait_hook("/own", id[i], "job.cancelled", (int)(t0 + 20000 - now_ms()));
    long long last = 0;
    for (int i = 0; i < JOBS; i++) {
        long long ms = 0;
        hook_count("/own", id[i], "job.cancelled", &ms);
        last = ms > last ? ms : last;
    }
    cr_assert_lt(last - t0, 20000, "the last own webhook came %lld ms after the cancels",
                 last - t0);
    cr_assert_gt(T.accepted, 0, "the tarpit was never reached");

    /* the tarpit's queue is bounded: the overflow was dropped, counted, logged */
    char dropped[32] = "";
    for (int t = 0; t < 20000 && atoll(dropped) < JOBS - 9; t += 100) {
        tmsleep(100);
        rq_hget(Q, "vr:stats", "webhooks_dropped", dropped, sizeof dropped, NULL);
    }
    cr_assert_geq(atoll(dropped), JOBS - 9, "dropped %s, want at least %d", dropped, JOBS - 9);
    cr_assert_eq(tsh("grep -q 'dropped this round: its receiver is slow' '%s'", D.log), 0);
    /* and held POSTs, not a connection per delivery: at most one sender's */
    cr_assert_leq(T.accepted, 2, "%d connections to the tarpit", T.accepted);
}

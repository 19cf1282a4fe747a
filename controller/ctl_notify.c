/*
 * ctl_notify.c - job-end webhooks: `vrctl submit --notify URL` and the
 * controller's `--notify URL`. A job that ends (done, failed, cancelled)
 * gets one delivery per end, scheduled in Redis by the script that ends it
 * (queue/rq_notify.h); this file is the sender.
 *
 * The delivery thread has its own Redis connection (hiredis contexts are
 * per thread), so a receiver that is slow or down never holds up the
 * controller's loop. It claims the first due delivery (a lease in Redis:
 * no other controller takes it meanwhile), builds the event from the
 * delivery's snapshot and the job's spec, and hands a POST for each URL
 * not yet served to that URL's receiver's sender (ctl_notify_send.c: one
 * thread and queue per receiver, so a tarpit delays only its own POSTs),
 * then claims the next one without waiting. When a round's last POST is
 * back it records the round: every URL 2xx -> delivered; else the next try
 * at now + 1 s, 2 s, 4 s ... (at most 5 min), until --notify-attempts
 * rounds, then the URLs left are given up (notify_state failed, logged, in
 * the job's events). A URL refused for good (not http(s), a redirect to
 * another scheme, a redirect loop) is given up at once; one whose
 * receiver's queue is full is not sent this round (logged, counted in
 * vrseg_webhooks_dropped_total) and waits for the next.
 *
 * The POST, its headers, its signature and where it may not go:
 * ctl_notify_post.c. The body is the same bytes at every try. A submitter
 * sees (notify_error, the job's events) only "not delivered" and the HTTP
 * status class; the reason is in the controller's log.
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"
#include "ctl_notify_post.h"
#include "ctl_notify_send.h"
#include "rq_fleetstats.h"
#include "rq_notify.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_NOTIFY_IDLE_MS     300   /* the wait between looks at an empty queue */
#define CTL_NOTIFY_OWN         "@controller" /* a delivery's URL line: this controller's --notify */
#define CTL_NOTIFY_FLIGHT_MAX  (CTL_SENDERS_MAX * (CTL_SEND_QUEUE + 1)) /* rounds out at once */

struct ctl_notify {
    struct ctl *c;
    pthread_t th;
    struct rq *q;                 /* the thread's own connection */
    struct ctl_senders *senders;  /* one per receiver, each with its own handle */
    struct rq_notify *d;          /* the delivery just claimed */
    struct job_spec *js;          /* its job's spec */
    struct ctl_round *flight[CTL_NOTIFY_FLIGHT_MAX]; /* rounds out (owned by the senders) */
    int nflight;
};

/* ---- the URLs a job's end goes to ---- */

/* The job's own URL only: this controller's --notify stays in its config
 * (the deliveries say "@controller"), never in a record the workers' and
 * vrctl's users may read (issue 41, finding 5). */
void ctl_notify_urls(const struct job_spec *js, struct ctl_notes *nt)
{
    ctl_note(nt, "notify", js && js->notify[0] ? js->notify : "");
}

int ctl_notify_secret(const char *path, struct ctl_notify_cfg *cfg, vr_err *err)
{
    const char *env = getenv("VR_NOTIFY_SECRET_FILE");
    const char *p = path ? path : env && *env ? env : NULL;
    cfg->secret[0] = '\0';
    cfg->secret_len = 0;
    if (!p)
        return 0;
    int rc = storage_read_secret(p, cfg->secret, sizeof cfg->secret, err);
    if (rc < 0)
        return vr_err_prefix(err, "webhook secret (%s)",
                             path ? "--notify-secret-file" : "VR_NOTIFY_SECRET_FILE");
    cfg->secret_len = (size_t)rc;
    return 0;
}

/* A URL for logs and events: scheme://host[:port]/path, without a user,
 * password, query or fragment (a token often lives there). */
static void ctl_notify_redact(const char *url, char *buf, size_t n)
{
    const char *sep = strstr(url, "://");
    size_t scheme = sep ? (size_t)(sep + 3 - url) : 0;
    const char *auth = url + scheme;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    const char *host = at ? at + 1 : auth;
    const char *path = auth + alen;
    size_t plen = strcspn(path, "?#");
    snprintf(buf, n, "%.*s%.*s%.*s%s", (int)scheme, url, (int)(path - host), host, (int)plen,
             path, path[plen] ? "?..." : "");
}

/* ---- the event ---- */

/* A string member; bytes that are not UTF-8 (an error message from a
 * codec) become '?', so the event is always valid JSON. */
static int ctl_notify_put(json_t *o, const char *key, const char *val)
{
    json_t *s = json_string(val);
    if (!s) {
        char clean[1024];
        size_t i = 0;
        for (; val[i] && i < sizeof clean - 1; i++)
            clean[i] = (unsigned char)val[i] < 0x80 ? val[i] : '?';
        clean[i] = '\0';
        s = json_string(clean);
    }
    return json_object_set_new(o, key, s);
}

static double ctl_notify_r3(double v)
{
    return round(v * 1000) / 1000;
}

/* The event's JSON (malloc'd; the caller frees it), or NULL when out of
 * memory. js may be NULL (a spec that does not parse): no input/output. */
static char *ctl_notify_body(const struct rq_notify *d, const struct job_spec *js)
{
    char event[32];
    snprintf(event, sizeof event, "job.%s", d->state);
    long long t0 = d->started_ms ? d->started_ms : d->created_ms;
    double wall = t0 && d->finished_ms > t0 ? (d->finished_ms - t0) / 1000.0 : 0;
    double fps = wall > 0 ? d->frames_done / wall : 0;
    json_t *o = json_object();
    int bad = !o;
    bad = bad || ctl_notify_put(o, "event", event) || ctl_notify_put(o, "delivery", d->id) ||
          ctl_notify_put(o, "id", d->job) || ctl_notify_put(o, "state", d->state) ||
          ctl_notify_put(o, "input", js ? js->input : "") ||
          ctl_notify_put(o, "output", js ? js->output : "");
    bad = bad || json_object_set_new(o, "frames", json_integer(d->frames_done)) ||
          json_object_set_new(o, "frames_total", json_integer(d->frames_total)) ||
          json_object_set_new(o, "fps", json_real(ctl_notify_r3(fps))) ||
          json_object_set_new(o, "wall_s", json_real(ctl_notify_r3(wall))) ||
          ctl_notify_put(o, "error", d->error) ||
          json_object_set_new(o, "created_ms", json_integer(d->created_ms)) ||
          json_object_set_new(o, "finished_ms", json_integer(d->finished_ms));
    size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12);
    char *s = bad ? NULL : json_dumps(o, flags);
    json_decref(o);
    return s;
}

/* ---- one round of a delivery ---- */

/* The wait before round `attempts` + 1: retry_ms doubled per round done,
 * at most CTL_NOTIFY_RETRY_MAX_MS. */
static long long ctl_notify_backoff(const struct ctl_notify_cfg *cfg, int attempts)
{
    long long w = cfg->retry_ms;
    for (int i = 1; i < attempts && w < CTL_NOTIFY_RETRY_MAX_MS; i++)
        w *= 2;
    return w < CTL_NOTIFY_RETRY_MAX_MS ? w : CTL_NOTIFY_RETRY_MAX_MS;
}

/* Starts a round of n->d: its event to each URL not reached yet, each
 * through its receiver's sender (ctl_notify_send.h), none waited for here.
 * A URL whose sender is full is not sent this round (counted, logged). The
 * round is recorded when its last POST is back (ctl_notify_finish). */
static void ctl_notify_begin(struct ctl_notify *n)
{
    const struct ctl_notify_cfg *cfg = &n->c->notify;
    struct rq_notify *d = n->d;
    vr_err e = { 0 };
    /* input and output from the spec; one that does not parse leaves them out */
    int have_spec = ctl_jobfiles_spec_via(n->q, d->job, n->js, &e) == 0;
    if (!have_spec && e.code == VR_EREDIS)
        return; /* Redis went away: the lease lapses, this or another controller goes on */
    struct ctl_round *r = calloc(1, sizeof *r);
    if (!r)
        return; /* out of memory: the lease lapses, tried again then */
    r->d = *d;
    r->body = ctl_notify_body(d, have_spec ? n->js : NULL);
    snprintf(r->event, sizeof r->event, "job.%s", d->state);
    r->pending = 1; /* this thread's hold while it pushes */
    for (int i = 0; i < d->nurls; i++) {
        r->result[i] = CTL_SEND_NONE;
        if (d->done[i])
            continue;
        /* "@controller": this controller's own --notify (none: given up) */
        const char *to = !strcmp(d->urls[i], CTL_NOTIFY_OWN) ? cfg->url : r->d.urls[i];
        if (!to[0]) {
            r->result[i] = CTL_POST_REFUSED;
            snprintf(r->why[i], sizeof r->why[i], "this controller has no --notify");
        } else if (ctl_senders_push(n->senders, r, i, to) < 0) {
            char url[160];
            ctl_notify_redact(to, url, sizeof url);
            r->result[i] = CTL_POST_RETRY;
            snprintf(r->why[i], sizeof r->why[i],
                     "dropped: its receiver's sender has %d POSTs waiting (or %d receivers are "
                     "busy)", CTL_SEND_QUEUE, CTL_SENDERS_MAX);
            log_warn("job %s: webhook %s to %s dropped this round: its receiver is slow (%d "
                     "POSTs queued for it); tried again at the next round", d->job, d->id, url,
                     CTL_SEND_QUEUE);
            rq_fleetstats_note(n->q, RQ_NOTE_WEBHOOK_DROPPED, 0, NULL);
        }
    }
    n->flight[n->nflight++] = r;
    ctl_senders_release(n->senders, r);
}

/* Logs and records a finished round r (its POSTs all back), then frees it. */
static void ctl_notify_finish(struct ctl_notify *n, struct ctl_round *r)
{
    struct rq_notify *d = &r->d;
    const struct ctl_notify_cfg *cfg = &n->c->notify;
    log_ctx_thread(d->job, -1);
    vr_err e = { 0 };
    int round = d->attempts + 1, outcome[RQ_NOTIFY_MAX_URLS] = { 0 }, left = 0;
    char why[512] = "", url[160], shown[64];
    for (int i = 0; i < d->nurls; i++) {
        int res = r->result[i];
        if (res == CTL_SEND_NONE)
            continue;
        const char *to = !strcmp(d->urls[i], CTL_NOTIFY_OWN) ? cfg->url : d->urls[i];
        ctl_notify_redact(to, url, sizeof url);
        if (res == CTL_POST_OK) {
            outcome[i] = RQ_NOTIFY_DELIVERED;
            log_info("job %s: webhook %s delivered to %s (attempt %d)", d->job, d->id, url, round);
            rq_event(n->q, d->job, "webhook job.%s delivered to %s (attempt %d)", d->state, url,
                     round);
            continue;
        }
        if (res == CTL_POST_REFUSED)
            outcome[i] = RQ_NOTIFY_GIVEN_UP;
        else
            left++;
        /* the detail to the log only: it would tell a submitter what
         * listens where on the controller's network */
        ctl_notify_public_why(r->http[i], shown, sizeof shown);
        size_t l = strlen(why);
        snprintf(why + l, sizeof why - l, "%s%s: %s", l ? "; " : "", url, shown);
        if (res == CTL_POST_REFUSED) {
            log_error("job %s: webhook %s to %s given up: %s", d->job, d->id, url, r->why[i]);
            rq_event(n->q, d->job, "webhook to %s given up: %s", url, shown);
        } else {
            log_warn("job %s: webhook %s to %s (attempt %d): %s", d->job, d->id, url, round,
                     r->why[i]);
        }
    }
    if (*n->c->stop && left) /* cut short: due again at once, for the next controller */
        snprintf(why, sizeof why, "the controller stopped mid-POST");
    int give_up = left && round >= cfg->max_attempts && !*n->c->stop;
    long long next = 0;
    if (left && !give_up)
        next = rq_now_ms() + (*n->c->stop ? 0 : ctl_notify_backoff(cfg, round));
    int rc = rq_notify_record(n->q, d, n->c->name, outcome, next, why, &e);
    if (rc < 0)
        log_warn("job %s: webhook %s: cannot record the round (%s); it is tried again after "
                 "its lease", d->job, d->id, e.msg);
    else if (rc == 0)
        log_warn("job %s: webhook %s not delivered (attempt %d of %d): %s; next try in %.1f s",
                 d->job, d->id, round, cfg->max_attempts, why, (next - rq_now_ms()) / 1000.0);
    else if (give_up) {
        log_error("job %s: webhook %s given up after %d attempts: %s", d->job, d->id, round, why);
        rq_event(n->q, d->job, "webhook given up after %d attempts: %.300s", round, why);
    }
    log_ctx_thread(NULL, -1);
    free(r->body);
    free(r);
}

/* Records the rounds in `list` (through `next`), each out of the flight. */
static void ctl_notify_finish_all(struct ctl_notify *n, struct ctl_round *list)
{
    while (list) {
        struct ctl_round *r = list, *next = r->next;
        for (int i = 0; i < n->nflight; i++)
            if (n->flight[i] == r)
                n->flight[i] = n->flight[--n->nflight];
        ctl_notify_finish(n, r);
        list = next;
    }
}

/* 1 when delivery id has a round in flight here (its claim just renewed
 * the lease; it is not started twice). */
static int ctl_notify_in_flight(const struct ctl_notify *n, const char *id)
{
    for (int i = 0; i < n->nflight; i++)
        if (!strcmp(n->flight[i]->d.id, id))
            return 1;
    return 0;
}

/* ---- the thread ---- */

/* Sleeps ms milliseconds, or less when the controller stops. */
static void ctl_notify_nap(const struct ctl_notify *n, int ms)
{
    for (int t = 0; t < ms && !*n->c->stop; t += 50)
        usleep(50000);
}

static void *ctl_notify_main(void *arg)
{
    struct ctl_notify *n = arg;
    const struct ctl_notify_cfg *cfg = &n->c->notify;
    /* a round's slowest POST may wait behind a full queue of its receiver,
     * each within the timeout: the claim outlives that with a margin (and
     * a claim that lapses while its round is out is renewed by the next
     * claim here, which finds it in flight) */
    long long lease = (long long)(cfg->timeout_s * 1000) * (CTL_SEND_QUEUE + 1) + 5000;
    int down = 0, cancels_down = 0;
    while (!*n->c->stop) {
        ctl_notify_finish_all(n, ctl_senders_finished(n->senders));
        if (n->nflight >= CTL_NOTIFY_FLIGHT_MAX) {
            ctl_notify_nap(n, CTL_NOTIFY_IDLE_MS);
            continue;
        }
        vr_err e = { 0 };
        int rc = rq_notify_claim(n->q, n->c->name, rq_now_ms(), lease, n->d, &e);
        if (rc < 0) {
            if (!down) /* VR_EINVAL: an ACL denial, say (deploy/redis-users.acl) */
                log_msg(e.code == VR_EINVAL ? LOG_ERROR : LOG_WARN, "webhooks: %s; retrying",
                        e.msg);
            down = 1;
            rq_backoff(n->q);
            continue;
        }
        down = 0;
        if (rc == 1 && ctl_notify_in_flight(n, n->d->id))
            continue;
        /* the jobs vrctl cancelled get their delivery from here */
        int took = rc == 0 ? rq_job_notify_cancels(n->q, &e) : 1;
        if (took < 0 && !cancels_down)
            log_warn("webhooks: the cancelled jobs: %s", e.msg);
        cancels_down = took < 0;
        if (took <= 0)
            ctl_notify_nap(n, CTL_NOTIFY_IDLE_MS);
        else if (rc == 1)
            ctl_notify_begin(n);
    }
    /* the senders cut their POSTs short and hand back what they held: each
     * round is recorded due at once, for the next controller */
    struct ctl_round *left = NULL;
    ctl_senders_free(&n->senders, &left);
    ctl_notify_finish_all(n, left);
    return NULL;
}

static void ctl_notify_free(struct ctl_notify *n)
{
    ctl_senders_free(&n->senders, NULL);
    rq_free(&n->q);
    free(n->d);
    free(n->js);
    free(n);
}

int ctl_notify_start(struct ctl *c, struct ctl_notify **out, vr_err *err)
{
    *out = NULL;
    struct ctl_notify *n = calloc(1, sizeof *n);
    if (!n)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    n->c = c;
    n->d = malloc(sizeof *n->d);
    n->js = malloc(sizeof *n->js);
    n->senders = ctl_senders_new(c);
    if (!n->d || !n->js || !n->senders) {
        ctl_notify_free(n);
        return vr_err_set(err, VR_ENOMEM, "webhooks: out of memory (or libcurl failed to start)");
    }
    /* Redis may be down now: the handle reconnects at the next claim */
    rq_open(c->url, 5000, &n->q, NULL);
    if (!n->q) {
        ctl_notify_free(n);
        return vr_err_set(err, VR_EINVAL, "webhooks: cannot use redis address");
    }
    rq_job_notify_global(c->notify.url[0] != '\0'); /* before any thread reads it */
    if (pthread_create(&n->th, NULL, ctl_notify_main, n) != 0) {
        ctl_notify_free(n);
        return vr_err_set(err, VR_ENOMEM, "webhooks: cannot start the delivery thread");
    }
    if (c->notify.url[0] || c->notify.secret_len) {
        char url[160];
        ctl_notify_redact(c->notify.url, url, sizeof url);
        log_info("webhooks: every job's end to %s; %s", c->notify.url[0] ? url : "(none)",
                 c->notify.secret_len ? "signed (X-Vrseg-Signature)" : "unsigned");
    }
    *out = n;
    return 0;
}

void ctl_notify_stop(struct ctl_notify **np)
{
    struct ctl_notify *n = np ? *np : NULL;
    if (!n)
        return;
    pthread_join(n->th, NULL);
    ctl_notify_free(n);
    *np = NULL;
}

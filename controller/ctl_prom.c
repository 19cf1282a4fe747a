/*
 * ctl_prom.c - `vr-controller --metrics-listen [ADDR:]PORT`: the fleet's
 * figures in the Prometheus text format on /metrics, and /healthz (200 when
 * Redis answers a PING and the controller's loop turns, 503 otherwise) for
 * load balancers and Kubernetes.
 *
 * Two threads besides the controller's loop. The server (ctl_http.c) never
 * touches Redis: it answers from the last snapshot when that was taken at
 * most CTL_PROM_FRESH_MS before the request came, and otherwise parks the
 * request and asks the reader. The reader, with its OWN Redis connection
 * (hiredis contexts are not thread-safe), reads the figures or PINGs when
 * asked and wakes the server. However many scrapes come, Redis sees at
 * most one read a second, and the cost of one read is bounded
 * (rq_fleetstats.h: RQ_FLEET_CHUNK_BUDGET); a probe is answered from the
 * last PING, or after the next, never behind a slow client.
 *
 * Every figure comes from Redis (rq_fleetstats.h), so counters go on from
 * where they were after a controller restart, and any controller of a fleet
 * serves the same numbers. Labels stay bounded: worker (the live fleet),
 * job_id (jobs in flight only), stage (8), state (a handful).
 */
#include "ctl.h"
#include "ctl_http.h"

#include "clock.h"
#include "log.h"
#include "rq_fleetstats.h"

#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CTL_PROM_REDIS_MS  2000       /* a read waits at most this for Redis */
#define CTL_PROM_FRESH_MS  1000       /* a snapshot serves requests this much younger */
#define CTL_PROM_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The outcome of the reader's last attempt at something. */
struct ctl_prom_result {
    double at_ms;                 /* monotonic start of the attempt; 0 = never */
    int ok;
    char msg[300];                /* why not, when !ok */
};

struct ctl_prom {
    struct ctl_http *http;
    pthread_t th;
    int started;
    pthread_mutex_t mu;           /* guards everything below */
    pthread_cond_t cv;            /* the reader waits here to be asked */
    int stop;
    int want_figures, want_ping;  /* asked of the reader */
    struct ctl_prom_result health;  /* last PING (also made by every figures read) */
    struct ctl_prom_result figures; /* last figures read */
    char *text;                   /* the snapshot of the last good read */
    size_t len;
    char *url;                    /* Redis, for the reader's connection */
    struct rq *q;                 /* the reader's own connection (NULL: refused, retried) */
    struct rq_fleetstats *fs;     /* the reader's scratch */
    const struct ctl *ctl;        /* whose loop /healthz watches (NULL: none yet) */
};

/* ---- the reader ---- */

/* One read of what was asked; the results replace the last ones. */
static void ctl_prom_read(struct ctl_prom *p, int figures)
{
    vr_err e = { 0 };
    char *text = NULL;
    size_t len = 0;
    double t0 = clock_mono_ms();
    int rc = p->q ? 0 : rq_open(p->url, CTL_PROM_REDIS_MS, &p->q, &e);
    if (!p->q) /* a refused AUTH leaves no handle: said at each read */
        rc = rc < 0 ? rc : vr_err_set(&e, VR_EREDIS, "no connection");
    else
        rc = figures ? rq_fleetstats_read(p->q, p->fs, &e) : rq_ping(p->q, &e);
    int made = rc == 0 && figures ? ctl_prom_text(p->fs, &text, &len) : 0;

    pthread_mutex_lock(&p->mu);
    p->health = (struct ctl_prom_result){ .at_ms = t0, .ok = rc == 0 };
    snprintf(p->health.msg, sizeof p->health.msg, "redis unreachable: %s", e.msg);
    if (figures) {
        p->figures = p->health;
        if (made < 0) {
            p->figures.ok = 0;
            snprintf(p->figures.msg, sizeof p->figures.msg,
                     "scrape larger than its bound (4 MiB) or out of memory");
        }
        if (text) {
            free(p->text);
            p->text = text;
            p->len = len;
        }
    }
    pthread_mutex_unlock(&p->mu);
    ctl_http_wake(p->http);
}

static void *ctl_prom_reader(void *arg)
{
    struct ctl_prom *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (!p->want_figures && !p->want_ping) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        int figures = p->want_figures;
        p->want_figures = p->want_ping = 0;
        pthread_mutex_unlock(&p->mu);
        ctl_prom_read(p, figures);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- HTTP ---- */

static int ctl_prom_plain(struct ctl_http_answer *a, int status, const char *fmt, const char *arg)
{
    char buf[400];
    snprintf(buf, sizeof buf, fmt, arg);
    a->status = status;
    a->type = "text/plain; charset=utf-8";
    a->body = strdup(buf);
    a->len = a->body ? strlen(a->body) : 0;
    return CTL_HTTP_DONE;
}

/* Answers from a result no older than CTL_PROM_FRESH_MS before the request
 * came, or asks the reader (*want) and waits. Called with p->mu held. */
static int ctl_prom_answer(struct ctl_prom *p, int metrics, double since_ms,
                           struct ctl_http_answer *a)
{
    const struct ctl_prom_result *r = metrics ? &p->figures : &p->health;
    if (r->at_ms == 0 || r->at_ms < since_ms - CTL_PROM_FRESH_MS) {
        *(metrics ? &p->want_figures : &p->want_ping) = 1;
        pthread_cond_signal(&p->cv);
        return CTL_HTTP_WAIT;
    }
    if (!r->ok)
        return ctl_prom_plain(a, 503, "%s\n", r->msg);
    double stuck = !metrics && p->ctl ? ctl_loop_stalled(p->ctl) : 0;
    if (stuck > 0) {
        char why[128];
        snprintf(why, sizeof why, "%.0f s", stuck);
        return ctl_prom_plain(a, 503, "controller loop stuck: no turn for %s\n", why);
    }
    if (!metrics)
        return ctl_prom_plain(a, 200, "%s\n", "ok");
    a->body = malloc(p->len ? p->len : 1);
    if (!a->body)
        return ctl_prom_plain(a, 500, "%s\n", "out of memory");
    memcpy(a->body, p->text, p->len);
    a->len = p->len;
    a->status = 200;
    a->type = CTL_PROM_TEXT_TYPE;
    return CTL_HTTP_DONE;
}

static int ctl_prom_handler(void *arg, const char *method, const char *path, double since_ms,
                            struct ctl_http_answer *a)
{
    struct ctl_prom *p = arg;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return ctl_prom_plain(a, 405, "%s not allowed\n", method);
    int metrics = !strcmp(path, "/metrics");
    if (!metrics && strcmp(path, "/healthz"))
        return ctl_prom_plain(a, 404, "%s: not found (/metrics, /healthz)\n", path);
    pthread_mutex_lock(&p->mu);
    int rc = ctl_prom_answer(p, metrics, since_ms, a);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* ---- lifecycle ---- */

/* "[ADDR:]PORT" into *ai: "PORT" and ":PORT" mean 127.0.0.1 (the figures
 * name jobs and hosts and have no authentication: listening elsewhere is
 * asked for by naming the address, "0.0.0.0:PORT", "[::]:PORT" or one
 * interface's). */
static int ctl_prom_resolve(const char *listen, struct addrinfo **ai, vr_err *err)
{
    char host[256], port[16];
    const char *colon = strrchr(listen, ':');
    const char *ps = colon ? colon + 1 : listen;
    size_t hl = colon ? (size_t)(colon - listen) : 0;
    if (!ps[0] || strlen(ps) >= sizeof port || hl >= sizeof host)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: want [ADDR:]PORT (e.g. 9464, "
                          "127.0.0.1:9464)", listen);
    snprintf(port, sizeof port, "%s", ps);
    char *end;
    long pn = strtol(port, &end, 10);
    if (*end || pn < 1 || pn > 65535)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: port must be 1..65535", listen);
    const char *h = listen;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    snprintf(host, sizeof host, "%.*s", (int)hl, h);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
    int g = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, ai);
    if (g)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: %s", listen, gai_strerror(g));
    return 0;
}

/* 1 when the address is a loopback one. */
static int ctl_prom_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

int ctl_prom_start(const char *listen, const char *url, struct ctl_prom **out, vr_err *err)
{
    *out = NULL;
    struct addrinfo *ai = NULL;
    int rc = ctl_prom_resolve(listen, &ai, err);
    if (rc < 0)
        return rc;
    struct ctl_prom *p = calloc(1, sizeof *p);
    if (!p || !(p->fs = malloc(sizeof *p->fs)) || !(p->url = strdup(url))) {
        if (p)
            free(p->fs);
        free(p);
        freeaddrinfo(ai);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int local = ctl_prom_loopback(ai->ai_addr);
    vr_err he = { 0 };
    rc = ctl_http_start(ai->ai_addr, (unsigned)ai->ai_addrlen, ctl_prom_handler, p, &p->http, &he);
    freeaddrinfo(ai);
    if (rc < 0) {
        ctl_prom_stop(&p);
        return vr_err_set(err, VR_EIO, "--metrics-listen %s: cannot listen there (%s)", listen,
                          he.msg);
    }
    p->started = pthread_create(&p->th, NULL, ctl_prom_reader, p) == 0;
    if (!p->started) {
        ctl_prom_stop(&p);
        return vr_err_set(err, VR_ENOMEM, "cannot start a thread");
    }
    if (local)
        log_info("metrics: serving /metrics and /healthz on %s (this host only)", listen);
    else
        log_warn("metrics: serving /metrics and /healthz on %s, beyond this host and without "
                 "authentication: job ids and worker names are visible to whoever reaches it",
                 listen);
    *out = p;
    return 0;
}

void ctl_prom_watch(struct ctl_prom *p, const struct ctl *c)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->ctl = c;
    pthread_mutex_unlock(&p->mu);
}

void ctl_prom_stop(struct ctl_prom **pp)
{
    struct ctl_prom *p = pp ? *pp : NULL;
    if (!p)
        return;
    if (p->started) { /* first: the reader wakes the server */
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    ctl_http_stop(&p->http);
    rq_free(&p->q);
    free(p->url);
    free(p->fs);
    free(p->text);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

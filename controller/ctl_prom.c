/*
 * ctl_prom.c - `vr-controller --metrics-listen ADDR:PORT`: the fleet's
 * figures in the Prometheus text format on /metrics, and /healthz (200 when
 * Redis answers a PING, 503 otherwise) for load balancers and Kubernetes.
 *
 * Served from libmicrohttpd's own thread (MHD_USE_INTERNAL_POLLING_THREAD,
 * one thread for every connection) with its OWN Redis connection: hiredis
 * contexts are not thread-safe, and this way a scrape is always fresh (read
 * from Redis when asked) while the controller's loop is never blocked by a
 * slow scrape or a slow Prometheus. The cost of a scrape falls on Redis: a
 * few commands plus two read-only scripts (jobs by state over the newest
 * RQ_FLEET_INDEX_SCAN jobs; chunk states of each job in flight).
 *
 * Every figure comes from Redis (rq_fleetstats.h), so counters go on from
 * where they were after a controller restart, and any controller of a fleet
 * serves the same numbers. Labels stay bounded: worker (the live fleet),
 * job (jobs in flight only), stage (8), state (a handful).
 */
#include "ctl.h"

#include "log.h"
#include "rq_fleetstats.h"

#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CTL_PROM_REDIS_MS  2000       /* a scrape waits at most this for Redis */

struct ctl_prom {
    struct MHD_Daemon *d;
    pthread_mutex_t mu;           /* guards q and fs (one scrape at a time) */
    struct rq *q;                 /* this endpoint's own connection */
    struct rq_fleetstats *fs;     /* scratch for one scrape */
};

/* ---- HTTP ---- */

static enum MHD_Result ctl_prom_send(struct MHD_Connection *conn, unsigned status, char *body,
                                     size_t len, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result ctl_prom_plain(struct MHD_Connection *conn, unsigned status,
                                      const char *fmt, const char *arg)
{
    char *s = malloc(1024);
    if (!s)
        return MHD_NO;
    snprintf(s, 1024, fmt, arg);
    return ctl_prom_send(conn, status, s, strlen(s), "text/plain; charset=utf-8");
}

static enum MHD_Result ctl_prom_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                        const char *method, const char *version,
                                        const char *upload, size_t *upload_size, void **state)
{
    struct ctl_prom *p = cls;
    (void)version, (void)upload, (void)upload_size, (void)state;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return ctl_prom_plain(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "%s not allowed\n", method);
    int metrics = !strcmp(url, "/metrics");
    if (!metrics && strcmp(url, "/healthz"))
        return ctl_prom_plain(conn, MHD_HTTP_NOT_FOUND, "%s: not found (/metrics, /healthz)\n", url);

    vr_err e = { 0 };
    char *text = NULL;
    size_t len = 0;
    pthread_mutex_lock(&p->mu);
    int rc = metrics ? rq_fleetstats_read(p->q, p->fs, &e) : rq_ping(p->q, &e);
    int made = rc == 0 && metrics ? ctl_prom_text(p->fs, &text, &len) : 0;
    pthread_mutex_unlock(&p->mu);

    if (rc < 0)
        return ctl_prom_plain(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "redis unreachable: %s\n", e.msg);
    if (!metrics)
        return ctl_prom_plain(conn, MHD_HTTP_OK, "%s\n", "ok");
    if (made < 0)
        return ctl_prom_plain(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n",
                              "scrape larger than its bound (4 MiB) or out of memory");
    return ctl_prom_send(conn, MHD_HTTP_OK, text, len, "text/plain; version=0.0.4; charset=utf-8");
}

/* ---- lifecycle ---- */

/* "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (every IPv4 interface; "[::]:PORT"
 * for IPv6 as well) into *ai. */
static int ctl_prom_resolve(const char *listen, struct addrinfo **ai, vr_err *err)
{
    char host[256], port[16];
    const char *colon = strrchr(listen, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= sizeof port ||
        (size_t)(colon - listen) >= sizeof host)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: want ADDR:PORT (e.g. 127.0.0.1:9464)",
                          listen);
    snprintf(port, sizeof port, "%s", colon + 1);
    char *end;
    long pn = strtol(port, &end, 10);
    if (*end || pn < 1 || pn > 65535)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: port must be 1..65535", listen);
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    snprintf(host, sizeof host, "%.*s", (int)hl, h);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    int g = getaddrinfo(host[0] ? host : NULL, port, &hints, ai);
    if (g)
        return vr_err_set(err, VR_EINVAL, "--metrics-listen %s: %s", listen, gai_strerror(g));
    return 0;
}

int ctl_prom_start(const char *listen, const char *url, struct ctl_prom **out, vr_err *err)
{
    *out = NULL;
    struct addrinfo *ai = NULL;
    int rc = ctl_prom_resolve(listen, &ai, err);
    if (rc < 0)
        return rc;
    struct ctl_prom *p = calloc(1, sizeof *p);
    if (!p || !(p->fs = malloc(sizeof *p->fs))) {
        free(p);
        freeaddrinfo(ai);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    /* Redis may be down now: the handle reconnects at the next scrape. */
    rq_open(url, CTL_PROM_REDIS_MS, &p->q, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    p->d = MHD_start_daemon(flags, 0, NULL, NULL, ctl_prom_handler, p,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!p->d) {
        ctl_prom_stop(&p);
        return vr_err_set(err, VR_EIO, "--metrics-listen %s: cannot listen there (in use, or not "
                          "an address of this host?)", listen);
    }
    log_info("metrics: serving /metrics and /healthz on %s", listen);
    *out = p;
    return 0;
}

void ctl_prom_stop(struct ctl_prom **pp)
{
    struct ctl_prom *p = pp ? *pp : NULL;
    if (!p)
        return;
    if (p->d)
        MHD_stop_daemon(p->d);
    rq_free(&p->q);
    free(p->fs);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

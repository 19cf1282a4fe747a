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

#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CTL_PROM_MAX_BYTES (4 << 20)  /* a scrape larger than this is refused */
#define CTL_PROM_REDIS_MS  2000       /* a scrape waits at most this for Redis */

struct ctl_prom {
    struct MHD_Daemon *d;
    pthread_mutex_t mu;           /* guards q and fs (one scrape at a time) */
    struct rq *q;                 /* this endpoint's own connection */
    struct rq_fleetstats *fs;     /* scratch for one scrape */
};

/* ---- bounded text buffer ---- */

struct pbuf {
    char *p;
    size_t len, cap;
    int toobig;                   /* a write would pass CTL_PROM_MAX_BYTES */
};

static void pb_printf(struct pbuf *b, const char *fmt, ...)
{
    if (b->toobig)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->toobig = 1;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t want = b->cap ? b->cap * 2 : 65536;
        while (want < b->len + (size_t)n + 1)
            want *= 2;
        if (want > CTL_PROM_MAX_BYTES) {
            b->toobig = 1;
            return;
        }
        char *np = realloc(b->p, want);
        if (!np) {
            b->toobig = 1;
            return;
        }
        b->p = np;
        b->cap = want;
    }
}

/* A label value with \, " and newline escaped (the text format's rule). */
static const char *pb_label(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    for (; *s && o + 3 < n; s++) {
        if (*s == '\\' || *s == '"') {
            buf[o++] = '\\';
            buf[o++] = *s;
        } else if (*s == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else {
            buf[o++] = *s;
        }
    }
    buf[o] = '\0';
    return buf;
}

static void pb_head(struct pbuf *b, const char *name, const char *type, const char *help)
{
    pb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- the exposition ---- */

/* Prometheus bucket bounds in seconds. The merged histograms have fine
 * log-spaced buckets (metrics.h); each is counted under the first bound its
 * upper edge does not pass, so a bound is exact to one fine bucket (~4%). */
static const double ctl_prom_le[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100 };
#define CTL_PROM_NLE (int)(sizeof ctl_prom_le / sizeof ctl_prom_le[0])

static void ctl_prom_hist(struct pbuf *b, const char *stage, const struct hist *h)
{
    unsigned long long cum = 0;
    int i = 0;
    for (int k = 0; k < CTL_PROM_NLE; k++) {
        double le_us = ctl_prom_le[k] * 1e6 * (1 + 1e-9);
        while (i < HIST_BUCKETS - 1 && HIST_LO_US * pow(HIST_GROWTH, i + 1) <= le_us)
            cum += h->b[i++];
        pb_printf(b, "vrseg_stage_latency_seconds_bucket{stage=\"%s\",le=\"%g\"} %llu\n", stage,
                  ctl_prom_le[k], cum);
    }
    while (i < HIST_BUCKETS)
        cum += h->b[i++];
    pb_printf(b, "vrseg_stage_latency_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n", stage, cum);
    pb_printf(b, "vrseg_stage_latency_seconds_sum{stage=\"%s\"} %.9f\n", stage, h->sum_ns / 1e9);
    pb_printf(b, "vrseg_stage_latency_seconds_count{stage=\"%s\"} %llu\n", stage,
              (unsigned long long)h->count);
}

static void ctl_prom_jobs(struct pbuf *b, const struct rq_fleetstats *fs)
{
    static const char *const states[] = { "queued", "splitting", "running", "stitching",
                                          "done", "failed", "cancelled" };
    char lb[160];
    pb_head(b, "vrseg_jobs", "gauge", "Jobs by state (the newest 10000 of the index).");
    for (size_t s = 0; s < sizeof states / sizeof states[0]; s++) {
        long long n = 0;
        for (int k = 0; k < fs->nstates; k++)
            if (!strcmp(fs->jobs[k].state, states[s]))
                n = fs->jobs[k].n;
        pb_printf(b, "vrseg_jobs{state=\"%s\"} %lld\n", states[s], n);
    }
    pb_head(b, "vrseg_jobs_in_flight", "gauge", "Jobs a controller looks after (vr:active).");
    pb_printf(b, "vrseg_jobs_in_flight %lld\n", fs->active);

    long long ck[RQ_CK_NSTATES] = { 0 };
    for (int j = 0; j < fs->njobs; j++)
        for (int s = 0; s < RQ_CK_NSTATES; s++)
            ck[s] += fs->job[j].chunks[s];
    pb_head(b, "vrseg_chunks", "gauge", "Chunks of the jobs in flight by state.");
    for (int s = 0; s < RQ_CK_NSTATES; s++)
        pb_printf(b, "vrseg_chunks{state=\"%s\"} %lld\n", rq_chunk_state_name(s), ck[s]);

    pb_head(b, "vrseg_job_frames", "gauge", "Frames of each job in flight.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_frames{job=\"%s\"} %lld\n", pb_label(fs->job[j].id, lb, sizeof lb),
                  fs->job[j].frames_total);
    pb_head(b, "vrseg_job_frames_done", "gauge", "Frames committed of each job in flight.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_frames_done{job=\"%s\"} %lld\n",
                  pb_label(fs->job[j].id, lb, sizeof lb), fs->job[j].frames_done);
    pb_head(b, "vrseg_job_fps", "gauge", "Frames done per second since each job in flight started.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_fps{job=\"%s\"} %.3f\n", pb_label(fs->job[j].id, lb, sizeof lb),
                  fs->job[j].fps);
    pb_head(b, "vrseg_job_chunks", "gauge", "Chunks of each job in flight by state.");
    for (int j = 0; j < fs->njobs; j++)
        for (int s = 0; s < RQ_CK_NSTATES; s++)
            pb_printf(b, "vrseg_job_chunks{job=\"%s\",state=\"%s\"} %lld\n",
                      pb_label(fs->job[j].id, lb, sizeof lb), rq_chunk_state_name(s),
                      fs->job[j].chunks[s]);
}

static void ctl_prom_workers(struct pbuf *b, const struct rq_fleetstats *fs)
{
    static const char *const states[] = { "idle", "busy", "draining" };
    char lb[400];
    double fleet = 0;
    for (int i = 0; i < fs->nworkers; i++)
        if (!strcmp(fs->workers[i].state, "busy"))
            fleet += fs->workers[i].fps;
    pb_head(b, "vrseg_workers", "gauge", "Live workers by state.");
    for (size_t s = 0; s < sizeof states / sizeof states[0]; s++) {
        int n = 0;
        for (int i = 0; i < fs->nworkers; i++)
            n += !strcmp(fs->workers[i].state, states[s]);
        pb_printf(b, "vrseg_workers{state=\"%s\"} %d\n", states[s], n);
    }
    pb_head(b, "vrseg_fleet_fps", "gauge", "Sum of the busy workers' fps (each at its last chunk's rate).");
    pb_printf(b, "vrseg_fleet_fps %.3f\n", fleet);

    pb_head(b, "vrseg_worker_busy", "gauge", "1 while the worker processes a chunk.");
    for (int i = 0; i < fs->nworkers; i++)
        pb_printf(b, "vrseg_worker_busy{worker=\"%s\"} %d\n",
                  pb_label(fs->workers[i].name, lb, sizeof lb), !strcmp(fs->workers[i].state, "busy"));
    pb_head(b, "vrseg_worker_fps", "gauge", "Frames per second of the worker's last chunk.");
    for (int i = 0; i < fs->nworkers; i++)
        pb_printf(b, "vrseg_worker_fps{worker=\"%s\"} %.3f\n",
                  pb_label(fs->workers[i].name, lb, sizeof lb), fs->workers[i].fps);
    pb_head(b, "vrseg_worker_frames_processed_total", "counter",
            "Frames the worker committed since it started.");
    for (int i = 0; i < fs->nworkers; i++)
        pb_printf(b, "vrseg_worker_frames_processed_total{worker=\"%s\"} %lld\n",
                  pb_label(fs->workers[i].name, lb, sizeof lb), fs->workers[i].frames_done);
    pb_head(b, "vrseg_worker_chunks_processed_total", "counter",
            "Chunks the worker committed since it started.");
    for (int i = 0; i < fs->nworkers; i++)
        pb_printf(b, "vrseg_worker_chunks_processed_total{worker=\"%s\"} %lld\n",
                  pb_label(fs->workers[i].name, lb, sizeof lb), fs->workers[i].chunks_done);
    pb_head(b, "vrseg_worker_gpu_utilization_ratio", "gauge",
            "Mean GPU utilisation over the worker's last chunk (0..1; GPU workers with NVML only).");
    for (int i = 0; i < fs->nworkers; i++)
        if (fs->workers[i].gpu_util >= 0)
            pb_printf(b, "vrseg_worker_gpu_utilization_ratio{worker=\"%s\"} %.4f\n",
                      pb_label(fs->workers[i].name, lb, sizeof lb), fs->workers[i].gpu_util / 100);
    pb_head(b, "vrseg_worker_gpu_memory_peak_bytes", "gauge",
            "Peak device memory of the worker's last chunk (GPU workers only).");
    for (int i = 0; i < fs->nworkers; i++)
        if (fs->workers[i].gpu_mem > 0)
            pb_printf(b, "vrseg_worker_gpu_memory_peak_bytes{worker=\"%s\"} %lld\n",
                      pb_label(fs->workers[i].name, lb, sizeof lb), fs->workers[i].gpu_mem);
}

/* The whole exposition of `fs` into b. */
static void ctl_prom_text(struct pbuf *b, const struct rq_fleetstats *fs)
{
    pb_head(b, "vrseg_frames_processed_total", "counter", "Frames of committed chunks, fleet-wide.");
    pb_printf(b, "vrseg_frames_processed_total %lld\n", fs->frames);
    pb_head(b, "vrseg_chunks_committed_total", "counter", "Chunks committed, fleet-wide.");
    pb_printf(b, "vrseg_chunks_committed_total %lld\n", fs->chunks);
    pb_head(b, "vrseg_chunks_reclaimed_total", "counter",
            "Chunks whose worker stopped renewing its lease (requeued or dead-lettered).");
    pb_printf(b, "vrseg_chunks_reclaimed_total %lld\n", fs->reclaimed);
    pb_head(b, "vrseg_controller_splits_total", "counter", "Jobs split into chunks.");
    pb_printf(b, "vrseg_controller_splits_total %lld\n", fs->splits);
    pb_head(b, "vrseg_controller_split_seconds_total", "counter", "Seconds controllers spent splitting.");
    pb_printf(b, "vrseg_controller_split_seconds_total %.6f\n", fs->split_s);
    pb_head(b, "vrseg_controller_stitches_total", "counter", "Jobs stitched.");
    pb_printf(b, "vrseg_controller_stitches_total %lld\n", fs->stitches);
    pb_head(b, "vrseg_controller_stitch_seconds_total", "counter",
            "Seconds controllers spent finishing stitches (after the last chunk).");
    pb_printf(b, "vrseg_controller_stitch_seconds_total %.6f\n", fs->stitch_s);
    ctl_prom_jobs(b, fs);
    ctl_prom_workers(b, fs);
    pb_head(b, "vrseg_stage_latency_seconds", "histogram",
            "Per-frame latency of each pipeline stage, every committed chunk merged.");
    for (int s = 0; s < MET_NSTAGES; s++)
        ctl_prom_hist(b, metrics_stage_name(s), &fs->stage[s]);
    pb_head(b, "vrseg_redis_rtt_seconds", "gauge", "Round trip of one PING from this controller.");
    pb_printf(b, "vrseg_redis_rtt_seconds %.6f\n", fs->redis_rtt_s);
}

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
    struct pbuf b = { 0 };
    pthread_mutex_lock(&p->mu);
    int rc = metrics ? rq_fleetstats_read(p->q, p->fs, &e) : rq_ping(p->q, &e);
    if (rc == 0 && metrics)
        ctl_prom_text(&b, p->fs);
    pthread_mutex_unlock(&p->mu);

    if (rc < 0) {
        free(b.p);
        return ctl_prom_plain(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "redis unreachable: %s\n", e.msg);
    }
    if (!metrics)
        return ctl_prom_plain(conn, MHD_HTTP_OK, "%s\n", "ok");
    if (b.toobig) {
        free(b.p);
        return ctl_prom_plain(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                              "%s\n", "scrape larger than its bound (4 MiB); see vrctl workers");
    }
    return ctl_prom_send(conn, MHD_HTTP_OK, b.p, b.len, "text/plain; version=0.0.4; charset=utf-8");
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

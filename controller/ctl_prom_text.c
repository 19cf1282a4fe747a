/*
 * ctl_prom_text.c - the fleet's figures (rq_fleetstats.h) in the Prometheus
 * text format, version 0.0.4: names in base units with `_total` on
 * counters, HELP and TYPE for each family, label values escaped, the stage
 * histograms as cumulative buckets. ctl_prom.c serves it. A job is labelled
 * `job_id`, never `job`: Prometheus keeps `job` for the scrape target's
 * name and would store ours as `exported_job`.
 */
#include "ctl.h"

#include "job.h"
#include "rq_fleetstats.h"
#include "version.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_PROM_MAX_BYTES (4 << 20)  /* a scrape larger than this is refused */

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
    char lb[160];
    pb_head(b, "vrseg_jobs", "gauge", "Jobs by state (the newest 10000 of the index).");
    for (int s = 0; s < JOB_NSTATES; s++) {
        long long n = 0;
        for (int k = 0; k < fs->nstates; k++)
            if (!strcmp(fs->jobs[k].state, job_states[s]))
                n = fs->jobs[k].n;
        pb_printf(b, "vrseg_jobs{state=\"%s\"} %lld\n", job_states[s], n);
    }
    pb_head(b, "vrseg_jobs_finished_total", "counter", "Jobs that ended, by how they ended.");
    for (int e = 0; e < 3; e++)
        pb_printf(b, "vrseg_jobs_finished_total{state=\"%s\"} %lld\n", rq_job_end_state(e),
                  fs->jobs_ended[e]);
    pb_head(b, "vrseg_jobs_in_flight", "gauge", "Jobs a controller looks after (vr:active).");
    pb_printf(b, "vrseg_jobs_in_flight %lld\n", fs->active);

    long long ck[RQ_CK_NSTATES] = { 0 };
    for (int j = 0; j < fs->njobs; j++)
        for (int s = 0; s < RQ_CK_NSTATES; s++)
            ck[s] += fs->job[j].chunks[s];
    pb_head(b, "vrseg_chunks", "gauge", "Chunks of the jobs in flight by state.");
    for (int s = 0; s < RQ_CK_NSTATES; s++)
        pb_printf(b, "vrseg_chunks{state=\"%s\"} %lld\n", rq_chunk_state_name(s), ck[s]);

    pb_head(b, "vrseg_chunks_uncounted", "gauge",
            "Chunks of the jobs in flight not read for this scrape (past its bound of 20000).");
    pb_printf(b, "vrseg_chunks_uncounted %lld\n", fs->chunks_uncounted);

    pb_head(b, "vrseg_job_frames", "gauge", "Frames of each job in flight.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_frames{job_id=\"%s\"} %lld\n", pb_label(fs->job[j].id, lb, sizeof lb),
                  fs->job[j].frames_total);
    pb_head(b, "vrseg_job_frames_done", "gauge", "Frames committed of each job in flight.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_frames_done{job_id=\"%s\"} %lld\n",
                  pb_label(fs->job[j].id, lb, sizeof lb), fs->job[j].frames_done);
    pb_head(b, "vrseg_job_fps", "gauge", "Frames done per second since each job in flight started.");
    for (int j = 0; j < fs->njobs; j++)
        pb_printf(b, "vrseg_job_fps{job_id=\"%s\"} %.3f\n", pb_label(fs->job[j].id, lb, sizeof lb),
                  fs->job[j].fps);
    pb_head(b, "vrseg_job_chunks", "gauge", "Chunks of each job in flight by state.");
    for (int j = 0; j < fs->njobs; j++)
        for (int s = 0; s < RQ_CK_NSTATES; s++)
            pb_printf(b, "vrseg_job_chunks{job_id=\"%s\",state=\"%s\"} %lld\n",
                      pb_label(fs->job[j].id, lb, sizeof lb), rq_chunk_state_name(s),
                      fs->job[j].chunks[s]);
}

static void ctl_prom_workers(struct pbuf *b, const struct rq_fleetstats *fs)
{
    char lb[400];
    double fleet = 0;
    for (int i = 0; i < fs->nworkers; i++)
        if (!strcmp(fs->workers[i].state, "busy"))
            fleet += fs->workers[i].fps;
    pb_head(b, "vrseg_workers", "gauge", "Live workers by state.");
    for (int s = 0; s < RQ_WORKER_NSTATES; s++) {
        int n = 0;
        for (int i = 0; i < fs->nworkers; i++)
            n += !strcmp(fs->workers[i].state, rq_worker_states[s]);
        pb_printf(b, "vrseg_workers{state=\"%s\"} %d\n", rq_worker_states[s], n);
    }
    pb_head(b, "vrseg_worker_last_seen_timestamp_seconds", "gauge",
            "Unix time of the last heartbeat of any worker (0: none yet).");
    pb_printf(b, "vrseg_worker_last_seen_timestamp_seconds %.3f\n", fs->worker_seen_ms / 1000.0);
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

static void ctl_prom_all(struct pbuf *b, const struct rq_fleetstats *fs)
{
    char lb[160];
    pb_head(b, "vrseg_build_info", "gauge", "1, labelled with the serving controller's version.");
    pb_printf(b, "vrseg_build_info{version=\"%s\"} 1\n", pb_label(vr_version(), lb, sizeof lb));
    pb_head(b, "vrseg_frames_processed_total", "counter", "Frames of committed chunks, fleet-wide.");
    pb_printf(b, "vrseg_frames_processed_total %lld\n", fs->frames);
    pb_head(b, "vrseg_chunks_committed_total", "counter", "Chunks committed, fleet-wide.");
    pb_printf(b, "vrseg_chunks_committed_total %lld\n", fs->chunks);
    pb_head(b, "vrseg_chunks_reclaimed_total", "counter",
            "Chunks whose worker stopped renewing its lease (requeued or dead-lettered).");
    pb_printf(b, "vrseg_chunks_reclaimed_total %lld\n", fs->reclaimed);
    pb_head(b, "vrseg_reports_refused_total", "counter",
            "Worker reports refused as malformed or not proving their claim (a bug, or a "
            "misused worker credential).");
    pb_printf(b, "vrseg_reports_refused_total %lld\n", fs->reports_refused);
    pb_head(b, "vrseg_webhooks_dropped_total", "counter",
            "Webhook POSTs not queued because their receiver's sender had a full queue (a "
            "slow or stuck receiver); each is tried again at its delivery's next round.");
    pb_printf(b, "vrseg_webhooks_dropped_total %lld\n", fs->webhooks_dropped);
    pb_head(b, "vrseg_dead_letters", "gauge",
            "Chunks dead-lettered (entries in vr:dead: failed for good, or out of attempts).");
    pb_printf(b, "vrseg_dead_letters %lld\n", fs->dead_letters);
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

int ctl_prom_text(const struct rq_fleetstats *fs, char **out, size_t *len)
{
    struct pbuf b = { 0 };
    ctl_prom_all(&b, fs);
    if (b.toobig || !b.p) {
        free(b.p);
        *out = NULL;
        *len = 0;
        return VR_ENOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

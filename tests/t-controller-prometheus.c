/*
 * t-controller-prometheus.c - `vr-controller --metrics-listen`: a real CPU job
 * through a controller, a worker and redis-server, scraped with libcurl
 * while it runs and after (the frames counter is the job's frames, the
 * stage histograms are cumulative and agree with the job's merged
 * metrics), /healthz 200 with Redis and 503 once it is killed; then Debian's
 * real `prometheus` scraping the controller during a job, queried through
 * its HTTP API (the job's series stored with job_id, the target's job kept),
 * and `promtool check metrics` on a scrape.
 */
#include "rq_fleet.h"
#include "util-http.h"
#include "util-redis.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static pid_t prom_pid;

static void teardown(void)
{
    if (prom_pid > 0) {
        kill(prom_pid, SIGTERM);
        tproc_wait(prom_pid, 10000);
        prom_pid = 0;
    }
    tdist_stop(&D, 0);
}

TestSuite(controller_prometheus, .fini = teardown, .timeout = 240);

/* ---- helpers ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long http_get(const char *url, char **out)
{
    return thttp_get(url, out, 20);
}

/* The value of the series written exactly as `series` ("name" or
 * "name{labels}") in a scrape; NAN when absent. */
static double series(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, series, n) && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    return NAN;
}

/* Every vrseg_ metric a query of the shipped Grafana dashboard names is
 * served in the scrape `text` (a renamed metric would leave a panel empty). */
static void dashboard_metrics_served(const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/deploy/grafana/vrseg-dashboard.json", getenv("VR_DATA_DIR"));
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    cr_assert_not_null(d, "%s: %s", path, je.text);
    size_t i, k;
    json_t *p, *tg;
    int names = 0;
    json_array_foreach(json_object_get(d, "panels"), i, p) {
        json_array_foreach(json_object_get(p, "targets"), k, tg) {
            const char *e = json_string_value(json_object_get(tg, "expr"));
            cr_assert_not_null(e, "panel %zu target %zu has no expr", i, k);
            for (const char *m = strstr(e, "vrseg_"); m; m = strstr(m + 1, "vrseg_")) {
                char name[96], line[120];
                size_t n = strspn(m, "abcdefghijklmnopqrstuvwxyz0123456789_");
                snprintf(name, sizeof name, "%.*s", (int)n, m);
                /* a family is served even with no series now (no job in
                 * flight): its TYPE line; histograms by their base name */
                char *suffix = strrchr(name, '_');
                if (suffix && strstr(e, "histogram_quantile") && !strcmp(suffix, "_bucket"))
                    *suffix = '\0';
                snprintf(line, sizeof line, "# TYPE %s ", name);
                cr_assert(strstr(text, line), "the dashboard's '%s' is not served", name);
                names++;
                m += n - 1;
            }
        }
    }
    cr_assert_gt(names, 10);
    json_decref(d);
}

/* Scrapes until `want(text)` holds or `seconds` pass; returns the last
 * scrape (free it) and whether it held in *ok. */
static char *scrape_until(const char *url, int (*want)(const char *, void *), void *arg,
                          double seconds, int *ok)
{
    double end = now_s() + seconds;
    char *t = NULL;
    *ok = 0;
    for (;;) {
        free(t);
        long code = http_get(url, &t);
        if (code == 200 && want(t, arg)) {
            *ok = 1;
            return t;
        }
        if (now_s() > end)
            return t;
        usleep(100000);
    }
}

/* Starts a controller serving metrics on a free port; url = its base. */
static void start_controller(char *base, size_t n)
{
    int port = tfree_port("127.0.0.1");
    char listen[64], lease[16];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(lease, sizeof lease, "%.2f", D.lease_s);
    const char *argv[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                           "--lease-seconds", lease, "--metrics-listen", listen, NULL };
    D.ctl = tproc_spawn("vr-controller", argv, D.log);
    cr_assert_gt(D.ctl, 0);
    snprintf(base, n, "http://%s", listen);
}

static int has_text(const char *t, void *arg)
{
    return strstr(t, (const char *)arg) != NULL;
}

/* The job's series (arg) and a busy worker in one scrape. */
static int in_flight(const char *t, void *arg)
{
    return strstr(t, (const char *)arg) && series(t, "vrseg_workers{state=\"busy\"}") == 1;
}

/* The job's status as JSON (vrctl status ID --json); caller decrefs. */
static json_t *job_status(const char *id)
{
    static char js[1 << 16];
    const char *args[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, args), 0);
    json_error_t je;
    json_t *o = json_loads(js, 0, &je);
    cr_assert_not_null(o, "%s: %s", je.text, js);
    return o;
}

/* Submits a 3 s clip (30 frames, 1 s chunks), input and output under the
 * storage root (a controller's default input and output root). */
static void submit_job(char *id, size_t n)
{
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.storage);
    snprintf(out, sizeof out, "%s/out.mp4", D.storage);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, n), 0);
    cr_assert_gt(strlen(id), 10, "submit printed '%s'", id);
}

/* ---- the controller's endpoint ---- */

Test(controller_prometheus, scrapes_during_and_after_a_cpu_job_and_healthz_follows_redis)
{
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 1), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char base[96], murl[128], hurl[128], id[64], want[160];
    start_controller(base, sizeof base);
    snprintf(murl, sizeof murl, "%s/metrics", base);
    snprintf(hurl, sizeof hurl, "%s/healthz", base);
    int ok;
    char *t = scrape_until(murl, has_text, "vrseg_frames_processed_total 0\n", 60, &ok);
    cr_assert(ok, "no first scrape: %s", t);
    cr_assert(strstr(t, "# TYPE vrseg_stage_latency_seconds histogram\n"));
    free(t);

    /* During: the job in flight, with its own series, and a busy worker
     * (each frame takes 100 ms or more: seconds of chunks to see). */
    submit_job(id, sizeof id);
    snprintf(want, sizeof want, "vrseg_job_frames{job_id=\"%s\"} ", id);
    t = scrape_until(murl, in_flight, want, 120, &ok);
    cr_assert(ok, "the job was never seen in flight with a busy worker; last scrape:\n%s", t);
    cr_assert_geq(series(t, "vrseg_jobs_in_flight"), 1);
    cr_assert_eq(series(t, "vrseg_workers{state=\"idle\"}"), 0);
    cr_assert(strstr(t, "vrseg_worker_busy{worker=\""), "%s", t);
    cr_assert(strstr(t, "} 1\n"), "%s", t);
    cr_assert_leq(series(t, "vrseg_frames_processed_total"), 30);
    free(t);

    int rc = tdist_watch(&D, id, 180000);
    if (rc != 0)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "watch exit %d", rc);

    /* After: the counter is the job's frames; one split, one stitch. */
    t = scrape_until(murl, has_text, "vrseg_jobs{state=\"done\"} 1\n", 30, &ok);
    cr_assert(ok, "%s", t);
    json_t *st = job_status(id);
    long long frames = json_integer_value(json_object_get(st, "frames"));
    long long chunks = json_integer_value(json_object_get(st, "chunks_total"));
    cr_assert_eq(frames, 30);
    cr_assert_eq(series(t, "vrseg_frames_processed_total"), (double)frames);
    cr_assert_eq(series(t, "vrseg_chunks_committed_total"), (double)chunks);
    cr_assert_eq(series(t, "vrseg_jobs_in_flight"), 0);
    cr_assert_eq(series(t, "vrseg_controller_splits_total"), 1);
    cr_assert_eq(series(t, "vrseg_controller_stitches_total"), 1);
    cr_assert_eq(series(t, "vrseg_chunks_reclaimed_total"), 0);
    cr_assert_eq(series(t, "vrseg_jobs_finished_total{state=\"done\"}"), 1);
    cr_assert_eq(series(t, "vrseg_jobs_finished_total{state=\"failed\"}"), 0);
    cr_assert_eq(series(t, "vrseg_jobs_finished_total{state=\"cancelled\"}"), 0);
    cr_assert(strstr(t, "\nvrseg_build_info{version=\""), "%s", t);
    dashboard_metrics_served(t);
    cr_assert_gt(series(t, "vrseg_redis_rtt_seconds"), 0);
    cr_assert(!strstr(t, "vrseg_job_frames{"), "a job no longer in flight keeps its series");

    /* Histograms: cumulative, +Inf = _count = the job's merged samples. */
    json_t *stages = json_object_get(st, "stages");
    cr_assert(json_is_object(stages));
    const char *name;
    json_t *h;
    int seen = 0;
    json_object_foreach(stages, name, h) {
        char key[160];
        snprintf(key, sizeof key, "vrseg_stage_latency_seconds_count{stage=\"%s\"}", name);
        double count = series(t, key);
        cr_assert_eq(count, (double)json_integer_value(json_object_get(h, "n")), "%s", key);
        double prev = 0;
        const char *les[] = { "0.0001", "0.001", "0.01", "0.1", "1", "10", "100", "+Inf" };
        for (size_t k = 0; k < sizeof les / sizeof les[0]; k++) {
            snprintf(key, sizeof key, "vrseg_stage_latency_seconds_bucket{stage=\"%s\",le=\"%s\"}",
                     name, les[k]);
            double v = series(t, key);
            cr_assert(!isnan(v) && v >= prev, "%s = %g after %g", key, v, prev);
            prev = v;
        }
        cr_assert_eq(prev, count, "stage %s: +Inf bucket %g, count %g", name, prev, count);
        snprintf(key, sizeof key, "vrseg_stage_latency_seconds_sum{stage=\"%s\"}", name);
        cr_assert_gt(series(t, key), 0);
        seen += count > 0;
    }
    cr_assert_geq(seen, 3, "stages with samples: %d", seen);
    free(t);

    /* The counters live in Redis: a restarted controller goes on from them. */
    kill(D.ctl, SIGTERM);
    cr_assert_eq(tproc_wait(D.ctl, 30000), 0);
    start_controller(base, sizeof base);
    snprintf(murl, sizeof murl, "%s/metrics", base);
    snprintf(hurl, sizeof hurl, "%s/healthz", base);
    t = scrape_until(murl, has_text, "vrseg_controller_splits_total 1\n", 60, &ok);
    cr_assert(ok, "%s", t);
    cr_assert_eq(series(t, "vrseg_frames_processed_total"), (double)frames);
    cr_assert_eq(series(t, "vrseg_stage_latency_seconds_count{stage=\"decode\"}"),
                 (double)json_integer_value(json_object_get(json_object_get(stages, "decode"), "n")));
    json_decref(st);
    free(t);

    /* /healthz follows Redis. */
    cr_assert_eq(http_get(hurl, &t), 200);
    cr_assert_str_eq(t, "ok\n");
    free(t);
    tredis_kill(&D.r);
    long code = 0;
    for (double end = now_s() + 30; now_s() < end; usleep(100000)) {
        code = http_get(hurl, &t);
        if (code == 503)
            break;
        free(t);
        t = NULL;
    }
    cr_assert_eq(code, 503);
    cr_assert(strstr(t, "redis unreachable"), "%s", t);
    free(t);
    cr_assert_eq(http_get(murl, &t), 503);
    free(t);
}

/* ---- Prometheus itself ---- */

/* Runs `prometheus` (Debian's) on a free port with a 1 s scrape of target,
 * its data in the test's directory. Returns its base URL in base. */
static void start_prometheus(const char *target, char *base, size_t n)
{
    char cfg[400], tsdb[400], listen[64], log[400];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", D.r.dir);
    snprintf(tsdb, sizeof tsdb, "%s/tsdb", D.r.dir);
    snprintf(log, sizeof log, "%s/prometheus.log", D.r.dir);
    snprintf(listen, sizeof listen, "127.0.0.1:%d", tfree_port("127.0.0.1"));
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fprintf(f, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
               "scrape_configs:\n  - job_name: vrseg\n    static_configs:\n"
               "      - targets: ['%s']\n", target);
    fclose(f);
    char a1[460], a2[460], a3[100];
    snprintf(a1, sizeof a1, "--config.file=%s", cfg);
    snprintf(a2, sizeof a2, "--storage.tsdb.path=%s", tsdb);
    snprintf(a3, sizeof a3, "--web.listen-address=%s", listen);
    prom_pid = fork();
    cr_assert_geq(prom_pid, 0);
    if (prom_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("prometheus", "prometheus", a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    snprintf(base, n, "http://%s", listen);
}

/* The values of an instant query's vector result (at most max), and the
 * labels of its first series as Prometheus stores them (JSON, when labels
 * is not NULL; the caller decrefs). Returns how many, or -1 when
 * Prometheus did not answer with success. */
static int prom_query_labels(const char *base, const char *query, double *vals, int max,
                             json_t **labels)
{
    CURL *c = curl_easy_init();
    char *q = curl_easy_escape(c, query, 0);
    char url[1024], *body = NULL;
    snprintf(url, sizeof url, "%s/api/v1/query?query=%s", base, q);
    curl_free(q);
    curl_easy_cleanup(c);
    int n = -1;
    if (labels)
        *labels = NULL;
    if (http_get(url, &body) == 200) {
        json_t *o = json_loads(body, 0, NULL);
        json_t *res = json_object_get(json_object_get(o, "data"), "result");
        if (o && !strcmp(json_string_value(json_object_get(o, "status")) ?: "", "success") &&
            json_is_array(res)) {
            n = 0;
            size_t i;
            json_t *r;
            json_array_foreach(res, i, r) {
                if (n == max)
                    break;
                if (n == 0 && labels)
                    *labels = json_incref(json_object_get(r, "metric"));
                const char *v = json_string_value(json_array_get(json_object_get(r, "value"), 1));
                vals[n++] = v ? strtod(v, NULL) : NAN;
            }
        }
        json_decref(o);
    }
    free(body);
    return n;
}

static int prom_query(const char *base, const char *query, double *vals, int max)
{
    return prom_query_labels(base, query, vals, max, NULL);
}

/* Queries until one series has the value want, for up to a minute (a
 * sample lands at the next scrape); returns the last answer's count. */
static int prom_wait_for(const char *base, const char *query, double want, double *vals, int max)
{
    double end = now_s() + 60;
    int n;
    while ((n = prom_query(base, query, vals, max)) != 1 || vals[0] != want) {
        if (now_s() >= end)
            break;
        usleep(200000);
    }
    return n;
}

Test(controller_prometheus, prometheus_scrapes_the_controller_and_promtool_checks_a_scrape)
{
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1); /* the job lasts seconds: several scrapes */
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 1), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char base[96], murl[128], pbase[96], id[64];
    start_controller(base, sizeof base);
    snprintf(murl, sizeof murl, "%s/metrics", base);
    int ok;
    char *t = scrape_until(murl, has_text, "vrseg_frames_processed_total", 60, &ok);
    cr_assert(ok, "no first scrape");
    free(t);
    start_prometheus(base + strlen("http://"), pbase, sizeof pbase);

    /* Prometheus sees the target up before the job, and scrapes during it. */
    double v[16];
    double end = now_s() + 120;
    while (!(prom_query(pbase, "up{job=\"vrseg\"}", v, 16) == 1 && v[0] == 1) && now_s() < end)
        usleep(200000);
    if (now_s() >= end)
        tsh("tail -20 '%s/prometheus.log' >&2", D.r.dir);
    cr_assert(now_s() < end, "prometheus never scraped the controller");

    submit_job(id, sizeof id);
    cr_assert_eq(tdist_watch(&D, id, 180000), 0);
    json_t *st = job_status(id);
    long long frames = json_integer_value(json_object_get(st, "frames"));
    json_decref(st);
    cr_assert_eq(frames, 30);

    /* Its API: the frames counter equals the job's frames... */
    int n = prom_wait_for(pbase, "vrseg_frames_processed_total", (double)frames, v, 16);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0], (double)frames, "prometheus has %g frames, the job %lld", v[0], frames);
    /* ...and a stage histogram has samples in its buckets. */
    n = prom_query(pbase, "vrseg_stage_latency_seconds_bucket{stage=\"decode\",le=\"+Inf\"} > 0", v, 16);
    cr_assert_eq(n, 1, "no decode histogram with samples");
    cr_assert_geq(v[0], (double)frames);
    n = prom_query(pbase, "count(vrseg_stage_latency_seconds_bucket > 0)", v, 16);
    cr_assert_eq(n, 1);
    cr_assert_gt(v[0], 3);
    /* It scraped while the job was in flight. */
    n = prom_query(pbase, "max_over_time(vrseg_jobs_in_flight[10m])", v, 16);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0], 1, "prometheus never saw the job in flight");
    /* The job's series as stored: job_id is the job, job the scrape target
     * (a `job` label of ours would have been renamed exported_job). */
    json_t *lb = NULL;
    n = prom_query_labels(pbase, "last_over_time(vrseg_job_frames[10m])", v, 16, &lb);
    cr_assert_eq(n, 1, "no vrseg_job_frames series stored");
    char *lbs = json_dumps(lb, JSON_SORT_KEYS);
    cr_assert_str_eq(json_string_value(json_object_get(lb, "job_id")) ?: "", id, "%s", lbs);
    cr_assert_str_eq(json_string_value(json_object_get(lb, "job")) ?: "", "vrseg", "%s", lbs);
    cr_assert_null(json_object_get(lb, "exported_job"), "%s", lbs);
    cr_assert_eq(v[0], (double)frames);
    free(lbs);
    json_decref(lb);
    /* The job is counted when it ends, after its last chunk's frames: a
     * scrape between the two has the frames and not yet the job. */
    n = prom_wait_for(pbase, "vrseg_jobs_finished_total{state=\"done\"}", 1, v, 16);
    cr_assert(n == 1 && v[0] == 1, "jobs finished (done): %d series, %g", n, n > 0 ? v[0] : NAN);
    n = prom_query(pbase, "vrseg_build_info", v, 16);
    cr_assert(n == 1 && v[0] == 1);

    /* promtool's linter has nothing to say about a scrape. */
    char path[400], out[4096] = "";
    snprintf(path, sizeof path, "%s/scrape.txt", D.r.dir);
    cr_assert_eq(http_get(murl, &t), 200);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(t, f);
    fclose(f);
    free(t);
    int rc = tsh_out(out, sizeof out, "promtool check metrics < '%s' 2>&1", path);
    cr_assert_eq(rc, 0, "promtool check metrics: %s", out);
    cr_assert_str_eq(out, "", "promtool check metrics: %s", out);
}

/* Every state a worker's heartbeat may say is counted in vrseg_workers
 * (a straggler stepping aside from the tails says "aside", issue 44): the
 * heartbeats are written to the real Redis as workers write them, and the
 * controller's scrape counts each state, the counts summing to the fleet. */
Test(controller_prometheus, every_worker_state_is_counted_aside_too)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char base[96], murl[128];
    start_controller(base, sizeof base);
    snprintf(murl, sizeof murl, "%s/metrics", base);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    static const struct { const char *state; int n; } fleet[] = {
        { "aside", 2 }, { "quarantined", 1 }, { "paused", 1 }, { "idle", 1 }, { "warming", 1 },
    };
    int total = 0;
    for (size_t i = 0; i < sizeof fleet / sizeof fleet[0]; i++)
        for (int k = 0; k < fleet[i].n; k++, total++) {
            struct rq_worker_info w = { .hb_ms = 1000, .gpu_util = -1 };
            snprintf(w.name, sizeof w.name, "host:cpu:%s%d", fleet[i].state, k);
            snprintf(w.gpu, sizeof w.gpu, "cpu");
            snprintf(w.state, sizeof w.state, "%s", fleet[i].state);
            snprintf(w.chunk, sizeof w.chunk, "-");
            cr_assert_eq(rq_worker_heartbeat(q, &w, 60, &e), 0, "%s", e.msg);
        }
    rq_free(&q);
    int ok;
    char *t = scrape_until(murl, has_text, "vrseg_workers{state=\"aside\"} 2\n", 30, &ok);
    cr_assert(ok, "the workers stepping aside are not counted (vrseg_workers{state=\"aside\"} "
                  "%g)", series(t, "vrseg_workers{state=\"aside\"}"));
    double sum = 0;
    for (size_t i = 0; i < sizeof fleet / sizeof fleet[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "vrseg_workers{state=\"%s\"}", fleet[i].state);
        cr_assert_eq(series(t, name), fleet[i].n, "%s %g", name, series(t, name));
    }
    for (const char *l = t; (l = strstr(l, "\nvrseg_workers{state=\"")); l++)
        sum += strtod(strchr(l, '}') + 1, NULL);
    cr_assert_eq(sum, total, "vrseg_workers sums to %g of %d workers", sum, total);
    free(t);
}

/* ---- refusals and a Redis that is not there yet ---- */

Test(controller_prometheus, bad_address_is_refused_and_healthz_is_503_while_redis_is_down)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char url[400], storage[400], listen[64], hurl[128], log[400], out[512] = "";
    snprintf(url, sizeof url, "unix://%s/nobody-here.sock", D.r.dir);
    snprintf(storage, sizeof storage, "%s", D.r.dir);
    snprintf(log, sizeof log, "%s/ctl.log", D.r.dir);
    /* said at once, without waiting for Redis */
    int rc = tsh_out(out, sizeof out, "timeout 60 '%s/vr-controller' run --redis '%s' --storage '%s' "
                     "--metrics-listen 127.0.0.1: 2>&1", getenv("VR_BIN_DIR"), url, storage);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--metrics-listen 127.0.0.1:: want [ADDR:]PORT"), "%s", out);

    /* Served before the controller reaches Redis: 503 until it does. */
    snprintf(listen, sizeof listen, "127.0.0.1:%d", tfree_port("127.0.0.1"));
    snprintf(hurl, sizeof hurl, "http://%s/healthz", listen);
    const char *argv[] = { "vr-controller", "run", "--redis", url, "--storage", storage,
                           "--metrics-listen", listen, NULL };
    D.ctl = tproc_spawn("vr-controller", argv, log);
    cr_assert_gt(D.ctl, 0);
    char *t = NULL;
    long code = 0;
    for (double end = now_s() + 60; now_s() < end && code != 503; usleep(100000)) {
        free(t);
        code = http_get(hurl, &t);
    }
    cr_assert_eq(code, 503, "%ld %s", code, t);
    cr_assert(strstr(t, "redis unreachable"), "%s", t);
    free(t);
}

/*
 * t-controller-metrics-endpoint.c - the controller's /metrics and /healthz
 * under abuse (issue 27, finding 8): it listens on 127.0.0.1 unless an
 * address is named; slow clients trickling header lines neither keep
 * /healthz out nor hold a connection past its deadline; and a scrape's
 * Redis cost stays bounded, and shared between scrapes, whatever
 * chunks_total the records claim.
 */
#include "util-http.h"
#include "util-redis.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(controller_metrics_endpoint, .fini = teardown, .timeout = 240);

/* ---- helpers ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Starts a controller serving metrics at `listen`; waits for /healthz 200
 * on 127.0.0.1:port. */
static void start_controller(const char *listen, int port)
{
    const char *argv[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                           "--metrics-listen", listen, NULL };
    D.ctl = tproc_spawn("vr-controller", argv, D.log);
    cr_assert_gt(D.ctl, 0);
    char url[96], *t = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
    long code = 0;
    for (double end = now_s() + 60; code != 200 && now_s() < end; usleep(100000)) {
        free(t);
        code = thttp_get(url, &t, 10);
    }
    if (code != 200)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_eq(code, 200, "/healthz never answered 200: %ld %s", code, t);
    free(t);
}

/* The local address (hex, as /proc/net/tcp writes it) of the IPv4 socket
 * listening on port; "" when none. */
static void listening_on(int port, char *addr, size_t n)
{
    char out[256] = "";
    tsh_out(out, sizeof out, "awk '$4 == \"0A\" { split($2, a, \":\"); "
            "if (a[2] == sprintf(\"%%04X\", %d)) print a[1] }' /proc/net/tcp", port);
    out[strcspn(out, "\n")] = '\0';
    snprintf(addr, n, "%s", out);
}

/* The number after `field:calls=` in INFO commandstats (0 when absent). */
static long long redis_calls(const char *cmd)
{
    char out[512] = "";
    tsh_out(out, sizeof out, "redis-cli -s '%s' INFO commandstats | "
            "sed -n 's/^cmdstat_%s:calls=\\([0-9]*\\),.*/\\1/p'", D.r.sock, cmd);
    return atoll(out);
}

/* ---- where it listens ---- */

Test(controller_metrics_endpoint, a_port_alone_listens_on_loopback_only)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char listen[32], addr[32];
    int port;
    /* "PORT" and ":PORT": 127.0.0.1; every interface only when named */
    for (int colon = 0; colon < 2; colon++) {
        port = tfree_port("127.0.0.1");
        snprintf(listen, sizeof listen, "%s%d", colon ? ":" : "", port);
        start_controller(listen, port);
        listening_on(port, addr, sizeof addr);
        cr_assert_str_eq(addr, "0100007F", "--metrics-listen %s: bound to %s, not 127.0.0.1",
                         listen, addr);
        kill(D.ctl, SIGTERM);
        cr_assert_eq(tproc_wait(D.ctl, 30000), 0);
    }
    port = tfree_port("127.0.0.1");
    snprintf(listen, sizeof listen, "0.0.0.0:%d", port);
    start_controller(listen, port);
    listening_on(port, addr, sizeof addr);
    cr_assert_str_eq(addr, "00000000", "--metrics-listen 0.0.0.0:%d: bound to %s", port, addr);
    char log[8192] = "";
    tsh_out(log, sizeof log, "cat '%s'", D.log);
    cr_assert(strstr(log, "beyond this host and without authentication"), "%s", log);
}

/* ---- slow clients ---- */

/* 40 connections (more than the server's 32 slots) each sending a header
 * line every second, never the blank line that ends the head: /healthz
 * answers throughout, and every one of them is closed by the server within
 * its head deadline (5 s) although it never went quiet. */
Test(controller_metrics_endpoint, slow_clients_neither_hold_connections_nor_keep_healthz_out)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    int port = tfree_port("127.0.0.1");
    char listen[32], hurl[96];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(hurl, sizeof hurl, "http://%s/healthz", listen);
    start_controller(listen, port);

    enum { NSLOW = 40 };
    int fd[NSLOW];
    double opened[NSLOW], closed[NSLOW];
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < NSLOW; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        cr_assert_geq(fd[i], 0);
        cr_assert_eq(connect(fd[i], (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
        const char *line = "GET /metrics HTTP/1.1\r\n";
        cr_assert_eq(send(fd[i], line, strlen(line), MSG_NOSIGNAL), (ssize_t)strlen(line));
        opened[i] = now_s();
        closed[i] = 0;
    }
    int probes = 0, answered = 0;
    double worst = 0, next_line = now_s() + 1, end = now_s() + 14;
    while (now_s() < end) {
        if (now_s() >= next_line) { /* a header line each, on every open one */
            for (int i = 0; i < NSLOW; i++)
                if (!closed[i] && send(fd[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0)
                    closed[i] = now_s();
            next_line += 1;
        }
        for (int i = 0; i < NSLOW; i++) {
            char b[256];
            ssize_t n = closed[i] ? 1 : recv(fd[i], b, sizeof b, MSG_DONTWAIT);
            if (!closed[i] && (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)))
                closed[i] = now_s();
        }
        char *t = NULL;
        double t0 = now_s();
        long code = thttp_get(hurl, &t, 10);
        double took = now_s() - t0;
        probes++;
        answered += code == 200;
        cr_assert_eq(code, 200, "/healthz probe %d while slow clients hold on: %ld '%s' after "
                     "%.1f s", probes, code, t, took);
        worst = took > worst ? took : worst;
        free(t);
        usleep(250000);
    }
    cr_assert_geq(probes, 5);
    cr_assert_eq(answered, probes);
    cr_assert_lt(worst, 5, "a /healthz probe took %.1f s", worst);
    for (int i = 0; i < NSLOW; i++) {
        cr_assert_gt(closed[i], 0, "slow client %d still connected after %.0f s", i,
                     now_s() - opened[i]);
        cr_assert_lt(closed[i] - opened[i], 9, "slow client %d held for %.1f s", i,
                     closed[i] - opened[i]);
        close(fd[i]);
    }
}

/* ---- a scrape's cost ---- */

/* 20 jobs in flight whose records claim 100000 chunks each (what a hostile
 * writer of job records could set): one read of the figures looks at no
 * more than its budget of chunk records, says how many it left out, and
 * a burst of scrapes shares snapshots (at most one read a second). */
Test(controller_metrics_endpoint, scrape_cost_is_bounded_whatever_chunks_total_says)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    for (int j = 0; j < 20; j++) {
        char id[48], key[80];
        snprintf(id, sizeof id, "20260101-000000-hostile%02d", j);
        snprintf(key, sizeof key, "vr:job:%s", id);
        /* a state the controller's audit leaves alone: only the scrape reads them */
        cr_assert_eq(tsh("redis-cli -s '%s' HSET '%s' state paused chunks_total 100000 "
                         "frames_total 1 created_ms 1 >/dev/null && "
                         "redis-cli -s '%s' SADD vr:active '%s' >/dev/null",
                         D.r.sock, key, D.r.sock, id), 0);
    }
    int port = tfree_port("127.0.0.1");
    char listen[32], murl[96];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(murl, sizeof murl, "http://%s/metrics", listen);
    start_controller(listen, port);

    cr_assert_eq(tsh("redis-cli -s '%s' CONFIG RESETSTAT >/dev/null", D.r.sock), 0);
    double t0 = now_s();
    char *t = NULL;
    for (int i = 0; i < 10; i++) {
        free(t);
        long code = thttp_get(murl, &t, 60);
        cr_assert_eq(code, 200, "scrape %d: %ld %s", i, code, t);
    }
    double took = now_s() - t0;
    cr_assert(strstr(t, "vrseg_jobs_in_flight 20\n"), "%s", t);
    cr_assert(strstr(t, "vrseg_chunks_uncounted 1980000\n"), "%s", t);
    free(t);
    /* each read: at most 20000 chunk records (one HGET each from the
     * script); reads: one per second of the burst, plus the edges */
    long long hgets = redis_calls("hget");
    long long reads = (long long)floor(took) + 2;
    cr_assert_leq(hgets, reads * 20100, "%lld HGETs for 10 scrapes in %.1f s", hgets, took);
    cr_assert_gt(hgets, 0);
}

/* ---- jobs finished ---- */

/* A cancelled job counts once under state="cancelled" (the script that
 * ends it counts it), a second cancel of it not again. */
Test(controller_metrics_endpoint, a_cancelled_job_is_counted_once_by_its_state)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    int port = tfree_port("127.0.0.1");
    char listen[32], murl[96], in[400], out[400], id[64], buf[1024];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(murl, sizeof murl, "http://%s/metrics", listen);
    start_controller(listen, port);
    snprintf(in, sizeof in, "%s/in.mp4", D.storage);
    snprintf(out, sizeof out, "%s/out.mp4", D.storage);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    const char *cancel[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cancel), 0, "%s", buf);
    tdist_vrctl(&D, buf, sizeof buf, cancel); /* already ended: not counted again */
    char *t = NULL;
    const char *want = "vrseg_jobs_finished_total{state=\"cancelled\"} 1\n";
    for (double end = now_s() + 30; now_s() < end; usleep(300000)) {
        free(t);
        cr_assert_eq(thttp_get(murl, &t, 20), 200);
        if (strstr(t, want))
            break;
    }
    cr_assert(strstr(t, want), "%s", t);
    cr_assert(strstr(t, "vrseg_jobs_finished_total{state=\"done\"} 0\n"), "%s", t);
    cr_assert(strstr(t, "vrseg_jobs_finished_total{state=\"failed\"} 0\n"), "%s", t);
    free(t);
}

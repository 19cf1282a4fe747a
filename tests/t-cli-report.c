/*
 * t-cli-report.c - `vrctl report` on a real CPU job (issue 10): a worker is
 * killed mid-chunk so the job has a retried chunk and a requeue event; the
 * page must hold every section, fetch nothing, and open in Debian's headless
 * Chromium with no console message, its script run; the screenshot it takes
 * is kept as build/report-screenshot.png (the README's picture).
 */
#include "chart_ticks.h"
#include "rq.h"
#include "rq_events.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tdist_stop(&D, 0);
}

TestSuite(cli_report, .fini = teardown, .timeout = 180);

/* Waits until chunk idx of job id is running. */
static void wait_running(struct rq *q, const char *id, int idx)
{
    char ck[128], v[32] = "";
    rq_key_chunk(ck, sizeof ck, id, idx);
    for (int t = 0; t < 60000; t += 20) {
        rq_hget(q, ck, "state", v, sizeof v, NULL);
        if (!strcmp(v, "running"))
            return;
        tmsleep(20);
    }
    cr_assert_fail("chunk %d never ran (%s)", idx, v);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s not written", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* `vrctl report ID -o <dir>/report.html` (its path into path, n bytes),
 * which must succeed; the page's text. */
static const char *report_page(const char *id, char *path, size_t n)
{
    char msg[512];
    snprintf(path, n, "%s/report.html", D.r.dir);
    const char *args[] = { "report", id, "-o", path, NULL };
    cr_assert_eq(tdist_vrctl(&D, msg, sizeof msg, args), 0, "%s", msg);
    return slurp(path);
}

/* A job of 4 slow chunks whose first worker is killed in chunk 0: a
 * second worker finishes it after the lease. */
static void job_with_a_retry(char *id, size_t n)
{
    setenv("VR_TEST_FRAME_DELAY_MS", "40", 1);
    cr_assert_eq(tdist_start(&D, 0, 2.0, 1, 1), 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, n), 0);
    wait_running(q, id, 0);
    kill(D.w[0], SIGKILL);
    waitpid(D.w[0], NULL, 0);
    D.w[0] = 0;
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tdist_worker(&D);
    tdist_worker(&D);
    rq_free(&q);
    if (tdist_watch(&D, id, 120000) != 0)
        tsh("tail -30 '%s' >&2", D.log);
}

/* The worker killed in chunk 0 never committed: no chunk record names it
 * (the chunk's worker is the one that finished it), only the requeue
 * event. It has its row in the timeline, with its lost attempt marked. */
static void report_killed_worker_has_a_row(const char *id, const char *html)
{
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    static struct rq_event_entry ev[200];
    int n = rq_events_read(q, id, "0", ev, 200, &e);
    rq_free(&q);
    const char *killed = NULL;
    for (int i = 0; i < n; i++)
        if (strstr(ev[i].msg, "stopped renewing") && ev[i].worker[0])
            killed = ev[i].worker;
    cr_assert_not_null(killed, "no requeue event names the killed worker");
    char row[200];
    snprintf(row, sizeof row, "\">%s</text>", killed);
    const char *at = strstr(html, row);
    cr_assert_not_null(at, "the killed worker %s has no row in the timeline", killed);
    const char *open = at;
    while (open > html && strncmp(open, "<text", 5))
        open--;
    cr_assert(!strncmp(open, "<text class=\"row\"", 17), "%s is not a row's name: %.200s", killed,
              open);
    cr_assert(strstr(at, "class=\"lost\""), "its lost attempt is not marked");
}

/* The throughput chart's gridline labels ("6 fps", "4 fps", ...) step
 * evenly by 1, 2 or 5 times a power of ten down to 0, none twice (they
 * were max*k/4 rounded: "5, 4, 3, 1, 0"). */
static void report_gridlines_in_even_steps(const char *html)
{
    double v[16];
    int n = 0;
    for (const char *p = html; n < 16 && (p = strstr(p, "<text class=\"ax\"")); p++) {
        const char *gt = strchr(p, '>');
        double x;
        int used = 0;
        if (gt && sscanf(gt + 1, "%lf fps</text>%n", &x, &used) == 1 && used > 0)
            v[n++] = x;
    }
    cr_assert_geq(n, 3, "fewer than 3 gridline labels");
    cr_assert_eq(v[n - 1], 0, "the axis does not end at 0");
    double step = v[0] - v[1];
    for (int i = 1; i < n; i++)
        cr_assert_float_eq(v[i - 1] - v[i], step, 1e-9, "uneven: %g then %g", v[i - 1], v[i]);
    double mant = step / pow(10, floor(log10(step)));
    cr_assert(fabs(mant - 1) < 1e-9 || fabs(mant - 2) < 1e-9 || fabs(mant - 5) < 1e-9,
              "step %g is not 1, 2 or 5 times a power of ten", step);
}

/* #rgb or #rrggbb at p into WCAG relative luminance; -1 when not one. */
static double css_luminance(const char *p)
{
    unsigned v[3];
    int used = 0;
    if (sscanf(p, "#%2x%2x%2x%n", &v[0], &v[1], &v[2], &used) == 3 && used == 7)
        ;
    else if (sscanf(p, "#%1x%1x%1x%n", &v[0], &v[1], &v[2], &used) == 3 && used == 4)
        for (int i = 0; i < 3; i++)
            v[i] *= 17;
    else
        return -1;
    static const double w[3] = { 0.2126, 0.7152, 0.0722 };
    double l = 0;
    for (int i = 0; i < 3; i++) {
        double c = v[i] / 255.0;
        l += w[i] * (c <= 0.03928 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
    }
    return l;
}

/* The colour `prop` ("background:" or "color:") that CSS rule `sel{...}`
 * sets in html, or NULL. */
static const char *css_colour(const char *html, const char *sel, const char *prop)
{
    const char *r = strstr(html, sel);
    if (!r)
        return NULL;
    const char *end = strchr(r, '}');
    for (const char *p = strstr(r, prop); p && p < end; p = strstr(p + 1, prop))
        if (p[-1] == '{' || p[-1] == ';')
            return p + strlen(prop);
    return NULL;
}

/* Every legend key's text stands out from its box (WCAG contrast >= 3:
 * "unfinished" was white on #eee). */
static void report_legend_readable(const char *html)
{
    const double fg_default = css_luminance(css_colour(html, ".k{", "color:"));
    const char *legend = strstr(html, "<p class=\"legend\"><span class=\"k ");
    cr_assert_not_null(legend, "the chunk chart has no legend");
    const char *legend_end = strstr(legend, "</p>");
    int keys = 0;
    for (const char *p = legend; (p = strstr(p, "<span class=\"k ")) && p < legend_end;
         p++, keys++) {
        char name[32], sel[48];
        cr_assert_eq(sscanf(p + strlen("<span class=\"k "), "%31[a-z]", name), 1);
        snprintf(sel, sizeof sel, "span.k.%s{", name);
        const char *bg = css_colour(html, sel, "background:");
        const char *fg = css_colour(html, sel, "color:");
        cr_assert_not_null(bg, "legend key %s has no background", name);
        double lb = css_luminance(bg), lf = fg ? css_luminance(fg) : fg_default;
        cr_assert(lb >= 0 && lf >= 0, "legend key %s: colours not read", name);
        double ratio = ((lb > lf ? lb : lf) + 0.05) / ((lb > lf ? lf : lb) + 0.05);
        cr_assert_geq(ratio, 3.0, "legend key '%s': contrast %.2f", name, ratio);
    }
    cr_assert_geq(keys, 5, "the legend has %d keys", keys);
}

/* 1-2-5 steps, whole labels where the step is whole, an empty chart 0..1. */
Test(cli_report, chart_ticks_one_two_five)
{
    static const struct { double top; int most; double step, end; int steps, dec; } c[] = {
        { 5.4, 5, 2, 6, 3, 0 },     { 5, 5, 1, 5, 5, 0 },      { 0, 5, 0.2, 1, 5, 1 },
        { 0.37, 5, 0.1, 0.4, 4, 1 }, { 123, 5, 50, 150, 3, 0 }, { 1e-3, 4, 0.0005, 1e-3, 2, 4 },
        { 47, 4, 20, 60, 3, 0 },    { -3, 5, 0.2, 1, 5, 1 },   { 9.99, 5, 2, 10, 5, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct chart_axis ax;
        int steps = chart_ticks(c[i].top, c[i].most, &ax);
        cr_expect_eq(steps, c[i].steps, "top %g: %d steps", c[i].top, steps);
        cr_expect_float_eq(ax.step, c[i].step, 1e-12, "top %g: step %g", c[i].top, ax.step);
        cr_expect_float_eq(ax.end, c[i].end, 1e-12, "top %g: end %g", c[i].top, ax.end);
        cr_expect_eq(ax.decimals, c[i].dec, "top %g: %d decimals", c[i].top, ax.decimals);
        cr_expect_leq(steps, c[i].most);
    }
}

Test(cli_report, a_real_job_as_one_page_that_opens_clean)
{
    char id[64], path[400];
    job_with_a_retry(id, sizeof id);
    const char *html = report_page(id, path, sizeof path);
    static const char *const want[] = {
        "Throughput over time", "Chunks per worker", "<polyline", "chunk 0: done",
        "1 failed tries before", "class=\"done retried\"", "requeued", "inference",
        "Workers and GPUs", "st-done", NULL,
    };
    for (int i = 0; want[i]; i++)
        cr_assert(strstr(html, want[i]), "the report lacks '%s'", want[i]);
    cr_assert_null(strstr(html, "http:"), "the report fetches something");
    cr_assert_null(strstr(html, "https:"), "the report fetches something");
    const char *src = strstr(html, " src=");
    cr_assert(!src || !strncmp(src, " src=\"data:image/png;base64,", 28),
              "the report loads a file");
    cr_assert(!src || !strstr(src + 1, " src="), "the report loads a file");
    report_killed_worker_has_a_row(id, html);
    report_gridlines_in_even_steps(html);

    if (access("/usr/bin/chromium", X_OK) != 0)
        cr_skip_test("Debian's chromium is not installed (deploy/install-deps.sh installs it)");
    char shot[400], dom[400], log[400];
    snprintf(shot, sizeof shot, "%s/shot.png", D.r.dir);
    snprintf(dom, sizeof dom, "%s/dom.html", D.r.dir);
    snprintf(log, sizeof log, "%s/chromium.log", D.r.dir);
    static const char flags[] = "--headless --no-sandbox --disable-gpu --hide-scrollbars "
                                "--enable-logging=stderr --v=0";
    cr_assert_eq(tsh("timeout 90 chromium %s --dump-dom 'file://%s' > '%s' 2> '%s'", flags, path,
                     dom, log), 0);
    cr_assert_neq(tsh("grep -q 'CONSOLE' '%s'", log), 0, "console messages:\n%s", slurp(log));
    cr_assert_eq(tsh("grep -q 'data-ready=\"1\"' '%s'", dom), 0, "the page's script did not run");
    cr_assert_eq(tsh("timeout 90 chromium %s --window-size=1000,1500 --screenshot='%s' 'file://%s'"
                     " 2> '%s'", flags, shot, path, log), 0);
    cr_assert_neq(tsh("grep -q 'CONSOLE' '%s'", log), 0, "console messages:\n%s", slurp(log));
    cr_assert_eq(tsh("test -s '%s' && mkdir -p build && cp '%s' build/report-screenshot.png",
                     shot, shot), 0);
}

Test(cli_report, needs_a_job_and_a_file)
{
    cr_assert_eq(tdist_start(&D, 0, 5.0, 0, 0), 0);
    char out[512];
    const char *no_file[] = { "report", "20990101-000000-00000000", NULL };
    cr_assert_eq(tdist_vrctl(&D, out, sizeof out, no_file), 2);
    const char *no_job[] = { "report", "20990101-000000-00000000", "-o", "/tmp/x.html", NULL };
    cr_assert_eq(tdist_vrctl(&D, out, sizeof out, no_job), 2);
    cr_assert_eq(access("/tmp/x.html", F_OK), -1, "a report of nothing was written");
}

/* Job and chunk states are text from Redis like any other (issue 27,
 * finding 5): states a worker's user wrote into the records come out
 * escaped, and a class name is only ever a known state. */
Test(cli_report, states_from_redis_are_escaped)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 1), 0);
    char in[400], out[400], id[64], path[400], jk[128], ck[128];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    cr_assert_eq(tdist_watch(&D, id, 60000), 0);
    rq_key_job(jk, sizeof jk, id);
    rq_key_chunk(ck, sizeof ck, id, 0);
    const char *js[] = { "HSET", jk, "state", "done\"><script>alert(1)</script>", NULL };
    const char *cs[] = { "HSET", ck, "state", "<img src=x onerror=alert(2)>", "error", "e", NULL };
    cr_assert_eq(tredis_cmd(&D.r, js), 0);
    cr_assert_eq(tredis_cmd(&D.r, cs), 0);
    const char *html = report_page(id, path, sizeof path);
    cr_assert_null(strstr(html, "<script>alert"), "the job's state reached the page as markup");
    cr_assert_null(strstr(html, "<img src=x"), "a chunk's state reached the page as markup");
    cr_assert(strstr(html, "&lt;img src=x"), "the chunk's state (15 bytes kept) is not shown");
    cr_assert(strstr(html, "class=\"st-other\""), "an unknown state got a class of its own");
}

/* A cancelled job's chunks that never ran are drawn as left unfinished,
 * not as waiting in a queue: nothing will take them any more. */
Test(cli_report, a_cancelled_jobs_chunks_are_unfinished_not_queued)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0); /* no worker: the chunks wait */
    char in[400], out[400], id[64], path[400], msg[512];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    const char *extra[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
    const char *st[] = { "status", id, NULL };
    for (int i = 0; i < 300; i++) { /* planned: its chunks queued */
        tdist_vrctl(&D, msg, sizeof msg, st);
        if (strstr(msg, "running"))
            break;
        tmsleep(20);
    }
    const char *cancel[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, msg, sizeof msg, cancel), 0, "%s", msg);
    const char *html = report_page(id, path, sizeof path);
    cr_assert(strstr(html, "<rect class=\"left"), "no chunk drawn as unfinished");
    cr_assert_null(strstr(html, "<rect class=\"queued"), "a cancelled job's chunk drawn queued");
    cr_assert(strstr(html, "unfinished when the job ended"), "the chunk's title does not say so");
    report_legend_readable(html);
    /* an -o that exists is bad usage (exit 2), as for run and submit */
    const char *again[] = { "report", id, "-o", path, NULL };
    cr_assert_eq(tdist_vrctl(&D, msg, sizeof msg, again), 2, "%s", msg);
}

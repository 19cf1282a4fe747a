/*
 * cmd_report.c - `vrctl report JOB -o report.html`: one self-contained HTML
 * file about a job, drawn here as inline SVG (no network fetch, no library):
 * the summary, throughput over time for the job and each worker, a timeline
 * of the chunks per worker (queued, running, committed, retried, cut, dead), the
 * per-stage latency percentiles from the merged histograms, GPU use per
 * worker, and the job's events. Everything comes from Redis (rq_stats.h,
 * rq_report.h, rq_events.h), so a report can be made while the job runs or long after;
 * but the contact sheet (report_sheet.h), decoded from the job's files when they are here.
 */
#include "vrctl.h"

#include "chart_ticks.h"
#include "cmdtable.h"
#include "job.h"
#include "metrics.h"
#include "rq_events.h"
#include "rq_report.h"
#include "report_sheet.h"
#include "rq_stats.h"
#include "storage.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_W      960     /* chart width in px */
#define REPORT_LEFT   150     /* room for row names */
#define REPORT_BINS   120     /* throughput samples across the job */
#define REPORT_EVENTS 1000    /* what the event stream keeps */

struct report {
    FILE *f;
    const struct rq_job_status *st;
    const struct rq_chunk_rec *c;
    int n;                        /* chunks */
    const struct rq_event_entry *ev;
    int nev;
    long long t0, t1;             /* the job's span, ms */
};

/* ---- helpers ---- */

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        int bidi = text_bidi_len(s); /* a reordering a page would apply: shown as '?' */
        if (bidi) {
            fputc('?', f);
            s += bidi - 1;
            continue;
        }
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static double rel_s(const struct report *r, long long ms)
{
    return (ms - r->t0) / 1000.0;
}

static double xpos(const struct report *r, long long ms)
{
    double span = (double)(r->t1 - r->t0);
    double x = span > 0 ? (ms - r->t0) / span : 0;
    return REPORT_LEFT + (x < 0 ? 0 : x > 1 ? 1 : x) * (REPORT_W - REPORT_LEFT - 10);
}

/* Adds name to the n names of w (max) unless it is there or empty. */
static int worker_add(char (*w)[128], int n, int max, const char *name)
{
    int k = 0;
    while (k < n && strcmp(w[k], name))
        k++;
    if (name[0] && k == n && n < max)
        snprintf(w[n++], 128, "%s", name);
    return n;
}

/* The job's workers, in first-seen order: those the chunk records name
 * (the last worker of each chunk), then those only the events name, such
 * as a worker killed before its first commit, whose chunk another worker
 * finished. */
static int worker_names(const struct report *r, char (*w)[128], int max)
{
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n = worker_add(w, n, max, r->c[i].worker);
    for (int i = 0; i < r->nev; i++)
        n = worker_add(w, n, max, r->ev[i].worker);
    return n;
}

/* An attempt a worker lost (its lease reclaimed: "chunk 3: worker W
 * stopped renewing ...; requeued"), as a mark at that moment in its row. */
static void lost_marks(const struct report *r, const char *worker, double y, int h)
{
    for (int i = 0; i < r->nev; i++) {
        const struct rq_event_entry *e = &r->ev[i];
        if (e->chunk < 0 || strcmp(e->worker, worker) || !strstr(e->msg, "stopped renewing"))
            continue;
        double x = xpos(r, e->ms);
        fprintf(r->f, "<g class=\"bar\"><rect class=\"lost\" x=\"%.1f\" y=\"%.1f\" "
                      "width=\"4\" height=\"%d\"/><title>chunk %d lost at %.2f s: ",
                x - 4 > REPORT_LEFT ? x - 4 : REPORT_LEFT, y, h, e->chunk, rel_s(r, e->ms));
        esc(r->f, e->msg);
        fputs("</title></g>\n", r->f);
    }
}

/* The partial work of a killed worker's attempt (the chunk record's
 * lost_*: its start to its last renewal, and the frames it had done then),
 * hatched in its row: work done and then redone by another attempt. */
static void lost_work(const struct report *r, const char *worker, double y, int h)
{
    for (int i = 0; i < r->n; i++) {
        const struct rq_chunk_rec *c = &r->c[i];
        if (strcmp(c->lost_by, worker) || !c->lost_from_ms || c->lost_to_ms < c->lost_from_ms)
            continue;
        double x0 = xpos(r, c->lost_from_ms), x1 = xpos(r, c->lost_to_ms);
        fprintf(r->f, "<g class=\"bar\"><rect class=\"lostwork\" x=\"%.1f\" y=\"%.1f\" "
                      "width=\"%.1f\" height=\"%d\"/><title>chunk %d: %lld frames done from "
                      "%.2f s to %.2f s by a worker that was then lost, redone later</title></g>\n",
                x0, y, x1 - x0 > 1 ? x1 - x0 : 1, h, c->idx, c->lost_frames,
                rel_s(r, c->lost_from_ms), rel_s(r, c->lost_to_ms));
    }
}

static const char *series_colour(int i)
{
    static const char *const c[] = { "#1d3557", "#e76f51", "#2a9d8f", "#e9c46a", "#8338ec",
                                     "#fb5607", "#3a86ff", "#6a994e", "#bc4749", "#ff006e" };
    return c[i % 10];
}

/* ---- sections ---- */

static void report_summary(const struct report *r)
{
    const struct rq_job_status *st = r->st;
    FILE *f = r->f;
    fprintf(f, "<table class=\"kv\">\n<tr><th>state</th><td class=\"st-%s\">",
            job_state_known(st->state) ? st->state : "other");
    esc(f, st->state);
    fputs("</td></tr>\n", f);
    fputs("<tr><th>input</th><td>", f);
    esc(f, st->input);
    fputs("</td></tr>\n<tr><th>output</th><td>", f);
    esc(f, st->output);
    fprintf(f, "</td></tr>\n<tr><th>frames</th><td>%lld of %lld</td></tr>\n", st->frames_done,
            st->frames_total);
    fprintf(f, "<tr><th>chunks</th><td>%lld done of %lld (%lld running, %lld dead)</td></tr>\n",
            st->chunks_done, st->chunks_total, st->chunks_running, st->chunks_dead);
    if (st->cuts > 0)
        fprintf(f, "<tr><th>cuts</th><td>%lld (running chunks cut for idle workers)</td></tr>\n",
                st->cuts);
    long long lost = 0, nlost = 0;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].lost_by[0]) {
            lost += r->c[i].lost_frames;
            nlost++;
        }
    if (nlost)
        fprintf(f, "<tr><th>lost work</th><td>%lld frames, done by %lld attempt%s whose worker "
                   "was lost (killed), then redone</td></tr>\n", lost, nlost,
                nlost > 1 ? "s" : "");
    fprintf(f, "<tr><th>wall</th><td>%.2f s, %.1f fps</td></tr>\n", st->wall_s, st->fps);
    double wall = st->wall_s > 0 ? st->wall_s : 1;
    fprintf(f, "<tr><th>split / stitch</th><td>%.2f s (%.1f%%) / %.2f s (%.1f%%)</td></tr>\n",
            st->split_s, 100 * st->split_s / wall, st->stitch_s, 100 * st->stitch_s / wall);
    if (st->error[0]) {
        fputs("<tr><th>error</th><td class=\"err\">", f);
        esc(f, st->error);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Frames of each done chunk spread evenly over its run; fps per bin. */
static void fps_bins(const struct report *r, const char *worker, double *fps)
{
    double bin_ms = (double)(r->t1 - r->t0) / REPORT_BINS;
    memset(fps, 0, REPORT_BINS * sizeof *fps);
    for (int i = 0; i < r->n; i++) {
        const struct rq_chunk_rec *c = &r->c[i];
        if (!c->done_ms || c->started_ms <= 0 || c->done_ms <= c->started_ms ||
            (worker && strcmp(worker, c->worker)))
            continue;
        double rate = c->frames / (double)(c->done_ms - c->started_ms); /* frames per ms */
        for (int b = 0; b < REPORT_BINS; b++) {
            double lo = r->t0 + b * bin_ms, hi = lo + bin_ms;
            double a = c->started_ms > lo ? c->started_ms : lo;
            double z = c->done_ms < hi ? c->done_ms : hi;
            if (z > a)
                fps[b] += rate * (z - a) / bin_ms * 1000.0;
        }
    }
}

static void report_fps(const struct report *r, char (*w)[128], int nw)
{
    FILE *f = r->f;
    enum { H = 240, TOP = 10, BOTTOM = 30 };
    double job[REPORT_BINS], (*per)[REPORT_BINS] = calloc((size_t)nw + 1, sizeof *per);
    if (!per)
        return;
    fps_bins(r, NULL, job);
    double most = 0;
    for (int b = 0; b < REPORT_BINS; b++)
        most = job[b] > most ? job[b] : most;
    struct chart_axis ax;
    int steps = chart_ticks(most, 5, &ax);
    double top = ax.end;
    for (int k = 0; k < nw; k++)
        fps_bins(r, w[k], per[k]);
    fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            REPORT_W, H, REPORT_W, H);
    double plot = H - TOP - BOTTOM;
    for (int g = 0; g <= steps; g++) { /* from the top down, in 1-2-5 steps */
        double y = TOP + plot * g / steps;
        fprintf(f, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                   "<text class=\"ax\" x=\"%d\" y=\"%.1f\">%.*f fps</text>\n",
                REPORT_LEFT, REPORT_W - 10, y, y, REPORT_LEFT - 6, y + 4, ax.decimals,
                ax.step * (steps - g));
    }
    fprintf(f, "<text class=\"ax\" x=\"%d\" y=\"%d\">0 s</text><text class=\"ax\" x=\"%d\" "
               "y=\"%d\">%.1f s</text>\n",
            REPORT_LEFT + 12, H - 8, REPORT_W - 10, H - 8, rel_s(r, r->t1));
    for (int k = -1; k < nw; k++) {
        const double *v = k < 0 ? job : per[k];
        fprintf(f, "<polyline class=\"%s\" stroke=\"%s\" points=\"", k < 0 ? "job" : "wk",
                k < 0 ? "#111" : series_colour(k));
        for (int b = 0; b < REPORT_BINS; b++) {
            long long mid = r->t0 + (long long)((b + 0.5) * (r->t1 - r->t0) / REPORT_BINS);
            fprintf(f, "%.1f,%.1f ", xpos(r, mid), TOP + plot * (1 - v[b] / top));
        }
        fputs("\"><title>", f);
        if (k < 0)
            fputs("the job", f);
        else
            esc(f, w[k]);
        fputs("</title></polyline>\n", f);
    }
    fputs("</svg>\n<p class=\"legend\"><span style=\"color:#111\">&#9632; the job</span>", f);
    for (int k = 0; k < nw; k++) {
        fprintf(f, " <span style=\"color:%s\">&#9632; ", series_colour(k));
        esc(f, w[k]);
        fputs("</span>", f);
    }
    fputs("</p>\n", f);
    free(per);
}

static void chunk_bar(const struct report *r, const struct rq_chunk_rec *c, double y, int h)
{
    FILE *f = r->f;
    long long a = c->started_ms ? c->started_ms : c->queued_ms;
    long long z = c->done_ms ? c->done_ms : r->t1;
    /* a job that ended (cancelled, failed) left its other chunks unfinished:
     * not waiting in any queue any more */
    int left = job_state_ended(r->st->state) && strcmp(c->state, "done") &&
               strcmp(c->state, "dead");
    const char *cls = !strcmp(c->state, "done") ? "done" : !strcmp(c->state, "dead") ? "dead"
                      : left ? "left" : !strcmp(c->state, "running") ? "run" : "queued";
    double x0 = xpos(r, a), x1 = xpos(r, z);
    fprintf(f, "<g class=\"bar\"><rect class=\"%s%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%d\"/>",
            cls, c->attempts > 1 ? " retried" : c->cuts > 0 || c->cut_for[0] ? " cut" : "", x0, y,
            x1 - x0 > 1 ? x1 - x0 : 1, h);
    if (x1 - x0 > 18) /* "*" tried again, "/" cut for an idle worker, "+" a cut's tail */
        fprintf(f, "<text class=\"lbl\" x=\"%.1f\" y=\"%.1f\">%d%s%s%s</text>", x0 + 3,
                y + h - 5, c->idx, c->attempts > 1 ? "*" : "", c->cuts > 0 ? "/" : "",
                c->cut_for[0] ? "+" : "");
    fprintf(f, "<title>chunk %d: ", c->idx);
    esc(f, c->state);
    if (left)
        fputs(", unfinished when the job ended", f);
    if (c->worker[0]) {
        fputs(" on ", f);
        esc(f, c->worker);
    }
    if (c->queued_ms)
        fprintf(f, "; queued at %.2f s", rel_s(r, c->queued_ms));
    if (c->started_ms)
        fprintf(f, "; started %.2f s", rel_s(r, c->started_ms));
    if (c->done_ms)
        fprintf(f, "; committed %.2f s (%.2f s, %lld frames)", rel_s(r, c->done_ms),
                (c->done_ms - c->started_ms) / 1000.0, c->frames);
    if (c->attempts > 1)
        fprintf(f, "; %lld failed tries before", c->attempts - 1);
    if (c->cuts > 0)
        fprintf(f, "; cut %lld time%s for idle workers", c->cuts, c->cuts > 1 ? "s" : "");
    if (c->cut_for[0]) {
        fputs("; a cut's tail, for ", f);
        esc(f, c->cut_for);
    }
    if (c->error[0]) {
        fputs("; last error: ", f);
        esc(f, c->error);
    }
    fputs("</title></g>\n", f);
}

static void report_timeline(const struct report *r, char (*w)[128], int nw)
{
    FILE *f = r->f;
    enum { ROW = 26, BAR = 18 };
    int rows = nw + 1; /* the last row: chunks no worker has started */
    int h = rows * ROW + 30;
    fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            REPORT_W, h, REPORT_W, h);
    fputs("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f2d4dc\"/>"
          "<rect width=\"2\" height=\"6\" fill=\"#6d2e46\"/></pattern></defs>\n", f);
    for (int k = 0; k < rows; k++) {
        double y = 4 + k * ROW;
        fprintf(f, "<text class=\"row\" x=\"%d\" y=\"%.1f\">", REPORT_LEFT - 6, y + BAR - 5);
        esc(f, k < nw ? w[k] : "(not started)");
        fputs("</text>\n", f);
        if (k < nw) {
            lost_work(r, w[k], y, BAR);
            lost_marks(r, w[k], y, BAR);
        }
        /* the waits first, so that no wait line crosses a bar */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < r->n; i++) {
                const struct rq_chunk_rec *c = &r->c[i];
                int mine = k < nw ? c->started_ms && !strcmp(c->worker, w[k]) : !c->started_ms;
                if (!mine || !(c->started_ms || c->queued_ms))
                    continue;
                if (pass == 1)
                    chunk_bar(r, c, y, BAR);
                else if (c->queued_ms && c->started_ms > c->queued_ms)
                    fprintf(f, "<line class=\"wait\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                               "y2=\"%.1f\"/>\n",
                            xpos(r, c->queued_ms), xpos(r, c->started_ms), y + BAR / 2.0,
                            y + BAR / 2.0);
            }
    }
    /* requeues and other events as ticks along the bottom */
    for (int i = 0; i < r->nev; i++) {
        double x = xpos(r, r->ev[i].ms);
        fprintf(f, "<line class=\"tick%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"><title>"
                   "%.2f s: ",
                strstr(r->ev[i].msg, "requeued") || strstr(r->ev[i].msg, "dead") ? " bad" : "",
                x, x, h - 24, h - 12, rel_s(r, r->ev[i].ms));
        esc(f, r->ev[i].msg);
        fputs("</title></line>\n", f);
    }
    fprintf(f, "<text class=\"ax\" x=\"%d\" y=\"%d\">events</text></svg>\n", REPORT_LEFT - 6,
            h - 12);
    fputs("<p class=\"legend\"><span class=\"k done\">committed</span> <span class=\"k run\">"
          "running</span> <span class=\"k queued\">queued</span> <span class=\"k left\">unfinished "
          "(the job ended)</span> <span class=\"k dead\">dead"
          "</span> <span class=\"k retried\">retried (*)</span> <span class=\"k cut\">cut for "
          "an idle worker (/), a cut's tail (+)</span> <span class=\"k lost\">lost "
          "(lease reclaimed)</span> <span class=\"k lostwork\">a lost worker's partial work "
          "(redone)</span> &mdash; the thin line before a "
          "bar is the time it waited in the queue; hover for details.</p>\n<p id=\"detail\">"
          "</p>\n", f);
}

static void report_stages(const struct report *r)
{
    FILE *f = r->f;
    if (!r->st->have_metrics) {
        fputs("<p>No chunk has reported its stages yet.</p>\n", f);
        return;
    }
    fputs("<table><tr><th>stage</th><th>frames</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th>"
          "<th>mean ms</th><th>total s</th></tr>\n", f);
    for (int k = 0; k < MET_NSTAGES; k++) {
        const struct hist *hh = &r->st->merged.stage[k];
        if (hh->count)
            fprintf(f, "<tr><td>%s</td><td>%llu</td><td>%.3f</td><td>%.3f</td><td>%.3f</td>"
                       "<td>%.3f</td><td>%.2f</td></tr>\n",
                    metrics_stage_name(k), (unsigned long long)hh->count,
                    hist_percentile(hh, 50) / 1e3, hist_percentile(hh, 95) / 1e3,
                    hist_percentile(hh, 99) / 1e3, hist_mean(hh) / 1e3, hh->sum_ns / 1e9);
    }
    fputs("</table>\n", f);
}

static void report_workers(const struct report *r, char (*w)[128], int nw)
{
    FILE *f = r->f;
    fputs("<table><tr><th>worker</th><th>chunks</th><th>frames</th><th>fps while busy</th>"
          "<th>GPU use (mean)</th><th>GPU memory (peak)</th></tr>\n", f);
    for (int k = 0; k < nw; k++) {
        long long chunks = 0, frames = 0, busy_ms = 0;
        double util_ms = 0, util_w = 0;
        unsigned long long mem = 0;
        for (int i = 0; i < r->n; i++) {
            const struct rq_chunk_rec *c = &r->c[i];
            if (strcmp(c->worker, w[k]) || !c->done_ms)
                continue;
            long long ran = c->done_ms - c->started_ms;
            chunks++;
            frames += c->frames;
            busy_ms += ran;
            if (c->gpu_util >= 0) {
                util_ms += c->gpu_util * ran;
                util_w += ran;
            }
            mem = c->gpu_mem_peak > mem ? c->gpu_mem_peak : mem;
        }
        fputs("<tr><td>", f);
        esc(f, w[k]);
        fprintf(f, "</td><td>%lld</td><td>%lld</td><td>%.1f</td>", chunks, frames,
                busy_ms > 0 ? frames * 1000.0 / busy_ms : 0);
        if (util_w > 0)
            fprintf(f, "<td>%.0f%%</td>", util_ms / util_w);
        else
            fputs("<td>&mdash; (CPU, or no NVML)</td>", f);
        if (mem)
            fprintf(f, "<td>%.2f GiB</td></tr>\n", mem / 1073741824.0);
        else
            fputs("<td>&mdash;</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void report_events(const struct report *r)
{
    FILE *f = r->f;
    int errors = 0;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].error[0]) {
            if (!errors++)
                fputs("<h3>Chunk errors</h3>\n<ul>\n", f);
            fprintf(f, "<li class=\"err\">chunk %d (", r->c[i].idx);
            esc(f, r->c[i].state);
            fprintf(f, "%s): ", strcmp(r->c[i].state, "done") ? ""
                                 : " after a retry: the error is history");
            esc(f, r->c[i].error);
            fputs("</li>\n", f);
        }
    if (errors)
        fputs("</ul>\n", f);
    fprintf(f, "<h3>Events (%d)</h3>\n<ol class=\"events\">\n", r->nev);
    for (int i = 0; i < r->nev; i++) {
        fprintf(f, "<li><span class=\"t\">%+.2f s</span> ", rel_s(r, r->ev[i].ms));
        esc(f, r->ev[i].msg);
        fputs("</li>\n", f);
    }
    fputs("</ol>\n", f);
}

static const char REPORT_CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;"
    "border-bottom:1px solid #eee}.kv th{color:#555;font-weight:normal}"
    ".err,.st-failed{color:#b00020}.st-done{color:#1b7f3b}.st-cancelled{color:#a66}"
    "svg.chart{display:block;background:#fafafa;border:1px solid #eee}"
    ".grid{stroke:#e4e4e4}.ax,.row{font-size:11px;fill:#666;text-anchor:end}"
    ".job{fill:none;stroke-width:2.5}.wk{fill:none;stroke-width:1.2;opacity:.8}"
    ".done{fill:#2a9d8f}.run{fill:#457b9d}.queued{fill:#bbb}.left{fill:#eee;stroke:#999}.dead{fill:#e63946}.lost{fill:#6d2e46}.lostwork{fill:url(#hatch)}"
    ".retried{stroke:#f4a261;stroke-width:2}.cut{stroke:#6a4c93;stroke-width:2}.wait{stroke:#bbb;stroke-dasharray:2 2}"
    ".lbl{font-size:10px;fill:#fff;pointer-events:none}.bar:hover rect{opacity:.7}"
    ".tick{stroke:#888;stroke-width:2}.tick.bad{stroke:#e63946}"
    ".k{padding:0 6px;color:#fff;border-radius:3px}span.k.retried{background:#f4a261;color:#222}span.k.cut{background:#6a4c93}"
    "span.k.done{background:#2a9d8f}span.k.run{background:#457b9d}"
    "span.k.queued{background:#bbb;color:#222}span.k.left{background:#eee;border:1px solid #999;color:#333}span.k.dead{background:#e63946}span.k.lost{background:#6d2e46}"
    "span.k.lostwork{background:#f2d4dc;background-image:repeating-linear-gradient(45deg,"
    "#6d2e46 0 1px,transparent 1px 6px);color:#222}"
    "img.sheet{display:block;max-width:100%;height:auto}#detail{min-height:1.4em;color:#333;font-family:monospace}"
    ".events{font-family:monospace;font-size:12px}.t{color:#888}";

/* Hovering a chunk shows its details under the chart (the SVG titles are
 * the same text, for browsers without script). */
static const char REPORT_JS[] =
    "document.querySelectorAll('g.bar').forEach(function(g){"
    "g.addEventListener('mouseenter',function(){"
    "document.getElementById('detail').textContent=g.querySelector('title').textContent;});});"
    "document.body.setAttribute('data-ready','1');";

static void report_write(const struct report *r)
{
    FILE *f = r->f;
    char w[64][128];
    int nw = worker_names(r, w, 64);
    fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>vrseg job ",
          f);
    esc(f, r->st->id);
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>vrseg job ", REPORT_CSS);
    esc(f, r->st->id);
    fputs("</h1>\n", f);
    report_summary(r);
    fputs("<h2>Source and matte</h2>\n", f);
    vr_err e = { 0 };
    const int matte = !strcmp(r->st->output_kind, "mask");
    if (report_sheet_html(f, r->st->input, r->st->output, matte, &e) < 0) {
        fputs("<p>No contact sheet: ", f);
        esc(f, e.msg);
        fputs("</p>\n", f);
    }
    fputs("<h2>Throughput over time</h2>\n", f);
    report_fps(r, w, nw);
    fputs("<h2>Chunks per worker</h2>\n", f);
    report_timeline(r, w, nw);
    fputs("<h2>Stages (merged histograms over every committed chunk)</h2>\n", f);
    report_stages(r);
    fputs("<h2>Workers and GPUs</h2>\n", f);
    report_workers(r, w, nw);
    fputs("<h2>Errors and events</h2>\n", f);
    report_events(r);
    fprintf(f, "<script>%s</script>\n</body></html>\n", REPORT_JS);
}

/* The span the charts cover: the job's start (or its first queue entry)
 * to its end (or now). */
static void report_span(struct report *r)
{
    const struct rq_job_status *st = r->st;
    r->t0 = st->started_ms ? st->started_ms : st->created_ms;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].queued_ms && (!r->t0 || r->c[i].queued_ms < r->t0))
            r->t0 = r->c[i].queued_ms;
    r->t1 = st->finished_ms ? st->finished_ms : rq_now_ms();
    for (int i = 0; i < r->n; i++)
        if (r->c[i].done_ms > r->t1)
            r->t1 = r->c[i].done_ms;
    if (r->t1 <= r->t0)
        r->t1 = r->t0 + 1000;
}

int cmd_report(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID | VRCTL_WANT_OUT, &v);
    if (rc)
        return rc;
    struct rq_job_status *st = malloc(sizeof *st);
    struct rq_event_entry *ev = calloc(REPORT_EVENTS, sizeof *ev);
    struct rq_chunk_rec *c = NULL;
    char *html = NULL;
    size_t len = 0;
    vr_err e = { 0 };
    rc = 1;
    if (!st || !ev) {
        fprintf(stderr, "vrctl report: out of memory\n");
        goto out;
    }
    if (rq_job_status(v.q, v.id, 1, st, &e) < 0) {
        rc = e.code == VR_ENOENT ? vrctl_no_job(v.id) : 1;
        if (e.code != VR_ENOENT)
            fprintf(stderr, "vrctl report: %s\n", e.msg);
        goto out;
    }
    struct report r = { .st = st, .n = (int)st->chunk_slots, .ev = ev };
    if (r.n > 0 && !(c = calloc((size_t)r.n, sizeof *c))) {
        fprintf(stderr, "vrctl report: out of memory\n");
        goto out;
    }
    r.c = c;
    if (rq_report_chunks(v.q, v.id, r.n, c, &e) < 0 ||
        (r.nev = rq_events_read(v.q, v.id, NULL, ev, REPORT_EVENTS, &e)) < 0) {
        fprintf(stderr, "vrctl report: %s\n", e.msg);
        goto out;
    }
    /* the job's own videos are this command's inputs: never replaced by
     * the page (compared by device and inode; their names came from Redis,
     * and are only stat'ed) */
    const struct storage_file ins[] = { { "job's input", st->input },
                                        { "job's output", st->output } };
    const struct storage_file outs[] = { { "-o", v.output } };
    if (storage_outputs_check(ins, 2, outs, 1, v.replace, &e) < 0) {
        fprintf(stderr, "vrctl report: %s\n", e.msg);
        rc = 2; /* an -o that exists: bad usage, as for run and submit */
        goto out;
    }
    report_span(&r);
    if (!(r.f = open_memstream(&html, &len))) {
        fprintf(stderr, "vrctl report: out of memory\n");
        goto out;
    }
    report_write(&r);
    fclose(r.f);
    if (storage_write_atomic(v.output, html, len, &e) < 0) {
        fprintf(stderr, "vrctl report: %s\n", e.msg);
        goto out;
    }
    printf("%s: job %s (%s, %d chunk%s, %d event%s)\n", v.output, v.id, st->state, r.n,
           text_plural(r.n), r.nev, text_plural(r.nev));
    rc = 0;
out:
    free(html);
    free(c);
    free(ev);
    free(st);
    vrctl_end(&v);
    return rc;
}

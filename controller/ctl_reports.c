/*
 * ctl_reports.c - one worker report (vr:reports) in the controller: the
 * state change the worker asks for, made with the controller's rights once
 * the report proves its claim (rq_claim.h). The worker's Redis user writes
 * no chunk or job state, so this is the only way a chunk is started,
 * renewed, committed, failed or skipped for a worker.
 *
 * Reports are read by a thread of their own, with its own connection: the
 * loop may spend seconds stitching ahead, and a chunk's commit (and so the
 * next stitch) must not wait for it. The loop drains what is left before
 * it reclaims leases (ctl_reports_drain), so a renewal never waits behind
 * a reclaim.
 *
 * Everything in a report is untrusted: it is parsed with bounds
 * (rq_report_parse), a report that does not open its consumer's commitment
 * changes nothing and is counted and logged (a few lines a minute at
 * most), and the scripts it leads to check again
 * that the consumer holds the entry (XPENDING), so a report for an entry
 * that was reclaimed meanwhile is refused there.
 */
#include "ctl.h"

#include "clock.h"
#include "log.h"
#include "rq_claim.h"
#include "rq_fleet.h"
#include "rq_fleetstats.h"
#include "rq_lease.h"
#include "text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each line of a report's note as an event of chunk idx, control
 * characters stripped. */
static void ctl_report_notes(struct rq *q, const char *job, int idx, const char *note)
{
    while (*note) {
        size_t n = strcspn(note, "\n");
        char line[1100];
        snprintf(line, sizeof line, "%.*s", (int)(n < 1024 ? n : 1024), note);
        text_strip_controls(line);
        if (line[0])
            rq_event(q, job, "chunk %d: %s", idx, line);
        note += n + (note[n] == '\n');
    }
}

static int ctl_report_done(struct rq *q, const struct rq_report *r, vr_err *e)
{
    int rc = rq_chunk_commit_end(q, r->stream, r->consumer, r->id, r->job, r->idx, r->frames,
                                 r->fps, r->metrics, r->sum[0] ? r->sum : NULL, r->end, e);
    if (rc == 1)
        ctl_report_notes(q, r->job, r->idx, r->note);
    else if (rc == RQ_COMMIT_CUT_MISSED) {
        log_warn("job %s chunk %d: its worker read past the end it was cut to; its output is "
                 "refused and the chunk runs again", r->job, r->idx);
        rq_event(q, r->job, "chunk %d: its worker missed the cut (read past it); run again",
                 r->idx);
    }
    else if (rc == 0)
        log_warn("job %s chunk %d: a done report from a claim that no longer holds its entry "
                 "(reclaimed); dropped", r->job, r->idx);
    return rc;
}

/* A report's reason (or `fallback`) for an event and a log line. */
static void ctl_report_reason(const struct rq_report *r, const char *fallback, char *buf,
                              size_t n)
{
    snprintf(buf, n, "%s", r->reason[0] ? r->reason : fallback);
    text_strip_controls(buf);
}

static int ctl_report_fail(struct rq *q, const struct rq_report *r, vr_err *e)
{
    char reason[1100];
    ctl_report_reason(r, "failed", reason, sizeof reason);
    long long wait_ms = 0;
    int storage = r->permanent == RQ_FAIL_STORAGE;
    int mine = storage || r->permanent == RQ_FAIL_WORKER; /* the worker's, not the chunk's */
    int rc = rq_chunk_fail_ex(q, r->stream, r->consumer, r->id, r->job, r->idx, reason,
                              mine ? RQ_FAIL_WORKER : r->permanent, 0, &wait_ms, e);
    if (storage && rc == 1)
        ctl_pause_note(q, r, reason);
    if (rc == 2)
        log_error("job %s chunk %d: dead-lettered%s: %s", r->job, r->idx,
                  mine ? " (every worker that took it failed on its own environment)"
                  : r->permanent ? " (a permanent error: not retried)" : "", reason);
    else if (rc == 1 && mine)
        rq_event(q, r->job, "chunk %d: %s; charged to the worker, not the chunk: tried again "
                 "at once", r->idx, reason);
    else if (rc == 1 && strcmp(reason, "job ended"))
        rq_event(q, r->job, "chunk %d: %s; tried again in %.1f s", r->idx, reason,
                 wait_ms / 1000.0);
    return rc;
}

static int ctl_report_died(struct rq *q, const struct rq_report *r, vr_err *e)
{
    char reason[1100];
    ctl_report_reason(r, "worker died", reason, sizeof reason);
    int n = rq_worker_died(q, r->worker, r->shown, reason, e);
    for (int k = 0; k < n; k++) /* counted as the lease's reclaims are */
        rq_fleetstats_note(q, RQ_NOTE_RECLAIM, 0, NULL);
    if (n > 0)
        log_warn("%s; %d chunk%s requeued", reason, n, text_plural(n));
    return n;
}

/* ---- refused reports ----
 * Every refusal is counted in the fleet's stats (vrseg_reports_refused_total);
 * the first CTL_REFUSED_LOG_BURST of each minute are logged, the rest only
 * summed up in the next line logged: a worker's user flooding vr:reports
 * with forgeries changes nothing, and must not fill the controller's log
 * either. Both the reports thread and the loop's drain come here. */
#define CTL_REFUSED_LOG_BURST 10
#define CTL_REFUSED_WINDOW_S  60.0

static pthread_mutex_t refused_mu = PTHREAD_MUTEX_INITIALIZER;
static double refused_since;     /* the window's start, monotonic */
static int refused_logged;       /* lines logged in the window */
static long long refused_quiet;  /* refusals not logged since the last line */

/* 1 when this refusal may be logged, with *quiet the refusals that were
 * not since the last line; 0 when it is only counted. */
static int ctl_refused_may_log(long long *quiet)
{
    pthread_mutex_lock(&refused_mu);
    double now = clock_mono_s();
    if (refused_since == 0 || now - refused_since >= CTL_REFUSED_WINDOW_S) {
        refused_since = now;
        refused_logged = 0;
    }
    int ok = refused_logged < CTL_REFUSED_LOG_BURST;
    if (ok) {
        refused_logged++;
        *quiet = refused_quiet;
        refused_quiet = 0;
    } else {
        refused_quiet++;
    }
    pthread_mutex_unlock(&refused_mu);
    return ok;
}

static void ctl_report_refused(struct rq *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ctl_report_refused(struct rq *q, const char *fmt, ...)
{
    rq_fleetstats_note(q, RQ_NOTE_REFUSED, 0, NULL);
    long long quiet = 0;
    if (!ctl_refused_may_log(&quiet))
        return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (quiet)
        log_warn("%s (and %lld more refused reports not logged; all are counted in "
                 "vrseg_reports_refused_total)", line, quiet);
    else
        log_warn("%s", line);
}

int ctl_report(struct rq *q, const struct rq_msg *m)
{
    struct rq_report r;
    vr_err e = { 0 };
    if (rq_report_parse(m, &r, &e) < 0) {
        ctl_report_refused(q, "%s %s: a malformed report (%s); ignored", m->stream, m->id,
                           e.msg);
        return 0;
    }
    if (!rq_report_proves(&r)) {
        char who[RQ_CONSUMER_MAX];
        snprintf(who, sizeof who, "%s", r.consumer ? r.consumer : r.worker);
        text_strip_controls(who);
        ctl_report_refused(q, "a '%s' report for %s chunk %d from '%s' does not prove its "
                           "claim; ignored", r.kind, r.job[0] ? r.job : "-", r.idx, who);
        return 0;
    }
    int rc = 0;
    if (!strcmp(r.kind, "died")) {
        rc = ctl_report_died(q, &r, &e);
    } else if (!strcmp(r.kind, "skip") || !r.job[0]) {
        rc = rq_chunk_skip(q, r.stream, r.consumer, r.id, r.job, r.idx, &e);
    } else if (!strcmp(r.kind, "start")) {
        struct rq_start *st = malloc(sizeof *st);
        char why[128] = "";
        rc = st ? rq_chunk_start(q, r.stream, r.consumer, r.id, r.job, r.idx, st, why,
                                 sizeof why, &e)
                : VR_ENOMEM;
        free(st);
        if (rc > 0) /* the lease runs from a proven start (rq_lease.h) */
            rq_lease_stamp(q, r.stream, r.consumer, r.id, r.job, r.idx, 0, NULL);
        if (rc == VR_EFORMAT)
            rc = 1; /* a task the worker cannot read either: it reports the failure */
    } else if (!strcmp(r.kind, "renew")) {
        rc = rq_lease_renew(q, r.stream, r.consumer, r.id, r.job, &e);
        if (rc == 1)
            rq_lease_stamp(q, r.stream, r.consumer, r.id, r.job, r.idx, r.frames, NULL);
    } else if (!strcmp(r.kind, "done")) {
        rc = ctl_report_done(q, &r, &e);
    } else {
        rc = ctl_report_fail(q, &r, &e);
    }
    /* Redis refusing writes (maxmemory) refuses the script's first write,
     * so nothing of the change was made: the report is handled again later,
     * not acked unhandled (a done report dropped so left its chunk to wait
     * out its lease: its worker had moved on) */
    int later = rc < 0 && strstr(e.msg, "OOM command not allowed");
    if (rc < 0)
        log_warn("job %s chunk %d: a '%s' report: %s%s", r.job[0] ? r.job : "-", r.idx, r.kind,
                 e.msg, later ? "; handled again once Redis takes writes" : "");
    return later ? CTL_REPORT_LATER : rc;
}

/* Reads the next report on q (blocking up to block_ms), handles and acks
 * it. Returns rq_read's answer: 1 one handled, 0 none, <0 error. */
static int ctl_report_next(struct ctl *c, struct rq *q, int block_ms)
{
    const char *streams[] = { RQ_REPORTS };
    struct rq_msg m;
    int rc = rq_read(q, RQ_G_CONTROLLERS, c->name, streams, 1, block_ms, &m, NULL);
    if (rc == 1) {
        if (ctl_report(q, &m) != CTL_REPORT_LATER) /* else ctl_reclaim's orphans pass */
            rq_ack(q, m.stream, RQ_G_CONTROLLERS, m.id, NULL);
        rq_msg_release(&m);
    }
    return rc;
}

int ctl_reports_drain(struct ctl *c, int max)
{
    int n = 0, rc = 1;
    while (n < max && !*c->stop && (rc = ctl_report_next(c, c->q, 0)) == 1)
        n++;
    return rc < 0 ? rc : n;
}

/* ---- the reports thread ---- */

struct ctl_reports {
    struct ctl *c;
    pthread_t th;
};

static void *ctl_reports_main(void *arg)
{
    struct ctl_reports *t = arg;
    struct ctl *c = t->c;
    struct rq *q = NULL;
    rq_open(c->url, 10000, &q, NULL);
    while (q && !*c->stop)
        if (ctl_report_next(c, q, 500) < 0) /* Redis away, or back empty: the loop makes
                                             * the groups again */
            rq_backoff(q);
    rq_free(&q);
    return NULL;
}

int ctl_reports_start(struct ctl *c, struct ctl_reports **out, vr_err *err)
{
    struct ctl_reports *t = calloc(1, sizeof *t);
    if (!t)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    t->c = c;
    if (pthread_create(&t->th, NULL, ctl_reports_main, t) != 0) {
        free(t);
        return vr_err_set(err, VR_ENOMEM, "cannot start the reports thread");
    }
    *out = t;
    return 0;
}

void ctl_reports_stop(struct ctl_reports **t)
{
    if (!*t)
        return;
    pthread_join((*t)->th, NULL);
    free(*t);
    *t = NULL;
}

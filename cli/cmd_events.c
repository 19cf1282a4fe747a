/*
 * cmd_events.c - `vrctl events JOB [--follow] [--json]`: the job's event log
 * (split, chunks done, requeues with the worker that lost its lease,
 * commits that had to wait, failure, stitch), oldest first, with --follow
 * until the job ends. Its lines are also what `status JOB` and `watch`
 * show as the last events: the cause of a stall is there, not only in a
 * worker's log.
 */
#include "vrctl.h"

#include "cli.h"
#include "rq_events.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A one-word kind for an event line, for columns and --json. Only the
 * words before the first path are looked at: a source named
 * /data/retry/in.mp4 made every splitting event a `retry` (issue 26,
 * finding 9). */
static const char *vrctl_event_kind(const char *msg_)
{
    char msg[256];
    const char *path = strstr(msg_, " /");
    snprintf(msg, sizeof msg, "%.*s", path ? (int)(path - msg_) : (int)strlen(msg_), msg_);
    static const struct { const char *needle, *kind; } kinds[] = {
        { "requeued", "requeued" }, { "dead-letter", "dead" }, { "enqueued again", "requeued" },
        { "cannot commit", "commit-retry" }, { "committed on try", "committed" },
        { " done", "done" }, { "done:", "job-done" }, { "failed", "failed" },
        { "cancelled", "cancelled" }, { "retry", "retry" }, { "stitching", "stitching" },
        { "splitting", "splitting" }, { "first chunk queued", "splitting" },
        { "running", "running" },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strstr(msg, kinds[i].needle))
            return kinds[i].kind;
    return "note";
}

void vrctl_event_print(const struct rq_event_entry *e, int json, FILE *f)
{
    const char *kind = vrctl_event_kind(e->msg);
    if (json) {
        json_t *o = json_pack("{s:s, s:I, s:o, s:o, s:s, s:s}", "id", e->id, "time_ms",
                              (json_int_t)e->ms, "chunk",
                              e->chunk >= 0 ? json_integer(e->chunk) : json_null(), "worker",
                              e->worker[0] ? json_string(e->worker) : json_null(), "event", kind,
                              "msg", e->msg);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            fprintf(f, "%s\n", s);
        free(s);
        json_decref(o);
        return;
    }
    time_t t = (time_t)(e->ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char chunk[16] = "-";
    if (e->chunk >= 0)
        snprintf(chunk, sizeof chunk, "%d", e->chunk);
    /* "chunk 3: worker W ..." : the chunk has its column already */
    const char *msg = e->msg;
    int skip = 0;
    if (e->chunk >= 0 && sscanf(msg, "chunk %*d: %n", &skip) == 0 && skip > 0)
        msg += skip;
    fprintf(f, "%02d:%02d:%02d.%03lld  chunk %-5s %-12s %-24s %s\n", tm.tm_hour, tm.tm_min,
            tm.tm_sec, e->ms % 1000, chunk, kind, e->worker[0] ? e->worker : "-", msg);
}

int cmd_events(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID | VRCTL_WANT_JSON | VRCTL_WANT_FOLLOW, &v);
    if (rc)
        return rc;
    enum { BATCH = 200 };
    struct rq_event_entry *ev = calloc(BATCH, sizeof *ev);
    char state[32] = "", last[RQ_ID_MAX] = "0";
    vr_err e = { 0 };
    rc = 1;
    if (!ev)
        goto out;
    int found = rq_job_state(v.q, v.id, state, sizeof state, &e);
    if (found == 0) {
        rc = vrctl_no_job(v.id);
        goto out;
    }
    if (found < 0) {
        fprintf(stderr, "vrctl events: %s\n", e.msg);
        goto out;
    }
    for (int fails = 0;;) {
        int n = rq_events_read(v.q, v.id, last, ev, BATCH, &e);
        if (n < 0) {
            if (!v.follow || ++fails > 120) {
                fprintf(stderr, "vrctl events: %s\n", e.msg);
                goto out;
            }
            rq_backoff(v.q);
            continue;
        }
        fails = 0;
        for (int i = 0; i < n; i++)
            vrctl_event_print(&ev[i], v.json, stdout);
        if (n)
            snprintf(last, sizeof last, "%s", ev[n - 1].id);
        fflush(stdout);
        if (n == BATCH)
            continue;
        if (!v.follow)
            break;
        /* the job's last events are written before its end state */
        if (job_state_ended(state))
            break;
        if (rq_job_state(v.q, v.id, state, sizeof state, NULL) < 0)
            state[0] = '\0';
        usleep(300000);
    }
    rc = 0;
out:
    free(ev);
    vrctl_end(&v);
    return rc;
}

/*
 * ctl_results.c - one worker result (vr:results) in the controller: a
 * dead-lettered chunk fails its job with the chunk's last error; a done
 * chunk is counted into its job, stitched ahead and may end its job.
 *
 * A result is checked against the chunk record first (rq_chunk_result):
 * it must name the entry the chunk is under now and the end the record
 * shows. Any user that may XADD vr:results (the worker's) could otherwise
 * fail any job with one line (issue 27, finding 2); such a result, or a
 * requeued chunk's stale one, is logged and changes nothing.
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

/* A copy-split chunk's input is kept until the job ends (ctl_stitch_finish
 * removes jobs/<id>/in with the outputs; a failed or cancelled job keeps
 * it for `vrctl retry`). Deleting it at the commit, as this file did,
 * broke the queue's promise that any chunk can run again: a Redis crash
 * that loses the last second of its AOF rolls the commit back, the chunk
 * is requeued, and its input was gone (issue 26, finding 1; chaos test
 * chaos_redis/host_crash_rolls_back_a_commit). The cost is one copy of
 * the source per copy-split job until it ends; range jobs have none. */

/* The chunk record's failed_by (every worker that failed or lost it, from
 * Redis: controls stripped) appended to err, so the job's error names them
 * all, not only the last one (issue 42). */
static void ctl_result_workers(char *err, size_t n, char *fb)
{
    text_strip_controls(fb);
    size_t len = strlen(err);
    if (fb[0] && len < n)
        snprintf(err + len, n - len, " (workers involved: %s)", fb);
}

int ctl_result(struct ctl *c, const char *job, int idx, const char *kind, const char *entry)
{
    if (strcmp(kind, "undone") == 0)
        return 0; /* a done chunk queued again (its output missing or damaged): its
                   * count was taken back by the requeue itself */
    vr_err e = { 0 };
    int ok = rq_chunk_result(c->q, job, idx, kind, entry, &e);
    if (ok < 0)
        return ok; /* Redis away */
    if (ok == 0) {
        char k[16], en[RQ_ID_MAX];
        snprintf(k, sizeof k, "%s", kind);
        snprintf(en, sizeof en, "%s", entry);
        text_strip_controls(k);
        text_strip_controls(en);
        log_warn("job %s: a result '%s' for chunk %d under entry '%s' does not match the chunk's "
                 "record (stale, or written outside vrseg); ignored", job, k, idx, en);
        return 0;
    }
    if (ok == 3)
        return 0; /* a done chunk of an ended job: nothing to count or stitch */
    if (strcmp(kind, "dead") == 0) {
        char ck[128], err[1800] = "", att[16] = "?", perm[4] = "", by[16] = "", n[16] = "?";
        rq_key_chunk(ck, sizeof ck, job, idx);
        rq_hget(c->q, ck, "error", err, sizeof err, NULL);
        rq_hget(c->q, ck, "attempts", att, sizeof att, NULL);
        rq_hget(c->q, ck, "permanent", perm, sizeof perm, NULL);
        rq_hget(c->q, ck, "dead_by", by, sizeof by, NULL);
        int deaths = !strcmp(by, "deaths");
        rq_hget(c->q, ck, deaths ? "deaths" : "failures", n, sizeof n, NULL);
        char fb[640] = "", reason[2048];
        rq_hget(c->q, ck, "failed_by", fb, sizeof fb, NULL);
        ctl_result_workers(err, sizeof err, fb);
        if (!strcmp(perm, "1"))
            snprintf(reason, sizeof reason, "chunk %d failed with a permanent error (attempt %s, "
                     "not retried): %s", idx, att, err);
        else if (deaths)
            snprintf(reason, sizeof reason, "chunk %d lost its worker %lld times (each one "
                     "stopped renewing its lease), dead-lettered: %s", idx, rq_record_ll(n), err);
        else
            snprintf(reason, sizeof reason, "chunk %d failed %lld times, dead-lettered: %s", idx,
                     rq_record_ll(n), err);
        return ctl_jobfiles_fail(c, job, 0, reason);
    }
    rq_event(c->q, job, "chunk %d done", idx);
    ctl_stitcher_post(c, job, 1); /* on the stitch thread: this turn goes on */
    return 0;
}


/*
 * ctl_audit.c - the controller's periodic repairs: reclaim chunks whose lease
 * lapsed, walk every active job against its manifest (lost XADDs, finished
 * jobs, jobs a dead controller held, cancelled jobs), acknowledge what dead
 * controllers left pending, and trim the streams without dropping pending
 * work. Results from workers are handled beside the loop (ctl_results.c).
 */
#include "ctl.h"

#include "clock.h"
#include "job.h"
#include "log.h"
#include "rq_claim.h"
#include "rq_events.h"
#include "rq_fleet.h"
#include "rq_fleetstats.h"
#include "rq_jobs.h"
#include "rq_jstate.h"
#include "rq_lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Consumers of the workers' group idle this long with nothing pending are
 * deleted: a worker reads under a new consumer for each claim (rq_claim.h),
 * and waits under the same one, touching it every read. */
#define CTL_CONSUMER_IDLE_MS 60000

/* ---- leases ---- */

/* Entries a pass looks at, per stream: a chunk in flight each. */
#define CTL_LEASES_MAX 1024

/* Why entry p is taken back, into reason (n bytes). */
static void ctl_lapse_reason(const struct ctl *c, const struct rq_pending *p, enum rq_lapse w,
                             char *reason, size_t n)
{
    if (w == RQ_LAPSE_EXTRA)
        snprintf(reason, n, "worker %s took more than one chunk under one claim (a worker "
                 "reads one at a time)", p->owner);
    else if (w == RQ_LAPSE_STALE)
        snprintf(reason, n, "worker %s held an entry that is no longer the chunk's", p->owner);
    else if (c->oom_seen_s > 0 && clock_mono_s() - c->oom_seen_s < c->lease_ms / 1000.0 + 5)
        snprintf(reason, n, "worker %s could not renew its lease: Redis was "
                 "out of memory and refused its writes (a stall, not a lost worker)",
                 p->owner);
    else
        snprintf(reason, n, "worker %s stopped renewing its lease (killed or lost)", p->owner);
}

/* Requeues the chunks whose entry was read with NOACK (rq_lease.h); before
 * a trim too, which would drop such an entry and leave its chunk to the
 * deep audit's lost-entry check. */
static void ctl_noack_sweep(struct ctl *c)
{
    static char cursor[2][RQ_ID_MAX]; /* how far each stream was looked at */
    static const char *const streams[2] = { RQ_CHUNKS_HI, RQ_CHUNKS };
    for (int s = 0; s < 2; s++) {
        int again = rq_noack_sweep(c->q, streams[s], cursor[s], NULL);
        if (again > 0)
            log_warn("%s: %d chunk(s) read without a claim (NOACK); enqueued again",
                     streams[s], again);
    }
}

/* Takes back the entries of `stream` whose lease lapsed on the chunk
 * records' clock (rq_lease.h). */
static int ctl_reclaim_stream(struct ctl *c, const char *stream)
{
    vr_err e = { 0 };
    struct rq_pending *idle = malloc(CTL_LEASES_MAX * sizeof *idle);
    enum rq_lapse *why = malloc(CTL_LEASES_MAX * sizeof *why);
    int n = idle && why ? rq_leases_lapsed(c->q, stream, c->lease_ms, idle, why,
                                           CTL_LEASES_MAX, &e)
                        : VR_ENOMEM;
    for (int i = 0; i < n; i++) {
        const struct rq_pending *p = &idle[i];
        char reason[256];
        ctl_lapse_reason(c, p, why[i], reason, sizeof reason);
        /* min idle 0: the lapse is the record's to say, not the stream's */
        int rc = rq_chunk_fail(c->q, stream, NULL, p->id, p->job, p->idx, reason, 0, &e);
        if (rc == 1 || rc == 2)
            rq_fleetstats_note(c->q, RQ_NOTE_RECLAIM, 0, NULL);
        if (rc == 1) {
            log_warn("job %s chunk %d: %s; requeued", p->job, p->idx, reason);
            rq_event(c->q, p->job, "chunk %d: %s; requeued", p->idx, reason);
        } else if (rc == 2) {
            log_warn("job %s chunk %d: %s; dead-lettered", p->job, p->idx, reason);
        }
    }
    free(idle);
    free(why);
    return n;
}

/* Acknowledges jobs/results entries that controllers which died left
 * pending: the audit does their work from Redis state; acking lets the
 * streams be trimmed. A report is handled first: a done chunk's report is
 * the only record of its result (its claim may still hold the entry); so
 * are the reports left pending because Redis refused their writes
 * (CTL_REPORT_LATER). */
static void ctl_ack_orphans(struct ctl *c, const char *stream, long long min_idle_ms)
{
    for (int i = 0; i < 100; i++) {
        struct rq_msg m;
        if (rq_autoclaim(c->q, stream, RQ_G_CONTROLLERS, c->name, min_idle_ms, &m, NULL) <= 0)
            return;
        /* a report Redis refused to act on stays pending: claimed again
         * here once min_idle_ms passed */
        if (strcmp(stream, RQ_REPORTS) || ctl_report(c->q, &m) != CTL_REPORT_LATER)
            rq_ack(c->q, stream, RQ_G_CONTROLLERS, m.id, NULL);
        rq_msg_release(&m);
    }
}

/* Reports a controller read and never handled (it died) idle this long
 * are handled before leases are reclaimed: half the lease, at most 5 s. */
static long long ctl_orphan_report_idle_ms(const struct ctl *c)
{
    return c->lease_ms / 2 < 5000 ? c->lease_ms / 2 : 5000;
}

int ctl_reclaim(struct ctl *c)
{
    /* A done report read by a controller that died before handling it
     * leaves its chunk's entry pending with no renewals coming (its worker
     * moved on): taken for lapsed, the chunk would run again. The report
     * is newer than the last renewal the dead controller handled, so with
     * renewals at least every half lease it is idle long enough here by
     * the time the lease lapses. A live controller handles a report in
     * milliseconds; one handled twice changes nothing the second time. */
    ctl_ack_orphans(c, RQ_REPORTS, ctl_orphan_report_idle_ms(c));
    rq_retry_due(c->q, NULL); /* failed chunks whose backoff ended */
    char full[512];
    if (rq_memory_full(c->q, full, sizeof full, NULL) > 0) {
        if (c->oom_seen_s <= 0 || clock_mono_s() - c->oom_seen_s > 60)
            log_warn("%s", full); /* once a minute while it lasts */
        c->oom_seen_s = clock_mono_s();
    }
    int a = ctl_reclaim_stream(c, RQ_CHUNKS_HI);
    int b = ctl_reclaim_stream(c, RQ_CHUNKS);
    ctl_noack_sweep(c);
    return a < 0 ? a : b < 0 ? b : a + b;
}

/* ---- active jobs ---- */

static void ctl_audit_job(struct ctl *c, const char *id, int deep)
{
    char state[32] = "";
    vr_err e = { 0 };
    if (rq_job_state(c->q, id, state, sizeof state, &e) < 0)
        return;
    if (!strcmp(state, "queued") || !strcmp(state, "splitting")) {
        ctl_job_start(c, id);
    } else if (!strcmp(state, "running")) {
        long long total = 0, pieces = 0;
        if (deep && rq_job_number(c->q, id, "chunks_total", &total, NULL) >= 0) {
            /* an elastic job's chunk indices are its pieces' (ctl_cut.c) */
            if (rq_job_number(c->q, id, "pieces", &pieces, NULL) > 0 && pieces > total)
                total = pieces;
            for (long long i = 0; i < total && i < 100000; i++) {
                /* a result a dead controller read and left (acked below) */
                if (rq_chunk_count_done(c->q, id, (int)i, &e) == 1)
                    log_warn("job %s chunk %lld: done but not counted; counted now", id, i);
                int rc = rq_chunk_requeue_lost(c->q, id, (int)i, 0, &e);
                if (rc == 1) {
                    log_warn("job %s chunk %lld: its queue entry was lost; enqueued again", id, i);
                    rq_event(c->q, id, "chunk %lld: queue entry lost, enqueued again", i);
                } else if (rc < 0 && rc != VR_ENOENT) {
                    break;
                }
            }
        }
        ctl_stitcher_post(c, id, 1);
    } else if (!strcmp(state, "stitching")) {
        ctl_stitcher_post(c, id, 0);
    } else if (job_state_ended(state) || !state[0]) {
        if (!state[0])
            ctl_lost_job(c, id);
        ctl_stitcher_sweep(c); /* its stitch ahead, if any, goes */
        /* A cancelled job keeps its chunks so that `vrctl retry` can resume
         * it; storage/jobs/<id> may be deleted by hand. */
        rq_active_forget(c->q, id, NULL);
    }
}

int ctl_audit(struct ctl *c, int deep)
{
    vr_err e = { 0 };
    enum { MAX_ACTIVE = 100000 };
    char (*ids)[48] = malloc(MAX_ACTIVE * sizeof *ids);
    if (!ids)
        return vr_err_set(&e, VR_ENOMEM, "out of memory");
    int n = rq_active_list(c->q, ids, MAX_ACTIVE, &e);
    for (int i = 0; i < n; i++)
        if (job_id_valid(ids[i]))
            ctl_audit_job(c, ids[i], deep);
    free(ids);
    ctl_stitcher_sweep(c);
    ctl_cleanup_due(c);
    if (n < 0)
        return e.code;
    if (deep || c->retain_each_audit)
        ctl_retain(c);
    if (deep) {
        ctl_ack_orphans(c, RQ_JOBS, 60000);
        ctl_ack_orphans(c, RQ_RESULTS, 60000);
        /* a live controller handles a report in milliseconds: one pending
         * for seconds was read by a controller that died (ctl_reclaim
         * handles them too, before it takes leases for lapsed) */
        ctl_ack_orphans(c, RQ_REPORTS, ctl_orphan_report_idle_ms(c));
        ctl_noack_sweep(c);
        rq_trim_safe(c->q, RQ_CHUNKS, NULL);
        rq_trim_safe(c->q, RQ_CHUNKS_HI, NULL);
        rq_trim_safe(c->q, RQ_RESULTS, NULL);
        rq_trim_safe(c->q, RQ_REPORTS, NULL);
        /* a claim's consumer holds nothing once its entry is acked */
        rq_consumers_sweep(c->q, RQ_CHUNKS, CTL_CONSUMER_IDLE_MS, NULL);
        rq_consumers_sweep(c->q, RQ_CHUNKS_HI, CTL_CONSUMER_IDLE_MS, NULL);
        rq_trim_safe(c->q, RQ_JOBS, NULL);
        /* jobs recorded before the state key (an upgrade): workers read it */
        if (rq_jstate_backfill(c->q, NULL) > 0)
            log_info("controller %s: state keys written for jobs recorded without them", c->name);
    }
    return 0;
}

/*
 * ctl_audit.c - the controller's periodic repairs: reclaim chunks whose lease
 * lapsed, walk every active job against its manifest (lost XADDs, finished
 * jobs, jobs a dead controller held, cancelled jobs), acknowledge what dead
 * controllers left pending, and trim the streams without dropping pending
 * work. Results from workers are handled here too.
 */
#include "ctl.h"

#include "job.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- results ---- */

int ctl_result(struct ctl *c, const char *job, int idx, const char *kind)
{
    if (strcmp(kind, "dead") == 0) {
        char ck[128], err[400] = "", att[16] = "?";
        rq_key_chunk(ck, sizeof ck, job, idx);
        rq_hget(c->q, ck, "error", err, sizeof err, NULL);
        rq_hget(c->q, ck, "attempts", att, sizeof att, NULL);
        char reason[512];
        snprintf(reason, sizeof reason, "chunk %d failed %s times, dead-lettered: %s", idx, att, err);
        return ctl_job_fail(c, job, reason);
    }
    rq_event(c->q, job, "chunk %d done", idx);
    return ctl_job_finish(c, job);
}

/* ---- leases ---- */

static int ctl_reclaim_stream(struct ctl *c, const char *stream)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(c->q, &e, "XPENDING %s %s IDLE %lld - + 100", stream, RQ_G_WORKERS,
                           c->lease_ms);
    if (!r)
        return e.code;
    int n = 0;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return vr_err_set(&e, VR_EFORMAT, "XPENDING: unexpected reply");
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *p = r->element[i];
        char id[RQ_ID_MAX], owner[128];
        if (p->type != REDIS_REPLY_ARRAY || p->elements != 4 ||
            rq_reply_str(p->element[0], id, sizeof id, NULL) <= 0 ||
            rq_reply_str(p->element[1], owner, sizeof owner, NULL) <= 0)
            continue;
        redisReply *x = rq_cmd(c->q, &e, "XRANGE %s %s %s", stream, id, id);
        if (!x)
            break;
        char job[64] = "", idxs[16] = "";
        if (x->type == REDIS_REPLY_ARRAY && x->elements == 1 &&
            x->element[0]->elements == 2 && x->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
            const redisReply *f = x->element[0]->element[1];
            for (size_t k = 0; k + 1 < f->elements; k += 2) {
                if (f->element[k]->type != REDIS_REPLY_STRING)
                    continue;
                if (!strcmp(f->element[k]->str, "job"))
                    rq_reply_str(f->element[k + 1], job, sizeof job, NULL);
                else if (!strcmp(f->element[k]->str, "idx"))
                    rq_reply_str(f->element[k + 1], idxs, sizeof idxs, NULL);
            }
        }
        freeReplyObject(x);
        if (!job_id_valid(job) || !idxs[0]) {
            rq_ack(c->q, stream, RQ_G_WORKERS, id, NULL);
            continue;
        }
        char reason[256];
        snprintf(reason, sizeof reason, "worker %s stopped renewing its lease (killed or lost)", owner);
        int rc = rq_chunk_fail(c->q, stream, NULL, id, job, atoi(idxs), reason, c->lease_ms, &e);
        if (rc == 1) {
            log_warn("job %s chunk %s: %s; requeued", job, idxs, reason);
            rq_event(c->q, job, "chunk %s: %s; requeued", idxs, reason);
        } else if (rc == 2) {
            log_warn("job %s chunk %s: %s; dead-lettered", job, idxs, reason);
        }
        n++;
    }
    freeReplyObject(r);
    return n;
}

int ctl_reclaim(struct ctl *c)
{
    int a = ctl_reclaim_stream(c, RQ_CHUNKS_HI);
    int b = ctl_reclaim_stream(c, RQ_CHUNKS);
    return a < 0 ? a : b < 0 ? b : a + b;
}

/* ---- active jobs ---- */

static void ctl_audit_job(struct ctl *c, const char *id, int deep)
{
    char jk[128], state[32] = "";
    vr_err e = { 0 };
    rq_key_job(jk, sizeof jk, id);
    if (rq_hget(c->q, jk, "state", state, sizeof state, &e) < 0)
        return;
    if (!strcmp(state, "queued") || !strcmp(state, "splitting")) {
        ctl_job_start(c, id);
    } else if (!strcmp(state, "running")) {
        long long total = 0;
        if (deep && rq_hget_ll(c->q, jk, "chunks_total", &total, NULL) >= 0) {
            for (long long i = 0; i < total && i < 100000; i++) {
                int rc = rq_chunk_requeue_lost(c->q, id, (int)i, 0, &e);
                if (rc == 1) {
                    log_warn("job %s chunk %lld: its queue entry was lost; enqueued again", id, i);
                    rq_event(c->q, id, "chunk %lld: queue entry lost, enqueued again", i);
                } else if (rc < 0 && rc != VR_ENOENT) {
                    break;
                }
            }
        }
        ctl_job_finish(c, id);
    } else if (!strcmp(state, "stitching")) {
        ctl_job_finish(c, id);
    } else if (job_state_ended(state) || !state[0]) {
        /* A cancelled job keeps its chunks so that `vrctl retry` can resume
         * it; storage/jobs/<id> may be deleted by hand. */
        redisReply *r = rq_cmd(c->q, NULL, "SREM vr:active %s", id);
        if (r)
            freeReplyObject(r);
    }
}

/* Acknowledges jobs/results entries that controllers which died left
 * pending: the audit does their work from Redis state; acking lets the
 * streams be trimmed. */
static void ctl_ack_orphans(struct ctl *c, const char *stream)
{
    for (int i = 0; i < 100; i++) {
        struct rq_msg m;
        if (rq_autoclaim(c->q, stream, RQ_G_CONTROLLERS, c->name, 60000, &m, NULL) <= 0)
            return;
        rq_ack(c->q, stream, RQ_G_CONTROLLERS, m.id, NULL);
        rq_msg_release(&m);
    }
}

int ctl_audit(struct ctl *c, int deep)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(c->q, &e, "SMEMBERS vr:active");
    if (!r)
        return e.code;
    if (r->type == REDIS_REPLY_ARRAY && r->elements <= 100000) {
        for (size_t i = 0; i < r->elements; i++) {
            char id[64];
            if (rq_reply_str(r->element[i], id, sizeof id, NULL) > 0 && job_id_valid(id))
                ctl_audit_job(c, id, deep);
        }
    }
    freeReplyObject(r);
    if (deep) {
        ctl_ack_orphans(c, RQ_JOBS);
        ctl_ack_orphans(c, RQ_RESULTS);
        rq_trim_safe(c->q, RQ_CHUNKS, NULL);
        rq_trim_safe(c->q, RQ_CHUNKS_HI, NULL);
        rq_trim_safe(c->q, RQ_RESULTS, NULL);
        rq_trim_safe(c->q, RQ_JOBS, NULL);
    }
    return 0;
}

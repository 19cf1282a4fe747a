/*
 * rq_report.c - a job's chunk records read for the report (see rq_report.h).
 */
#include "rq_report.h"

#include "job.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "1700000000123-0" -> 1700000000123; 0 when it is not a stream id. */
static long long rq_id_ms(const char *id)
{
    char *end;
    long long ms = strtoll(id, &end, 10);
    return end != id && *end == '-' ? ms : 0;
}

void rq_chunk_rec_fill(struct rq_chunk_rec *c, const redisReply *r, struct metrics *m)
{
    enum { STATE, WORKER, ERROR, ENTRY, STARTED, DONE, FRAMES, ATTEMPTS, CUTS, CUT_FOR, LOST_BY,
           LOST_FROM, LOST_TO, LOST_FRAMES, METRICS, NFIELDS };
    if (r->type != REDIS_REPLY_ARRAY || r->elements != NFIELDS)
        return; /* a missing record: left as the caller set it */
    char v[METRICS][600];
    for (int k = 0; k < METRICS; k++)
        if (rq_reply_str(r->element[k], v[k], sizeof v[k], NULL) < 0)
            v[k][0] = '\0';
    snprintf(c->state, sizeof c->state, "%.15s", v[STATE]);
    snprintf(c->worker, sizeof c->worker, "%.127s", v[WORKER]);
    snprintf(c->error, sizeof c->error, "%.255s", v[ERROR]);
    c->queued_ms = rq_id_ms(v[ENTRY]);
    c->started_ms = rq_record_ll(v[STARTED]);
    c->done_ms = rq_record_ll(v[DONE]);
    c->frames = rq_record_ll(v[FRAMES]);
    c->attempts = rq_record_ll(v[ATTEMPTS]);
    c->cuts = rq_record_ll(v[CUTS]);
    snprintf(c->cut_for, sizeof c->cut_for, "%.127s", v[CUT_FOR]);
    snprintf(c->lost_by, sizeof c->lost_by, "%.127s", v[LOST_BY]);
    c->lost_from_ms = rq_record_ll(v[LOST_FROM]);
    c->lost_to_ms = rq_record_ll(v[LOST_TO]);
    c->lost_frames = rq_record_ll(v[LOST_FRAMES]);
    c->gpu_util = -1;
    const redisReply *mj = r->element[METRICS];
    if (mj->type == REDIS_REPLY_STRING && mj->len > 2 && mj->len <= METRICS_MAX_JSON &&
        metrics_from_string(m, mj->str, mj->len, NULL) == 0) {
        c->gpu_util = metrics_gpu_util(m);
        c->gpu_mem_peak = m->gpu_mem_peak;
    }
}

int rq_report_chunks(struct rq *q, const char *id, int n, struct rq_chunk_rec *recs,
                     vr_err *err)
{
    if (!job_id_valid(id))
        return vr_err_set(err, VR_EINVAL, "'%s' is not a job id", id);
    struct metrics *m = malloc(sizeof *m);
    if (!m)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char ck[128];
        rq_key_chunk(ck, sizeof ck, id, i);
        redisReply *r = rq_cmd(q, err, "HMGET %s state worker error entry started_ms done_ms "
                                       "frames attempts cuts cut_for lost_by lost_from lost_to "
                                       "lost_frames metrics", ck);
        if (!r) {
            rc = err ? err->code : VR_EREDIS;
            break;
        }
        memset(&recs[i], 0, sizeof recs[i]);
        recs[i].idx = i;
        recs[i].gpu_util = -1;
        rq_chunk_rec_fill(&recs[i], r, m);
        freeReplyObject(r);
    }
    free(m);
    return rc;
}

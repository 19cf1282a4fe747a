/*
 * rq_bounds.c - the cap on vr:reports (see rq_bounds.h).
 */
#include "rq_bounds.h"

long long rq_reports_cap(struct rq *q, vr_err *err)
{
    /* exact, not "~": the bound is the point, and a trim of a few entries a
     * pass is cheap */
    redisReply *r = rq_cmd(q, err, "XTRIM %s MAXLEN %d", RQ_REPORTS, RQ_REPORTS_MAXLEN);
    if (!r)
        return err ? err->code : VR_EREDIS;
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    return n;
}

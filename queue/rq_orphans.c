/*
 * rq_orphans.c - first sightings of job directories without a record
 * (rq_orphans.h).
 */
#include "rq_orphans.h"

int rq_job_exists(struct rq *q, const char *id)
{
    char key[128];
    rq_key_job(key, sizeof key, id);
    redisReply *r = rq_cmd(q, NULL, "EXISTS %s", key);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : -1;
    freeReplyObject(r);
    return rc;
}

int rq_orphan_dir_seen(struct rq *q, const char *id, long long *seen, long long *now)
{
    *now = rq_server_ms(q);
    long long v = 0;
    if (rq_hget_ll(q, RQ_ORPHAN_DIRS, id, &v, NULL) == 1 && v > 0 && v <= RQ_RECORD_MAX) {
        *seen = v; /* an unparsable or out-of-range value is written again */
        return 0;
    }
    /* HSET, not HSETNX (not in the controller's ACL): two controllers
     * racing here write times a moment apart, either is fine */
    redisReply *r = rq_cmd(q, NULL, "HSET %s %s %lld", RQ_ORPHAN_DIRS, id, *now);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    *seen = *now;
    return ok ? 0 : -1;
}

void rq_orphan_dir_forget(struct rq *q, const char *id)
{
    freeReplyObject(rq_cmd(q, NULL, "HDEL %s %s", RQ_ORPHAN_DIRS, id));
}

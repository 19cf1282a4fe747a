/*
 * rq_jstate.c - a job's state key, what workers read of a job (see
 * rq_jstate.h).
 */
#include "rq_jstate.h"

#include "rq_eval.h"

#include <stdio.h>

void rq_key_jstate(char *buf, size_t n, const char *job)
{
    snprintf(buf, n, RQ_JSTATE_PREFIX "%s", job);
}

int rq_jstate_get(struct rq *q, const char *id, char *buf, size_t n, vr_err *err)
{
    char k[128];
    rq_key_jstate(k, sizeof k, id);
    buf[0] = '\0';
    redisReply *r = rq_cmd(q, err, "GET %s", k);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    int rc = r->type == REDIS_REPLY_STRING ? rq_reply_str(r, buf, n, err) > 0 : 0;
    freeReplyObject(r);
    return rc;
}

/* KEYS: active. ARGV: the job key prefix, the state key prefix. */
static const char BACKFILL_LUA[] =
    "local n = 0\n"
    "for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
    "  local st = redis.call('HGET', ARGV[1] .. id, 'state')\n"
    "  if st and redis.call('EXISTS', ARGV[2] .. id) == 0 then\n"
    "    redis.call('SET', ARGV[2] .. id, st) n = n + 1 end\n"
    "end\n"
    "return n\n";

long long rq_jstate_backfill(struct rq *q, vr_err *err)
{
    const char *kv[] = { RQ_ACTIVE, "vr:job:", RQ_JSTATE_PREFIX };
    long long v = 0;
    int rc = rq_eval_int(q, err, BACKFILL_LUA, 1, kv, 3, &v);
    return rc < 0 ? rc : v;
}

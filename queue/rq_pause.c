/*
 * rq_pause.c - the fleet-wide pause on storage errors (see rq_pause.h).
 */
#include "rq_pause.h"

#include "rq_eval.h"

#include <stdio.h>
#include <string.h>

/* KEYS: seen, pause, backoff. ARGV: worker, reason, window ms, quorum,
 * first ms, max ms. Workers seen out of the window are dropped; a pause
 * clears the set, so the next one needs fresh failures after it. Returns
 * {ms, workers} (the first 8 named): ms 0 when it did not pause. */
static const char PAUSE_LUA[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('ZADD', KEYS[1], now, ARGV[1])\n"
    "local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))\n"
    "for _, w in ipairs(old) do redis.call('ZREM', KEYS[1], w) end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "local seen = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf')\n"
    "if #seen < tonumber(ARGV[4]) or redis.call('EXISTS', KEYS[2]) == 1 then return {0, ''} end\n"
    "local ms = tonumber(ARGV[5])\n"
    "local last = tonumber(redis.call('HGET', KEYS[3], 'ms') or '0') or 0\n"
    "if last > 0 then ms = math.min(last * 2, tonumber(ARGV[6])) end\n"
    "local who = table.concat(seen, ' ', 1, math.min(#seen, 8))\n"
    "if #seen > 8 then who = who .. ' and ' .. (#seen - 8) .. ' more' end\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('HSET', KEYS[2], 'reason', ARGV[2], 'workers', who, 'until_ms', now + ms)\n"
    "redis.call('PEXPIRE', KEYS[2], ms)\n"
    "redis.call('HSET', KEYS[3], 'ms', ms)\n"
    "redis.call('PEXPIRE', KEYS[3], ms * 4 + tonumber(ARGV[3]))\n"
    "return {ms, who}\n";

long long rq_pause_note(struct rq *q, const char *worker, const char *reason, char *workers,
                        size_t n, vr_err *err)
{
    char win[16], quorum[8], first[16], max[16];
    snprintf(win, sizeof win, "%d", RQ_PAUSE_WINDOW_MS);
    snprintf(quorum, sizeof quorum, "%d", RQ_PAUSE_QUORUM);
    snprintf(first, sizeof first, "%d", RQ_PAUSE_FIRST_MS);
    snprintf(max, sizeof max, "%d", RQ_PAUSE_MAX_MS);
    const char *kv[] = { RQ_PAUSE_SEEN, RQ_PAUSE, RQ_PAUSE_BACKOFF, worker, reason, win,
                         quorum, first, max };
    redisReply *r = rq_eval(q, err, PAUSE_LUA, 3, kv, 9);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    long long ms = 0;
    int rc = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        rq_reply_ll(r->element[0], &ms, err) < 0 ||
        rq_reply_str(r->element[1], workers, n, err) < 0)
        rc = vr_err_set(err, VR_EREDIS, "pause: unexpected reply");
    freeReplyObject(r);
    return rc < 0 ? rc : ms;
}

int rq_pause_get(struct rq *q, char *buf, size_t n, vr_err *err)
{
    return rq_hget(q, RQ_PAUSE, "reason", buf, n, err);
}

/*
 * rq_notify.c - the webhook deliveries' claim and round record, one Lua
 * script each (see rq_notify.h for the keys). The job-end scripts that
 * schedule a delivery are in rq_jobs.c (LUA_NOTIFY), beside the ends.
 *
 * Why scripts: the claim reads the first due id and moves its score in one
 * step, so two controllers never hold one delivery at once; the record
 * marks the URLs served, counts the round and either reschedules or
 * removes the delivery and writes its outcome into the job, so a crash
 * between those steps cannot leave a delivery both finished and queued.
 */
#include "rq_notify.h"

#include "rq_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Lua ---- */

/* KEYS: vr:notify. ARGV: now, until (now + lease), me. Returns {} when
 * nothing is due, {id} when id's record is gone (dropped), else
 * {id, {field, value, ...}} (the record, claimed). */
static const char CLAIM_LUA[] =
    "local m = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)\n"
    "if #m == 0 then return {} end\n"
    "local rk = KEYS[1] .. ':' .. m[1]\n"
    "if redis.call('EXISTS', rk) == 0 then redis.call('ZREM', KEYS[1], m[1]) return {m[1]} end\n"
    "redis.call('ZADD', KEYS[1], 'XX', ARGV[2], m[1])\n"
    "redis.call('HSET', rk, 'claim', ARGV[3])\n"
    "return {m[1], redis.call('HGETALL', rk)}\n";

/* KEYS: vr:notify, the record, the job. ARGV: id, me, now, next ('0':
 * finished), error, then a field per URL this round settled ("ok:<i>",
 * "failed:<i>"). Only the claim's holder reschedules: a controller whose
 * lease ran out records what it settled but leaves the time to the new
 * holder. The job's summary follows its newest end only (the record's seq
 * = notify_seq). */
static const char RECORD_LUA[] =
    "if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('ZREM', KEYS[1], ARGV[1]) return 3 end\n"
    "for i = 6, #ARGV do\n"
    "  if string.match(ARGV[i], '^[a-z]+:%d+$') then redis.call('HSET', KEYS[2], ARGV[i], 1) end\n"
    "end\n"
    "local a = redis.call('HINCRBY', KEYS[2], 'attempts', 1)\n"
    "local r = redis.call('HMGET', KEYS[2], 'urls', 'seq', 'claim')\n"
    "local left, failed, n = 0, 0, 0\n"
    "for u in string.gmatch(r[1] or '', '[^\\n]+') do\n"
    "  if redis.call('HEXISTS', KEYS[2], 'ok:' .. n) == 0 then\n"
    "    if redis.call('HEXISTS', KEYS[2], 'failed:' .. n) == 1 then failed = failed + 1\n"
    "    else left = left + 1 end\n"
    "  end\n"
    "  n = n + 1\n"
    "end\n"
    "local newest = redis.call('HGET', KEYS[3], 'notify_seq') == r[2]\n"
    "if left > 0 and ARGV[4] ~= '0' then\n"
    "  if r[3] == ARGV[2] then redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[1]) end\n"
    "  redis.call('HSET', KEYS[2], 'last_error', ARGV[5])\n"
    "  if newest then redis.call('HSET', KEYS[3], 'notify_attempts', a, 'notify_error', ARGV[5]) end\n"
    "  return 0\n"
    "end\n"
    "local ok = left == 0 and failed == 0\n"
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"
    "redis.call('DEL', KEYS[2])\n"
    "if newest then\n"
    "  redis.call('HSET', KEYS[3], 'notify_state', ok and 'delivered' or 'failed',\n"
    "             'notify_attempts', a, 'notify_ms', ARGV[3], 'notify_error', ok and '' or ARGV[5])\n"
    "end\n"
    "return ok and 1 or 2\n";

/* ---- the record ---- */

/* The URL list (one a line) into d->urls: at most RQ_NOTIFY_MAX_URLS, a
 * line over the limit kept as "" (refused by the sender, not cut). */
static void rq_notify_split_urls(const char *s, size_t len, struct rq_notify *d)
{
    size_t i = 0;
    while (i < len && d->nurls < RQ_NOTIFY_MAX_URLS) {
        size_t j = i;
        while (j < len && s[j] != '\n')
            j++;
        if (j > i) {
            char *u = d->urls[d->nurls++];
            if (j - i < RQ_NOTIFY_URL_MAX)
                snprintf(u, RQ_NOTIFY_URL_MAX, "%.*s", (int)(j - i), s + i);
            else
                u[0] = '\0';
        }
        i = j + 1;
    }
}

int rq_notify_fill(const redisReply *f, struct rq_notify *d, vr_err *err)
{
    for (size_t i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements; i += 2) {
        char k[32], v[512];
        const redisReply *val = f->element[i + 1];
        if (rq_reply_str(f->element[i], k, sizeof k, NULL) <= 0 || val->type != REDIS_REPLY_STRING)
            continue;
        if (!strcmp(k, "urls")) {
            if (val->len > RQ_MAX_FIELD)
                return vr_err_set(err, VR_EFORMAT, "delivery %s: URL list over %d bytes", d->id,
                                  RQ_MAX_FIELD);
            rq_notify_split_urls(val->str, val->len, d);
            continue;
        }
        int ok = !strncmp(k, "ok:", 3), failed = !strncmp(k, "failed:", 7);
        if (ok || failed) {
            int u = atoi(k + (ok ? 3 : 7));
            if (u >= 0 && u < RQ_NOTIFY_MAX_URLS)
                d->done[u] = ok ? RQ_NOTIFY_DELIVERED : RQ_NOTIFY_GIVEN_UP;
            continue;
        }
        /* a text over its buffer is cut (an error message), never refused */
        snprintf(v, sizeof v, "%.*s", (int)(val->len < sizeof v ? val->len : sizeof v - 1),
                 val->str);
        if (!strcmp(k, "job")) snprintf(d->job, sizeof d->job, "%.47s", v);
        else if (!strcmp(k, "seq")) d->seq = rq_record_ll(v);
        else if (!strcmp(k, "state")) snprintf(d->state, sizeof d->state, "%.15s", v);
        else if (!strcmp(k, "error")) snprintf(d->error, sizeof d->error, "%s", v);
        else if (!strcmp(k, "attempts")) d->attempts = (int)rq_record_ll(v);
        else if (!strcmp(k, "created_ms")) d->created_ms = rq_record_ll(v);
        else if (!strcmp(k, "started_ms")) d->started_ms = rq_record_ll(v);
        else if (!strcmp(k, "finished_ms")) d->finished_ms = rq_record_ll(v);
        else if (!strcmp(k, "frames_done")) d->frames_done = rq_record_ll(v);
        else if (!strcmp(k, "frames_total")) d->frames_total = rq_record_ll(v);
    }
    if (!d->job[0])
        return vr_err_set(err, VR_EFORMAT, "delivery %s: record without its job", d->id);
    return 0;
}

/* ---- the verbs ---- */

int rq_notify_claim(struct rq *q, const char *me, long long now_ms, long long lease_ms,
                    struct rq_notify *d, vr_err *err)
{
    char now[32], until[32];
    snprintf(now, sizeof now, "%lld", now_ms);
    snprintf(until, sizeof until, "%lld", now_ms + lease_ms);
    const char *kv[] = { RQ_NOTIFY, now, until, me };
    redisReply *r = rq_eval(q, err, CLAIM_LUA, 1, kv, 4);
    if (!r)
        return err ? err->code : VR_EREDIS;
    memset(d, 0, sizeof *d);
    int rc = 0;
    if (r->type != REDIS_REPLY_ARRAY)
        rc = vr_err_set(err, VR_EFORMAT, "notify claim script: unexpected reply");
    else if (r->elements >= 1 && rq_reply_str(r->element[0], d->id, sizeof d->id, err) < 0)
        rc = VR_EFORMAT;
    else if (r->elements == 2 && (rc = rq_notify_fill(r->element[1], d, err)) == 0)
        rc = 1;
    freeReplyObject(r);
    if (rc == VR_EFORMAT && d->id[0]) {
        /* a record no script wrote: dropped, or it would come back each lease */
        const char *argv[] = { "ZREM", RQ_NOTIFY, d->id };
        redisReply *z = rq_cmdargv(q, NULL, 3, argv, NULL);
        if (z)
            freeReplyObject(z);
    }
    return rc;
}

int rq_notify_record(struct rq *q, const struct rq_notify *d, const char *me,
                     const int *outcome, long long next_ms, const char *error, vr_err *err)
{
    char rk[128], jk[128], now[32], next[32], idx[RQ_NOTIFY_MAX_URLS][16];
    snprintf(rk, sizeof rk, "%s:%s", RQ_NOTIFY, d->id);
    rq_key_job(jk, sizeof jk, d->job);
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    snprintf(next, sizeof next, "%lld", next_ms > 0 ? next_ms : 0);
    const char *kv[3 + 5 + RQ_NOTIFY_MAX_URLS] = { RQ_NOTIFY, rk, jk, d->id, me, now, next,
                                                   error ? error : "" };
    int n = 8;
    for (int i = 0; i < d->nurls && i < RQ_NOTIFY_MAX_URLS; i++)
        if (outcome[i] == RQ_NOTIFY_DELIVERED || outcome[i] == RQ_NOTIFY_GIVEN_UP) {
            snprintf(idx[i], sizeof idx[i], "%s:%d",
                     outcome[i] == RQ_NOTIFY_DELIVERED ? "ok" : "failed", i);
            kv[n++] = idx[i];
        }
    long long v = 0;
    int rc = rq_eval_int(q, err, RECORD_LUA, 3, kv, n, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_notify_state(struct rq *q, const char *job, char *state, size_t n, char *error,
                    size_t en, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, job);
    if (error && en)
        error[0] = '\0';
    int rc = rq_hget(q, jk, "notify_state", state, n, err);
    if (rc > 0 && error && en)
        rq_hget(q, jk, "notify_error", error, en, NULL);
    return rc;
}

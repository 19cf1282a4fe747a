/*
 * rq_lease.c - leases on the chunk record's own clock, a claim's extra
 * entries and entries read with NOACK (see rq_lease.h).
 */
#include "rq_lease.h"

#include "job.h"
#include "rq_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's clock in ms, as `now` (workers' and controllers' clocks may be
 * skewed; the lease is kept on one). */
#define LUA_NOW \
    "local t = redis.call('TIME')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* KEYS: chunks, chunk. ARGV: group, consumer, id, frames (-1: not said). */
static const char STAMP_LUA[] =
    LUA_NOW
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n"
    "if #p ~= 1 or p[1][2] ~= ARGV[2] then return 0 end\n"
    "if redis.call('HGET', KEYS[2], 'entry') ~= ARGV[3] then return 0 end\n"
    "redis.call('HSET', KEYS[2], 'lease_by', ARGV[2] .. '/' .. ARGV[3], 'lease_ms', now)\n"
    "if tonumber(ARGV[4]) >= 0 then redis.call('HSET', KEYS[2], 'lease_frames', ARGV[4]) end\n"
    "return 1\n";

/* KEYS: chunk. ARGV: consumer, id, lease ms. 0 held, 1 lapsed, 2 stale;
 * a claim seen on the entry for the first time starts its lease now. */
static const char LAPSED_LUA[] =
    LUA_NOW
    "local cur = redis.call('HMGET', KEYS[1], 'entry', 'lease_by', 'lease_ms')\n"
    "if cur[1] ~= ARGV[2] then return 2 end\n"
    "local by = ARGV[1] .. '/' .. ARGV[2]\n"
    "if cur[2] ~= by then\n"
    "  redis.call('HSET', KEYS[1], 'lease_by', by, 'lease_ms', now, 'lease_frames', 0)\n"
    "  return 0 end\n"
    "if now - (tonumber(cur[3]) or 0) >= tonumber(ARGV[3]) then return 1 end\n"
    "return 0\n";

/* KEYS: chunks, chunk, job. ARGV: group, id, job, idx. A delivered entry
 * (the caller's check) that no one holds while its record still names it:
 * its reader used NOACK, and no report can ever prove a claim on it. */
static const char NOACK_LUA[] =
    "local cur = redis.call('HMGET', KEYS[2], 'entry', 'state')\n"
    "if cur[1] ~= ARGV[2] or cur[2] == 'done' or cur[2] == 'dead' then return 0 end\n"
    "local js = redis.call('HGET', KEYS[3], 'state')\n"
    "if js ~= 'running' and js ~= 'splitting' then return 0 end\n"
    "if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1) > 0 then return 0 end\n"
    "local nid = redis.call('XADD', KEYS[1], '*', 'job', ARGV[3], 'idx', ARGV[4])\n"
    "redis.call('HSET', KEYS[2], 'state', 'queued', 'entry', nid, 'stream', KEYS[1],\n"
    "           'error', 'its entry was read without a claim (NOACK); enqueued again')\n"
    "redis.call('HINCRBY', KEYS[2], 'noacks', 1)\n"
    "return 1\n";

int rq_lease_stamp(struct rq *q, const char *stream, const char *consumer, const char *id,
                   const char *job, int idx, long long frames, vr_err *err)
{
    char ck[128], fr[24];
    rq_key_chunk(ck, sizeof ck, job, idx);
    snprintf(fr, sizeof fr, "%lld", frames < 0 ? -1 : frames);
    const char *kv[] = { stream, ck, RQ_G_WORKERS, consumer, id, fr };
    long long v = 0;
    int rc = rq_eval_int(q, err, STAMP_LUA, 2, kv, 6, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_leases_lapsed(struct rq *q, const char *stream, long long lease_ms,
                     struct rq_pending *out, enum rq_lapse *why, int max, vr_err *err)
{
    /* every pending entry: its idle time says nothing (rq_lease.h) */
    int n = rq_pending_idle(q, stream, 0, out, max, err);
    char lease[32];
    snprintf(lease, sizeof lease, "%lld", lease_ms);
    int k = 0;
    for (int i = 0; i < n; i++) {
        enum rq_lapse w = RQ_LAPSE_NONE;
        for (int j = 0; j < i && !w; j++) /* XPENDING lists in id order: the first stays */
            if (!strcmp(out[j].consumer, out[i].consumer))
                w = RQ_LAPSE_EXTRA;
        if (!w) {
            char ck[128];
            rq_key_chunk(ck, sizeof ck, out[i].job, out[i].idx);
            const char *kv[] = { ck, out[i].consumer, out[i].id, lease };
            long long v = 0;
            if (rq_eval_int(q, err, LAPSED_LUA, 1, kv, 4, &v) < 0)
                return err ? err->code : VR_EREDIS;
            w = v == 1 ? RQ_LAPSE_LEASE : v == 2 ? RQ_LAPSE_STALE : RQ_LAPSE_NONE;
        }
        if (w) {
            why[k] = w;
            if (k != i)
                out[k] = out[i];
            k++;
        }
    }
    return n < 0 ? n : k;
}

/* The workers' group's last-delivered id of stream into ld: 1, 0 none, <0. */
static int rq_last_delivered(struct rq *q, const char *stream, char *ld, size_t n, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "XINFO GROUPS %s", stream);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int found = 0;
    for (size_t g = 0; r->type == REDIS_REPLY_ARRAY && g < r->elements && !found; g++) {
        const redisReply *e = r->element[g];
        if (e->type != REDIS_REPLY_ARRAY)
            continue;
        int ours = 0;
        const redisReply *last = NULL;
        for (size_t i = 0; i + 1 < e->elements; i += 2) {
            if (e->element[i]->type != REDIS_REPLY_STRING)
                continue;
            if (!strcmp(e->element[i]->str, "name") && e->element[i + 1]->type == REDIS_REPLY_STRING)
                ours = !strcmp(e->element[i + 1]->str, RQ_G_WORKERS);
            else if (!strcmp(e->element[i]->str, "last-delivered-id"))
                last = e->element[i + 1];
        }
        if (ours && last && rq_reply_str(last, ld, n, NULL) > 0)
            found = 1;
    }
    freeReplyObject(r);
    return found;
}

int rq_noack_sweep(struct rq *q, const char *stream, char *cursor, vr_err *err)
{
    char ld[RQ_ID_MAX];
    int rc = rq_last_delivered(q, stream, ld, sizeof ld, err);
    if (rc <= 0)
        return rc;
    char from[RQ_ID_MAX + 1];
    snprintf(from, sizeof from, "(%s", cursor[0] ? cursor : "0-0");
    redisReply *r = rq_cmd(q, err, "XRANGE %s %s %s COUNT 100", stream, from, ld);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int again = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        char id[RQ_ID_MAX], job[48], ck[128], jk[128], ix[16];
        int idx = 0;
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            rq_reply_str(e->element[0], id, sizeof id, NULL) <= 0)
            continue;
        snprintf(cursor, RQ_ID_MAX, "%s", id);
        if (!rq_entry_names(e, job, sizeof job, &idx))
            continue;
        rq_key_chunk(ck, sizeof ck, job, idx);
        rq_key_job(jk, sizeof jk, job);
        snprintf(ix, sizeof ix, "%d", idx);
        const char *kv[] = { stream, ck, jk, RQ_G_WORKERS, id, job, ix };
        long long v = 0;
        if (rq_eval_int(q, err, NOACK_LUA, 3, kv, 7, &v) < 0) {
            freeReplyObject(r);
            return err ? err->code : VR_EREDIS;
        }
        again += v == 1;
    }
    freeReplyObject(r);
    return again;
}

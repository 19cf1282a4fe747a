/*
 * rq_cut.c - see rq_cut.h: the cut script, what a worker reads of a cut,
 * and whether work waits in the chunk streams.
 */
#include "rq_cut.h"

#include "rq_eval.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rq_cut_end_text(const struct chunk_range *r, char *buf, size_t n)
{
    if (r->has_end)
        snprintf(buf, n, "%lld:%lld", (long long)r->end.pts, (long long)r->end.dts);
    else
        snprintf(buf, n, "open");
}

/* KEYS: chunk, job, priority chunks, then each tail's chunk. ARGV: entry,
 * seen end, head task, head end, max attempts, job, worker, slow ("1": the
 * chunk's `aside` names the entry its worker runs it under), then each
 * tail's task and index. */
static const char CUT_LUA[] =
    "local h = redis.call('HMGET', KEYS[1], 'state', 'entry', 'end')\n"
    "if h[1] ~= 'running' or h[2] ~= ARGV[1] or (h[3] or '') ~= ARGV[2] then return 0 end\n"
    "for i = 4, #KEYS do\n"
    "  if redis.call('EXISTS', KEYS[i]) == 1 then return 0 end\n"
    "end\n"
    "if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'task', ARGV[3], 'end', ARGV[4])\n"
    "redis.call('HINCRBY', KEYS[1], 'cuts', 1)\n"
    "if ARGV[8] == '1' then redis.call('HSET', KEYS[1], 'aside', ARGV[1]) end\n"
    "for i = 4, #KEYS do\n"
    "  local a = 9 + (i - 4) * 2\n"
    "  local nid = redis.call('XADD', KEYS[3], '*', 'job', ARGV[6], 'idx', ARGV[a + 1])\n"
    "  redis.call('HSET', KEYS[i], 'task', ARGV[a], 'state', 'queued', 'attempts', 0,\n"
    "             'max_attempts', ARGV[5], 'entry', nid, 'stream', KEYS[3], 'cut_for', ARGV[7])\n"
    "end\n"
    "redis.call('HINCRBY', KEYS[2], 'chunks_total', #KEYS - 3)\n"
    "redis.call('HINCRBY', KEYS[2], 'cuts', #KEYS - 3)\n"
    "return 1\n";

int rq_chunk_cut_tails(struct rq *q, const char *job, int idx, const char *entry,
                       const char *seen_end, const char *head_task, const char *head_end,
                       int ntails, const int *tail_idx, const char *const *tail_task,
                       int max_attempts, const char *worker, int slow, vr_err *err)
{
    if (ntails < 1 || ntails > RQ_CUT_TAILS_MAX)
        return vr_err_set(err, VR_EINVAL, "a cut queues 1..%d tails, not %d", RQ_CUT_TAILS_MAX,
                          ntails);
    char keys[3 + RQ_CUT_TAILS_MAX][128], ma[16], ti[RQ_CUT_TAILS_MAX][16];
    const char *kv[3 + RQ_CUT_TAILS_MAX + 8 + 2 * RQ_CUT_TAILS_MAX];
    rq_key_chunk(keys[0], sizeof keys[0], job, idx);
    rq_key_job(keys[1], sizeof keys[1], job);
    snprintf(keys[2], sizeof keys[2], "%s", RQ_CHUNKS_HI);
    snprintf(ma, sizeof ma, "%d", max_attempts);
    int k = 0;
    for (int i = 0; i < 3 + ntails; i++) {
        if (i >= 3)
            rq_key_chunk(keys[i], sizeof keys[i], job, tail_idx[i - 3]);
        kv[k++] = keys[i];
    }
    const char *fixed[] = { entry, seen_end, head_task, head_end, ma, job, worker,
                            slow ? "1" : "0" };
    for (int i = 0; i < 8; i++)
        kv[k++] = fixed[i];
    for (int i = 0; i < ntails; i++) {
        snprintf(ti[i], sizeof ti[i], "%d", tail_idx[i]);
        kv[k++] = tail_task[i];
        kv[k++] = ti[i];
    }
    long long v = 0;
    int rc = rq_eval_int(q, err, CUT_LUA, 3 + ntails, kv, k, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_chunk_cut(struct rq *q, const char *job, int idx, const char *entry,
                 const char *seen_end, const char *head_task, const char *head_end,
                 int tail_idx, const char *tail_task, int max_attempts, const char *worker,
                 int slow, vr_err *err)
{
    const char *tt[] = { tail_task };
    return rq_chunk_cut_tails(q, job, idx, entry, seen_end, head_task, head_end, 1, &tail_idx,
                              tt, max_attempts, worker, slow, err);
}

int rq_cut_peek(struct rq *q, const char *job, int idx, char *end, size_t n, char *task,
                size_t tn, vr_err *err)
{
    char ck[128];
    rq_key_chunk(ck, sizeof ck, job, idx);
    end[0] = '\0';
    int rc = rq_hget(q, ck, "end", end, n, err);
    if (rc <= 0 || !end[0]) {
        end[0] = '\0';
        return rc < 0 ? rc : 0;
    }
    rc = rq_hget(q, ck, "task", task, tn, err);
    return rc < 0 ? rc : rc > 0;
}

int rq_cut_aside(struct rq *q, const char *job, int idx, const char *entry, vr_err *err)
{
    char ck[128], aside[RQ_ID_MAX] = "";
    rq_key_chunk(ck, sizeof ck, job, idx);
    int rc = rq_hget(q, ck, "aside", aside, sizeof aside, err);
    return rc < 0 ? rc : rc > 0 && !strcmp(aside, entry);
}

/* KEYS: chunk, job. What the cut needs of a running chunk, in one call:
 * its entry, end and task, and its job's piece_ms; {} when it is not
 * running or its job is not elastic. */
static const char RUNNING_LUA[] =
    "local h = redis.call('HMGET', KEYS[1], 'state', 'entry', 'end', 'task')\n"
    "local ms = redis.call('HGET', KEYS[2], 'piece_ms')\n"
    "if h[1] ~= 'running' or not h[2] or not h[4] or not ms then return {} end\n"
    "return { h[2], h[3] or '', h[4], ms }\n";

/* Copies reply r (text) into buf of n bytes: 1, or 0 when it is not text
 * or does not fit. */
static int rq_cut_text(const redisReply *r, char *buf, size_t n)
{
    if (r->type != REDIS_REPLY_STRING || r->len >= n)
        return 0;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    return 1;
}

int rq_cut_running(struct rq *q, const char *job, int idx, struct rq_cut_seen *seen,
                   char *task, size_t tn, vr_err *err)
{
    char ck[128], jk[128];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    const char *kv[] = { ck, jk };
    redisReply *r = rq_eval(q, err, RUNNING_LUA, 2, kv, 2);
    if (!r)
        return VR_EIO;
    char ms[32];
    char *end;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
             rq_cut_text(r->element[0], seen->entry, sizeof seen->entry) &&
             rq_cut_text(r->element[1], seen->end, sizeof seen->end) &&
             rq_cut_text(r->element[2], task, tn) && rq_cut_text(r->element[3], ms, sizeof ms);
    seen->piece_ms = ok ? strtoll(ms, &end, 10) : 0;
    ok = ok && !*end && seen->piece_ms > 0 && seen->piece_ms <= 3600000;
    freeReplyObject(r);
    return ok;
}

/* KEYS: the chunk streams. Undelivered entries: any stream whose workers'
 * group was not delivered its last entry (XINFO works on every Redis 5+;
 * its `lag` field is 7's). */
static const char WAITING_LUA[] =
    "for _, k in ipairs(KEYS) do\n"
    "  if redis.call('EXISTS', k) == 1 then\n"
    "    local info = redis.call('XINFO', 'STREAM', k)\n"
    "    local last\n"
    "    for i = 1, #info - 1, 2 do\n"
    "      if info[i] == 'last-generated-id' then last = info[i + 1] end\n"
    "    end\n"
    "    for _, g in ipairs(redis.call('XINFO', 'GROUPS', k)) do\n"
    "      local name, ld\n"
    "      for i = 1, #g - 1, 2 do\n"
    "        if g[i] == 'name' then name = g[i + 1] end\n"
    "        if g[i] == 'last-delivered-id' then ld = g[i + 1] end\n"
    "      end\n"
    "      if name == ARGV[1] and last and ld ~= last and\n"
    "         #redis.call('XRANGE', k, '(' .. ld, '+', 'COUNT', 1) > 0 then return 1 end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return 0\n";

int rq_chunks_waiting(struct rq *q, vr_err *err)
{
    const char *kv[] = { RQ_CHUNKS_HI, RQ_CHUNKS, RQ_G_WORKERS };
    long long v = 0;
    int rc = rq_eval_int(q, err, WAITING_LUA, 2, kv, 3, &v);
    return rc < 0 ? rc : (int)v;
}

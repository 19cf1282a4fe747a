/*
 * rq_submit.c - a submitter's own stream and its live jobs (see
 * rq_submit.h). The controller reads the streams with the stream helpers
 * (rq_stream.h) under its group; this file names the keys and keeps the
 * live set.
 */
#include "rq_submit.h"

#include "job.h"
#include "rq_eval.h"
#include "rq_jobs.h"
#include "rq_jstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rq_submitter_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n >= RQ_SUBMITTER_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_' || name[i] == '-'))
            return 0;
    return 1;
}

int rq_submitter_of_user(const char *user, char *name, size_t n)
{
    size_t p = strlen(RQ_SUBMITTER_USER);
    if (strncmp(user, RQ_SUBMITTER_USER, p) || !rq_submitter_name_valid(user + p))
        return 0;
    snprintf(name, n, "%s", user + p);
    return 1;
}

void rq_submit_new_id(const char *name, char *buf, size_t n)
{
    char tail[JOB_ID_MAX];
    job_new_id(tail, sizeof tail);
    size_t len = strlen(name), t = strlen(tail);
    size_t room = JOB_ID_MAX - 1 - len - 1; /* rq_submitter_name_valid: len <= 31, room >= 7 */
    snprintf(buf, n, "%s%c%s", name, RQ_SUBMITTER_ID_MARK, t > room ? tail + t - room : tail);
}

int rq_submit_id_of(const char *name, const char *id)
{
    size_t len = strlen(name);
    return job_id_valid(id) && !strncmp(id, name, len) && id[len] == RQ_SUBMITTER_ID_MARK &&
           id[len + 1];
}

void rq_submit_key(const char *name, char *key, size_t n)
{
    snprintf(key, n, "%s%s", RQ_SUBMIT_PREFIX, name);
}

int rq_submit_as(struct rq *q, const char *name, const char *id, const char *spec_json,
                 long long frames_est, int priority, char *entry, size_t n, vr_err *err)
{
    char key[64], fe[32], pr[16], cap[16];
    rq_submit_key(name, key, sizeof key);
    snprintf(fe, sizeof fe, "%lld", frames_est);
    snprintf(pr, sizeof pr, "%d", priority);
    snprintf(cap, sizeof cap, "%d", RQ_SUBMIT_STREAM_MAX);
    const char *argv[] = { "XADD", key, "MAXLEN", "~", cap, "*", "id", id, "spec", spec_json,
                           "frames_est", fe, "priority", pr };
    redisReply *r = rq_cmdargv(q, err, 14, argv, NULL);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    int rc = !entry || rq_reply_str(r, entry, n, err) > 0 ? 0 : VR_EREDIS;
    freeReplyObject(r);
    return rc;
}

/* 1 when the stream entry e is a job entry (no `cmd`) whose id is id. */
static int asked_entry(const redisReply *e, const char *id)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[1]->type != REDIS_REPLY_ARRAY)
        return 0;
    const redisReply *f = e->element[1];
    int match = 0;
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        const char *k = f->element[i]->str, *v = f->element[i + 1]->str;
        if (!k || !v)
            continue;
        if (!strcmp(k, "cmd"))
            return 0;
        match |= !strcmp(k, "id") && !strcmp(v, id);
    }
    return match;
}

int rq_submit_asked(struct rq *q, const char *name, const char *id, char *entry, size_t n,
                    vr_err *err)
{
    char key[64], cap[16];
    rq_submit_key(name, key, sizeof key);
    snprintf(cap, sizeof cap, "%d", RQ_SUBMIT_STREAM_MAX);
    const char *argv[] = { "XREVRANGE", key, "+", "-", "COUNT", cap };
    vr_err e = { 0 };
    redisReply *r = rq_cmdargv(q, &e, 6, argv, NULL);
    if (!r) { /* VR_EINVAL: this user may not read the stream */
        if (e.code == VR_EINVAL)
            return 0;
        if (err)
            *err = e;
        return e.code ? e.code : VR_EREDIS;
    }
    int found = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && !found; i++) {
        const redisReply *x = r->element[i];
        if (asked_entry(x, id) && x->element[0]->str) {
            found = 1;
            snprintf(entry, n, "%s", x->element[0]->str);
        }
    }
    freeReplyObject(r);
    return found;
}

void rq_submit_trim(struct rq *q, const char *name)
{
    char key[64];
    rq_submit_key(name, key, sizeof key);
    freeReplyObject(rq_cmd(q, NULL, "XTRIM %s MAXLEN ~ %d", key, RQ_SUBMIT_STREAM_MAX));
}

long long rq_owned_live(struct rq *q, const char *name, vr_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", RQ_OWNED_PREFIX, name);
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", key);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    long long live = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        char id[48], st[32] = "";
        int ok = rq_reply_str(r->element[i], id, sizeof id, NULL) > 0 && job_id_valid(id);
        int found = ok ? rq_job_state(q, id, st, sizeof st, err) : 0;
        if (found < 0) {
            freeReplyObject(r);
            return found;
        }
        if (!found || job_state_ended(st)) { /* ended, gone, or no job id at all */
            redisReply *d = rq_cmd(q, NULL, "SREM %s %b", key, r->element[i]->str,
                                   r->element[i]->len);
            freeReplyObject(d);
            continue;
        }
        live++;
    }
    freeReplyObject(r);
    return live;
}

int rq_owned_list(struct rq *q, const char *name, char (*ids)[48], int max, vr_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", RQ_OWNED_PREFIX, name);
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", key);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    int n = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++)
        if (rq_reply_str(r->element[i], ids[n], 48, NULL) > 0 && job_id_valid(ids[n]))
            n++;
    freeReplyObject(r);
    return n;
}

int rq_owned_add(struct rq *q, const char *name, const char *id, vr_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", RQ_OWNED_PREFIX, name);
    redisReply *r = rq_cmd(q, err, "SADD %s %s", key, id);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

/* ---- the controller's record of a submitter's job ---- */

/* KEYS: job, index, active, jobs, owned. ARGV: id, spec, created, frames,
 * priority, owner ("": the operator's job, none), refusal ("" admitted).
 * See rq_submit_record. */
static const char RECORD_LUA[] =
    LUA_JSTATE
    "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
    "  local f = redis.call('HMGET', KEYS[1], 'owner', 'state', 'spec')\n"
    "  if (f[1] or '') ~= ARGV[6] or f[3] ~= ARGV[2] then return 0 end\n"
    "  if f[2] == 'queued' and redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then return 3 end\n"
    "  return 2\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'spec', ARGV[2], 'state', 'queued', 'created_ms', ARGV[3],\n"
    "           'chunks_done', 0, 'frames_done', 0, 'frames_total', ARGV[4], 'priority', ARGV[5])\n"
    "if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'owner', ARGV[6]) end\n"
    "jstate(KEYS[1], 'queued')\n"
    "local okj, sp = pcall(cjson.decode, ARGV[2])\n"
    "if okj and type(sp) == 'table' and type(sp.notify) == 'string' and sp.notify ~= '' then\n"
    "  redis.call('HSET', KEYS[1], 'notify', sp.notify) end\n"
    "redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])\n"
    "if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[7]) return 1 end\n"
    "redis.call('SADD', KEYS[3], ARGV[1])\n"
    "if ARGV[6] ~= '' then redis.call('SADD', KEYS[5], ARGV[1]) end\n"
    "redis.call('XADD', KEYS[4], '*', 'job', ARGV[1])\n"
    "return 1\n";

int rq_submit_record(struct rq *q, const char *owner, const char *id, const char *spec_json,
                     long long frames_est, int priority, const char *refusal,
                     char *refusal_out, size_t rn, vr_err *err)
{
    char jk[128], owned[64], created[32], frames[32], prio[16];
    rq_key_job(jk, sizeof jk, id);
    snprintf(owned, sizeof owned, "%s%s", RQ_OWNED_PREFIX, owner);
    snprintf(created, sizeof created, "%lld", rq_now_ms());
    snprintf(frames, sizeof frames, "%lld", frames_est);
    snprintf(prio, sizeof prio, "%d", priority);
    const char *kv[] = { jk, RQ_INDEX, RQ_ACTIVE, RQ_JOBS, owned, id, spec_json, created,
                         frames, prio, owner, refusal };
    long long v = 0;
    int rc = rq_eval_int(q, err, RECORD_LUA, 5, kv, 12, &v);
    if (rc < 0)
        return rc;
    refusal_out[0] = '\0';
    if (v == 3 && rq_hget(q, jk, "error", refusal_out, rn, err) < 0)
        return err && err->code ? err->code : VR_EREDIS;
    return (int)v;
}

/* ---- cancel and retry through the stream ---- */

int rq_submit_cmd(struct rq *q, const char *name, const char *cmd, const char *id, char *entry,
                  size_t n, vr_err *err)
{
    char key[64], cap[16];
    rq_submit_key(name, key, sizeof key);
    snprintf(cap, sizeof cap, "%d", RQ_SUBMIT_STREAM_MAX);
    const char *argv[] = { "XADD", key, "MAXLEN", "~", cap, "*", "cmd", cmd, "id", id };
    redisReply *r = rq_cmdargv(q, err, 10, argv, NULL);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    int rc = rq_reply_str(r, entry, n, err) > 0 ? 0 : VR_EREDIS;
    freeReplyObject(r);
    return rc;
}

static void rq_reply_key(const char *name, const char *entry, char *key, size_t n)
{
    snprintf(key, n, "%s%s:%s", RQ_REPLY_PREFIX, name, entry);
}

void rq_submit_answer(struct rq *q, const char *name, const char *entry, int code,
                      const char *text)
{
    char key[128], v[600];
    rq_reply_key(name, entry, key, sizeof key);
    snprintf(v, sizeof v, "%d %.580s", code, text);
    freeReplyObject(rq_cmd(q, NULL, "HSET %s text %s", key, v));
    freeReplyObject(rq_cmd(q, NULL, "PEXPIRE %s %d", key, RQ_REPLY_TTL_MS));
}

int rq_submit_answer_get(struct rq *q, const char *name, const char *entry, int *code,
                         char *text, size_t n, vr_err *err)
{
    char key[128], v[600];
    rq_reply_key(name, entry, key, sizeof key);
    int rc = rq_hget(q, key, "text", v, sizeof v, err);
    if (rc <= 0)
        return rc;
    char *end = NULL;
    long c = strtol(v, &end, 10);
    *code = c >= 0 && c <= 2 && end && *end == ' ' ? (int)c : 1;
    snprintf(text, n, "%s", end && *end == ' ' ? end + 1 : v);
    return 1;
}

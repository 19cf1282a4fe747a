/*
 * rq_jobs.c - a job's state changes, each one Lua script that checks the
 * state it leaves (rq_jobs.h has the diagram), and the reads the other
 * rooms make of a job record.
 *
 * Why scripts: a check in one command and a write in the next lets another
 * party act in between. The case that happened: `vrctl cancel` during a
 * stitch set `cancelled`, then the controller's unconditional `state done`
 * overwrote it, and the user's cancel was lost. Now done moves only
 * `stitching` held by this controller, and cancel only a live state, so
 * whichever runs first on the server wins and the other sees it lost.
 *
 * Fencing: a controller that holds a job (splitting or stitching) got a
 * token with its claim (the job's `claim` counter, raised by each claim).
 * running, reopen, done, holds and a holder's fail check the token as well
 * as the name, so a controller paused past its heartbeat, whose job another
 * controller claimed meanwhile, is refused when it wakes (issue 26,
 * finding 3: such a controller published over the other's output, then
 * deleted it, and could fail a job it no longer held).
 */
#include "rq_jobs.h"

#include "rq_eval.h"
#include "rq_jstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This process's --notify (rq_job_notify_global): set once at start. */
static int rq_notify_global;

/* ---- Lua ---- */

/* A job has ended: the scripts' shared test (= job_state_ended). */
#define LUA_ENDED "local function ended(s) return s == 'done' or s == 'failed' or s == 'cancelled' end\n"

/* A job has ended (done, failed or cancelled) and has webhooks (its own
 * `notify` field, one URL a line, and `global` '1' when the controller has
 * a --notify of its own: the line "@controller" stands for it, so its URL
 * and query token never enter a record): the end's delivery "<id>:<seq>"
 * is recorded with what its event says and queued in vr:notify, due now
 * (rq_notify.h). Called by the controller's scripts only (done, fail, and
 * a cancel it took from vr:cancels), so every delivery record is one the
 * controller wrote: the vrctl user may not write vr:notify* (issue 41,
 * finding 4). `notify_end` keeps the end (finished_ms) last scheduled. */
#define LUA_NOTIFY \
    "local function notify(jk, zk, id, now, global)\n" \
    "  local urls = redis.call('HGET', jk, 'notify') or ''\n" \
    "  if global == '1' then urls = urls .. (urls ~= '' and '\\n' or '') .. '@controller' end\n" \
    "  if urls == '' then return end\n" \
    "  local seq = redis.call('HINCRBY', jk, 'notify_seq', 1)\n" \
    "  local did = id .. ':' .. seq\n" \
    "  local f = redis.call('HMGET', jk, 'state', 'error', 'created_ms', 'started_ms',\n" \
    "                       'finished_ms', 'frames_done', 'frames_total')\n" \
    "  redis.call('HSET', zk .. ':' .. did, 'job', id, 'seq', seq, 'urls', urls, 'attempts', 0,\n" \
    "             'state', f[1], 'error', f[2] or '', 'created_ms', f[3] or 0,\n" \
    "             'started_ms', f[4] or 0, 'finished_ms', f[5] or 0,\n" \
    "             'frames_done', f[6] or 0, 'frames_total', f[7] or 0)\n" \
    "  redis.call('ZADD', zk, now, did)\n" \
    "  redis.call('HSET', jk, 'notify_state', 'pending', 'notify_attempts', 0, 'notify_error', '',\n" \
    "             'notify_end', f[5] or 0)\n" \
    "end\n"

/* The job is held by controller ARGV[me] with claim token ARGV[tok]. */
#define LUA_HELD(me, tok) \
    "local function held(jk)\n" \
    "  local h = redis.call('HMGET', jk, 'controller', 'claim')\n" \
    "  return h[1] == " me " and h[2] == " tok "\n" \
    "end\n"

/* KEYS: job, index, active, jobs. ARGV: id, spec, created, frames_est,
 * priority. The spec's webhook (checked by vrctl; the controller that
 * starts the job checks it again and rewrites the list) becomes the job's
 * `notify`, so a job cancelled before any controller saw it still has it. */
static const char SUBMIT_LUA[] =
    LUA_JSTATE
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'spec', ARGV[2], 'state', 'queued', 'created_ms', ARGV[3],\n"
    "           'chunks_done', 0, 'frames_done', 0, 'frames_total', ARGV[4], 'priority', ARGV[5])\n"
    "local okj, sp = pcall(cjson.decode, ARGV[2])\n"
    "if okj and type(sp) == 'table' and type(sp.notify) == 'string' and sp.notify ~= '' then\n"
    "  redis.call('HSET', KEYS[1], 'notify', sp.notify) end\n"
    "redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])\n"
    "jstate(KEYS[1], 'queued')\n"
    "redis.call('SADD', KEYS[3], ARGV[1])\n"
    "redis.call('XADD', KEYS[4], '*', 'job', ARGV[1])\n"
    "return 1\n";

/* KEYS: job. ARGV: from, to, me, token, then field/value pairs to set.
 * Moves a job this controller holds (under that claim) in state `from` to
 * `to`; `to` '' moves nothing (the check alone: rq_job_holds). */
static const char MOVE_HELD_LUA[] =
    LUA_JSTATE
    LUA_HELD("ARGV[3]", "ARGV[4]")
    "if redis.call('HGET', KEYS[1], 'state') ~= ARGV[1] or not held(KEYS[1]) then return 0 end\n"
    "if ARGV[2] == '' then return 1 end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[2])\n"
    "jstate(KEYS[1], ARGV[2])\n"
    "for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end\n"
    "return 1\n";

/* KEYS: job, active, notify, cleanup, ended. ARGV: id, me, now, stitch_s,
 * metrics, token, cleanup due (ms), global (LUA_NOTIFY). Returns {1} done, {0, held}: not done,
 * and whether the claim was still this one's (the job ended meanwhile) or
 * another's (taken over). The job's chunk files are removed later, from
 * the cleanup set (rq_cleanup_due), in the same script as the done. */
static const char DONE_LUA[] =
    LUA_JSTATE
    LUA_NOTIFY
    LUA_HELD("ARGV[2]", "ARGV[6]")
    "local mine = held(KEYS[1])\n"
    "if redis.call('HGET', KEYS[1], 'state') ~= 'stitching' or not mine then\n"
    "  return {0, mine and '1' or '0'} end\n"
    "redis.call('HSET', KEYS[1], 'state', 'done', 'finished_ms', ARGV[3], 'stitch_s', ARGV[4],\n"
    "           'metrics', ARGV[5])\n"
    "jstate(KEYS[1], 'done')\n"
    "redis.call('SREM', KEYS[2], ARGV[1])\n"
    "redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])\n"
    "redis.call('HINCRBY', KEYS[5], 'jobs_done', 1)\n"
    "notify(KEYS[1], KEYS[3], ARGV[1], ARGV[3], ARGV[8])\n"
    "return {1}\n";

/* KEYS: job, active, notify (vr:cancels when me is ''), ended, cleanup.
 * ARGV: id, to (failed | cancelled), reason, now, me (''; vrctl's cancel),
 * token ('0': not a holder's failure, e.g. a dead chunk; else the job must
 * still be held under it), global, cleanup due (ms: its chunk objects are
 * swept then, ctl_chunk_gc.c). Returns {1} moved, {0, state} already ended, {2} held
 * by another claim now, {-1} no such job. A cancel without a controller
 * (vrctl's) schedules no delivery: it leaves the id in vr:cancels, where a
 * controller takes it (CANCELS_LUA). */
static const char END_LUA[] =
    LUA_JSTATE
    LUA_ENDED
    LUA_NOTIFY
    LUA_HELD("ARGV[5]", "ARGV[6]")
    "local st = redis.call('HGET', KEYS[1], 'state')\n"
    "if not st then redis.call('SREM', KEYS[2], ARGV[1]) return {-1} end\n"
    "if ended(st) then return {0, st} end\n"
    "if ARGV[6] ~= '0' and not held(KEYS[1]) then return {2} end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[2], 'error', ARGV[3], 'finished_ms', ARGV[4])\n"
    "jstate(KEYS[1], ARGV[2])\n"
    "if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'controller', ARGV[5]) end\n"
    "redis.call('SREM', KEYS[2], ARGV[1])\n"
    "redis.call('HINCRBY', KEYS[4], 'jobs_' .. ARGV[2], 1)\n"
    "redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1])\n"
    "if ARGV[5] == '' then redis.call('SADD', KEYS[3], ARGV[1])\n"
    "else notify(KEYS[1], KEYS[3], ARGV[1], ARGV[4], ARGV[7]) end\n"
    "return {1}\n";

/* KEYS: cancels, notify. ARGV: now, global, the job key prefix. Takes up
 * to 64 ids from vr:cancels and schedules the delivery of each that the
 * record says is cancelled and whose end was not scheduled yet; only a
 * `cancelled` event can come out of this (a done or failed one only from
 * the controller's own done and fail). Returns the ids taken. */
static const char CANCELS_LUA[] =
    LUA_NOTIFY
    "local ids = redis.call('SPOP', KEYS[1], 64)\n"
    "for _, id in ipairs(ids) do\n"
    "  local jk = ARGV[3] .. id\n"
    "  local f = redis.call('HMGET', jk, 'state', 'finished_ms', 'notify_end')\n"
    "  if f[1] == 'cancelled' and f[2] ~= f[3] then notify(jk, KEYS[2], id, ARGV[1], ARGV[2]) end\n"
    "end\n"
    "return #ids\n";

/* KEYS: job, active. ARGV: id. Returns {1, chunks_total}, {0, state} or {-1}.
 * notify_end cleared: the job's next end is a new one to notify. */
static const char RETRY_LUA[] =
    LUA_JSTATE
    "local st = redis.call('HMGET', KEYS[1], 'state', 'chunks_total')\n"
    "if not st[1] then return {-1} end\n"
    "if st[1] ~= 'failed' and st[1] ~= 'cancelled' then return {0, st[1]} end\n"
    "local total = tonumber(st[2] or '0') or 0\n"
    "local to = total > 0 and 'running' or 'queued'\n"
    "redis.call('HSET', KEYS[1], 'state', to, 'error', '', 'finished_ms', 0, 'notify_end', '')\n"
    "jstate(KEYS[1], to)\n"
    "redis.call('SADD', KEYS[2], ARGV[1])\n"
    "return {1, tostring(total)}\n";

/* KEYS: job, index, active, cleanup, events. ARGV: id, ended before (ms;
 * 0: whenever), the chunk key prefix "vr:chunk:<id>:". Deletes an ended
 * job's records: {1, chunks}; {0, state} live; {2} ended later; {-1} none
 * (its index entry dropped). UNLINK: a job of many chunks is freed off
 * the server's main thread. */
static const char PURGE_LUA[] =
    LUA_ENDED
    "local f = redis.call('HMGET', KEYS[1], 'state', 'finished_ms', 'chunks_total')\n"
    "if not f[1] then redis.call('ZREM', KEYS[2], ARGV[1]) return {-1} end\n"
    "if not ended(f[1]) then return {0, f[1]} end\n"
    "local before = tonumber(ARGV[2])\n"
    "if before > 0 and (tonumber(f[2] or '0') or 0) >= before then return {2} end\n"
    "local total = math.min(tonumber(f[3] or '0') or 0, 100000)\n" /* JOB_MAX_CHUNKS */
    "for i = 0, total - 1, 1000 do\n"
    "  local ks = {}\n"
    "  for k = i, math.min(i + 999, total - 1) do ks[#ks + 1] = ARGV[3] .. k end\n"
    "  redis.call('UNLINK', unpack(ks))\n"
    "end\n"
    "redis.call('UNLINK', KEYS[1], KEYS[5], '" RQ_JSTATE_PREFIX "' .. ARGV[1])\n"
    "redis.call('ZREM', KEYS[2], ARGV[1])\n"
    "redis.call('SREM', KEYS[3], ARGV[1])\n"
    "redis.call('ZREM', KEYS[4], ARGV[1])\n"
    "return {1, tostring(total)}\n";

/* ---- replies ---- */

/* A script's {code[, text]} reply: the code, the text into buf. */
static int rq_code_text(redisReply *r, char *buf, size_t n, vr_err *err)
{
    if (buf && n)
        buf[0] = '\0';
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        return vr_err_set(err, VR_EFORMAT, "redis script: unexpected reply");
    }
    int code = (int)r->element[0]->integer;
    if (r->elements > 1 && buf && rq_reply_str(r->element[1], buf, n, err) < 0)
        code = VR_EFORMAT;
    freeReplyObject(r);
    return code;
}

/* ---- the state changes ---- */

int rq_job_submit(struct rq *q, const char *id, const char *spec_json, long long created_ms,
                  long long frames_est, int priority, vr_err *err)
{
    char jk[128], created[32], frames[32], prio[16];
    rq_key_job(jk, sizeof jk, id);
    snprintf(created, sizeof created, "%lld", created_ms);
    snprintf(frames, sizeof frames, "%lld", frames_est);
    snprintf(prio, sizeof prio, "%d", priority);
    const char *kv[] = { jk, RQ_INDEX, RQ_ACTIVE, RQ_JOBS, id, spec_json, created, frames, prio };
    long long v = 0;
    int rc = rq_eval_int(q, err, SUBMIT_LUA, 4, kv, 9, &v);
    if (rc < 0)
        return rc;
    return v == 1 ? 0 : vr_err_set(err, VR_EINVAL, "job %s exists already", id);
}

int rq_job_running(struct rq *q, const char *id, const char *me, long long token,
                   int chunks_total, long long frames_total, double split_s, vr_err *err)
{
    char jk[128], tok[32], total[16], frames[32], secs[32];
    rq_key_job(jk, sizeof jk, id);
    snprintf(tok, sizeof tok, "%lld", token);
    snprintf(total, sizeof total, "%d", chunks_total);
    snprintf(frames, sizeof frames, "%lld", frames_total);
    snprintf(secs, sizeof secs, "%.3f", split_s);
    const char *kv[] = { jk, "splitting", "running", me, tok, "chunks_total", total,
                         "frames_total", frames, "split_s", secs };
    long long v = 0;
    int rc = rq_eval_int(q, err, MOVE_HELD_LUA, 1, kv, 11, &v);
    return rc < 0 ? rc : (int)v;
}

/* MOVE_HELD_LUA from `from` to `to` ("" = the check alone) without fields. */
static int rq_job_move_held(struct rq *q, const char *id, const char *from, const char *to,
                            const char *me, long long token, vr_err *err)
{
    char jk[128], tok[32];
    rq_key_job(jk, sizeof jk, id);
    snprintf(tok, sizeof tok, "%lld", token);
    const char *kv[] = { jk, from, to, me, tok };
    long long v = 0;
    int rc = rq_eval_int(q, err, MOVE_HELD_LUA, 1, kv, 5, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_job_reopen(struct rq *q, const char *id, const char *me, long long token, vr_err *err)
{
    return rq_job_move_held(q, id, "stitching", "running", me, token, err);
}

int rq_job_holds(struct rq *q, const char *id, const char *state, const char *me,
                 long long token, vr_err *err)
{
    return rq_job_move_held(q, id, state, "", me, token, err);
}

int rq_job_done(struct rq *q, const char *id, const char *me, long long token, double stitch_s,
                const char *metrics_json, int *still_held, vr_err *err)
{
    char jk[128], now[32], secs[32], tok[32], due[32], held[4] = "";
    rq_key_job(jk, sizeof jk, id);
    long long t = rq_now_ms();
    snprintf(now, sizeof now, "%lld", t);
    snprintf(secs, sizeof secs, "%.3f", stitch_s);
    snprintf(tok, sizeof tok, "%lld", token);
    snprintf(due, sizeof due, "%lld", t + RQ_CLEANUP_DELAY_MS);
    const char *kv[] = { jk, RQ_ACTIVE, RQ_NOTIFY, RQ_CLEANUP, RQ_ENDED, id, me, now, secs,
                         metrics_json ? metrics_json : "{}", tok, due, rq_notify_global ? "1" : "0" };
    redisReply *r = rq_eval(q, err, DONE_LUA, 5, kv, 13);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int code = rq_code_text(r, held, sizeof held, err);
    if (still_held)
        *still_held = code == 1 || !strcmp(held, "1");
    return code;
}

void rq_job_notify_global(int on)
{
    rq_notify_global = on;
}

int rq_job_notify_cancels(struct rq *q, vr_err *err)
{
    char now[32], prefix[64];
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    rq_key_job(prefix, sizeof prefix, "");
    const char *kv[] = { RQ_CANCELS, RQ_NOTIFY, now, rq_notify_global ? "1" : "0", prefix };
    long long v = 0;
    int rc = rq_eval_int(q, err, CANCELS_LUA, 2, kv, 5, &v);
    return rc < 0 ? rc : (int)v;
}

/* Live -> `to` (failed or cancelled). */
static int rq_job_end(struct rq *q, const char *id, const char *to, const char *reason,
                      const char *me, long long token, char *state, size_t n, vr_err *err)
{
    char jk[128], now[32], tok[32], due[32];
    rq_key_job(jk, sizeof jk, id);
    long long t = rq_now_ms();
    snprintf(now, sizeof now, "%lld", t);
    snprintf(due, sizeof due, "%lld", t + RQ_CLEANUP_ENDED_DELAY_MS);
    snprintf(tok, sizeof tok, "%lld", token > 0 ? token : 0);
    /* vrctl's cancel names vr:cancels, not vr:notify, which its user may not
     * write (Redis checks a script's KEYS against its caller) */
    const char *kv[] = { jk, RQ_ACTIVE, me && me[0] ? RQ_NOTIFY : RQ_CANCELS, RQ_ENDED,
                         RQ_CLEANUP, id, to, reason, now, me ? me : "", tok,
                         rq_notify_global ? "1" : "0", due };
    redisReply *r = rq_eval(q, err, END_LUA, 5, kv, 13);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int code = rq_code_text(r, state, n, err);
    return code == -1 ? vr_err_set(err, VR_ENOENT, "no job '%s'", id) : code;
}

int rq_job_fail(struct rq *q, const char *id, const char *me, long long token,
                const char *reason, vr_err *err)
{
    int rc = rq_job_end(q, id, "failed", reason, me, token, NULL, 0, err);
    return rc == VR_ENOENT ? 0 : rc;
}

int rq_job_cancel(struct rq *q, const char *id, const char *reason, char *state, size_t n,
                  vr_err *err)
{
    return rq_job_end(q, id, "cancelled", reason, NULL, 0, state, n, err);
}

/* A job script's {code[, text]} reply (consumed; NULL: the error in err):
 * the code, -1 as VR_ENOENT naming the job. */
static int rq_job_code(redisReply *r, const char *id, char *text, size_t n, vr_err *err)
{
    if (!r)
        return err ? err->code : VR_EREDIS;
    int code = rq_code_text(r, text, n, err);
    return code == -1 ? vr_err_set(err, VR_ENOENT, "no job '%s'", id) : code;
}

int rq_job_retry(struct rq *q, const char *id, long long *chunks_total, char *state, size_t n,
                 vr_err *err)
{
    char jk[128], text[32];
    rq_key_job(jk, sizeof jk, id);
    const char *kv[] = { jk, RQ_ACTIVE, id };
    int code = rq_job_code(rq_eval(q, err, RETRY_LUA, 2, kv, 3), id, text, sizeof text, err);
    if (code == 1)
        *chunks_total = rq_record_ll(text);
    else if (code == 0 && state)
        snprintf(state, n, "%s", text);
    return code;
}

int rq_job_purge(struct rq *q, const char *id, long long ended_before_ms, char *state,
                 size_t n, vr_err *err)
{
    char jk[128], ek[128], prefix[128], before[32], text[32];
    rq_key_job(jk, sizeof jk, id);
    rq_key_events(ek, sizeof ek, id);
    rq_key_chunk(prefix, sizeof prefix, id, 0);
    prefix[strlen(prefix) - 1] = '\0'; /* "vr:chunk:<id>:" */
    snprintf(before, sizeof before, "%lld", ended_before_ms);
    const char *kv[] = { jk, RQ_INDEX, RQ_ACTIVE, RQ_CLEANUP, ek, id, before, prefix };
    int code = rq_job_code(rq_eval(q, err, PURGE_LUA, 5, kv, 8), id, text, sizeof text, err);
    if (code == 0 && state)
        snprintf(state, n, "%s", text);
    return code;
}

/* ---- reads ---- */

int rq_job_spec(struct rq *q, const char *id, char *buf, size_t n, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    return rq_hget(q, jk, "spec", buf, n, err);
}

int rq_job_state(struct rq *q, const char *id, char *buf, size_t n, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    buf[0] = '\0';
    return rq_hget(q, jk, "state", buf, n, err);
}

int rq_job_number(struct rq *q, const char *id, const char *field, long long *v, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    return rq_hget_ll(q, jk, field, v, err);
}

int rq_job_note(struct rq *q, const char *id, const char *field, const char *value,
                vr_err *err)
{
    return rq_job_notes(q, id, &field, &value, 1, err);
}

#define RQ_JOB_NOTES_MAX 16

int rq_job_notes(struct rq *q, const char *id, const char *const *fields,
                 const char *const *values, int n, vr_err *err)
{
    static const char *const scripted[] = { "state", "controller", "chunks_done", "frames_done",
                                            "chunks_total", "error", "notify_seq", "notify_state",
                                            NULL };
    if (n < 1 || n > RQ_JOB_NOTES_MAX)
        return vr_err_set(err, VR_EINVAL, "%d job notes in one call (1..%d)", n,
                          RQ_JOB_NOTES_MAX);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    const char *argv[2 + 2 * RQ_JOB_NOTES_MAX] = { "HSET", jk };
    for (int k = 0; k < n; k++) {
        for (int i = 0; scripted[i]; i++)
            if (!strcmp(fields[k], scripted[i]))
                return vr_err_set(err, VR_EINVAL, "job field '%s' changes only through its "
                                  "script", fields[k]);
        argv[2 + 2 * k] = fields[k];
        argv[3 + 2 * k] = values[k];
    }
    redisReply *r = rq_cmdargv(q, err, 2 + 2 * n, argv, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

/* ---- the active set and events ---- */

/* The job ids of an array reply (consumed) into ids: count, or <0 for no
 * reply. */
static int rq_id_list(redisReply *r, char (*ids)[48], int max, vr_err *err)
{
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++)
        if (rq_reply_str(r->element[i], ids[n], 48, NULL) > 0)
            n++;
    freeReplyObject(r);
    return n;
}

int rq_active_list(struct rq *q, char (*ids)[48], int max, vr_err *err)
{
    return rq_id_list(rq_cmd(q, err, "SMEMBERS %s", RQ_ACTIVE), ids, max, err);
}

int rq_cleanup_due(struct rq *q, char (*ids)[48], int max, vr_err *err)
{
    return rq_id_list(rq_cmd(q, err, "ZRANGEBYSCORE %s -inf %lld LIMIT 0 %d", RQ_CLEANUP,
                             rq_now_ms(), max), ids, max, err);
}

int rq_jobs_created_before(struct rq *q, long long before_ms, char (*ids)[48], int max,
                           vr_err *err)
{
    return rq_id_list(rq_cmd(q, err, "ZRANGEBYSCORE %s -inf (%lld LIMIT 0 %d", RQ_INDEX,
                             before_ms, max), ids, max, err);
}

int rq_cleanup_forget(struct rq *q, const char *id, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "ZREM %s %s", RQ_CLEANUP, id);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

int rq_cleanup_at(struct rq *q, const char *id, long long due_ms, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "ZADD %s %lld %s", RQ_CLEANUP, due_ms, id);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

int rq_active_forget(struct rq *q, const char *id, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "SREM %s %s", RQ_ACTIVE, id);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

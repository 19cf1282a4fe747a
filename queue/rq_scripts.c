/*
 * rq_scripts.c - the queue's state changes as Lua scripts, each atomic on the
 * server, because each one closes a race that separate commands leave open:
 *
 *   renew    ownership check + XCLAIM JUSTID: a renewal sent after a reclaim
 *            must not take the entry back;
 *   start    ownership + staleness + job state, and the attempt count kept in
 *            the chunk record (delivery counts can be lost on AOF reload);
 *   commit   ownership + record the result + XACK (XACK alone does not check
 *            the owner, so a late worker would ack the new owner's delivery);
 *   result   the controller's check of a worker's result against the chunk
 *            record, and the count of a done chunk into its job;
 *   fail     worker failure or lease reclaim (XCLAIM with min-idle, so a
 *            renewal that lands first wins): requeue (after a backoff for
 *            the chunk's own failures) or dead-letter;
 *   due      move chunks whose backoff ended from the retry set to the
 *            priority stream;
 *   create   chunk record + entry, idempotent for a re-run split;
 *   requeue  re-add an entry that vanished (lost XADD) keeping the attempts;
 *   trim     XTRIM MINID no lower than any group's oldest pending or
 *            undelivered entry.
 *
 * Renew, start, commit and fail act for a worker, but the controller runs
 * them, on the worker's reports (rq_claim.h): Redis runs a script with its
 * caller's rights, so a worker's user allowed these scripts could send
 * their writes by hand (issue 27, finding 2). `consumer` is the claim
 * that holds the entry ("name+k+C"); the chunk record's `worker` is its
 * name part.
 */
#include "rq_scripts.h"
#include "rq_eval.h"
#include "rq_jstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- Lua ---- */

#define RQ_STR_(x) #x
#define RQ_STR(x) RQ_STR_(x)

#define LUA_OWNER \
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n" \
    "local owned = (#p == 1 and p[1][2] == ARGV[2])\n"

/* Stream ids in order: id_before(a, b) when a comes before b ("ms-seq",
 * each part compared as a number); false for anything else. */
#define LUA_ID_BEFORE \
    "local function id_before(a, b)\n" \
    "  local am, as = string.match(a, '^(%d+)-(%d+)$')\n" \
    "  local bm, bs = string.match(b, '^(%d+)-(%d+)$')\n" \
    "  if not am or not bm then return false end\n" \
    "  if tonumber(am) ~= tonumber(bm) then return tonumber(am) < tonumber(bm) end\n" \
    "  return tonumber(as) < tonumber(bs)\n" \
    "end\n"

/* A chunk belongs to a job that is splitting or running; any other state
 * (cancelled, failed, gone) means its work is no longer wanted. */
#define LUA_JOB_LIVE(key) \
    "local js = redis.call('HGET', " key ", 'state')\n" \
    "local live = (js == 'running' or js == 'splitting')\n"

/* KEYS: chunks. ARGV: group, consumer, id, job key (read only: see the top). */
static const char RENEW_LUA[] =
    LUA_OWNER
    "if not owned then return 0 end\n"
    LUA_JOB_LIVE("ARGV[4]")
    "if not live then return 2 end\n"
    "redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')\n"
    "return 1\n";

/* An attempt is counted once per entry and claim: by its start, or by its
 * commit or failure when the start report was lost (read by a controller
 * that died before it handled it; its orphan, handled later, then finds
 * the attempt counted). KEYS[2] the chunk; ARGV[2] consumer, ARGV[3] id. */
#define LUA_ATTEMPT \
    "local held = ARGV[2] .. '/' .. ARGV[3]\n" \
    "if redis.call('HGET', KEYS[2], 'attempt_of') ~= held then\n" \
    "  redis.call('HINCRBY', KEYS[2], 'attempts', 1)\n" \
    "  redis.call('HSET', KEYS[2], 'attempt_of', held)\n" \
    "end\n"

/* KEYS: chunks, chunk. ARGV: group, consumer, id, now, job key. */
static const char START_LUA[] =
    LUA_OWNER
    "if not owned then return {0, 'entry not owned'} end\n"
    "local cur = redis.call('HMGET', KEYS[2], 'entry', 'state', 'task')\n"
    "local js = redis.call('HGET', ARGV[5], 'state')\n"
    "local why = nil\n"
    "if cur[1] ~= ARGV[3] then why = 'stale entry'\n"
    "elseif cur[2] == 'done' or cur[2] == 'dead' then why = 'chunk already ' .. cur[2]\n"
    "elseif js ~= 'running' and js ~= 'splitting' then why = 'job is ' .. tostring(js or 'gone') end\n"
    "if why then redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) return {0, why} end\n"
    LUA_ATTEMPT
    "local a = tonumber(redis.call('HGET', KEYS[2], 'attempts'))\n"
    "redis.call('HSET', KEYS[2], 'state', 'running', 'worker', string.match(ARGV[2], '^[^+]*'),\n"
    "           'started_ms', ARGV[4])\n"
    "return {a, cur[3]}\n";

/* The fleet's counters, folded in with the commit that counts the chunk
 * (exactly once, and kept in Redis so they survive controller restarts):
 * frames and chunks into the stats hash, the chunk's per-stage histogram
 * buckets into the histogram hash as "<stage>:<bucket>", "<stage>:n" and
 * "<stage>:sum_ns" (rq_fleetstats.c reads them back). Unexpected metrics
 * text folds nothing. KEYS[4], KEYS[5]; ARGV[4] frames, ARGV[6] metrics. */
#define LUA_FLEET_FOLD \
    "redis.call('HINCRBY', KEYS[4], 'frames', ARGV[4])\n" \
    "redis.call('HINCRBY', KEYS[4], 'chunks', 1)\n" \
    "local okm, mt = pcall(cjson.decode, ARGV[6])\n" \
    "if okm and type(mt) == 'table' and type(mt.stages) == 'table' then\n" \
    "  for sn, h in pairs(mt.stages) do\n" \
    "    if type(sn) == 'string' and #sn <= 32 and string.match(sn, '^[a-z0-9_]+$') and\n" \
    "       type(h) == 'table' and type(h.buckets) == 'table' and tonumber(h.n) then\n" \
    "      for _, b in ipairs(h.buckets) do\n" \
    "        local i, c = tonumber(b[1]), tonumber(b[2])\n" \
    "        if i and c and i >= 0 and i < 100000 and c > 0 then\n" \
    "          redis.call('HINCRBY', KEYS[5], sn .. ':' .. string.format('%d', i),\n" \
    "                     string.format('%d', c)) end\n" \
    "      end\n" \
    "      redis.call('HINCRBY', KEYS[5], sn .. ':n', string.format('%d', tonumber(h.n)))\n" \
    "      redis.call('HINCRBY', KEYS[5], sn .. ':sum_ns', string.format('%d', tonumber(h.sum_ns) or 0))\n" \
    "    end\n" \
    "  end\n" \
    "end\n"

/* KEYS: chunks, chunk, results, stats, stats histograms, priority chunks.
 * ARGV: group, consumer, id, frames, fps, metrics, now, job, idx, job key,
 * the output's sum (storage_sum_fds; '' none: the stitch then takes the file
 * unchecked), the end the worker stopped at (rq_cut.h; '' the task's own).
 * A chunk cut while it ran (its record's `end`, rq_cut.h) commits only
 * from a worker that stopped at that end: one that never heard of the cut
 * read past it, into the range now queued as another chunk, so its output
 * is refused and the chunk (its shorter range now) queued again at once
 * in the priority stream (3; `cuts_missed` counts them).
 * The job record is read, never written: the worker's Redis user may not
 * write job records (deploy/redis-users.acl), and a script runs with its
 * caller's rights, so the chunk is counted into its job by the controller
 * (RESULT_LUA) when it reads the result, which names the entry it was
 * committed under. A chunk of an ended job
 * is acked uncounted and left unfinished, so a cancelled job shows no
 * progress after the cancel and a retry runs the chunk again. A done chunk
 * drops the error of an earlier attempt (a reclaim's "stopped renewing its
 * lease": the history is in the job's events), and `commits` counts the
 * commits accepted from an owner: 1 for every done chunk, whatever failed
 * around it (the chaos suite checks it). Only the record's current entry
 * commits: an older delivery still pending to its worker (a zombie whose
 * chunk `vrctl retry` re-armed under a new entry) is acked and refused,
 * as a lost lease is (issue 26, finding 4: it was counted, commits=2, or
 * ended the chunk done with attempts 0). */
static const char COMMIT_LUA[] =
    LUA_OWNER
    "if not owned then return 0 end\n"
    "if redis.call('HGET', KEYS[2], 'entry') ~= ARGV[3] then\n"
    "  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) return 0 end\n"
    LUA_JOB_LIVE("ARGV[10]")
    "if not live then\n"
    "  if redis.call('HGET', KEYS[2], 'state') == 'running' then\n"
    "    redis.call('HSET', KEYS[2], 'state', 'queued') end\n"
    "  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) return 2\n"
    "end\n"
    "if redis.call('HGET', KEYS[2], 'state') ~= 'done' then\n"
    "  local held_end = redis.call('HGET', KEYS[2], 'end')\n"
    "  if held_end and held_end ~= ARGV[12] then\n"
    "    redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"
    "    local nid = redis.call('XADD', KEYS[6], '*', 'job', ARGV[8], 'idx', ARGV[9])\n"
    "    redis.call('HSET', KEYS[2], 'state', 'queued', 'entry', nid, 'stream', KEYS[6])\n"
    "    redis.call('HINCRBY', KEYS[2], 'cuts_missed', 1)\n"
    "    return 3\n"
    "  end\n"
    LUA_ATTEMPT
    "  redis.call('HSET', KEYS[2], 'state', 'done', 'frames', ARGV[4], 'fps', ARGV[5],\n"
    "             'metrics', ARGV[6], 'done_ms', ARGV[7], 'worker', string.match(ARGV[2], '^[^+]*'),\n"
    "             'sum', ARGV[11])\n"
    "  local rid = redis.call('XADD', KEYS[3], '*', 'job', ARGV[8], 'idx', ARGV[9],\n"
    "                         'kind', 'done', 'entry', ARGV[3])\n"
    "  redis.call('HSET', KEYS[2], 'result', rid)\n"
    "  redis.call('HDEL', KEYS[2], 'error')\n"
    LUA_FLEET_FOLD
    "end\n"
    "redis.call('HINCRBY', KEYS[2], 'commits', 1)\n"
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"
    "return 1\n";

/* KEYS: chunks, chunk, results, dead, priority chunks, retry set. ARGV:
 * group, consumer ('' = reclaim), id, reason, min_idle, job, idx,
 * permanent ('1': dead-letter now, whatever the attempts left: another
 * attempt would fail alike; '2': the worker's own environment failed, not
 * the chunk), backoff base ms, jitter (0..999 per mille),
 * the deaths' limit, the job key (read only: see the top).
 *
 * A reclaim is a worker's death (killed, stopped, partitioned: its lease
 * lapsed), not the chunk's fault: it raises `deaths`, dead-letters only at
 * the deaths' own limit, and requeues at once (the lease was the wait). A
 * failure the worker charges to itself (RQ_FAIL_WORKER: its input mount,
 * its storage, its GPU) is not the chunk's either: it raises `faults`,
 * dead-letters only at RQ_MAX_FAULTS (every worker blind: the chunk must
 * end some day), and requeues at once; the worker waits instead, in
 * quarantine (issue 42, finding 2). A
 * worker's own report raises `failures`, dead-letters at max_attempts, and
 * puts the chunk in the retry set, due after base * 2^(failures-1) (at
 * most RQ_RETRY_CAP_MS) plus up to half of it in jitter, on the server's
 * clock (TIME: workers' clocks may be skewed): a transient fault (read-only
 * or full storage, I/O, Redis) then has seconds to pass instead of burning
 * every attempt in milliseconds (issue 26, finding 6). rq_retry_due moves
 * it into the priority stream when due; base 0 requeues at once. A chunk
 * tried again goes into the priority stream, which workers read first: it
 * is its job's oldest unfinished work, and at the back of the queue it
 * would be the job's tail, the fleet idle around it. Returns 1 requeued
 * now, 2 dead-lettered, 3 not taken, or 4 + the delay in ms (in the retry
 * set). Each worker that failed or lost the chunk is added once to its
 * `failed_by` (space separated, ~600 bytes at most): the job's error names
 * every worker involved, not only the last (issue 42). */
/* A death (the attempt's worker killed or lost) keeps what the attempt had
 * done by its last renewal (rq_lease.h: lease_frames at lease_ms) as the
 * chunk's `lost_*` fields, the last death's, for `vrctl report`. */
#define LUA_LOST_WORK \
    "  local lw = redis.call('HMGET', KEYS[2], 'worker', 'started_ms', 'lease_ms', 'lease_frames')\n" \
    "  if lw[1] and lw[2] and lw[3] and tonumber(lw[4]) then\n" \
    "    redis.call('HSET', KEYS[2], 'lost_by', lw[1], 'lost_from', lw[2], 'lost_to', lw[3],\n" \
    "               'lost_frames', lw[4]) end\n"

static const char FAIL_LUA[] =
    "if ARGV[2] ~= '' then\n"
    "  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n"
    "  if #p ~= 1 or p[1][2] ~= ARGV[2] then return 0 end\n"
    "else\n"
    "  local c = redis.call('XCLAIM', KEYS[1], ARGV[1], 'vr-reclaimer', ARGV[5], ARGV[3], 'JUSTID')\n"
    "  if #c == 0 then return 0 end\n"
    "end\n"
    "local cur = redis.call('HMGET', KEYS[2], 'entry', 'state', 'failures', 'max_attempts', 'deaths',\n"
    "                       'faults')\n"
    "local js = redis.call('HGET', ARGV[12], 'state')\n"
    "if cur[1] ~= ARGV[3] or cur[2] == 'done' or cur[2] == 'dead' or\n"
    "   (js ~= 'running' and js ~= 'splitting') then\n"
    "  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) return 3 end\n"
    "if ARGV[2] ~= '' then\n"
    LUA_ATTEMPT
    "end\n"
    "local f = tonumber(cur[3] or '0') or 0 local m = tonumber(cur[4] or '3') or 3\n"
    "local d = tonumber(cur[5] or '0') or 0 local w = tonumber(cur[6] or '0') or 0\n"
    "local death = (ARGV[2] == '')\n"
    "local fault = (not death and ARGV[8] == '2')\n"
    "if death then d = d + 1 redis.call('HSET', KEYS[2], 'deaths', d)\n"
    LUA_LOST_WORK
    "elseif fault then w = w + 1 redis.call('HSET', KEYS[2], 'faults', w)\n"
    "else f = f + 1 redis.call('HSET', KEYS[2], 'failures', f) end\n"
    "local who = death and redis.call('HGET', KEYS[2], 'worker') or string.match(ARGV[2], '^[^+]*')\n"
    "if who and who ~= '' then\n"
    "  local fb = redis.call('HGET', KEYS[2], 'failed_by') or ''\n"
    "  if #fb < 600 and not string.find(' ' .. fb .. ' ', ' ' .. who .. ' ', 1, true) then\n"
    "    redis.call('HSET', KEYS[2], 'failed_by', fb == '' and who or (fb .. ' ' .. who)) end\n"
    "end\n"
    "local perm = fault and '0' or ARGV[8]\n"
    "redis.call('HSET', KEYS[2], 'error', ARGV[4], 'permanent', perm)\n"
    "if (death and d >= tonumber(ARGV[11])) or (fault and w >= " RQ_STR(RQ_MAX_FAULTS) ") or\n"
    "   (not death and not fault and (f >= m or ARGV[8] == '1')) then\n"
    "  local by = death and 'deaths' or (fault and 'faults' or 'failures')\n"
    "  redis.call('HSET', KEYS[2], 'state', 'dead', 'dead_by', by)\n"
    "  redis.call('XADD', KEYS[4], '*', 'job', ARGV[6], 'idx', ARGV[7], 'error', ARGV[4],\n"
    "             'attempts', death and d or (fault and w or f), 'permanent', perm)\n"
    "  redis.call('XADD', KEYS[3], '*', 'job', ARGV[6], 'idx', ARGV[7], 'kind', 'dead',\n"
    "             'entry', ARGV[3])\n"
    "  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) return 2\n"
    "end\n"
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"
    "local base = tonumber(ARGV[9]) or 0\n"
    "if death or fault or base <= 0 then\n"
    "  local nid = redis.call('XADD', KEYS[5], '*', 'job', ARGV[6], 'idx', ARGV[7])\n"
    "  redis.call('HSET', KEYS[2], 'state', 'queued', 'entry', nid, 'stream', KEYS[5])\n"
    "  return 1\n"
    "end\n"
    "local delay = base * 2 ^ (f - 1)\n"
    "if delay > " RQ_STR(RQ_RETRY_CAP_MS) " then delay = " RQ_STR(RQ_RETRY_CAP_MS) " end\n"
    "delay = math.floor(delay + delay * (tonumber(ARGV[10]) or 0) / 2000)\n"
    "local t = redis.call('TIME')\n"
    "local due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + delay\n"
    "redis.call('HDEL', KEYS[2], 'entry')\n"
    "redis.call('HSET', KEYS[2], 'state', 'queued', 'retry_at', due, 'stream', KEYS[5])\n"
    "redis.call('ZADD', KEYS[6], due, ARGV[6] .. '/' .. ARGV[7])\n"
    "return 4 + delay\n";

/* KEYS: chunk, chunks. ARGV: task, max_attempts, job, idx. */
static const char CREATE_LUA[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
    "local nid = redis.call('XADD', KEYS[2], '*', 'job', ARGV[3], 'idx', ARGV[4])\n"
    "redis.call('HSET', KEYS[1], 'task', ARGV[1], 'state', 'queued', 'attempts', 0,\n"
    "           'max_attempts', ARGV[2], 'entry', nid, 'stream', KEYS[2])\n"
    "return 1\n";

/* KEYS: chunk, chunks, job. ARGV: job, idx, mode (see rq.h), the workers'
 * group, the workers' heartbeat key prefix, the results stream (an ARGV:
 * vrctl's retry runs this script and may not write results, which only a
 * done chunk's requeue, the controller's, does). Mode 0 leaves a chunk waiting
 * in the retry set (retry_at: its entry comes when due); the others take
 * it out of there (rq_retry_due then finds no retry_at and drops it).
 * A done chunk requeued (its output missing or damaged) is undone: the
 * job's counters and its own `commits` lowered, so the one commit of its
 * recompute leaves it at 1 again, and an `undone` result says so in
 * vr:results (its next `done` is the chunk's one live announcement). Mode 3 leaves a chunk whose
 * current entry is pending to a live worker (its heartbeat key exists)
 * alone and answers 2: a second entry would run it twice at once, and the
 * first worker's commit would be a zombie's. */
static const char REQUEUE_LUA[] =
    "local cur = redis.call('HMGET', KEYS[1], 'entry', 'state', 'frames', 'counted')\n"
    "local mode = ARGV[3]\n"
    "if not cur[2] then return -1 end\n"
    "if mode == '2' then\n"
    "  if cur[2] ~= 'dead' then return 0 end\n"
    "  redis.call('HSET', KEYS[1], 'attempts', 0, 'failures', 0, 'deaths', 0, 'error', '')\n"
    "  redis.call('HDEL', KEYS[1], 'failed_by')\n"
    "elseif cur[2] == 'dead' then return 0\n"
    "elseif mode == '0' then\n"
    "  if cur[2] == 'done' then return 0 end\n"
    "  if redis.call('HEXISTS', KEYS[1], 'retry_at') == 1 then return 0 end\n"
    "  if cur[1] and #redis.call('XRANGE', KEYS[2], cur[1], cur[1]) > 0 then return 0 end\n"
    "elseif mode == '3' then\n"
    "  if cur[2] == 'done' then return 0 end\n"
    "  if cur[1] then\n"
    "    local p = redis.call('XPENDING', KEYS[2], ARGV[4], cur[1], cur[1], 1)\n"
    "    if #p == 1 and redis.call('EXISTS', ARGV[5] .. string.match(p[1][2], '^[^+]*')) == 1 then return 2 end\n"
    "  end\n"
    "  redis.call('HSET', KEYS[1], 'attempts', 0, 'failures', 0, 'deaths', 0, 'error', '')\n"
    "  redis.call('HDEL', KEYS[1], 'failed_by')\n"
    "end\n"
    "redis.call('HDEL', KEYS[1], 'retry_at')\n"
    "if cur[2] == 'done' then\n"
    "  redis.call('HINCRBY', KEYS[1], 'commits', -1)\n"
    "  redis.call('HDEL', KEYS[1], 'sum')\n"
    "  redis.call('XADD', ARGV[6], '*', 'job', ARGV[1], 'idx', ARGV[2], 'kind', 'undone')\n"
    "end\n"
    "if cur[2] == 'done' and cur[4] and cur[4] == cur[1] then\n"
    "  redis.call('HINCRBY', KEYS[3], 'chunks_done', -1)\n"
    "  redis.call('HINCRBY', KEYS[3], 'frames_done', -tonumber(cur[3] or '0'))\n"
    "end\n"
    "local nid = redis.call('XADD', KEYS[2], '*', 'job', ARGV[1], 'idx', ARGV[2])\n"
    "redis.call('HSET', KEYS[1], 'state', 'queued', 'entry', nid)\n"
    "return 1\n";

static const char TRIM_LUA[] =
    LUA_ID_BEFORE
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
    "local groups = redis.call('XINFO', 'GROUPS', KEYS[1])\n"
    "local minid = nil\n"
    "for _, g in ipairs(groups) do\n"
    "  local name, ld\n"
    "  for i = 1, #g, 2 do\n"
    "    if g[i] == 'name' then name = g[i+1] elseif g[i] == 'last-delivered-id' then ld = g[i+1] end\n"
    "  end\n"
    "  local cand = ld\n"
    "  local p = redis.call('XPENDING', KEYS[1], name)\n"
    "  if p[1] > 0 and id_before(p[2], cand) then cand = p[2] end\n"
    "  if minid == nil or id_before(cand, minid) then minid = cand end\n"
    "end\n"
    "if minid == nil then return 0 end\n"
    "return redis.call('XTRIM', KEYS[1], 'MINID', minid)\n";

/* KEYS: retry set, priority chunks. ARGV: chunk key prefix, job key
 * prefix, limit. Chunks whose backoff ended (on the server's clock) get
 * their entry; one whose record no longer waits (retried, requeued by
 * force, gone) is only dropped from the set, and one whose job ended
 * waits without an entry for `vrctl retry`, which re-arms it. */
static const char RETRY_DUE_LUA[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))\n"
    "local n = 0\n"
    "for _, mem in ipairs(due) do\n"
    "  redis.call('ZREM', KEYS[1], mem)\n"
    "  local job, idx = string.match(mem, '^(.+)/(%d+)$')\n"
    "  if job then\n"
    "    local ck = ARGV[1] .. job .. ':' .. idx\n"
    "    local cur = redis.call('HMGET', ck, 'state', 'retry_at')\n"
    "    if cur[1] == 'queued' and cur[2] then\n"
    "      redis.call('HDEL', ck, 'retry_at')\n"
    "      local js = redis.call('HGET', ARGV[2] .. job, 'state')\n"
    "      if js == 'running' or js == 'splitting' then\n"
    "        local nid = redis.call('XADD', KEYS[2], '*', 'job', job, 'idx', idx)\n"
    "        redis.call('HSET', ck, 'entry', nid, 'stream', KEYS[2])\n"
    "        n = n + 1\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return n\n";

/* ---- running them ---- */

redisReply *rq_eval(struct rq *q, vr_err *err, const char *lua, int nkeys, const char **kv,
                    int nkv)
{
    const char *argv[35];
    char nk[8];
    if (nkv + 3 > 35) {
        vr_err_set(err, VR_EINVAL, "redis script: %d arguments (limit 32)", nkv);
        return NULL;
    }
    snprintf(nk, sizeof nk, "%d", nkeys);
    argv[0] = "EVAL";
    argv[1] = lua;
    argv[2] = nk;
    for (int i = 0; i < nkv; i++)
        argv[3 + i] = kv[i];
    return rq_cmdargv(q, err, 3 + nkv, argv, NULL);
}

int rq_eval_int(struct rq *q, vr_err *err, const char *lua, int nkeys, const char **kv,
                int nkv, long long *out)
{
    redisReply *r = rq_eval(q, err, lua, nkeys, kv, nkv);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc = 0;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = vr_err_set(err, VR_EFORMAT, "redis script: expected an integer reply");
    else
        *out = r->integer;
    freeReplyObject(r);
    return rc;
}

const char *rq_chunk_stream(int priority)
{
    return priority > 0 ? RQ_CHUNKS_HI : RQ_CHUNKS;
}

/* The stream a chunk record names (RQ_CHUNKS for records without one). */
static const char *rq_record_stream(struct rq *q, const char *ck)
{
    char st[32] = "";
    rq_hget(q, ck, "stream", st, sizeof st, NULL);
    return strcmp(st, RQ_CHUNKS_HI) == 0 ? RQ_CHUNKS_HI : RQ_CHUNKS;
}

int rq_lease_renew(struct rq *q, const char *stream, const char *consumer, const char *id,
                   const char *job, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, job);
    const char *kv[] = { stream, RQ_G_WORKERS, consumer, id, jk };
    long long v = 0;
    int rc = rq_eval_int(q, err, RENEW_LUA, 1, kv, 5, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_task_copy(const redisReply *t, const char *job, int idx, struct rq_start *st,
                 vr_err *err)
{
    int rc = rq_reply_str(t, st->task, sizeof st->task, NULL);
    if (rc < 0 && t->type == REDIS_REPLY_STRING)
        return vr_err_set(err, VR_EFORMAT, "chunk %s/%d: its task of %zu bytes is over the "
                          "%zu-byte limit", job, idx, (size_t)t->len, sizeof st->task - 1);
    if (rc <= 0)
        return vr_err_set(err, VR_EFORMAT, "chunk %s/%d has no task", job, idx);
    return 1;
}

int rq_chunk_start(struct rq *q, const char *stream, const char *consumer, const char *id,
                   const char *job, int idx, struct rq_start *st, char *why,
                   size_t whyn, vr_err *err)
{
    char ck[128], jk[128], now[32];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    const char *kv[] = { stream, ck, RQ_G_WORKERS, consumer, id, now, jk };
    redisReply *r = rq_eval(q, err, START_LUA, 2, kv, 7);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER) {
        rc = vr_err_set(err, VR_EFORMAT, "chunk start script: unexpected reply");
    } else if (r->element[0]->integer <= 0) {
        rq_reply_str(r->element[1], why, whyn, NULL);
        rc = 0;
    } else {
        st->attempt = (int)r->element[0]->integer;
        rc = rq_task_copy(r->element[1], job, idx, st, err);
    }
    freeReplyObject(r);
    return rc;
}

int rq_chunk_commit(struct rq *q, const char *stream, const char *consumer, const char *id,
                    const char *job, int idx, long long frames, double fps,
                    const char *metrics_json, const char *sum, vr_err *err)
{
    return rq_chunk_commit_end(q, stream, consumer, id, job, idx, frames, fps, metrics_json, sum,
                               NULL, err);
}

int rq_chunk_commit_end(struct rq *q, const char *stream, const char *consumer, const char *id,
                        const char *job, int idx, long long frames, double fps,
                        const char *metrics_json, const char *sum, const char *end, vr_err *err)
{
    char ck[128], jk[128], now[32], fr[32], fp[32], ix[16];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    snprintf(fr, sizeof fr, "%lld", frames);
    snprintf(fp, sizeof fp, "%.3f", fps);
    snprintf(ix, sizeof ix, "%d", idx);
    const char *kv[] = { stream, ck, RQ_RESULTS, RQ_STATS, RQ_STATS_HIST, RQ_CHUNKS_HI,
                         RQ_G_WORKERS, consumer, id, fr, fp, metrics_json ? metrics_json : "{}",
                         now, job, ix, jk, sum ? sum : "", end ? end : "" };
    long long v = 0;
    int rc = rq_eval_int(q, err, COMMIT_LUA, 6, kv, 18, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_chunk_fail(struct rq *q, const char *stream, const char *consumer, const char *id,
                  const char *job, int idx, const char *reason,
                  long long min_idle_ms, vr_err *err)
{
    return rq_chunk_fail_ex(q, stream, consumer, id, job, idx, reason, 0, min_idle_ms, NULL, err);
}

/* The backoff's base: RQ_RETRY_BASE_MS, or VR_TEST_RETRY_BASE_MS (tests
 * only: 0..600000, 0 = requeue at once). */
static long long rq_retry_base_ms(void)
{
    const char *s = getenv("VR_TEST_RETRY_BASE_MS");
    char *end;
    long long v = s ? strtoll(s, &end, 10) : -1;
    if (!s || end == s || *end || v < 0 || v > 600000)
        return RQ_RETRY_BASE_MS;
    return v;
}

int rq_chunk_fail_ex(struct rq *q, const char *stream, const char *consumer, const char *id,
                     const char *job, int idx, const char *reason, int permanent,
                     long long min_idle_ms, long long *retry_in_ms, vr_err *err)
{
    char ck[128], jk[128], mi[32], ix[16], base[24], jit[8], md[16];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    snprintf(mi, sizeof mi, "%lld", min_idle_ms);
    snprintf(ix, sizeof ix, "%d", idx);
    snprintf(base, sizeof base, "%lld", rq_retry_base_ms());
    unsigned r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (unsigned)rq_now_ms();
    snprintf(jit, sizeof jit, "%u", r % 1000);
    snprintf(md, sizeof md, "%d", RQ_MAX_DEATHS);
    const char *kv[] = { stream, ck, RQ_RESULTS, RQ_DEAD, RQ_CHUNKS_HI, RQ_RETRY,
                         RQ_G_WORKERS, consumer ? consumer : "", id, reason, mi, job, ix,
                         permanent == RQ_FAIL_WORKER ? "2" : permanent ? "1" : "0", base, jit,
                         md, jk };
    long long v = 0;
    int rc = rq_eval_int(q, err, FAIL_LUA, 6, kv, 18, &v);
    if (retry_in_ms)
        *retry_in_ms = rc == 0 && v >= 4 ? v - 4 : 0;
    if (rc < 0)
        return rc;
    return v == 3 ? 0 : v >= 4 ? 1 : (int)v;
}

long long rq_retry_due(struct rq *q, vr_err *err)
{
    const char *kv[] = { RQ_RETRY, RQ_CHUNKS_HI, "vr:chunk:", "vr:job:", "100" };
    long long v = 0;
    int rc = rq_eval_int(q, err, RETRY_DUE_LUA, 2, kv, 5, &v);
    return rc < 0 ? rc : v;
}

int rq_chunk_create(struct rq *q, const char *job, int idx, const char *task,
                    int max_attempts, int priority, vr_err *err)
{
    char ck[128], ma[16], ix[16];
    rq_key_chunk(ck, sizeof ck, job, idx);
    snprintf(ma, sizeof ma, "%d", max_attempts);
    snprintf(ix, sizeof ix, "%d", idx);
    const char *kv[] = { ck, rq_chunk_stream(priority), task, ma, job, ix };
    long long v = 0;
    int rc = rq_eval_int(q, err, CREATE_LUA, 2, kv, 6, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_chunk_requeue_lost(struct rq *q, const char *job, int idx, int force,
                          vr_err *err)
{
    char ck[128], jk[128], ix[16];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    snprintf(ix, sizeof ix, "%d", idx);
    char mode[4];
    snprintf(mode, sizeof mode, "%d", force >= 0 && force <= 3 ? force : 0);
    const char *kv[] = { ck, rq_record_stream(q, ck), jk, job, ix, mode, RQ_G_WORKERS,
                         RQ_WORKER_PREFIX, RQ_RESULTS };
    long long v = 0;
    int rc = rq_eval_int(q, err, REQUEUE_LUA, 3, kv, 9, &v);
    if (rc < 0)
        return rc;
    if (v < 0)
        return vr_err_set(err, VR_ENOENT, "chunk %s/%d: no chunk record", job, idx);
    return (int)v;
}

/* KEYS: chunk, job, results. ARGV: kind, entry, the controllers' group
 * ('' when a controller reads the result itself). A result stands when the
 * chunk record is in that end under that entry (its fencing token: a
 * requeue or a retry gives the chunk a new one); a done chunk is then
 * counted into its job once (`counted` = the entry counted), its frames
 * range-checked. The audit (a group named) leaves a chunk whose result
 * (`result`, the commit's XADD id) the group has not been delivered yet:
 * the loop counts it when it reads it, in the results' order, which is
 * what keeps a priority job ending before the work it overtook. */
static const char RESULT_LUA[] =
    "local cur = redis.call('HMGET', KEYS[1], 'entry', 'state', 'frames', 'counted', 'result')\n"
    "if not cur[1] or cur[1] ~= ARGV[2] or cur[2] ~= ARGV[1] then return 0 end\n"
    "if ARGV[1] ~= 'done' then return 1 end\n"
    "if cur[4] == cur[1] then return 2 end\n"
    LUA_ID_BEFORE
    "if ARGV[3] ~= '' and cur[5] and redis.call('EXISTS', KEYS[3]) == 1 then\n"
    "  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[3])) do\n"
    "    local name, last\n"
    "    for i = 1, #g - 1, 2 do\n"
    "      if g[i] == 'name' then name = g[i + 1] end\n"
    "      if g[i] == 'last-delivered-id' then last = g[i + 1] end\n"
    "    end\n"
    "    if name == ARGV[3] and last and id_before(last, cur[5]) then return 4 end\n"
    "  end\n"
    "end\n"
    LUA_JOB_LIVE("KEYS[2]")
    "if not live then return 3 end\n"
    "local f = tonumber(cur[3]) or 0\n"
    "if f < 0 or f > 1e12 or f ~= math.floor(f) then f = 0 end\n"
    "redis.call('HINCRBY', KEYS[2], 'chunks_done', 1)\n"
    "redis.call('HINCRBY', KEYS[2], 'frames_done', string.format('%d', f))\n"
    "redis.call('HSET', KEYS[1], 'counted', cur[1])\n"
    "return 1\n";

static int rq_chunk_result_as(struct rq *q, const char *job, int idx, const char *kind,
                              const char *entry, const char *group, vr_err *err)
{
    if (strcmp(kind, "done") && strcmp(kind, "dead"))
        return 0;
    char ck[128], jk[128];
    rq_key_chunk(ck, sizeof ck, job, idx);
    rq_key_job(jk, sizeof jk, job);
    const char *kv[] = { ck, jk, RQ_RESULTS, kind, entry, group };
    long long v = 0;
    int rc = rq_eval_int(q, err, RESULT_LUA, 3, kv, 6, &v);
    return rc < 0 ? rc : (int)v;
}

int rq_chunk_result(struct rq *q, const char *job, int idx, const char *kind, const char *entry,
                    vr_err *err)
{
    return rq_chunk_result_as(q, job, idx, kind, entry, "", err);
}

int rq_chunk_count_done(struct rq *q, const char *job, int idx, vr_err *err)
{
    char ck[128], entry[RQ_ID_MAX] = "";
    rq_key_chunk(ck, sizeof ck, job, idx);
    int rc = rq_hget(q, ck, "entry", entry, sizeof entry, err);
    if (rc <= 0)
        return rc;
    return rq_chunk_result_as(q, job, idx, "done", entry, RQ_G_CONTROLLERS, err);
}

long long rq_trim_safe(struct rq *q, const char *stream, vr_err *err)
{
    const char *kv[] = { stream };
    long long v = 0;
    int rc = rq_eval_int(q, err, TRIM_LUA, 1, kv, 1, &v);
    return rc < 0 ? rc : v;
}

/* ---- jobs ---- */

/* KEYS: job. ARGV: from-states (comma list), to-state, me, the controllers'
 * heartbeat key prefix. Takes the job when
 * its state is one of `from`, or when it is already `to` but held by a
 * controller whose heartbeat key expired (it died mid-split or mid-stitch).
 * Each claim raises the job's `claim` counter and returns it: the fencing
 * token the holder shows to every script that publishes, fails or moves
 * the job, so a holder paused past its heartbeat (and replaced) is refused
 * when it wakes (rq_jobs.h). */
static const char CLAIM_LUA[] =
    LUA_JSTATE
    "local st = redis.call('HGET', KEYS[1], 'state')\n"
    "if not st then return 0 end\n"
    "local ok = false\n"
    "for s in string.gmatch(ARGV[1], '[^,]+') do if s == st then ok = true end end\n"
    "if not ok and st == ARGV[2] then\n"
    "  local owner = redis.call('HGET', KEYS[1], 'controller')\n"
    "  if (not owner) or owner == ARGV[3] or\n"
    "     redis.call('EXISTS', ARGV[4] .. owner) == 0 then ok = true end\n"
    "end\n"
    "if not ok then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[2], 'controller', ARGV[3])\n"
    "jstate(KEYS[1], ARGV[2])\n"
    "return redis.call('HINCRBY', KEYS[1], 'claim', 1)\n";

int rq_job_claim(struct rq *q, const char *job, const char *from, const char *to,
                 const char *me, long long *token, vr_err *err)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, job);
    const char *kv[] = { jk, from, to, me, RQ_CONTROLLER_PREFIX };
    long long v = 0;
    int rc = rq_eval_int(q, err, CLAIM_LUA, 1, kv, 5, &v);
    if (rc < 0)
        return rc;
    if (token)
        *token = v;
    return v > 0;
}

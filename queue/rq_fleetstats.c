/*
 * rq_fleetstats.c - reads the fleet's counters, jobs, workers and merged
 * stage histograms from Redis (rq_fleetstats.h). The per-job loops run as
 * read-only scripts on the server: one round trip whatever the job count.
 */
#include "rq_fleetstats.h"

#include "clock.h"
#include "job.h"
#include "rq_eval.h"
#include "rq_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scripts ---- */

/* KEYS: index. ARGV: how many of the newest, job key prefix. Returns
 * {state, count, ...}. */
static const char JOB_STATES_LUA[] =
    "local ids = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)\n"
    "local n = {}\n"
    "for _, id in ipairs(ids) do\n"
    "  local s = redis.call('HGET', ARGV[2] .. id, 'state')\n"
    "  if s then n[s] = (n[s] or 0) + 1 end\n"
    "end\n"
    "local out = {}\n"
    "for s, c in pairs(n) do out[#out + 1] = s out[#out + 1] = c end\n"
    "return out\n";

/* KEYS: none. ARGV: chunk key prefix ("vr:chunk:<job>:"), chunk count.
 * Returns {queued, running, done, dead}. */
static const char CHUNK_STATES_LUA[] =
    "local c = { queued = 0, running = 0, done = 0, dead = 0 }\n"
    "for i = 0, tonumber(ARGV[2]) - 1 do\n"
    "  local s = redis.call('HGET', ARGV[1] .. i, 'state')\n"
    "  if s and c[s] then c[s] = c[s] + 1 end\n"
    "end\n"
    "return { c.queued, c.running, c.done, c.dead }\n";

/* KEYS: stats. ARGV: count field, seconds field ('' = none), seconds. */
static const char NOTE_LUA[] =
    "redis.call('HINCRBY', KEYS[1], ARGV[1], 1)\n"
    "if ARGV[2] ~= '' then redis.call('HINCRBYFLOAT', KEYS[1], ARGV[2], ARGV[3]) end\n"
    "return 1\n";

/* ---- helpers ---- */

const char *rq_chunk_state_name(int s)
{
    static const char *const names[RQ_CK_NSTATES] = { "queued", "running", "done", "dead" };
    return s >= 0 && s < RQ_CK_NSTATES ? names[s] : NULL;
}

const char *rq_job_end_state(int s)
{
    static const char *const names[3] = { "done", "failed", "cancelled" };
    return s >= 0 && s < 3 ? names[s] : NULL;
}

static int rq_fail(vr_err *err)
{
    return err && err->code ? err->code : VR_EREDIS;
}

int rq_ping(struct rq *q, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "PING");
    if (!r)
        return rq_fail(err);
    freeReplyObject(r);
    return 0;
}

/* ---- counters ---- */

static int rq_fleet_counters(struct rq *q, struct rq_fleetstats *fs, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "HGETALL %s", RQ_STATS);
    if (!r)
        return rq_fail(err);
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements && i < 64; i += 2) {
        char k[32], v[64];
        if (rq_reply_str(r->element[i], k, sizeof k, NULL) <= 0 ||
            rq_reply_str(r->element[i + 1], v, sizeof v, NULL) <= 0)
            continue;
        if (!strcmp(k, "frames")) fs->frames = rq_record_ll(v);
        else if (!strcmp(k, "chunks")) fs->chunks = rq_record_ll(v);
        else if (!strcmp(k, "reclaimed")) fs->reclaimed = rq_record_ll(v);
        else if (!strcmp(k, "reports_refused")) fs->reports_refused = rq_record_ll(v);
        else if (!strcmp(k, "webhooks_dropped")) fs->webhooks_dropped = rq_record_ll(v);
        else if (!strcmp(k, "splits")) fs->splits = rq_record_ll(v);
        else if (!strcmp(k, "stitches")) fs->stitches = rq_record_ll(v);
        else if (!strcmp(k, "split_seconds")) fs->split_s = rq_record_double(v);
        else if (!strcmp(k, "stitch_seconds")) fs->stitch_s = rq_record_double(v);
    }
    freeReplyObject(r);
    char seen[32] = "";
    if (rq_hget(q, RQ_WORKERS_SEEN, "worker_seen_ms", seen, sizeof seen, NULL) > 0)
        fs->worker_seen_ms = rq_record_ll(seen);
    if (!(r = rq_cmd(q, err, "HGETALL %s", RQ_ENDED)))
        return rq_fail(err);
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements && i < 16; i += 2) {
        char k[32], v[64];
        if (rq_reply_str(r->element[i], k, sizeof k, NULL) <= 0 ||
            rq_reply_str(r->element[i + 1], v, sizeof v, NULL) <= 0)
            continue;
        for (int e = 0; e < 3; e++)
            if (!strncmp(k, "jobs_", 5) && !strcmp(k + 5, rq_job_end_state(e)))
                fs->jobs_ended[e] = rq_record_ll(v);
    }
    freeReplyObject(r);
    if (!(r = rq_cmd(q, err, "XLEN %s", RQ_DEAD)))
        return rq_fail(err);
    fs->dead_letters = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? r->integer : 0;
    freeReplyObject(r);
    return 0;
}

/* Fields "<stage>:<bucket>", "<stage>:n", "<stage>:sum_ns" (the commit
 * script's fold); unknown stages and out-of-range buckets are skipped. */
static int rq_fleet_hists(struct rq *q, struct rq_fleetstats *fs, vr_err *err)
{
    for (int s = 0; s < MET_NSTAGES; s++)
        hist_reset(&fs->stage[s]);
    redisReply *r = rq_cmd(q, err, "HGETALL %s", RQ_STATS_HIST);
    if (!r)
        return rq_fail(err);
    size_t lim = (size_t)MET_NSTAGES * (HIST_BUCKETS + 2) * 2;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements && i < lim; i += 2) {
        char k[64], v[32];
        if (rq_reply_str(r->element[i], k, sizeof k, NULL) <= 0 ||
            rq_reply_str(r->element[i + 1], v, sizeof v, NULL) <= 0)
            continue;
        char *colon = strchr(k, ':');
        if (!colon)
            continue;
        *colon = '\0';
        const char *what = colon + 1;
        int s = 0;
        while (s < MET_NSTAGES && strcmp(metrics_stage_name(s), k))
            s++;
        if (s == MET_NSTAGES)
            continue;
        struct hist *h = &fs->stage[s];
        unsigned long long n = strtoull(v, NULL, 10);
        if (!strcmp(what, "n")) {
            h->count = n;
        } else if (!strcmp(what, "sum_ns")) {
            h->sum_ns = n;
        } else {
            char *end;
            long b = strtol(what, &end, 10);
            if (*end == '\0' && b >= 0 && b < HIST_BUCKETS)
                h->b[b] = n;
        }
    }
    freeReplyObject(r);
    return 0;
}

/* ---- jobs ---- */

static int rq_fleet_job_states(struct rq *q, struct rq_fleetstats *fs, vr_err *err)
{
    char scan[16];
    snprintf(scan, sizeof scan, "%d", RQ_FLEET_INDEX_SCAN);
    const char *kv[] = { RQ_INDEX, scan, "vr:job:" };
    redisReply *r = rq_eval(q, err, JOB_STATES_LUA, 1, kv, 3);
    if (!r)
        return rq_fail(err);
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        if (fs->nstates == RQ_FLEET_MAX_STATES)
            break;
        char *st = fs->jobs[fs->nstates].state;
        if (rq_reply_str(r->element[i], st, sizeof fs->jobs[0].state, NULL) <= 0 ||
            r->element[i + 1]->type != REDIS_REPLY_INTEGER)
            continue;
        fs->jobs[fs->nstates++].n = r->element[i + 1]->integer;
    }
    freeReplyObject(r);
    return 0;
}

static int rq_fleet_chunk_states(struct rq *q, struct rq_flight_job *j, long long nchunks,
                                 vr_err *err)
{
    char prefix[96], n[24];
    snprintf(prefix, sizeof prefix, "vr:chunk:%s:", j->id);
    snprintf(n, sizeof n, "%lld", nchunks);
    const char *kv[] = { prefix, n };
    redisReply *r = rq_eval(q, err, CHUNK_STATES_LUA, 0, kv, 2);
    if (!r)
        return rq_fail(err);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == RQ_CK_NSTATES)
        for (int s = 0; s < RQ_CK_NSTATES; s++)
            if (r->element[s]->type == REDIS_REPLY_INTEGER)
                j->chunks[s] = r->element[s]->integer;
    freeReplyObject(r);
    return 0;
}

static int rq_fleet_active(struct rq *q, struct rq_fleetstats *fs, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", RQ_ACTIVE);
    if (!r)
        return rq_fail(err);
    struct rq_job_status *st = malloc(sizeof *st);
    long long budget = RQ_FLEET_CHUNK_BUDGET;
    int rc = st ? 0 : vr_err_set(err, VR_ENOMEM, "out of memory");
    if (r->type == REDIS_REPLY_ARRAY)
        fs->active = (long long)r->elements;
    for (size_t i = 0; rc == 0 && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if (fs->njobs == RQ_FLEET_MAX_JOBS)
            break;
        char id[48];
        if (rq_reply_str(r->element[i], id, sizeof id, NULL) <= 0 || !job_id_valid(id))
            continue;
        vr_err je = { 0 };
        int jr = rq_job_status(q, id, 0, st, &je);
        if (jr == VR_ENOENT || jr == VR_EFORMAT)
            continue;               /* gone meanwhile, or not a job we can read */
        if (jr < 0) {
            rc = jr;
            if (err)
                *err = je;
            break;
        }
        struct rq_flight_job *j = &fs->job[fs->njobs];
        memset(j, 0, sizeof *j);
        snprintf(j->id, sizeof j->id, "%s", id);
        snprintf(j->state, sizeof j->state, "%s", st->state);
        j->frames_total = st->frames_total;
        j->frames_done = st->frames_done;
        j->fps = st->fps;
        long long look = st->chunks_total < budget ? st->chunks_total : budget;
        if (look > 0)
            rc = rq_fleet_chunk_states(q, j, look, err);
        budget -= look;
        fs->chunks_uncounted += st->chunks_total - look;
        fs->njobs++;
    }
    free(st);
    freeReplyObject(r);
    return rc;
}

/* ---- all of it ---- */

int rq_fleetstats_read(struct rq *q, struct rq_fleetstats *fs, vr_err *err)
{
    memset(fs, 0, sizeof *fs);
    double t0 = clock_mono_s();
    int rc = rq_ping(q, err);
    if (rc < 0)
        return rc;
    fs->redis_rtt_s = clock_mono_s() - t0;
    if ((rc = rq_fleet_counters(q, fs, err)) < 0 || (rc = rq_fleet_hists(q, fs, err)) < 0 ||
        (rc = rq_fleet_job_states(q, fs, err)) < 0 || (rc = rq_fleet_active(q, fs, err)) < 0)
        return rc;
    int n = rq_workers_list(q, fs->workers, RQ_FLEET_MAX_WORKERS, err);
    if (n < 0)
        return n;
    fs->nworkers = n;
    return 0;
}

int rq_fleetstats_note(struct rq *q, enum rq_fleet_note what, double seconds, vr_err *err)
{
    char secs[32];
    snprintf(secs, sizeof secs, "%.6f", seconds > 0 ? seconds : 0.0);
    const char *count = what == RQ_NOTE_SPLIT ? "splits"
                        : what == RQ_NOTE_STITCH ? "stitches"
                        : what == RQ_NOTE_REFUSED ? "reports_refused"
                        : what == RQ_NOTE_WEBHOOK_DROPPED ? "webhooks_dropped" : "reclaimed";
    const char *sfield = what == RQ_NOTE_SPLIT ? "split_seconds"
                         : what == RQ_NOTE_STITCH ? "stitch_seconds" : "";
    const char *kv[] = { RQ_STATS, count, sfield, secs };
    long long v;
    return rq_eval_int(q, err, NOTE_LUA, 1, kv, 4, &v);
}

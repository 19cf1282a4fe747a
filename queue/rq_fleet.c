/*
 * rq_fleet.c - heartbeats of workers and controllers, the worker list and
 * the stalled-entry scan (rq_fleet.h).
 */
#include "rq_fleet.h"

#include "rq_claim.h"
#include "rq_eval.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rq_worker_states[RQ_WORKER_NSTATES] = { "idle",        "busy",   "draining",
                                                          "warming",     "paused", "quarantined",
                                                          "aside" };

static void rq_key_worker(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, RQ_WORKER_PREFIX "%s", name);
}

/* Plain commands, no script: the worker's user may not EVAL (a script
 * could hold the server busy), and Redis would check the script's
 * commands against the same rights anyway. The fleet's "last worker seen"
 * (RQ_WORKERS_SEEN) outlives the worker's own record: `vrctl status` says
 * how long ago it was. */
int rq_worker_heartbeat(struct rq *q, const struct rq_worker_info *w, int ttl_s, vr_err *err)
{
    char key[200], ttl[16], fps[32], cd[32], fd[32], seen[32], hb[16], gu[32], gm[32], cf[32], cr[32];
    rq_key_worker(key, sizeof key, w->name);
    snprintf(cr, sizeof cr, "%lld", w->chunk_read);
    snprintf(cf, sizeof cf, "%lld", w->chunk_frames);
    snprintf(ttl, sizeof ttl, "%d", ttl_s);
    snprintf(fps, sizeof fps, "%.2f", w->fps);
    snprintf(cd, sizeof cd, "%lld", w->chunks_done);
    snprintf(fd, sizeof fd, "%lld", w->frames_done);
    snprintf(seen, sizeof seen, "%lld", rq_server_ms(q)); /* not this host's clock: it may jump */
    snprintf(hb, sizeof hb, "%d", w->hb_ms);
    snprintf(gu, sizeof gu, "%.1f", w->gpu_util);
    snprintf(gm, sizeof gm, "%lld", w->gpu_mem);
    const char *hset[] = { "HSET", key, "gpu", w->gpu, "state", w->state, "chunk", w->chunk,
                           "fps", fps, "chunks_done", cd, "frames_done", fd, "seen_ms", seen,
                           "hb_ms", hb, "gpu_util", gu, "gpu_mem", gm, "chunk_frames", cf,
                           "chunk_read", cr };
    const char *expire[] = { "EXPIRE", key, ttl };
    const char *sadd[] = { "SADD", RQ_WORKERS, w->name };
    const char *last[] = { "HSET", RQ_WORKERS_SEEN, "worker_seen_ms", seen };
    const char *const *cmds[] = { hset, expire, sadd, last };
    const int argc[] = { 26, 3, 3, 4 };
    for (int i = 0; i < 4; i++) {
        vr_err e = { 0 };
        redisReply *r = rq_cmdargv(q, &e, argc[i], (const char **)cmds[i], NULL);
        if (r) {
            freeReplyObject(r);
            continue;
        }
        /* Out of memory, Redis refuses the HSET but not the EXPIRE: the
         * key (its last heartbeat) lives on, so that lists show the worker
         * alive and stalled instead of gone (issue 42) */
        if (i == 0 && strstr(e.msg, "OOM ") && (r = rq_cmdargv(q, NULL, 3, expire, NULL)))
            freeReplyObject(r);
        if (err)
            *err = e;
        return e.code ? e.code : VR_EREDIS;
    }
    return 0;
}

/* A process that stops cleanly: its heartbeat key deleted, its name off
 * the list `set`. */
static int rq_heartbeat_gone(struct rq *q, const char *key, const char *set, const char *name,
                             vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "DEL %s", key);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    if (!(r = rq_cmd(q, err, "SREM %s %s", set, name)))
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

int rq_worker_gone(struct rq *q, const char *name, vr_err *err)
{
    char key[200];
    rq_key_worker(key, sizeof key, name);
    return rq_heartbeat_gone(q, key, RQ_WORKERS, name, err);
}

/* One worker's record into w; 0 when it has expired, -1 when it is no
 * heartbeat: a key without a TTL, or with one no heartbeat sets (a worker's
 * user can HSET and SADD a fake that would otherwise stay for good in
 * `vrctl workers` and /metrics: issue 41, finding 8). */
static int rq_worker_read(struct rq *q, struct rq_worker_info *w)
{
    char key[200], fps[32] = "", cd[32] = "", fd[32] = "", seen[32] = "", hb[16] = "";
    char gu[32] = "", gm[32] = "", cf[32] = "";
    rq_key_worker(key, sizeof key, w->name);
    redisReply *t = rq_cmd(q, NULL, "PTTL %s", key);
    long long pttl = t && t->type == REDIS_REPLY_INTEGER ? t->integer : -2;
    freeReplyObject(t);
    if (pttl == -2)
        return 0;
    if (pttl < 0 || pttl > RQ_WORKER_TTL_MAX_S * 1000LL)
        return -1;
    int found = rq_hget(q, key, "gpu", w->gpu, sizeof w->gpu, NULL) > 0;
    found |= rq_hget(q, key, "state", w->state, sizeof w->state, NULL) > 0;
    found |= rq_hget(q, key, "chunk", w->chunk, sizeof w->chunk, NULL) > 0;
    found |= rq_hget(q, key, "fps", fps, sizeof fps, NULL) > 0;
    found |= rq_hget(q, key, "chunks_done", cd, sizeof cd, NULL) > 0;
    found |= rq_hget(q, key, "frames_done", fd, sizeof fd, NULL) > 0;
    found |= rq_hget(q, key, "seen_ms", seen, sizeof seen, NULL) > 0;
    found |= rq_hget(q, key, "hb_ms", hb, sizeof hb, NULL) > 0;
    w->seen_ms = atoll(seen);
    w->hb_ms = atoi(hb);
    rq_hget(q, key, "gpu_util", gu, sizeof gu, NULL);
    rq_hget(q, key, "gpu_mem", gm, sizeof gm, NULL);
    rq_hget(q, key, "chunk_frames", cf, sizeof cf, NULL);
    w->chunk_frames = rq_record_ll(cf);
    rq_hget(q, key, "chunk_read", cf, sizeof cf, NULL);
    w->chunk_read = rq_record_ll(cf);
    w->fps = atof(fps);
    w->gpu_util = gu[0] ? atof(gu) : -1;
    w->gpu_mem = atoll(gm);
    w->chunks_done = atoll(cd);
    w->frames_done = atoll(fd);
    text_strip_controls(w->gpu); /* the worker's user may write anything there */
    text_strip_controls(w->state);
    text_strip_controls(w->chunk);
    return found;
}

int rq_worker_silent(const struct rq_worker_info *w, long long now_ms)
{
    long long hb = w->hb_ms > 0 ? w->hb_ms : 1000;
    return w->seen_ms > 0 && now_ms - w->seen_ms > 3 * hb + 500;
}

int rq_workers_list(struct rq *q, struct rq_worker_info *out, int max, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", RQ_WORKERS);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++) {
        struct rq_worker_info *w = &out[n];
        memset(w, 0, sizeof *w);
        if (rq_reply_str(r->element[i], w->name, sizeof w->name, NULL) <= 0)
            continue;
        int got = rq_worker_read(q, w);
        if (got < 0) /* not a heartbeat: not shown (the controller's audit does not drop it) */
            continue;
        if (got) {
            text_strip_controls(w->name); /* read with its key: shown from here on */
            n++;
            continue;
        }
        redisReply *d = rq_cmd(q, NULL, "SREM %s %s", RQ_WORKERS, w->name); /* expired */
        if (d)
            freeReplyObject(d);
    }
    freeReplyObject(r);
    return n;
}

/* KEYS: controller, controllers, stats. ARGV: name, now (ms), ttl (ms). */
static const char CONTROLLER_HB_LUA[] =
    "redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
    "redis.call('SADD', KEYS[2], ARGV[1])\n"
    "redis.call('HSET', KEYS[3], 'controller_seen_ms', ARGV[2])\n"
    "return 1\n";

static void rq_key_controller(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, RQ_CONTROLLER_PREFIX "%s", name);
}

int rq_controller_heartbeat(struct rq *q, const char *name, int ttl_ms, vr_err *err)
{
    char key[200], now[32], ttl[16];
    rq_key_controller(key, sizeof key, name);
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    snprintf(ttl, sizeof ttl, "%d", ttl_ms);
    const char *kv[] = { key, RQ_CONTROLLERS, RQ_STATS, name, now, ttl };
    long long v;
    return rq_eval_int(q, err, CONTROLLER_HB_LUA, 3, kv, 6, &v);
}

int rq_controller_gone(struct rq *q, const char *name, vr_err *err)
{
    char key[200];
    rq_key_controller(key, sizeof key, name);
    return rq_heartbeat_gone(q, key, RQ_CONTROLLERS, name, err);
}

/* ---- liveness ---- */

int rq_owner_live(struct rq *q, const char *owner)
{
    char key[200];
    if (!strncmp(owner, "c:", 2))
        rq_key_controller(key, sizeof key, owner + 2);
    else if (!strncmp(owner, "w:", 2))
        rq_key_worker(key, sizeof key, owner + 2);
    else
        return VR_EINVAL; /* no owner we know: kept */
    redisReply *r = rq_cmd(q, NULL, "EXISTS %s", key);
    if (!r)
        return VR_EREDIS;
    int live = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : VR_EREDIS;
    freeReplyObject(r);
    return live;
}

/* Controllers listed whose heartbeat key still lives; the others are
 * dropped from the list on the way. Returns the count or <0. */
static int rq_controllers_alive(struct rq *q, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", RQ_CONTROLLERS);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        char name[160], key[200];
        if (rq_reply_str(r->element[i], name, sizeof name, NULL) <= 0)
            continue;
        rq_key_controller(key, sizeof key, name);
        redisReply *x = rq_cmd(q, NULL, "EXISTS %s", key);
        int alive = x && x->type == REDIS_REPLY_INTEGER && x->integer == 1;
        if (x)
            freeReplyObject(x);
        if (alive) {
            n++;
        } else if ((x = rq_cmd(q, NULL, "SREM %s %s", RQ_CONTROLLERS, name))) {
            freeReplyObject(x);
        }
    }
    freeReplyObject(r);
    return n;
}

int rq_liveness_read(struct rq *q, struct rq_liveness *lv, vr_err *err)
{
    memset(lv, 0, sizeof *lv);
    int n = rq_controllers_alive(q, err);
    if (n < 0)
        return n;
    lv->controllers = n;
    enum { MAXW = 256 };
    struct rq_worker_info *w = malloc(MAXW * sizeof *w);
    if (!w)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    n = rq_workers_list(q, w, MAXW, err);
    long long now = rq_server_ms(q); /* the clock the heartbeats were stamped by */
    for (int i = 0; i < n; i++)
        lv->workers += !rq_worker_silent(&w[i], now);
    free(w);
    if (n < 0)
        return n;
    char v[32] = "";
    if (rq_hget(q, RQ_STATS, "controller_seen_ms", v, sizeof v, NULL) > 0)
        lv->controller_seen_ms = rq_record_ll(v);
    v[0] = '\0';
    if (rq_hget(q, RQ_WORKERS_SEEN, "worker_seen_ms", v, sizeof v, NULL) > 0)
        lv->worker_seen_ms = rq_record_ll(v);
    return 0;
}

/* ---- stalled entries ---- */

/* The job and chunk named by entry `id` of `stream`: 1, 0 when it names
 * none (or vanished), <0 on error. */
static int rq_entry_chunk(struct rq *q, const char *stream, const char *id, char *job,
                          size_t jn, int *idx, vr_err *err)
{
    redisReply *x = rq_cmd(q, err, "XRANGE %s %s %s", stream, id, id);
    if (!x)
        return err ? err->code : VR_EREDIS;
    job[0] = '\0';
    int rc = x->type == REDIS_REPLY_ARRAY && x->elements == 1 &&
             rq_entry_names(x->element[0], job, jn, idx);
    freeReplyObject(x);
    return rc;
}

/* XPENDING of `stream` (group workers): entries idle for at least
 * min_idle_ms, of worker `name` only when it is not NULL (a worker reads
 * under a new consumer for every claim, so its entries are found by the
 * name part). */
static int rq_pending_list(struct rq *q, const char *stream, long long min_idle_ms,
                           const char *name, struct rq_pending *out, int max, vr_err *err)
{
    char idle[32], count[16];
    snprintf(idle, sizeof idle, "%lld", min_idle_ms);
    snprintf(count, sizeof count, "%d", name ? 1000 : max);
    const char *argv[] = { "XPENDING", stream, RQ_G_WORKERS, "IDLE", idle, "-", "+", count };
    redisReply *r = rq_cmdargv(q, err, 8, argv, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return vr_err_set(err, VR_EFORMAT, "XPENDING: unexpected reply");
    }
    int n = 0, rc = 0;
    for (size_t i = 0; i < r->elements && n < max; i++) {
        const redisReply *p = r->element[i];
        struct rq_pending *e = &out[n];
        if (p->type != REDIS_REPLY_ARRAY || p->elements != 4 ||
            rq_reply_str(p->element[0], e->id, sizeof e->id, NULL) <= 0 ||
            rq_reply_str(p->element[1], e->consumer, sizeof e->consumer, NULL) <= 0)
            continue;
        rq_consumer_worker(e->consumer, e->owner, sizeof e->owner);
        if (name && strcmp(e->owner, name))
            continue;
        if ((rc = rq_entry_chunk(q, stream, e->id, e->job, sizeof e->job, &e->idx, err)) < 0)
            break;
        if (rc == 0) { /* names no chunk: nothing could ever run it */
            rq_ack(q, stream, RQ_G_WORKERS, e->id, NULL);
            continue;
        }
        n++;
    }
    freeReplyObject(r);
    return rc < 0 ? rc : n;
}

int rq_pending_idle(struct rq *q, const char *stream, long long min_idle_ms,
                    struct rq_pending *out, int max, vr_err *err)
{
    return rq_pending_list(q, stream, min_idle_ms, NULL, out, max, err);
}

int rq_worker_died(struct rq *q, const char *name, const char *key, const char *reason,
                   vr_err *err)
{
    static const char *const streams[] = { RQ_CHUNKS_HI, RQ_CHUNKS };
    int released = 0;
    for (int s = 0; s < 2; s++) {
        struct rq_pending held[16]; /* a worker holds one chunk; more is left to the audit */
        int n = rq_pending_list(q, streams[s], 0, name, held, 16, err);
        if (n < 0)
            return n;
        for (int i = 0; i < n; i++) {
            const struct rq_pending *p = &held[i];
            if (key && !rq_claim_of_key(p->consumer, name, key))
                continue; /* not its claim: the name alone proves nothing */
            /* as a reclaim (no owner, no idle wait): the worker's death is
             * not the chunk's failure, so no backoff and a death counted */
            int rc = rq_chunk_fail(q, streams[s], NULL, p->id, p->job, p->idx, reason, 0, err);
            if (rc < 0)
                return rc;
            if (rc == 1 || rc == 2)
                rq_event(q, p->job, "chunk %d: %s; %s", p->idx, reason,
                         rc == 1 ? "requeued" : "dead-lettered");
            released += rc == 1 || rc == 2;
        }
    }
    /* with a key, only the claims prove anything: the record is the
     * parent's to remove (it may, with the worker's user) */
    int rc = key ? 0 : rq_worker_gone(q, name, err);
    return rc < 0 ? rc : released;
}

/* ---- waking blocked readers ---- */

/* At most this many clients looked at: a fleet's own Redis has a few per
 * process. */
#define RQ_UNBLOCK_MAX 4096

int rq_unblock_all(struct rq *q, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "CLIENT LIST");
    if (!r)
        return err ? err->code : VR_EREDIS;
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return vr_err_set(err, VR_EFORMAT, "CLIENT LIST: not a string");
    }
    int woken = 0, seen = 0;
    /* a line: "id=7 addr=... flags=b ... cmd=xreadgroup ..."; flags b: blocked */
    for (const char *line = r->str; line && *line && seen < RQ_UNBLOCK_MAX; seen++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        line = end ? end + 1 : NULL;
        char *flags = strstr(buf, " flags=");
        long long id = -1;
        if (!flags || strncmp(buf, "id=", 3) || sscanf(buf + 3, "%lld", &id) != 1 || id < 0)
            continue;
        flags += strlen(" flags=");
        size_t fl = strcspn(flags, " ");
        if (!memchr(flags, 'b', fl))
            continue;
        redisReply *u = rq_cmd(q, NULL, "CLIENT UNBLOCK %lld", id);
        woken += u && u->type == REDIS_REPLY_INTEGER && u->integer == 1;
        if (u)
            freeReplyObject(u);
    }
    freeReplyObject(r);
    return woken;
}


/*
 * rq_claim.c - claims, the worker's reports and their checks (rq_claim.h).
 */
#include "rq_claim.h"

#include "job.h"
#include "rq_bounds.h"
#include "rq_eval.h"
#include "rq_jstate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- claims ---- */

/* The fixed key of H (a plain hash: HMAC under a label keeps one primitive). */
static const char CLAIM_LABEL[] = "vrseg-claim";

static int claim_hash(const char *in, char out[HMAC_SHA256_HEX])
{
    struct hmac_part p = { in, strlen(in) };
    return hmac_sha256_hex(CLAIM_LABEL, sizeof CLAIM_LABEL - 1, &p, 1, out);
}

static int hex_run(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

int rq_claim_key_valid(const char *s)
{
    return s && hex_run(s, RQ_CLAIM_KEY_HEX - 1);
}

int rq_claim_key_new(char key[RQ_CLAIM_KEY_HEX], vr_err *err)
{
    unsigned char r[32];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return vr_err_set(err, VR_EIO, "cannot draw a claim key: %s", strerror(errno));
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(key + 2 * i, 3, "%02x", r[i]);
    return 0;
}

static int name_valid(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 100 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._-") == n;
}

/* T of claim k under key: HMAC(key, k). */
static int claim_token(const char *key, long long k, char token[HMAC_SHA256_HEX])
{
    char ks[24];
    snprintf(ks, sizeof ks, "%lld", k);
    struct hmac_part p = { ks, strlen(ks) };
    return hmac_sha256_hex(key, strlen(key), &p, 1, token);
}

int rq_claim_make(const char *name, const char *key, long long k, struct rq_claim *c,
                  vr_err *err)
{
    memset(c, 0, sizeof *c);
    if (!name_valid(name) || !rq_claim_key_valid(key) || k < 0)
        return vr_err_set(err, VR_EINVAL, "claim: bad worker name or key");
    char cc[HMAC_SHA256_HEX];
    if (claim_token(key, k, c->token) < 0 || claim_hash(c->token, c->proof) < 0 ||
        claim_hash(c->proof, cc) < 0)
        return vr_err_set(err, VR_EIO, "claim: libcrypto failed");
    snprintf(c->consumer, sizeof c->consumer, "%s+%lld+%.*s", name, k, RQ_CLAIM_C_HEX, cc);
    return 0;
}

/* Splits "name+k+C": the name's length, k and C (NULL when malformed). */
static const char *consumer_split(const char *consumer, size_t *namelen, long long *k)
{
    const char *a = strchr(consumer, '+');
    const char *b = a ? strchr(a + 1, '+') : NULL;
    if (!a || !b || a == consumer || b - a < 2 || b - a > 19 || !hex_run(b + 1, RQ_CLAIM_C_HEX))
        return NULL;
    char ks[20];
    snprintf(ks, sizeof ks, "%.*s", (int)(b - a - 1), a + 1);
    if (strspn(ks, "0123456789") != strlen(ks))
        return NULL;
    *namelen = (size_t)(a - consumer);
    *k = strtoll(ks, NULL, 10);
    return b + 1;
}

int rq_claim_proves(const char *consumer, const char *shown, enum rq_shown what)
{
    size_t nl;
    long long k;
    const char *c = consumer ? consumer_split(consumer, &nl, &k) : NULL;
    if (!c || !shown || !hex_run(shown, HMAC_SHA256_HEX - 1))
        return 0;
    char p[HMAC_SHA256_HEX], h[HMAC_SHA256_HEX];
    if (what == RQ_SHOWN_TOKEN) {
        if (claim_hash(shown, p) < 0)
            return 0;
        shown = p;
    }
    if (claim_hash(shown, h) < 0)
        return 0;
    return memcmp(h, c, RQ_CLAIM_C_HEX) == 0;
}

int rq_claim_of_key(const char *consumer, const char *name, const char *key)
{
    size_t nl;
    long long k;
    char token[HMAC_SHA256_HEX];
    if (!consumer || !name || !consumer_split(consumer, &nl, &k) || nl != strlen(name) ||
        strncmp(consumer, name, nl) || !rq_claim_key_valid(key) || claim_token(key, k, token) < 0)
        return 0;
    return rq_claim_proves(consumer, token, RQ_SHOWN_TOKEN);
}

void rq_consumer_worker(const char *consumer, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", (int)strcspn(consumer, "+"), consumer);
}

/* ---- reading the chunk held ---- */

int rq_chunk_peek(struct rq *q, const struct rq_held *h, struct rq_start *st, char *why,
                  size_t whyn, vr_err *err)
{
    char ck[128];
    rq_key_chunk(ck, sizeof ck, h->job, h->idx);
    /* the task (up to 8 KiB) only at the start, not at every heartbeat */
    redisReply *r = rq_cmd(q, err, st ? "HMGET %s entry state attempts task"
                                      : "HMGET %s entry state attempts", ck);
    if (!r)
        return err ? err->code : VR_EREDIS;
    char entry[RQ_ID_MAX] = "", state[32] = "", att[24] = "", js[32] = "";
    int rc = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != (st ? 4u : 3u))
        rc = vr_err_set(err, VR_EFORMAT, "HMGET %s: unexpected reply", ck);
    else {
        rq_reply_str(r->element[0], entry, sizeof entry, NULL);
        rq_reply_str(r->element[1], state, sizeof state, NULL);
        rq_reply_str(r->element[2], att, sizeof att, NULL);
        if (st) {
            rc = rq_task_copy(r->element[3], h->job, h->idx, st, err);
            long long a = rq_record_ll(att);
            st->attempt = a >= 0 && a < 1000000 ? (int)a + 1 : 1;
        }
    }
    freeReplyObject(r);
    /* the job's state key, not its record: the worker's user reads no spec */
    int jr = rc < 0 ? rc : rq_jstate_get(q, h->job, js, sizeof js, err);
    if (jr < 0)
        return jr;
    if (strcmp(entry, h->id)) {
        snprintf(why, whyn, "stale entry");
        return RQ_HELD_LOST;
    }
    if (!strcmp(state, "done") || !strcmp(state, "dead")) {
        snprintf(why, whyn, "chunk already %s", state);
        return RQ_HELD_LOST;
    }
    if (strcmp(js, "running") && strcmp(js, "splitting")) {
        snprintf(why, whyn, "job is %s", js[0] ? js : "gone");
        return RQ_HELD_JOB_ENDED;
    }
    return rc < 0 ? rc : RQ_HELD_YES;
}

/* ---- reports ---- */

/* XADD vr:reports of the common fields of h and `shown`, then n more
 * field/value pairs. */
static int report_send(struct rq *q, const char *kind, const struct rq_held *h,
                       const char *shown_field, const char *shown, const char **more, int n,
                       vr_err *err)
{
    char ix[16];
    snprintf(ix, sizeof ix, "%d", h->idx);
    const char *argv[40] = { "XADD", RQ_REPORTS, "*", "kind", kind, "consumer",
                             h->claim.consumer, "stream", h->stream, "entry", h->id, "job",
                             h->job, "idx", ix, shown_field, shown };
    int argc = 17;
    for (int i = 0; i < n && argc < 40; i++)
        argv[argc++] = more[i];
    redisReply *r = rq_cmdargv(q, err, argc, argv, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

int rq_report_start(struct rq *q, const struct rq_held *h, vr_err *err)
{
    return report_send(q, "start", h, "proof", h->claim.proof, NULL, 0, err);
}

int rq_report_renew(struct rq *q, const struct rq_held *h, long long frames, vr_err *err)
{
    char fr[32];
    snprintf(fr, sizeof fr, "%lld", frames);
    const char *more[] = { "frames", fr };
    return report_send(q, "renew", h, "proof", h->claim.proof, more, 2, err);
}

int rq_report_done(struct rq *q, const struct rq_held *h, long long frames, double fps,
                   const char *metrics_json, const char *sum, const char *note, vr_err *err)
{
    char fr[32], fp[32];
    snprintf(fr, sizeof fr, "%lld", frames);
    snprintf(fp, sizeof fp, "%.3f", fps);
    const char *more[] = { "frames", fr, "fps", fp, "metrics", metrics_json ? metrics_json : "{}",
                           "sum", sum ? sum : "", "note", note ? note : "", "end", h->end };
    return report_send(q, "done", h, "token", h->claim.token, more, 12, err);
}

int rq_report_fail(struct rq *q, const struct rq_held *h, const char *reason, int permanent,
                   vr_err *err)
{
    const char *more[] = { "reason", reason, "permanent",
                           permanent == RQ_FAIL_STORAGE ? "3"
                           : permanent == RQ_FAIL_WORKER ? "2" : permanent ? "1" : "0" };
    return report_send(q, "fail", h, "token", h->claim.token, more, 4, err);
}

int rq_report_skip(struct rq *q, const struct rq_held *h, const char *why, vr_err *err)
{
    const char *more[] = { "note", why };
    return report_send(q, "skip", h, "token", h->claim.token, more, 2, err);
}

int rq_report_died(struct rq *q, const char *name, const char *key, const char *reason,
                   vr_err *err)
{
    const char *argv[] = { "XADD", RQ_REPORTS, "*", "kind", "died", "worker", name, "key", key,
                           "reason", reason };
    redisReply *r = rq_cmdargv(q, err, 11, argv, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

/* ---- the controller's side ---- */

static int id_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 3 && n < RQ_ID_MAX && strspn(s, "0123456789-") == n && strchr(s, '-');
}

static const char *field(const struct rq_msg *m, const char *k)
{
    const char *v = rq_msg_get(m, k);
    return v ? v : "";
}

int rq_report_parse(const struct rq_msg *m, struct rq_report *r, vr_err *err)
{
    memset(r, 0, sizeof *r);
    r->kind = field(m, "kind");
    r->idx = -1;
    r->job = r->metrics = r->sum = r->note = r->reason = r->worker = r->end = "";
    static const char *const kinds[] = { "start", "renew", "done", "fail", "skip", "died" };
    size_t k = 0;
    while (k < 6 && strcmp(r->kind, kinds[k]))
        k++;
    if (k == 6)
        return vr_err_set(err, VR_EFORMAT, "unknown kind");
    r->reason = field(m, "reason");
    if (strlen(r->reason) > 1024)
        return vr_err_set(err, VR_EFORMAT, "reason over 1024 bytes");
    if (!strcmp(r->kind, "died")) {
        r->worker = field(m, "worker");
        r->shown = field(m, "key");
        if (!name_valid(r->worker))
            return vr_err_set(err, VR_EFORMAT, "bad worker name");
        return 0;
    }
    r->consumer = field(m, "consumer");
    r->stream = field(m, "stream");
    r->id = field(m, "entry");
    r->shown = field(m, !strcmp(r->kind, "start") || !strcmp(r->kind, "renew") ? "proof"
                                                                                  : "token");
    if (strlen(r->consumer) >= RQ_CONSUMER_MAX)
        return vr_err_set(err, VR_EFORMAT, "consumer name too long");
    if (strcmp(r->stream, RQ_CHUNKS) && strcmp(r->stream, RQ_CHUNKS_HI))
        return vr_err_set(err, VR_EFORMAT, "not a chunk stream");
    if (!id_valid(r->id))
        return vr_err_set(err, VR_EFORMAT, "bad entry id");
    const char *job = field(m, "job"), *ix = field(m, "idx");
    char *end;
    long long idx = strtoll(ix, &end, 10);
    if (job_id_valid(job) && ix[0] && !*end && idx >= 0 && idx <= 99999) {
        r->job = job;
        r->idx = (int)idx;
    } else if (strcmp(r->kind, "skip")) { /* only a skip may name no chunk */
        return vr_err_set(err, VR_EFORMAT, "bad job or chunk index");
    }
    r->note = field(m, "note");
    if (strlen(r->note) > 1024)
        return vr_err_set(err, VR_EFORMAT, "note over 1024 bytes");
    r->permanent = !strcmp(field(m, "permanent"), "1") ? 1
                   : !strcmp(field(m, "permanent"), "2") ? RQ_FAIL_WORKER
                   : !strcmp(field(m, "permanent"), "3") ? RQ_FAIL_STORAGE : 0;
    r->frames = -1;
    if (!strcmp(r->kind, "renew") && field(m, "frames")[0]) { /* older workers send none */
        const char *fr = field(m, "frames");
        r->frames = strtoll(fr, &end, 10);
        if (*end || r->frames < 0 || r->frames > 1000000000LL)
            return vr_err_set(err, VR_EFORMAT, "bad frame count");
    }
    if (!strcmp(r->kind, "done")) {
        const char *fr = field(m, "frames"), *fp = field(m, "fps");
        r->frames = strtoll(fr, &end, 10);
        if (!fr[0] || *end || r->frames < 0 || r->frames > 1000000000LL)
            return vr_err_set(err, VR_EFORMAT, "bad frame count");
        r->fps = strtod(fp, &end);
        if (!fp[0] || *end || !(r->fps >= 0 && r->fps <= 1e7))
            return vr_err_set(err, VR_EFORMAT, "bad fps");
        r->metrics = field(m, "metrics");
        if (strlen(r->metrics) > RQ_REPORT_METRICS_MAX)
            return vr_err_set(err, VR_EFORMAT, "metrics over %d bytes", RQ_REPORT_METRICS_MAX);
        r->sum = field(m, "sum");
        if (r->sum[0] && (strncmp(r->sum, "sha256:", 7) || !hex_run(r->sum + 7, 64)))
            return vr_err_set(err, VR_EFORMAT, "bad output sum");
        r->end = field(m, "end");
        if (strlen(r->end) >= sizeof ((struct rq_held *)0)->end ||
            strspn(r->end, "0123456789-:open") != strlen(r->end))
            return vr_err_set(err, VR_EFORMAT, "bad range end");
    }
    return 0;
}

int rq_report_proves(const struct rq_report *r)
{
    if (!strcmp(r->kind, "died"))
        return rq_claim_key_valid(r->shown);
    int proof = !strcmp(r->kind, "start") || !strcmp(r->kind, "renew");
    return rq_claim_proves(r->consumer, r->shown, proof ? RQ_SHOWN_PROOF : RQ_SHOWN_TOKEN);
}

/* KEYS: chunks, chunk. ARGV: group, consumer, id, job key (read). */
static const char SKIP_LUA[] =
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n"
    "if #p ~= 1 or p[1][2] ~= ARGV[2] then return 0 end\n"
    "local cur = redis.call('HMGET', KEYS[2], 'entry', 'state')\n"
    "local js = redis.call('HGET', ARGV[4], 'state')\n"
    "if cur[1] == ARGV[3] and cur[2] ~= 'done' and cur[2] ~= 'dead' and\n"
    "   (js == 'running' or js == 'splitting') then return 0 end\n"
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"
    "return 1\n";

int rq_chunk_skip(struct rq *q, const char *stream, const char *consumer, const char *id,
                  const char *job, int idx, vr_err *err)
{
    char ck[128] = "vr:chunk:-", jk[128] = "vr:job:-"; /* no chunk named: nothing to run */
    if (job[0]) {
        rq_key_chunk(ck, sizeof ck, job, idx);
        rq_key_job(jk, sizeof jk, job);
    }
    const char *kv[] = { stream, ck, RQ_G_WORKERS, consumer, id, jk };
    long long v = 0;
    int rc = rq_eval_int(q, err, SKIP_LUA, 2, kv, 6, &v);
    return rc < 0 ? rc : (int)v;
}

/* KEYS: stream. ARGV: group, idle ms. XINFO CONSUMERS gives each consumer
 * as a flat name/value list. */
static const char SWEEP_LUA[] =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
    "local n = 0\n"
    "for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do\n"
    "  local f = {}\n"
    "  for i = 1, #c - 1, 2 do f[c[i]] = c[i + 1] end\n"
    "  if f.pending == 0 and tonumber(f.idle) >= tonumber(ARGV[2]) then\n"
    "    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f.name) n = n + 1 end\n"
    "end\n"
    "return n\n";

long long rq_consumers_sweep(struct rq *q, const char *stream, long long idle_ms, vr_err *err)
{
    char idle[24];
    snprintf(idle, sizeof idle, "%lld", idle_ms);
    const char *kv[] = { stream, RQ_G_WORKERS, idle };
    long long v = 0;
    int rc = rq_eval_int(q, err, SWEEP_LUA, 1, kv, 3, &v);
    return rc < 0 ? rc : v;
}

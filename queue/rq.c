/*
 * rq.c - Redis connection: address parsing, connect with AUTH/SELECT,
 * commands that drop the context after any error (hiredis contexts are
 * unusable after one) and reconnect on the next call, backoff, and checked
 * reply accessors. Streams live in rq_stream.c, Lua scripts in rq_scripts.c.
 */
#include "rq.h"

#include "cmdtable.h"
#include "job.h"
#include "clock.h"
#include "log.h"
#include "storage.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct rq {
    redisContext *c;       /* NULL while disconnected */
    struct rq_url url;
    char url_text[512];    /* for messages, password removed */
    int timeout_ms;
    int backoff_ms;        /* next rq_backoff sleep */
    long long trips;
    int warned_down;       /* logged "unreachable" when the outage began */
    double down_since_s;   /* clock_mono_s() then */
    double said_down_s;    /* and when it was last said */
};

/* While Redis stays away, a process waiting on it says so this often
 * (seconds): a log that falls silent reads as a hung process. */
#define RQ_STILL_DOWN_S 10

/* Logs an outage once as it begins (why: the first failure), then "still
 * unreachable" every RQ_STILL_DOWN_S while it lasts. */
static void rq_note_down(struct rq *q, const char *why)
{
    double now = clock_mono_s();
    if (!q->warned_down) {
        log_warn("%s; retrying with backoff", why);
        q->warned_down = 1;
        q->down_since_s = q->said_down_s = now;
    } else if (now - q->said_down_s >= RQ_STILL_DOWN_S) {
        log_warn("redis %s: still unreachable after %.0f s; waiting for it", q->url_text,
                 now - q->down_since_s);
        q->said_down_s = now;
    }
}

/* ---- address ---- */

static int rq_copy(char *dst, size_t n, const char *s, size_t len)
{
    if (len >= n)
        return -1;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

void rq_url_redact(const char *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s", s ? s : "");
    char *scheme = strstr(buf, "://");
    char *at = scheme ? strrchr(scheme + 3, '@') : NULL;
    char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
    if (at && !colon) /* "redis://S3CRET@host": a password typed without its ':' */
        colon = scheme + 2;
    if (!colon)
        return;
    char rest[512];
    snprintf(rest, sizeof rest, "%s", at);
    snprintf(colon + 1, n - (size_t)(colon + 1 - buf), "***%s", rest);
}

/* Copies s[0..len) into dst (size n) decoding %XX escapes, so a password
 * with '@', ':' or '/' can be written in a URL. -1: too long or a bad %. */
static int rq_copy_decoded(char *dst, size_t n, const char *s, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (k + 1 >= n)
            return -1;
        if (s[i] != '%') {
            dst[k++] = s[i];
            continue;
        }
        unsigned v;
        char hex[3] = { 0 };
        if (i + 2 >= len)
            return -1;
        memcpy(hex, s + i + 1, 2);
        if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]) ||
            sscanf(hex, "%2x", &v) != 1 || v == 0)
            return -1;
        dst[k++] = (char)v;
        i += 2;
    }
    dst[k] = '\0';
    return 0;
}

int rq_url_parse(const char *s, struct rq_url *u, vr_err *err)
{
    memset(u, 0, sizeof *u);
    if (!s || !*s)
        return vr_err_set(err, VR_EINVAL, "redis address is empty (use --redis URL or VR_REDIS)");
    char shown[256]; /* s with its password replaced by *** */
    rq_url_redact(s, shown, sizeof shown);
    if (strncmp(s, "unix://", 7) == 0) {
        const char *p = s + 7;
        if (*p != '/')
            return vr_err_set(err, VR_EINVAL, "redis address '%s': unix:// needs an absolute socket path", shown);
        if (rq_copy(u->path, sizeof u->path, p, strlen(p)) < 0)
            return vr_err_set(err, VR_EINVAL, "redis address '%s': socket path longer than %zu bytes", shown, sizeof u->path - 1);
        u->is_unix = 1;
        return 0;
    }
    if (strncmp(s, "rediss://", 9) == 0)
        return vr_err_set(err, VR_EINVAL, "redis address '%s': rediss:// (TLS) is not built in "
                          "(Debian 12's hiredis 0.14 has no TLS); run a local TLS tunnel "
                          "(stunnel) and give its redis:// address: README.md, 'Security'", shown);
    if (strncmp(s, "redis://", 8) != 0)
        return vr_err_set(err, VR_EINVAL, "redis address '%s': expected redis://[user:password@]host:port[/db] or unix:///path.sock", shown);
    const char *p = s + 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *uend = colon ? colon : at;
        if (rq_copy_decoded(u->user, sizeof u->user, p, (size_t)(uend - p)) < 0 ||
            (colon && rq_copy_decoded(u->pass, sizeof u->pass, colon + 1,
                                      (size_t)(at - colon - 1)) < 0))
            return vr_err_set(err, VR_EINVAL, "redis address '%s': user or password too long, "
                              "or a bad %%XX escape in it", shown);
        if (colon && !u->pass[0])
            return vr_err_set(err, VR_EINVAL, "redis address '%s': empty password after ':'", shown);
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    const char *end = slash ? slash : p + strlen(p);
    const char *colon = NULL, *hs = p, *he;
    if (*p == '[') { /* an IPv6 literal: [::1]:6379 */
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb || rb[1] != ':')
            return vr_err_set(err, VR_EINVAL, "redis address '%s': IPv6 host must be [addr]:port", shown);
        hs = p + 1;
        he = rb;
        colon = rb + 1;
    } else {
        for (const char *q = p; q < end; q++)
            if (*q == ':')
                colon = q;
        he = colon;
        if (colon && memchr(p, ':', (size_t)(colon - p)))
            return vr_err_set(err, VR_EINVAL, "redis address '%s': write an IPv6 host in brackets, [addr]:port", shown);
    }
    if (!colon)
        return vr_err_set(err, VR_EINVAL, "redis address '%s': missing :port", shown);
    if (he == hs)
        return vr_err_set(err, VR_EINVAL, "redis address '%s': missing host", shown);
    if (rq_copy(u->host, sizeof u->host, hs, (size_t)(he - hs)) < 0)
        return vr_err_set(err, VR_EINVAL, "redis address: host too long");
    char num[16], why[128];
    long v;
    if ((size_t)(end - colon - 1) >= sizeof num ||
        rq_copy(num, sizeof num, colon + 1, (size_t)(end - colon - 1)) < 0 ||
        cli_parse_long("port", num, 1, 65535, &v, why, sizeof why) < 0)
        return vr_err_set(err, VR_EINVAL, "redis address '%s': port must be 1..65535", shown);
    u->port = (int)v;
    if (slash) {
        if (cli_parse_long("database", slash + 1, 0, 1000, &v, why, sizeof why) < 0)
            return vr_err_set(err, VR_EINVAL, "redis address '%s': database must be a number 0..1000", shown);
        u->db = (int)v;
    }
    return 0;
}

/* ---- password file ---- */

static char rq_pass_path[4096]; /* --redis-password-file; set before any thread */

void rq_password_file(const char *path)
{
    snprintf(rq_pass_path, sizeof rq_pass_path, "%s", path ? path : "");
}

/* Reads the password file (its first line) into u->pass, so the password
 * never appears in argv or the environment; refuses a password given twice. */
static int rq_password_apply(struct rq_url *u, vr_err *err)
{
    const char *path = rq_pass_path[0] ? rq_pass_path : getenv("VR_REDIS_PASSWORD_FILE");
    if (!path || !*path) {
        if (u->user[0] && !u->pass[0])
            /* the name is not echoed: redis://S3CRET@host is often a
             * password written without its ':' */
            return vr_err_set(err, VR_EINVAL, "redis address: the user before '@' has no "
                              "password: redis://user:password@host:port, redis://:password@"
                              "host:port or --redis-password-file FILE");
        return 0;
    }
    if (u->pass[0])
        return vr_err_set(err, VR_EINVAL, "redis password given twice: in the address and in "
                          "%s (--redis-password-file / VR_REDIS_PASSWORD_FILE); keep one", path);
    int rc = storage_read_secret(path, u->pass, sizeof u->pass, err);
    return rc < 0 ? vr_err_prefix(err, "redis password file") : 0;
}

int rq_url_check(const char *s, vr_err *err)
{
    struct rq_url u;
    int rc = rq_url_parse(s, &u, err);
    explicit_bzero(&u, sizeof u); /* it may hold a password */
    return rc;
}

const char *rq_url_pick(const char *flag)
{
    if (flag && *flag)
        return flag;
    const char *env = getenv("VR_REDIS");
    return (env && *env) ? env : RQ_URL_DEFAULT;
}

/* ---- connection ---- */

static void rq_drop(struct rq *q)
{
    if (q->c) {
        redisFree(q->c);
        q->c = NULL;
    }
}

static int rq_connect(struct rq *q, vr_err *err)
{
    struct timeval tv = { q->timeout_ms / 1000, (q->timeout_ms % 1000) * 1000 };
    redisContext *c = q->url.is_unix ? redisConnectUnixWithTimeout(q->url.path, tv)
                                     : redisConnectWithTimeout(q->url.host, q->url.port, tv);
    if (!c)
        return vr_err_set(err, VR_ENOMEM, "redis %s: out of memory", q->url_text);
    if (c->err) {
        vr_err_set(err, VR_EREDIS, "cannot reach redis at %s: %s", q->url_text, c->errstr);
        redisFree(c);
        return VR_EREDIS;
    }
    redisSetTimeout(c, tv);
    q->c = c;
    redisReply *r = NULL;
    int code = VR_EREDIS;
    if (q->url.pass[0]) {
        q->trips++;
        r = q->url.user[0] ? redisCommand(c, "AUTH %s %s", q->url.user, q->url.pass)
                           : redisCommand(c, "AUTH %s", q->url.pass);
        if (!r) {
            vr_err_set(err, VR_EREDIS, "redis %s: AUTH failed: %s", q->url_text, c->errstr);
            goto fail;
        }
        if (r->type == REDIS_REPLY_ERROR) { /* waiting will not make it right */
            code = VR_EINVAL;
            vr_err_set(err, VR_EINVAL, "redis %s: AUTH%s%s refused: %.120s (check the password "
                       "in the address or --redis-password-file)", q->url_text,
                       q->url.user[0] ? " as " : "", q->url.user, r->str);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (q->url.db) {
        q->trips++;
        r = redisCommand(c, "SELECT %d", q->url.db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            vr_err_set(err, VR_EREDIS, "redis %s: SELECT %d failed: %s", q->url_text,
                       q->url.db, r ? r->str : c->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (q->warned_down)
        log_info("redis %s: connected again after %.1f s", q->url_text,
                 clock_mono_s() - q->down_since_s);
    q->warned_down = 0;
    return 0;
fail:
    if (r)
        freeReplyObject(r);
    rq_drop(q);
    return code;
}

int rq_open(const char *url, int timeout_ms, struct rq **out, vr_err *err)
{
    *out = NULL;
    struct rq *q = calloc(1, sizeof *q);
    if (!q)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = rq_url_parse(url, &q->url, err);
    if (rc == 0)
        rc = rq_password_apply(&q->url, err);
    if (rc < 0) {
        explicit_bzero(q, sizeof *q);
        free(q);
        return rc;
    }
    int v6 = strchr(q->url.host, ':') != NULL;
    if (q->url.is_unix)
        snprintf(q->url_text, sizeof q->url_text, "unix://%s", q->url.path);
    else
        snprintf(q->url_text, sizeof q->url_text, "redis://%s%s%s%s%s:%d/%d", q->url.user,
                 q->url.user[0] ? "@" : "", v6 ? "[" : "", q->url.host, v6 ? "]" : "",
                 q->url.port, q->url.db);
    q->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
    q->backoff_ms = 100;
    /* hiredis write()s to the socket: a server that went away would kill the
     * process with SIGPIPE instead of returning an error we can retry. */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    *out = q;
    return rq_connect(q, err);
}

void rq_free(struct rq **qp)
{
    if (!qp || !*qp)
        return;
    rq_drop(*qp);
    explicit_bzero(*qp, sizeof **qp); /* the password */
    free(*qp);
    *qp = NULL;
}

int rq_connected(const struct rq *q) { return q && q->c != NULL; }
long long rq_round_trips(const struct rq *q) { return q ? q->trips : 0; }

int rq_backoff(struct rq *q)
{
    int ms = q->backoff_ms;
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    q->backoff_ms = ms * 2 > 5000 ? 5000 : ms * 2;
    return ms;
}

/* What a lost connection means, in words: hiredis hands over the system's
 * error text, and "Resource temporarily unavailable" (its command timeout)
 * or "Broken pipe" told users nothing about Redis (issue 26, finding 9):
 * the message says "Redis connection timed out" or "Redis connection
 * lost", and what the system said only for another error. */
static const char *rq_lost_why(const struct rq *q, char *buf, size_t n)
{
    const char *e = q->c && q->c->errstr[0] ? q->c->errstr : "";
    if (strstr(e, "Resource temporarily unavailable") || strstr(e, "timed out"))
        snprintf(buf, n, "Redis connection timed out (no answer within %.1f s)",
                 q->timeout_ms / 1000.0);
    else if (!e[0] || strstr(e, "Broken pipe") || strstr(e, "Connection reset") ||
             strstr(e, "closed the connection"))
        snprintf(buf, n, "Redis connection lost (the server closed it)");
    else
        snprintf(buf, n, "Redis connection lost (%s)", e);
    return buf;
}

/* Turns a reply (or its absence) into the caller's result: error replies and
 * lost connections become NULL + err; a lost connection drops the context. */
static redisReply *rq_finish(struct rq *q, redisReply *r, vr_err *err)
{
    if (!r) {
        char why[200];
        rq_lost_why(q, why, sizeof why);
        vr_err_set(err, VR_EREDIS, "redis %s: %s", q->url_text, why);
        char said[800];
        snprintf(said, sizeof said, "redis %s: %s", q->url_text, why);
        rq_note_down(q, said);
        rq_drop(q);
        return NULL;
    }
    q->backoff_ms = 100;
    if (r->type == REDIS_REPLY_ERROR && r->str && !strncmp(r->str, "NOAUTH", 6)) {
        vr_err_set(err, VR_EINVAL, "redis %s: %.100s: give the password (redis://:password@"
                   "host:port or --redis-password-file)", q->url_text, r->str);
        freeReplyObject(r);
        return NULL;
    }
    /* an ACL denial: NOPERM, or from inside a script (Redis 7.0) an ERR */
    if (r->type == REDIS_REPLY_ERROR && r->str &&
        (!strncmp(r->str, "NOPERM", 6) || strstr(r->str, "user executing the script can't"))) {
        vr_err_set(err, VR_EINVAL, "redis %s: %.160s (this ACL user lacks a command or key "
                   "its role needs: README.md, 'Security')", q->url_text, r->str);
        freeReplyObject(r);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        vr_err_set(err, VR_EREDIS, "redis: %.200s", r->str ? r->str : "error");
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static int rq_ensure(struct rq *q, vr_err *err)
{
    if (q->c)
        return 0;
    int rc = rq_connect(q, err);
    if (rc < 0)
        rq_note_down(q, err ? err->msg : "redis unreachable");
    return rc;
}

void rq_server_shutdown(struct rq *q)
{
    /* its going is asked for, not news: as if the outage were said now */
    q->warned_down = 1;
    q->down_since_s = q->said_down_s = clock_mono_s();
    redisReply *r = rq_cmd(q, NULL, "SHUTDOWN"); /* no answer when it went: it is gone */
    if (r)
        freeReplyObject(r);
}

redisReply *rq_cmd(struct rq *q, vr_err *err, const char *fmt, ...)
{
    if (rq_ensure(q, err) < 0)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    q->trips++;
    redisReply *r = redisvCommand(q->c, fmt, ap);
    va_end(ap);
    return rq_finish(q, r, err);
}

redisReply *rq_cmdargv(struct rq *q, vr_err *err, int argc, const char **argv,
                       const size_t *lens)
{
    if (rq_ensure(q, err) < 0)
        return NULL;
    q->trips++;
    redisReply *r = redisCommandArgv(q->c, argc, argv, lens);
    return rq_finish(q, r, err);
}

int rq_check_noeviction(struct rq *q, vr_err *err)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(q, &e, "CONFIG GET maxmemory-policy");
    if (!r) {
        if (rq_connected(q)) { /* CONFIG renamed or forbidden by ACL */
            log_warn("cannot read maxmemory-policy (%s); make sure it is noeviction", e.msg);
            return 0;
        }
        return vr_err_set(err, e.code, "%s", e.msg);
    }
    int rc = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[1]->str, "noeviction") != 0)
        rc = vr_err_set(err, VR_EINVAL,
                        "redis %s runs with maxmemory-policy %.40s: it may evict queued chunks; "
                        "set 'maxmemory-policy noeviction'", q->url_text, r->element[1]->str);
    freeReplyObject(r);
    /* a worker's user may XADD to vr:reports: each argument is bounded by
     * proto-max-bulk-len alone (512 MB by default; issue 41, finding 8) */
    r = rc == 0 ? rq_cmd(q, NULL, "CONFIG GET proto-max-bulk-len") : NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING && atoll(r->element[1]->str) > RQ_MAX_BULK)
        log_warn("redis %s takes arguments of up to %s bytes: a worker's report could fill its "
                 "memory; set 'proto-max-bulk-len 1mb' and 'client-query-buffer-limit 4mb' "
                 "(README.md, Security)", q->url_text, r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* ---- replies ---- */

int rq_reply_str(const redisReply *r, char *buf, size_t n, vr_err *err)
{
    if (!r || r->type == REDIS_REPLY_NIL) {
        if (n)
            buf[0] = '\0';
        return 0;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        snprintf(buf, n, "%lld", r->integer);
        return 1;
    }
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
        return vr_err_set(err, VR_EFORMAT, "redis: expected a string reply, got type %d", r->type);
    if (r->len >= n)
        return vr_err_set(err, VR_EFORMAT, "redis: reply of %zu bytes exceeds the %zu-byte limit",
                          (size_t)r->len, n - 1);
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    return 1;
}

int rq_entry_names(const redisReply *e, char *job, size_t jn, int *idx)
{
    char idxs[16] = "";
    job[0] = '\0';
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[1]->type != REDIS_REPLY_ARRAY)
        return 0;
    const redisReply *f = e->element[1];
    for (size_t k = 0; k + 1 < f->elements; k += 2) {
        if (f->element[k]->type != REDIS_REPLY_STRING)
            continue;
        if (!strcmp(f->element[k]->str, "job"))
            rq_reply_str(f->element[k + 1], job, jn, NULL);
        else if (!strcmp(f->element[k]->str, "idx"))
            rq_reply_str(f->element[k + 1], idxs, sizeof idxs, NULL);
    }
    char *end;
    long v = strtol(idxs, &end, 10);
    if (!job_id_valid(job) || !idxs[0] || *end || v < 0 || v > 1000000)
        return 0;
    *idx = (int)v;
    return 1;
}

int rq_reply_ll(const redisReply *r, long long *v, vr_err *err)
{
    *v = 0;
    if (!r || r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER) {
        *v = r->integer;
        return 1;
    }
    char buf[32], *e;
    int rc = rq_reply_str(r, buf, sizeof buf, err);
    if (rc <= 0)
        return rc;
    *v = strtoll(buf, &e, 10);
    if (*e || e == buf)
        return vr_err_set(err, VR_EFORMAT, "redis: '%s' is not an integer", buf);
    return 1;
}

int rq_hget(struct rq *q, const char *key, const char *field, char *buf,
            size_t n, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "HGET %s %s", key, field);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc = rq_reply_str(r, buf, n, err);
    if (rc < 0)
        vr_err_prefix(err, "%s %s", key, field);
    freeReplyObject(r);
    return rc;
}

int rq_hget_ll(struct rq *q, const char *key, const char *field, long long *v,
               vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "HGET %s %s", key, field);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc = rq_reply_ll(r, v, err);
    freeReplyObject(r);
    return rc;
}

/* ---- keys, events, clock ---- */

void rq_key_job(char *buf, size_t n, const char *job) { snprintf(buf, n, "vr:job:%s", job); }
void rq_key_chunk(char *buf, size_t n, const char *job, int idx)
{
    snprintf(buf, n, "vr:chunk:%s:%d", job, idx);
}
void rq_key_events(char *buf, size_t n, const char *job) { snprintf(buf, n, "vr:events:%s", job); }

void rq_event(struct rq *q, const char *job, const char *fmt, ...)
{
    char line[512], key[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rq_key_events(key, sizeof key, job);
    /* A capped log, not a work queue: MAXLEN trimming is safe here. */
    redisReply *r = rq_cmd(q, NULL, "XADD %s MAXLEN ~ 1000 * msg %s", key, line);
    if (r)
        freeReplyObject(r);
}

long long rq_now_ms(void)
{
    return clock_wall_ms();
}

long long rq_server_ms(struct rq *q)
{
    redisReply *r = q ? rq_cmd(q, NULL, "TIME") : NULL;
    long long ms = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    if (r)
        freeReplyObject(r);
    return ms > 0 ? ms : rq_now_ms();
}

long long rq_record_ll(const char *s)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || *end || v < 0 || v > RQ_RECORD_MAX ? 0 : v;
}

double rq_record_double(const char *s)
{
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    return *end || !(v >= 0 && v <= (double)RQ_RECORD_MAX) ? 0 : v;
}

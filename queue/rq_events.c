/*
 * rq_events.c - a job's event log read back (XRANGE / XREVRANGE on
 * vr:events:<id>), and the maxmemory check (INFO memory) behind
 * rq_memory_full. See rq_events.h.
 */
#include "rq_events.h"

#include "text.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills e from one XRANGE element [id, [field, value, ...]]; 0 when the
 * element is malformed (skipped). */
static int rq_event_parse(const redisReply *el, struct rq_event_entry *e)
{
    memset(e, 0, sizeof *e);
    e->chunk = -1;
    if (el->type != REDIS_REPLY_ARRAY || el->elements != 2 ||
        rq_reply_str(el->element[0], e->id, sizeof e->id, NULL) <= 0)
        return 0;
    e->ms = atoll(e->id);
    const redisReply *fl = el->element[1];
    for (size_t i = 0; fl->type == REDIS_REPLY_ARRAY && i + 1 < fl->elements; i += 2) {
        char f[16];
        if (rq_reply_str(fl->element[i], f, sizeof f, NULL) > 0 && !strcmp(f, "msg")) {
            /* an over-long line is cut, not dropped */
            const redisReply *v = fl->element[i + 1];
            if (v->type == REDIS_REPLY_STRING)
                snprintf(e->msg, sizeof e->msg, "%.*s", (int)v->len, v->str);
            text_strip_controls(e->msg); /* a record anyone with Redis access may write */
        }
    }
    int idx;
    if (sscanf(e->msg, "chunk %d", &idx) == 1 && idx >= 0)
        e->chunk = idx;
    const char *w = strstr(e->msg, "worker ");
    if (w) {
        w += strlen("worker ");
        size_t len = strcspn(w, " ()");
        while (len && strchr(",;:", w[len - 1])) /* "worker a:cpu:1f: cannot ..." */
            len--;
        if (len && len < sizeof e->worker)
            snprintf(e->worker, sizeof e->worker, "%.*s", (int)len, w);
    }
    return 1;
}

int rq_events_read(struct rq *q, const char *id, const char *after, struct rq_event_entry *out,
                   int max, vr_err *err)
{
    char key[128];
    rq_key_events(key, sizeof key, id);
    if (max <= 0)
        return 0;
    redisReply *r = after ? rq_cmd(q, err, "XRANGE %s (%s + COUNT %d", key, after, max)
                          : rq_cmd(q, err, "XREVRANGE %s + - COUNT %d", key, max);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++)
        n += rq_event_parse(r->element[i], &out[n]);
    freeReplyObject(r);
    if (!after) /* XREVRANGE gave newest first */
        for (int i = 0; i < n / 2; i++) {
            struct rq_event_entry t = out[i];
            out[i] = out[n - 1 - i];
            out[n - 1 - i] = t;
        }
    return n;
}

int rq_events_wait(struct rq *q, const char *id, char *after, size_t n, int ms, vr_err *err)
{
    char key[128];
    rq_key_events(key, sizeof key, id);
    redisReply *r = rq_cmd(q, err, "XREAD COUNT 100 BLOCK %d STREAMS %s %s", ms, key,
                           after[0] ? after : "$");
    if (!r)
        return err ? err->code : VR_EREDIS;
    /* [[key, [[id, fields], ...]]], or nil when none came */
    int came = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
        const redisReply *s = r->element[0];
        const redisReply *es = s->type == REDIS_REPLY_ARRAY && s->elements == 2 ? s->element[1]
                                                                                : NULL;
        if (es && es->type == REDIS_REPLY_ARRAY && es->elements > 0) {
            const redisReply *last = es->element[es->elements - 1];
            char newest[RQ_ID_MAX];
            came = 1;
            if (last->type == REDIS_REPLY_ARRAY && last->elements == 2 &&
                rq_reply_str(last->element[0], newest, sizeof newest, NULL) > 0 &&
                strlen(newest) < n)
                snprintf(after, n, "%s", newest);
        }
    }
    freeReplyObject(r);
    return came;
}

/* The number after "name:" in an INFO text, or -1. */
static long long rq_info_ll(const char *info, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s:", name);
    const char *p = strstr(info, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

int rq_memory_full(struct rq *q, char *buf, size_t n, vr_err *err)
{
    buf[0] = '\0';
    redisReply *r = rq_cmd(q, err, "INFO memory");
    if (!r)
        return err ? err->code : VR_EREDIS;
    int full = 0;
    if (r->type == REDIS_REPLY_STRING) {
        long long used = rq_info_ll(r->str, "used_memory");
        long long max = rq_info_ll(r->str, "maxmemory");
        if (max > 0 && used >= max) {
            full = 1;
            snprintf(buf, n, "Redis is out of memory (%.1f MB used, maxmemory %.*f MB): it "
                     "refuses every write, so no chunk can be committed and no progress "
                     "recorded; raise maxmemory or free memory, work resumes by itself",
                     used / 1e6, max < 100000 ? 6 : 1, max / 1e6);
        }
    }
    freeReplyObject(r);
    return full;
}

/*
 * rq_stream.c - stream entries with consumer groups: create groups, read one
 * entry at a time, reclaim a dead consumer's entries, acknowledge. Every
 * reply's shape and size is checked before use; an entry that breaks the
 * limits is acknowledged and skipped so it cannot wedge a consumer.
 */
#include "rq_stream.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- entries ---- */

void rq_msg_release(struct rq_msg *m)
{
    if (!m)
        return;
    free(m->buf);
    memset(m, 0, sizeof *m);
}

const char *rq_msg_get(const struct rq_msg *m, const char *k)
{
    for (int i = 0; i < m->nfields; i++)
        if (strcmp(m->key[i], k) == 0)
            return m->val[i];
    return NULL;
}

static int rq_is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* Fills *m from an [id, [k, v, ...]] reply. Returns 0, or VR_EFORMAT with
 * m->id set when the id was readable (so the caller can ack it). */
static int rq_msg_parse(const char *stream, const redisReply *e, struct rq_msg *m,
                        vr_err *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->stream, sizeof m->stream, "%s", stream);
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !rq_is_str(e->element[0]))
        return vr_err_set(err, VR_EFORMAT, "%s: malformed stream entry", stream);
    if (rq_reply_str(e->element[0], m->id, sizeof m->id, err) <= 0)
        return VR_EFORMAT;
    const redisReply *f = e->element[1];
    if (!f || f->type == REDIS_REPLY_NIL)
        return vr_err_set(err, VR_EFORMAT, "%s %s: entry was deleted", stream, m->id);
    if (f->type != REDIS_REPLY_ARRAY || f->elements % 2 || f->elements / 2 > RQ_MAX_FIELDS)
        return vr_err_set(err, VR_EFORMAT, "%s %s: %zu fields (limit %d)", stream, m->id,
                          f->elements / 2, RQ_MAX_FIELDS);
    size_t total = 0;
    for (size_t i = 0; i < f->elements; i++) {
        if (!rq_is_str(f->element[i]) || f->element[i]->len > RQ_MAX_FIELD)
            return vr_err_set(err, VR_EFORMAT, "%s %s: field %zu is not a string under %d bytes",
                              stream, m->id, i, RQ_MAX_FIELD);
        total += f->element[i]->len + 1;
    }
    m->buf = malloc(total ? total : 1);
    if (!m->buf)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    char *p = m->buf;
    for (size_t i = 0; i < f->elements; i++) {
        memcpy(p, f->element[i]->str, f->element[i]->len);
        p[f->element[i]->len] = '\0';
        if (i % 2 == 0)
            m->key[i / 2] = p;
        else
            m->val[i / 2] = p;
        p += f->element[i]->len + 1;
    }
    m->nfields = (int)(f->elements / 2);
    return 0;
}

/* ---- groups ---- */

int rq_group_ensure(struct rq *q, const char *stream, const char *group, vr_err *err)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(q, &e, "XGROUP CREATE %s %s 0 MKSTREAM", stream, group);
    if (r) {
        freeReplyObject(r);
        return 0;
    }
    if (strstr(e.msg, "BUSYGROUP"))
        return 0;
    return vr_err_set(err, e.code, "%s", e.msg);
}

int rq_ack(struct rq *q, const char *stream, const char *group, const char *id,
           vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "XACK %s %s %s", stream, group, id);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

/* ---- reading ---- */

int rq_read_all(struct rq *q, const char *group, const char *consumer,
                const char *const *streams, int nstreams, int block_ms,
                struct rq_msg *out, vr_err *err)
{
    for (int i = 0; i < nstreams && i < 4; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (nstreams < 1 || nstreams > 4)
        return vr_err_set(err, VR_EINVAL, "rq_read: 1..4 streams");
    const char *argv[16];
    char blk[16];
    int argc = 0;
    snprintf(blk, sizeof blk, "%d", block_ms);
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = group;
    argv[argc++] = consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = "1";
    if (block_ms > 0) {
        argv[argc++] = "BLOCK";
        argv[argc++] = blk;
    }
    argv[argc++] = "STREAMS";
    for (int i = 0; i < nstreams; i++)
        argv[argc++] = streams[i];
    for (int i = 0; i < nstreams; i++)
        argv[argc++] = ">";
    redisReply *r = rq_cmdargv(q, err, argc, argv, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0, rc = 0;
    if (r->type == REDIS_REPLY_NIL)
        goto out;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > (size_t)nstreams) {
        rc = vr_err_set(err, VR_EFORMAT, "XREADGROUP: unexpected reply");
        goto out;
    }
    /* COUNT 1 is per stream: every stream that had an entry delivered one,
     * and each is returned (one left unread would stay pending, unhandled) */
    for (size_t s = 0; s < r->elements; s++) {
        const redisReply *sr = r->element[s];
        char name[64];
        if (sr->type != REDIS_REPLY_ARRAY || sr->elements != 2 ||
            rq_reply_str(sr->element[0], name, sizeof name, err) <= 0 ||
            sr->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = vr_err_set(err, VR_EFORMAT, "XREADGROUP: malformed stream reply");
            goto out;
        }
        if (sr->element[1]->elements == 0)
            continue;
        vr_err pe = { 0 };
        struct rq_msg *m = &out[n];
        if (rq_msg_parse(name, sr->element[1]->element[0], m, &pe) < 0) {
            log_error("%s; acknowledged and skipped", pe.msg);
            if (m->id[0])
                rq_ack(q, name, group, m->id, NULL);
            rq_msg_release(m);
            continue;
        }
        n++;
    }
out:
    freeReplyObject(r);
    if (rc < 0)
        for (int i = 0; i < n; i++)
            rq_msg_release(&out[i]);
    return rc < 0 ? rc : n;
}

int rq_read(struct rq *q, const char *group, const char *consumer,
            const char *const *streams, int nstreams, int block_ms,
            struct rq_msg *m, vr_err *err)
{
    memset(m, 0, sizeof *m);
    if (nstreams != 1)
        return vr_err_set(err, VR_EINVAL, "rq_read: one stream (rq_read_all takes more)");
    return rq_read_all(q, group, consumer, streams, 1, block_ms, m, err);
}

int rq_autoclaim(struct rq *q, const char *stream, const char *group,
                 const char *consumer, long long min_idle_ms, struct rq_msg *m,
                 vr_err *err)
{
    memset(m, 0, sizeof *m);
    redisReply *r = rq_cmd(q, err, "XAUTOCLAIM %s %s %s %lld 0-0 COUNT 1", stream, group,
                           consumer, min_idle_ms);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
        rc = vr_err_set(err, VR_EFORMAT, "XAUTOCLAIM: unexpected reply");
        goto out;
    }
    if (r->element[1]->elements == 0)
        goto out;
    vr_err pe = { 0 };
    if (rq_msg_parse(stream, r->element[1]->element[0], m, &pe) < 0) {
        log_error("%s; acknowledged and skipped", pe.msg);
        if (m->id[0])
            rq_ack(q, stream, group, m->id, NULL);
        rq_msg_release(m);
        goto out;
    }
    rc = 1;
out:
    freeReplyObject(r);
    return rc;
}

int rq_ready(struct rq **q, const char *url, const char *group,
             const volatile sig_atomic_t *stop, vr_err *err)
{
    vr_err e = { 0 };
    if (!*q && rq_open(url, 10000, q, &e) < 0) {
        if (!*q || e.code == VR_EINVAL) { /* a wrong address or password: waiting will not help */
            log_error("%s", e.msg);
            if (err)
                *err = e;
            return e.code;
        }
        log_warn("%s; waiting for it", e.msg);
    }
    static const char *const groups[][2] = {
        { RQ_JOBS, RQ_G_CONTROLLERS }, { RQ_RESULTS, RQ_G_CONTROLLERS },
        { RQ_REPORTS, RQ_G_CONTROLLERS },
        { RQ_CHUNKS, RQ_G_WORKERS },   { RQ_CHUNKS_HI, RQ_G_WORKERS },
    };
    while (!*stop) {
        /* the controller checks the policy: a worker's user may not read
         * the server's config (it holds the passwords) */
        int rc = group ? 0 : rq_check_noeviction(*q, &e);
        for (size_t i = 0; rc == 0 && i < sizeof groups / sizeof groups[0]; i++)
            if (!group)
                rc = rq_group_ensure(*q, groups[i][0], groups[i][1], &e);
        /* the worker's user may not create groups (one that never reads
         * would hold the stream untrimmed): the controller makes them, and
         * a worker's read before it waits on NOGROUP (a user that may
         * creates them then: serve's loop) */
        if (rc == 0 && group) {
            redisReply *r = rq_cmd(*q, &e, "PING");
            rc = r ? 0 : e.code;
            freeReplyObject(r);
        }
        if (rc == 0)
            return 0;
        if (e.code == VR_EINVAL) { /* an evicting Redis, AUTH or an ACL refused: waiting will not help */
            log_error("%s", e.msg);
            if (err)
                *err = e;
            return e.code;
        }
        rq_backoff(*q);
    }
    return vr_err_set(err, VR_ECANCELED, "stopped while waiting for redis");
}

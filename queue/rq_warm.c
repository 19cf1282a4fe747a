/*
 * rq_warm.c - the host's last decoded format in Redis (rq_warm.h). Plain
 * HSET/HGET/EXPIRE: the worker's user may not EVAL.
 */
#include "rq_warm.h"

#include <stdio.h>
#include <string.h>

static int only_of(const char *s, size_t lo, size_t hi, const char *set)
{
    size_t n = strlen(s);
    return n >= lo && n <= hi && strspn(s, set) == n;
}

int rq_warm_host_valid(const char *host)
{
    return only_of(host, 1, 64, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
}

int rq_warm_format_valid(const char *fmt)
{
    return only_of(fmt, 1, RQ_WARM_FORMAT_MAX - 1, "abcdefghijklmnopqrstuvwxyz0123456789_:");
}

/* An absolute path with no control character (it is logged and opened). */
static int source_valid(const char *s)
{
    if (s[0] != '/' || strlen(s) >= RQ_WARM_SOURCE_MAX)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static void warm_key(char *buf, size_t n, const char *host)
{
    snprintf(buf, n, RQ_WARM_PREFIX "%s", host);
}

int rq_warm_remember(struct rq *q, const char *host, const char *source, const char *fmt,
                     vr_err *err)
{
    if (!rq_warm_host_valid(host) || !source_valid(source) || !rq_warm_format_valid(fmt))
        return vr_err_set(err, VR_EINVAL, "cannot remember the warm format: a bad host, "
                          "source or format");
    char key[128], ms[32], ttl[32];
    warm_key(key, sizeof key, host);
    snprintf(ms, sizeof ms, "%lld", rq_now_ms());
    snprintf(ttl, sizeof ttl, "%d", RQ_WARM_TTL_S);
    const char *hset[] = { "HSET", key, "source", source, "format", fmt, "ms", ms };
    const char *expire[] = { "EXPIRE", key, ttl };
    redisReply *r = rq_cmdargv(q, err, 8, hset, NULL);
    if (!r)
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    if (!(r = rq_cmdargv(q, err, 3, expire, NULL)))
        return err ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

int rq_warm_recall(struct rq *q, const char *host, char *source, size_t ns, char *fmt,
                   size_t nf, vr_err *err)
{
    if (!rq_warm_host_valid(host))
        return 0;
    char key[128];
    warm_key(key, sizeof key, host);
    vr_err e = { 0 };
    int rc = rq_hget(q, key, "source", source, ns, &e);
    if (rc > 0)
        rc = rq_hget(q, key, "format", fmt, nf, &e);
    if (rc < 0 && e.code == VR_EFORMAT) { /* a value longer than we take */
        vr_err_set(err, 0, "%s: a value too long; ignored", key);
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = e;
        return rc;
    }
    if (rc == 0)
        return 0;
    if (!source_valid(source) || !rq_warm_format_valid(fmt)) {
        vr_err_set(err, 0, "%s: not an absolute path and a format; ignored", key);
        return 0;
    }
    return 1;
}

/*
 * t-rq-url.c - the Redis address syntax and connecting to a real server:
 * good and bad URLs, AUTH-less unix sockets, the noeviction check, and a
 * Redis that goes away and comes back (errors, then reconnection).
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(rq_url, parses_tcp_with_credentials_and_db)
{
    struct rq_url u;
    vr_err e = { 0 };
    cr_assert_eq(rq_url_parse("redis://alice:s3cr:et@cache.local:6380/4", &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.user, "alice");
    cr_assert_str_eq(u.pass, "s3cr:et");
    cr_assert_str_eq(u.host, "cache.local");
    cr_assert_eq(u.port, 6380);
    cr_assert_eq(u.db, 4);
    cr_assert_eq(u.is_unix, 0);
    cr_assert_eq(rq_url_parse("redis://:pw@10.0.0.1:6379", &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.user, "");
    cr_assert_str_eq(u.pass, "pw");
    cr_assert_eq(u.db, 0);
}

Test(rq_url, parses_unix_socket)
{
    struct rq_url u;
    cr_assert_eq(rq_url_parse("unix:///run/redis/redis.sock", &u, NULL), 0);
    cr_assert_eq(u.is_unix, 1);
    cr_assert_str_eq(u.path, "/run/redis/redis.sock");
}

Test(rq_url, rejects_bad_addresses_with_reason)
{
    static const struct { const char *url, *word; } bad[] = {
        { "", "empty" },
        { "http://x:1", "expected redis://" },
        { "redis://host", "port" },
        { "redis://host:0", "port" },
        { "redis://host:99999", "port" },
        { "redis://host:12x", "port" },
        { "redis://:6379", "host" },
        { "redis://h:6379/abc", "database" },
        { "unix://relative.sock", "absolute" },
        { "redis://user@h:1", "user:password" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rq_url u;
        vr_err e = { 0 };
        cr_assert_eq(rq_url_parse(bad[i].url, &u, &e), VR_EINVAL, "%s accepted", bad[i].url);
        cr_assert(strstr(e.msg, bad[i].word), "%s: '%s' lacks '%s'", bad[i].url, e.msg, bad[i].word);
    }
}

Test(rq_url, env_fallback)
{
    setenv("VR_REDIS", "unix:///tmp/x.sock", 1);
    cr_assert_str_eq(rq_url_pick(NULL), "unix:///tmp/x.sock");
    cr_assert_str_eq(rq_url_pick("redis://h:1"), "redis://h:1");
    unsetenv("VR_REDIS");
    cr_assert_null(rq_url_pick(NULL));
}

Test(rq_conn, connects_checks_policy_and_survives_restart)
{
    struct tredis t;
    cr_assert_eq(tredis_start(&t, 0), 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(t.url, 2000, &q, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_check_noeviction(q, &e), 0, "%s", e.msg);
    redisReply *r = rq_cmd(q, &e, "CONFIG SET maxmemory-policy allkeys-lru");
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
    cr_assert_eq(rq_check_noeviction(q, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "noeviction"), "%s", e.msg);

    r = rq_cmd(q, &e, "SET k v");
    cr_assert_not_null(r);
    freeReplyObject(r);
    long long trips = rq_round_trips(q);
    tredis_kill(&t);
    vr_err e2 = { 0 };
    cr_assert_null(rq_cmd(q, &e2, "GET k"));
    cr_assert_eq(e2.code, VR_EREDIS);
    cr_assert_eq(rq_connected(q), 0);
    cr_assert_null(rq_cmd(q, &e2, "GET k"));
    cr_assert(strstr(e2.msg, "cannot reach redis"), "%s", e2.msg);
    cr_assert_eq(tredis_restart(&t), 0);
    r = rq_cmd(q, &e2, "PING");
    cr_assert_not_null(r, "no reconnect: %s", e2.msg);
    freeReplyObject(r);
    cr_assert_gt(rq_round_trips(q), trips);
    rq_free(&q);
    cr_assert_null(q);
    tredis_stop(&t);
}

Test(rq_conn, open_while_down_reports_and_reconnects_later)
{
    struct tredis t;
    cr_assert_eq(tredis_start(&t, 0), 0);
    tredis_kill(&t);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(t.url, 1000, &q, &e), VR_EREDIS);
    cr_assert_not_null(q);
    cr_assert(strstr(e.msg, t.sock), "%s", e.msg);
    cr_assert_eq(tredis_restart(&t), 0);
    redisReply *r = rq_cmd(q, &e, "PING");
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
    rq_free(&q);
    tredis_stop(&t);
}

/*
 * t-queue-url.c - the Redis address syntax and connecting to a real server:
 * good and bad URLs, AUTH-less unix sockets, the noeviction check, and a
 * Redis that goes away and comes back (errors, then reconnection); what
 * guards the password (never in an error, %XX escapes, a password file, a
 * refused AUTH that ends the retrying), IPv6 literals, rediss:// refused.
 */
#include "rq.h"
#include "storage.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

Test(queue_url, parses_tcp_with_credentials_and_db)
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

Test(queue_url, parses_unix_socket)
{
    struct rq_url u;
    cr_assert_eq(rq_url_parse("unix:///run/redis/redis.sock", &u, NULL), 0);
    cr_assert_eq(u.is_unix, 1);
    cr_assert_str_eq(u.path, "/run/redis/redis.sock");
}

Test(queue_url, rejects_bad_addresses_with_reason)
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
        { "redis://u:@h:1", "empty password" },
        { "redis://::1:6379", "brackets" },
        { "redis://[::1]6379", "[addr]:port" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rq_url u;
        vr_err e = { 0 };
        cr_assert_eq(rq_url_parse(bad[i].url, &u, &e), VR_EINVAL, "%s accepted", bad[i].url);
        cr_assert(strstr(e.msg, bad[i].word), "%s: '%s' lacks '%s'", bad[i].url, e.msg, bad[i].word);
    }
}

Test(queue_url, env_fallback)
{
    setenv("VR_REDIS", "unix:///tmp/x.sock", 1);
    cr_assert_str_eq(rq_url_pick(NULL), "unix:///tmp/x.sock");
    cr_assert_str_eq(rq_url_pick("redis://h:1"), "redis://h:1");
    unsetenv("VR_REDIS");
    cr_assert_str_eq(rq_url_pick(NULL), "redis://127.0.0.1:6379", "Redis's own default");
    cr_assert_str_eq(rq_url_pick(""), "redis://127.0.0.1:6379");
}

Test(queue_url, connects_checks_policy_and_survives_restart)
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

Test(queue_url, open_while_down_reports_and_reconnects_later)
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

/* ---- the password ---- */

Test(queue_url, errors_never_show_the_password)
{
    static const char *bad[] = {
        "redis://alice:hunter2@h:99999", "redis://alice:hunter2@h", "redis://:hunter2@:1",
        "http://alice:hunter2@h:1", "rediss://alice:hunter2@h:1", "redis://a:hunter2@h:1/x",
        "redis://a:hunter2%zz@h:1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rq_url u;
        vr_err e = { 0 };
        cr_assert_eq(rq_url_parse(bad[i], &u, &e), VR_EINVAL, "%s accepted", bad[i]);
        cr_assert_null(strstr(e.msg, "hunter2"), "password shown: %s", e.msg);
    }
    char buf[128];
    rq_url_redact("redis://alice:hunter2@h:1/2", buf, sizeof buf);
    cr_assert_str_eq(buf, "redis://alice:***@h:1/2");
    /* issue 27, finding 12: a password written without its ':' reads as a
     * user name; neither the missing-password error nor another shows it */
    static const char *lone[] = { "redis://S3CRET@h:1", "redis://S3CRET@h:99999",
                                  "redis://S3CRET@h" };
    for (size_t i = 0; i < sizeof lone / sizeof lone[0]; i++) {
        struct rq_url u;
        vr_err e = { 0 };
        unsetenv("VR_REDIS_PASSWORD_FILE");
        int rc = rq_url_parse(lone[i], &u, &e);
        if (rc == 0) { /* parsed: the error comes at connect */
            struct rq *q = NULL;
            rc = rq_open(lone[i], 500, &q, &e);
            rq_free(&q);
        }
        cr_assert_lt(rc, 0, "%s accepted", lone[i]);
        cr_assert_null(strstr(e.msg, "S3CRET"), "secret shown: %s", e.msg);
    }
    rq_url_redact("redis://S3CRET@h:1", buf, sizeof buf);
    cr_assert_str_eq(buf, "redis://***@h:1");
}

Test(queue_url, rediss_points_to_the_tunnel_recipe)
{
    struct rq_url u;
    vr_err e = { 0 };
    cr_assert_eq(rq_url_parse("rediss://h:6380", &u, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "TLS") && strstr(e.msg, "stunnel") && strstr(e.msg, "Security"),
              "%s", e.msg);
}

Test(queue_url, decodes_percent_escapes_in_credentials)
{
    struct rq_url u;
    vr_err e = { 0 };
    cr_assert_eq(rq_url_parse("redis://al%40ice:p%3Aw%2F%25%40@h:1", &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.user, "al@ice");
    cr_assert_str_eq(u.pass, "p:w/%@");
    cr_assert_str_eq(u.host, "h");
    cr_assert_eq(rq_url_parse("redis://u:a%4@h:1", &u, &e), VR_EINVAL);
    cr_assert_eq(rq_url_parse("redis://u:a%00b@h:1", &u, &e), VR_EINVAL);
}

Test(queue_url, parses_ipv6_literals)
{
    struct rq_url u;
    vr_err e = { 0 };
    cr_assert_eq(rq_url_parse("redis://u:pw@[::1]:6380/3", &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "::1");
    cr_assert_eq(u.port, 6380);
    cr_assert_eq(u.db, 3);
    cr_assert_eq(rq_url_parse("redis://[fe80::1:2]:1", &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "fe80::1:2");
}

/* PING through a fresh connection to url; 0 or the error code. */
static int ping(const char *url, vr_err *e)
{
    struct rq *q = NULL;
    int rc = rq_open(url, 2000, &q, e);
    if (rc == 0) {
        redisReply *r = rq_cmd(q, e, "PING");
        rc = r ? 0 : e->code;
        if (r)
            freeReplyObject(r);
    }
    rq_free(&q);
    return rc;
}

Test(queue_url, connects_over_ipv6_loopback)
{
    if (tsh("ip -6 addr show lo 2>/dev/null | grep -q '::1'") != 0) {
        /* info: Criterion counts a warning as a failed run */
        cr_log_info("no IPv6 loopback here: only the parse is tested");
        return;
    }
    struct tredis t;
    cr_assert_eq(tredis_start(&t, 0), 0);
    int port = tredis_tcp(&t, "::1");
    cr_assert_gt(port, 0);
    char url[64];
    snprintf(url, sizeof url, "redis://[::1]:%d", port);
    vr_err e = { 0 };
    cr_assert_eq(ping(url, &e), 0, "%s", e.msg);
    tredis_stop(&t);
}

Test(queue_url, password_file_flag_and_env_and_refusals)
{
    struct tredis t;
    cr_assert_eq(tredis_start(&t, 0), 0);
    int port = tredis_tcp(&t, "127.0.0.1");
    cr_assert_gt(port, 0);
    const char *set[] = { "CONFIG", "SET", "requirepass", "s3cret pass", NULL };
    cr_assert_eq(tredis_cmd(&t, set), 0);
    char file[320], bad[320], url[360];
    snprintf(file, sizeof file, "%s/pw", t.dir);
    snprintf(bad, sizeof bad, "%s/bad", t.dir);
    FILE *f = fopen(file, "w");
    fputs("s3cret pass\n", f);
    fclose(f);
    chmod(file, 0600);
    f = fopen(bad, "w");
    fputs("wrong-one\n", f);
    fclose(f);
    chmod(bad, 0600);
    vr_err e = { 0 };

    /* no password: NOAUTH is final, not "retrying" */
    cr_assert_eq(ping(t.url, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "NOAUTH") && strstr(e.msg, "--redis-password-file"), "%s", e.msg);
    rq_password_file(file);
    cr_assert_eq(ping(t.url, &e), 0, "%s", e.msg);
    rq_password_file(NULL);
    setenv("VR_REDIS_PASSWORD_FILE", file, 1);
    cr_assert_eq(ping(t.url, &e), 0, "%s", e.msg);

    /* a password in the URL and in a file is one too many */
    snprintf(url, sizeof url, "redis://:s3cret%%20pass@127.0.0.1:%d", port);
    cr_assert_eq(ping(url, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "twice"), "%s", e.msg);
    unsetenv("VR_REDIS_PASSWORD_FILE");
    cr_assert_eq(ping(url, &e), 0, "%%20 not decoded: %s", e.msg);

    /* a wrong password: refused for good, and the message hides it */
    rq_password_file(bad);
    struct rq *q = NULL;
    cr_assert_eq(rq_open(t.url, 2000, &q, &e), VR_EINVAL, "%d %s", e.code, e.msg);
    cr_assert(strstr(e.msg, "AUTH") && strstr(e.msg, "refused"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "wrong-one"), "%s", e.msg);
    rq_free(&q);
    rq_password_file("/nonexistent/pw");
    cr_assert_eq(rq_open(t.url, 2000, &q, &e), VR_EINVAL);
    cr_assert_null(q);
    cr_assert(strstr(e.msg, "/nonexistent/pw"), "%s", e.msg);
    rq_password_file(NULL);
    tredis_stop(&t);
}

/* A password or secret file is a regular file only its owner reads (issue
 * 27, finding 10): a FIFO is refused at once (it hung the reader), a file
 * others may read is refused naming the mode, unless the operator allows
 * it (--allow-loose-secret: VR_ALLOW_LOOSE_SECRET=1), then read with a
 * warning. */
Test(queue_url, secret_files_regular_and_private_only)
{
    char dir[] = "/tmp/vrtest-secret-XXXXXX", fifo[64], loose[64], buf[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(loose, sizeof loose, "%s/loose", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    FILE *f = fopen(loose, "w");
    fputs("s3cret\n", f);
    fclose(f);
    chmod(loose, 0644);
    vr_err e = { 0 };
    unsetenv("VR_ALLOW_LOOSE_SECRET");
    cr_assert_eq(storage_read_secret(fifo, buf, sizeof buf, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "not a regular file"), "%s", e.msg);
    cr_assert_eq(storage_read_secret(loose, buf, sizeof buf, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "others may read it (mode 0644)") &&
              strstr(e.msg, "--allow-loose-secret"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "s3cret"), "%s", e.msg);
    setenv("VR_ALLOW_LOOSE_SECRET", "1", 1);
    cr_assert_eq(storage_read_secret(loose, buf, sizeof buf, &e), 6, "%s", e.msg);
    cr_assert_str_eq(buf, "s3cret");
    unsetenv("VR_ALLOW_LOOSE_SECRET");
    /* the flag, wherever it stands, reaches the reader (then Redis, on a
     * port where none listens, is what fails) */
    char out[2048];
    const char *bin = getenv("VR_BIN_DIR") ? getenv("VR_BIN_DIR") : "bin";
    tsh_out(out, sizeof out, "'%s/vrctl' status --redis redis://127.0.0.1:1 "
            "--redis-password-file '%s' 2>&1", bin, loose);
    cr_assert(strstr(out, "others may read it"), "%s", out);
    tsh_out(out, sizeof out, "'%s/vrctl' status --redis redis://127.0.0.1:1 "
            "--redis-password-file '%s' --allow-loose-secret 2>&1", bin, loose);
    cr_assert_null(strstr(out, "others may read it"), "%s", out);
    cr_assert(strstr(out, "can be read by others"), "no warning: %s", out);
    tsh("rm -rf '%s'", dir);
}

Test(queue_url, a_lost_connection_says_redis_timed_out_or_lost)
{
    /* hiredis hands over the system's words: "Resource temporarily
     * unavailable" for its command timeout, "Broken pipe" for a closed
     * socket; neither says it is Redis (issue 26, finding 9) */
    struct tredis t;
    cr_assert_eq(tredis_start(&t, 0), 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(t.url, 300, &q, &e), 0, "%s", e.msg);
    kill(t.pid, SIGSTOP);
    cr_assert_null(rq_cmd(q, &e, "PING"));
    kill(t.pid, SIGCONT);
    cr_assert(strstr(e.msg, "Redis connection timed out (no answer within 0.3 s)") &&
              !strstr(e.msg, "temporarily"), "%s", e.msg);
    redisReply *r = rq_cmd(q, &e, "PING");
    cr_assert_not_null(r, "%s", e.msg);
    freeReplyObject(r);
    tredis_kill(&t);
    cr_assert_null(rq_cmd(q, &e, "PING"));
    cr_assert(strstr(e.msg, "Redis connection lost") && !strstr(e.msg, "pipe"), "%s", e.msg);
    rq_free(&q);
    tredis_stop(&t);
}

/*
 * t-dist-oom.c - a Redis out-of-memory stall (issue 42, minor), with a real
 * redis-server whose maxmemory is set below its use mid-job, a controller
 * and a CPU worker slowed by a test hook: while Redis refuses writes,
 * `vrctl workers` and `vrctl status` show the worker alive and stalled and
 * name the out-of-memory cause (they said it was gone, or silent), and once
 * memory is back the job finishes with no event calling the worker killed.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_oom, .fini = teardown, .timeout = 150);

static void config_set(const char *what, const char *value)
{
    redisReply *r = rq_cmd(Q, NULL, "CONFIG SET %s %s", what, value);
    cr_assert(r, "CONFIG SET %s %s", what, value);
    freeReplyObject(r);
}

Test(dist_oom, workers_stalled_by_a_full_redis_are_not_called_gone)
{
    cr_assert_eq(tdist_start(&D, 0, 2, 1, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    setenv("VR_TEST_FRAME_DELAY_MS", "200", 1); /* a chunk of 10 frames: 2 s at least */
    cr_assert_gt(tdist_worker(&D), 0);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char in[400], out[400], id[64], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    const char *wargs[] = { "workers", NULL };
    int busy = 0;
    for (int t = 0; t < 60000 && !busy; t += 100) {
        tdist_vrctl(&D, buf, sizeof buf, wargs);
        busy = strstr(buf, " busy ") != NULL;
        if (!busy)
            tmsleep(100);
    }
    cr_assert(busy, "the worker never took a chunk:\n%s", buf);
    config_set("maxmemory", "1");
    /* past the worker's heartbeat TTL (5 heartbeats of 300 ms + 2 s) and
     * the lease (2 s) */
    tmsleep(4500);
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, wargs), 0);
    cr_assert(strstr(buf, "stalled: Redis is out of memory") && strstr(buf, ":cpu:") &&
              strstr(buf, " stalled ") && !strstr(buf, "silent") &&
              !strstr(buf, "no live workers"),
              "vrctl workers during the stall:\n%s", buf);
    const char *sargs[] = { "status", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, sargs), 0);
    cr_assert(strstr(buf, "out of memory") && !strstr(buf, "silent"),
              "vrctl status during the stall:\n%s", buf);
    config_set("maxmemory", "0");
    int rc = tdist_watch(&D, id, 90000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job did not finish after the stall");
    const char *eargs[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, eargs), 0);
    cr_assert(!strstr(buf, "killed"), "the events call the stalled worker killed:\n%s", buf);
    cr_assert(!strstr(buf, "requeued") || strstr(buf, "Redis was out of memory"),
              "a chunk requeued after the stall, its event not naming the cause:\n%s", buf);
}

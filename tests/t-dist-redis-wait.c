/*
 * t-dist-redis-wait.c - a Redis outage in the logs (issue 45): the
 * controller and a worker said ~12 lines as Redis went, then nothing while
 * they waited, which reads as a hung process. They now say "still
 * unreachable" every 10 s of the outage, and how long it was when Redis
 * answers again.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_redis_wait, .fini = teardown, .timeout = 180);

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

Test(dist_redis_wait, an_outage_is_said_while_it_lasts)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    static char log[1 << 20];
    tmsleep(500); /* both connected */
    tredis_kill(&D.r);
    /* a "still unreachable" line from each of the two, twice: 20 s at least */
    int n = 0;
    for (int t = 0; t < 90000 && n < 4; t += 500) {
        tmsleep(500);
        tslurp(D.log, log, sizeof log);
        n = count(log, "still unreachable after");
    }
    cr_assert_geq(n, 4, "%d 'still unreachable' lines in 90 s of outage:\n%s", n, log);
    cr_assert_eq(tredis_restart(&D.r), 0);
    for (int t = 0; t < 30000 && count(log, "connected again after") < 2; t += 200) {
        tmsleep(200);
        tslurp(D.log, log, sizeof log);
    }
    cr_assert_geq(count(log, "connected again after"), 2, "%s", log);
}

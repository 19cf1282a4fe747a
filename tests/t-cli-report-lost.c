/*
 * t-cli-report-lost.c - a killed worker's partial work in `vrctl report`
 * (issue 45): a real worker, slowed by the test hook, is killed with
 * SIGKILL mid-chunk after its renewals told the controller how many frames
 * it had done; the chunk is redone by another worker, and the report
 * shows that attempt's work hatched in the killed worker's row (its start
 * to its last renewal, and the frames) and counts it in the summary.
 */
#include "rq.h"
#include "rq_report.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct tdist D;

static void teardown(void)
{
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tdist_stop(&D, 0);
}

TestSuite(cli_report_lost, .fini = teardown, .timeout = 180);

/* Waits until chunk idx of job id has renewed its lease with some frames
 * done; returns that count and the worker into who (n bytes). */
static long long wait_progress(struct rq *q, const char *id, int idx, char *who, size_t n)
{
    char ck[128], v[32] = "";
    rq_key_chunk(ck, sizeof ck, id, idx);
    for (int t = 0; t < 60000; t += 20) {
        rq_hget(q, ck, "lease_frames", v, sizeof v, NULL);
        long long f = rq_record_ll(v);
        if (f > 0) {
            rq_hget(q, ck, "worker", who, n, NULL);
            return f;
        }
        tmsleep(20);
    }
    cr_assert_fail("chunk %d never renewed with frames done", idx);
    return -1;
}

Test(cli_report_lost, a_killed_workers_partial_work_is_shown)
{
    setenv("VR_TEST_FRAME_DELAY_MS", "100", 1);
    cr_assert_eq(tdist_start(&D, 0, 2.0, 1, 1), 0);
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);
    char in[400], out[400], id[64], killed[128] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    long long seen = wait_progress(q, id, 0, killed, sizeof killed);
    kill(D.w[0], SIGKILL);
    waitpid(D.w[0], NULL, 0);
    D.w[0] = 0;
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tdist_worker(&D);
    cr_assert_eq(tdist_watch(&D, id, 120000), 0, "the job did not finish");

    struct rq_chunk_rec c;
    cr_assert_eq(rq_report_chunks(q, id, 1, &c, &e), 0, "%s", e.msg);
    rq_free(&q);
    cr_assert_str_eq(c.state, "done");
    cr_assert_str_eq(c.lost_by, killed, "the lost attempt's worker");
    cr_assert_geq(c.lost_frames, seen, "%lld frames kept, %lld seen before the kill",
                  c.lost_frames, seen);
    cr_assert_lt(c.lost_frames, c.frames, "the killed attempt did not finish its chunk");
    cr_assert(c.lost_from_ms > 0 && c.lost_to_ms > c.lost_from_ms, "%lld..%lld",
              c.lost_from_ms, c.lost_to_ms);

    char path[400], msg[512], want[256];
    static char html[1 << 20];
    snprintf(path, sizeof path, "%s/report.html", D.r.dir);
    const char *args[] = { "report", id, "-o", path, NULL };
    cr_assert_eq(tdist_vrctl(&D, msg, sizeof msg, args), 0, "%s", msg);
    tslurp(path, html, sizeof html);
    snprintf(want, sizeof want, "lost work</th><td>%lld frames, done by 1 attempt ",
             c.lost_frames);
    cr_assert(strstr(html, want), "the summary lacks '%s'", want);
    /* hatched in the killed worker's row: after its name, before the next row's */
    snprintf(want, sizeof want, "\">%s</text>", killed);
    const char *row = strstr(html, want);
    cr_assert_not_null(row, "the killed worker %s has no row", killed);
    const char *next = strstr(row + 1, "<text class=\"row\"");
    const char *bar = strstr(row, "<rect class=\"lostwork\"");
    cr_assert(bar && (!next || bar < next), "no hatched bar in %s's row", killed);
    snprintf(want, sizeof want, "chunk 0: %lld frames done from ", c.lost_frames);
    cr_assert(strstr(bar, want), "the bar's title lacks '%s'", want);
    cr_assert(strstr(html, "<span class=\"k lostwork\">"), "no legend key");
}

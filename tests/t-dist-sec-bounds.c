/*
 * t-dist-sec-bounds.c - bounds on what a submitter or a worker makes the
 * fleet hold (issue 41, findings 8 and 9), against a real redis-server
 * under deploy/redis-users.acl:
 *
 * - an all-intra source with --chunk-seconds 0.2 (a chunk every 2 frames)
 *   gets no more chunks than the controller's --max-chunks: its chunk
 *   length is widened, and the controller says so (before: 100
 *   chunks here, 20 000 for the 460 KB file, 10.7 s of the loop);
 * - a worker's report of 2 MB to vr:reports is refused by Redis
 *   (proto-max-bulk-len 1mb, as vrctl run's and the tests' Redis run);
 * - a flood of reports from a worker's user is cut to vr:reports' cap
 *   (RQ_REPORTS_MAXLEN) by the controller, the oldest dropped, and said.
 */
#include "rq.h"
#include "rq_bounds.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_bounds, .fini = teardown, .timeout = 180);

Test(dist_sec_bounds, a_tiny_chunk_length_is_widened_to_the_chunk_limit)
{
    Q = tacl_up(&D, &A);
    const char *extra[] = { "--max-chunks", "40", NULL };
    cr_assert_gt(tacl_controller(&D, &A, extra), 0);
    char in[400], out[400], id[64];
    snprintf(in, sizeof in, "%s/intra.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/intra_mask.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 20, 160, 1, 0), 0); /* 200 frames, each a keyframe */
    const char *opt[] = { "--chunk-seconds", "0.2", NULL };
    cr_assert_eq(tacl_submit(&A, in, out, opt, id, sizeof id), 0, "submit: %s", id);
    char planned[32] = "";
    for (int t = 0; t < 30000 && !planned[0]; t += 50) {
        tmsleep(50);
        tacl_job_field(Q, id, "chunks_total", planned, sizeof planned);
    }
    if (!planned[0])
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(planned[0], "job %s was never planned", id);
    cr_assert(atoi(planned) >= 2 && atoi(planned) <= 41, "%s chunks, over --max-chunks 40",
              planned);
    cr_assert_eq(tsh("grep -q 'in at most 40 chunks (--max-chunks)' '%s'", D.log), 0,
                 "the controller does not say the chunks were widened");
}

Test(dist_sec_bounds, a_worker_report_over_1_mb_is_refused_by_redis)
{
    tacl_start(&D, &A);
    struct rq *w = tacl_as_worker(&A);
    size_t big = 2u << 20;
    char *blob = malloc(big);
    cr_assert_not_null(blob);
    memset(blob, 'x', big);
    const char *argv[] = { "XADD", "vr:reports", "*", "kind", blob };
    const size_t lens[] = { 4, 10, 1, 4, big };
    redisReply *r = rq_cmdargv(w, NULL, 5, argv, lens);
    free(blob);
    cr_assert(!r || r->type == REDIS_REPLY_ERROR, "a 2 MB report was appended");
    freeReplyObject(r);
    rq_free(&w);
    /* the server is still there, and took nothing */
    Q = tacl_admin(&A);
    r = rq_cmd(Q, NULL, "XLEN vr:reports");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
}

Test(dist_sec_bounds, a_flood_of_reports_is_cut_to_the_streams_cap)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0);
    struct rq *w = tacl_as_worker(&A);
    vr_err e = { 0 };
    for (int i = 0; i < RQ_REPORTS_MAXLEN + 3000; i++) {
        redisReply *r = rq_cmd(w, &e, "XADD vr:reports * kind renew consumer x%d", i);
        cr_assert_not_null(r, "the worker's user may append reports: %s", e.msg);
        freeReplyObject(r);
    }
    rq_free(&w);
    /* the controller cuts at its turns, which may fall while the flood is
     * still coming (then later entries pass the cap until the next turn):
     * what must hold is a cut said and the stream at its cap in the end */
    int said = 0;
    long long len = -1;
    for (int t = 0; t < 30000 && !(said && len >= 0 && len <= RQ_REPORTS_MAXLEN); t += 200) {
        tmsleep(200);
        said = said
               || tsh("grep -q 'over its cap of %d dropped' '%s'", RQ_REPORTS_MAXLEN, D.log) == 0;
        redisReply *r = rq_cmd(Q, NULL, "XLEN vr:reports");
        len = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
    }
    cr_assert(said, "the controller never said it cut vr:reports to its cap");
    cr_assert(len >= 0 && len <= RQ_REPORTS_MAXLEN, "vr:reports holds %lld after 30 s", len);
}

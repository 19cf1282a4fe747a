/*
 * t-dist-sec-replace.c - `-n` is the controller's to enforce too (issue
 * 41, finding 3, in part): a spec the vrctl user writes by hand, naming an
 * existing (0400) output and not saying it may replace it, fails when the
 * controller takes it, the file untouched; before, only vrctl checked, and
 * the job replaced the file. Against a real redis-server under
 * deploy/redis-users.acl, with a CPU worker.
 */
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_replace, .fini = teardown, .timeout = 150);

Test(dist_sec_replace, a_hand_written_spec_does_not_replace_an_existing_output)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0);
    cr_assert_gt(tacl_worker(&D, &A), 0);
    char in[400], out[400], text[64] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/kept.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("printf keep > '%s' && chmod 0400 '%s'", out, out), 0);

    /* the spec as the vrctl user may write it, no vrctl on the way */
    char id[64];
    tacl_spec_by_hand(&A, in, out, id, sizeof id);

    char st[32] = "", why[512] = "";
    tacl_wait_state(Q, &D, id, NULL, 60000, st, sizeof st);
    tacl_job_field(Q, id, "error", why, sizeof why);
    tslurp(out, text, sizeof text);
    cr_assert_str_eq(text, "keep", "the 0400 output was replaced (job %s)", st);
    cr_assert_str_eq(st, "failed");
    cr_assert(strstr(why, "exists") && strstr(why, "kept.mkv"), "%s", why);
}

/*
 * t-dist-orphan-dirs.c - a FLUSHALL (or any loss of a job's record) left
 * storage/jobs/<id> behind for ever (issue 42): the controller's retention
 * removes a job directory that has had no record in Redis for longer than
 * --keep-jobs, logs it, and leaves a live job's directory beside it alone.
 */
#include "util-retain.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_orphan_dirs, .fini = teardown, .timeout = 150);

Test(dist_orphan_dirs, flushall_leftover_dir_removed_live_job_dir_kept)
{
    struct tretain t;
    tretain_start(&D, &Q, &t);
    const char *done_id = t.done_id, *dir = t.dir;
    char live_id[64], live_dir[600], key[128];

    /* The record goes before --keep-jobs would purge it with its directory. */
    redisReply *r = rq_cmd(Q, NULL, "FLUSHALL");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL refused");
    freeReplyObject(r);

    /* No worker from here on: the next job stays live, its directory made. */
    tretain_no_worker(&D);
    const char *again[] = { "--chunking", "copy", "-y", NULL };
    cr_assert_eq(tdist_submit(&D, t.in, t.out, again, live_id, sizeof live_id), 0);
    snprintf(live_dir, sizeof live_dir, "%s/jobs/%s", D.storage, live_id);
    for (int t = 0; t < 300 && access(live_dir, F_OK) != 0; t++)
        tmsleep(100);
    cr_assert_eq(access(live_dir, F_OK), 0, "the live job's directory was never made");
    /* A witness made after the live directory: an orphan of its own, whose
     * removal is a pass at which the live directory was older than the
     * grace too (a proof that it was audited so, not a sleep hoping so). */
    char decoy[600];
    snprintf(decoy, sizeof decoy, "%s/jobs/orphan-witness", D.storage);
    cr_assert_eq(mkdir(decoy, 0755), 0);

    int gone = 0;
    for (int t = 0; t < 400 && !gone; t++, tmsleep(100))
        gone = access(dir, F_OK) != 0;
    cr_assert(gone, "%s still there 40 s after its record went (--keep-jobs 4s)", dir);
    char n[32];
    tsh_out(n, sizeof n, "grep -c 'retention: storage/jobs/%s removed: no job record' '%s'",
            done_id, D.log);
    cr_assert_eq(atoi(n), 1, "the removal was not logged once (%s)", n);

    gone = 0;
    for (int t = 0; t < 400 && !gone; t++, tmsleep(100))
        gone = access(decoy, F_OK) != 0;
    cr_assert(gone, "the witness orphan still there after 40 s (--keep-jobs 4s)");
    cr_assert_eq(access(live_dir, F_OK), 0, "the live job's directory was removed");
    rq_key_job(key, sizeof key, live_id);
    r = rq_cmd(Q, NULL, "EXISTS %s", key);
    cr_assert(r && r->integer == 1, "the live job's record is gone");
    freeReplyObject(r);
}

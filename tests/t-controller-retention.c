/*
 * t-controller-retention.c - a job's records do not stay in Redis for
 * ever: the controller purges a job that ended more than --keep-jobs ago
 * (its record, events and chunk records, its index entry and
 * storage/jobs/<id>) and never a live one; `vrctl purge JOB` and `vrctl
 * purge --older-than D` do it by hand, refusing a live job.
 */
#include "util-retain.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(controller_retention, .fini = teardown, .timeout = 150);

/* How many of the job's record, events, chunk 0 record and index entry
 * Redis holds (0..4). */
static int records_of(const char *id)
{
    char key[128];
    int n = 0;
    rq_key_job(key, sizeof key, id);
    redisReply *r = rq_cmd(Q, NULL, "EXISTS %s", key);
    n += r && r->integer == 1;
    freeReplyObject(r);
    rq_key_events(key, sizeof key, id);
    r = rq_cmd(Q, NULL, "EXISTS %s", key);
    n += r && r->integer == 1;
    freeReplyObject(r);
    rq_key_chunk(key, sizeof key, id, 0);
    r = rq_cmd(Q, NULL, "EXISTS %s", key);
    n += r && r->integer == 1;
    freeReplyObject(r);
    r = rq_cmd(Q, NULL, "ZSCORE vr:index %s", id);
    n += r && r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    return n;
}

static void job_state(const char *id, char *v, size_t n)
{
    char key[128];
    rq_key_job(key, sizeof key, id);
    v[0] = '\0';
    rq_hget(Q, key, "state", v, n, NULL);
}

static int vrctl(char *out, size_t n, const char *a, const char *b, const char *c)
{
    const char *args[] = { a, b, c, NULL };
    return tdist_vrctl(&D, out, n, args);
}

Test(controller_retention, ended_jobs_purged_after_keep_jobs_live_ones_kept)
{
    struct tretain t;
    tretain_start(&D, &Q, &t);
    const char *done_id = t.done_id, *dir = t.dir;
    char live_id[64], buf[4096];
    cr_assert_eq(records_of(done_id), 4, "the done job's records are not all there");

    /* No worker from here on: the next job stays live, however old. */
    tretain_no_worker(&D);
    const char *again[] = { "-y", NULL }; /* the done job's output is there */
    cr_assert_eq(tdist_submit(&D, t.in, t.out, again, live_id, sizeof live_id), 0);
    /* a witness: a job that ends after the live one was submitted. A pass
     * that purges it finds the live job older than --keep-jobs too (not a
     * sleep that hopes a pass came) */
    char out2[400], witness[64];
    snprintf(out2, sizeof out2, "%s/out2.mkv", D.r.dir);
    cr_assert_eq(tdist_submit(&D, t.in, out2, NULL, witness, sizeof witness), 0);
    cr_assert_eq(vrctl(buf, sizeof buf, "cancel", witness, NULL), 0);

    int left = 4;
    for (int t = 0; t < 300 && left; t++, tmsleep(100))
        left = records_of(done_id);
    cr_assert_eq(left, 0, "the done job still has %d records after --keep-jobs 4s", left);
    cr_assert_neq(access(dir, F_OK), 0, "%s left after the purge", dir);
    for (int t = 0; t < 300 && (left = records_of(witness)); t++)
        tmsleep(100);
    cr_assert_eq(left, 0, "the cancelled witness still has %d records", left);
    job_state(live_id, buf, sizeof buf);
    cr_assert(!strcmp(buf, "running") || !strcmp(buf, "queued") || !strcmp(buf, "splitting"),
              "the live job is '%s'", buf);
    cr_assert_eq(records_of(live_id), 4, "a live job lost records");

    /* By hand: a live job refused, an ended one purged, then no such job. */
    cr_assert_eq(vrctl(buf, sizeof buf, "purge", live_id, NULL), 1);
    cr_assert_eq(records_of(live_id), 4);
    cr_assert_eq(vrctl(buf, sizeof buf, "cancel", live_id, NULL), 0);
    cr_assert_eq(vrctl(buf, sizeof buf, "purge", live_id, NULL), 0);
    cr_assert(strstr(buf, "purged"), "%s", buf);
    cr_assert_eq(records_of(live_id), 0);
    cr_assert_eq(vrctl(buf, sizeof buf, "purge", live_id, NULL), 2);
}

Test(controller_retention, vrctl_purge_older_than)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 0, 0), 0); /* no controller: vrctl alone */
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[400], out2[400], a[64], b[64], buf[4096];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(out2, sizeof out2, "%s/out2.mkv", D.r.dir); /* one output a job in flight */
    cr_assert_eq(tclip_make(in, 1, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, a, sizeof a), 0);
    cr_assert_eq(tdist_submit(&D, in, out2, NULL, b, sizeof b), 0);
    cr_assert_eq(vrctl(buf, sizeof buf, "cancel", a, NULL), 0);
    tmsleep(1500);

    cr_assert_eq(vrctl(buf, sizeof buf, "purge", "--older-than", "1h"), 0);
    cr_assert(strstr(buf, "0 jobs purged"), "%s", buf);
    cr_assert_geq(records_of(a), 2, "the cancelled job was purged though it ended 1.5 s ago");
    cr_assert_eq(vrctl(buf, sizeof buf, "purge", "--older-than", "1s"), 0);
    cr_assert(strstr(buf, "1 job purged"), "%s", buf);
    cr_assert_eq(records_of(a), 0, "the cancelled job was not purged");
    job_state(b, buf, sizeof buf);
    cr_assert_str_eq(buf, "queued", "the queued job was touched");

    cr_assert_eq(vrctl(buf, sizeof buf, "purge", "--older-than", "7x"), 2);
    cr_assert_eq(vrctl(buf, sizeof buf, "purge", NULL, NULL), 2);
}

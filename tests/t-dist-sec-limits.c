/*
 * t-dist-sec-limits.c - limits said at once and by name (issue 27, finding
 * 12): a chunk task over the worker's 8 KiB fails its chunk when it is
 * taken, not when its lease runs out; a source whose header claims a
 * 16000x16000 frame is refused by submit and process naming the size
 * limit, not as a chunk file that cannot be written; what a stitch leaves
 * out of the source (an attachment) is said in the job's events under the
 * output's name, not only in the controller's log as /proc/self/fd/N.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_limits, .fini = teardown, .timeout = 150);

/* The job's state (and error into why) once it is `want`, or after ms. */
static void job_state_within(const char *id, const char *want, int ms, char *why, size_t n)
{
    char key[128], state[32] = "";
    rq_key_job(key, sizeof key, id);
    for (int t = 0; t < ms && strcmp(state, want); t += 50) {
        rq_hget(Q, key, "state", state, sizeof state, NULL);
        tmsleep(50);
    }
    if (strcmp(state, want))
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_str_eq(state, want, "job %s not %s within %d ms", id, want, ms);
    if (why && rq_hget(Q, key, "error", why, n, NULL) <= 0)
        why[0] = '\0';
}

Test(dist_sec_limits, a_task_over_8_kib_fails_at_once_not_at_its_lease)
{
    /* a 60 s lease: a chunk left running would hold the job for a minute */
    cr_assert_eq(tdist_start(&D, 0, 60, 1, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[400], id[64], ck[128], why[1024];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    job_state_within(id, "running", 30000, NULL, 0);
    rq_key_chunk(ck, sizeof ck, id, 0);
    /* 9000 bytes of task, as the workers' Redis user could write it */
    cr_assert_eq(tsh("redis-cli -s '%s' HSET '%s' task \"{\\\"pad\\\": \\\"$(head -c 9000 "
                     "/dev/zero | tr '\\0' x)\\\"}\" >/dev/null", D.r.sock, ck), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    job_state_within(id, "failed", 20000, why, sizeof why);
    cr_assert(strstr(why, "over the 8191-byte limit"), "%s", why);
}

Test(dist_sec_limits, a_huge_frame_header_is_refused_naming_the_limit)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char in[400], out[400], log[400], text[8192];
    snprintf(in, sizeof in, "%s/big.y4m", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(log, sizeof log, "%s/cmd.log", D.r.dir);
    /* a header and the start of one frame: the claim is what is checked */
    cr_assert_eq(tsh("{ printf 'YUV4MPEG2 W16000 H16000 F25:1 C420jpeg\\nFRAME\\n'; head -c 4096 "
                     "/dev/zero; } > '%s'", in), 0);
    const char *submit[] = { "vrctl", "submit", in, "-o", out, "--redis", D.r.url, NULL };
    cr_assert_eq(tproc_wait(tproc_spawn("vrctl", submit, log), 30000), 2); /* an input to fix */
    const char *process[] = { "vr-worker", "process", "--cpu", in, "-o", out, NULL };
    cr_assert_eq(tproc_wait(tproc_spawn("vr-worker", process, log), 30000), 1);
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, "vrctl submit: ") && strstr(text, "16000x16000 is over the size limit"),
              "%s", text);
    const char *p = strstr(text, "over the size limit");
    cr_assert(p && strstr(p + 1, "over the size limit"), "process did not say it: %s", text);
    cr_assert(!strstr(text, "cannot write"), "%s", text);
}

Test(dist_sec_limits, streams_the_stitch_leaves_out_are_in_the_jobs_events)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    char in[400], out[400], id[64], text[16384];
    snprintf(in, sizeof in, "%s/font.mkv", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tsh("ffmpeg -v error -f lavfi -i testsrc=s=96x96:d=1:r=10 -attach /etc/hostname "
                     "-metadata:s:t mimetype=text/plain -c:v libx264 -g 5 -pix_fmt yuv420p '%s'",
                     in), 0);
    /* chunks cut from the source: the stitch copies its other streams */
    const char *copy[] = { "--chunking", "copy", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, copy, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 90000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    const char *ev[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, text, sizeof text, ev), 0);
    cr_assert(strstr(text, "attachments are not carried") && strstr(text, out), "%s", text);
    cr_assert(!strstr(text, "/proc/self/fd"), "%s", text);
}

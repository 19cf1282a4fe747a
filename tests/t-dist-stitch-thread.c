/*
 * t-dist-stitch-thread.c - a job's stitch and its URL publish run beside
 * the controller's loop (issue 43; closing4's last read). While one job's
 * stitch is held (VR_TEST_STITCH_GATE) or its upload to a real nginx
 * with WebDAV is (VR_TEST_URL_OUT_GATE), the loop starts a second job,
 * queues its chunks and collects their results; the held job is still
 * stitching, not done, until its output is in place, and its bytes are
 * those of one `vr-worker process` of the clip (FFV1).
 */
#include "util-nginx.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct tnginx N;
static char CLIP[400], CFG[400], GATE[400];

static void teardown(void)
{
    unsetenv("VR_TEST_STITCH_GATE");
    unsetenv("VR_TEST_URL_OUT_GATE");
    if (GATE[0])
        unlink(GATE);
    tnginx_stop(&N);
    tdist_stop(&D, 0);
}

TestSuite(dist_stitch_thread, .fini = teardown, .timeout = 180);

/* Redis, a 3 s clip, FFV1, the gate (made, held) named to the controller
 * by `hook`, nginx when `url` (its out/ the --output-root), two workers. */
static void start(const char *hook, int url)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    snprintf(CLIP, sizeof CLIP, "%s/clip.mp4", D.r.dir);
    cr_assert_eq(tclip_make(CLIP, 3, 160, 10, 0), 0);
    snprintf(CFG, sizeof CFG, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CFG), 0);
    snprintf(GATE, sizeof GATE, "%s/gate", D.r.dir);
    cr_assert_eq(tsh("touch '%s'", GATE), 0);
    setenv(hook, GATE, 1);
    if (url) {
        char nd[400];
        static char root[128];
        snprintf(nd, sizeof nd, "%s/nginx", D.r.dir);
        cr_assert_eq(tnginx_start(&N, nd), 0);
        cr_assert_eq(tsh("mkdir -p '%s/out'", N.www), 0);
        snprintf(root, sizeof root, "%sout/", N.url);
        D.ctl_args[0] = "--output-root";
        D.ctl_args[1] = root;
        D.ctl_args[2] = "--storage-allow-private"; /* nginx is on loopback */
    }
    cr_assert_gt(tdist_controller(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
}

static void submit(const char *out, char *id, size_t n)
{
    const char *extra[] = { "-c", CFG, NULL };
    cr_assert_eq(tdist_submit(&D, CLIP, out, extra, id, n), 0);
}

static void field(const char *id, const char *f, char *out, size_t n)
{
    out[0] = 0;
    tdist_status_field(&D, id, f, out, n);
}

/* Waits (at most 60 s) for job id's state to be `want`; 1 when it is. */
static int wait_state(const char *id, const char *want)
{
    char st[32] = "";
    for (int i = 0; i < 1200 && strcmp(st, want); i++) {
        usleep(50000);
        field(id, "state", st, sizeof st);
    }
    return !strcmp(st, want);
}

/* With job `held`'s stitch or upload held: a second job is started and
 * every one of its chunks collected (counted done) while `held` is still
 * stitching; then the gate opens and both end well. */
static void second_job_goes_on(const char *held, const char *out2)
{
    cr_assert(wait_state(held, "stitching"), "the first job never reached its stitch");
    char id2[64], done[32] = "", total[32] = "", st[32] = "";
    submit(out2, id2, sizeof id2);
    for (int i = 0; i < 1200 && (atoi(total) < 2 || atoi(done) < atoi(total)); i++) {
        usleep(50000);
        field(id2, "chunks_done", done, sizeof done);
        field(id2, "chunks_total", total, sizeof total);
    }
    field(id2, "state", st, sizeof st);
    if (atoi(total) < 2 || atoi(done) < atoi(total))
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(atoi(total) >= 2 && atoi(done) == atoi(total), "the second job's chunks were not "
              "collected while the first one's stitch was held (state %s, %s of %s done)", st,
              done, total);
    field(held, "state", st, sizeof st);
    cr_assert_str_eq(st, "stitching", "the held job is %s before its output is in place", st);
    cr_assert_eq(unlink(GATE), 0);
    cr_assert_eq(tdist_watch(&D, held, 120000), 0);
    cr_assert_eq(tdist_watch(&D, id2, 120000), 0);
}

/* The file at got equals one `process` of the clip, every byte. */
static void same_bytes_as_process(const char *got)
{
    char single[400];
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", CFG, CLIP,
                           "-o", single, "-y", NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0);
    cr_assert_eq(tsh("cmp '%s' '%s' >&2", got, single), 0, "the stitched file differs");
}

Test(dist_stitch_thread, another_job_is_started_and_collected_while_a_stitch_runs)
{
    start("VR_TEST_STITCH_GATE", 0);
    char out1[400], out2[400], id[64];
    snprintf(out1, sizeof out1, "%s/one.mkv", D.r.dir);
    snprintf(out2, sizeof out2, "%s/two.mkv", D.r.dir);
    submit(out1, id, sizeof id);
    second_job_goes_on(id, out2);
    same_bytes_as_process(out1);
    same_bytes_as_process(out2);
}

Test(dist_stitch_thread, another_job_is_started_and_collected_while_an_upload_runs)
{
    start("VR_TEST_URL_OUT_GATE", 1);
    char url[256], out2[400], id[64], got[400];
    snprintf(url, sizeof url, "%sout/slow.mkv", N.url);
    snprintf(out2, sizeof out2, "%s/two.mkv", D.r.dir);
    submit(url, id, sizeof id);
    second_job_goes_on(id, out2);
    snprintf(got, sizeof got, "%s/out/slow.mkv", N.www);
    same_bytes_as_process(got);
    same_bytes_as_process(out2);
    cr_assert_eq(tnginx_count(&N, "\"MOVE /out/slow.mkv.vrseg-part-"), 1);
}

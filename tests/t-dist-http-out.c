/*
 * t-dist-http-out.c - a fleet that writes its output over HTTP (issue 46):
 * `vrctl submit -o http://.../out/x.mkv` against a real nginx with WebDAV
 * on loopback. The stitched file goes up by PUT to a temporary name and
 * one MOVE, and is byte for byte the file one `vr-worker process` of the
 * same clip writes (FFV1, bit-exact muxing); without -y an object already
 * there is refused before any work. A 503 storm during the upload, and a
 * PUT cut mid-body, are retried and the job finishes with the same bytes; an upload the store
 * refuses for good fails the job naming the object and the HTTP status,
 * never "done". A URL outside the controller's --output-root, or one with
 * user info, is refused, the password in no message, log or Redis record.
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
static char ROOT[128];   /* the controller's --output-root URL: <nginx>/out/ */
static char CLIP[400];   /* the local source */
static char CFG[400];    /* FFV1 */

static void teardown(void)
{
    unsetenv("VR_TEST_STITCH_DELAY_MS");
    tnginx_stop(&N);
    tdist_stop(&D, 0);
}

TestSuite(dist_http_out, .fini = teardown, .timeout = 180);

/* Redis, nginx, a 3 s clip, a controller allowed nginx's out/ (through
 * the cutting proxy when `proxy`) and two workers. */
static void start_via(int proxy);

static void start(void)
{
    start_via(0);
}

static void start_via(int proxy)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char nd[400];
    snprintf(nd, sizeof nd, "%s/nginx", D.r.dir);
    cr_assert_eq(tnginx_start(&N, nd), 0);
    cr_assert_eq(tsh("mkdir -p '%s/out'", N.www), 0);
    snprintf(CLIP, sizeof CLIP, "%s/clip.mp4", D.r.dir);
    cr_assert_eq(tclip_make(CLIP, 3, 160, 10, 0), 0);
    snprintf(CFG, sizeof CFG, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CFG), 0);
    int port = proxy ? tproxy_cut_start(N.port) : N.port;
    cr_assert_gt(port, 0);
    snprintf(ROOT, sizeof ROOT, "http://127.0.0.1:%d/out/", port);
    D.ctl_args[0] = "--output-root";
    D.ctl_args[1] = ROOT;
    D.ctl_args[2] = "--storage-allow-private"; /* nginx is on loopback */
    cr_assert_gt(tdist_controller(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
}

static int submit(const char *out, int replace, char *id, size_t n)
{
    const char *extra[] = { "-c", CFG, replace ? "-y" : NULL, NULL };
    return tdist_submit(&D, CLIP, out, extra, id, n);
}

static void finish(const char *id, int want)
{
    int rc = tdist_watch(&D, id, 150000);
    if (rc != want)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, want, "watch exit %d", rc);
}

/* The fleet's object equals one `process` of the clip, every byte. */
static void same_bytes_as_process(const char *name)
{
    char single[400], got[400];
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", CFG, CLIP,
                           "-o", single, "-y", NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0);
    snprintf(got, sizeof got, "%s/out/%s", N.www, name);
    int rc = tsh("cmp '%s' '%s' >&2", got, single);
    if (rc)
        tsh("cmp -l '%s' '%s' | wc -l >&2; ls -l '%s' '%s' >&2", got, single, got, single);
    cr_assert_eq(rc, 0, "the fleet's object differs from process's file");
}

Test(dist_http_out, a_fleet_writes_through_webdav_the_bytes_of_process)
{
    start();
    char url[256], id[64];
    snprintf(url, sizeof url, "%sfleet.mkv", ROOT);
    cr_assert_eq(submit(url, 0, id, sizeof id), 0);
    finish(id, 0);
    same_bytes_as_process("fleet.mkv");
    /* one PUT to a temporary name, never to the output's own, none left */
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/fleet.mkv.vrseg-part-"), 1);
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/fleet.mkv "), 0);
    cr_assert_eq(tnginx_count(&N, "\"MOVE /out/fleet.mkv.vrseg-part-"), 1);
    cr_assert_neq(tsh("ls -a '%s/out' | grep -q vrseg-part", N.www), 0);
    /* the local copy the stitch wrote is gone */
    cr_assert_neq(tsh("find '%s/url-out' -type f | grep -q .", D.storage), 0);
    /* -n (the default) with the object there: refused before any work */
    int puts = tnginx_count(&N, "PUT ");
    char id2[64];
    cr_assert_neq(submit(url, 0, id2, sizeof id2), 0);
    cr_assert_eq(tnginx_count(&N, "PUT "), puts);
}

Test(dist_http_out, a_503_storm_during_the_upload_is_retried_and_the_bytes_are_the_same)
{
    setenv("VR_TEST_STITCH_DELAY_MS", "4000", 1); /* the controller's: a window to start it */
    start();
    char url[256], id[64], state[32] = "";
    snprintf(url, sizeof url, "%sstorm.mkv", ROOT);
    cr_assert_eq(submit(url, 0, id, sizeof id), 0);
    for (int i = 0; i < 1200 && strcmp(state, "stitching"); i++) {
        usleep(50000);
        tdist_status_field(&D, id, "state", state, sizeof state);
    }
    cr_assert_str_eq(state, "stitching");
    cr_assert_eq(tsh("touch '%s/storm'", N.dir), 0);
    for (int i = 0; i < 600 && tnginx_count(&N, "\"PUT /out/storm.mkv.vrseg-part-") < 2; i++)
        usleep(20000);
    if (tnginx_count(&N, "\"PUT /out/storm.mkv.vrseg-part-") < 2)
        tsh("cat '%s' >&2; tail -20 '%s' >&2", N.access, D.log);
    cr_assert_geq(tnginx_count(&N, "\"PUT /out/storm.mkv.vrseg-part-"), 2, "no PUT retried");
    cr_assert_eq(tsh("rm -f '%s/storm'", N.dir), 0);
    finish(id, 0);
    cr_assert_gt(tnginx_count(&N, " 503 "), 0);
    same_bytes_as_process("storm.mkv");
}

Test(dist_http_out, a_put_cut_mid_body_is_retried_and_never_moved)
{
    start_via(1);
    tproxy_cut_arm(1); /* the first request with a body over 1 KB: the output's PUT */
    char url[256], id[64];
    snprintf(url, sizeof url, "%scut.mkv", ROOT);
    cr_assert_eq(submit(url, 0, id, sizeof id), 0);
    finish(id, 0);
    cr_assert_eq(tproxy_cut_count(), 1);
    /* the cut PUT reached nginx (logged), a second went whole, one MOVE */
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/cut.mkv.vrseg-part-"), 2);
    cr_assert_eq(tnginx_count(&N, "\"MOVE /out/cut.mkv.vrseg-part-"), 1);
    cr_assert_neq(tsh("ls -a '%s/out' | grep -q vrseg-part", N.www), 0);
    same_bytes_as_process("cut.mkv");
}

Test(dist_http_out, a_refused_upload_fails_the_job_naming_the_object_and_status)
{
    start();
    /* a file where the object's collection should be: every PUT beneath
     * it is refused, for good */
    cr_assert_eq(tsh("echo no > '%s/out/x'", N.www), 0);
    char url[256], id[64], err[1024];
    snprintf(url, sizeof url, "%sx/deep.mkv", ROOT); /* x is a file, not a collection */
    cr_assert_eq(submit(url, 0, id, sizeof id), 0);
    finish(id, 1);
    tdist_status_field(&D, id, "error", err, sizeof err);
    cr_assert(strstr(err, "/out/x/deep.mkv") && strstr(err, "PUT: HTTP "), "%s", err);
    char st[32];
    tdist_status_field(&D, id, "state", st, sizeof st);
    cr_assert_str_eq(st, "failed");
    cr_assert_neq(tsh("test -e '%s/out/x/deep.mkv'", N.www), 0);
}

Test(dist_http_out, a_url_outside_the_root_or_with_user_info_is_refused_unsaid)
{
    start();
    char url[256], id[64], err[1024];
    /* outside --output-root: the job fails, naming the root's option */
    cr_assert_eq(tsh("mkdir -p '%s/elsewhere'", N.www), 0);
    snprintf(url, sizeof url, "%selsewhere/x.mkv", N.url);
    cr_assert_eq(submit(url, 0, id, sizeof id), 0);
    finish(id, 1);
    tdist_status_field(&D, id, "error", err, sizeof err);
    cr_assert(strstr(err, "output ") && strstr(err, "--output-root"), "%s", err);
    cr_assert_eq(tnginx_count(&N, "PUT "), 0);
    /* user info: refused by vrctl, the password nowhere */
    static const char pw[] = "davPassw0rd46NotToBeSeen";
    snprintf(url, sizeof url, "http://vr:%s@127.0.0.1:%d/out/y.mkv", pw, N.port);
    char log[400];
    snprintf(log, sizeof log, "%s/submit.log", D.r.dir);
    const char *argv[] = { "vrctl", "submit", CLIP, "-o", url, "-c", CFG, "--redis", D.r.url,
                           NULL };
    cr_assert_eq(tproc_wait(tproc_spawn("vrctl", argv, log), 30000), 2);
    cr_assert_eq(tsh("grep -q 'user info' '%s'", log), 0);
    cr_assert_neq(tsh("grep -rqa '%s' '%s' --exclude-dir=nginx", pw, D.r.dir), 0);
    const char *save[] = { "SAVE", NULL };
    cr_assert_eq(tredis_cmd(&D.r, save), 0);
    cr_assert_neq(tsh("grep -rqa '%s' '%s' --exclude-dir=nginx", pw, D.r.dir), 0,
                  "the password is in a log or Redis");
}

/*
 * t-dist-run-url.c - `vrctl run` with a source and an output by URL (issue
 * 46): its private fleet reads the clip by ranges from a real nginx on
 * loopback (the operator's own URL: no --storage-allow-private needed) and
 * its output goes back through WebDAV (PUT to a temporary name, MOVE),
 * with the frames of one `vr-worker process` of the same URL (FFV1); a
 * second run without -y is refused before any work.
 */
#include "util-nginx.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tnginx N;
static char W[64];

static void setup(void)
{
    snprintf(W, sizeof W, "/tmp/vrtest-runurl-XXXXXX");
    cr_assert_not_null(mkdtemp(W));
    char nd[128];
    snprintf(nd, sizeof nd, "%s/nginx", W);
    cr_assert_eq(tnginx_start(&N, nd), 0);
}

static void teardown(void)
{
    tnginx_stop(&N);
    tsh("rm -rf '%s'", W);
}

TestSuite(dist_run_url, .init = setup, .fini = teardown, .timeout = 150);

/* The md5 of a video's decoded frames' md5s into out. */
static void frames_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:v -f framemd5 - | grep -v '^#' | "
            "cut -d, -f6 | md5sum", path);
}

Test(dist_run_url, a_run_reads_by_ranges_and_writes_through_webdav)
{
    char clip[400], src[256], dst[256], cfg[128], log[128], single[128];
    snprintf(clip, sizeof clip, "%s/clip.mp4", N.www);
    cr_assert_eq(tclip_make(clip, 3, 160, 10, 0), 0);
    snprintf(src, sizeof src, "%sclip.mp4", N.url);
    snprintf(dst, sizeof dst, "%sout/fleet.mkv", N.url);
    snprintf(cfg, sizeof cfg, "%s/ffv1.json", W);
    snprintf(log, sizeof log, "%s/run.log", W);
    snprintf(single, sizeof single, "%s/single.mkv", W);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    const char *argv[] = { "vrctl", "run", src, "-o", dst, "--cpu", "--workers", "2",
                           "--profile", "fast", "-c", cfg, "--chunk-seconds", "1", NULL };
    pid_t p = tproc_spawn("vrctl", argv, log);
    int rc = tproc_wait(p, 120000);
    if (rc)
        tsh("tail -30 '%s' >&2", log);
    cr_assert_eq(rc, 0);
    const char *pargv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg,
                            src, "-o", single, NULL };
    cr_assert_eq(tproc_run("vr-worker", pargv, NULL, 0), 0);
    char fleet[400], a[64], b[64];
    snprintf(fleet, sizeof fleet, "%s/out/fleet.mkv", N.www);
    frames_md5(fleet, a, sizeof a);
    frames_md5(single, b, sizeof b);
    cr_assert_str_eq(a, b, "the run's frames differ from process's");
    /* by ranges only, and the output never PUT under its own name */
    cr_assert_gt(tnginx_count(&N, "\"bytes="), 3);
    cr_assert_eq(tnginx_count(&N, "\"GET /clip.mp4 HTTP/1.1\" 200 "), 0, "a whole-object GET");
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/fleet.mkv.vrseg-part-"), 1);
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/fleet.mkv "), 0);
    cr_assert_neq(tsh("ls -a '%s/out' | grep -q vrseg-part", N.www), 0);
    /* -n (the default) with the object there: refused before any work */
    int puts = tnginx_count(&N, "PUT ");
    const char *again[] = { "vrctl", "run", src, "-o", dst, "--cpu", "--workers", "1", NULL };
    char out[4096];
    cr_assert_neq(tproc_run("vrctl", again, out, sizeof out), 0);
    cr_assert_eq(tnginx_count(&N, "PUT "), puts);
}

/*
 * t-media-http-put.c - outputs written to a WebDAV destination (issue 46):
 * a real nginx (Debian's, dav_methods PUT DELETE MOVE) on loopback takes
 * each output by PUT under a temporary name and one MOVE, so nothing ever
 * lies half written under the output's name; an output that may not be
 * replaced is refused by the store (Overwrite: F); a 503 storm is retried;
 * a loopback destination is refused unless allowed. `vr-worker process
 * -o URL` writes the same bytes (FFV1) as `process -o FILE`.
 */
#include "http_io.h"
#include "http_put.h"
#include "util-nginx.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tnginx N;
static char W[256];
static char SRC[300]; /* a 1 MiB local file to upload */

static void setup(void)
{
    snprintf(W, sizeof W, "/tmp/vrput-XXXXXX");
    cr_assert_not_null(mkdtemp(W));
    char nd[300];
    snprintf(nd, sizeof nd, "%s/nginx", W);
    cr_assert_eq(tnginx_start(&N, nd), 0);
    snprintf(SRC, sizeof SRC, "%s/src.bin", W);
    cr_assert_eq(tsh("head -c 1048576 /dev/urandom > '%s'", SRC), 0);
    struct http_io_cfg cfg = { .allow_private = 1, .tries = 8, .backoff_ms = 100 };
    http_io_configure(&cfg);
}

static void teardown(void)
{
    tnginx_stop(&N);
    tsh("rm -rf '%s'", W);
}

TestSuite(media_http_put, .init = setup, .fini = teardown, .timeout = 120);

static void url_of(const char *path, char *url, size_t n)
{
    snprintf(url, n, "%s%s", N.url, path);
}

/* No temporary object is left in www/<dir>. */
static void no_part_left(const char *dir)
{
    cr_assert_neq(tsh("ls -a '%s/%s' | grep -q vrseg-part", N.www, dir), 0,
                  "a temporary object was left in %s", dir);
}

Test(media_http_put, an_output_is_put_under_a_temporary_name_then_moved_whole)
{
    char url[256];
    vr_err e = { 0 };
    url_of("out/a.bin", url, sizeof url);
    cr_assert_eq(http_put_file(url, SRC, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(tsh("cmp '%s' '%s/out/a.bin'", SRC, N.www), 0);
    /* the bytes never went up under the output's own name */
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/a.bin.vrseg-part-"), 1);
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/a.bin "), 0);
    cr_assert_eq(tnginx_count(&N, "\"MOVE /out/a.bin.vrseg-part-"), 1);
    no_part_left("out");
    /* and a DELETE removes it; one of a missing object is no error */
    cr_assert_eq(http_delete(url, &e), 0, "%s", e.msg);
    cr_assert_neq(tsh("test -e '%s/out/a.bin'", N.www), 0);
    cr_assert_eq(http_delete(url, &e), 0, "%s", e.msg);
    cr_assert_eq(http_exists(url, &e), 0, "%s", e.msg);
}

Test(media_http_put, an_existing_output_is_kept_unless_it_may_be_replaced)
{
    char url[256];
    vr_err e = { 0 };
    url_of("out/b.bin", url, sizeof url);
    cr_assert_eq(tsh("mkdir -p '%s/out' && echo old > '%s/out/b.bin'", N.www, N.www), 0);
    cr_assert_eq(http_exists(url, &e), 1, "%s", e.msg);
    cr_assert_lt(http_put_file(url, SRC, 0, &e), 0);
    cr_assert(strstr(e.msg, "MOVE: HTTP 412") && strstr(e.msg, "/out/b.bin"), "%s", e.msg);
    cr_assert_eq(tsh("grep -qx old '%s/out/b.bin'", N.www), 0, "the old output was replaced");
    no_part_left("out");
    cr_assert_eq(http_put_file(url, SRC, 1, &e), 0, "%s", e.msg);
    cr_assert_eq(tsh("cmp '%s' '%s/out/b.bin'", SRC, N.www), 0);
}

static void *put_main(void *arg)
{
    static vr_err e;
    return (void *)(intptr_t)http_put_file(arg, SRC, 0, &e);
}

Test(media_http_put, a_503_storm_then_recovery_writes_the_output)
{
    char url[256];
    url_of("storm/c.bin", url, sizeof url);
    cr_assert_eq(tsh("touch '%s/storm'", N.dir), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, put_main, url), 0);
    for (int i = 0; i < 500 && tnginx_count(&N, " 503 ") < 3; i++)
        tmsleep(20);
    cr_assert_geq(tnginx_count(&N, " 503 "), 3, "no storm seen");
    cr_assert_eq(tsh("rm '%s/storm'", N.dir), 0);
    void *rc;
    pthread_join(t, &rc);
    cr_assert_eq((intptr_t)rc, 0);
    cr_assert_eq(tsh("cmp '%s' '%s/storm/c.bin'", SRC, N.www), 0);
    no_part_left("storm");
}

Test(media_http_put, a_loopback_destination_is_refused_unless_allowed)
{
    char url[256];
    vr_err e = { 0 };
    url_of("out/d.bin", url, sizeof url);
    http_io_configure_private(0);
    cr_assert_eq(http_put_file(url, SRC, 1, &e), VR_EACCES);
    cr_assert(strstr(e.msg, "127.0.0.1") && strstr(e.msg, "--storage-allow-private"), "%s",
              e.msg);
    cr_assert_eq(tnginx_count(&N, "PUT "), 0, "a request reached the server");
    /* s3:// (media/s3_put.h) without credentials: said before any request */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("VR_S3_CREDENTIALS");
    cr_assert_eq(http_put_file("s3://bucket/out/d.bin", SRC, 1, &e), VR_EACCES);
    cr_assert(strstr(e.msg, "no credentials"), "%s", e.msg);
}

/* `vr-worker process` (FFV1) of url into out; its exit status. */
static int process(const char *url, const char *out, const char *flag)
{
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/ffv1.json", W);
    tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg, url,
                           "-o", out, flag, NULL };
    return tproc_run("vr-worker", argv, NULL, 0);
}

Test(media_http_put, process_to_a_webdav_url_equals_process_to_a_file_byte_for_byte)
{
    char src[256], dst[256], local[300];
    char clip[400];
    snprintf(clip, sizeof clip, "%s/clip.mp4", N.www);
    cr_assert_eq(tclip_make(clip, 2, 320, 10, 0), 0);
    url_of("clip.mp4", src, sizeof src);
    url_of("out/m.mkv", dst, sizeof dst);
    snprintf(local, sizeof local, "%s/m.mkv", W);
    /* a TMPDIR of its own: other suites' uploads stage in /tmp meanwhile */
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s/tmp", W);
    cr_assert_eq(tsh("mkdir -p '%s'", tmp), 0);
    setenv("TMPDIR", tmp, 1);
    cr_assert_eq(process(src, local, NULL), 0);
    cr_assert_eq(process(src, dst, NULL), 0);
    cr_assert_eq(tsh("cmp '%s' '%s/out/m.mkv'", local, N.www), 0, "the outputs differ");
    cr_assert_eq(tnginx_count(&N, "\"MOVE /out/m.mkv.vrseg-part-"), 1);
    no_part_left("out");
    /* -n (the default): the object there is refused before any work */
    cr_assert_neq(process(src, dst, "-n"), 0);
    cr_assert_eq(tnginx_count(&N, "\"PUT /out/m.mkv"), 1);
    cr_assert_eq(tsh("ls '%s' | grep -q '^vrseg-out-'", tmp), 1, "a local copy was left in TMPDIR");
    unsetenv("TMPDIR");
}

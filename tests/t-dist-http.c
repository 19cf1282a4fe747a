/*
 * t-dist-http.c - a fleet that reads its source over HTTP (issue 46): a
 * real nginx on loopback serves the clip by ranges to the controller's plan
 * and to each worker, which hold no copy of it. The output equals one
 * `vr-worker process` of the same URL, frame for frame (FFV1); an object
 * rewritten mid-job fails the job saying so; a 503 storm and truncated
 * responses are retried and the job finishes with the right frames; a
 * loopback address is refused unless the operator allows it; s3://
 * credentials appear in no log, Redis record or status.
 */
#include "rq.h"
#include "util-nginx.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct tnginx N;
static char ROOT[128];  /* the URL root the fleet is given */

static void teardown(void)
{
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    tnginx_stop(&N);
    tdist_stop(&D, 0);
}

TestSuite(dist_http, .fini = teardown, .timeout = 180);

#define VTEST "/usr/share/doc/opencv-doc/examples/data/vtest.avi"

/* Redis and nginx serving www/clip.mp4 (6 s, a keyframe a second). */
static void servers(void)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char nd[400];
    snprintf(nd, sizeof nd, "%s/nginx", D.r.dir);
    cr_assert_eq(tnginx_start(&N, nd), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -t 6 -vf scale=320:160 -pix_fmt yuv420p "
                     "-c:v libx264 -preset ultrafast -g 10 -keyint_min 10 -sc_threshold 0 "
                     "'%s/clip.mp4'", N.www), 0);
}

/* A controller whose URL root is `root` ("": nginx's). */
static void controller(const char *root, int allow_private)
{
    snprintf(ROOT, sizeof ROOT, "%s", root[0] ? root : N.url);
    D.ctl_args[0] = "--input-root";
    D.ctl_args[1] = ROOT;
    D.ctl_args[2] = allow_private ? "--storage-allow-private" : NULL;
    cr_assert_gt(tdist_controller(&D), 0);
}

static void start(const char *root, int allow_private)
{
    servers();
    controller(root, allow_private);
}

/* A CPU worker that reads sources under ROOT only (no --input-root dir). */
static void worker(int allow_private)
{
    const char *argv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                           "--input-root", ROOT, "--cpu", "--heartbeat-ms", "300",
                           allow_private ? "--storage-allow-private" : NULL, NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
}

static void lossless_cfg(char *cfg, size_t n)
{
    snprintf(cfg, n, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
}

static int submit(const char *url, const char *out, const char *cfg, char *id, size_t n)
{
    const char *extra[] = { "-c", cfg, NULL };
    return tdist_submit(&D, url, out, extra, id, n);
}

static void job_field(const char *id, const char *f, char *out, size_t n)
{
    tdist_status_field(&D, id, f, out, n);
}

static void finish(const char *id, int want)
{
    int rc = tdist_watch(&D, id, 150000);
    if (rc != want)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, want, "watch exit %d", rc);
}

/* The decoded frames of a's and b's video, each frame's md5, equal. */
static void same_frames(const char *a, const char *b)
{
    char ma[128], mb[128];
    tsh_out(ma, sizeof ma, "ffmpeg -v error -i '%s' -map 0:v -f framemd5 - | grep -v '^#' | "
            "cut -d, -f6 | md5sum", a);
    tsh_out(mb, sizeof mb, "ffmpeg -v error -i '%s' -map 0:v -f framemd5 - | grep -v '^#' | "
            "cut -d, -f6 | md5sum", b);
    cr_assert_str_eq(ma, mb, "%s and %s differ", a, b);
    char nf[64];
    tsh_out(nf, sizeof nf, "ffprobe -v error -count_frames -select_streams v -show_entries "
            "stream=nb_read_frames -of csv=p=0 '%s'", a);
    cr_assert_eq(atoi(nf), 60, "%s: %s frames", a, nf);
}

/* `vr-worker process` of url with cfg into out. */
static void process(const char *url, const char *cfg, const char *out)
{
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg, url,
                           "-o", out, NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0, "process %s failed", url);
}

/* Two workers run clip.mp4 from nginx, submitted with `chunk_seconds`
 * ("1", or "auto": the length left to the fleet); the output equals
 * `vr-worker process`'s, read by ranges, the source never copied. */
static void ranges_job_equals_process(const char *chunk_seconds)
{
    start("", 1);
    worker(1);
    worker(1);
    char url[256], out[400], single[400], cfg[400], id[64];
    snprintf(url, sizeof url, "%sclip.mp4", N.url);
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    const char *extra[] = { "-c", cfg, "--chunk-seconds", chunk_seconds, NULL };
    cr_assert_eq(tdist_submit(&D, url, out, extra, id, sizeof id), 0);
    finish(id, 0);
    process(url, cfg, single);
    same_frames(out, single);
    /* read by ranges, the source never copied: no chunk input files */
    cr_assert_gt(tnginx_count(&N, "\"bytes="), 6);
    cr_assert_eq(tnginx_count(&N, "\" 200 "), 0, "a whole-object GET");
    cr_assert_neq(tsh("ls '%s'/jobs/*/in 2>/dev/null | grep -q .", D.storage), 0);
}

Test(dist_http, a_job_read_by_ranges_from_nginx_equals_process)
{
    ranges_job_equals_process("1");
}

/* vrctl submit's default: an auto length failed at the plan ("cannot stat
 * the source: Bad file descriptor"); a URL's chunks are whole. */
Test(dist_http, an_auto_length_job_read_by_ranges_equals_process)
{
    ranges_job_equals_process("auto");
}

Test(dist_http, an_object_changed_mid_job_fails_the_job_saying_so)
{
    start("", 1);
    setenv("VR_TEST_FRAME_DELAY_MS", "150", 1); /* chunks slow enough to change one under */
    worker(1);
    char url[256], out[400], cfg[400], id[64], v[64] = "", err[1024];
    snprintf(url, sizeof url, "%sclip.mp4", N.url);
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    cr_assert_eq(submit(url, out, cfg, id, sizeof id), 0);
    for (int t = 0; t < 60000 && atoi(v) < 1; t += 50) {
        job_field(id, "chunks_done", v, sizeof v);
        tmsleep(50);
    }
    cr_assert_geq(atoi(v), 1, "no chunk done");
    /* rewritten in place: other bytes, a new ETag and Last-Modified */
    cr_assert_eq(tsh("cd '%s' && ffmpeg -v error -y -i clip.mp4 -c copy -t 5 c2.mp4 && "
                     "touch -d '2001-01-01' c2.mp4 && mv c2.mp4 clip.mp4", N.www), 0);
    finish(id, 1);
    job_field(id, "error", err, sizeof err);
    cr_assert(strstr(err, "changed") && strstr(err, "clip.mp4"), "%s", err);
    cr_assert(tsh("test -e '%s'", out) != 0, "an output was published");
}

Test(dist_http, a_503_storm_then_recovery_finishes)
{
    start("", 1);
    char url[256], out[400], single[400], cfg[400], id[64], state[64] = "";
    snprintf(url, sizeof url, "%sclip.mp4", N.url);
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    cr_assert_eq(submit(url, out, cfg, id, sizeof id), 0);
    for (int t = 0; t < 30000 && !strstr(state, "running"); t += 20) {
        job_field(id, "state", state, sizeof state);
        tmsleep(20);
    }
    cr_assert(strstr(state, "running"), "%s", state);
    /* planned: every worker read now meets the storm until it ends */
    cr_assert_eq(tsh("touch '%s/storm'", N.dir), 0);
    worker(1);
    worker(1);
    int seen = 0;
    for (int t = 0; t < 20000 && seen < 4; t += 10) {
        seen = tnginx_count(&N, "\" 503 ");
        tmsleep(10);
    }
    if (seen < 4)
        tsh("tail -20 '%s' >&2; tail -5 '%s' >&2", D.log, N.access);
    cr_assert_geq(seen, 4, "the storm met no reader");
    cr_assert_eq(tsh("rm '%s/storm'", N.dir), 0);
    finish(id, 0);
    process(url, cfg, single);
    same_frames(out, single);
}

Test(dist_http, a_truncated_response_is_retried_never_stitched)
{
    servers();
    char root[128];
    int pp = tproxy_cut_start(N.port);
    cr_assert_gt(pp, 0);
    snprintf(root, sizeof root, "http://127.0.0.1:%d/", pp);
    controller(root, 1);
    char url[256], out[400], single[400], cfg[400], id[64];
    snprintf(url, sizeof url, "%sclip.mp4", root);
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    cr_assert_eq(submit(url, out, cfg, id, sizeof id), 0);
    tproxy_cut_arm(3); /* the plan's and the worker's reads, not vrctl's probe */
    worker(1);
    finish(id, 0);
    cr_assert_eq(tproxy_cut_count(), 3, "the proxy cut %d responses", tproxy_cut_count());
    cr_assert_eq(tsh("grep -q 'truncated\\|transfer closed\\|Partial\\|partial' '%s'", D.log), 0,
                 "no retry of a truncated response logged");
    char direct[256];
    snprintf(direct, sizeof direct, "%sclip.mp4", N.url);
    process(direct, cfg, single);
    same_frames(out, single);
}

Test(dist_http, a_loopback_source_is_refused_unless_the_operator_allows_it)
{
    start("", 0);
    worker(0);
    char url[256], out[400], cfg[400], id[64], err[1024];
    snprintf(url, sizeof url, "%sclip.mp4", N.url);
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    cr_assert_eq(submit(url, out, cfg, id, sizeof id), 0); /* vrctl's probe: the user's own */
    int probed = tnginx_count(&N, "GET /clip.mp4");
    finish(id, 1);
    job_field(id, "error", err, sizeof err);
    cr_assert(strstr(err, "refused") && strstr(err, "127.0.0.1") &&
              strstr(err, "--storage-allow-private"), "%s", err);
    cr_assert_eq(tnginx_count(&N, "GET /clip.mp4"), probed, "the controller reached it");
    /* a step out of the root: refused by the controller before any request
     * (vrctl's libcurl squashes the dot segment, a server might not) */
    char other[256], id2[64];
    snprintf(other, sizeof other, "%sx/../clip.mp4", N.url);
    cr_assert_eq(submit(other, out, cfg, id2, sizeof id2), 0);
    finish(id2, 1);
    job_field(id2, "error", err, sizeof err);
    cr_assert(strstr(err, "'..' segment"), "%s", err);
}

Test(dist_http, s3_credentials_appear_in_no_log_redis_record_or_status)
{
    static const char secret[] = "vrSecretKey46xyzzyDoNotLeak0123456789abcd";
    setenv("AWS_ACCESS_KEY_ID", "AKIAVRSEGTEST46", 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    setenv("AWS_REGION", "us-east-1", 1);
    servers();
    char ep[128];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", N.port);
    setenv("VR_S3_ENDPOINT", ep, 1); /* path style: <endpoint>/<bucket>/<key> */
    cr_assert_eq(tsh("mkdir -p '%s/media-46' && mv '%s/clip.mp4' '%s/media-46/'", N.www, N.www,
                     N.www), 0);
    controller("s3://media-46/", 1);
    worker(1);
    char out[400], cfg[400], id[64];
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    lossless_cfg(cfg, sizeof cfg);
    cr_assert_eq(submit("s3://media-46/clip.mp4", out, cfg, id, sizeof id), 0);
    finish(id, 0);
    /* signed: every GET carried SigV4 with the key id, never the secret */
    cr_assert_gt(tnginx_count(&N, "auth=\"AWS4-HMAC-SHA256 Credential=AKIAVRSEGTEST46/"), 2);
    cr_assert_eq(tnginx_count(&N, secret), 0);
    /* the logs, every Redis record (an RDB snapshot of them all), status */
    cr_assert_neq(tsh("grep -rq '%s' '%s'", secret, D.log), 0, "the secret is in a log");
    const char *save[] = { "SAVE", NULL };
    cr_assert_eq(tredis_cmd(&D.r, save), 0);
    cr_assert_neq(tsh("grep -rqa '%s' '%s' --exclude-dir=nginx", secret, D.r.dir), 0,
                  "the secret is in Redis or the storage");
    static char js[1 << 16];
    const char *args[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, args), 0);
    cr_assert_null(strstr(js, secret));
    cr_assert_null(strstr(js, "AKIAVRSEGTEST46"));
    unsetenv("VR_S3_ENDPOINT");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
}

/*
 * t-dist-s3-out.c - outputs to S3 (issue 46): `vrctl submit -o
 * s3://bucket/out/x.mkv` and `vr-worker process -o s3://...` against a real
 * S3-compatible server on loopback (moto_server, util-s3.h) that checks
 * every request's SigV4 signature with AWS's own signer (botocore). With
 * parts of 1 KiB a small FFV1 output goes up by multipart upload; the
 * object equals one `process` of the clip, byte for byte, and never
 * appears before the Complete. A part that fails for good aborts the
 * upload and leaves no object and no upload; a wrong secret is refused by
 * the store (403 SignatureDoesNotMatch) and the message names the object,
 * the operation and the status; the secret is in no log, Redis record or
 * `status`.
 */
#include "util-nginx.h"
#include "util-redis.h"
#include "util-s3.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct ts3 S;
static char CLIP[400];   /* the local source */
static char CFG[400];    /* FFV1 */

static void teardown(void)
{
    ts3_stop(&S);
    tdist_stop(&D, 0);
    unsetenv("VR_S3_ENDPOINT");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("VR_S3_PART_SIZE");
}

TestSuite(dist_s3_out, .fini = teardown, .timeout = 240);

/* Redis, moto with the bucket "vrbucket", a 3 s clip, the FFV1 config;
 * parts of part bytes. */
static void servers(const char *part)
{
    if (!ts3_available())
        cr_skip_test("no moto_server: deploy/install-deps.sh --test installs it where PyPI is "
                     "reachable (this S3 suite needs it)");
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char sd[400];
    snprintf(sd, sizeof sd, "%s/s3", D.r.dir);
    cr_assert_eq(ts3_start(&S, sd, "vrbucket", 1024), 0);
    ts3_env(&S);
    setenv("VR_S3_PART_SIZE", part, 1);
    snprintf(CLIP, sizeof CLIP, "%s/clip.mp4", D.r.dir);
    cr_assert_eq(tclip_make(CLIP, 3, 160, 10, 0), 0);
    snprintf(CFG, sizeof CFG, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CFG), 0);
}

/* `vr-worker process` of the clip into out, its output into log. */
static int process(const char *out, const char *log)
{
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", CFG, CLIP,
                           "-o", out, "-y", NULL };
    return tproc_wait(tproc_spawn("vr-worker", argv, log), 120000);
}

/* No multipart upload is left open in the bucket. */
static void no_upload_left(void)
{
    char list[400];
    snprintf(list, sizeof list, "%s/uploads.xml", S.dir);
    cr_assert_eq(ts3_get(&S, "vrbucket?uploads=", list), 200);
    cr_assert_neq(tsh("grep -q '<Upload>' '%s'", list), 0, "an upload is left open");
}

Test(dist_s3_out, a_fleet_writes_by_multipart_the_bytes_of_process)
{
    servers("1024");
    D.ctl_args[0] = "--output-root";
    D.ctl_args[1] = "s3://vrbucket/out/";
    D.ctl_args[2] = "--storage-allow-private"; /* moto is on loopback */
    cr_assert_gt(tdist_controller(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    const char *extra[] = { "-c", CFG, NULL };
    char id[64];
    cr_assert_eq(tdist_submit(&D, CLIP, "s3://vrbucket/out/fleet.mkv", extra, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 180000);
    if (rc != 0)
        tsh("tail -30 '%s' >&2; tail -20 '%s' >&2", D.log, S.log);
    cr_assert_eq(rc, 0);
    /* one object, every byte of process's file */
    char single[400], got[400];
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    cr_assert_eq(process(single, NULL), 0);
    snprintf(got, sizeof got, "%s/got.mkv", D.r.dir);
    cr_assert_eq(ts3_get(&S, "vrbucket/out/fleet.mkv", got), 200);
    cr_assert_eq(tsh("cmp '%s' '%s' >&2", got, single), 0, "the object differs from process's");
    /* by multipart (the file is over 2 KiB: 3 parts or more), signed right
     * (moto answered none 403), never a plain PUT under the name */
    cr_assert_eq(ts3_count(&S, "\"POST /vrbucket/out/fleet.mkv?uploads= "), 1);
    cr_assert_eq(ts3_count(&S, "\"PUT /vrbucket/out/fleet.mkv?partNumber=3&uploadId="), 1);
    cr_assert_eq(ts3_count(&S, "\"PUT /vrbucket/out/fleet.mkv HTTP"), 0);
    cr_assert_eq(ts3_count(&S, "\" 403 "), 0);
    no_upload_left();
    cr_assert_neq(tsh("find '%s/url-out' -type f | grep -q .", D.storage), 0);
    /* the secret: in no log, Redis record (an RDB of them all) or status */
    cr_assert_neq(tsh("grep -rqa '%s' '%s' --exclude-dir=s3", S.secret, D.r.dir), 0,
                  "the secret is in a log");
    const char *save[] = { "SAVE", NULL };
    cr_assert_eq(tredis_cmd(&D.r, save), 0);
    cr_assert_neq(tsh("grep -rqa '%s' '%s' --exclude-dir=s3", S.secret, D.r.dir), 0,
                  "the secret is in Redis");
    static char js[1 << 16];
    const char *args[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, args), 0);
    cr_assert_null(strstr(js, S.secret));
    cr_assert_null(strstr(js, S.id));
    /* -n (the default) with the object there: refused before any work */
    char id2[64];
    cr_assert_neq(tdist_submit(&D, CLIP, "s3://vrbucket/out/fleet.mkv", extra, id2, sizeof id2),
                  0);
    cr_assert_eq(ts3_count(&S, "\"POST /vrbucket/out/fleet.mkv?uploads= "), 1);
}

Test(dist_s3_out, a_part_failing_for_good_aborts_and_no_object_appears)
{
    servers("2048");
    /* every request with a body over 1 KB (each part) cut mid-body */
    int port = tproxy_cut_start(S.port);
    cr_assert_gt(port, 0);
    tproxy_cut_arm(1000);
    char ep[64], log[400], msg[4096];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", port);
    setenv("VR_S3_ENDPOINT", ep, 1);
    snprintf(log, sizeof log, "%s/cut.log", D.r.dir);
    cr_assert_neq(process("s3://vrbucket/out/cut.mkv", log), 0);
    tslurp(log, msg, sizeof msg);
    cr_assert(strstr(msg, "s3://vrbucket/out/cut.mkv: UploadPart 1: ") &&
              strstr(msg, "(after 6 tries)"), "%s", msg);
    cr_assert_eq(ts3_count(&S, "\"POST /vrbucket/out/cut.mkv?uploads= "), 1);
    cr_assert_eq(ts3_count(&S, "\"DELETE /vrbucket/out/cut.mkv?uploadId="), 1);
    cr_assert_eq(ts3_count(&S, "\"POST /vrbucket/out/cut.mkv?uploadId="), 0, "completed");
    cr_assert_eq(ts3_get(&S, "vrbucket/out/cut.mkv", NULL), 404);
    no_upload_left();
    /* a wrong secret: the store refuses it, the message says so, unsaid */
    static const char bad[] = "wrongSecret46NotToBeSeenAnywhere";
    setenv("VR_S3_ENDPOINT", S.endpoint, 1);
    setenv("AWS_SECRET_ACCESS_KEY", bad, 1);
    snprintf(log, sizeof log, "%s/bad.log", D.r.dir);
    cr_assert_neq(process("s3://vrbucket/out/bad.mkv", log), 0);
    tslurp(log, msg, sizeof msg);
    cr_assert(strstr(msg, "s3://vrbucket/out/bad.mkv: CreateMultipartUpload: HTTP 403 "
                          "(SignatureDoesNotMatch)"), "%s", msg);
    cr_assert_null(strstr(msg, bad));
    cr_assert_eq(ts3_get(&S, "vrbucket/out/bad.mkv", NULL), 404);
}

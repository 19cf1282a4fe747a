/*
 * t-queue-records.c - the records that travel through Redis and the storage
 * root: job specs and chunk tasks round-trip and are parsed strictly (unknown
 * keys, wrong types, out-of-range values, oversized text, hostile ids and
 * paths are errors naming the key); manifests are checked; storage paths
 * cannot escape the root; durable writes and disk-full reporting.
 */
#include "job.h"
#include "storage.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(queue_records, spec_round_trip)
{
    struct job_spec a, b;
    job_spec_defaults(&a);
    job_new_id(a.id, sizeof a.id);
    cr_assert(job_id_valid(a.id), "%s", a.id);
    snprintf(a.input, sizeof a.input, "/data/in \"quoted\" é.mp4");
    snprintf(a.output, sizeof a.output, "/data/out.mkv");
    a.chunk_seconds = 2.5;
    a.priority = -3;
    a.created_ms = 1795300000000LL;
    char *s = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&a, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(job_spec_parse(s, strlen(s), &b, &e), 0, "%s", e.msg);
    cr_assert_str_eq(b.input, a.input);
    cr_assert_str_eq(b.id, a.id);
    cr_assert_float_eq(b.chunk_seconds, 2.5, 1e-9);
    cr_assert_eq(b.priority, -3);
    cr_assert_eq(b.created_ms, a.created_ms);
    free(s);
}

Test(queue_records, spec_is_strict)
{
    static const struct { const char *json, *word; } bad[] = {
        { "{not json", "bad JSON" },
        { "[1,2]", "not a JSON object" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":1,\"evil\":1}", "evil" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\"}", "chunk_seconds" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":\"1\"}", "chunk_seconds" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":0.01}", "outside" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":1,\"max_attempts\":1.5}", "integer" },
        { "{\"id\":\"../x\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":1}", "bad id" },
        { "{\"id\":\"a\",\"input\":\"rel\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"chunk_seconds\":1}", "absolute" },
        { "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\",\"output_kind\":\"paint\",\"chunk_seconds\":1}", "output_kind" },
        { "{\"id\":\"a\",\"id\":\"b\"}", "bad JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct job_spec j;
        vr_err e = { 0 };
        cr_assert_eq(job_spec_parse(bad[i].json, strlen(bad[i].json), &j, &e), VR_EFORMAT,
                     "accepted: %s", bad[i].json);
        cr_assert(strstr(e.msg, bad[i].word), "'%s' lacks '%s'", e.msg, bad[i].word);
    }
    /* Oversized text and an overlong string field. */
    size_t n = JOB_MAX_JSON + 10;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[n] = '\0';
    struct job_spec j;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_parse(big, n, &j, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "limit"), "%s", e.msg);
    snprintf(big, n, "{\"id\":\"a\",\"input\":\"/%0*d\"}", 2000, 0);
    cr_assert_eq(job_spec_parse(big, strlen(big), &j, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "input"), "%s", e.msg);
    free(big);
}

Test(queue_records, task_round_trip_and_limits)
{
    struct chunk_task t = { 0 }, u;
    snprintf(t.job, sizeof t.job, "20260101-000000-abcd");
    t.idx = 12;
    snprintf(t.in, sizeof t.in, "jobs/x/in/00012.mkv");
    snprintf(t.out, sizeof t.out, "jobs/x/out/00012.mkv");
    snprintf(t.profile, sizeof t.profile, "fast");
    snprintf(t.output_kind, sizeof t.output_kind, "alpha");
    t.frames = 50;
    t.preroll_until = 1234;
    char *s = NULL;
    cr_assert_eq(chunk_task_to_json(&t, &s, NULL), 0);
    vr_err e = { 0 };
    cr_assert_eq(chunk_task_parse(s, strlen(s), &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.idx, 12);
    cr_assert_eq(u.frames, 50);
    cr_assert_eq(u.preroll_until, 1234);
    cr_assert_str_eq(u.out, t.out);
    free(s);
    const char *neg = "{\"job\":\"a\",\"idx\":-1,\"in\":\"i\",\"out\":\"o\",\"profile\":\"fast\",\"output_kind\":\"mask\",\"frames\":1}";
    cr_assert_eq(chunk_task_parse(neg, strlen(neg), &u, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "idx"), "%s", e.msg);
}

Test(queue_records, manifest_checked)
{
    char dir[] = "/tmp/vrtest-man-XXXXXX", p[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    long long fr[3] = { 10, 14, 6 };
    struct job_manifest m = { .nchunks = 3, .frames = 30, .duration_s = 3, .split_s = 0.1,
                              .chunk_frames = fr }, r;
    vr_err e = { 0 };
    cr_assert_eq(job_manifest_write(p, &m, &e), 0, "%s", e.msg);
    cr_assert_eq(job_manifest_read(p, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.nchunks, 3);
    cr_assert_eq(r.chunk_frames[1], 14);
    cr_assert_eq(r.chunk_preroll[1], 0, "no pre-roll written, none read");
    job_manifest_release(&r);
    long long pr[3] = { 0, 900, 0 }; /* an open-GOP cut before chunk 1 */
    m.chunk_preroll = pr;
    cr_assert_eq(job_manifest_write(p, &m, &e), 0, "%s", e.msg);
    cr_assert_eq(job_manifest_read(p, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.chunk_preroll[1], 900);
    cr_assert_eq(r.chunk_preroll[2], 0);
    job_manifest_release(&r);
    FILE *f = fopen(p, "w");
    fputs("{\"chunks\":[10,14,6],\"frames\":31}", f);
    fclose(f);
    cr_assert_eq(job_manifest_read(p, &r, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "add up"), "%s", e.msg);
    f = fopen(p, "w");
    fputs("{\"chunks\":[10,14,6],\"frames\":30,\"preroll_until\":[0,5]}", f);
    fclose(f);
    cr_assert_eq(job_manifest_read(p, &r, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "preroll_until"), "%s", e.msg);
    unlink(p);
    rmdir(dir);
}

Test(queue_records, storage_paths_stay_under_root)
{
    char out[64];
    vr_err e = { 0 };
    cr_assert_eq(storage_path("/srv", "jobs/a/in/00001.mkv", out, sizeof out, &e), 0);
    cr_assert_str_eq(out, "/srv/jobs/a/in/00001.mkv");
    cr_assert_eq(storage_path("/srv", "../etc/passwd", out, sizeof out, &e), VR_EINVAL);
    cr_assert_eq(storage_path("/srv", "jobs/../../x", out, sizeof out, &e), VR_EINVAL);
    cr_assert_eq(storage_path("/srv", "/etc/passwd", out, sizeof out, &e), VR_EINVAL);
    cr_assert_eq(storage_path("/srv", "a//b", out, sizeof out, &e), VR_EINVAL);
    cr_assert_eq(storage_path("/srv", "a/very/long/name/that/does/not/fit/in/sixty-four/bytes/at/all.mkv",
                              out, sizeof out, &e), VR_EINVAL);
}

Test(queue_records, durable_write_and_disk_full)
{
    char dir[] = "/tmp/vrtest-st-XXXXXX", p[160], sub[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/a/b/c", dir);
    vr_err e = { 0 };
    cr_assert_eq(storage_mkdirs(sub, &e), 0, "%s", e.msg);
    snprintf(p, sizeof p, "%s/f.txt", sub);
    cr_assert_eq(storage_write_atomic(p, "hello", 5, &e), 0, "%s", e.msg);
    char *text;
    size_t len;
    cr_assert_eq(storage_read_file(p, 100, &text, &len, &e), 0);
    cr_assert_str_eq(text, "hello");
    free(text);
    cr_assert_eq(storage_read_file(p, 3, &text, &len, &e), VR_EFORMAT);
    /* No space: a clear message naming the place. */
    cr_assert_eq(storage_check_space(dir, 1ULL << 62, &e), VR_ENOSPC);
    cr_assert(strstr(e.msg, "disk full") && strstr(e.msg, dir), "%s", e.msg);
    cr_assert_eq(storage_errno(ENOSPC, "cannot write", "/x/y.mkv", &e), VR_ENOSPC);
    cr_assert(strstr(e.msg, "/x/y.mkv: disk full"), "%s", e.msg);
    /* A real ENOSPC from the kernel: /dev/full. */
    FILE *f = fopen("/dev/full", "w");
    if (f) {
        setvbuf(f, NULL, _IONBF, 0);
        int w = fputs("x", f);
        int err = errno;
        fclose(f);
        cr_assert_eq(w, EOF);
        cr_assert_eq(storage_errno(err, "cannot write", "/dev/full", &e), VR_ENOSPC);
    }
    cr_assert_eq(storage_rmtree(dir), 0);
    cr_assert_neq(access(dir, F_OK), 0);
}

Test(queue_records, auto_chunk_length_fills_whole_waves)
{
    /* 40 s over 8 workers: one wave of 5 s; over 3: 2 waves of 6.67 s */
    cr_assert_float_eq(job_auto_chunk_seconds(40, 8, 0), 5.0, 1e-9);
    cr_assert_float_eq(job_auto_chunk_seconds(40, 3, 0), 40.0 / 6, 1e-9);
    /* an hour over 16: 10 s chunks (23 waves), never longer */
    double c = job_auto_chunk_seconds(3600, 16, 0);
    cr_assert_leq(c, JOB_CHUNK_SECONDS_DEFAULT);
    double chunks = 3600 / c, waves = chunks / 16;
    cr_assert_float_eq(waves, (double)(long)(waves + 0.5), 1e-9, "%g waves", waves);
    /* short clips: not below the floor; unknown figures: the default */
    cr_assert_float_eq(job_auto_chunk_seconds(3, 8, 0), JOB_CHUNK_SECONDS_MIN_AUTO, 1e-9);
    cr_assert_float_eq(job_auto_chunk_seconds(0, 8, 0), JOB_CHUNK_SECONDS_DEFAULT, 1e-9);
    cr_assert_float_eq(job_auto_chunk_seconds(40, 0, 0), JOB_CHUNK_SECONDS_DEFAULT, 1e-9);
    /* a picture output: four waves at least, down to 1 s (40 s over 32
     * workers: 1 s chunks, not one wave of 2 s that leaves cores idle at
     * the tail); a long one keeps 10 s chunks */
    cr_assert_float_eq(job_auto_chunk_seconds(40, 32, 1), JOB_CHUNK_SECONDS_MIN_PICTURE, 1e-9);
    cr_assert_float_eq(job_auto_chunk_seconds(40, 2, 1), 5.0, 1e-9);
    cr_assert_float_eq(job_auto_chunk_seconds(3600, 16, 1), job_auto_chunk_seconds(3600, 16, 0),
                       1e-9);
    cr_assert(job_output_is_picture("alpha") && job_output_is_picture("alpha-packed") &&
              job_output_is_picture("greenscreen") && !job_output_is_picture("mask"));
    /* a spec may ask for auto (0) */
    const char *js = "{\"id\":\"a\",\"input\":\"/i\",\"output\":\"/o\",\"profile\":\"fast\","
                     "\"output_kind\":\"mask\",\"chunk_seconds\":0}";
    struct job_spec j;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_parse(js, strlen(js), &j, &e), 0, "%s", e.msg);
    cr_assert_eq(j.chunk_seconds, 0);
}

/*
 * t-dist-e2e.c - the whole system on one machine with CPU workers and a real
 * redis-server: a multi-chunk clip with audio through 3 workers gives an
 * output with the input's frame count and timestamps and bit-exact audio,
 * mattes that match a single-node `vr-worker process` (mean difference
 * <= 1%), and status figures that add up. Bad inputs are refused before
 * anything is enqueued.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist, .fini = teardown, .timeout = 120);

/* Mean absolute difference of two videos' decoded luma, in percent of 255. */
static double mean_diff_pct(const char *a, const char *b)
{
    char ra[400], rb[400];
    snprintf(ra, sizeof ra, "%s/a.gray", D.r.dir);
    snprintf(rb, sizeof rb, "%s/b.gray", D.r.dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -i '%s' -map 0:v -f rawvideo -pix_fmt gray '%s'", a, ra), 0);
    cr_assert_eq(tsh("ffmpeg -v error -y -i '%s' -map 0:v -f rawvideo -pix_fmt gray '%s'", b, rb), 0);
    FILE *fa = fopen(ra, "rb"), *fb = fopen(rb, "rb");
    cr_assert(fa && fb);
    long long sum = 0, n = 0;
    int ca, cb;
    while ((ca = fgetc(fa)) != EOF && (cb = fgetc(fb)) != EOF) {
        sum += abs(ca - cb);
        n++;
    }
    int rest_a = ca == EOF ? 0 : 1, rest_b = fgetc(fb) != EOF;
    fclose(fa);
    fclose(fb);
    cr_assert(!rest_a && !rest_b, "decoded sizes differ");
    cr_assert_gt(n, 0);
    return 100.0 * sum / n / 255.0;
}

Test(dist, three_workers_audio_timestamps_mattes_and_figures)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 3), 0);
    char in[400], out[400], single[400], id[64], a[256], b[256];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 5, 160, 5, 1), 0);

    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    cr_assert_gt(strlen(id), 10, "submit printed '%s'", id);
    int rc = tdist_watch(&D, id, 90000);
    if (rc != 0)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "watch exit %d", rc);

    /* Frames and timestamps: the input's, exactly. */
    tsh_out(a, sizeof a, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", in);
    tsh_out(b, sizeof b, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", out);
    cr_assert_str_eq(a, b, "video timestamps differ");
    tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out);
    cr_assert_eq(atoi(b), 50);
    /* Audio: bit for bit. */
    tsh_out(a, sizeof a, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", in);
    tsh_out(b, sizeof b, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", out);
    cr_assert_str_eq(a, b, "audio is not bit-exact");
    cr_assert(strstr(a, "MD5="));

    /* Mattes: same as one node processing the whole file. */
    const char *pargv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", single, NULL };
    cr_assert_eq(tproc_run("vr-worker", pargv, NULL, 0), 0);
    double diff = mean_diff_pct(out, single);
    cr_assert_leq(diff, 1.0, "mean matte difference %.3f%%", diff);

    /* Status figures add up. */
    static char js[1 << 16];
    const char *sargs[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, sargs), 0);
    json_error_t je;
    json_t *o = json_loads(js, 0, &je);
    cr_assert_not_null(o, "%s", je.text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "done");
    long long frames = json_integer_value(json_object_get(o, "frames"));
    long long total = json_integer_value(json_object_get(o, "chunks_total"));
    cr_assert_eq(frames, 50);
    cr_assert_geq(total, 4);
    cr_assert_eq(json_integer_value(json_object_get(o, "chunks_done")), total);
    cr_assert_eq(json_integer_value(json_object_get(o, "frames_done")), frames);
    cr_assert_eq(json_integer_value(json_object_get(o, "chunk_frames_sum")), frames);
    cr_assert_gt(json_real_value(json_object_get(o, "fps")), 0);
    long long wf = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(o, "workers"), k, v)
        wf += json_integer_value(json_object_get(v, "frames"));
    cr_assert_eq(wf, frames, "per-worker frames add up to %lld", wf);
    /* Merged histograms: one decode and one encode sample per frame. */
    json_t *st = json_object_get(o, "stages");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "decode"), "n")), frames);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "encode"), "n")), frames);
    json_decref(o);

    /* The plain status list and metrics views work too. */
    const char *largs[] = { "status", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, largs), 0);
    cr_assert(strstr(js, id) && strstr(js, "done"), "%s", js);
    const char *margs[] = { "metrics", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, margs), 0);
    cr_assert(strstr(js, "inference") && strstr(js, "p95"), "%s", js);
    const char *wargs[] = { "workers", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, wargs), 0);
    cr_assert(strstr(js, ":cpu:"), "%s", js);
}

Test(dist, submit_refuses_bad_input_before_enqueueing)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char txt[400], out[400], id[64];
    snprintf(txt, sizeof txt, "%s/notes.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    FILE *f = fopen(txt, "w");
    fputs("not a video", f);
    fclose(f);
    cr_assert_eq(tdist_submit(&D, "/nonexistent/in.mp4", out, NULL, id, sizeof id), 1);
    cr_assert_str_eq(id, "");
    cr_assert_eq(tdist_submit(&D, txt, out, NULL, id, sizeof id), 1);
    const char *bad_kind[] = { "--output", "sparkles", NULL };
    cr_assert_eq(tdist_submit(&D, txt, out, bad_kind, id, sizeof id), 2);
    struct rq *q = NULL;
    cr_assert_eq(rq_open(D.r.url, 2000, &q, NULL), 0);
    redisReply *r = rq_cmd(q, NULL, "EXISTS %s", RQ_JOBS);
    cr_assert_eq(r->integer, 0, "something was enqueued");
    freeReplyObject(r);
    rq_free(&q);
    /* No Redis at all: a clear error, exit 1. */
    tredis_kill(&D.r);
    char clip[400];
    snprintf(clip, sizeof clip, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(clip, 1, 96, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, clip, out, NULL, id, sizeof id), 1);
}

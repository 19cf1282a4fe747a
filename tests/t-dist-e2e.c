/*
 * t-dist-e2e.c - the whole system on one machine with CPU workers and a real
 * redis-server: a multi-chunk clip with audio through 3 workers gives an
 * output with the input's frame count and timestamps and bit-exact audio,
 * mattes that match a single-node `vr-worker process` (mean difference
 * <= 1%), and status figures that add up; so does an open-GOP HEVC clip
 * cut at its CRAs with pre-rolls. Bad inputs are refused before anything is
 * enqueued.
 */
#include "rq.h"
#include "util-video.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(dist_e2e, .fini = teardown, .timeout = 120);

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

Test(dist_e2e, three_workers_audio_timestamps_mattes_and_figures)
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

Test(dist_e2e, open_gop_hevc_splits_with_prerolls)
{
    /* x265's default open GOP: one IDR, then a CRA every 10 frames whose
     * leading pictures reference the GOP before it. Each 1 s chunk after
     * the first starts at a CRA with that GOP as a pre-roll; the output must
     * still have every frame, the source's timestamps and audio, and the
     * single-node mattes. */
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 2), 0);
    char in[400], out[400], single[400], id[64], a[256], b[256], vt[512];
    snprintf(in, sizeof in, "%s/open.mkv", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    tv_data(vt, sizeof vt, "tests/data/video/mono.mkv");
    cr_assert_eq(tsh("ffmpeg -v error -stream_loop 2 -i '%s' -f lavfi -i sine=frequency=440:duration=6 "
                     "-map 0:v -map 1:a -frames:v 60 -c:v libx265 -preset ultrafast -x265-params "
                     "log-level=error:keyint=10:min-keyint=10:scenecut=0:open-gop=1:bframes=3 "
                     "-c:a aac -shortest '%s'", vt, in), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    int rc = tdist_watch(&D, id, 90000);
    if (rc != 0)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "watch exit %d", rc);
    cr_assert_eq(tsh("grep -q 'chunks start with the GOP before them as a pre-roll' '%s'", D.log), 0,
                 "no pre-roll chunks: the split did not cut at the CRAs");

    tsh_out(a, sizeof a, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", in);
    tsh_out(b, sizeof b, "ffprobe -v error -select_streams v -show_entries packet=pts_time "
            "-of csv=p=0 '%s' | sort -n | md5sum", out);
    cr_assert_str_eq(a, b, "video timestamps differ");
    tsh_out(a, sizeof a, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", in);
    tsh_out(b, sizeof b, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", out);
    cr_assert_str_eq(a, b, "audio is not bit-exact");

    static char js[1 << 16];
    const char *sargs[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, sargs), 0);
    json_t *o = json_loads(js, 0, NULL);
    cr_assert_not_null(o);
    cr_assert_eq(json_integer_value(json_object_get(o, "frames")), 60);
    cr_assert_geq(json_integer_value(json_object_get(o, "chunks_total")), 5);
    json_decref(o);

    const char *pargv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", single, NULL };
    cr_assert_eq(tproc_run("vr-worker", pargv, NULL, 0), 0);
    double diff = mean_diff_pct(out, single);
    cr_assert_leq(diff, 1.0, "mean matte difference %.3f%%", diff);
}

Test(dist_e2e, submit_refuses_bad_input_before_enqueueing)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char txt[400], out[400], id[64];
    snprintf(txt, sizeof txt, "%s/notes.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mp4", D.r.dir);
    FILE *f = fopen(txt, "w");
    fputs("not a video", f);
    fclose(f);
    cr_assert_eq(tdist_submit(&D, "/nonexistent/in.mp4", out, NULL, id, sizeof id), 2);
    cr_assert_str_eq(id, "");
    cr_assert_eq(tdist_submit(&D, txt, out, NULL, id, sizeof id), 2);
    /* a real Matroska file whose codec nothing here decodes */
    char unk[400], src[512];
    snprintf(unk, sizeof unk, "%s/unknown.mkv", D.r.dir);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    cr_assert_eq(tsh("sed 's|V_MPEG4/ISO/AVC|V_MPEG4/ISO/XYZ|' '%s' > '%s'", src, unk), 0);
    cr_assert_eq(tdist_submit(&D, unk, out, NULL, id, sizeof id), 2);
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

Test(dist_e2e, daemons_refuse_bad_setups_with_reasons)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char out[1024];
    /* A malformed address: usage error (none at all is redis://127.0.0.1:6379). */
    unsetenv("VR_REDIS");
    const char *a1[] = { "vr-controller", "run", "--redis", "redis//x", "--storage", D.storage,
                         NULL };
    cr_assert_eq(tproc_run("vr-controller", a1, out, sizeof out), 2);
    const char *a2[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage, NULL };
    cr_assert_eq(tproc_run("vr-worker", a2, out, sizeof out), 2, "neither --gpu nor --cpu");
    /* A storage root that does not exist. */
    const char *a3[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", "/nonexistent/x", NULL };
    cr_assert_eq(tproc_run("vr-controller", a3, out, sizeof out), 1);
    /* A Redis that may evict keys is refused. */
    struct rq *q = NULL;
    cr_assert_eq(rq_open(D.r.url, 2000, &q, NULL), 0);
    redisReply *r = rq_cmd(q, NULL, "CONFIG SET maxmemory-policy allkeys-lru");
    cr_assert_not_null(r);
    freeReplyObject(r);
    rq_free(&q);
    const char *a4[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage, NULL };
    cr_assert_eq(tproc_run("vr-controller", a4, out, sizeof out), 1);
    /* --gpu all on a host without NVIDIA GPUs. */
    if (access("/proc/driver/nvidia/gpus", F_OK) != 0) {
        const char *a5[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                             "--gpu", "all", NULL };
        cr_assert_eq(tproc_run("vr-worker", a5, out, sizeof out), 1);
        /* A GPU worker that cannot use its GPU takes no chunks. */
        const char *a6[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                             "--gpu", "0", NULL };
        cr_assert_eq(tproc_run("vr-worker", a6, out, sizeof out), 1);
    }
}

Test(dist_e2e, two_controllers_share_the_work)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 2), 0);
    pid_t first = D.ctl;
    tdist_controller(&D); /* a second one, racing the first for every step */
    char in[400], out[3][400], id[3][64];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 128, 5, 1), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.mkv", D.r.dir, i);
        cr_assert_eq(tdist_submit(&D, in, out[i], NULL, id[i], sizeof id[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tdist_watch(&D, id[i], 60000), 0, "job %d", i);
    char a[128], b[128];
    for (int i = 0; i < 3; i++) {
        tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
                "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", out[i]);
        cr_assert_eq(atoi(b), 30);
    }
    /* Same input, same output, whichever controller split and stitched. */
    tsh_out(a, sizeof a, "ffmpeg -v error -i '%s' -map 0 -c copy -f framemd5 - | grep -v '^#' | md5sum", out[0]);
    tsh_out(b, sizeof b, "ffmpeg -v error -i '%s' -map 0 -c copy -f framemd5 - | grep -v '^#' | md5sum", out[2]);
    cr_assert_str_eq(a, b);
    kill(first, SIGKILL);
    waitpid(first, NULL, 0);
}

Test(dist_e2e, priority_job_overtakes_queued_work)
{
    /* a lease of 20 s: a chunk reclaimed on a loaded machine (sanitized
     * binaries, tests in parallel) waits out a retry backoff while the
     * normal job runs, which is right, and not what this test asks */
    cr_assert_eq(tdist_start(&D, 0, 20, 1, 0), 0);
    char in[400], outa[400], outb[400], ida[64], idb[64];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(outa, sizeof outa, "%s/a.mkv", D.r.dir);
    snprintf(outb, sizeof outb, "%s/b.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 128, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, outa, NULL, ida, sizeof ida), 0);
    const char *urgent[] = { "--priority", "10", NULL };
    cr_assert_eq(tdist_submit(&D, in, outb, urgent, idb, sizeof idb), 0);
    /* Both split and queued before the only worker starts. */
    struct rq *q = NULL;
    cr_assert_eq(rq_open(D.r.url, 2000, &q, NULL), 0);
    char st[32] = "";
    for (int t = 0; t < 3000 && strcmp(st, "running"); t += 10) {
        char jk[128];
        rq_key_job(jk, sizeof jk, ida);
        rq_hget(q, jk, "state", st, sizeof st, NULL);
        if (!strcmp(st, "running")) {
            rq_key_job(jk, sizeof jk, idb);
            rq_hget(q, jk, "state", st, sizeof st, NULL);
        }
        usleep(10000);
    }
    cr_assert_str_eq(st, "running");
    tdist_worker(&D);
    cr_assert_eq(tdist_watch(&D, ida, 60000), 0);
    cr_assert_eq(tdist_watch(&D, idb, 60000), 0);
    long long fa = 0, fb = 0, last_b = 0, first_a = 1LL << 62;
    for (int i = 0; i < 3; i++) {
        char ck[128];
        long long v = 0;
        rq_key_chunk(ck, sizeof ck, idb, i);
        rq_hget_ll(q, ck, "done_ms", &v, NULL);
        last_b = v > last_b ? v : last_b;
        rq_key_chunk(ck, sizeof ck, ida, i);
        rq_hget_ll(q, ck, "started_ms", &v, NULL);
        first_a = v < first_a ? v : first_a;
    }
    char jk[128];
    rq_key_job(jk, sizeof jk, ida);
    rq_hget_ll(q, jk, "finished_ms", &fa, NULL);
    rq_key_job(jk, sizeof jk, idb);
    rq_hget_ll(q, jk, "finished_ms", &fb, NULL);
    rq_free(&q);
    if (!(fb < fa && last_b <= first_a))
        tsh("grep -v 'mask output\\|set-up' '%s' | tail -60 >&2", D.log);
    cr_assert_lt(fb, fa, "the priority job finished after the normal one");
    cr_assert_leq(last_b, first_a, "a normal chunk ran before the priority job's last chunk");
}

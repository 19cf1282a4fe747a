/*
 * t-dist-ranges.c - chunks read in place, through the whole system (a real
 * redis-server, vr-controller, CPU vr-workers): a job is planned at once
 * (its whole chunk count in `status` before any worker runs, nothing of the
 * source under the storage root) and its output has `process`'s frame
 * times and audio bit for bit; a source without a keyframe index takes the
 * copy split and says why (and `--chunking range` fails it); a source
 * changed after the plan fails the job with that reason; a controller
 * killed mid-plan is replaced and no chunk runs twice; a worker keeps its
 * input open from one chunk of a source to the next, and the matte is
 * still process's frame for frame.
 */
#include "rq.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    unsetenv("VR_TEST_SPLIT_DELAY_MS");
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_ranges, .fini = teardown, .timeout = 180);

/* Redis, a controller, `workers` CPU workers, and a connection. */
static void start(int workers)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 1, workers), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
}

static void job_field(const char *id, const char *f, char *out, size_t n)
{
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    out[0] = '\0';
    rq_hget(Q, jk, f, out, n, NULL);
}

/* Waits until job id's `f` is `want`. */
static void wait_field(const char *id, const char *f, const char *want)
{
    char v[64] = "";
    for (int t = 0; t < 30000 && strcmp(v, want); t += 20) {
        job_field(id, f, v, sizeof v);
        tmsleep(20);
    }
    if (strcmp(v, want))
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_str_eq(v, want, "job %s: %s", id, f);
}

static void finish(const char *id, int want)
{
    int rc = tdist_watch(&D, id, 120000);
    if (rc != want)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, want);
}

static void audio_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:a -c copy -f framemd5 - | grep -v '^#' | md5sum",
            path);
}

static void times_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of "
            "csv=p=0 '%s' | sort -n | md5sum", path);
}

/* `vr-worker process` of in into out, the profile the fleet tests use. */
static void process(const char *in, const char *out)
{
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", out,
                           NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0, "process failed on %s", in);
}

/* The output has process's frame times and audio. */
static void same_as_process(const char *in, const char *out)
{
    char p[400], a[128], b[128];
    snprintf(p, sizeof p, "%s.process.mkv", out);
    process(in, p);
    times_md5(p, a, sizeof a);
    times_md5(out, b, sizeof b);
    cr_assert_str_eq(a, b, "%s: frame times differ from process's", out);
    audio_md5(p, a, sizeof a);
    audio_md5(out, b, sizeof b);
    cr_assert_str_eq(a, b, "%s: audio differs from process's", out);
}

Test(dist_ranges, planned_at_once_nothing_copied_and_equal_to_process)
{
    start(0);
    char in[400], out[400], id[64], v[64], dir[500];
    snprintf(in, sizeof in, "%s/in.mkv", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    /* B-frames, 1 s GOPs: six chunks of 1 s */
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=192x96:rate=25 -f lavfi -i "
                     "sine=frequency=440:sample_rate=48000 -t 6 -c:v libx264 -preset veryfast "
                     "-g 25 -keyint_min 25 -sc_threshold 0 -bf 2 -pix_fmt yuv420p -c:a aac '%s'",
                     in), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    wait_field(id, "state", "running"); /* no worker yet: every chunk waits */
    job_field(id, "chunks_total", v, sizeof v);
    cr_assert_eq(atoi(v), 6, "chunks_total %s", v);
    job_field(id, "chunking", v, sizeof v);
    cr_assert_str_eq(v, "range");
    char js[8192];
    const char *st[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, js, sizeof js, st), 0);
    cr_assert(strstr(js, "\"chunks_total\": 6") && strstr(js, "\"chunks_done\": 0"), "%s", js);
    snprintf(dir, sizeof dir, "%s/jobs/%s/in", D.storage, id);
    cr_assert_neq(access(dir, F_OK), 0, "%s exists: the source was copied", dir);
    tdist_worker(&D);
    tdist_worker(&D);
    finish(id, 0);
    same_as_process(in, out);
}

Test(dist_ranges, a_source_without_an_index_takes_the_copy_split)
{
    start(2);
    char in[400], out[400], id[64], v[64], ev[8192];
    snprintf(in, sizeof in, "%s/in.ts", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    finish(id, 0);
    job_field(id, "chunking", v, sizeof v);
    cr_assert_str_eq(v, "copy");
    const char *args[] = { "events", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, ev, sizeof ev, args), 0);
    cr_assert(strstr(ev, "copy split:") && strstr(ev, "keep no keyframe index"), "%s", ev);
    same_as_process(in, out);

    /* only ranges, asked for: the job fails with the reason */
    const char *range[] = { "--chunking", "range", NULL };
    snprintf(out, sizeof out, "%s/out2.mkv", D.r.dir);
    cr_assert_eq(tdist_submit(&D, in, out, range, id, sizeof id), 0);
    finish(id, 1);
    job_field(id, "error", ev, sizeof ev);
    cr_assert(strstr(ev, "--chunking range") && strstr(ev, "keyframe index"), "%s", ev);
}

Test(dist_ranges, a_source_changed_after_the_plan_fails_the_job_clearly)
{
    start(0);
    char in[400], out[400], id[64], err[1024];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    wait_field(id, "state", "running");
    /* rewritten in place after the plan: same name, other bytes */
    cr_assert_eq(tclip_make(in, 4, 160, 5, 1), 0);
    tdist_worker(&D);
    finish(id, 1);
    job_field(id, "error", err, sizeof err);
    cr_assert(strstr(err, "changed since the job was planned") && strstr(err, "in.mp4") &&
              strstr(err, "not retried"), "%s", err);
}

Test(dist_ranges, a_worker_that_cannot_see_the_source_says_what_to_do)
{
    start(0);
    /* a worker whose input root is elsewhere: its own environment, not the
     * job's, so it quarantines itself (issue 42, finding 2) and the job's
     * events say what to do */
    const char *argv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                           "--input-root", D.storage, "--cpu", "--heartbeat-ms", "300", NULL };
    D.w[D.nw++] = tproc_spawn("vr-worker", argv, D.log);
    char in[400], out[400], id[64], buf[8192];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 10, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    int said = 0;
    for (int t = 0; t < 30000 && !said; t += 100) {
        const char *eargs[] = { "events", id, NULL };
        tdist_vrctl(&D, buf, sizeof buf, eargs);
        said = strstr(buf, "not under this worker's --input-root") &&
               strstr(buf, "--chunking copy") && strstr(buf, "quarantined");
        if (!said)
            tmsleep(100);
    }
    cr_assert(said, "the events do not say what to do:\n%s", buf);
    job_field(id, "state", buf, 64);
    cr_assert_str_eq(buf, "running", "a worker's blindness failed the job");
    const char *cancel[] = { "cancel", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cancel), 0, "%s", buf);
    /* the copy split serves such a worker: its probe takes a chunk, and
     * it is back in service */
    const char *copy[] = { "--chunking", "copy", NULL };
    snprintf(out, sizeof out, "%s/out2.mkv", D.r.dir);
    cr_assert_eq(tdist_submit(&D, in, out, copy, id, sizeof id), 0);
    finish(id, 0);
}

Test(dist_ranges, controller_killed_mid_plan_is_replaced_and_no_chunk_runs_twice)
{
    setenv("VR_TEST_SPLIT_DELAY_MS", "400", 1); /* a plan that takes seconds */
    start(2);
    char in[400], out[400], id[64], ck[128], v[32] = "";
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 6, 160, 10, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_chunk(ck, sizeof ck, id, 2);
    for (int t = 0; t < 30000 && !v[0]; t += 10) {
        v[0] = '\0';
        rq_hget(Q, ck, "state", v, sizeof v, NULL);
        tmsleep(10);
    }
    job_field(id, "state", v, sizeof v);
    cr_assert_str_eq(v, "splitting");
    kill(D.ctl, SIGKILL);
    waitpid(D.ctl, NULL, 0);
    tdist_controller(&D); /* takes the plan over once the dead one's heartbeat expires */
    finish(id, 0);
    for (int i = 0; i < 6; i++) {
        char att[16];
        rq_key_chunk(ck, sizeof ck, id, i);
        att[0] = '\0';
        rq_hget(Q, ck, "attempts", att, sizeof att, NULL);
        cr_assert_eq(atoi(att), 1, "chunk %d ran %s times", i, att);
    }
    same_as_process(in, out);
}

Test(dist_ranges, a_done_chunks_output_lost_before_the_stitch_is_redone)
{
    /* one worker, frames slowed (the test's own clock), so chunk 0's output
     * can vanish while the rest still run; the stitch finds it missing,
     * runs the job again and queues the chunk: it must not be skipped as
     * a chunk of a job that is stitching */
    setenv("VR_TEST_FRAME_DELAY_MS", "30", 1);
    start(1);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    char in[400], out[400], id[64], ck[128], v[32] = "", lost[600];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 1), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    rq_key_chunk(ck, sizeof ck, id, 0);
    for (int t = 0; t < 60000 && strcmp(v, "done"); t += 10) {
        rq_hget(Q, ck, "state", v, sizeof v, NULL);
        tmsleep(10);
    }
    cr_assert_str_eq(v, "done");
    snprintf(lost, sizeof lost, "%s/jobs/%s/out/00000.mkv", D.storage, id);
    cr_assert_eq(unlink(lost), 0, "%s", lost);
    finish(id, 0);
    char att[16] = "";
    rq_hget(Q, ck, "attempts", att, sizeof att, NULL);
    cr_assert_eq(atoi(att), 2, "chunk 0 ran %s times", att);
    same_as_process(in, out);
}

/* The fleet's FFV1 matte `out` of `in` equals one `process`'s (written to
 * p, config cfg) frame for frame and time for time. */
static void matte_equal_to_process(const char *in, const char *out, const char *cfg,
                                   const char *p)
{
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", cfg, in,
                           "-o", p, NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0);
    struct tv_file a, b;
    cr_assert_eq(tv_read(p, 1, &a), 0);
    cr_assert_eq(tv_read(out, 1, &b), 0);
    tv_assert_same_timing(&a, &b);
    for (int i = 0; i < a.nframes; i++)
        cr_assert_eq(memcmp(a.luma[i], b.luma[i], (size_t)a.w * a.h), 0,
                     "%s: frame %d of the matte differs from process's", in, i);
    tv_free(&a);
    tv_free(&b);
}

/* One worker, six 1 s chunks of one source made with `codec` options: the
 * worker reads chunks 1-5 with the input (demuxer, decoder) it kept from the
 * chunk before, flushed as a seek flushes it, and the FFV1 matte equals one
 * process's frame for frame and time for time. */
static void kept_input_equal_to_process(const char *name, const char *codec)
{
    start(0);
    char in[400], out[400], cfg[400], p[400], id[64];
    snprintf(in, sizeof in, "%s/%s", D.r.dir, name);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(cfg, sizeof cfg, "%s/ffv1.json", D.r.dir);
    snprintf(p, sizeof p, "%s/process.mkv", D.r.dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=192x96:rate=25 -t 6 %s "
                     "-pix_fmt yuv420p '%s'", codec, in), 0);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    const char *extra[] = { "-c", cfg, NULL };
    cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
    tdist_worker(&D);
    finish(id, 0);
    cr_assert_eq(tsh("test $(grep -c 'input open .* (kept from the last chunk)' '%s') -eq 5",
                     D.log), 0, "the worker did not keep its input for chunks 1-5");
    matte_equal_to_process(in, out, cfg, p);
}

Test(dist_ranges, a_worker_keeps_its_input_across_chunks_h264_b_pyramid)
{
    kept_input_equal_to_process("pyramid.mkv", "-c:v libx264 -preset veryfast -g 25 "
                                "-keyint_min 25 -sc_threshold 0 -bf 3 -b_strategy 0");
}

Test(dist_ranges, a_worker_keeps_its_input_across_chunks_hevc_open_gop)
{
    kept_input_equal_to_process("open.mp4", "-c:v libx265 -preset ultrafast -x265-params "
                                "keyint=25:min-keyint=25:scenecut=0:bframes=3:log-level=error");
}

/* One worker, three sources one after another: the second, another picture
 * coded with the first's settings (the same parameter sets), is decoded by
 * the first one's decoder, flushed; the third, of another size, gets a new
 * one. Each FFV1 matte equals its own process's, frame for frame. */
Test(dist_ranges, a_worker_keeps_its_decoder_for_a_like_source)
{
    start(0);
    const char *src[] = { "testsrc=size=192x96:rate=25", "testsrc2=size=192x96:rate=25",
                          "testsrc2=size=160x96:rate=25" };
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    const char *extra[] = { "-c", cfg, NULL };
    tdist_worker(&D);
    for (int k = 0; k < 3; k++) {
        char in[400], out[400], p[400], id[64];
        snprintf(in, sizeof in, "%s/in%d.mkv", D.r.dir, k);
        snprintf(out, sizeof out, "%s/out%d.mkv", D.r.dir, k);
        snprintf(p, sizeof p, "%s/process%d.mkv", D.r.dir, k);
        cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i %s -t 2 -c:v libx264 -preset veryfast "
                         "-g 25 -keyint_min 25 -sc_threshold 0 -bf 2 -x264-params no-info=1 "
                         "-pix_fmt yuv420p '%s'", src[k], in), 0);
        cr_assert_eq(tdist_submit(&D, in, out, extra, id, sizeof id), 0);
        finish(id, 0);
        matte_equal_to_process(in, out, cfg, p);
    }
    /* The worker's first chunks, one a job: in1's took in0's last decoder
     * (the worker idle between the jobs), in2's did not fit. */
    char got[512];
    tsh_out(got, sizeof got, "grep -o 'fd/[0-9]*: set-up: input open [0-9]* ms ([^)]*)' '%s' | "
            "grep -v 'kept from the last chunk' | sed 's/.*(//'", D.log);
    cr_assert_str_eq(got, "new)\nnew, its decoder the last chunk's)\nnew)\n",
                     "the first chunks' inputs: %s", got);
}

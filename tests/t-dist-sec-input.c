/*
 * t-dist-sec-input.c - bad input is refused, never waited on, and both paths
 * (`vr-worker process` and the fleet: `vrctl run` or a controller) treat
 * odd sources alike. A FIFO as the input, the -c file, the model or the
 * tune cache is refused at once (a blocking open() would hang the process,
 * and a FIFO given to a controller would wedge its loop); process stops on
 * SIGTERM mid-run; a truncated mkv is refused by both with the same words; a VFR
 * mp4 with short packet durations passes both with the same timestamps; a
 * second video stream and a subtitle stream are copied by both, MP4 timed
 * text (mov_text) too, which the fleet carries beside its chunks; a rotated
 * source's display matrix is on both mattes.
 */
#include "model.h"
#include "rq.h"
#include "storage.h"
#include "util-video.h"
#include "tune.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char W[128];
static struct tdist D;
static struct rq *Q;

static void setup(void)
{
    tv_tmpdir(W, sizeof W);
}

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
    tv_rmdir(W);
}

TestSuite(dist_sec_input, .init = setup, .fini = teardown, .timeout = 180);

#define VTEST "/usr/share/doc/opencv-doc/examples/data/vtest.avi"

static void wpath(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", W, name);
}

/* `vr-worker process --cpu --profile fast IN -o OUT [extra]` with its
 * output in log; returns the exit status (-1: still running after 60 s). */
static int process(const char *in, const char *out, const char *extra_opt, const char *extra_val,
                   const char *log)
{
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", out,
                           extra_opt, extra_val, NULL };
    return tproc_wait(tproc_spawn("vr-worker", argv, log), 60000);
}

/* `vrctl run IN -o OUT` with 2 CPU workers and 0.5 s chunks; returns the
 * exit status (-1: still running after 120 s). */
static int fleet(const char *in, const char *out, const char *log)
{
    const char *argv[] = { "vrctl", "run", in, "-o", out, "--cpu", "--workers", "2",
                           "--chunk-seconds", "0.5", "--profile", "fast", NULL };
    return tproc_wait(tproc_spawn("vrctl", argv, log), 120000);
}

/* Both paths on `in`, into W/process.EXT and W/fleet.EXT; both must succeed. */
static void both_paths(const char *in, const char *ext, char *a, char *b, size_t n)
{
    char log[300], name[64];
    snprintf(name, sizeof name, "process.%s", ext);
    wpath(a, n, name);
    snprintf(name, sizeof name, "fleet.%s", ext);
    wpath(b, n, name);
    wpath(log, sizeof log, "both.log");
    int rc = process(in, a, NULL, NULL, log);
    if (rc)
        tsh("tail -20 '%s' >&2", log);
    cr_assert_eq(rc, 0, "process failed on %s", in);
    rc = fleet(in, b, log);
    if (rc)
        tsh("tail -30 '%s' >&2", log);
    cr_assert_eq(rc, 0, "vrctl run failed on %s", in);
}

/* ---- FIFOs ---- */

Test(dist_sec_input, fifo_as_input_or_config_is_refused_at_once)
{
    char fifo[300], out[300], log[300], text[8192], cfg[300];
    wpath(fifo, sizeof fifo, "in.mkv");
    wpath(out, sizeof out, "out.mkv");
    wpath(log, sizeof log, "process.log");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    /* a blocked open() would run into tproc_wait's limit (-1) */
    cr_assert_eq(process(fifo, out, NULL, NULL, log), 1);
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, "not a regular file (a FIFO)"), "%s", text);

    char clip[512];
    tv_data(clip, sizeof clip, "tests/data/video/mono.mkv");
    wpath(cfg, sizeof cfg, "over.json");
    cr_assert_eq(mkfifo(cfg, 0600), 0);
    cr_assert_eq(process(clip, out, "-c", cfg, log), 1);
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, "over.json: not a regular file (a FIFO)"), "%s", text);
    cr_assert_neq(access(out, F_OK), 0, "an output was left");
}

/* Runs fn(path) in a child that SIGALRM ends after 10 s: 0 when fn
 * returned `want` with `word` in its message, 1 when not, -1 when it hung. */
static int in_child(int (*fn)(const char *, vr_err *), const char *path, int want, const char *word)
{
    pid_t p = fork();
    if (p == 0) {
        alarm(10);
        vr_err e = { 0 };
        int rc = fn(path, &e);
        _exit(rc == want && strstr(e.msg, word) ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int load_model(const char *path, vr_err *e)
{
    struct model *m = NULL;
    int rc = model_load(path, &m, e);
    model_free(&m);
    return rc;
}

static int read_small(const char *path, vr_err *e)
{
    char *text = NULL;
    int rc = storage_read_file(path, 1024, &text, NULL, e);
    free(text);
    return rc;
}

static int load_tune(const char *path, vr_err *e)
{
    struct tune_choice c;
    return tune_cache_load(path, "any", &c, e);
}

Test(dist_sec_input, fifo_as_model_or_job_config_is_refused_at_once)
{
    char fifo[300];
    wpath(fifo, sizeof fifo, "model.tflite");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(in_child(load_model, fifo, VR_EIO, "not a regular file (a FIFO)"), 0,
                 "model_load on a FIFO hung or said something else");
    /* what `vrctl submit -c FILE` reads the overrides with */
    cr_assert_eq(in_child(read_small, fifo, VR_EFORMAT, "not a regular file (a FIFO)"), 0,
                 "storage_read_file on a FIFO hung or said something else");
    /* $VR_TUNE_CACHE may name anything */
    cr_assert_eq(in_child(load_tune, fifo, VR_EFORMAT, "not a regular file (a FIFO)"), 0,
                 "tune_cache_load on a FIFO hung or said something else");
    cr_assert_eq(in_child(storage_check_regular, W, VR_EFORMAT, "a directory"), 0);
}

Test(dist_sec_input, a_fifo_input_fails_its_job_and_the_next_job_finishes)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 1), 0);
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, NULL), 0);
    char bad[400], good[400], out1[400], out2[400], id1[64], id2[64];
    snprintf(bad, sizeof bad, "%s/bad.mp4", D.r.dir);
    snprintf(good, sizeof good, "%s/good.mp4", D.r.dir);
    snprintf(out1, sizeof out1, "%s/out1.mkv", D.r.dir);
    snprintf(out2, sizeof out2, "%s/out2.mkv", D.r.dir);
    cr_assert_eq(tclip_make(good, 2, 96, 5, 0), 0);
    cr_assert_eq(tsh("cp '%s' '%s'", good, bad), 0);
    /* submit checks the file; it becomes a FIFO before any controller runs */
    cr_assert_eq(tdist_submit(&D, bad, out1, NULL, id1, sizeof id1), 0);
    cr_assert_eq(unlink(bad), 0);
    cr_assert_eq(mkfifo(bad, 0600), 0);
    cr_assert_eq(tdist_submit(&D, good, out2, NULL, id2, sizeof id2), 0);
    cr_assert_gt(tdist_controller(&D), 0);
    int rc = tdist_watch(&D, id2, 90000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the job after the FIFO's did not finish");
    char jk[128], state[32] = "", why[512] = "";
    rq_key_job(jk, sizeof jk, id1);
    rq_hget(Q, jk, "state", state, sizeof state, NULL);
    rq_hget(Q, jk, "error", why, sizeof why, NULL);
    cr_assert_str_eq(state, "failed");
    cr_assert(strstr(why, "not a regular file"), "%s", why); /* the roots check or the open */
}

/* ---- signals ---- */

Test(dist_sec_input, process_stops_on_sigterm_mid_run)
{
    char in[300], out[300], log[300], text[16384];
    wpath(in, sizeof in, "long.mp4");
    wpath(out, sizeof out, "out.mkv");
    wpath(log, sizeof log, "process.log");
    cr_assert_eq(tclip_make(in, 20, 320, 10, 0), 0);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "quality", in, "-o", out,
                           NULL };
    pid_t p = tproc_spawn("vr-worker", argv, log);
    /* mid-run: its output is open (that line comes once frames flow) */
    for (int t = 0; t < 60000; t += 50) {
        tslurp(log, text, sizeof text);
        if (strstr(text, "mask output"))
            break;
        tmsleep(50);
    }
    cr_assert(strstr(text, "mask output"), "process never started: %s", text);
    tmsleep(300);
    kill(p, SIGTERM);
    int rc = tproc_wait(p, 20000);
    tslurp(log, text, sizeof text);
    cr_assert_eq(rc, 1, "exit %d after SIGTERM: %s", rc, text);
    cr_assert(strstr(text, "cancelled at frame"), "%s", text);
    cr_assert_neq(access(out, F_OK), 0, "a partial output was left");
    cr_assert_eq(tv_count_entries(W), 2, "leftovers beside the input and the log");
}

/* ---- the two paths agree ---- */

/* The text from `from` to the end of its line in `text`, into buf. */
static void line_from(const char *text, const char *from, char *buf, size_t n)
{
    buf[0] = '\0';
    const char *s = strstr(text, from);
    if (!s)
        return;
    size_t len = strcspn(s, "\n");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s);
}

Test(dist_sec_input, truncated_mkv_is_refused_alike)
{
    char src[512], bad[300], a[300], b[300], log[300], text[16384], pm[512], fm[512];
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    wpath(bad, sizeof bad, "half.mkv");
    wpath(a, sizeof a, "process.mkv");
    wpath(b, sizeof b, "fleet.mkv");
    wpath(log, sizeof log, "process.log");
    cr_assert_eq(tv_damage(src, bad, 0.5, 0), 0);
    cr_assert_eq(process(bad, a, NULL, NULL, log), 1);
    tslurp(log, text, sizeof text);
    line_from(text, "error: ", pm, sizeof pm);
    const char *why = pm[0] ? pm + strlen("error: ") : pm;
    cr_assert(strstr(why, "truncated: the video ends after frame"), "process: %s", text);
    wpath(log, sizeof log, "fleet.log");
    cr_assert_eq(fleet(bad, b, log), 1);
    tslurp(log, text, sizeof text);
    /* the job fails at the chunk that reads to the end (a copy split: at the split) */
    line_from(text, "failed: ", fm, sizeof fm);
    cr_assert(strstr(fm, why), "the fleet's reason '%s' is not process's '%s'", fm, why);
    cr_assert_neq(access(a, F_OK), 0);
    cr_assert_neq(access(b, F_OK), 0);
}

Test(dist_sec_input, vfr_mp4_with_short_packet_durations_passes_both_alike)
{
    char base[300], in[300], a[300], b[300];
    wpath(base, sizeof base, "cfr.mp4");
    wpath(in, sizeof in, "vfr.mp4");
    /* uneven gaps (140, 140, 20 ms), and the last packet 1 tick long (MP4
     * takes the others' durations from the gaps) */
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -t 3 -vf 'scale=160:120,settb=1/1000,"
                     "setpts=N*100+mod(N\\,3)*40' -fps_mode passthrough -enc_time_base 1:1000 "
                     "-c:v libx264 -preset ultrafast -bf 0 -g 10 '%s' && ffmpeg -v error -y "
                     "-i '%s' -c copy -bsf:v setts=duration=1 '%s'", base, base, in), 0);
    both_paths(in, "mkv", a, b, sizeof a);
    struct tv_file s, fa, fb;
    cr_assert_eq(tv_read(in, 0, &s), 0);
    cr_assert_eq(tv_read(a, 0, &fa), 0);
    cr_assert_eq(tv_read(b, 0, &fb), 0);
    cr_assert_eq(fa.nframes, s.nframes);
    tv_assert_same_timing(&fa, &fb);
    tv_free(&s);
    tv_free(&fa);
    tv_free(&fb);
}

/* "type codec;type codec;..." of every stream of path. */
static void stream_list(const char *path, char *buf, size_t n)
{
    tsh_out(buf, n, "ffprobe -v error -show_entries stream=codec_type,codec_name -of csv=p=0 "
            "'%s' | tr '\\n' ';'", path);
}

/* md5 of every packet (times and bytes) of the streams other than the
 * matte's (the first video stream). */
static void others_md5(const char *path, char *buf, size_t n)
{
    tsh_out(buf, n, "ffmpeg -v error -i '%s' -map 0 -map -0:v:0 -c copy -f framemd5 - | "
            "grep -v '^#' | md5sum", path);
}

/* W/s.srt: two cues, "hello" at 0-0.8 s and "world" at 1.2-1.7 s. */
static void write_srt(char *srt, size_t n)
{
    wpath(srt, n, "s.srt");
    FILE *f = fopen(srt, "w");
    cr_assert_not_null(f);
    fputs("1\n00:00:00,000 --> 00:00:00,800\nhello\n\n2\n00:00:01,200 --> 00:00:01,700\n"
          "world\n", f);
    fclose(f);
}

/* process's output a and the fleet's b hold the streams `want` ("codec,
 * type;" each). */
static void assert_streams(const char *a, const char *b, const char *want)
{
    char sa[512], sb[512];
    stream_list(a, sa, sizeof sa);
    stream_list(b, sb, sizeof sb);
    cr_assert_str_eq(sa, want, "process: %s", sa);
    cr_assert_str_eq(sb, sa, "fleet: %s", sb);
}

/* ... and every packet of in's copied streams, times and bytes. */
static void assert_copied_alike(const char *in, const char *a, const char *b)
{
    char ma[128], mb[128], ms[128];
    others_md5(in, ms, sizeof ms);
    others_md5(a, ma, sizeof ma);
    others_md5(b, mb, sizeof mb);
    cr_assert_str_eq(ma, ms, "process changed the copied streams");
    cr_assert_str_eq(mb, ms, "the fleet changed the copied streams");
}

Test(dist_sec_input, subtitles_and_a_second_video_stream_are_kept_alike)
{
    char srt[300], in[300], a[300], b[300];
    write_srt(srt, sizeof srt);
    wpath(in, sizeof in, "multi.mkv");
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -f lavfi -i sine=frequency=440 -i '%s' "
                     "-t 2 -filter_complex '[0:v]scale=160:120[a];[0:v]scale=96:72[b]' "
                     "-map '[a]' -map 1:a -map '[b]' -map 2 -c:v libx264 -preset ultrafast "
                     "-g 5 -pix_fmt yuv420p -c:a aac -c:s srt '%s'", srt, in), 0);
    both_paths(in, "mkv", a, b, sizeof a);
    assert_streams(a, b, "h264,video;aac,audio;h264,video;subrip,subtitle;");
    assert_copied_alike(in, a, b);

    /* MP4 holds no SubRip: both drop it alike, process says so */
    char log[300], text[16384];
    both_paths(in, "mp4", a, b, sizeof a);
    assert_streams(a, b, "h264,video;aac,audio;h264,video;");
    wpath(log, sizeof log, "both.log");
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, "stream 3 (subtitle subrip): the container cannot hold it"), "%s", text);
}

/* The subtitle stream of path as SubRip text (its words and times). */
static void subtitles_srt(const char *path, char *buf, size_t n)
{
    tsh_out(buf, n, "ffmpeg -v error -i '%s' -map 0:s:0 -f srt -", path);
}

/* MP4 timed text (mov_text): the chunks (Matroska) cannot hold it, so the
 * stitch carries it from the source beside them: the fleet's .mp4 holds it
 * as process's does, packet for packet; into .mkv both drop it alike and
 * the fleet says so too. */
Test(dist_sec_input, mov_text_subtitles_are_carried_beside_the_chunks)
{
    char srt[300], in[300], a[300], b[300], ts[512], ta[512], tb[512];
    write_srt(srt, sizeof srt);
    wpath(in, sizeof in, "timed-text.mp4");
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -f lavfi -i sine=frequency=440 -i '%s' "
                     "-t 2 -map 0:v -map 1:a -map 2 -vf scale=160:120 -c:v libx264 -preset "
                     "ultrafast -g 5 -pix_fmt yuv420p -c:a aac -c:s mov_text '%s'", srt, in), 0);
    both_paths(in, "mp4", a, b, sizeof a);
    assert_streams(a, b, "h264,video;aac,audio;mov_text,subtitle;");
    subtitles_srt(in, ts, sizeof ts);
    subtitles_srt(a, ta, sizeof ta);
    subtitles_srt(b, tb, sizeof tb);
    cr_assert(strstr(ts, "00:00:01,200 --> 00:00:01,700\nworld"), "source: %s", ts);
    cr_assert_str_eq(ta, ts, "process's subtitles");
    cr_assert_str_eq(tb, ts, "the fleet's subtitles");
    assert_copied_alike(in, a, b);
    struct tv_file fa, fb;
    cr_assert_eq(tv_read(a, 0, &fa), 0);
    cr_assert_eq(tv_read(b, 0, &fb), 0);
    tv_assert_same_timing(&fa, &fb);
    tv_free(&fa);
    tv_free(&fb);

    /* Matroska holds no mov_text: both leave it out, and both say so */
    char log[300], text[16384];
    wpath(log, sizeof log, "both.log");
    cr_assert_eq(truncate(log, 0), 0);
    both_paths(in, "mkv", a, b, sizeof a);
    assert_streams(a, b, "h264,video;aac,audio;");
    tslurp(log, text, sizeof text);
    const char *said = "stream 2 (subtitle mov_text): the container cannot hold it";
    const char *first = strstr(text, said);
    cr_assert(first && strstr(first + 1, said), "not said by both: %s", text);
}

/* The rotation of path's first video stream ("" when none). */
static void rotation_of(const char *path, char *buf, size_t n)
{
    tsh_out(buf, n, "ffprobe -v error -select_streams v:0 -show_entries stream_side_data=rotation "
            "-of csv=p=0 '%s' | tr -d '\\n,'", path);
}

Test(dist_sec_input, rotation_is_carried_by_both)
{
    char in[300], a[300], b[300], rs[64], ra[64], rb[64];
    wpath(in, sizeof in, "rotated.mp4");
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -t 2 -vf scale=160:120 -c:v libx264 "
                     "-preset ultrafast -g 5 -pix_fmt yuv420p '%s.mkv' && ffmpeg -v error -y "
                     "-i '%s.mkv' -c copy -metadata:s:v:0 rotate=90 '%s'", in, in, in), 0);
    rotation_of(in, rs, sizeof rs);
    cr_assert_str_eq(rs, "90", "the source has no rotation: '%s'", rs);
    both_paths(in, "mp4", a, b, sizeof a);
    rotation_of(a, ra, sizeof ra);
    rotation_of(b, rb, sizeof rb);
    cr_assert_str_eq(ra, rs, "process's matte: rotation '%s'", ra);
    cr_assert_str_eq(rb, rs, "the fleet's matte: rotation '%s'", rb);
    /* Matroska (FFmpeg 5.1) cannot hold it: said in one line, not failed */
    char log[300], text[8192];
    wpath(a, sizeof a, "process.mkv");
    wpath(log, sizeof log, "mkv.log");
    cr_assert_eq(process(in, a, NULL, NULL, log), 0);
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, "display matrix (rotation 90 degrees) is not carried"), "%s", text);
}

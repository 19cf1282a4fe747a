/*
 * t-cli-edges.c - the edges of vrctl and vr-worker's command lines (issue
 * 14): --version, output containers the stitch cannot write, the same
 * answer for an unknown job from every job command, status --json figures,
 * what vr-worker info finds, serve --slots.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs `$VR_BIN_DIR/<bin> <args>`, stdout and stderr into out; the status. */
static int run_sh(char *out, size_t n, const char *bin, const char *args)
{
    const char *d = getenv("VR_BIN_DIR");
    return tsh_out(out, n, "%s/%s %s 2>&1", d ? d : "bin", bin, args);
}

/* ---- --version ---- */

Test(cli_edges, version_from_one_place, .timeout = 30)
{
    char want[64] = "", out[4096];
    tsh_out(want, sizeof want, "cat '%s/VERSION'", getenv("VR_DATA_DIR") ? getenv("VR_DATA_DIR") : ".");
    want[strcspn(want, "\n")] = '\0';
    cr_assert(want[0], "no VERSION file");

    cr_assert_eq(run_sh(out, sizeof out, "vrctl", "--version"), 0, "%s", out);
    cr_assert(!strncmp(out, "vrctl ", 6) && strstr(out, want), "vrctl --version: %s", out);

    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", "--version"), 0, "%s", out);
    cr_assert(!strncmp(out, "vr-worker ", 10) && strstr(out, want), "vr-worker --version: %s", out);
    cr_assert(strstr(out, "libavcodec") && strstr(out, "libavformat"), "no libav versions: %s", out);
}

/* ---- output containers ---- */

/* A 1 s clip in a fresh temp dir (dir gets the dir, clip the path). */
static void edge_clip(char *dir, size_t dn, char *clip, size_t cn)
{
    snprintf(dir, dn, "/tmp/vrtest-edge-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(clip, cn, "%s/in.mp4", dir);
    cr_assert_eq(tclip_make(clip, 1.0, 160, 5, 0), 0, "ffmpeg could not make the clip");
}

/* The stitch copies H.264/HEVC/FFV1 and the source's audio into matroska,
 * mp4 or mov; .webm (VP8/VP9/AV1 only) was accepted and failed at the end
 * of the job. Now submit and run refuse it before anything is queued. */
Test(cli_edges, output_container_checked_before_queueing, .timeout = 60)
{
    char dir[64], clip[128], args[1024], out[4096];
    edge_clip(dir, sizeof dir, clip, sizeof clip);
    const char *bad[] = { "x.webm", "x.avi", "x.ts", NULL };
    for (int i = 0; bad[i]; i++) {
        snprintf(args, sizeof args, "submit %s -o %s/%s --redis unix://%s/none.sock", clip, dir,
                 bad[i], dir);
        cr_assert_eq(run_sh(out, sizeof out, "vrctl", args), 2, "submit %s: %s", bad[i], out);
        cr_assert(strstr(out, bad[i]) && strstr(out, ".mkv, .mp4 or .mov"), "submit %s: %s",
                  bad[i], out);
        snprintf(args, sizeof args, "run %s -o %s/%s --cpu", clip, dir, bad[i]);
        cr_assert_eq(run_sh(out, sizeof out, "vrctl", args), 2, "run %s: %s", bad[i], out);
        cr_assert(strstr(out, ".mkv, .mp4 or .mov"), "run %s: %s", bad[i], out);
    }
    /* a real Redis for these: against none vrctl spent 3 s a submit on
     * its reconnects (9 of the test's 12.8 s) before failing */
    struct tredis r;
    cr_assert_eq(tredis_start(&r, 0), 0);
    const char *good[] = { "x.mkv", "x.mp4", "x.mov", NULL };
    for (int i = 0; good[i]; i++) {
        snprintf(args, sizeof args, "submit %s -o %s/%s --redis %s", clip, dir, good[i], r.url);
        int rc = run_sh(out, sizeof out, "vrctl", args);
        cr_assert(!strstr(out, "container"), "submit %s refused: %s", good[i], out);
        cr_assert_eq(rc, 0, "submit %s: %s", good[i], out);
    }
    tredis_stop(&r);
    tsh("rm -rf '%s'", dir);
}

/* ---- an unknown job ---- */

/* Every command that takes a job answers an unknown one alike: one line
 * "vrctl CMD: no job 'ID'" and exit 2 (as a bad argument), never 1, which
 * for watch and submit --wait means the job failed. */
Test(cli_edges, unknown_job_same_answer_everywhere, .timeout = 60)
{
    struct tredis r;
    cr_assert_eq(tredis_start(&r, 0), 0);
    const char *cmds[] = { "status", "metrics", "watch", "cancel", "retry", NULL };
    const char *id = "20990101-000000-deadbeef";
    for (int i = 0; cmds[i]; i++) {
        char args[512], out[1024], want[128];
        snprintf(args, sizeof args, "%s %s --redis %s", cmds[i], id, r.url);
        int rc = run_sh(out, sizeof out, "vrctl", args);
        snprintf(want, sizeof want, "vrctl %s: no job '%s'\n", cmds[i], id);
        cr_expect_eq(rc, 2, "%s: exit %d: %s", cmds[i], rc, out);
        cr_expect_str_eq(out, want, "%s", cmds[i]);
    }
    tredis_stop(&r);
}

/* ---- retry after a failed stitch; status --json ---- */

static struct tdist D;

static void dist_stop(void)
{
    tdist_stop(&D, 0);
}

/* No figure with float noise (0.46300000000000002): at most 3 decimals. */
static void expect_tidy_reals(const char *json)
{
    for (const char *p = strchr(json, '.'); p; p = strchr(p + 1, '.')) {
        int d = 0;
        while (p[1 + d] >= '0' && p[1 + d] <= '9')
            d++;
        if (p > json && p[-1] >= '0' && p[-1] <= '9')
            cr_expect_leq(d, 3, "noisy figure near: %.40s", p > json + 10 ? p - 10 : json);
    }
}

/* A stitch that fails (the output name is taken by a directory) fails the
 * job with its chunks all done; `vrctl retry` must stitch again, not
 * re-queue nothing and leave the job "running" forever. Then status --json:
 * tidy reals, and in the all-jobs list no per-chunk figures it did not read
 * (chunk_frames_sum 0, workers {}). */
Test(cli_edges, retry_restitches_and_status_json_is_tidy, .timeout = 120, .fini = dist_stop)
{
    /* the worker starts once the job runs: submit, and the controller
     * when it takes the job, refuse a directory at the output's name
     * (issue 41, finding 11), which appears only afterwards */
    cr_assert_eq(tdist_start(&D, 0, 5, 1, 0), 0);
    char in[400], out[400], id[64], buf[16384];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    const char *js[] = { "status", id, "--json", NULL };
    buf[0] = '\0';
    for (int t = 0; t < 60000 && !strstr(buf, "\"running\""); t += 100) {
        tdist_vrctl(&D, buf, sizeof buf, js);
        tmsleep(100);
    }
    cr_assert(strstr(buf, "\"running\""), "the job never ran: %s", buf);
    /* a directory where the output goes, made while it runs: the stitch fails */
    cr_assert_eq(tsh("mkdir '%s'", out), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    int rc = tdist_watch(&D, id, 90000);
    cr_assert_eq(rc, 1, "watch exit %d: the stitch should have failed", rc);
    const char *st[] = { "status", id, NULL };
    tdist_vrctl(&D, buf, sizeof buf, st);
    cr_assert(strstr(buf, "stitch"), "not a stitch failure: %s", buf);

    cr_assert_eq(tsh("rmdir '%s'", out), 0);
    const char *retry[] = { "retry", id, NULL };
    rc = tdist_vrctl(&D, buf, sizeof buf, retry);
    cr_assert_eq(rc, 0, "retry exit %d: %s", rc, buf);
    cr_assert(strstr(buf, "stitching again"), "retry should say it stitches again: %s", buf);
    rc = tdist_watch(&D, id, 60000);
    if (rc != 0)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "after retry: watch exit %d", rc);
    cr_assert_eq(tsh("ffprobe -v error '%s'", out), 0, "no output after the retry");

    const char *one[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, one), 0);
    expect_tidy_reals(buf);
    cr_expect(strstr(buf, "\"chunk_frames_sum\": 20"), "one job: %s", buf);
    const char *all[] = { "status", "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, all), 0);
    expect_tidy_reals(buf);
    cr_expect(!strstr(buf, "chunk_frames_sum") && !strstr(buf, "\"workers\""), "list: %s", buf);
}

/* ---- tune without a GPU ---- */

/* Without a GPU (no device, or no driver at all) tune says so in words a
 * user knows, not cudart's "CUDA driver version is insufficient". */
Test(cli_edges, tune_without_gpu_says_so, .timeout = 30)
{
    char out[2048];
    int rc = run_sh(out, sizeof out, "vr-worker", "tune --gpu 63");
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert(!strstr(out, "insufficient"), "%s", out);
    if (strstr(out, "built without CUDA"))
        return;
    if (access("/dev/nvidiactl", F_OK) != 0)
        cr_assert(strstr(out, "no NVIDIA GPU found"), "%s", out);
    else
        cr_assert(strstr(out, "--gpu 63"), "%s", out);
}

/* ---- one --chunk-seconds default ---- */

/* The line of `vrctl help CMD` about --chunk-seconds, and the next. */
static void chunk_help(const char *cmd, char *out, size_t n)
{
    const char *d = getenv("VR_BIN_DIR");
    tsh_out(out, n, "%s/vrctl help %s | grep -A1 -- '--chunk-seconds S '", d ? d : "bin", cmd);
}

/* submit said 10 s and run 5 s; one default now (auto), with its reason. */
Test(cli_edges, chunk_seconds_one_default, .timeout = 30)
{
    char a[1024], b[1024];
    chunk_help("submit", a, sizeof a);
    chunk_help("run", b, sizeof b);
    cr_assert_str_eq(a, b);
    cr_assert(strstr(a, "auto (default)"), "%s", a);
}

/* ---- vr-worker info ---- */

/* info names the version, libav and its encoders, the GPUs (or that there
 * are none), and the tune cache with whether it exists; it promised GPUs
 * and listed none. */
Test(cli_edges, worker_info_says_what_it_finds, .timeout = 30)
{
    char dir[] = "/tmp/vrtest-info-XXXXXX", args[256], out[8192];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(args, sizeof args, "%s/tune.json", dir);
    setenv("VR_TUNE_CACHE", args, 1);
    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", "info"), 0, "%s", out);
    cr_assert(!strncmp(out, "vr-worker ", 10), "no version first: %s", out);
    cr_assert(strstr(out, "libavcodec"), "no libav versions: %s", out);
    cr_assert(strstr(out, "encoders in this libavcodec:") && strstr(out, "libx264 yes"),
              "no encoder line: %s", out);
    cr_assert(strstr(out, "\nGPUs: "), "no GPU line: %s", out);
    /* the matte's encoder and why (docs/notes/h264.md) */
    cr_assert(strstr(out, "\nmatte encoder (auto) on --cpu: libx264 (a CPU run: "),
              "no matte encoder line: %s", out);
    cr_assert(strstr(out, "\nmatte encoder (auto) for a matte over 4096 (quality at 8K) on --cpu "
                          "runs: libx265 (a matte wider or taller than 4096: HEVC"),
              "no big matte line: %s", out);
    cr_assert(strstr(out, "tune.json (absent"), "tune cache not said absent: %s", out);
    tsh("echo '{}' > '%s/tune.json'", dir);
    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", "info"), 0, "%s", out);
    cr_assert(strstr(out, "tune.json (3 bytes)"), "tune cache not found: %s", out);
    unsetenv("VR_TUNE_CACHE");
    tsh("rm -rf '%s'", dir);
}

/* ---- vr-worker serve --slots ---- */

/* Slots are worker processes: auto only for GPUs, checked strictly,
 * and `--gpu all` on a host with no GPU says so before anything starts. */
Test(cli_edges, serve_slots_checked, .timeout = 30)
{
    char out[4096];
    static const char base[] = "serve --redis unix:///nonexistent.sock --storage /tmp";
    char args[256];
    snprintf(args, sizeof args, "%s --cpu --slots auto", base);
    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", args), 2, "%s", out);
    cr_assert(strstr(out, "--slots auto is for GPU workers"), "%s", out);
    static const char *const bad[] = { "0", "17", "2x", "", "-1", NULL };
    for (int i = 0; bad[i]; i++) {
        snprintf(args, sizeof args, "%s --gpu all --slots '%s'", base, bad[i]);
        cr_assert_eq(run_sh(out, sizeof out, "vr-worker", args), 2, "--slots '%s': %s", bad[i], out);
        cr_assert(strstr(out, "--slots takes 1..16 or auto"), "%s", out);
    }
    snprintf(args, sizeof args, "%s --gpu all --slots auto", base);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    cr_assert_eq(run_sh(out, sizeof out, "vr-worker", args), 1, "%s", out);
    unsetenv("CUDA_VISIBLE_DEVICES");
    cr_assert(strstr(out, "no NVIDIA GPU found"), "%s", out);
}

/* ---- vrctl run's temp dir ---- */

/* vrctl run makes its temp dir in $TMPDIR and removes it itself (nftw),
 * with no `rm` on PATH (it ran `system("rm -rf ...")` in /tmp). */
Test(cli_edges, run_temp_dir_in_tmpdir_removed_without_rm, .timeout = 120)
{
    char dir[64], clip[128], cmd[2048], out[8192];
    edge_clip(dir, sizeof dir, clip, sizeof clip);
    cr_assert_eq(tsh("mkdir '%s/bin' '%s/tmp' && ln -s \"$(command -v redis-server)\" '%s/bin/'",
                     dir, dir, dir), 0);
    const char *b = getenv("VR_BIN_DIR");
    snprintf(cmd, sizeof cmd, "TMPDIR='%s/tmp' PATH='%s/bin' %s/vrctl run '%s' -o '%s/o.mkv' "
             "--cpu --profile fast 2>&1", dir, dir, b ? b : "bin", clip, dir);
    int rc = tsh_out(out, sizeof out, "%s", cmd);
    cr_assert_eq(rc, 0, "%s", out);
    char made[128];
    snprintf(made, sizeof made, "temp dir %s/tmp/vrctl-run-", dir);
    cr_assert(strstr(out, made), "the temp dir is not under $TMPDIR: %s", out);
    cr_assert_eq(tsh("test -z \"$(ls -A '%s/tmp')\"", dir), 0, "the temp dir was left");
    tsh("rm -rf '%s'", dir);
}

/* A photo given to `run` or `submit` is pointed to segment-image (exit 2),
 * not made a 1-frame MKV with exit 0 (issue 45, item 9). */
Test(cli_edges, a_still_image_points_to_segment_image, .timeout = 60)
{
    char dir[] = "/tmp/vrtest-still-XXXXXX", img[512], args[1200], out[4096];
    cr_assert_not_null(mkdtemp(dir));
    const char *data = getenv("VR_DATA_DIR");
    snprintf(img, sizeof img, "%s/tests/data/people.jpg", data ? data : ".");
    const char *cmd[] = { "run %s -o %s/x.mkv --cpu", "submit %s -o %s/x.mkv --redis unix://%s/none.sock" };
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, cmd[i], img, dir, dir);
        cr_assert_eq(run_sh(out, sizeof out, "vrctl", args), 2, "%s: %s", args, out);
        cr_assert(strstr(out, "still image") && strstr(out, "vr-worker segment-image"), "%s", out);
    }
    snprintf(args, sizeof args, "%s/x.mkv", dir);
    cr_assert_neq(access(args, F_OK), 0, "an output was written");
    tsh("rm -rf '%s'", dir);
}

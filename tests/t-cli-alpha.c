/*
 * t-cli-alpha.c - README's `--output alpha` on a source that is not
 * fisheye (issue 45, item 4): `vrctl submit` and `run` refuse it before
 * anything is queued, with the worker's reason whole, and the worker's own
 * message is not cut when the source's path is long (vr_err.msg holds 256
 * bytes: the path comes last, so a long one is all a full message loses).
 * An HEVC source's alpha output is HEVC, from both paths.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(cli_alpha, .fini = teardown, .timeout = 240);

static const char *bindir(void)
{
    const char *d = getenv("VR_BIN_DIR");
    return d && *d ? d : "bin";
}

/* An equirectangular-like SBS clip (picture up to every corner) and a
 * fisheye one (black outside each 160x160 eye's circle), in dir. */
static void make_clips(const char *equi, const char *fish)
{
    static const char make[] = "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x160:rate=5 "
                               "-t 1 %s -c:v libx264 -pix_fmt yuv420p -g 5 '%s'";
    cr_assert_eq(tsh(make, "", equi), 0);
    cr_assert_eq(tsh(make, "-vf \"geq=lum='if(lt(hypot(mod(X,160)-80,Y-80),78),lum(X,Y),0)'"
                           ":cb=128:cr=128\"", fish), 0);
}

/* The refusal's sentence, whole, as the worker and vrctl give it, and
 * the source named after it (path: its start, which a full message keeps). */
static void assert_whole_reason(const char *msg, const char *path)
{
    cr_assert(strstr(msg, "sbs source's corners hold picture"), "%s", msg);
    cr_assert(strstr(msg, "--output mask keeps the picture"), "cut: %s", msg);
    cr_assert(strstr(msg, "--alpha-area corners packs the matte there anyway"), "cut: %s", msg);
    cr_assert(strstr(msg, path), "the source is not named: %s", msg);
}

Test(cli_alpha, refused_at_submit_with_the_reason_whole)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0); /* no worker: a queued job would wait */
    char equi[400], fish[400], out[400];
    static char msg[8192];
    snprintf(equi, sizeof equi, "%s/clip_180_LR.mkv", D.r.dir);
    snprintf(fish, sizeof fish, "%s/clip_FISHEYE190_LR.mkv", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    make_clips(equi, fish);

    int rc = tsh_out(msg, sizeof msg, "%s/vrctl submit '%s' -o '%s' --output alpha --redis %s 2>&1",
                     bindir(), equi, out, D.r.url);
    cr_assert_eq(rc, 2, "submit accepted it: %s", msg);
    assert_whole_reason(msg, equi);
    cr_assert(!strncmp(msg, "vrctl submit: ", 14), "%s", msg);
    rc = tsh_out(msg, sizeof msg, "%s/vrctl status --redis %s 2>&1", bindir(), D.r.url);
    cr_assert(strstr(msg, "no jobs"), "something was queued: %s", msg);
    /* run checks before it starts anything */
    rc = tsh_out(msg, sizeof msg, "%s/vrctl run '%s' -o '%s' --output alpha --cpu 2>&1",
                 bindir(), equi, out);
    cr_assert_eq(rc, 2, "run accepted it: %s", msg);
    assert_whole_reason(msg, equi);

    /* told to use the corners anyway, and a fisheye source: queued */
    rc = tsh_out(msg, sizeof msg, "%s/vrctl submit '%s' -o '%s' --output alpha --alpha-area "
                 "corners --redis %s 2>&1", bindir(), equi, out, D.r.url);
    cr_assert_eq(rc, 0, "%s", msg);
    snprintf(out, sizeof out, "%s/fish_out.mkv", D.r.dir);
    rc = tsh_out(msg, sizeof msg, "%s/vrctl submit '%s' -o '%s' --output alpha --redis %s 2>&1",
                 bindir(), fish, out, D.r.url);
    cr_assert_eq(rc, 0, "a fisheye source refused: %s", msg);
}

/* The worker's own refusal (`process`, and a fleet chunk) with a source
 * whose path is ~200 bytes: the sentence stays whole. */
Test(cli_alpha, the_workers_reason_is_not_cut_by_a_long_path)
{
    char dir[600], equi[700], fish[700], out[700];
    static char msg[8192];
    cr_assert_eq(tsh_out(dir, sizeof dir, "mktemp -d"), 0);
    dir[strcspn(dir, "\n")] = '\0';
    size_t n = strlen(dir);
    snprintf(dir + n, sizeof dir - n, "/%s", "a_rather_long_directory_name_as_an_archive_has_it_"
             "for_every_shoot_of_the_season_and_every_camera_of_the_rig_and_then_some_more");
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(equi, sizeof equi, "%s/clip_180_LR.mkv", dir);
    snprintf(fish, sizeof fish, "%s/clip_FISHEYE190_LR.mkv", dir);
    snprintf(out, sizeof out, "%s/out.mkv", dir);
    make_clips(equi, fish);
    cr_assert_gt(strlen(equi), 150);
    int rc = tsh_out(msg, sizeof msg, "%s/vr-worker process '%s' -o '%s' --output alpha-packed "
                     "--profile fast 2>&1", bindir(), equi, out);
    cr_assert_neq(rc, 0, "process accepted it: %s", msg);
    char start[40];
    snprintf(start, sizeof start, "(%.30s", equi);
    assert_whole_reason(msg, start);
    tsh("rm -rf '%s'", dir);
}

/* The codec of path's first video stream and its profile ("hevc,Main"). */
static void codec_of(const char *path, char *buf, size_t n)
{
    tsh_out(buf, n, "ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,profile "
            "-of csv=p=0 '%s' | tr -d '\\n'", path);
}

/* An HEVC source's alpha output stays HEVC, from `process` and from the
 * fleet (issue 45): re-coded as H.264 (Constrained Baseline at the
 * profiles' ultrafast preset) it took 8.3 times the bytes. A matte stays
 * H.264, and an H.264 source's alpha too. */
Test(cli_alpha, an_hevc_source_gives_an_hevc_alpha)
{
    char dir[300], flat[400], fish[400], h264[400], out[400], got[128];
    static char msg[8192];
    cr_assert_eq(tsh_out(dir, sizeof dir, "mktemp -d"), 0);
    dir[strcspn(dir, "\n")] = '\0';
    snprintf(fish, sizeof fish, "%s/clip_FISHEYE190_LR.mkv", dir);
    snprintf(h264, sizeof h264, "%s/h264_FISHEYE190_LR.mkv", dir);
    snprintf(flat, sizeof flat, "%s/clip_180_LR.mkv", dir);
    make_clips(flat, h264);
    cr_assert_eq(tsh("ffmpeg -loglevel error -y -i '%s' -c:v libx265 -x265-params "
                     "log-level=error:keyint=5 -pix_fmt yuv420p '%s'", h264, fish), 0);
    codec_of(fish, got, sizeof got);
    cr_assert(!strncmp(got, "hevc,", 5), "the source: %s", got);

    static const char *const runs[] = {
        "%s/vr-worker process --cpu --profile fast '%s' -o '%s' --output alpha 2>&1",
        "%s/vrctl run --cpu --workers 1 --profile fast '%s' -o '%s' --output alpha 2>&1",
    };
    for (int i = 0; i < 2; i++) {
        snprintf(out, sizeof out, "%s/alpha%d_FISHEYE190_LR.mkv", dir, i);
        cr_assert_eq(tsh_out(msg, sizeof msg, runs[i], bindir(), fish, out), 0, "%s", msg);
        codec_of(out, got, sizeof got);
        cr_assert(!strncmp(got, "hevc,", 5), "%s's alpha: %s", i ? "the fleet" : "process", got);
    }
    snprintf(out, sizeof out, "%s/mask.mkv", dir);
    cr_assert_eq(tsh_out(msg, sizeof msg, "%s/vr-worker process --cpu --profile fast '%s' -o '%s' "
                         "2>&1", bindir(), fish, out), 0, "%s", msg);
    codec_of(out, got, sizeof got);
    cr_assert(!strncmp(got, "h264,", 5), "the matte: %s", got);
    snprintf(out, sizeof out, "%s/h264alpha_FISHEYE190_LR.mkv", dir);
    cr_assert_eq(tsh_out(msg, sizeof msg, runs[0], bindir(), h264, out), 0, "%s", msg);
    codec_of(out, got, sizeof got);
    cr_assert(!strncmp(got, "h264,", 5), "an H.264 source's alpha: %s", got);
    tsh("rm -rf '%s'", dir);
}

/*
 * t-dist-one-answer.c - the fleet gives the answer one process gives. The
 * same clip through `vr-worker process` and through `vrctl run` with two
 * CPU workers and 2 s chunks, with a lossless matte (FFV1): every frame
 * equal, on clips whose layout comes from their stereo metadata, their
 * file name and their aspect ratio, and an open-GOP HEVC source; with the
 * default lossy encoder too, with 1 s and 2 s chunks, and with the matte
 * encoder of kernels/h264 (vrh264) named in the config. Every
 * profile: fast and balanced on the layout clips, quality and
 * quality-people on their own. A job
 * whose layout or config is bad is refused before anything is queued.
 */
#include "clock.h"
#include "util-video.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char W[256];

static void setup(void)
{
    tv_tmpdir(W, sizeof W);
}

static void teardown(void)
{
    tv_rmdir(W);
}

/* 600 s: a backstop for a hang, not a speed bound (each fleet run has its
 * own deadline from the process run's time, below). Under ASan on the
 * loaded 2-core CI box the tiled profiles' cases (balanced on 320-px eyes:
 * a 2x2 and the fine 3x3, 14 tiles an eye) ran past 240 s. */
TestSuite(dist_one_answer, .init = setup, .fini = teardown, .timeout = 600);

#define VTEST "/usr/share/doc/opencv-doc/examples/data/vtest.avi"

/* Seconds of clip for chunks of `secs` s. 1 s chunks: three, so there is
 * a middle one (a warm-up before its cut and a cut after) and one of the
 * two workers takes a second chunk; 2 s chunks: two, one a worker. More
 * frames only make the CPU run longer. */
static int clip_seconds(int secs)
{
    return secs == 1 ? 3 : 2 * secs;
}

/* `seconds` of vtest at 10 fps scaled to w x h, a keyframe every second,
 * with `extra` ffmpeg output options (metadata, codec). */
static void make_clip(const char *path, int seconds, int w, int h, const char *extra)
{
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -t %d -vf scale=%d:%d -pix_fmt yuv420p %s "
                     "'%s'", seconds, w, h, extra, path), 0, "cannot make %s", path);
}

static const char *H264 = "-c:v libx264 -preset ultrafast -g 10 -keyint_min 10 -sc_threshold 0";

/* `vr-worker process` and `vrctl run` (2 CPU workers, chunks of `secs`
 * seconds) on `in` with config `cfg` (a file), `profile` and output kind
 * `output`; outputs into a and b. */
static void both_paths_output(const char *in, const char *cfg, const char *profile, int secs,
                              const char *output, const char *a, const char *b)
{
    char chunk[16];
    snprintf(chunk, sizeof chunk, "%d", secs);
    char log[300];
    snprintf(log, sizeof log, "%s/run.log", W);
    const char *pargv[] = { "vr-worker", "process", "--cpu", "--profile", profile, "-c", cfg,
                            "--output", output, in, "-o", a, NULL };
    const double t0 = clock_mono_ms();
    cr_assert_eq(tproc_run("vr-worker", pargv, NULL, 0), 0, "process failed on %s", in);
    /* the fleet's deadline from what this machine just took for the same
     * work in one process (an ASan build on 2 busy cores: quality-people's
     * fleet ran past a fixed 180 s), never under 180 s */
    const double took = clock_mono_ms() - t0;
    const int deadline = took * 4 + 60000 > 180000 ? (int)(took * 4 + 60000) : 180000;
    const char *rargv[] = { "vrctl", "run", in, "-o", b, "--cpu", "--workers", "2",
                            "--chunk-seconds", chunk, "--profile", profile, "-c", cfg,
                            "--output", output, NULL };
    pid_t p = tproc_spawn("vrctl", rargv, log);
    int rc = tproc_wait(p, deadline);
    if (rc)
        tsh("tail -30 '%s' >&2", log);
    cr_assert_eq(rc, 0, "vrctl run failed on %s", in);
}

static void both_paths_chunked(const char *in, const char *cfg, const char *profile, int secs,
                               const char *a, const char *b)
{
    both_paths_output(in, cfg, profile, secs, "mask", a, b);
}

static void both_paths(const char *in, const char *cfg, const char *profile, const char *a,
                       const char *b)
{
    both_paths_chunked(in, cfg, profile, 2, a, b);
}

/* Mean |a - b| of each frame's matte; the largest, and how many differ. */
static double worst_frame_diff(const char *a, const char *b, int *differing)
{
    struct tv_file fa, fb;
    cr_assert_eq(tv_read(a, 1, &fa), 0);
    cr_assert_eq(tv_read(b, 1, &fb), 0);
    tv_assert_same_timing(&fa, &fb);
    cr_assert(fa.w == fb.w && fa.h == fb.h, "matte sizes differ: %dx%d vs %dx%d", fa.w, fa.h,
              fb.w, fb.h);
    double worst = 0;
    *differing = 0;
    for (int i = 0; i < fa.nframes; i++) {
        double sum = 0;
        for (size_t k = 0; k < (size_t)fa.w * fa.h; k++)
            sum += abs((int)fa.luma[i][k] - (int)fb.luma[i][k]);
        sum /= (double)fa.w * fa.h;
        *differing += sum > 0;
        worst = sum > worst ? sum : worst;
    }
    tv_free(&fa);
    tv_free(&fb);
    return worst;
}

static void lossless_equal(const char *clip, const char *profile)
{
    char cfg[300], a[300], b[300];
    snprintf(cfg, sizeof cfg, "%s/lossless.json", W);
    snprintf(a, sizeof a, "%s/process.mkv", W);
    snprintf(b, sizeof b, "%s/fleet.mkv", W);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    both_paths(clip, cfg, profile, a, b);
    int differing;
    double worst = worst_frame_diff(a, b, &differing);
    cr_assert_eq(differing, 0, "%s: %d frames differ between process and the fleet (worst mean "
                 "|diff| %.3f)", clip, differing, worst);
}

/* A clip named `name` in the work dir, w x h with `extra` encoder options,
 * through both paths with a lossless matte. */
static void clip_case(const char *name, int w, int h, const char *extra, const char *profile)
{
    char clip[300];
    snprintf(clip, sizeof clip, "%s/%s", W, name);
    make_clip(clip, clip_seconds(2), w, h, extra);
    lossless_equal(clip, profile);
}

Test(dist_one_answer, layout_from_stereo_metadata)
{
    /* 8:3: the aspect alone says mono */
    clip_case("clip.mkv", 640, 240, "-c:v libx264 -preset ultrafast -g 10 -keyint_min 10 "
              "-sc_threshold 0 -metadata:s:v:0 stereo_mode=left_right", "fast");
}

Test(dist_one_answer, layout_from_the_file_name)
{
    clip_case("holiday_sbs.mp4", 640, 240, H264, "balanced");
}

Test(dist_one_answer, top_bottom_from_the_file_name)
{
    clip_case("concert_TB.mkv", 320, 360, H264, "fast"); /* eyes of 320x180: not square */
}

Test(dist_one_answer, layout_from_the_aspect_ratio)
{
    clip_case("clip.mp4", 480, 240, H264, "fast");
}

Test(dist_one_answer, open_gop_hevc)
{
    /* x265's defaults: open GOPs, CRA keyframes */
    clip_case("open.mkv", 320, 240, "-c:v libx265 -preset ultrafast -x265-params "
              "keyint=10:min-keyint=10:scenecut=0:log-level=error", "fast");
}

/* Warm-up by frames, not by GOP: a source whose GOPs are shorter than the
 * temporal filter's depth (balanced: 5 frames of history) through both
 * paths in 1 s chunks, lossless: every chunk decodes as many GOPs before
 * its cut as the depth takes, so every frame's bytes (framemd5) equal
 * one `process`'s. Before, each chunk took one GOP before its cut (one
 * frame when all-intra) and its first frames differed. */
static void short_gop_equal(const char *name, const char *extra)
{
    char clip[300], cfg[300], a[300], b[300];
    snprintf(clip, sizeof clip, "%s/%s", W, name);
    snprintf(cfg, sizeof cfg, "%s/lossless.json", W);
    snprintf(a, sizeof a, "%s/process.mkv", W);
    snprintf(b, sizeof b, "%s/fleet.mkv", W);
    make_clip(clip, clip_seconds(1), 320, 240, extra);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    both_paths_chunked(clip, cfg, "balanced", 1, a, b);
    int differing;
    double worst = worst_frame_diff(a, b, &differing);
    cr_assert_eq(differing, 0, "%s: %d frames differ between process and the fleet (worst mean "
                 "|diff| %.3f)", name, differing, worst);
    cr_assert_eq(tsh("ffmpeg -v error -i '%s' -f framemd5 - | grep -v '^#' > '%s.md5' && "
                     "ffmpeg -v error -i '%s' -f framemd5 - | grep -v '^#' > '%s.md5' && "
                     "test $(grep -c '^0,' '%s.md5') -eq %d && cmp -s '%s.md5' '%s.md5'",
                     a, a, b, b, a, 10 * clip_seconds(1), a, b), 0,
                 "%s: the fleet's frames are not process's byte for byte", name);
    /* and the whole file: the tags in the source's order, FFV1 intra-only */
    cr_assert_eq(tsh("cmp '%s' '%s' >&2", a, b), 0, "%s: the fleet's file is not process's "
                 "byte for byte", name);
}

Test(dist_one_answer, all_intra_x264_warms_up_by_frames)
{
    short_gop_equal("intra.mp4", "-c:v libx264 -preset ultrafast -g 1");
}

Test(dist_one_answer, mjpeg_warms_up_by_frames)
{
    /* AVI: no keyframe index, so the copy split's pre-roll */
    short_gop_equal("mjpeg.avi", "-c:v mjpeg -q:v 4 -strict -1");
}

Test(dist_one_answer, prores_warms_up_by_frames)
{
    short_gop_equal("prores.mov", "-c:v prores_ks -profile:v 0 -pix_fmt yuv422p10le");
}

Test(dist_one_answer, short_gop_x264_warms_up_by_frames)
{
    /* GOPs of 2 frames: three GOPs make the depth, in a Matroska file */
    short_gop_equal("gop2.mkv", "-c:v libx264 -preset ultrafast -g 2 -keyint_min 2 "
                    "-sc_threshold 0");
}

/* 4 s of vtest at 320x240 through both paths with `profile` and config
 * `json`; the source and the outputs (of extension ext) into clip, a and
 * b. */
static void profile_both_paths(const char *profile, const char *json, const char *ext,
                               char *clip, char *a, char *b)
{
    char cfg[300];
    snprintf(clip, 300, "%s/clip.mp4", W);
    snprintf(cfg, sizeof cfg, "%s/quality.json", W);
    snprintf(a, 300, "%s/process.%s", W, ext);
    snprintf(b, 300, "%s/fleet.%s", W, ext);
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -t 4 -vf scale=320:240 -pix_fmt yuv420p %s "
                     "'%s'", H264, clip), 0);
    cr_assert_eq(tsh("echo '%s' > '%s'", json, cfg), 0);
    both_paths(clip, cfg, profile, a, b);
}

Test(dist_one_answer, quality_profile_equal_too)
{
    /* the quality profile's larger work size and edge refinement, without
     * its tiles (they only make the CPU run longer) */
    char clip[300], a[300], b[300];
    profile_both_paths("quality", "{\"encoder\": \"ffv1\", \"tile_cols\": 0, \"tile_rows\": 0}",
                       "mkv", clip, a, b);
    int differing;
    double worst = worst_frame_diff(a, b, &differing);
    cr_assert_eq(differing, 0, "quality: %d frames differ between process and the fleet (worst "
                 "mean |diff| %.3f)", differing, worst);
}

/* quality-people: the people tier's 4-frame window and its zoomed crops
 * (people_zoom 2 and 1.7) on vtest's pedestrians, 2 s chunks; without
 * the tiles, which only make the CPU run longer */
Test(dist_one_answer, quality_people_profile_equal_too, .timeout = 1200)
{
    char clip[300], a[300], b[300];
    profile_both_paths("quality-people",
                       "{\"encoder\": \"ffv1\", \"tile_cols\": 0, \"tile_rows\": 0}", "mkv",
                       clip, a, b);
    int differing;
    double worst = worst_frame_diff(a, b, &differing);
    cr_assert_eq(differing, 0, "quality-people: %d frames differ between process and the fleet "
                 "(worst mean |diff| %.3f)", differing, worst);
}

/* The default (lossy) encoder: the matte's GOPs start at the source's
 * keyframes and its QP is constant in both paths, so the fleet's chunks
 * code every frame as one `process` does: every frame equal once decoded
 * (docs/notes/temporal.md, "One answer"). The quality profile without its
 * tiles, which only make the CPU run longer. */
static void encoder_equal(const char *name, int w, int h, const char *profile, int secs,
                          const char *encoder)
{
    char clip[300], cfg[300], a[300], b[300], json[128];
    snprintf(clip, sizeof clip, "%s/%s", W, name);
    snprintf(cfg, sizeof cfg, "%s/default.json", W);
    snprintf(a, sizeof a, "%s/process.mp4", W);
    snprintf(b, sizeof b, "%s/fleet.mp4", W);
    make_clip(clip, clip_seconds(secs), w, h, H264);
    const char *tiles = strcmp(profile, "quality") ? "" : "\"tile_cols\": 0, \"tile_rows\": 0";
    if (encoder)
        snprintf(json, sizeof json, "{\"encoder\": \"%s\"%s%s}", encoder, tiles[0] ? ", " : "",
                 tiles);
    else
        snprintf(json, sizeof json, "{%s}", tiles);
    cr_assert_eq(tsh("echo '%s' > '%s'", json, cfg), 0);
    both_paths_chunked(clip, cfg, profile, secs, a, b);
    int differing;
    double worst = worst_frame_diff(a, b, &differing);
    cr_assert_eq(differing, 0, "%s, %s, %d s chunks, encoder %s: %d frames differ between process "
                 "and the fleet (worst mean |diff| %.3f/255)", name, profile, secs,
                 encoder ? encoder : "auto", differing, worst);
    if (encoder) { /* the encoder asked for wrote both */
        char out[256];
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(tsh_out(out, sizeof out, "ffprobe -v error -select_streams v:0 -show_entries "
                                 "stream=codec_name,profile -of csv=p=0 '%s'", k ? b : a), 0);
            cr_assert(strstr(out, "h264,Constrained Baseline"), "%s: %s", k ? b : a, out);
        }
    }
}

static void default_encoder_equal(const char *name, int w, int h, const char *profile, int secs)
{
    encoder_equal(name, w, h, profile, secs, NULL);
}

/* each profile once per layout, each layout with 1 s and 2 s chunks */
Test(dist_one_answer, default_encoder_sbs_fast_1s)
{
    default_encoder_equal("trip_sbs.mp4", 640, 240, "fast", 1);
}
Test(dist_one_answer, default_encoder_sbs_balanced_2s)
{
    default_encoder_equal("trip_sbs.mp4", 640, 240, "balanced", 2);
}
Test(dist_one_answer, default_encoder_sbs_quality_1s)
{
    default_encoder_equal("trip_sbs.mp4", 640, 240, "quality", 1);
}
Test(dist_one_answer, default_encoder_tb_fast_2s)
{
    default_encoder_equal("stage_TB.mkv", 320, 360, "fast", 2);
}
Test(dist_one_answer, default_encoder_tb_balanced_1s)
{
    default_encoder_equal("stage_TB.mkv", 320, 360, "balanced", 1);
}
Test(dist_one_answer, default_encoder_tb_quality_2s)
{
    default_encoder_equal("stage_TB.mkv", 320, 360, "quality", 2);
}

/* The matte encoder of kernels/h264 named in the config: the same one
 * answer (its IDRs at the source's keyframes, constant QP), and its stream
 * in both files. */
Test(dist_one_answer, vrh264_sbs_balanced_1s)
{
    encoder_equal("trip_sbs.mp4", 640, 240, "balanced", 1, "vrh264");
}
Test(dist_one_answer, vrh264_tb_quality_2s)
{
    encoder_equal("stage_TB.mkv", 320, 360, "quality", 2, "vrh264");
}

/* Refused with the reason before anything is queued: nothing in Redis. */
Test(dist_one_answer, bad_layout_and_bad_config_refused_at_submit)
{
    struct tdist d;
    memset(&d, 0, sizeof d);
    cr_assert_eq(tdist_start(&d, 0, 5, 0, 0), 0);
    char clip[300], out[300], bad[300], msg[2048];
    snprintf(clip, sizeof clip, "%s/clip.mp4", W);
    snprintf(out, sizeof out, "%s/out.mkv", W);
    snprintf(bad, sizeof bad, "%s/bad.json", W);
    make_clip(clip, 1, 480, 240, H264); /* refused before it is read whole */
    cr_assert_eq(tsh("echo '{\"smooth_frames\": 99}' > '%s'", bad), 0);
    const char *c1[] = { "submit", clip, "-o", out, "--layout", "diagonal", NULL };
    cr_assert_eq(tdist_vrctl(&d, msg, sizeof msg, c1), 2, "a bad --layout is a usage error");
    const char *c2[] = { "submit", clip, "-o", out, "-c", bad, NULL };
    cr_assert_eq(tdist_vrctl(&d, msg, sizeof msg, c2), 2, "a bad config is bad usage");
    char log[300];
    snprintf(log, sizeof log, "%s/vrctl.err", W);
    const char *c3[] = { "vrctl", "submit", clip, "-o", out, "-c", bad, "--redis", d.r.url, NULL };
    pid_t p = tproc_spawn("vrctl", c3, log);
    cr_assert_eq(tproc_wait(p, 20000), 2);
    cr_assert_eq(tsh("grep -q \"smooth_frames\" '%s'", log), 0, "the message does not name the key");
    const char *st[] = { "status", NULL };
    cr_assert_eq(tdist_vrctl(&d, msg, sizeof msg, st), 0);
    cr_assert_null(strstr(msg, "queued"), "a refused job was recorded: %s", msg);
    tdist_stop(&d, 0);
}

/* The quality profile's encoder settings (a slower x264 preset, which
 * would use B-frames): the fleet's output has the source's timestamps. */
Test(dist_one_answer, quality_profile_keeps_the_source_timestamps)
{
    char clip[300], a[300], b[300];
    profile_both_paths("quality", "{\"tile_cols\": 0, \"tile_rows\": 0}", "mp4", clip, a, b);
    struct tv_file src, fa, fb;
    cr_assert_eq(tv_read(clip, 0, &src), 0);
    cr_assert_eq(tv_read(a, 0, &fa), 0);
    cr_assert_eq(tv_read(b, 0, &fb), 0);
    tv_assert_same_timing(&src, &fa);
    tv_assert_same_timing(&src, &fb);
    tv_free(&src);
    tv_free(&fa);
    tv_free(&fb);
}

/* A picture output: each chunk re-encodes the colour frames with the matte
 * packed into the fisheye corners. With a lossless encoder (FFV1) every
 * plane of every frame, every timestamp and the audio (ffmpeg's framemd5 of
 * all streams) equal one `process`'s. The clip is a fisheye pair with its
 * corners black, as the passthrough layout expects, and a sine track. */
Test(dist_one_answer, alpha_packed_lossless_equal)
{
    char clip[300], cfg[300], a[300], b[300];
    snprintf(clip, sizeof clip, "%s/street_FISHEYE190_sbs.mkv", W);
    snprintf(cfg, sizeof cfg, "%s/lossless.json", W);
    snprintf(a, sizeof a, "%s/process_alpha.mkv", W);
    snprintf(b, sizeof b, "%s/fleet_alpha.mkv", W);
    cr_assert_eq(tsh("ffmpeg -v error -y -i " VTEST " -f lavfi -i sine=frequency=440:sample_rate="
                     "48000 -t 5 -map 0:v -map 1:a -vf \"scale=640:240,geq=lum='if(lte(hypot("
                     "mod(X,320)-160,Y-120),118),lum(X,Y),16)':cb='if(lte(hypot(mod(2*X,320)-160,"
                     "2*Y-120),118),cb(X,Y),128)':cr='if(lte(hypot(mod(2*X,320)-160,2*Y-120),118),"
                     "cr(X,Y),128)'\" -pix_fmt yuv420p %s -c:a aac '%s'", H264, clip), 0);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", cfg), 0);
    both_paths_output(clip, cfg, "fast", 2, "alpha-packed", a, b);
    cr_assert_eq(tsh("ffmpeg -v error -i '%s' -f framemd5 - | grep -v '^#' > '%s.md5' && "
                     "ffmpeg -v error -i '%s' -f framemd5 - | grep -v '^#' > '%s.md5'", a, a, b,
                     b), 0);
    cr_assert_eq(tsh("test $(grep -c '^0,' '%s.md5') -eq 50 && grep -q '^1,' '%s.md5'", a, a), 0,
                 "the picture's 50 frames and the audio are not all there");
    cr_assert_eq(tsh("cmp -s '%s.md5' '%s.md5' || { diff '%s.md5' '%s.md5' | head >&2; false; }",
                     a, b, a, b), 0, "the fleet's alpha-packed output differs from process's");
}

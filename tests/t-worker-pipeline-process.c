/*
 * t-worker-pipeline-process.c - the whole pipeline on the CPU on real footage
 * (clips cut from opencv's vtest.avi): output frame count and every
 * timestamp equal the input's, audio copied bit-exact, the matte covers the
 * people, the three output kinds, metrics and trace files, and failures
 * (corrupt, truncated, --gpu without a GPU) that leave nothing under OUT.
 * Small clips and the fast profile keep it to a few seconds.
 */
#include "config.h"
#include "metrics.h"
#include "pipeline.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

/* people in frame 0 of mono.mkv / audio.mkv, hand-measured in 320x240 */
static const int people[][4] = {
    { 100, 70, 125, 142 }, { 132, 72, 150, 145 }, { 154, 67, 176, 130 },
    { 218, 102, 249, 188 }, { 260, 100, 291, 180 },
};

static int alpha_corners; /* pipe_opts.alpha_corners of the next run() */

static int run_path(const char *in, const char *out, enum pipe_output kind, const char *overrides,
                    const char *trace, struct metrics *m, vr_err *e)
{
    struct pipe_opts o;
    memset(&o, 0, sizeof o);
    o.backend = SEG_CPU;
    o.layout = -1;
    o.output = kind;
    o.alpha_corners = alpha_corners;
    o.trace_path = trace;
    cr_assert_eq(config_load_profile(&o.cfg, "fast", e), 0, "%s", e->msg);
    if (overrides)
        cr_assert_eq(config_apply_text(&o.cfg, overrides, "test", e), 0, "%s", e->msg);
    return pipeline_run(&o, in, out, m, e);
}

static int run(const char *clip, const char *out, enum pipe_output kind, const char *overrides,
               const char *trace, struct metrics *m, vr_err *e)
{
    char in[512], rel[128];
    snprintf(rel, sizeof rel, "tests/data/video/%s", clip);
    tv_data(in, sizeof in, rel);
    return run_path(in, out, kind, overrides, trace, m, e);
}

static void same_timing(const char *clip, const char *out, struct tv_file *outf, int keep_luma)
{
    char in[512], rel[128];
    snprintf(rel, sizeof rel, "tests/data/video/%s", clip);
    tv_data(in, sizeof in, rel);
    struct tv_file a;
    cr_assert_eq(tv_read(in, 0, &a), 0);
    cr_assert_eq(tv_read(out, keep_luma, outf), 0, "%s unreadable", out);
    tv_assert_same_timing(&a, outf);
    tv_free(&a);
}

Test(worker_pipeline_process, mono_mask_timing_and_people, .init = quiet)
{
    char dir[256], out[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/matte.mkv", dir);
    struct metrics *m = calloc(1, sizeof *m);
    vr_err e = { 0 };
    cr_assert_eq(run("mono.mkv", out, PIPE_OUT_MASK, "{\"output_scale\": 0.5}", NULL, m, &e), 0, "%s", e.msg);
    cr_assert_eq(m->frames, 20);
    struct tv_file f;
    same_timing("mono.mkv", out, &f, 1);
    cr_assert_eq(f.w, 160);
    cr_assert_eq(f.h, 120);
    double in_m, out_m;
    tv_box_means(&f, 0, people, 5, &in_m, &out_m);
    cr_assert_gt(in_m, 50, "matte inside the people boxes: mean %.1f", in_m);
    cr_assert_lt(out_m, 15, "matte on the background: mean %.1f", out_m);
    cr_assert_gt(in_m, 5 * out_m, "people %.1f vs background %.1f", in_m, out_m);
    tv_free(&f);
    free(m);
    tv_rmdir(dir);
}

Test(worker_pipeline_process, audio_copied_bit_exact, .init = quiet)
{
    char dir[256], out[512], in[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/matte.mp4", dir);  /* other container than the input */
    vr_err e = { 0 };
    cr_assert_eq(run("audio.mkv", out, PIPE_OUT_MASK, NULL, NULL, NULL, &e), 0, "%s", e.msg);
    struct tv_file f, a;
    same_timing("audio.mkv", out, &f, 0);
    tv_data(in, sizeof in, "tests/data/video/audio.mkv");
    cr_assert_eq(tv_read(in, 0, &a), 0);
    tv_assert_same_packets(&a, &f);
    tv_free(&a);
    tv_free(&f);
    tv_rmdir(dir);
}

Test(worker_pipeline_process, sbs_metrics_and_trace, .init = quiet)
{
    char dir[256], out[512], trace[512], mpath[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/sbs_matte.mkv", dir);
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(mpath, sizeof mpath, "%s/metrics.json", dir);
    struct metrics *m = calloc(1, sizeof *m);
    vr_err e = { 0 };
    cr_assert_eq(run("sbs.mkv", out, PIPE_OUT_MASK, NULL, trace, m, &e), 0, "%s", e.msg);
    struct tv_file f;
    same_timing("sbs.mkv", out, &f, 0);
    tv_free(&f);

    cr_assert_eq(metrics_write_file(m, mpath, &e), 0, "%s", e.msg);
    json_error_t je;
    json_t *j = json_load_file(mpath, 0, &je);
    cr_assert_not_null(j, "metrics JSON: %s", je.text);
    cr_assert_eq(json_integer_value(json_object_get(j, "frames")), 20);
    cr_assert_gt(json_real_value(json_object_get(j, "fps")), 0);
    static const char *const busy[] = { "decode", "preprocess", "inference", "postprocess", "encode", "end_to_end" };
    json_t *st = json_object_get(j, "stages");
    for (int i = 0; i < 8; i++) {
        const char *name = metrics_stage_name(i);
        json_t *h = json_object_get(st, name);
        cr_assert_not_null(h, "stage %s missing", name);
        double p50 = json_real_value(json_object_get(h, "p50_us"));
        double p95 = json_real_value(json_object_get(h, "p95_us"));
        double p99 = json_real_value(json_object_get(h, "p99_us"));
        cr_assert(p50 <= p95 && p95 <= p99, "%s: p50 %g p95 %g p99 %g", name, p50, p95, p99);
    }
    for (size_t i = 0; i < sizeof busy / sizeof busy[0]; i++)
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, busy[i]), "n")), 20,
                     "every frame timed in %s", busy[i]);
    struct metrics back;
    cr_assert_eq(metrics_from_json(&back, j, &e), 0, "%s", e.msg);
    cr_assert_eq(memcmp(&back.stage[MET_DECODE], &m->stage[MET_DECODE], sizeof back.stage[0]), 0);
    json_decref(j);

    j = json_load_file(trace, 0, &je);
    cr_assert_not_null(j, "trace JSON: %s", je.text);
    json_t *ev = json_object_get(j, "traceEvents"), *x;
    size_t k;
    int seen[3] = { 0 };
    json_array_foreach(ev, k, x) {
        const char *n = json_string_value(json_object_get(x, "name"));
        const char *ph = json_string_value(json_object_get(x, "ph"));
        cr_assert_not_null(ph);
        if (n && !strcmp(ph, "X")) {
            cr_assert(json_is_number(json_object_get(x, "ts")) && json_is_number(json_object_get(x, "dur")));
            seen[0] += !strcmp(n, "decode");
            seen[1] += !strcmp(n, "segment");
            seen[2] += !strcmp(n, "encode");
        }
    }
    cr_assert_eq(seen[0], 20);
    cr_assert_gt(seen[1], 0);
    cr_assert_eq(seen[2], 20);
    json_decref(j);
    free(m);
    tv_rmdir(dir);
}

Test(worker_pipeline_process, hevc10_greenscreen_and_alpha_packed, .init = quiet)
{
    char dir[256], out[512];
    tv_tmpdir(dir, sizeof dir);
    vr_err e = { 0 };
    /* greenscreen: full size, background keyed to green (Y ~ 173) */
    snprintf(out, sizeof out, "%s/green.mkv", dir);
    cr_assert_eq(run("hevc10.mkv", out, PIPE_OUT_GREENSCREEN, NULL, NULL, NULL, &e), 0, "%s", e.msg);
    struct tv_file f;
    same_timing("hevc10.mkv", out, &f, 1);
    cr_assert_eq(f.w, 320);
    double in_m, bg;
    tv_box_means(&f, 0, people, 5, &in_m, &bg);
    cr_assert(bg > 150 && bg < 185, "background luma %.1f is not the green key", bg);
    tv_free(&f);

    /* alpha-packed on the SBS clip: colour frame, matte in the eye corners
     * (which show a wall in this flat clip: told to use them anyway) */
    snprintf(out, sizeof out, "%s/sbs_alpha.mkv", dir);
    alpha_corners = 1;
    int rc = run("sbs.mkv", out, PIPE_OUT_ALPHA_PACKED, NULL, NULL, NULL, &e);
    alpha_corners = 0;
    cr_assert_eq(rc, 0, "%s", e.msg);
    same_timing("sbs.mkv", out, &f, 1);
    cr_assert_eq(f.w, 480);
    cr_assert_eq(f.h, 240);
    /* the layout was read as SBS: the top-left corner of each eye (x 0 and
     * x 240) holds a quadrant of that eye's matte (40 % of 240 = 96, so
     * 48x48), mostly background there (Y = 16), where the source shows a
     * bright wall; the frame's centre is the untouched picture */
    struct tv_file src;
    char sp[512];
    tv_data(sp, sizeof sp, "tests/data/video/sbs.mkv");
    cr_assert_eq(tv_read(sp, 1, &src), 0);
    for (int eye = 0; eye < 2; eye++) {
        double o = 0, i0 = 0;
        for (int y = 4; y < 44; y++)
            for (int x = 4; x < 44; x++) {
                o += f.luma[0][y * 480 + eye * 240 + x];
                i0 += src.luma[0][y * 480 + eye * 240 + x];
            }
        o /= 1600;
        i0 /= 1600;
        cr_assert_lt(o, 40, "eye %d corner: luma %.1f is not a background matte", eye, o);
        cr_assert_gt(i0, 60, "eye %d corner of the source: luma %.1f", eye, i0);
    }
    double dc = 0;
    for (int y = 100; y < 140; y++)
        for (int x = 100; x < 140; x++)
            dc += abs(f.luma[0][y * 480 + x] - src.luma[0][y * 480 + x]);
    cr_assert_lt(dc / 1600, 8, "the picture between the corners is the source's");
    tv_free(&src);
    tv_free(&f);
    tv_rmdir(dir);
}

/* Alpha-packed writes the matte into the corners of each eye, where a
 * fisheye has no picture. An equirectangular 180° SBS eye has picture
 * there: refused naming the layout, nothing written, unless told to use
 * the corners (--alpha-area corners). A fisheye 190° SBS clip (black
 * around each eye's circle) is packed. Both clips are made here. */
Test(worker_pipeline_process, alpha_packed_refuses_picture_in_the_corners, .init = quiet)
{
    char dir[256], equi[512], fish[512], out[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(equi, sizeof equi, "%s/clip_180_LR.mkv", dir);
    snprintf(fish, sizeof fish, "%s/clip_FISHEYE190_LR.mkv", dir);
    static const char make[] = "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x160:rate=5 "
                               "-t 1 %s -c:v libx264 -pix_fmt yuv420p -g 5 '%s'";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, make, "", equi);
    cr_assert_eq(system(cmd), 0, "ffmpeg: %s", cmd);
    /* each 160x160 eye: the picture inside a circle of radius 78, black outside */
    snprintf(cmd, sizeof cmd, make,
             "-vf \"geq=lum='if(lt(hypot(mod(X,160)-80,Y-80),78),lum(X,Y),0)':cb=128:cr=128\"",
             fish);
    cr_assert_eq(system(cmd), 0, "ffmpeg: %s", cmd);

    vr_err e = { 0 };
    snprintf(out, sizeof out, "%s/equi_alpha.mkv", dir);
    cr_assert_eq(run_path(equi, out, PIPE_OUT_ALPHA_PACKED, NULL, NULL, NULL, &e), VR_ENOTSUP,
                 "equirect 180 packed: %s", e.msg);
    cr_assert(strstr(e.msg, "sbs source's corners hold picture") && strstr(e.msg, "--alpha-area"),
              "%s", e.msg);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "a refused output was written");
    cr_assert_eq(tv_count_entries(dir), 2, "something left in %s", dir);
    alpha_corners = 1;
    int rc = run_path(equi, out, PIPE_OUT_ALPHA_PACKED, NULL, NULL, NULL, &e);
    alpha_corners = 0;
    cr_assert_eq(rc, 0, "told to use the corners: %s", e.msg);

    snprintf(out, sizeof out, "%s/fish_alpha.mkv", dir);
    cr_assert_eq(run_path(fish, out, PIPE_OUT_ALPHA_PACKED, NULL, NULL, NULL, &e), 0,
                 "fisheye 190 refused: %s", e.msg);
    struct tv_file f;
    cr_assert_eq(tv_read(out, 1, &f), 0);
    cr_assert_eq(f.w, 320);
    cr_assert_eq(f.nframes, 5);
    tv_free(&f);
    tv_rmdir(dir);
}

/* ---- failures through the command line: nothing left under OUT ---- */

static int cli(const char *args, char *errbuf, size_t n)
{
    const char *bin = getenv("VR_BIN_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/vr-worker process %s 2>&1", bin ? bin : "bin", args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t got = fread(errbuf, 1, n - 1, p);
    errbuf[got] = '\0';
    return pclose(p);
}

Test(worker_pipeline_process, corrupt_and_truncated_fail_leaving_nothing, .init = quiet)
{
    char dir[256], src[512], bad[512], outdir[512], args[2048], msg[4096];
    tv_tmpdir(dir, sizeof dir);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    mkdir(outdir, 0755);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    for (int corrupt = 0; corrupt < 2; corrupt++) {
        snprintf(bad, sizeof bad, "%s/%s.mkv", dir, corrupt ? "corrupt" : "truncated");
        cr_assert_eq(tv_damage(src, bad, 0.5, corrupt), 0);
        snprintf(args, sizeof args, "--cpu --profile fast %s -o %s/matte.mkv", bad, outdir);
        int st = cli(args, msg, sizeof msg);
        cr_assert_neq(st, 0, "%s input accepted: %s", corrupt ? "corrupt" : "truncated", msg);
        cr_assert(strstr(msg, bad), "error names the file: %s", msg);
        cr_assert(strstr(msg, "frame") || strstr(msg, "packet") || strstr(msg, "truncated"), "%s", msg);
        cr_assert_eq(tv_count_entries(outdir), 0, "something left in OUT's directory");
    }
    tv_rmdir(outdir);
    tv_rmdir(dir);
}

/* One damaged packet in a whole file: concealed by default, as ffmpeg
 * does (the run ends well, the count said; the packet's own frame is lost
 * where the decoder refuses it, as in ffmpeg, every other frame written),
 * and an error naming the packet with --on-decode-error fail. */
Test(worker_pipeline_process, one_damaged_packet_concealed_or_failed_as_asked, .init = quiet)
{
    char dir[256], src[512], bad[512], outdir[512], out[600], args[2048], msg[4096];
    tv_tmpdir(dir, sizeof dir);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    mkdir(outdir, 0755);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    snprintf(bad, sizeof bad, "%s/damaged.mkv", dir);
    cr_assert_eq(tv_damage_packet(src, bad, 5), 0);
    snprintf(out, sizeof out, "%s/matte.mkv", outdir);

    snprintf(args, sizeof args, "--cpu --profile fast --on-decode-error fail %s -o %s", bad, out);
    int st = cli(args, msg, sizeof msg);
    cr_assert_neq(st, 0, "a damaged packet accepted with --on-decode-error fail: %s", msg);
    cr_assert(strstr(msg, "cannot decode") || strstr(msg, "corrupt frame"), "%s", msg);
    cr_assert_eq(tv_count_entries(outdir), 0, "something left in OUT's directory");

    snprintf(args, sizeof args, "--cpu --profile fast %s -o %s", bad, out);
    st = cli(args, msg, sizeof msg);
    cr_assert_eq(st, 0, "a damaged packet failed the run by default: %s", msg);
    cr_assert(strstr(msg, "decode errors concealed"), "the count is not said: %s", msg);
    struct tv_file a, b;
    cr_assert_eq(tv_read(src, 0, &a), 0);
    cr_assert_eq(tv_read(out, 0, &b), 0);
    cr_assert(b.nframes >= a.nframes - 1 && b.nframes <= a.nframes, "frames: %d of %d",
              b.nframes, a.nframes);
    tv_free(&a);
    tv_free(&b);

    snprintf(args, sizeof args, "--cpu --on-decode-error ignore %s -o %s", bad, out);
    st = cli(args, msg, sizeof msg);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s", msg);
    cr_assert(strstr(msg, "expected conceal or fail"), "%s", msg);
    tv_rmdir(outdir);
    tv_rmdir(dir);
}

/* A full disk while the output is written: one wording everywhere, the one
 * the docs give ("disk full (free space on the volume that holds it and retry the
 * job)"), and no temp file left. The disk is a 16 KiB tmpfs (the greenscreen output of the clip takes more) mounted in a
 * private user + mount namespace (no root needed, nothing seen outside). */
Test(worker_pipeline_process, disk_full_names_the_fix_and_leaves_nothing, .init = quiet)
{
    if (system("unshare -rm true >/dev/null 2>&1") != 0)
        cr_skip_test("no user namespaces here (unshare -rm)");
    char dir[256], src[512], args[2048], msg[4096];
    tv_tmpdir(dir, sizeof dir);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    const char *bin = getenv("VR_BIN_DIR");
    snprintf(args, sizeof args,
             "unshare -rm sh -c 'mount -t tmpfs -o size=16k vrfull %s && "
             "%s/vr-worker process --cpu --profile fast --output greenscreen %s -o %s/out.mkv; st=$?; "
             "ls -A %s | sed \"s/^/left: /\"; exit $st' 2>&1",
             dir, bin ? bin : "bin", src, dir, dir);
    FILE *p = popen(args, "r");
    cr_assert_not_null(p);
    size_t got = fread(msg, 1, sizeof msg - 1, p);
    msg[got] = '\0';
    int st = pclose(p);
    cr_assert_neq(st, 0, "a full disk went unnoticed: %s", msg);
    cr_assert(strstr(msg, "disk full (free space on the volume that holds it and retry the job)"),
              "%s", msg);
    cr_assert_null(strstr(msg, "left: "), "something left on the full disk: %s", msg);
    tv_rmdir(dir);
}

Test(worker_pipeline_process, gpu_without_device_fails_clearly, .init = quiet)
{
    char dir[256], src[512], args[2048], msg[4096];
    tv_tmpdir(dir, sizeof dir);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    snprintf(args, sizeof args, "--gpu 0 --profile fast %s -o %s/m.mkv", src, dir);
    int st = cli(args, msg, sizeof msg);
    if (st == 0) { /* a GPU host: nothing to check here */
        tv_rmdir(dir);
        return;
    }
    cr_assert(strstr(msg, "no NVIDIA GPU found") || strstr(msg, "without CUDA"), "%s", msg);
    cr_assert_eq(tv_count_entries(dir), 0);
    tv_rmdir(dir);
}

/* ---- the --layout auto rule ---- */

#include "vio_layout.h"

Test(worker_pipeline_process, layout_rule)
{
    struct vio_info i;
    const char *why;
    memset(&i, 0, sizeof i);
    i.stereo = -1;
    i.projection = -1;
    i.w = 8192, i.h = 4096;
    cr_assert_eq(vio_guess_layout(&i, "/v/clip.mp4", &why), VIO_LAYOUT_SBS, "2:1 -> sbs");
    cr_assert(strstr(why, "aspect"), "%s", why);
    i.w = 4096, i.h = 8192;
    cr_assert_eq(vio_guess_layout(&i, "clip.mp4", &why), VIO_LAYOUT_TB, "1:2 -> tb");
    i.w = 3840, i.h = 2160;
    cr_assert_eq(vio_guess_layout(&i, "clip.mp4", &why), VIO_LAYOUT_MONO, "16:9 -> mono");
    cr_assert_eq(vio_guess_layout(&i, "/v/clip_LR.mp4", &why), VIO_LAYOUT_SBS, "name tag");
    cr_assert_eq(vio_guess_layout(&i, "/v/clip_3dv.mp4", &why), VIO_LAYOUT_TB);
    cr_assert_eq(vio_guess_layout(&i, "/v/clip_output.mp4", &why), VIO_LAYOUT_MONO,
                 "_OU inside a word is no tag");
    cr_assert_eq(vio_guess_layout(&i, "/v_TB/clip.mp4", &why), VIO_LAYOUT_MONO,
                 "only the file name counts, not the directory");
    i.w = 8192, i.h = 4096;
    i.spherical = 1;
    cr_assert_eq(vio_guess_layout(&i, "clip_LR.mp4", &why), VIO_LAYOUT_MONO,
                 "spherical without stereo: mono 360");
    i.stereo = 2;
    cr_assert_eq(vio_guess_layout(&i, "clip_LR.mp4", &why), VIO_LAYOUT_TB, "stereo3d wins");
    cr_assert(strstr(why, "stereo3d"), "%s", why);
}

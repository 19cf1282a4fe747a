/*
 * t-worker-pipeline-warm.c - the warm engine that `vr-worker serve` keeps across
 * chunks: a reused engine gives the same matte as a fresh one (temporal
 * smoothing starts over, nothing else carries over), another geometry gets
 * its own engine, and a failed run leaves the worker cold.
 */
#include "config.h"
#include "pipeline.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <string.h>

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

static int run(const char *in, const char *out, struct pipe_warm *w, vr_err *e)
{
    struct pipe_opts o;
    memset(&o, 0, sizeof o);
    o.backend = SEG_CPU;
    o.layout = -1;
    o.output = PIPE_OUT_MASK;
    o.warm = w;
    cr_assert_eq(config_load_profile(&o.cfg, "fast", e), 0, "%s", e->msg);
    /* strong smoothing: a mask left over from the last run would show */
    cr_assert_eq(config_apply_text(&o.cfg, "{\"smooth\": 0.8, \"output_scale\": 0.5}", "test", e), 0,
                 "%s", e->msg);
    return pipeline_run(&o, in, out, NULL, e);
}

static void assert_same_mattes(const char *a, const char *b)
{
    struct tv_file fa, fb;
    cr_assert_eq(tv_read(a, 1, &fa), 0);
    cr_assert_eq(tv_read(b, 1, &fb), 0);
    tv_assert_same_timing(&fa, &fb);
    for (int i = 0; i < fa.nframes; i++)
        cr_assert(!memcmp(fa.luma[i], fb.luma[i], (size_t)fa.w * fa.h), "frame %d differs", i);
    tv_free(&fa);
    tv_free(&fb);
}

Test(worker_pipeline_warm, reused_engine_gives_the_fresh_engines_matte, .init = quiet)
{
    char dir[256], mono[512], sbs[512], cold[512], w1[512], w2[512], w3[512];
    tv_tmpdir(dir, sizeof dir);
    tv_data(mono, sizeof mono, "tests/data/video/mono.mkv");
    tv_data(sbs, sizeof sbs, "tests/data/video/sbs.mkv");
    snprintf(cold, sizeof cold, "%s/cold.mkv", dir);
    snprintf(w1, sizeof w1, "%s/w1.mkv", dir);
    snprintf(w2, sizeof w2, "%s/w2.mkv", dir);
    snprintf(w3, sizeof w3, "%s/w3.mkv", dir);
    vr_err e = { 0 };
    cr_assert_eq(run(mono, cold, NULL, &e), 0, "%s", e.msg);

    struct pipe_warm w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(run(mono, w1, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(run(mono, w2, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(w.built, 1);
    cr_assert_eq(w.reused, 1);
    assert_same_mattes(cold, w1);
    assert_same_mattes(cold, w2);

    /* another geometry and layout: a new engine, not the mono one */
    cr_assert_eq(run(sbs, w3, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(w.built, 2);
    cr_assert_eq(w.reused, 1);
    pipe_warm_drop(&w);
    cr_assert_null(w.seg);
    tv_rmdir(dir);
}

Test(worker_pipeline_warm, failed_run_leaves_the_worker_cold, .init = quiet)
{
    char dir[256], mono[512], bad[512], out[512];
    tv_tmpdir(dir, sizeof dir);
    tv_data(mono, sizeof mono, "tests/data/video/mono.mkv");
    snprintf(bad, sizeof bad, "%s/truncated.mkv", dir);
    snprintf(out, sizeof out, "%s/out.mkv", dir);
    cr_assert_eq(tv_damage(mono, bad, 0.5, 0), 0);
    struct pipe_warm w;
    memset(&w, 0, sizeof w);
    vr_err e = { 0 };
    cr_assert_eq(run(mono, out, &w, &e), 0, "%s", e.msg);
    cr_assert_not_null(w.seg);
    cr_assert_lt(run(bad, out, &w, &e), 0, "a truncated chunk must fail");
    cr_assert_null(w.seg, "the engine of a failed run was kept");
    cr_assert_eq(run(mono, out, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(w.built, 2);
    pipe_warm_drop(&w);
    tv_rmdir(dir);
}

/*
 * g-worker-pipeline-warm.c - the warm engine of `vr-worker serve` on the GPU:
 * whole pipeline runs (NVDEC decode, SEG_CUDA, encode) on the test clips,
 * where a reused engine must give the fresh engine's matte (temporal
 * smoothing starts over; the CUDA graphs and buffers carry nothing over),
 * and a clip of another geometry gets its own engine.
 */
#include "config.h"
#include "pipeline.h"
#include "util-pipeline.h"
#include "../util-video.h"

#include <criterion/criterion.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MATTE_TOL 2 /* of 255: GPU float sums may round differently */

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

static int run(const char *clip, const char *out, struct pipe_warm *w, vr_err *e)
{
    struct pipe_opts o;
    gp_mask_opts(&o, "balanced", "{\"smooth\": 0.8}");
    o.warm = w;
    char in[512], rel[128];
    snprintf(rel, sizeof rel, "tests/data/video/%s", clip);
    tv_data(in, sizeof in, rel);
    return pipeline_run(&o, in, out, NULL, e);
}

static void assert_close_mattes(const char *a, const char *b)
{
    struct tv_file *fa = calloc(1, sizeof *fa), *fb = calloc(1, sizeof *fb);
    cr_assert(fa && fb);
    cr_assert_eq(tv_read(a, 1, fa), 0);
    cr_assert_eq(tv_read(b, 1, fb), 0);
    tv_assert_same_timing(fa, fb);
    for (int i = 0; i < fa->nframes; i++) {
        int worst = 0;
        for (size_t k = 0; k < (size_t)fa->w * fa->h; k++) {
            int d = abs(fa->luma[i][k] - fb->luma[i][k]);
            worst = d > worst ? d : worst;
        }
        cr_assert_leq(worst, MATTE_TOL, "frame %d: mattes differ by %d", i, worst);
    }
    tv_free(fa);
    tv_free(fb);
    free(fa);
    free(fb);
}

Test(g_worker_pipeline_warm, reused_engine_gives_the_fresh_engines_matte, .init = quiet)
{
    char dir[256], cold[512], w1[512], w2[512], w3[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(cold, sizeof cold, "%s/cold.mkv", dir);
    snprintf(w1, sizeof w1, "%s/w1.mkv", dir);
    snprintf(w2, sizeof w2, "%s/w2.mkv", dir);
    snprintf(w3, sizeof w3, "%s/w3.mkv", dir);
    vr_err e = { 0 };
    cr_assert_eq(run("sbs.mkv", cold, NULL, &e), 0, "%s", e.msg);

    struct pipe_warm w;
    memset(&w, 0, sizeof w);
    cr_assert_eq(run("sbs.mkv", w1, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(run("mono.mkv", w2, &w, &e), 0, "%s", e.msg); /* another geometry */
    cr_assert_eq(run("sbs.mkv", w3, &w, &e), 0, "%s", e.msg);
    cr_assert_eq(run("sbs.mkv", w3, &w, &e), 0, "%s", e.msg); /* warm: reused */
    cr_assert_eq(w.built, 3);
    cr_assert_eq(w.reused, 1);
    assert_close_mattes(cold, w1);
    assert_close_mattes(cold, w3);
    pipe_warm_drop(&w);
    tv_rmdir(dir);
}

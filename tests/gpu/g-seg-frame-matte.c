/*
 * g-seg-frame-matte.c - the work mask's clean-up on the GPU (frame_matte.cu)
 * against its C twins (frame_matte_ref.c), every bit: the whole pass
 * bounding the tiles (frame_gate_cuda) over random tile layouts, tiles
 * claiming from nothing to half their area (trusted, partly, not at all)
 * and odd sizes, the second model's fusion (frame_fuse_cuda) at any size
 * ratio, and the close/open
 * (frame_morph_cuda) over radii 1..4 on random masks with holes and specks.
 */
#include "util-frame.h"

Test(g_seg_frame_matte, gate_exact)
{
    gf_seed("gate");
    for (int rep = 0; rep < 6; rep++) {
        const int mw = gf_int(16, 256), mh = gf_int(16, 256), n = gf_int(2, 10);
        const int ww = gf_int(64, 1024), wh = gf_int(64, 1024), r = gf_int(0, 6);
        struct frame_tile t[10];
        for (int i = 0; i < n - 1; i++) { /* tiles anywhere, some past the border */
            float tw = gf_unif(0.2f, 0.7f) * ww, th = gf_unif(0.2f, 0.7f) * wh;
            t[i] = (struct frame_tile){ gf_unif(0.0f, ww - tw * 0.5f), gf_unif(0.0f, wh - th * 0.5f),
                                        tw, th, 1.0f, 0.25f, 15, 0, 0.0f };
        }
        t[n - 1] = (struct frame_tile){ 0, 0, (float)ww, (float)wh, 1.0f, 0.0f, FRAME_TILE_FLOOR, 0, 0.0f };
        size_t np = (size_t)mw * mh, cnt = (size_t)n * np;
        float *want = malloc(cnt * sizeof *want), *scratch = malloc(np * sizeof *scratch);
        cr_assert(want && scratch);
        for (int i = 0; i < n; i++) { /* per tile: a share of person, the rest background */
            float share = i == n - 1 ? 0.03f : gf_unif(0.0f, 0.5f);
            for (size_t k = 0; k < np; k++)
                want[i * np + k] = gf_unif(0.0f, 1.0f) < share ? gf_unif(0.5f, 1.0f)
                                                                : gf_unif(0.0f, 0.08f);
        }
        float *d_tiles = gf_dev_copy(want, cnt * sizeof *want);
        struct frame_tile *d_t = gf_dev_copy(t, n * sizeof *t);
        float *d_scratch = gf_dev_poisoned((size_t)(n - 1) * np);
        unsigned long long *d_sums = NULL;
        GF_CUDA(cudaMalloc((void **)&d_sums, n * sizeof *d_sums));
        frame_gate_ref(want, n, mw, mh, t, ww, wh, r, scratch);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_gate_cuda(d_tiles, n, mw, mh, d_t, ww, wh, r, d_scratch, d_sums, 0,
                                     &err), 0, "%s", err.msg);
        size_t at = 0;
        float got = 0.0f;
        size_t nd = gf_dev_bits_diff(d_tiles, want, cnt, &at, &got);
        cr_expect_eq(nd, 0, "rep %d (%d tiles of %dx%d, r %d, work %dx%d): %zu floats "
                     "differ, first tile %zu at (%zu, %zu): %g, want %g", rep, n, mw, mh, r,
                     ww, wh, nd, at / np, at % np % mw, at % np / mw, got, want[at]);
        cudaFree(d_tiles);
        cudaFree(d_t);
        cudaFree(d_scratch);
        cudaFree(d_sums);
        free(scratch);
        free(want);
    }
}

Test(g_seg_frame_matte, fuse_exact)
{
    gf_seed("fuse");
    for (int rep = 0; rep < 6; rep++) {
        const int mw = gf_int(16, 256), mh = gf_int(16, 256);
        const int ww = gf_int(17, 1024), wh = gf_int(17, 1024);
        size_t np = (size_t)mw * mh, cnt = (size_t)ww * wh;
        float *p = malloc(np * sizeof *p), *want = malloc(cnt * sizeof *want);
        cr_assert(p && want);
        for (size_t i = 0; i < np; i++)
            p[i] = gf_unif(0.0f, 1.0f);
        for (size_t i = 0; i < cnt; i++)
            want[i] = gf_unif(0.0f, 1.0f);
        float *d_p = gf_dev_copy(p, np * sizeof *p), *d_work = gf_dev_copy(want, cnt * sizeof *want);
        frame_fuse_ref(p, mw, mh, ww, wh, want);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_fuse_cuda(d_p, mw, mh, ww, wh, d_work, 0, &err), 0, "%s", err.msg);
        size_t at = 0;
        float got = 0.0f;
        size_t nd = gf_dev_bits_diff(d_work, want, cnt, &at, &got);
        cr_expect_eq(nd, 0, "rep %d (%dx%d into %dx%d): %zu floats differ, first at (%zu, %zu): "
                     "%g, want %g", rep, mw, mh, ww, wh, nd, at % ww, at / ww, got, want[at]);
        cudaFree(d_p);
        cudaFree(d_work);
        free(p);
        free(want);
    }
}

Test(g_seg_frame_matte, morph_exact)
{
    gf_seed("morph");
    for (int rep = 0; rep < 6; rep++) {
        const int w = gf_int(5, 600), h = gf_int(5, 600), r = gf_int(1, 4);
        size_t cnt = (size_t)w * h;
        float *want = malloc(cnt * sizeof *want);
        cr_assert(want);
        for (size_t i = 0; i < cnt; i++) /* a person with holes, background with specks */
            want[i] = (i % w > (size_t)w / 3) ^ (gf_u32() % 20 == 0) ? gf_unif(0.8f, 1.0f)
                                                                      : gf_unif(0.0f, 0.2f);
        float *d_work = gf_dev_copy(want, cnt * sizeof *want), *d_scratch = gf_dev_poisoned(cnt);
        float *scratch = malloc(cnt * sizeof *scratch);
        frame_morph_ref(want, w, h, r, scratch);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_morph_cuda(d_work, w, h, r, d_scratch, 0, &err), 0, "%s", err.msg);
        size_t at = 0;
        float got = 0.0f;
        size_t nd = gf_dev_bits_diff(d_work, want, cnt, &at, &got);
        cr_expect_eq(nd, 0, "rep %d (%dx%d, r %d): %zu floats differ, first at (%zu, %zu): %g, "
                     "want %g", rep, w, h, r, nd, at % w, at / w, got, want[at]);
        cudaFree(d_work);
        cudaFree(d_scratch);
        free(scratch);
        free(want);
    }
}

/*
 * g-frame-blend.c - the CUDA tile blend against frame_blend_ref on random
 * tile outputs and a random tile layout: a feathered overlapping grid, a
 * low-weight whole pass, fractional placements, and one tile hanging over
 * the border so some pixels see only part of the grid. Output poisoned.
 */
#include "g-frame-util.h"

#define BLEND_TOL 1e-5

Test(gpu_frame, blend_random_layout)
{
    gf_seed("blend");
    for (int rep = 0; rep < 4; rep++) {
        const int mw = gf_int(16, 80), mh = gf_int(16, 80);
        const int ww = gf_int(100, 400), wh = gf_int(100, 400);
        const int cols = gf_int(1, 4), rows = gf_int(1, 4);
        struct frame_tile t[4 * 4 + 2];
        int n = 0;
        float ov = gf_unif(0.0f, 0.4f);
        float tw = ww / (cols - (cols - 1) * ov), th = wh / (rows - (rows - 1) * ov);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                int edges = (c > 0 ? FRAME_EDGE_L : 0) | (c < cols - 1 ? FRAME_EDGE_R : 0)
                            | (r > 0 ? FRAME_EDGE_T : 0) | (r < rows - 1 ? FRAME_EDGE_B : 0);
                t[n++] = (struct frame_tile){ c * tw * (1 - ov), r * th * (1 - ov), tw, th,
                                              gf_unif(0.5f, 1.5f), ov > 0.02f ? ov : 0.02f,
                                              edges };
            }
        t[n++] = (struct frame_tile){ 0, 0, (float)ww, (float)wh, 0.05f, 0.0f, 0 };
        /* partly outside the work image, all edges feathered */
        t[n++] = (struct frame_tile){ ww * 0.6f, wh * 0.7f, ww * 0.7f, wh * 0.5f, 1.0f, 0.3f, 15 };
        size_t tsz = (size_t)n * mw * mh, cnt = (size_t)ww * wh;
        float *tiles = malloc(tsz * sizeof *tiles), *want = malloc(cnt * sizeof *want);
        cr_assert(tiles && want);
        for (size_t i = 0; i < tsz; i++)
            tiles[i] = gf_unif(0.0f, 1.0f);
        frame_blend_ref(tiles, n, mw, mh, t, ww, wh, want);
        float *d_tiles = gf_dev_copy(tiles, tsz * sizeof *tiles);
        struct frame_tile *d_t = gf_dev_copy(t, n * sizeof *t);
        float *d_out = gf_dev_poisoned(cnt);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_blend_cuda(d_tiles, n, mw, mh, d_t, ww, wh, d_out, 0, &err), 0,
                     "%s", err.msg);
        size_t at = 0;
        double d = gf_dev_max_abs(d_out, want, cnt, &at);
        cr_expect(d <= BLEND_TOL, "rep %d (%dx%d grid, %d tiles of %dx%d into %dx%d): "
                  "max abs %g at (%zu, %zu)", rep, cols, rows, n, mw, mh, ww, wh, d,
                  at % ww, at / ww);
        cudaFree(d_tiles);
        cudaFree(d_t);
        cudaFree(d_out);
        free(tiles);
        free(want);
    }
}

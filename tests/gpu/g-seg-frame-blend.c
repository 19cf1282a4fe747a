/*
 * g-seg-frame-blend.c - the CUDA tile blend against frame_blend_ref on random
 * tile outputs and a random tile layout: a feathered overlapping grid, a
 * low-weight whole pass, fractional placements, and one tile hanging over
 * the border so some pixels see only part of the grid. Output poisoned.
 * blend_exact: the batched call, every bit against the twin, over the
 * tiled kernel's edge cases and its per-pixel fallback.
 */
#include "config.h"
#include "util-frame.h"

#define BLEND_TOL 1e-5

Test(g_seg_frame_blend, blend_random_layout)
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
                                              edges, 0, 0.0f };
            }
        t[n++] = (struct frame_tile){ 0, 0, (float)ww, (float)wh, 0.05f, 0.0f, 0, 0, 0.0f };
        /* partly outside the work image, all edges feathered */
        t[n++] = (struct frame_tile){ ww * 0.6f, wh * 0.7f, ww * 0.7f, wh * 0.5f, 1.0f, 0.3f, 15, 0,
                                      0.0f };
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

/* ---- blend, bit for bit ---- */

#define BLEND_MAX_LAYOUT (TILE_MAX_PER_EYE + 1)

/* A cols x rows grid with overlap ov over a ww x wh eye (interior edges
 * feathered), optionally a floor whole pass, and `odd` tiles at random
 * places (partly outside, any edges, any feather, floors among them); at
 * most `max` tiles. Returns the count. */
static int blend_layout(struct frame_tile *t, int max, int cols, int rows, int whole, int odd,
                        int ww, int wh)
{
    int n = 0;
    const float ov = gf_unif(0.0f, 0.4f);
    const float tw = ww / (cols - (cols - 1) * ov), th = wh / (rows - (rows - 1) * ov);
    for (int r = 0; r < rows && n < max; r++)
        for (int c = 0; c < cols && n < max; c++) {
            int edges = (c > 0 ? FRAME_EDGE_L : 0) | (c < cols - 1 ? FRAME_EDGE_R : 0)
                        | (r > 0 ? FRAME_EDGE_T : 0) | (r < rows - 1 ? FRAME_EDGE_B : 0);
            t[n++] = (struct frame_tile){ c * tw * (1 - ov), r * th * (1 - ov), tw, th,
                                          gf_unif(0.5f, 1.5f), ov > 0.02f ? ov : 0.02f, edges,
                                          0, 0.0f };
        }
    if (whole && n < max)
        t[n++] = (struct frame_tile){ 0, 0, (float)ww, (float)wh, 0.05f, 0.0f, FRAME_TILE_FLOOR, 0,
                                      0.0f };
    for (int k = 0; k < odd && n < max; k++)
        t[n++] = (struct frame_tile){ gf_unif(-0.3f * ww, (float)ww),
                                      gf_unif(-0.3f * wh, (float)wh),
                                      gf_unif(0.5f, 1.2f * ww), gf_unif(0.5f, 1.2f * wh),
                                      gf_unif(0.1f, 2.0f),
                                      gf_int(0, 4) ? gf_unif(0.01f, 0.6f) : 0.0f,
                                      (int)(gf_u32() % 32), 0, 0.0f };
    return n;
}

/* n frames of n_eyes eyes (sizes eyes[i], tile layouts lay[i] of nt[i]
 * tiles) through frame_blend_batch_cuda, every frame and eye against
 * frame_blend_ref: every bit. */
static void blend_exact(int n_eyes, const int (*eyes)[2], const int *nt,
                        struct frame_tile (*lay)[BLEND_MAX_LAYOUT], int n, int mw, int mh)
{
    struct frame_cu_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.n_eyes = n_eyes;
    struct frame_tile all[2 * BLEND_MAX_LAYOUT];
    for (int i = 0; i < n_eyes; i++) {
        pl.e[i].work_w = eyes[i][0];
        pl.e[i].work_h = eyes[i][1];
        pl.e[i].work_off = pl.work_per_frame;
        pl.e[i].tile0 = pl.tiles_per_frame;
        pl.e[i].ntiles = nt[i];
        memcpy(all + pl.tiles_per_frame, lay[i], nt[i] * sizeof *all);
        pl.tiles_per_frame += nt[i];
        pl.work_per_frame += (size_t)eyes[i][0] * eyes[i][1];
        if (eyes[i][0] * eyes[i][1] > pl.max_work)
            pl.max_work = eyes[i][0] * eyes[i][1];
    }
    const size_t plane = (size_t)mw * mh, tsz = (size_t)n * pl.tiles_per_frame * plane + 1;
    const size_t np = (size_t)n * pl.work_per_frame;
    float *tiles = malloc(tsz * sizeof *tiles), *want = malloc(np * sizeof *want);
    cr_assert(tiles && want);
    for (size_t i = 0; i < tsz; i++)
        tiles[i] = gf_unif(0.0f, 1.0f);
    for (int f = 0; f < n; f++)
        for (int i = 0; i < n_eyes; i++)
            frame_blend_ref(tiles + ((size_t)f * pl.tiles_per_frame + pl.e[i].tile0) * plane,
                            nt[i], mw, mh, lay[i], eyes[i][0], eyes[i][1],
                            want + f * pl.work_per_frame + pl.e[i].work_off);
    float *d_tiles = gf_dev_copy(tiles, tsz * sizeof *tiles);
    struct frame_tile *d_t = gf_dev_copy(all, (pl.tiles_per_frame + 1) * sizeof *all);
    float *d_out = gf_dev_poisoned(np);
    vr_err err = { 0, "" };
    cr_assert_eq(frame_blend_batch_cuda(d_tiles, n, mw, mh, d_t, &pl, d_out, 0, &err), 0, "%s",
                 err.msg);
    float *got = malloc(np * sizeof *got);
    cr_assert(got);
    GF_CUDA(cudaMemcpy(got, d_out, np * sizeof *got, cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < np; i++)
        if (memcmp(&got[i], &want[i], sizeof *got) && bad++ == 0)
            first = i;
    cr_expect(bad == 0,
              "%d frames, %d eyes (%dx%d, %d tiles; %dx%d, %d tiles), tiles %dx%d: %zu differ, "
              "first [%zu] %a, want %a",
              n, n_eyes, eyes[0][0], eyes[0][1], nt[0], n_eyes > 1 ? eyes[1][0] : 0,
              n_eyes > 1 ? eyes[1][1] : 0, n_eyes > 1 ? nt[1] : 0, mw, mh, bad, first,
              got[first], want[first]);
    cudaFree(d_tiles);
    cudaFree(d_t);
    cudaFree(d_out);
    free(tiles);
    free(want);
    free(got);
}

/* The tiled kernel (up to 17 tiles an eye) and the per-pixel one (more)
 * equal the C twin to the bit: work sizes off the 64 x 16 block grid (down
 * to 1 x 1), 0 to 17 tiles and past it (an 8 x 8 grid with its whole
 * pass), floor tiles, feathered edges on every side, tiles partly outside,
 * frame counts off the 2-frame group, two eyes of different sizes, and the
 * engine's call at 8K side by side (balanced: 2 x 2 grid + whole pass,
 * 512 x 512, 16 frames). */
Test(g_seg_frame_blend, blend_exact)
{
    gf_seed("blend_exact");
    static struct frame_tile lay[2][BLEND_MAX_LAYOUT];
    static const int sizes[][2] = { { 1, 1 },    { 1, 37 },  { 37, 1 },  { 63, 15 },
                                    { 64, 16 },  { 65, 17 }, { 100, 65 }, { 129, 31 },
                                    { 300, 200 } };
    static const int maxes[] = { 0, 1, 2, 3, 4, 5, 6, 9, 13, 17, 18 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
            const int full = maxes[m] >= 17; /* 4 x 4 + whole pass + odd: the count itself */
            int nt = blend_layout(lay[0], maxes[m], full ? 4 : gf_int(1, 4),
                                  full ? 4 : gf_int(1, 4), full || gf_int(0, 1), gf_int(full, 3),
                                  sizes[s][0], sizes[s][1]);
            blend_exact(1, &sizes[s], &nt, lay, gf_int(1, 3), gf_int(1, 60), gf_int(1, 60));
        }
    static const int pairs[][2][2] = { { { 61, 37 }, { 45, 70 } },
                                       { { 512, 512 }, { 300, 280 } },
                                       { { 7, 100 }, { 100, 7 } } };
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++)
        for (int rep = 0; rep < 3; rep++) {
            int nt[2];
            for (int i = 0; i < 2; i++)
                nt[i] = blend_layout(lay[i], 17, gf_int(1, 4), gf_int(1, 4), gf_int(0, 1),
                                     gf_int(0, 2), pairs[c][i][0], pairs[c][i][1]);
            blend_exact(2, pairs[c], nt, lay, gf_int(1, 5), gf_int(8, 96), gf_int(8, 96));
        }
    /* past the tiled kernel's 17 tiles: the per-pixel path */
    int nt = blend_layout(lay[0], BLEND_MAX_LAYOUT, 8, 8, 1, 0, 333, 222);
    blend_exact(1, (const int[][2]){ { 333, 222 } }, &nt, lay, 2, 32, 32);
    /* the engine's call at 8K side by side, balanced profile */
    int bal[2];
    for (int i = 0; i < 2; i++)
        bal[i] = blend_layout(lay[i], 5, 2, 2, 1, 0, 512, 512);
    blend_exact(2, (const int[][2]){ { 512, 512 }, { 512, 512 } }, bal, lay, 16, 256, 256);
}

/* tile_favor (each tile's weight times its value to a power, 0-3, each
 * factor lifted to tile_favor_floor, random or 0) and the
 * staggered grid (tile_stagger): the tiled kernel and the per-pixel one
 * equal the twin to the bit on random layouts whose tiles favour at random,
 * and on the engine's own plan at 8K side by side (3 x 3 at 0.15, its 2 x 2
 * stagger and the whole pass: 14 tiles an eye; with tile_fine's 4 x 4, 30),
 * tiles that vote only where sure (FRAME_TILE_SURE) among them. */
Test(g_seg_frame_blend, blend_exact_favor)
{
    gf_seed("blend_exact_favor");
    static struct frame_tile lay[2][BLEND_MAX_LAYOUT];
    static const int sizes[][2] = { { 1, 1 }, { 63, 15 }, { 65, 17 }, { 129, 31 }, { 300, 200 } };
    static const int maxes[] = { 1, 5, 14, 17, 18 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
            int nt = blend_layout(lay[0], maxes[m], gf_int(1, 4), gf_int(1, 4), gf_int(0, 1),
                                  gf_int(0, 3), sizes[s][0], sizes[s][1]);
            for (int i = 0; i < nt; i++) {
                lay[0][i].favor = gf_int(0, CONFIG_TILE_FAVOR_MAX);
                lay[0][i].favor_floor = gf_int(0, 1) ? gf_unif(0.0f, 1.0f) : 0.0f;
                if (!(lay[0][i].edges & FRAME_TILE_FLOOR) && gf_int(0, 1))
                    lay[0][i].edges |= FRAME_TILE_SURE;
            }
            blend_exact(1, &sizes[s], &nt, lay, gf_int(1, 3), gf_int(1, 60), gf_int(1, 60));
        }
    int nt = blend_layout(lay[0], BLEND_MAX_LAYOUT, 8, 8, 1, 0, 333, 222);
    for (int i = 0; i < nt; i++) {
        lay[0][i].favor = gf_int(0, CONFIG_TILE_FAVOR_MAX);
        lay[0][i].favor_floor = gf_unif(0.0f, 0.3f);
    }
    blend_exact(1, (const int[][2]){ { 333, 222 } }, &nt, lay, 2, 32, 32);

    struct vr_config cfg;
    config_defaults(&cfg);
    cfg.tile_cols = cfg.tile_rows = 3;
    cfg.tile_overlap = 0.15;
    cfg.tile_min = 0.66;
    cfg.tile_stagger = 1;
    cfg.tile_favor = 1;
    cfg.tile_favor_floor = 0.05; /* the floor, as a profile would set it */
    static struct tile_plan plan;
    vr_err err = { 0, "" };
    cr_assert_eq(tile_plan_make(&cfg, SEG_LAYOUT_SBS, 8192, 4096, 4096, 2048, 256, 256, &plan,
                                &err), 0, "%s", err.msg);
    int n8k[2], eyes[2][2];
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(plan.eye[i].n, 3 * 3 + 2 * 2 + 1, "eye %d: %d tiles", i, plan.eye[i].n);
        n8k[i] = plan.eye[i].n;
        memcpy(lay[i], plan.eye[i].dst, n8k[i] * sizeof lay[i][0]);
        eyes[i][0] = plan.eye[i].work_w;
        eyes[i][1] = plan.eye[i].work_h;
    }
    blend_exact(2, (const int(*)[2])eyes, n8k, lay, 16, 256, 256);

    /* with the fine 4 x 4 grid too (tile_fine), 30 tiles an eye, so past
     * the tiled kernel's 17: the per-pixel kernel */
    cfg.tile_fine = 1;
    cr_assert_eq(tile_plan_make(&cfg, SEG_LAYOUT_SBS, 8192, 4096, 4096, 2048, 256, 256, &plan,
                                &err), 0, "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(plan.eye[i].n, 3 * 3 + 2 * 2 + 4 * 4 + 1, "eye %d: %d tiles", i,
                     plan.eye[i].n);
        n8k[i] = plan.eye[i].n;
        memcpy(lay[i], plan.eye[i].dst, n8k[i] * sizeof lay[i][0]);
    }
    blend_exact(2, (const int(*)[2])eyes, n8k, lay, 4, 256, 256);

    /* a 2 x 2 grid's fine 3 x 3 (FRAME_TILE_SURE) fits the tiled kernel:
     * 4 + 1 + 9 + 1 = 15 tiles an eye */
    cfg.tile_cols = cfg.tile_rows = 2;
    cr_assert_eq(tile_plan_make(&cfg, SEG_LAYOUT_SBS, 8192, 4096, 4096, 2048, 256, 256, &plan,
                                &err), 0, "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(plan.eye[i].n, 2 * 2 + 1 + 3 * 3 + 1, "eye %d: %d tiles", i, plan.eye[i].n);
        cr_assert(plan.eye[i].dst[5].edges & FRAME_TILE_SURE, "the fine grid's tiles are sure");
        n8k[i] = plan.eye[i].n;
        memcpy(lay[i], plan.eye[i].dst, n8k[i] * sizeof lay[i][0]);
    }
    blend_exact(2, (const int(*)[2])eyes, n8k, lay, 4, 256, 256);
}

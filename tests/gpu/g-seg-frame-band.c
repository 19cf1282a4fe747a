/*
 * g-seg-frame-band.c - the guided filter held to the edge band
 * (frame_guided_band_cuda, config guided_band) against its C twin, bit for
 * bit: work masks of flat blocks, steps and noise (so the band has edges,
 * ramps and flat parts), images smaller than the window, radii 0 to
 * CONFIG_GUIDED_BAND_MAX with window radii 0 to 8, batches of two eyes of different sizes, and the 8K
 * engine's call (two 512x512 eyes, 16 frames).
 */
#include "config.h"
#include "util-frame.h"

/* Flat blocks of random size and value, some with noise, some steps. */
static void band_mask(float *p, int w, int h)
{
    const int bw = gf_int(1, 40), bh = gf_int(1, 40);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint32_t cell = (uint32_t)(x / bw) * 2654435761u ^ (uint32_t)(y / bh) * 40503u;
            const float v = (float)(cell % 7) / 6.0f;
            p[(size_t)y * w + x] = cell % 3 == 0 ? v + gf_unif(-0.05f, 0.05f) : v;
        }
}

/* n frames of n_eyes eyes of sizes eyes[i] (w, h) in the work layout:
 * every bit of a and b against frame_guided_band_ref, eye by eye. */
static void band_exact(int n_eyes, const int (*eyes)[2], int n, int r, int rbox)
{
    struct frame_cu_plan pl;
    gf_work_plan(&pl, n_eyes, eyes);
    const size_t np = (size_t)n * pl.work_per_frame;
    float *p = malloc(np * sizeof *p), *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
    float *band = malloc((size_t)pl.max_work * sizeof *band);
    cr_assert(p && a && b && band);
    for (int f = 0; f < n; f++)
        for (int i = 0; i < n_eyes; i++)
            band_mask(p + f * pl.work_per_frame + pl.e[i].work_off, eyes[i][0], eyes[i][1]);
    for (size_t i = 0; i < np; i++) {
        a[i] = gf_unif(-1.0f, 1.0f);
        b[i] = gf_unif(0.0f, 1.0f);
    }
    float *dp = gf_dev_copy(p, np * sizeof *p), *da = gf_dev_copy(a, np * sizeof *a);
    float *db = gf_dev_copy(b, np * sizeof *b), *ds = gf_dev_poisoned(np);
    for (int f = 0; f < n; f++)
        for (int i = 0; i < n_eyes; i++) {
            const size_t o = f * pl.work_per_frame + pl.e[i].work_off;
            frame_guided_band_ref(p + o, eyes[i][0], eyes[i][1], r, rbox, a + o, b + o, band);
        }
    vr_err err = { 0, "" };
    int rc = n_eyes == 1 && n == 1
             ? frame_guided_band_cuda(dp, eyes[0][0], eyes[0][1], r, rbox, da, db, ds, 0, &err)
             : frame_guided_band_batch_cuda(dp, n, &pl, r, rbox, da, db, ds, 0, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    size_t fa = 0, fb = 0;
    float ga = 0.0f, gb = 0.0f;
    const size_t ba = gf_dev_bits_diff(da, a, np, &fa, &ga);
    const size_t bb = gf_dev_bits_diff(db, b, np, &fb, &gb);
    cr_expect(ba == 0 && bb == 0,
              "%d frames, %d eyes, eye 0 %dx%d, r=%d, rbox=%d: %zu a differ (first [%zu] %a, "
              "want %a), %zu b (first [%zu] %a, want %a)",
              n, n_eyes, eyes[0][0], eyes[0][1], r, rbox, ba, fa, ga, a[fa], bb, fb, gb, b[fb]);
    cudaFree(dp);
    cudaFree(da);
    cudaFree(db);
    cudaFree(ds);
    free(p);
    free(a);
    free(b);
    free(band);
}

Test(g_seg_frame_band, band_exact)
{
    gf_seed("band_exact");
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 3, 5 },
                                    { 33, 47 }, { 129, 31 }, { 512, 512 } };
    static const int radii[] = { 0, 1, 2, 3, 8, CONFIG_GUIDED_BAND_MAX };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof radii / sizeof radii[0]; k++)
            band_exact(1, &sizes[s], 1, radii[k], gf_int(0, 8));
    static const int pairs[][2][2] = { { { 61, 37 }, { 45, 70 } }, { { 7, 100 }, { 100, 7 } } };
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++)
        band_exact(2, pairs[c], 3, gf_int(1, 4), gf_int(1, 8));
    /* the engine's call at 8K side by side, balanced's work size */
    band_exact(2, (const int[][2]){ { 512, 512 }, { 512, 512 } }, 16, 1, 4);
}

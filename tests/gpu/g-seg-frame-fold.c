/*
 * g-seg-frame-fold.c - the preprocess that also writes the guide's luma
 * (frame_preprocess_fold_batch_cuda) against the two kernels it replaces,
 * bit for bit: the balanced profile's plan of an 8K side-by-side frame
 * (each eye's whole pass in 16x16 boxes, the guide at 512x512), two fresh
 * random frames a call, NV12 in both ranges (the word path), P010 and
 * YUV420P (the per-pixel path), and a real picture in NV12. Outputs are
 * poisoned with NaN first, so an element the fold leaves unwritten fails
 * (the two references write every element: g-seg-frame-preprocess.c checks
 * them against their C twins). Also which plans frame_luma_folds accepts.
 */
#include "util-frame.h"

#include "config.h"
#include "paths.h"
#include "tiles.h"

#define FOLD_M 256 /* the model's input */

/* The device view of cfg's plan of a w x h side-by-side frame (mask at
 * half size) and its tiles' rects (host). */
static void sbs_plan(const char *profile, int w, int h, struct frame_cu_plan *p,
                     struct frame_rect *rects)
{
    vr_err err = { 0, "" };
    struct vr_config cfg;
    struct tile_plan tp;
    cr_assert_eq(config_load_profile(&cfg, profile, &err), 0, "%s", err.msg);
    cr_assert_eq(tile_plan_make(&cfg, SEG_LAYOUT_SBS, w, h, w / 2, h / 2, FOLD_M, FOLD_M, &tp,
                                &err), 0, "%s", err.msg);
    frame_cu_plan_make(&tp, p);
    for (int e = 0; e < p->n_eyes; e++)
        for (int t = 0; t < tp.eye[e].n; t++)
            rects[p->e[e].tile0 + t] = tp.eye[e].src[t];
}

/* Case c's two frames: fresh random bytes, or (c == 4) a real picture,
 * tests/data/people.jpg in each eye, shifted 3 pixels in the second. */
static const int fold_fmts[] = { SEG_PIX_NV12, SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P,
                                 SEG_PIX_NV12 };

static void fold_frames(int c, int w, int h, struct gf_frame g[2])
{
    struct vio_image *img = NULL;
    uint8_t *rgb = NULL;
    if (c == 4) {
        char path[4096];
        vr_err err = { 0, "" };
        cr_assert_eq(vr_data_path("tests/data/people.jpg", path, sizeof path), 0);
        cr_assert_eq(vio_image_read(path, &img, &err), 0, "%s", err.msg);
        cr_assert((rgb = malloc((size_t)w * h * 3)));
    }
    for (int i = 0; i < 2; i++) {
        gf_frame_alloc(&g[i], fold_fmts[c], w, h, c == 1);
        if (img) {
            gf_clip_frame(img, i, w, h, SEG_LAYOUT_SBS, rgb);
            gf_frame_from_rgb(&g[i], rgb, w * 3);
        } else {
            gf_frame_random(&g[i]);
        }
        gf_frame_upload(&g[i]);
    }
    free(rgb);
    vio_image_free(&img);
}

Test(g_seg_frame_fold, preprocess_fold_luma_8k, .timeout = 240)
{
    gf_seed("preprocess_fold_luma_8k");
    const int w = 8192, h = 4096, n = 2;
    struct frame_cu_plan p;
    struct frame_rect rects[FRAME_CU_MAX_EYES * TILE_MAX_PER_EYE];
    sbs_plan("balanced", w, h, &p, rects);
    cr_assert_eq(frame_luma_folds(&p, rects, FOLD_M, FOLD_M), 1,
                 "the balanced plan of an 8K SBS frame should fold the guide's luma");
    const size_t tiles = (size_t)n * p.tiles_per_frame * FOLD_M * FOLD_M * 3;
    const size_t lumas = (size_t)n * p.work_per_frame;
    struct frame_rect *d_rects = gf_dev_copy(rects, p.tiles_per_frame * sizeof *rects);
    for (int c = 0; c < 5; c++) {
        struct gf_frame g[2];
        fold_frames(c, w, h, g);
        struct frame_batch fb;
        gf_batch(&fb, g, n);
        float *d_want = gf_dev_poisoned(tiles), *d_got = gf_dev_poisoned(tiles);
        float *d_wluma = gf_dev_poisoned(lumas), *d_gluma = gf_dev_poisoned(lumas);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_preprocess_batch_cuda(&fb, d_rects, p.tiles_per_frame, FOLD_M,
                                                 FOLD_M, d_want, 0, &err), 0, "%s", err.msg);
        cr_assert_eq(frame_luma_batch_cuda(&fb, &p, d_wluma, 0, &err), 0, "%s", err.msg);
        cr_assert_eq(frame_preprocess_fold_batch_cuda(&fb, d_rects, &p, FOLD_M, FOLD_M, d_got,
                                                      d_gluma, 0, &err), 0, "%s", err.msg);
        float *want = gf_dev_floats(d_want, tiles), *wl = gf_dev_floats(d_wluma, lumas);
        size_t ft = 0, fl = 0;
        float gt = 0.0f, glv = 0.0f;
        cr_expect_eq(gf_dev_bits_diff(d_got, want, tiles, &ft, &gt), 0,
                     "case %d: tile floats differ, the first %zu: got %.9g, want %.9g", c, ft,
                     gt, want[ft]);
        cr_expect_eq(gf_dev_bits_diff(d_gluma, wl, lumas, &fl, &glv), 0,
                     "case %d: lumas differ, the first %zu: got %.9g, want %.9g", c, fl, glv,
                     wl[fl]);
        free(want);
        free(wl);
        cudaFree(d_want);
        cudaFree(d_got);
        cudaFree(d_wluma);
        cudaFree(d_gluma);
        for (int i = 0; i < n; i++)
            gf_frame_free(&g[i]);
    }
    cudaFree(d_rects);
}

/* Plans whose whole pass is not 16-pixel boxes onto a guide twice the
 * tile keep the luma kernel. */
Test(g_seg_frame_fold, luma_folds_only_where_exact)
{
    struct frame_cu_plan p;
    struct frame_rect rects[FRAME_CU_MAX_EYES * TILE_MAX_PER_EYE];
    sbs_plan("balanced", 3840, 1920, &p, rects); /* 4K: 7.5-pixel boxes */
    cr_expect_eq(frame_luma_folds(&p, rects, FOLD_M, FOLD_M), 0);
    sbs_plan("balanced", 8192, 4096, &p, rects);
    cr_expect_eq(frame_luma_folds(&p, rects, FOLD_M, FOLD_M), 1);
    cr_expect_eq(frame_luma_folds(&p, rects, FOLD_M / 2, FOLD_M / 2), 0); /* 32-pixel boxes */
    p.e[1].work_w = 500; /* a guide not twice the tile */
    cr_expect_eq(frame_luma_folds(&p, rects, FOLD_M, FOLD_M), 0);
}

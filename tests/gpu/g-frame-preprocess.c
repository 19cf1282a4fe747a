/*
 * g-frame-preprocess.c - the CUDA preprocess and luma kernels against their
 * C twins (frame_ref.h) on fresh random frames of every pixel format and
 * range, odd sizes and padded rows, with rects that take both resampling
 * rules (area when shrinking, bilinear otherwise). Outputs are poisoned with
 * NaN first, so an unwritten element fails.
 */
#include "g-frame-util.h"

#define PP_TOL 2e-5 /* float rounding: reciprocal vs division, FMA */

static const int fmts[] = { SEG_PIX_RGB24, SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P };
static const char *const fmt_names[] = { "rgb24", "nv12", "p010", "yuv420p" };

/* A random rect inside a w x h frame, sized to exercise `area` or not for a
 * mw x mh output. */
static struct frame_rect random_rect(int w, int h, int mw, int mh, int area)
{
    struct frame_rect r;
    if (area) {
        r.w = gf_int(2 * mw, w);
        r.h = gf_int(2 * mh, h);
    } else {
        r.w = gf_int(1, mw + mw / 3);
        r.h = gf_int(1, mh + mh / 3);
    }
    r.x = gf_int(0, w - r.w);
    r.y = gf_int(0, h - r.h);
    return r;
}

Test(gpu_frame, preprocess_all_formats)
{
    gf_seed("preprocess");
    const int mw = 64, mh = 48, n = 6;
    for (int fi = 0; fi < 4; fi++)
        for (int full = 0; full <= 1; full++) {
            int w = gf_int(300, 700) | 1, h = gf_int(200, 500) | 1; /* odd: chroma edges */
            struct gf_frame g;
            gf_frame_alloc(&g, fmts[fi], w, h, full);
            gf_frame_random(&g);
            gf_frame_upload(&g);
            struct frame_rect rects[6];
            for (int i = 0; i < n; i++)
                rects[i] = random_rect(w, h, mw, mh, i % 2 == 0);
            rects[n - 1] = (struct frame_rect){ 0, 0, w, h }; /* the whole-eye pass */
            size_t cnt = (size_t)n * mw * mh * 3;
            float *want = malloc(cnt * sizeof *want);
            cr_assert(want);
            frame_preprocess_ref(&g.host, rects, n, mw, mh, want);
            float *d_out = gf_dev_poisoned(cnt);
            struct frame_rect *d_rects = gf_dev_copy(rects, sizeof rects);
            vr_err err = { 0, "" };
            cr_assert_eq(frame_preprocess_cuda(&g.dev, d_rects, n, mw, mh, d_out, 0, &err), 0,
                         "%s", err.msg);
            size_t at = 0;
            double d = gf_dev_max_abs(d_out, want, cnt, &at);
            cr_expect(d <= PP_TOL, "%s %s range %dx%d: max abs %g at %zu (tile %zu)",
                      fmt_names[fi], full ? "full" : "limited", w, h, d, at,
                      at / ((size_t)mw * mh * 3));
            cudaFree(d_out);
            cudaFree(d_rects);
            free(want);
            gf_frame_free(&g);
        }
}

Test(gpu_frame, luma_all_formats)
{
    gf_seed("luma");
    for (int fi = 0; fi < 4; fi++)
        for (int rule = 0; rule < 3; rule++) {
            int w = gf_int(300, 900), h = gf_int(200, 600);
            struct gf_frame g;
            gf_frame_alloc(&g, fmts[fi], w, h, gf_int(0, 1));
            gf_frame_random(&g);
            gf_frame_upload(&g);
            struct frame_rect r = { gf_int(0, w / 4), gf_int(0, h / 4), 0, 0 };
            r.w = gf_int(w / 2, w - r.x);
            r.h = gf_int(h / 2, h - r.y);
            /* rule 0: area (shrink), 1: bilinear (enlarge), 2: same size */
            int dw = rule == 0 ? r.w / 3 : rule == 1 ? r.w + 17 : r.w;
            int dh = rule == 0 ? r.h / 4 : rule == 1 ? r.h * 5 / 4 : r.h;
            size_t cnt = (size_t)dw * dh;
            float *want = malloc(cnt * sizeof *want);
            cr_assert(want);
            frame_luma_ref(&g.host, r, dw, dh, want);
            float *d_out = gf_dev_poisoned(cnt);
            vr_err err = { 0, "" };
            cr_assert_eq(frame_luma_cuda(&g.dev, r, dw, dh, d_out, 0, &err), 0, "%s", err.msg);
            double d = gf_dev_max_abs(d_out, want, cnt, NULL);
            cr_expect(d <= PP_TOL, "%s rule %d: max abs %g", fmt_names[fi], rule, d);
            cudaFree(d_out);
            free(want);
            gf_frame_free(&g);
        }
}

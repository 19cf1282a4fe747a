/*
 * g-frame-guided.c - the CUDA fast guided filter against its C twins: the
 * low-resolution coefficients (box means, a, b) on random guide and mask,
 * and the full-resolution apply (a, b upsampled, luma of the frame's rect
 * resampled by each rule) and the plain bilinear upsample, in u8. Outputs
 * poisoned; u8 results may differ by one step where a value sits on a
 * rounding boundary, and only at a few pixels.
 */
#include "g-frame-util.h"

#define COEF_TOL 5e-5

Test(gpu_frame, guided_coeffs)
{
    gf_seed("guided_coeffs");
    for (int rep = 0; rep < 3; rep++) {
        int w = gf_int(50, 600), h = gf_int(50, 600), r = gf_int(1, 8);
        float eps = gf_unif(1e-4f, 1e-2f);
        size_t np = (size_t)w * h;
        float *I = malloc(np * sizeof *I), *p = malloc(np * sizeof *p);
        float *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
        float *scr = malloc(FRAME_GUIDED_SCRATCH(w, h) * sizeof *scr);
        cr_assert(I && p && a && b && scr);
        /* smooth-ish guide with noise; mask correlated with it */
        for (size_t i = 0; i < np; i++) {
            I[i] = 0.5f + 0.4f * sinf((float)(i % w) * 0.05f) * cosf((float)(i / w) * 0.03f)
                   + gf_unif(-0.1f, 0.1f);
            p[i] = I[i] > 0.5f ? gf_unif(0.7f, 1.0f) : gf_unif(0.0f, 0.3f);
        }
        frame_guided_coeffs_ref(I, p, w, h, r, eps, a, b, scr);
        float *dI = gf_dev_copy(I, np * sizeof *I), *dp = gf_dev_copy(p, np * sizeof *p);
        float *da = gf_dev_poisoned(np), *db = gf_dev_poisoned(np);
        float *ds = gf_dev_poisoned(FRAME_GUIDED_SCRATCH(w, h));
        vr_err err = { 0, "" };
        cr_assert_eq(frame_guided_coeffs_cuda(dI, dp, w, h, r, eps, da, db, ds, 0, &err), 0,
                     "%s", err.msg);
        double ea = gf_dev_max_abs(da, a, np, NULL), eb = gf_dev_max_abs(db, b, np, NULL);
        cr_expect(ea <= COEF_TOL && eb <= COEF_TOL, "%dx%d r=%d eps=%g: a off by %g, b by %g",
                  w, h, r, eps, ea, eb);
        cudaFree(dI);
        cudaFree(dp);
        cudaFree(da);
        cudaFree(db);
        cudaFree(ds);
        free(I);
        free(p);
        free(a);
        free(b);
        free(scr);
    }
}

/* Compares u8 images: at most 1 step anywhere, and at most 0.1% of pixels
 * off by that step. */
static void expect_u8(const uint8_t *got, const uint8_t *want, int w, int h, int ls,
                      const char *what)
{
    size_t off = 0;
    int worst = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int d = abs((int)got[(size_t)y * ls + x] - (int)want[(size_t)y * ls + x]);
            if (d) {
                off++;
                worst = d > worst ? d : worst;
            }
        }
    cr_expect(worst <= 1 && off * 1000 <= (size_t)w * h,
              "%s: %zu of %d pixels differ, by up to %d", what, off, w * h, worst);
}

Test(gpu_frame, guided_apply_and_bilinear)
{
    gf_seed("guided_apply");
    static const int fmts[] = { SEG_PIX_RGB24, SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P };
    for (int fi = 0; fi < 4; fi++)
        for (int rule = 0; rule < 3; rule++) {
            int fw = gf_int(400, 1000), fh = gf_int(300, 800);
            struct gf_frame g;
            gf_frame_alloc(&g, fmts[fi], fw, fh, gf_int(0, 1));
            gf_frame_random(&g);
            gf_frame_upload(&g);
            struct frame_rect rect = { gf_int(0, fw / 3), gf_int(0, fh / 3), 0, 0 };
            rect.w = gf_int(fw / 2, fw - rect.x);
            rect.h = gf_int(fh / 2, fh - rect.y);
            /* rule 0: output half the rect (area), 1: 0.8 (bilinear), 2: equal (direct) */
            int dw = rule == 0 ? rect.w / 2 : rule == 1 ? rect.w * 4 / 5 : rect.w;
            int dh = rule == 0 ? rect.h / 2 : rule == 1 ? rect.h * 4 / 5 : rect.h;
            int w = gf_int(20, 200), h = gf_int(20, 200);
            size_t np = (size_t)w * h;
            float *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
            cr_assert(a && b);
            for (size_t i = 0; i < np; i++) {
                a[i] = gf_unif(-1.0f, 2.0f);
                b[i] = gf_unif(-0.5f, 0.8f);
            }
            int ls = dw + gf_int(0, 3) * 16;
            uint8_t *want = malloc((size_t)ls * dh), *got = malloc((size_t)ls * dh);
            cr_assert(want && got);
            memset(want, 0x5a, (size_t)ls * dh);
            frame_guided_apply_ref(a, b, w, h, &g.host, rect, want, ls, dw, dh);
            float *da = gf_dev_copy(a, np * sizeof *a), *db = gf_dev_copy(b, np * sizeof *b);
            uint8_t *dd = gf_dev_copy(want, (size_t)ls * dh); /* padding bytes as the ref's */
            GF_CUDA(cudaMemset2D(dd, ls, 0xa5, dw, dh));      /* poison the pixels */
            vr_err err = { 0, "" };
            cr_assert_eq(frame_guided_apply_cuda(da, db, w, h, &g.dev, rect, dd, ls, dw, dh, 0,
                                                 &err), 0, "%s", err.msg);
            GF_CUDA(cudaMemcpy(got, dd, (size_t)ls * dh, cudaMemcpyDeviceToHost));
            char what[64];
            snprintf(what, sizeof what, "apply fmt %d rule %d", fmts[fi], rule);
            expect_u8(got, want, ls, dh, ls, what); /* padding too: must be untouched */

            /* bilinear upsample of a (clamped by frame_to_u8) */
            frame_upsample_bilinear_ref(b, w, h, want, ls, dw, dh);
            GF_CUDA(cudaMemset2D(dd, ls, 0xa5, dw, dh));
            cr_assert_eq(frame_upsample_bilinear_cuda(db, w, h, dd, ls, dw, dh, 0, &err), 0,
                         "%s", err.msg);
            GF_CUDA(cudaMemcpy(got, dd, (size_t)ls * dh, cudaMemcpyDeviceToHost));
            snprintf(what, sizeof what, "bilinear %dx%d -> %dx%d", w, h, dw, dh);
            expect_u8(got, want, ls, dh, ls, what);
            cudaFree(da);
            cudaFree(db);
            cudaFree(dd);
            free(a);
            free(b);
            free(want);
            free(got);
            gf_frame_free(&g);
        }
}

/*
 * g-seg-frame-guided.c - the CUDA fast guided filter against its C twins: the
 * low-resolution coefficients (box means, a, b) on random guide and mask,
 * within a tolerance and, on edge cases and batches, bit for bit; the
 * full-resolution apply (a, b upsampled, luma of the frame's rect
 * resampled by each rule) and the plain bilinear upsample, in u8. Outputs
 * poisoned; u8 results may differ by one step where a value sits on a
 * rounding boundary, and only at a few pixels. The batched NV12 area
 * refine of 8K side-by-side frames, and refines at upsampling ratios 1 to 8,
 * are also checked bit for bit against a C copy of the kernel's own float
 * operations (word and byte luma paths, window and general tap paths).
 */
#include "util-frame.h"

#define COEF_TOL 5e-5

Test(g_seg_frame_guided, guided_coeffs)
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

/* ---- guided coefficients, bit for bit ---- */

/* Random guide and mask for n floats, the mask correlated with the guide. */
static void coeffs_inputs(float *I, float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        I[i] = gf_unif(0.0f, 1.0f);
        p[i] = I[i] > 0.5f ? gf_unif(0.7f, 1.0f) : gf_unif(0.0f, 0.3f);
    }
}

/* n frames of n_eyes eyes of sizes eyes[i] (w, h) in the work layout, each
 * image against frame_guided_coeffs_ref: every bit of a and b. */
static void coeffs_exact(int n_eyes, const int (*eyes)[2], int n, int r)
{
    struct frame_cu_plan pl;
    gf_work_plan(&pl, n_eyes, eyes);
    const size_t np = (size_t)n * pl.work_per_frame;
    const float eps = gf_unif(1e-4f, 1e-2f);
    float *I = malloc(np * sizeof *I), *p = malloc(np * sizeof *p);
    float *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
    float *scr = malloc(FRAME_GUIDED_SCRATCH(pl.max_work, 1) * sizeof *scr);
    cr_assert(I && p && a && b && scr);
    coeffs_inputs(I, p, np);
    for (int f = 0; f < n; f++)
        for (int i = 0; i < n_eyes; i++) {
            const size_t o = f * pl.work_per_frame + pl.e[i].work_off;
            frame_guided_coeffs_ref(I + o, p + o, eyes[i][0], eyes[i][1], r, eps, a + o, b + o,
                                    scr);
        }
    float *dI = gf_dev_copy(I, np * sizeof *I), *dp = gf_dev_copy(p, np * sizeof *p);
    float *da = gf_dev_poisoned(np), *db = gf_dev_poisoned(np);
    float *ds = gf_dev_poisoned(FRAME_GUIDED_SCRATCH(np, 1));
    vr_err err = { 0, "" };
    int rc = n_eyes == 1 && n == 1
                 ? frame_guided_coeffs_cuda(dI, dp, eyes[0][0], eyes[0][1], r, eps, da, db, ds,
                                            0, &err)
                 : frame_guided_coeffs_batch_cuda(dI, dp, n, &pl, r, eps, da, db, ds, 0, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    size_t fa = 0, fb = 0;
    float ga = 0.0f, gb = 0.0f;
    const size_t ba = gf_dev_bits_diff(da, a, np, &fa, &ga), bb = gf_dev_bits_diff(db, b, np, &fb, &gb);
    cr_expect(ba == 0 && bb == 0,
              "%d frames, %d eyes, eye 0 %dx%d, r=%d: %zu a differ (first [%zu] %a, want %a), "
              "%zu b (first [%zu] %a, want %a)",
              n, n_eyes, eyes[0][0], eyes[0][1], r, ba, fa, ga, a[fa], bb, fb, gb, b[fb]);
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

/* The fused two-pass kernels (r <= 16) and the four-pass path (r > 16)
 * equal the C twin to the bit: tiles cut by the image edge (sizes not
 * multiples of 32), images smaller than the window (w or h < 2r + 1, down
 * to 1 x 1), radii at the ends of the fused kernels' cases (0, 1: no
 * shared middle rows; 16: over 48 KB of shared memory) and past them;
 * batches of several frames with two eyes of different sizes. */
Test(g_seg_frame_guided, guided_coeffs_exact)
{
    gf_seed("guided_coeffs_exact");
    static const int sizes[][2] = { { 1, 1 },   { 1, 37 },  { 37, 1 },  { 3, 5 },
                                    { 7, 7 },   { 32, 32 }, { 33, 47 }, { 100, 65 },
                                    { 129, 31 }, { 512, 512 } };
    static const int radii[] = { 0, 1, 2, 3, 4, 7, 8, 16, 17, 24 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof radii / sizeof radii[0]; k++)
            coeffs_exact(1, &sizes[s], 1, radii[k]);
    for (int rep = 0; rep < 4; rep++)
        coeffs_exact(1, (const int[][2]){ { gf_int(1, 300), gf_int(1, 300) } }, 1, gf_int(0, 20));
    static const int pairs[][2][2] = { { { 61, 37 }, { 45, 70 } },
                                       { { 512, 512 }, { 300, 280 } },
                                       { { 7, 100 }, { 100, 7 } } };
    static const int batch_radii[] = { 0, 1, 4, 8, 16, 17 };
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++)
        for (size_t k = 0; k < sizeof batch_radii / sizeof batch_radii[0]; k++)
            coeffs_exact(2, pairs[c], 3, batch_radii[k]);
    coeffs_exact(1, (const int[][2]){ { 200, 150 } }, 5, 4);
    /* the engine's call at 8K side by side, balanced profile */
    coeffs_exact(2, (const int[][2]){ { 512, 512 }, { 512, 512 } }, 16, 4);
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

Test(g_seg_frame_guided, guided_apply_and_bilinear)
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

/* ---- NV12 area refine of a batch: bit for bit ---- */

/* bilin_taps of frame_sample_ref.c (fcu_taps: the same float steps). */
static void exact_taps(int o, int r, int d, int *i0, int *i1, float *t)
{
    float f = ((float)o + 0.5f) * (float)r / (float)d - 0.5f;
    f = f < 0.0f ? 0.0f : f;
    f = f > (float)(r - 1) ? (float)(r - 1) : f;
    const int i = (int)f;
    *i0 = i;
    *i1 = i + 1 < r ? i + 1 : r - 1;
    *t = f - (float)i;
}

static float exact_lerp(const float *r0, const float *r1, int xa, int xb, float tx, float ty)
{
    const float t = r0[xa] + (r0[xb] - r0[xa]) * tx, b = r1[xa] + (r1[xb] - r1[xa]) * tx;
    return t + (b - t) * ty;
}

/* Output pixel (ox, oy) of eye e of frame f: k_refine<NV12, guided>'s float
 * operations on the area path, so the byte must match the GPU's exactly.
 * a, b: the eye's work images of this frame. */
static uint8_t refine_exact(const float *a, const float *b, const struct frame_cu_eye *e,
                            const struct seg_frame *f, int ox, int oy)
{
    int xa, xb, ya, yb, x0, x1, y0, y1;
    float tx, ty;
    exact_taps(ox, e->work_w, e->out.w, &xa, &xb, &tx);
    exact_taps(oy, e->work_h, e->out.h, &ya, &yb, &ty);
    const size_t w = e->work_w;
    const float av = exact_lerp(a + ya * w, a + yb * w, xa, xb, tx, ty);
    const float bv = exact_lerp(b + ya * w, b + yb * w, xa, xb, tx, ty);
    gf_area_span(ox, e->eye.w, e->out.w, &x0, &x1);
    gf_area_span(oy, e->eye.h, e->out.h, &y0, &y1);
    const float I = gf_nv12_luma_mean(f, e->eye.x + x0, e->eye.x + x1, e->eye.y + y0,
                                      e->eye.y + y1);
    return frame_to_u8(av * I + bv);
}

/* Two 8K side-by-side NV12 frames refined in one call against
 * refine_exact: the product case (2:1 boxes side by side, aligned: the
 * word path), then eyes the byte loop takes (a box start off the word
 * grid; a 1.875 shrink, boxes of 1 and 2), with odd output widths and an
 * output at an odd column. Both ranges. */
Test(g_seg_frame_guided, refine_nv12_8k_exact)
{
    gf_seed("refine_nv12_8k_exact");
    const int w = 8192, h = 4096, nf = 2, mw = 4096, mh = 2048, ls = mw + 64;
    static const struct {
        struct frame_rect eye[2], out[2];
        int ww, wh;
    } cases[] = {
        { { { 0, 0, 4096, 4096 }, { 4096, 0, 4096, 4096 } },
          { { 0, 0, 2048, 2048 }, { 2048, 0, 2048, 2048 } }, 512, 512 },
        { { { 2, 0, 4094, 4096 }, { 4100, 3, 3840, 4090 } },
          { { 0, 0, 2047, 2048 }, { 2047, 0, 2048, 2045 } }, 300, 280 },
    };
    struct gf_frame g[2];
    for (int i = 0; i < nf; i++) {
        gf_frame_alloc(&g[i], SEG_PIX_NV12, w, h, 0);
        gf_frame_random(&g[i]);
        gf_frame_upload(&g[i]);
    }
    uint8_t *got = malloc((size_t)ls * mh), *d_mask[2];
    cr_assert(got);
    for (int i = 0; i < nf; i++)
        GF_CUDA(cudaMalloc((void **)&d_mask[i], (size_t)ls * mh));
    for (int c = 0; c < 2; c++)
        for (int full = 0; full <= 1; full++) {
            struct frame_cu_plan p;
            gf_plan(&p, 2, cases[c].eye, cases[c].out, cases[c].ww, cases[c].wh);
            for (int i = 0; i < nf; i++)
                g[i].host.full_range = g[i].dev.full_range = full;
            struct frame_batch fb;
            gf_batch(&fb, g, nf);
            const size_t nw = p.work_per_frame * nf;
            float *a = malloc(nw * sizeof *a), *b = malloc(nw * sizeof *b);
            cr_assert(a && b);
            for (size_t i = 0; i < nw; i++) {
                a[i] = gf_unif(-1.0f, 2.0f);
                b[i] = gf_unif(-0.5f, 0.8f);
            }
            float *da = gf_dev_copy(a, nw * sizeof *a), *db = gf_dev_copy(b, nw * sizeof *b);
            struct frame_masks m;
            for (int i = 0; i < nf; i++) {
                GF_CUDA(cudaMemset(d_mask[i], 0xa5, (size_t)ls * mh));
                m.data[i] = d_mask[i];
                m.linesize[i] = ls;
            }
            vr_err err = { 0, "" };
            cr_assert_eq(frame_refine_batch_cuda(da, db, 1, &fb, &p, &m, 0, &err), 0, "%s",
                         err.msg);
            GF_CUDA(cudaDeviceSynchronize());
            size_t bad = 0;
            for (int fr = 0; fr < nf; fr++) {
                GF_CUDA(cudaMemcpy(got, d_mask[fr], (size_t)ls * mh, cudaMemcpyDeviceToHost));
                for (int i = 0; i < 2; i++) {
                    const struct frame_cu_eye *e = &p.e[i];
                    const size_t off = fr * p.work_per_frame + e->work_off;
                    for (int oy = 0; oy < e->out.h; oy++)
                        for (int ox = 0; ox < e->out.w; ox++) {
                            const uint8_t want = refine_exact(a + off, b + off, e, &g[fr].host,
                                                              ox, oy);
                            const uint8_t o =
                                got[(size_t)(e->out.y + oy) * ls + e->out.x + ox];
                            if (o != want && bad++ == 0)
                                cr_expect(0, "case %d %s range frame %d eye %d pixel (%d,%d): "
                                          "got %d, want %d", c, full ? "full" : "limited", fr,
                                          i, ox, oy, o, want);
                        }
                }
            }
            cr_expect_eq(bad, 0, "case %d %s range: %zu pixels differ", c,
                         full ? "full" : "limited", bad);
            cudaFree(da);
            cudaFree(db);
            free(a);
            free(b);
        }
    for (int i = 0; i < nf; i++) {
        cudaFree(d_mask[i]);
        gf_frame_free(&g[i]);
    }
    free(got);
}

/* ---- refine taps at any upsampling: bit for bit ---- */

/* Eye 0 of output dw0 x dh0 at the frame's column 0 and the output's
 * column 0 (a 2:1 area shrink: the word luma path), eye 1 at an odd frame
 * column and right after eye 0 in the output (a byte luma path; an odd
 * output column when dw0 is odd). Work widths ww0, ww1. */
static void ratio_plan(struct frame_cu_plan *p, int dw0, int dh0, int ww0, int wh0, int dw1,
                       int dh1, int ww1, int wh1)
{
    const struct frame_rect eye[2] = { { 0, 0, 2 * dw0, 2 * dh0 },
                                       { 2 * dw0 + 3, 1, 2 * dw1 + 1, 2 * dh1 + 1 } };
    const struct frame_rect out[2] = { { 0, 0, dw0, dh0 }, { dw0, 1, dw1, dh1 } };
    const int ww[2] = { ww0, ww1 }, wh[2] = { wh0, wh1 };
    memset(p, 0, sizeof *p);
    p->n_eyes = 2;
    for (int i = 0; i < 2; i++) {
        p->e[i].eye = eye[i];
        p->e[i].out = out[i];
        p->e[i].work_w = ww[i];
        p->e[i].work_h = wh[i];
        p->e[i].work_off = p->work_per_frame;
        p->work_per_frame += (size_t)ww[i] * wh[i];
        if (ww[i] * wh[i] > p->max_work)
            p->max_work = ww[i] * wh[i];
        if (out[i].w * out[i].h > p->max_out)
            p->max_out = out[i].w * out[i].h;
    }
}

/* Upsampling ratios 1 to 8, whole (a width dw = ratio * ww exactly: the
 * kernel's column-window path at 2, 4, 8) and not (its general path, and
 * warps whose quads differ), output widths a multiple of 4 and not, tiny
 * work widths, eyes at odd frame and output columns: the guided refine
 * (area luma) and the bilinear one of two NV12 frames in one call, each
 * byte against a C copy of the kernel's float operations; bytes outside
 * the eyes' rects untouched. */
Test(g_seg_frame_guided, refine_ratios_exact)
{
    gf_seed("refine_ratios_exact");
    enum { NF = 2 };
    const int fw = 1664, fh = 256;
    static const float ratios[] = { 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.7f,
                                    4.0f, 4.25f, 5.0f, 6.0f, 7.3f, 8.0f };
    struct gf_frame g[NF];
    for (int i = 0; i < NF; i++) {
        gf_frame_alloc(&g[i], SEG_PIX_NV12, fw, fh, gf_int(0, 1));
        gf_frame_random(&g[i]);
        gf_frame_upload(&g[i]);
    }
    for (int i = 1; i < NF; i++)
        g[i].host.full_range = g[i].dev.full_range = g[0].host.full_range;
    struct frame_batch fb;
    gf_batch(&fb, g, NF);
    const int ls = 864, mh = 128;
    uint8_t *got = malloc((size_t)ls * mh), *d_mask[NF];
    cr_assert(got);
    for (int i = 0; i < NF; i++)
        GF_CUDA(cudaMalloc((void **)&d_mask[i], (size_t)ls * mh));
    for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++)
        for (int odd = 0; odd <= 1; odd++) {
            const float r = ratios[ri];
            const int ww0 = gf_int(8, 48), ww1 = odd ? gf_int(1, 4) : gf_int(8, 48);
            const int dw0 = (int)(ww0 * r) + (odd ? gf_int(1, 3) : 0);
            const int dw1 = (int)(ww1 * r) + (odd ? gf_int(1, 3) : 0);
            const int dh0 = gf_int(8, 60), dh1 = gf_int(8, 60);
            struct frame_cu_plan p;
            ratio_plan(&p, dw0, dh0, ww0, gf_int(1, 12), dw1, dh1, ww1, gf_int(1, 12));
            cr_assert(dw0 + dw1 <= ls && 2 * dw0 + 2 * dw1 + 4 <= fw, "ratio %g: too wide", r);
            const size_t nw = p.work_per_frame * NF;
            float *a = malloc(nw * sizeof *a), *b = malloc(nw * sizeof *b);
            cr_assert(a && b);
            for (size_t i = 0; i < nw; i++) {
                a[i] = gf_unif(-1.0f, 2.0f);
                b[i] = gf_unif(-0.5f, 0.8f);
            }
            float *da = gf_dev_copy(a, nw * sizeof *a), *db = gf_dev_copy(b, nw * sizeof *b);
            for (int guided = 0; guided <= 1; guided++) {
                struct frame_masks m;
                for (int i = 0; i < NF; i++) {
                    GF_CUDA(cudaMemset(d_mask[i], 0xa5, (size_t)ls * mh));
                    m.data[i] = d_mask[i];
                    m.linesize[i] = ls;
                }
                vr_err err = { 0, "" };
                cr_assert_eq(frame_refine_batch_cuda(da, guided ? db : da, guided, &fb, &p, &m,
                                                     0, &err), 0, "%s", err.msg);
                GF_CUDA(cudaDeviceSynchronize());
                size_t bad = 0;
                for (int fr = 0; fr < NF; fr++) {
                    GF_CUDA(cudaMemcpy(got, d_mask[fr], (size_t)ls * mh,
                                       cudaMemcpyDeviceToHost));
                    for (int y = 0; y < mh; y++)
                        for (int x = 0; x < ls; x++) {
                            uint8_t want = 0xa5;
                            for (int i = 0; i < 2; i++) {
                                const struct frame_cu_eye *e = &p.e[i];
                                const int ox = x - e->out.x, oy = y - e->out.y;
                                if (ox < 0 || oy < 0 || ox >= e->out.w || oy >= e->out.h)
                                    continue;
                                const size_t off = fr * p.work_per_frame + e->work_off;
                                if (guided) {
                                    want = refine_exact(a + off, b + off, e, &g[fr].host, ox,
                                                        oy);
                                } else {
                                    int xa, xb, ya, yb;
                                    float tx, ty;
                                    exact_taps(ox, e->work_w, e->out.w, &xa, &xb, &tx);
                                    exact_taps(oy, e->work_h, e->out.h, &ya, &yb, &ty);
                                    const float *r0 = a + off + (size_t)ya * e->work_w;
                                    const float *r1 = a + off + (size_t)yb * e->work_w;
                                    want = frame_to_u8(exact_lerp(r0, r1, xa, xb, tx, ty));
                                }
                            }
                            const uint8_t o = got[(size_t)y * ls + x];
                            if (o != want && bad++ == 0)
                                cr_expect(0, "ratio %g%s %s frame %d byte (%d,%d): got %d, "
                                          "want %d (eyes %dx%d from %d, %dx%d from %d)", r,
                                          odd ? " odd" : "", guided ? "guided" : "bilinear",
                                          fr, x, y, o, want, dw0, dh0, ww0, dw1, dh1, ww1);
                        }
                }
                cr_expect_eq(bad, 0, "ratio %g%s %s: %zu bytes differ", r, odd ? " odd" : "",
                             guided ? "guided" : "bilinear", bad);
            }
            cudaFree(da);
            cudaFree(db);
            free(a);
            free(b);
        }
    for (int i = 0; i < NF; i++) {
        cudaFree(d_mask[i]);
        gf_frame_free(&g[i]);
    }
    free(got);
}

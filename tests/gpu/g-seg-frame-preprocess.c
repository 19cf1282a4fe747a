/*
 * g-seg-frame-preprocess.c - the CUDA preprocess and luma kernels against their
 * C twins (frame_ref.h) on fresh random frames of every pixel format and
 * range, odd sizes and padded rows, with rects that take both resampling
 * rules (area when shrinking, bilinear otherwise). Outputs are poisoned with
 * NaN first, so an unwritten element fails. NV12 area tiles of an 8K
 * side-by-side frame are also checked bit for bit against a C copy of the
 * kernel's own float operations (the word-reading path must give exactly
 * what the byte-reading one gave); so is the luma of an 8K frame's eyes.
 */
#include "util-frame.h"

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

Test(g_seg_frame_preprocess, preprocess_all_formats)
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

Test(g_seg_frame_preprocess, luma_all_formats)
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

/* ---- NV12 area: bit for bit ---- */

static float sat01(float v)
{
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

/* Output pixel (ox, oy) of rect r at mw x mh: the float operations of
 * frame_sample.cu's area sums for NV12 as ptxas emits them (the FMAs and
 * their order), so the result must match the GPU's to the bit. */
static void nv12_area_exact(const struct seg_frame *f, struct frame_rect r, int mw, int mh,
                            int ox, int oy, float v[3])
{
    const int x0 = (int)((long long)ox * r.w / mw), y0 = (int)((long long)oy * r.h / mh);
    int x1 = (int)((long long)(ox + 1) * r.w / mw), y1 = (int)((long long)(oy + 1) * r.h / mh);
    x1 = x1 <= x0 ? x0 + 1 : x1;
    y1 = y1 <= y0 ? y0 + 1 : y1;
    const float sy = f->full_range ? 1.0f / 255.0f : 1.0f / 219.0f;
    const float oy0 = f->full_range ? 0.0f : -16.0f * sy;
    const float sc = f->full_range ? 1.0f / 255.0f : 1.0f / 224.0f;
    const float oc = -128.0f * sc;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    for (int y = r.y + y0; y < r.y + y1; y++) {
        const uint8_t *yrow = f->data[0] + (size_t)y * f->linesize[0];
        const uint8_t *uv = f->data[1] + (size_t)(y >> 1) * f->linesize[1];
        for (int x = r.x + x0; x < r.x + x1; x++) {
            const float cb = fmaf(uv[x & ~1], sc, oc), cr = fmaf(uv[x | 1], sc, oc);
            const float dg = fmaf(cb, -0.187324f, cr * -0.468124f);
            const float Y = fmaf(yrow[x], sy, oy0);
            s0 += sat01(fmaf(cr, 1.5748f, Y));
            s1 += sat01(Y + dg);
            s2 += sat01(fmaf(cb, 1.8556f, Y));
        }
    }
    const float inv = 1.0f / (float)((x1 - x0) * (y1 - y0));
    v[0] = s0 * inv;
    v[1] = s1 * inv;
    v[2] = s2 * inv;
}

/* Runs the preprocess on n rects of g and expects nv12_area_exact's bits. */
static void expect_nv12_exact(struct gf_frame *g, const struct frame_rect *rects, int n,
                              int mw, int mh, const char *what)
{
    const size_t per = (size_t)mw * mh * 3, cnt = per * n;
    float *d_out = gf_dev_poisoned(cnt);
    struct frame_rect *d_rects = gf_dev_copy(rects, n * sizeof *rects);
    vr_err err = { 0, "" };
    cr_assert_eq(frame_preprocess_cuda(&g->dev, d_rects, n, mw, mh, d_out, 0, &err), 0, "%s",
                 err.msg);
    float *got = gf_dev_floats(d_out, cnt);
    size_t bad = 0;
    for (int t = 0; t < n; t++)
        for (int p = 0; p < mw * mh; p++) {
            float want[3];
            nv12_area_exact(&g->host, rects[t], mw, mh, p % mw, p / mw, want);
            const float *o = got + t * per + (size_t)p * 3;
            if (memcmp(o, want, sizeof want) != 0 && bad++ == 0)
                cr_expect(0, "%s: tile %d (%d,%d %dx%d) pixel (%d,%d): got %.9g %.9g %.9g, "
                          "want %.9g %.9g %.9g", what, t, rects[t].x, rects[t].y, rects[t].w,
                          rects[t].h, p % mw, p / mw, o[0], o[1], o[2], want[0], want[1],
                          want[2]);
        }
    cr_expect_eq(bad, 0, "%s: %zu pixels differ", what, bad);
    free(got);
    cudaFree(d_out);
    cudaFree(d_rects);
}

/* The main case: an 8192x4096 side-by-side frame into 256x256 tiles: both
 * eyes whole (16-pixel boxes), tiles of random unaligned origin and size
 * (boxes of 6 to 17 pixels, the widest the word path takes), one with
 * boxes of 17 and 18 (both paths in one tile), one on the frame's right
 * and bottom edges. Both ranges. */
Test(g_seg_frame_preprocess, preprocess_nv12_8k_exact)
{
    gf_seed("preprocess_nv12_8k_exact");
    const int w = 8192, h = 4096, m = 256;
    struct gf_frame g;
    gf_frame_alloc(&g, SEG_PIX_NV12, w, h, 0);
    gf_frame_random(&g);
    gf_frame_upload(&g);
    struct frame_rect rects[12] = {
        { 0, 0, w / 2, h },
        { w / 2, 0, w / 2, h },
        { 3, 1, 17 * m - 3, 16 * m - 1 },    /* boxes of 16 and 17 */
        { 1, 2, 17 * m + 100, 6 * m + 7 },   /* boxes of 17 and 18 */
        { w - 1537, h - 2049, 1537, 2049 },  /* on the right and bottom edges */
    };
    for (int i = 5; i < 12; i++) {
        struct frame_rect *r = &rects[i];
        r->w = gf_int(6 * m, 17 * m);
        r->h = gf_int(6 * m, 16 * m);
        r->x = gf_int(0, w - r->w);
        r->y = gf_int(0, h - r->h);
    }
    for (int full = 0; full <= 1; full++) {
        g.host.full_range = g.dev.full_range = full;
        expect_nv12_exact(&g, rects, 12, m, m, full ? "8k full range" : "8k limited range");
    }
    gf_frame_free(&g);
}

/* Odd frame sizes (chroma edges), padded rows, non-square tiles, boxes
 * from 2 to 20 pixels wide, tile 0 on the right and bottom edges. */
Test(g_seg_frame_preprocess, preprocess_nv12_small_exact)
{
    gf_seed("preprocess_nv12_small_exact");
    for (int it = 0; it < 4; it++) {
        const int w = gf_int(301, 899) | 1, h = gf_int(201, 699) | 1, mw = 40, mh = 24;
        struct gf_frame g;
        gf_frame_alloc(&g, SEG_PIX_NV12, w, h, it & 1);
        gf_frame_random(&g);
        gf_frame_upload(&g);
        struct frame_rect rects[6];
        for (int i = 0; i < 6; i++) {
            struct frame_rect *r = &rects[i];
            r->w = gf_int(2 * mw, w < 20 * mw ? w : 20 * mw);
            r->h = gf_int(2 * mh, h);
            r->x = i == 0 ? w - r->w : gf_int(0, w - r->w);
            r->y = i == 0 ? h - r->h : gf_int(0, h - r->h);
        }
        expect_nv12_exact(&g, rects, 6, mw, mh, "small");
        gf_frame_free(&g);
    }
}

/* The luma at work size of a batch's eyes (k_luma) against
 * gf_nv12_luma_mean, bit for bit: the 8K side-by-side case (8x8 boxes at
 * aligned starts), boxes of 7 and 8 pixels at unaligned starts, and boxes
 * of 17 and 18 (the word path's widest, then the byte loop). Both ranges. */
Test(g_seg_frame_preprocess, luma_nv12_8k_exact)
{
    gf_seed("luma_nv12_8k_exact");
    const int w = 8192, h = 4096;
    static const struct {
        struct frame_rect eye[2];
        int work;
    } cases[] = {
        { { { 0, 0, 4096, 4096 }, { 4096, 0, 4096, 4096 } }, 512 },
        { { { 3, 1, 3840, 4000 }, { 4101, 5, 3900, 4090 } }, 500 },
        { { { 1, 2, 4000, 4094 }, { 4097, 0, 4095, 4096 } }, 230 },
    };
    struct gf_frame g;
    gf_frame_alloc(&g, SEG_PIX_NV12, w, h, 0);
    gf_frame_random(&g);
    gf_frame_upload(&g);
    for (int c = 0; c < 3; c++)
        for (int full = 0; full <= 1; full++) {
            const int ww = cases[c].work, wh = cases[c].work;
            g.host.full_range = g.dev.full_range = full;
            struct frame_cu_plan p;
            gf_plan(&p, 2, cases[c].eye, cases[c].eye, ww, wh); /* outs unused */
            struct frame_batch fb;
            gf_batch(&fb, &g, 1);
            float *d_out = gf_dev_poisoned(p.work_per_frame);
            vr_err err = { 0, "" };
            cr_assert_eq(frame_luma_batch_cuda(&fb, &p, d_out, 0, &err), 0, "%s", err.msg);
            float *got = malloc(p.work_per_frame * sizeof *got);
            cr_assert(got);
            GF_CUDA(cudaDeviceSynchronize());
            GF_CUDA(cudaMemcpy(got, d_out, p.work_per_frame * sizeof *got,
                               cudaMemcpyDeviceToHost));
            size_t bad = 0;
            for (int i = 0; i < 2; i++) {
                const struct frame_rect e = cases[c].eye[i];
                for (int oy = 0; oy < wh; oy++)
                    for (int ox = 0; ox < ww; ox++) {
                        int x0, x1, y0, y1;
                        gf_area_span(ox, e.w, ww, &x0, &x1);
                        gf_area_span(oy, e.h, wh, &y0, &y1);
                        const float want = gf_nv12_luma_mean(&g.host, e.x + x0, e.x + x1,
                                                             e.y + y0, e.y + y1);
                        const float o = got[p.e[i].work_off + (size_t)oy * ww + ox];
                        if (memcmp(&o, &want, sizeof o) != 0 && bad++ == 0)
                            cr_expect(0, "case %d %s range eye %d pixel (%d,%d): got %.9g, "
                                      "want %.9g", c, full ? "full" : "limited", i, ox, oy,
                                      o, want);
                    }
            }
            cr_expect_eq(bad, 0, "case %d %s range: %zu pixels differ", c,
                         full ? "full" : "limited", bad);
            free(got);
            cudaFree(d_out);
        }
    gf_frame_free(&g);
}

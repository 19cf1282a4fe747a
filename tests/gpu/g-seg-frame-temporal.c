/*
 * g-seg-frame-temporal.c - the temporal filter's CUDA twin against its C twin
 * on fresh random frames (every pixel format, still areas, a scene cut,
 * the window carried across calls), bit for bit; the lumas and change
 * sums alone, at the luma kernel's packed scales and off them; and the
 * engine's refine pass (guided apply over the frames of a call) against
 * the C twin run frame by frame.
 */
#include "util-frame.h"

#include "frame_temporal.h"

/* Three NV12 frames through the batched refine (one eye filling the
 * frame's left half, half-size output) vs guided apply per frame. */
Test(g_seg_frame_temporal, refine_batch)
{
    gf_seed("refine_fused");
    enum { NF = 3 };
    const int fw = 640, fh = 360, w = 80, h = 90, dw = 160, dh = 180;
    const struct frame_rect eye = { 0, 0, 320, 360 };
    struct gf_frame g[NF];
    struct frame_batch fb;
    memset(&fb, 0, sizeof fb);
    fb.n = NF;
    fb.fmt = SEG_PIX_NV12;
    size_t np = (size_t)w * h;
    float *a = malloc(NF * np * sizeof *a), *b = malloc(NF * np * sizeof *b);
    cr_assert(a && b);
    for (size_t i = 0; i < NF * np; i++) {
        a[i] = gf_unif(-0.5f, 1.5f);
        b[i] = gf_unif(-0.2f, 0.7f);
    }
    const int ls = 256; /* masks 256 x dh, eye written at column 0 */
    uint8_t *want = calloc((size_t)NF * ls * dh, 1);
    uint8_t *got = malloc((size_t)NF * ls * dh), *dmask = NULL;
    cr_assert(want && got);
    for (int i = 0; i < NF; i++) {
        gf_frame_alloc(&g[i], SEG_PIX_NV12, fw, fh, 0);
        gf_frame_random(&g[i]);
        gf_frame_upload(&g[i]);
        for (int q = 0; q < 3; q++) {
            fb.data[i][q] = g[i].dev.data[q];
            fb.linesize[i][q] = g[i].dev.linesize[q];
        }
        uint8_t *m = want + (size_t)i * ls * dh;
        frame_guided_apply_ref(a + i * np, b + i * np, w, h, &g[i].host, eye, m, ls, dw, dh);
    }
    struct frame_cu_plan p;
    memset(&p, 0, sizeof p);
    p.n_eyes = 1;
    p.e[0] = (struct frame_cu_eye){ eye, { 0, 0, dw, dh }, w, h, 0, 1, 0 };
    p.tiles_per_frame = 1;
    p.work_per_frame = np;
    p.max_work = (int)np;
    p.max_out = dw * dh;
    struct frame_masks fm;
    GF_CUDA(cudaMalloc((void **)&dmask, (size_t)NF * ls * dh));
    GF_CUDA(cudaMemset(dmask, 0xa5, (size_t)NF * ls * dh));
    for (int i = 0; i < NF; i++) {
        fm.data[i] = dmask + (size_t)i * ls * dh;
        fm.linesize[i] = ls;
    }
    float *da = gf_dev_copy(a, NF * np * sizeof *a), *db = gf_dev_copy(b, NF * np * sizeof *b);
    vr_err err = { 0, "" };
    cr_assert_eq(frame_refine_batch_cuda(da, db, 1, &fb, &p, &fm, 0, &err), 0, "%s", err.msg);
    GF_CUDA(cudaMemcpy(got, dmask, (size_t)NF * ls * dh, cudaMemcpyDeviceToHost));
    for (int i = 0; i < NF; i++) {
        size_t off = 0;
        int worst = 0;
        for (int y = 0; y < dh; y++)
            for (int x = 0; x < dw; x++) {
                size_t k = (size_t)i * ls * dh + (size_t)y * ls + x;
                int d = abs((int)got[k] - (int)want[k]);
                off += d != 0;
                worst = d > worst ? d : worst;
            }
        cr_expect(worst <= 1 && off * 1000 <= (size_t)dw * dh,
                  "frame %d: %zu pixels differ, by up to %d", i, off, worst);
    }
    for (int i = 0; i < NF; i++)
        gf_frame_free(&g[i]);
    cudaFree(dmask);
    cudaFree(da);
    cudaFree(db);
    free(a);
    free(b);
    free(want);
    free(got);
}

/* ---- the temporal filter ---- */

/* A raw mask byte at (x, y) of frame i. Random; or, for `matte`, like a
 * segmentation: regions of 0, of 255, of random bytes, and of 0 / 255
 * switching every few frames, 8 x 4 pixels each (the kernel skips the
 * arithmetic of 4-pixel words all 0 or all 255 over its window). */
static uint8_t raw_byte(int matte, int x, int y, int i)
{
    if (!matte)
        return (uint8_t)gf_u32();
    switch (((unsigned)(x >> 3) * 7u + (unsigned)(y >> 2) * 13u) % 4u) {
    case 0: return 0;
    case 1: return 255;
    case 2: return (uint8_t)gf_u32();
    default: return (i / 3) % 2 ? 255 : 0;
    }
}

/* NF frames of `fmt`: runs of still frames (small noise) and a scene cut;
 * raw masks as raw_byte makes them. The C twin frame by frame vs the CUDA
 * twin in two calls (the window carried across them): masks, window and
 * bookkeeping equal to the bit. `aligned`: widths and mask rows multiples
 * of 4 (the kernel's 4-pixel path), else any. `hold`: smooth_hold's
 * margin (0 off); its plane and refresh keys equal too. `still_r`:
 * smooth_still_radius (0: the pixel alone). */
static void temporal_case(int fmt, int aligned, int matte, int hold, int still_r)
{
    enum { NF = 11, SPLIT = 5 };
    const int fw = gf_int(64, 400) & ~1, fh = gf_int(32, 300) & ~1;
    const int w = aligned ? 4 * gf_int(4, fw / 4) : gf_int(16, fw), h = gf_int(8, fh);
    const int ls = w + (aligned ? 4 * gf_int(0, 10) : gf_int(0, 40));
    const int K = gf_int(2, TEMPORAL_MAX_FRAMES);
    struct temporal_opts o;
    temporal_opts_make(&o, K, gf_unif(0.3f, 0.9f), gf_int(2, 12), gf_unif(10.0f, 40.0f), w, h);
    temporal_opts_hold(&o, hold);
    temporal_opts_still_r(&o, still_r);
    struct gf_frame g[NF];
    for (int i = 0; i < NF; i++) {
        gf_frame_alloc(&g[i], fmt, fw, fh, 0);
        gf_frame_random(&g[i]);
        if (i > 0 && i != 7) { /* still: the previous frame plus a little noise */
            for (size_t k = 0; k < g[i].bytes; k++) {
                int v = g[i - 1].hbuf[k] + (int)(gf_u32() % 5) - 2;
                g[i].hbuf[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
        gf_frame_upload(&g[i]);
    }
    const size_t plane = (size_t)w * h, slots = (size_t)K - 1;
    uint8_t *raw = malloc((size_t)NF * ls * h), *want = malloc((size_t)NF * ls * h);
    uint8_t *got = malloc((size_t)NF * ls * h), *ycur = malloc(plane);
    uint8_t *rm = calloc(slots, plane), *ry = calloc(slots, plane);
    uint8_t *grm = malloc(slots * plane), *gry = malloc(slots * plane);
    uint8_t *ch = calloc(1, plane), *gh = malloc(plane);
    cr_assert(raw && want && got && ycur && rm && ry && grm && gry && ch && gh);
    for (int i = 0; i < NF; i++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < ls; x++)
                raw[(size_t)i * ls * h + (size_t)y * ls + x] = raw_byte(matte, x, y, i);
    memcpy(want, raw, (size_t)NF * ls * h);

    struct temporal_state cs;
    temporal_reset(&cs);
    int cuts = 0;
    for (int i = 0; i < NF; i++) {
        frame_temporal_luma_ref(&g[i].host, ycur, w, h);
        uint64_t sad = cs.have ? frame_temporal_sad_ref(ycur, ry + (size_t)cs.head * plane, w, h) : 0;
        cuts += temporal_cut(&o, &cs, sad);
        temporal_hold_step(&cs, sad);
        frame_temporal_ref(&o, &cs, want + (size_t)i * ls * h, ls, ycur, rm, ry, ch);
        temporal_push(&o, &cs);
    }
    cr_expect(cuts >= 1, "the random frame 7 was not a cut (K %d)", K);

    uint8_t *dmask = gf_dev_copy(raw, (size_t)NF * ls * h), *dy = NULL, *drm = NULL, *dry = NULL;
    uint8_t *dh = NULL, *dstill = NULL;
    if (hold)
        GF_CUDA(cudaMalloc((void **)&dh, plane));
    if (still_r)
        GF_CUDA(cudaMalloc((void **)&dstill, (size_t)NF * plane));
    unsigned long long *dsad = NULL, hsad[NF];
    GF_CUDA(cudaMalloc((void **)&dy, (size_t)NF * plane));
    GF_CUDA(cudaMalloc((void **)&drm, slots * plane));
    GF_CUDA(cudaMalloc((void **)&dry, slots * plane));
    GF_CUDA(cudaMalloc((void **)&dsad, sizeof hsad));
    GF_CUDA(cudaMemset(drm, 0, slots * plane));
    GF_CUDA(cudaMemset(dry, 0, slots * plane));
    struct temporal_state gs;
    temporal_reset(&gs);
    vr_err err = { 0, "" };
    for (int f0 = 0; f0 < NF; f0 = f0 == 0 ? SPLIT : NF) {
        int n = f0 == 0 ? SPLIT : NF - SPLIT;
        struct frame_batch fb;
        struct frame_masks fm;
        memset(&fb, 0, sizeof fb);
        fb.n = n;
        fb.fmt = fmt;
        for (int j = 0; j < n; j++) {
            for (int q = 0; q < 3; q++) {
                fb.data[j][q] = g[f0 + j].dev.data[q];
                fb.linesize[j][q] = g[f0 + j].dev.linesize[q];
            }
            fm.data[j] = dmask + (size_t)(f0 + j) * ls * h;
            fm.linesize[j] = ls;
        }
        cr_assert_eq(frame_temporal_luma_cuda(&o, &gs, &fb, fw, fh, dy, dry, dsad, 0, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(frame_temporal_cuda(&o, &gs, n, &fm, dy, dsad, drm, dry, dh, dstill, 0,
                                         &err),
                     0, "%s", err.msg);
        GF_CUDA(cudaMemcpy(hsad, dsad, n * sizeof *hsad, cudaMemcpyDeviceToHost));
        for (int j = 0; j < n; j++) {
            temporal_cut(&o, &gs, hsad[j]);
            temporal_hold_step(&gs, hsad[j]);
            temporal_push(&o, &gs);
        }
    }
    GF_CUDA(cudaMemcpy(got, dmask, (size_t)NF * ls * h, cudaMemcpyDeviceToHost));
    GF_CUDA(cudaMemcpy(grm, drm, slots * plane, cudaMemcpyDeviceToHost));
    GF_CUDA(cudaMemcpy(gry, dry, slots * plane, cudaMemcpyDeviceToHost));
    for (int i = 0; i < NF; i++) {
        size_t off = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                size_t k = (size_t)i * ls * h + (size_t)y * ls + x;
                off += got[k] != want[k];
            }
        cr_expect_eq(off, 0, "fmt %d K %d hold %d still_r %d frame %d: %zu pixels differ", fmt,
                     K, hold, still_r, i, off);
    }
    if (hold) {
        GF_CUDA(cudaMemcpy(gh, dh, plane, cudaMemcpyDeviceToHost));
        cr_expect(memcmp(gh, ch, plane) == 0, "fmt %d hold %d: the hold planes differ", fmt,
                  hold);
        cr_expect(gs.nkeys == cs.nkeys && memcmp(gs.keys, cs.keys, sizeof cs.keys) == 0,
                  "the hold's keys differ");
    }
    cr_expect(memcmp(grm, rm, slots * plane) == 0, "fmt %d: window masks differ", fmt);
    cr_expect(memcmp(gry, ry, slots * plane) == 0, "fmt %d: window lumas differ", fmt);
    cr_expect(gs.have == cs.have && gs.head == cs.head, "bookkeeping %d/%d vs %d/%d", gs.have,
              gs.head, cs.have, cs.head);
    for (int i = 0; i < NF; i++)
        gf_frame_free(&g[i]);
    cudaFree(dmask);
    cudaFree(dy);
    cudaFree(drm);
    cudaFree(dry);
    cudaFree(dsad);
    cudaFree(dh);
    cudaFree(dstill);
    free(ch);
    free(gh);
    free(raw);
    free(want);
    free(got);
    free(ycur);
    free(rm);
    free(ry);
    free(grm);
    free(gry);
}

Test(g_seg_frame_temporal, temporal_twin_every_format)
{
    gf_seed("temporal");
    const int fmts[] = { SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P, SEG_PIX_RGB24 };
    for (int r = 0; r < 3; r++)
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            temporal_case(fmts[i], 0, r == 2, 0, 0);
            temporal_case(fmts[i], 1, r > 0, 0, 0);
        }
}

/* The hold (smooth_hold) on both paths: small margins, where the noise
 * decides, and 255, where only the picture and the refreshes do. */
Test(g_seg_frame_temporal, hold_twin_every_format)
{
    gf_seed("temporal hold");
    const int fmts[] = { SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P, SEG_PIX_RGB24 };
    for (int r = 0; r < 3; r++)
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            temporal_case(fmts[i], 0, r == 2, r == 1 ? 255 : gf_int(1, 40), 0);
            temporal_case(fmts[i], 1, r > 0, r == 0 ? 255 : gf_int(1, 40), 0);
        }
}

/* The stillness test on a neighbourhood (smooth_still_radius 1..4, the
 * profiles' 2 among them), with and without the hold: its bits from the
 * batch's lumas and, for the first frames of a call, from the ring's. */
Test(g_seg_frame_temporal, still_radius_twin_every_format)
{
    gf_seed("temporal still radius");
    const int fmts[] = { SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P, SEG_PIX_RGB24 };
    for (int r = 0; r < 4; r++)
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            temporal_case(fmts[i], 0, r != 1, r == 1 ? gf_int(1, 40) : 0, r + 1);
            temporal_case(fmts[i], 1, r > 0, r == 2 ? 32 : r == 3 ? 255 : 0, r == 0 ? 2 : r + 1);
        }
}

/* ---- the lumas and change sums alone ---- */

/* frame_temporal_luma_cuda vs frame_temporal_luma_ref and
 * frame_temporal_sad_ref: nf random frames of fmt seen from column c0 on
 * (sw x sh: c0 > 0 starts rows off their alignment), lumas at w x h into
 * y at byte offset yoff, frame 0 against a random previous luma (ring slot
 * 1, at byte offset yoff too) or, without one, against itself. Lumas and
 * sums equal to the bit; bytes around y untouched. */
static void temporal_luma_case(int fmt, int sw, int sh, int c0, int w, int h, int nf,
                               int with_prev, int yoff)
{
    const size_t plane = (size_t)w * h, guard = 64;
    const int bpp = gf_bpp(fmt, 0);
    struct gf_frame g[FRAME_CU_MAX_FRAMES];
    struct frame_batch fb;
    memset(&fb, 0, sizeof fb);
    fb.n = nf;
    fb.fmt = fmt;
    uint8_t *want = malloc((size_t)nf * plane), *got = malloc((size_t)nf * plane + 2 * guard);
    uint8_t *prev = malloc(plane);
    cr_assert(want && got && prev);
    for (size_t k = 0; k < plane; k++)
        prev[k] = (uint8_t)gf_u32();
    unsigned long long want_sad[FRAME_CU_MAX_FRAMES], got_sad[FRAME_CU_MAX_FRAMES];
    for (int j = 0; j < nf; j++) {
        gf_frame_alloc(&g[j], fmt, sw + c0, sh, 0);
        gf_frame_random(&g[j]);
        gf_frame_upload(&g[j]);
        struct seg_frame view = g[j].host;
        view.data[0] += (size_t)c0 * bpp;
        view.w = sw;
        uint8_t *yj = want + (size_t)j * plane;
        frame_temporal_luma_ref(&view, yj, w, h);
        want_sad[j] = j > 0 ? frame_temporal_sad_ref(yj, yj - plane, w, h)
                    : with_prev ? frame_temporal_sad_ref(yj, prev, w, h) : 0;
        fb.data[j][0] = g[j].dev.data[0] + (size_t)c0 * bpp;
        fb.linesize[j][0] = g[j].dev.linesize[0];
    }
    struct temporal_opts o;
    temporal_opts_make(&o, 3, 0.5, 4, 20.0, w, h);
    struct temporal_state s;
    temporal_reset(&s);
    s.have = with_prev ? 2 : 0;
    s.head = 1;
    uint8_t *dy = NULL, *dring = NULL;
    unsigned long long *dsad = NULL;
    GF_CUDA(cudaMalloc((void **)&dy, (size_t)nf * plane + 2 * guard));
    GF_CUDA(cudaMalloc((void **)&dring, 2 * plane + guard));
    GF_CUDA(cudaMalloc((void **)&dsad, nf * sizeof *dsad));
    GF_CUDA(cudaMemset(dy, 0xa5, (size_t)nf * plane + 2 * guard));
    GF_CUDA(cudaMemset(dsad, 0xff, nf * sizeof *dsad));
    GF_CUDA(cudaMemcpy(dring + yoff + plane, prev, plane, cudaMemcpyHostToDevice));
    vr_err err = { 0, "" };
    cr_assert_eq(frame_temporal_luma_cuda(&o, &s, &fb, sw, sh, dy + guard + yoff, dring + yoff,
                                          dsad, 0, &err),
                 0, "%s", err.msg);
    GF_CUDA(cudaMemcpy(got, dy, (size_t)nf * plane + 2 * guard, cudaMemcpyDeviceToHost));
    GF_CUDA(cudaMemcpy(got_sad, dsad, nf * sizeof *dsad, cudaMemcpyDeviceToHost));
    char what[96];
    snprintf(what, sizeof what, "fmt %d %dx%d+%d -> %dx%d, %d frames, prev %d, y offset %d",
             fmt, sw, sh, c0, w, h, nf, with_prev, yoff);
    for (int j = 0; j < nf; j++) {
        size_t off = 0;
        for (size_t k = 0; k < plane; k++)
            off += got[guard + yoff + (size_t)j * plane + k] != want[(size_t)j * plane + k];
        cr_expect_eq(off, 0, "%s: frame %d: %zu lumas differ", what, j, off);
        cr_expect_eq(got_sad[j], want_sad[j], "%s: frame %d: sum %llu, want %llu", what, j,
                     got_sad[j], want_sad[j]);
    }
    size_t touched = 0;
    for (size_t k = 0; k < guard + yoff; k++)
        touched += got[k] != 0xa5;
    for (size_t k = guard + yoff + (size_t)nf * plane; k < (size_t)nf * plane + 2 * guard; k++)
        touched += got[k] != 0xa5;
    cr_expect_eq(touched, 0, "%s: %zu bytes around y written", what, touched);
    for (int j = 0; j < nf; j++)
        gf_frame_free(&g[j]);
    cudaFree(dy);
    cudaFree(dring);
    cudaFree(dsad);
    free(want);
    free(got);
    free(prev);
}

/* Every format at the kernel's packed scales (1, 2 and 4 source pixels an
 * output pixel, rows aligned) and off them: rows starting unaligned,
 * widths not a multiple of 4, odd source sizes, upscaling, an unaligned y;
 * 1 to 9 frames with and without a previous luma, and a full batch. */
Test(g_seg_frame_temporal, temporal_luma_every_format)
{
    gf_seed("temporal_luma");
    const int fmts[] = { SEG_PIX_NV12, SEG_PIX_P010, SEG_PIX_YUV420P, SEG_PIX_RGB24 };
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            const int fmt = fmts[i], w4 = 4 * gf_int(4, 90), h = gf_int(5, 150);
            const int odd = gf_int(9, 150) | 1, prev = r == 0;
            for (int k = 1; k <= 4; k *= 2) /* packed at k:1 (P010 4:1: general) */
                temporal_luma_case(fmt, k * w4, k * h, 0, w4, h, gf_int(1, 9), prev, 0);
            temporal_luma_case(fmt, 2 * w4, 2 * h, gf_int(1, 7), w4, h, gf_int(1, 9), prev, 0);
            temporal_luma_case(fmt, 2 * odd, 2 * h, 0, odd, h, gf_int(1, 9), prev, 0);
            temporal_luma_case(fmt, gf_int(17, 401) | 1, gf_int(9, 301) | 1, 0, odd, h,
                               gf_int(1, 9), !prev, 0);
            temporal_luma_case(fmt, gf_int(16, 64), gf_int(8, 40), 0, w4, h, gf_int(1, 9), prev,
                               0);
            temporal_luma_case(fmt, 2 * w4, 2 * h, 0, w4, h, gf_int(1, 9), prev, gf_int(1, 3));
            temporal_luma_case(fmt, 2 * w4, 2 * h, 0, w4, h, gf_int(1, 9), !prev, gf_int(1, 3));
        }
    temporal_luma_case(SEG_PIX_NV12, 2 * 64, 2 * 36, 0, 64, 36, FRAME_CU_MAX_FRAMES, 1, 0);
    temporal_luma_case(SEG_PIX_P010, 2 * 61, 2 * 37, 0, 61, 37, FRAME_CU_MAX_FRAMES, 0, 0);
}

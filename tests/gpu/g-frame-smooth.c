/*
 * g-frame-smooth.c - temporal smoothing on the GPU against frame_smooth_ref:
 * the stand-alone twin on random masks, and the engine's fused form (guided
 * apply and EMA over the frames of one call, state carried in registers)
 * against the C twins run frame by frame, including a seeding first frame.
 */
#include "g-frame-util.h"

Test(gpu_frame, smooth_twin)
{
    gf_seed("smooth");
    int w = gf_int(100, 900), h = gf_int(50, 500), ls = w + 32, pls = w + 64;
    float s = gf_unif(0.05f, 0.95f);
    uint8_t *m = malloc((size_t)ls * h), *p = malloc((size_t)pls * h);
    uint8_t *gm = malloc((size_t)ls * h), *gp = malloc((size_t)pls * h);
    cr_assert(m && p && gm && gp);
    for (size_t i = 0; i < (size_t)ls * h; i++)
        m[i] = (uint8_t)gf_u32();
    for (size_t i = 0; i < (size_t)pls * h; i++)
        p[i] = (uint8_t)gf_u32();
    uint8_t *dm = gf_dev_copy(m, (size_t)ls * h), *dp = gf_dev_copy(p, (size_t)pls * h);
    frame_smooth_ref(m, ls, p, pls, w, h, s);
    vr_err err = { 0, "" };
    cr_assert_eq(frame_smooth_cuda(dm, ls, dp, pls, w, h, s, 0, &err), 0, "%s", err.msg);
    GF_CUDA(cudaMemcpy(gm, dm, (size_t)ls * h, cudaMemcpyDeviceToHost));
    GF_CUDA(cudaMemcpy(gp, dp, (size_t)pls * h, cudaMemcpyDeviceToHost));
    cr_expect(memcmp(gm, m, (size_t)ls * h) == 0, "mask differs (smooth %g)", s);
    cr_expect(memcmp(gp, p, (size_t)pls * h) == 0, "state differs (smooth %g)", s);
    cudaFree(dm);
    cudaFree(dp);
    free(m);
    free(p);
    free(gm);
    free(gp);
}

/* Three NV12 frames through the fused refine + smoothing (one eye filling
 * the frame's left half, half-size output) vs apply + smooth per frame. */
Test(gpu_frame, refine_fused_smoothing)
{
    gf_seed("refine_fused");
    enum { NF = 3 };
    const int fw = 640, fh = 360, w = 80, h = 90, dw = 160, dh = 180;
    const struct frame_rect eye = { 0, 0, 320, 360 };
    const float smooth = 0.3f;
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
    uint8_t *want = calloc((size_t)NF * ls * dh, 1), *prev = calloc((size_t)ls * dh, 1);
    uint8_t *got = malloc((size_t)NF * ls * dh), *dmask = NULL, *dprev = NULL;
    cr_assert(want && prev && got);
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
        frame_smooth_ref(m, ls, prev, ls, dw, dh, i == 0 ? 0.0f : smooth);
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
    GF_CUDA(cudaMalloc((void **)&dprev, (size_t)ls * dh));
    GF_CUDA(cudaMemset(dprev, 0xa5, (size_t)ls * dh)); /* have_prev = 0: never read */
    for (int i = 0; i < NF; i++) {
        fm.data[i] = dmask + (size_t)i * ls * dh;
        fm.linesize[i] = ls;
    }
    float *da = gf_dev_copy(a, NF * np * sizeof *a), *db = gf_dev_copy(b, NF * np * sizeof *b);
    vr_err err = { 0, "" };
    cr_assert_eq(frame_refine_batch_cuda(da, db, 1, &fb, &p, &fm, dprev, ls, 0, smooth, 0,
                                         &err), 0, "%s", err.msg);
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
    uint8_t *gprev = malloc((size_t)ls * dh);
    cr_assert(gprev);
    GF_CUDA(cudaMemcpy(gprev, dprev, (size_t)ls * dh, cudaMemcpyDeviceToHost));
    for (int y = 0; y < dh; y++)
        cr_expect(memcmp(gprev + (size_t)y * ls, got + (size_t)(NF - 1) * ls * dh + (size_t)y * ls,
                         dw) == 0, "state row %d is not the last mask", y);
    for (int i = 0; i < NF; i++)
        gf_frame_free(&g[i]);
    cudaFree(dmask);
    cudaFree(dprev);
    cudaFree(da);
    cudaFree(db);
    free(a);
    free(b);
    free(want);
    free(prev);
    free(got);
    free(gprev);
}

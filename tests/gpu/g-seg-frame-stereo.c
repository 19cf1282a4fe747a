/*
 * g-seg-frame-stereo.c - both eyes agree on the GPU (frame_stereo.cu)
 * against the C twin (frame_stereo_ref.c), every bit: random sizes and
 * band counts, a textured left luma whose right is it shifted by a random
 * disparity per band (plus noise), masks with a person in some bands and
 * haze elsewhere; one frame (frame_stereo_cuda: disparities and masks) and
 * a batch of frames in the engine's work layout (frame_stereo_batch_cuda);
 * and the refined eyes fused at the scaled shifts (frame_stereo_out_batch_cuda).
 */
#include "frame_stereo.h"
#include "util-frame.h"

/* Left and right lumas and masks of one frame: in band b the right eye is
 * the left shifted by shift[b] (R(x - d) = L(x)). */
static void stereo_frame(int w, int h, int bands, const int *shift, float *yl, float *yr,
                         float *ml, float *mr)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            yl[(size_t)y * w + x] = gf_unif(0.0f, 1.0f);
    for (int y = 0; y < h; y++) {
        int d = shift[frame_stereo_band(h, bands, y)];
        for (int x = 0; x < w; x++) {
            int xs = x + d < 0 ? 0 : (x + d >= w ? w - 1 : x + d);
            yr[(size_t)y * w + x] = yl[(size_t)y * w + xs] + gf_unif(-0.02f, 0.02f);
        }
    }
    int px = gf_int(0, w / 2), pw = gf_int(4, w / 3), drop = gf_int(0, bands - 1);
    for (int y = 0; y < h; y++) {
        int b = frame_stereo_band(h, bands, y), on = b % 3 != 0;
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            int in_l = on && x >= px && x < px + pw, in_r = on && b != drop && x - shift[b] >= px
                                                             && x - shift[b] < px + pw;
            ml[i] = in_l ? gf_unif(0.6f, 1.0f) : gf_unif(0.0f, 0.3f);
            mr[i] = in_r ? gf_unif(0.6f, 1.0f) : gf_unif(0.0f, 0.3f);
        }
    }
}

/* n frames of stereo_frame in the engine's work layout of plan p (eye 0
 * then eye 1, one work size), each band at a random shift. */
static void stereo_batch(const struct frame_cu_plan *p, int n, int bands, float *work,
                         float *luma)
{
    const int w = p->e[0].work_w, h = p->e[0].work_h, dmax = frame_stereo_dmax(w);
    const size_t np = (size_t)w * h;
    int shift[FRAME_STEREO_MAX_BANDS];
    for (int f = 0; f < n; f++) {
        for (int b = 0; b < bands; b++)
            shift[b] = gf_int(-dmax, dmax);
        float *wf = work + f * p->work_per_frame, *lf = luma + f * p->work_per_frame;
        stereo_frame(w, h, bands, shift, lf, lf + np, wf, wf + np);
    }
}

Test(g_seg_frame_stereo, one_frame_exact)
{
    gf_seed("stereo");
    for (int rep = 0; rep < 6; rep++) {
        const int w = gf_int(16, 600), h = gf_int(8, 600), bands = gf_int(1, 16);
        const int dmax = frame_stereo_dmax(w);
        int shift[FRAME_STEREO_MAX_BANDS], want_d[FRAME_STEREO_MAX_BANDS], got_d[FRAME_STEREO_MAX_BANDS];
        for (int b = 0; b < bands; b++)
            shift[b] = gf_int(-dmax, dmax);
        size_t np = (size_t)w * h;
        float *yl = malloc(np * sizeof *yl), *yr = malloc(np * sizeof *yr);
        float *m = malloc(2 * np * sizeof *m), *scratch = malloc(FRAME_STEREO_SCRATCH(w, h) * sizeof *scratch);
        cr_assert(yl && yr && m && scratch);
        stereo_frame(w, h, bands, shift, yl, yr, m, m + np);
        float *d_yl = gf_dev_copy(yl, np * sizeof *yl), *d_yr = gf_dev_copy(yr, np * sizeof *yr);
        float *d_m = gf_dev_copy(m, 2 * np * sizeof *m), *d_scratch = gf_dev_poisoned(2 * np);
        void *d_ws = NULL;
        GF_CUDA(cudaMalloc(&d_ws, frame_stereo_ws_bytes(1, bands, w)));
        frame_stereo_ref(m, m + np, yl, yr, w, h, bands, scratch, want_d);
        vr_err err = { 0, "" };
        cr_assert_eq(frame_stereo_cuda(d_m, d_m + np, d_yl, d_yr, w, h, bands, d_scratch, d_ws,
                                       got_d, 0, &err), 0, "%s", err.msg);
        for (int b = 0; b < bands; b++)
            cr_expect_eq(got_d[b], want_d[b], "rep %d (%dx%d, %d bands): band %d: d %d, want %d "
                         "(made %d)", rep, w, h, bands, b, got_d[b], want_d[b], shift[b]);
        size_t at = 0;
        float got = 0.0f;
        size_t nd = gf_dev_bits_diff(d_m, m, 2 * np, &at, &got);
        cr_expect_eq(nd, 0, "rep %d (%dx%d, %d bands): %zu floats differ, first eye %zu at "
                     "(%zu, %zu): %g, want %g", rep, w, h, bands, nd, at / np, at % np % w,
                     at % np / w, got, m[at]);
        cudaFree(d_yl);
        cudaFree(d_yr);
        cudaFree(d_m);
        cudaFree(d_scratch);
        cudaFree(d_ws);
        free(yl);
        free(yr);
        free(m);
        free(scratch);
    }
}

Test(g_seg_frame_stereo, batch_exact)
{
    gf_seed("stereo_batch");
    const int n = 3, w = gf_int(32, 300), h = gf_int(32, 300), bands = 8;
    struct frame_rect eye[2] = { { 0, 0, w, h }, { w, 0, w, h } };
    struct frame_cu_plan p;
    gf_plan(&p, 2, eye, eye, w, h);
    const size_t np = (size_t)w * h, all = n * p.work_per_frame;
    float *work = malloc(all * sizeof *work), *luma = malloc(all * sizeof *luma);
    float *scratch = malloc(FRAME_STEREO_SCRATCH(w, h) * sizeof *scratch);
    cr_assert(work && luma && scratch);
    stereo_batch(&p, n, bands, work, luma);
    float *d_work = gf_dev_copy(work, all * sizeof *work), *d_luma = gf_dev_copy(luma, all * sizeof *luma);
    float *d_scratch = gf_dev_poisoned(all);
    void *d_ws = NULL;
    GF_CUDA(cudaMalloc(&d_ws, frame_stereo_ws_bytes(n, bands, w)));
    for (int f = 0; f < n; f++) {
        float *wf = work + f * p.work_per_frame, *lf = luma + f * p.work_per_frame;
        frame_stereo_ref(wf, wf + np, lf, lf + np, w, h, bands, scratch, NULL);
    }
    vr_err err = { 0, "" };
    cr_assert_eq(frame_stereo_batch_cuda(d_work, d_luma, n, &p, bands, d_scratch, d_ws, 0, &err),
                 0, "%s", err.msg);
    size_t at = 0;
    float got = 0.0f;
    size_t nd = gf_dev_bits_diff(d_work, work, all, &at, &got);
    cr_expect_eq(nd, 0, "%d frames of 2 eyes %dx%d: %zu floats differ, first frame %zu eye %zu: "
                 "%g, want %g", n, w, h, nd, at / p.work_per_frame, at % p.work_per_frame / np,
                 got, work[at]);
    cudaFree(d_work);
    cudaFree(d_luma);
    cudaFree(d_scratch);
    cudaFree(d_ws);
    free(work);
    free(luma);
    free(scratch);
}

/* The refined eyes (frame_stereo_out_batch_cuda) against the twin, every
 * byte: a batch's work masks fused first (their shifts, left in the
 * workspace), then random 8-bit output eyes of another width than the
 * work masks (the shifts scaled), side by side in rows with a margin;
 * rows of whole words take the four-byte kernel, odd ones the byte one. */
static void refined_case(int word_rows)
{
    const int n = 3, w = gf_int(32, 300), h = gf_int(32, 300), bands = gf_int(1, 16);
    const int ow = gf_int(16, 900), oh = gf_int(8, 500);
    int ls = 2 * ow + gf_int(0, 64);
    ls = word_rows ? (ls + 3) / 4 * 4 : ls | 1; /* word-aligned rows, or odd ones */
    struct frame_rect eye[2] = { { 0, 0, w, h }, { w, 0, w, h } };
    struct frame_rect out[2] = { { 0, 0, ow, oh }, { ow, 0, ow, oh } };
    struct frame_cu_plan p;
    gf_plan(&p, 2, eye, out, w, h);
    const size_t np = (size_t)w * h, all = n * p.work_per_frame, mb = (size_t)oh * ls;
    float *work = malloc(all * sizeof *work), *luma = malloc(all * sizeof *luma);
    float *scratch = malloc(FRAME_STEREO_SCRATCH(w, h) * sizeof *scratch);
    uint8_t *masks = malloc(n * mb);
    cr_assert(work && luma && scratch && masks);
    stereo_batch(&p, n, bands, work, luma);
    for (size_t i = 0; i < n * mb; i++)
        masks[i] = (uint8_t)gf_int(0, 255);
    float *d_work = gf_dev_copy(work, all * sizeof *work), *d_luma = gf_dev_copy(luma, all * sizeof *luma);
    uint8_t *d_masks = gf_dev_copy(masks, n * mb);
    float *d_scratch = gf_dev_poisoned(all);
    void *d_ws = NULL;
    GF_CUDA(cudaMalloc(&d_ws, frame_stereo_ws_bytes(n, bands, w)));
    for (int f = 0; f < n; f++) {
        float *wf = work + f * p.work_per_frame, *lf = luma + f * p.work_per_frame;
        int disp[FRAME_STEREO_MAX_BANDS];
        frame_stereo_ref(wf, wf + np, lf, lf + np, w, h, bands, scratch, disp);
        frame_stereo_out_ref(masks + f * mb, masks + f * mb + ow, ls, ow, oh, w, bands, disp);
    }
    struct frame_masks fm;
    for (int f = 0; f < n; f++) {
        fm.data[f] = d_masks + f * mb;
        fm.linesize[f] = ls;
    }
    vr_err err = { 0, "" };
    cr_assert_eq(frame_stereo_batch_cuda(d_work, d_luma, n, &p, bands, d_scratch, d_ws, 0, &err),
                 0, "%s", err.msg);
    cr_assert_eq(frame_stereo_out_batch_cuda(&fm, n, &p, bands, d_ws, 0, &err), 0, "%s", err.msg);
    uint8_t *got = malloc(n * mb);
    cr_assert(got);
    GF_CUDA(cudaMemcpy(got, d_masks, n * mb, cudaMemcpyDeviceToHost));
    size_t nd = 0, first = 0;
    for (size_t i = 0; i < n * mb; i++)
        if (got[i] != masks[i] && !nd++)
            first = i;
    cr_expect_eq(nd, 0, "%d frames, work %dx%d, out eyes %dx%d (rows %d), %d bands: %zu bytes "
                 "differ, first frame %zu row %zu col %zu: %u, want %u", n, w, h, ow, oh, ls,
                 bands, nd, first / mb, first % mb / ls, first % ls, got[first], masks[first]);
    cr_log_info("refined eyes: work %dx%d, out eyes %dx%d, rows of %d bytes, %d bands: equal",
                w, h, ow, oh, ls, bands);
    cudaFree(d_work);
    cudaFree(d_luma);
    cudaFree(d_masks);
    cudaFree(d_scratch);
    cudaFree(d_ws);
    free(work);
    free(luma);
    free(scratch);
    free(masks);
    free(got);
}

Test(g_seg_frame_stereo, refined_eyes_exact)
{
    gf_seed("stereo_refined");
    for (int rep = 0; rep < 4; rep++)
        refined_case(rep % 2 == 0); /* the word kernel, then the byte one */
}

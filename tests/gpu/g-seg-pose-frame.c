/*
 * g-seg-pose-frame.c - the pose tier's pixel steps on the GPU
 * (pose_frame.cu) against their C twins (pose_frame_ref.c), every bit
 * (the sigmoid within 1e-6: the device's expf): random pictures of random
 * sizes read through a crop of a larger one (its pointer and linesize, as
 * the tier reads its crops), random turned ROIs inside, across and outside
 * the picture, random masks and weights pasted over a random work mask.
 */
#include "pose_frame.h"
#include "util-frame.h"

#define POSE_TRIES 8

/* A random RGB24 picture of pw x ph and a crop of w x h at (x0, y0) in it. */
struct pose_pic {
    int pw, ph, w, h, x0, y0;
    uint8_t *rgb, *d_rgb;
};

static void pic_make(struct pose_pic *p, int max)
{
    p->pw = gf_int(1, max);
    p->ph = gf_int(1, max);
    p->w = gf_int(1, p->pw);
    p->h = gf_int(1, p->ph);
    p->x0 = gf_int(0, p->pw - p->w);
    p->y0 = gf_int(0, p->ph - p->h);
    const size_t bytes = (size_t)p->pw * p->ph * 3;
    p->rgb = malloc(bytes);
    cr_assert(p->rgb);
    for (size_t i = 0; i < bytes; i++)
        p->rgb[i] = (uint8_t)gf_u32();
    p->d_rgb = gf_dev_copy(p->rgb, bytes);
}

static const uint8_t *pic_crop(const struct pose_pic *p, const uint8_t *base)
{
    return base + ((size_t)p->y0 * p->pw + p->x0) * 3;
}

static void pic_free(struct pose_pic *p)
{
    free(p->rgb);
    cudaFree(p->d_rgb);
}

static struct pose_roi roi_random(int w, int h)
{
    struct pose_roi r;
    r.cx = gf_unif(-0.3f * w, 1.3f * w);
    r.cy = gf_unif(-0.3f * h, 1.3f * h);
    r.size = gf_unif(2.0f, 2.0f * (float)(w > h ? w : h) + 8.0f);
    r.angle = gf_unif(-3.14159f, 3.14159f);
    return r;
}

Test(g_seg_pose_frame, pic_u8_exact)
{
    gf_seed("pose_pic_u8");
    const size_t n = (size_t)gf_int(1, 300000);
    float *in = malloc(n * sizeof *in);
    uint8_t *want = malloc(n), *got = malloc(n), *d_out;
    cr_assert(in && want && got);
    for (size_t i = 0; i < n; i++)
        in[i] = gf_unif(-0.2f, 1.2f);
    in[0] = NAN;
    float *d_in = gf_dev_copy(in, n * sizeof *in);
    GF_CUDA(cudaMalloc((void **)&d_out, n));
    pose_pic_u8_ref(in, n, want);
    vr_err err = { 0, "" };
    cr_assert_eq(pose_pic_u8_cuda(d_in, n, d_out, 0, &err), 0, "%s", err.msg);
    GF_CUDA(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i] != want[i];
    cr_expect_eq(bad, 0, "%zu of %zu bytes differ", bad, n);
    cudaFree(d_in);
    cudaFree(d_out);
    free(in);
    free(want);
    free(got);
}

Test(g_seg_pose_frame, letterbox_exact)
{
    gf_seed("pose_letterbox");
    const size_t n = (size_t)POSE_DET_SIZE * POSE_DET_SIZE * 3;
    float *want = malloc(n * sizeof *want), *d_in = gf_dev_poisoned(n);
    cr_assert(want);
    for (int t = 0; t < POSE_TRIES; t++) {
        struct pose_pic p;
        pic_make(&p, t < 2 ? 40 : 1100);
        pose_letterbox_ref(pic_crop(&p, p.rgb), p.w, p.h, p.pw * 3, want);
        vr_err err = { 0, "" };
        cr_assert_eq(pose_letterbox_cuda(pic_crop(&p, p.d_rgb), p.w, p.h, p.pw * 3, d_in, 0,
                                         &err), 0, "%s", err.msg);
        size_t at = 0;
        float got = 0;
        size_t bad = gf_dev_bits_diff(d_in, want, n, &at, &got);
        cr_expect_eq(bad, 0, "try %d: crop %dx%d of %dx%d: %zu values differ, first at (%zu, "
                     "%zu) channel %zu: %g, want %g", t, p.w, p.h, p.pw, p.ph, bad,
                     at / 3 % POSE_DET_SIZE, at / 3 / POSE_DET_SIZE, at % 3, got, want[at]);
        pic_free(&p);
    }
    cudaFree(d_in);
    free(want);
}

Test(g_seg_pose_frame, roi_sample_exact)
{
    gf_seed("pose_roi_sample");
    const size_t n = (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE * 3;
    float *want = malloc(n * sizeof *want), *d_in = gf_dev_poisoned(n);
    cr_assert(want);
    for (int t = 0; t < POSE_TRIES; t++) {
        struct pose_pic p;
        pic_make(&p, t < 2 ? 40 : 1100);
        struct pose_roi r = roi_random(p.w, p.h);
        pose_roi_sample_ref(pic_crop(&p, p.rgb), p.w, p.h, p.pw * 3, &r, want);
        vr_err err = { 0, "" };
        cr_assert_eq(pose_roi_sample_cuda(pic_crop(&p, p.d_rgb), p.w, p.h, p.pw * 3, &r, d_in, 0,
                                          &err), 0, "%s", err.msg);
        size_t at = 0;
        float got = 0;
        size_t bad = gf_dev_bits_diff(d_in, want, n, &at, &got);
        cr_expect_eq(bad, 0, "try %d: %dx%d, ROI (%g, %g) size %g angle %g: %zu values differ, "
                     "first at (%zu, %zu) channel %zu: %g, want %g", t, p.w, p.h, r.cx, r.cy,
                     r.size, r.angle, bad, at / 3 % POSE_SEG_SIZE, at / 3 / POSE_SEG_SIZE,
                     at % 3, got, want[at]);
        pic_free(&p);
    }
    cudaFree(d_in);
    free(want);
}

Test(g_seg_pose_frame, sigmoid_close)
{
    gf_seed("pose_sigmoid");
    const size_t n = (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE * 3;
    float *logit = malloc(n * sizeof *logit), *want = malloc(n * sizeof *want);
    cr_assert(logit && want);
    for (size_t i = 0; i < n; i++)
        logit[i] = i % 3 ? gf_unif(-20.0f, 20.0f) : gf_unif(-900.0f, 900.0f);
    float *d_logit = gf_dev_copy(logit, n * sizeof *logit), *d_out = gf_dev_poisoned(n);
    pose_sigmoid_ref(logit, n, want);
    vr_err err = { 0, "" };
    cr_assert_eq(pose_sigmoid_cuda(d_logit, n, d_out, 0, &err), 0, "%s", err.msg);
    float *got = gf_dev_floats(d_out, n);
    size_t at = 0;
    const double d = gf_max_abs(got, want, n, &at);
    cr_expect(d <= 1e-6, "max |gpu - cpu| %g at logit %g (%g, want %g)", d, logit[at], got[at],
              want[at]);
    cudaFree(d_logit);
    cudaFree(d_out);
    free(logit);
    free(want);
    free(got);
}

Test(g_seg_pose_frame, paste_exact)
{
    gf_seed("pose_paste");
    const size_t mn = (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE;
    float *roi_mask = malloc(mn * sizeof *roi_mask);
    cr_assert(roi_mask);
    for (int t = 0; t < POSE_TRIES; t++) {
        const int w = gf_int(1, t < 2 ? 40 : 1100), h = gf_int(1, t < 2 ? 40 : 1100);
        const size_t n = (size_t)w * h;
        float *want = malloc(n * sizeof *want);
        cr_assert(want);
        for (size_t i = 0; i < n; i++)
            want[i] = gf_unif(0.0f, 0.6f);
        for (size_t i = 0; i < mn; i++)
            roi_mask[i] = gf_unif(0.0f, 1.0f);
        struct pose_roi r = roi_random(w, h);
        const float weight = t % 3 ? 1.0f : gf_unif(0.3f, 1.0f);
        float *d_mask = gf_dev_copy(want, n * sizeof *want);
        float *d_roi = gf_dev_copy(roi_mask, mn * sizeof *roi_mask);
        pose_paste_ref(&r, roi_mask, weight, w, h, want);
        vr_err err = { 0, "" };
        cr_assert_eq(pose_paste_cuda(&r, d_roi, weight, w, h, d_mask, 0, &err), 0, "%s",
                     err.msg);
        size_t at = 0;
        float got = 0;
        size_t bad = gf_dev_bits_diff(d_mask, want, n, &at, &got);
        cr_expect_eq(bad, 0, "try %d: %dx%d, ROI (%g, %g) size %g angle %g, weight %g: %zu "
                     "values differ, first at (%zu, %zu): %g, want %g", t, w, h, r.cx, r.cy,
                     r.size, r.angle, weight, bad, at % w, at / w, got, want[at]);
        cudaFree(d_mask);
        cudaFree(d_roi);
        free(want);
    }
    free(roi_mask);
}

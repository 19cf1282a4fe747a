/*
 * t-seg-api.c - the engine's contract (seg.h) on the CPU backend: argument
 * errors, the CUDA backend refused in a CPU-only build, batches equal to
 * single calls, temporal smoothing carried across calls and cleared by
 * seg_reset(), YUV frames (NV12, YUV420P from ffmpeg, BT.709 limited)
 * giving the RGB frame's mask, and a mask smaller than the frame.
 */
#include "util-seg.h"

#define ASTRO "tests/data/image/astronaut-256.png"

static struct seg_frame rgb(const struct vio_image *img)
{
    return (struct seg_frame){ .fmt = SEG_PIX_RGB24, .w = img->w, .h = img->h,
                               .data = { img->data }, .linesize = { img->linesize } };
}

static struct seg *make(const struct vr_config *c, int w, int h, int ow, int oh, int batch)
{
    struct seg *s = NULL;
    vr_err e = { 0 };
    struct seg_opts o = { .backend = SEG_CPU, .cfg = c, .in_w = w, .in_h = h,
                          .out_w = ow, .out_h = oh, .max_batch = batch };
    cr_assert_eq(seg_create(&o, &s, &e), 0, "%s", e.msg);
    return s;
}

static int max_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    int md = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs(a[i] - b[i]);
        md = d > md ? d : md;
    }
    return md;
}

Test(seg_api, bad_arguments)
{
    struct vr_config c = tseg_cfg(NULL);
    struct seg *s = NULL;
    vr_err e = { 0 };
    struct seg_opts o = { .backend = SEG_CUDA, .cfg = &c, .in_w = 64, .in_h = 64,
                          .max_batch = 1 };
#ifndef VR_HAVE_CUDA
    cr_assert_eq(seg_create(&o, &s, &e), VR_ENOTBUILT);
    cr_assert(strstr(e.msg, "built without CUDA"), "%s", e.msg);
    cr_assert_null(s);
#endif
    o.backend = SEG_CPU;
    o.max_batch = 0;
    cr_assert_eq(seg_create(&o, &s, &e), VR_EINVAL);
    o.max_batch = 1;
    o.in_w = 0;
    cr_assert_eq(seg_create(&o, &s, &e), VR_EINVAL);
    o.in_w = 64;
    snprintf(c.model, sizeof c.model, "no-such-model");
    cr_assert_lt(seg_create(&o, &s, &e), 0);
    cr_assert(strstr(e.msg, "no-such-model"), "%s", e.msg);
    cr_assert_null(s);

    struct vr_config ok = tseg_cfg(NULL);
    s = make(&ok, 64, 64, 0, 0, 1);
    uint8_t px[64 * 64 * 3] = { 0 }, m[64 * 64];
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = 32, .h = 64, .data = { px },
                           .linesize = { 3 * 64 } };
    struct seg_mask sm = { .data = m, .w = 64, .h = 64, .linesize = 64 };
    cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "32x64"), "%s", e.msg);
    f.w = 64;
    struct seg_frame two[2] = { f, f };
    struct seg_mask masks[2] = { sm, sm };
    cr_assert_eq(seg_run(s, two, 2, masks, NULL, &e), VR_EINVAL, "batch over max_batch");
    sm.w = 32;
    cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, &e), VR_EINVAL, "wrong mask size");
    sm.w = 64;
    struct seg_timing t;
    cr_assert_eq(seg_run(s, &f, 1, &sm, &t, &e), 0, "%s", e.msg);
    cr_assert(t.inference > 0.0, "timing filled");
    seg_free(&s);
    cr_assert_null(s);
    seg_free(&s); /* NULL is fine */
}

Test(seg_api, batch_equals_single_calls_and_smoothing_carries_over, .timeout = 60)
{
    struct vio_image *img = NULL;
    cr_assert_eq(vio_image_read(ASTRO, &img, NULL), 0);
    const size_t n = (size_t)img->w * img->h;
    uint8_t *gray = malloc((size_t)img->linesize * img->h);
    memset(gray, 128, (size_t)img->linesize * img->h);
    struct seg_frame fa = rgb(img), fb = fa;
    fb.data[0] = gray;

    /* reference masks, no smoothing, one call each */
    struct vr_config c0 = tseg_cfg("{\"smooth\": 0}");
    struct seg *s = make(&c0, img->w, img->h, 0, 0, 2);
    uint8_t *ma = malloc(n), *mb = malloc(n), *pair = malloc(2 * n);
    struct seg_mask sa = { ma, img->w, img->h, img->w, 0 }, sb = sa;
    sb.data = mb;
    cr_assert_eq(seg_run(s, &fa, 1, &sa, NULL, NULL), 0);
    cr_assert_eq(seg_run(s, &fb, 1, &sb, NULL, NULL), 0);
    struct seg_frame both[2] = { fa, fb };
    struct seg_mask pm[2] = { sa, sb };
    pm[0].data = pair;
    pm[1].data = pair + n;
    cr_assert_eq(seg_run(s, both, 2, pm, NULL, NULL), 0);
    cr_assert_eq(max_diff(pair, ma, n), 0, "frame 0 of a batch differs");
    cr_assert_eq(max_diff(pair + n, mb, n), 0, "frame 1 of a batch differs");
    seg_free(&s);
    cr_assert_gt(timg_mean(&(struct timg_mask){ img->w, img->h, ma }, 95, 40, 135, 80), 200);

    /* smooth 0.5 with every pixel still and no cut detection: B after A is
     * (B + 0.5 A) / 1.5 rounded; after reset, B alone (the average alone:
     * no hold) */
    struct vr_config c5 = tseg_cfg("{\"smooth\": 0.5, \"smooth_still\": 255, \"scene_cut\": 0, "
                                   "\"smooth_hold\": 0}");
    s = make(&c5, img->w, img->h, 0, 0, 1);
    uint8_t *m1 = malloc(n), *m2 = malloc(n);
    struct seg_mask s1 = { m1, img->w, img->h, img->w, 0 }, s2 = s1;
    s2.data = m2;
    cr_assert_eq(seg_run(s, &fa, 1, &s1, NULL, NULL), 0);
    cr_assert_eq(max_diff(m1, ma, n), 0, "first frame is not smoothed");
    cr_assert_eq(seg_run(s, &fb, 1, &s2, NULL, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        int want = (int)((mb[i] + 0.5 * ma[i]) / 1.5 + 0.5);
        cr_assert_leq(abs(m2[i] - want), 1, "px %zu: %d, want %d", i, m2[i], want);
    }
    seg_reset(s);
    cr_assert_eq(seg_run(s, &fb, 1, &s2, NULL, NULL), 0);
    cr_assert_eq(max_diff(m2, mb, n), 0, "seg_reset did not clear the state");
    seg_free(&s);
    free(m1);
    free(m2);
    free(ma);
    free(mb);
    free(pair);
    free(gray);
    vio_image_free(&img);
}

/* Converts the astronaut to raw 8-bit YUV (BT.709 limited) with ffmpeg. */
static uint8_t *yuv_file(const char *pix, size_t size)
{
    char dir[64], p[128];
    timg_tmpdir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/a.yuv", dir);
    cr_assert_eq(tsh("ffmpeg -v error -y -i %s -vf "
                         "scale=out_color_matrix=bt709:out_range=tv,format=%s "
                         "-f rawvideo %s", ASTRO, pix, p), 0);
    uint8_t *buf = malloc(size);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(buf, 1, size, f), size);
    fclose(f);
    tsh("rm -rf %s", dir);
    return buf;
}

Test(seg_api, yuv_frames_give_the_rgb_mask, .timeout = 60)
{
    struct vio_image *img = NULL;
    cr_assert_eq(vio_image_read(ASTRO, &img, NULL), 0);
    const int w = img->w, h = img->h;
    const size_t n = (size_t)w * h;
    struct vr_config c = tseg_cfg(NULL);
    struct seg *s = make(&c, w, h, 0, 0, 1);
    uint8_t *m_rgb = malloc(n), *m_yuv = malloc(n);
    struct seg_mask sm = { m_rgb, w, h, w, 0 };
    struct seg_frame f = rgb(img);
    cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, NULL), 0);

    uint8_t *p420 = yuv_file("yuv420p", n * 3 / 2), *nv12 = yuv_file("nv12", n * 3 / 2);
    struct seg_frame fy = { .fmt = SEG_PIX_YUV420P, .w = w, .h = h,
                            .data = { p420, p420 + n, p420 + n + n / 4 },
                            .linesize = { w, w / 2, w / 2 } };
    struct seg_frame fn = { .fmt = SEG_PIX_NV12, .w = w, .h = h,
                            .data = { nv12, nv12 + n }, .linesize = { w, w } };
    const struct seg_frame *fs[2] = { &fy, &fn };
    for (int k = 0; k < 2; k++) {
        sm.data = m_yuv;
        cr_assert_eq(seg_run(s, fs[k], 1, &sm, NULL, NULL), 0);
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += abs(m_yuv[i] - m_rgb[i]);
        cr_assert_lt(sum / n, 4.0, "%s: mean abs diff %.2f from the RGB mask",
                     k ? "nv12" : "yuv420p", sum / n);
    }
    seg_free(&s);
    free(p420);
    free(nv12);
    free(m_rgb);
    free(m_yuv);
    vio_image_free(&img);
}

Test(seg_api, smaller_output_mask, .timeout = 60)
{
    struct vio_image *img = NULL;
    cr_assert_eq(vio_image_read("tests/data/people.jpg", &img, NULL), 0);
    struct vr_config c = tseg_cfg(NULL);
    struct seg *s = make(&c, img->w, img->h, 320, 240, 1);
    struct timg_mask m = { 320, 240, malloc(320 * 240) };
    struct seg_mask sm = { m.v, 320, 240, 320, 0 };
    struct seg_frame f = rgb(img);
    cr_assert_eq(seg_run(s, &f, 1, &sm, NULL, NULL), 0);
    cr_assert_gt(timg_mean(&m, 25, 75, 60, 140), 180, "left player (half scale)");
    cr_assert_lt(timg_mean(&m, 120, 30, 210, 170), 40, "wall (half scale)");
    seg_free(&s);
    free(m.v);
    vio_image_free(&img);
}

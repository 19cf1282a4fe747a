/*
 * g-seg-engine.c - the whole engine, SEG_CUDA against SEG_CPU, on real
 * frames: tests/data/people.jpg converted to NV12 (and P010) in the test,
 * as mono frames and as side-by-side VR frames, three frames a call so the
 * batching and the temporal smoothing are covered, balanced profile (mask
 * at half size, guided refinement). The masks must stay within 0.02 (5 of
 * 255) of the CPU engine's, whose network is float32, both for the fp16 and
 * the fp32 network; the host-memory path must equal the device path. The
 * hold is off here (see run_case).
 */
#include "util-frame.h"

#include "config.h"
#include "paths.h"
#include "seg.h"
#include "vio_image.h"

#define NF 3
#define MASK_TOL 5 /* 0.02 * 255 */

struct mask_set {
    uint8_t *h[NF];   /* host masks */
    uint8_t *d[NF];   /* device masks */
};

static void run_case(const char *name, enum seg_layout layout, int w, int h, int fmt,
                     const char *precision)
{
    char path[4096];
    struct vio_image *img = NULL;
    vr_err err = { 0, "" };
    cr_assert_eq(vr_data_path("tests/data/people.jpg", path, sizeof path), 0);
    cr_assert_eq(vio_image_read(path, &img, &err), 0, "%s", err.msg);

    struct vr_config cfg;
    cr_assert_eq(config_load_profile(&cfg, "balanced", &err), 0, "%s", err.msg);
    snprintf(cfg.precision, sizeof cfg.precision, "%s", precision);
    /* The still-area hold keeps a pixel's last output while the average
     * stays within smooth_hold levels of it, so a float difference between
     * the engines can become a difference of up to that margin where one
     * holds and the other refreshes. It is tested bit-exact on its own
     * (g_seg_frame_temporal); here the engines' float paths are compared. */
    cfg.smooth_hold = 0;
    const int ow = (int)(w * cfg.output_scale), oh = (int)(h * cfg.output_scale);

    struct gf_frame g[NF];
    struct seg_frame hf[NF], df[NF];
    uint8_t *rgb = malloc((size_t)w * h * 3);
    cr_assert(rgb);
    for (int i = 0; i < NF; i++) {
        gf_frame_alloc(&g[i], fmt, w, h, 0);
        gf_clip_frame(img, i, w, h, layout, rgb);
        gf_frame_from_rgb(&g[i], rgb, w * 3);
        gf_frame_upload(&g[i]);
        hf[i] = g[i].host;
        df[i] = g[i].dev;
    }

    struct seg_opts o = { .backend = SEG_CPU, .cfg = &cfg, .layout = layout, .in_w = w,
                          .in_h = h, .out_w = ow, .out_h = oh, .max_batch = NF };
    struct seg *cpu = NULL, *gpu = NULL;
    cr_assert_eq(seg_create(&o, &cpu, &err), 0, "%s", err.msg);
    o.backend = SEG_CUDA;
    cr_assert_eq(seg_create(&o, &gpu, &err), 0, "%s", err.msg);

    struct seg_mask cm[NF], gm[NF], hm[NF];
    uint8_t *dmask;
    GF_CUDA(cudaMalloc((void **)&dmask, (size_t)NF * ow * oh));
    GF_CUDA(cudaMemset(dmask, 0xa5, (size_t)NF * ow * oh));
    for (int i = 0; i < NF; i++) {
        cm[i] = (struct seg_mask){ malloc((size_t)ow * oh), ow, oh, ow, 0 };
        hm[i] = (struct seg_mask){ malloc((size_t)ow * oh), ow, oh, ow, 0 };
        gm[i] = (struct seg_mask){ dmask + (size_t)i * ow * oh, ow, oh, ow, 1 };
        cr_assert(cm[i].data && hm[i].data);
        memset(hm[i].data, 0x5a, (size_t)ow * oh);
    }
    struct seg_timing tc, tg;
    cr_assert_eq(seg_run(cpu, hf, NF, cm, &tc, &err), 0, "cpu: %s", err.msg);
    cr_assert_eq(seg_run(gpu, df, NF, gm, &tg, &err), 0, "cuda: %s", err.msg);
    seg_reset(gpu);
    cr_assert_eq(seg_run(gpu, hf, NF, hm, NULL, &err), 0, "cuda, host memory: %s", err.msg);

    uint8_t *got = malloc((size_t)ow * oh);
    cr_assert(got);
    for (int i = 0; i < NF; i++) {
        GF_CUDA(cudaMemcpy(got, gm[i].data, (size_t)ow * oh, cudaMemcpyDeviceToHost));
        int worst = 0;
        double sum = 0.0, ref_sum = 0.0;
        for (size_t k = 0; k < (size_t)ow * oh; k++) {
            int d = abs((int)got[k] - (int)cm[i].data[k]);
            worst = d > worst ? d : worst;
            sum += d;
            ref_sum += cm[i].data[k];
        }
        cr_log_info("%s frame %d: max |cuda - cpu| %d/255, mean %.4f; person %.1f%% of the "
                    "mask; cpu %.1f ms, cuda %.2f ms (pre %.2f net %.2f post %.2f)", name, i,
                    worst, sum / ((double)ow * oh), 100.0 * ref_sum / 255.0 / ((double)ow * oh),
                    tc.preprocess + tc.inference + tc.postprocess,
                    tg.preprocess + tg.inference + tg.postprocess, tg.preprocess,
                    tg.inference, tg.postprocess);
        cr_expect(worst <= MASK_TOL, "%s frame %d: CUDA mask off the CPU mask by %d/255",
                  name, i, worst);
        cr_expect(ref_sum > 0.02 * 255.0 * ow * oh, "%s frame %d: the CPU engine finds no "
                  "person in people.jpg (%.0f)", name, i, ref_sum);
        cr_expect(memcmp(got, hm[i].data, (size_t)ow * oh) == 0,
                  "%s frame %d: host-memory path differs from device path", name, i);
    }
    free(got);
    for (int i = 0; i < NF; i++) {
        free(cm[i].data);
        free(hm[i].data);
        gf_frame_free(&g[i]);
    }
    cudaFree(dmask);
    seg_free(&cpu);
    seg_free(&gpu);
    cr_assert_null(gpu);
    free(rgb);
    vio_image_free(&img);
}

Test(g_seg_engine, cuda_vs_cpu_mono_nv12_fp16, .timeout = 120)
{
    setenv("VR_NO_TUNE", "1", 1); /* the profile's precision, not a cached choice */
    run_case("mono nv12 fp16", SEG_LAYOUT_MONO, 640, 480, SEG_PIX_NV12, "fp16");
}

Test(g_seg_engine, cuda_vs_cpu_sbs_nv12_fp16, .timeout = 120)
{
    setenv("VR_NO_TUNE", "1", 1);
    run_case("sbs nv12 fp16", SEG_LAYOUT_SBS, 1920, 960, SEG_PIX_NV12, "fp16");
}

Test(g_seg_engine, cuda_vs_cpu_sbs_p010_fp32, .timeout = 120)
{
    setenv("VR_NO_TUNE", "1", 1);
    run_case("sbs p010 fp32", SEG_LAYOUT_SBS, 1280, 640, SEG_PIX_P010, "fp32");
}

/*
 * g-seg-people-cuda.c - the people tier (`people: "pose"`) in the CUDA
 * backend against the CPU engine's, on a real clip: the first frames of
 * tests/data/video/made.mkv (960x480 SBS, YUV420P), each pixel doubled to
 * 1920x960 so an eye is a 960 px picture with its 4x4 crops (the whole
 * tier: 17 detector inputs an eye, the window over 3 frames).
 *
 * - tier_equals_cpu: people_cu_eye against people_eye on the same frames
 *   and eyes, each from a zero work mask: the same people pasted, and the
 *   work masks equal but for the nets' float32 rounding (g_net_pose: the
 *   landmark logits within 1.6e-4 of their scale) and a u8 step of the
 *   eye picture (frame_preprocess's twins): mean |gpu - cpu| <= 2e-3 and
 *   at most 0.5% of the pixels off by more than 0.05.
 * - tier_with_zoom_equals_cpu: the same with `people_zoom` 2 (the zoomed
 *   crops batched with the plain ones);
 * - tier_with_two_zooms_equals_cpu: with `people_zoom` 2 and
 *   `people_zoom2` 1.7 (a batch of 17 + 64 + 64).
 * - engine_equals_cpu: the whole engine with configs/quality-people.json,
 *   SEG_CUDA against SEG_CPU (the hold off, as g_seg_engine): where the
 *   CPU engine's tier changes the matte (> 32 levels against the profile
 *   without it), the CUDA matte is within 16 levels of the CPU's at >= 98%
 *   of those pixels, and within 5 levels at >= 99.5% of all pixels. Before
 *   h39t the CUDA backend refused the option.
 */
#include "util-frame.h"

#include "config.h"
#include "paths.h"
#include "people.h"
#include "people_cuda.h"
#include "seg.h"
#include "vio_video.h"

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>

#define NF 3
#define SRC_W 960
#define SRC_H 480
#define W (2 * SRC_W)
#define H (2 * SRC_H)

/* The first NF frames of made.mkv, each pixel doubled, as YUV420P frames
 * in host and device memory. */
static void made_frames(struct gf_frame *g)
{
    char path[4096];
    vr_err err = { 0, "" };
    cr_assert_eq(vr_data_path("tests/data/video/made.mkv", path, sizeof path), 0);
    struct vio_in_opts o = { 0 };
    o.path = path;
    struct vio_in *in = NULL;
    cr_assert_eq(vio_in_open(&o, &in, &err), 0, "%s", err.msg);
    const struct vio_info *info = vio_in_info(in);
    cr_assert(info->w == SRC_W && info->h == SRC_H && info->sw_fmt == AV_PIX_FMT_YUV420P,
              "made.mkv: %dx%d format %d", info->w, info->h, info->sw_fmt);
    AVFrame *fr = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    cr_assert(fr && pkt);
    int n = 0, ev;
    while (n < NF && (ev = vio_in_next(in, fr, pkt, &err)) > 0) {
        if (ev == VIO_PACKET) {
            av_packet_unref(pkt);
            continue;
        }
        gf_frame_alloc(&g[n], SEG_PIX_YUV420P, W, H, info->full_range);
        for (int p = 0; p < 3; p++) {
            const int pw = p ? W / 2 : W, ph = p ? H / 2 : H;
            uint8_t *dst = (uint8_t *)g[n].host.data[p];
            for (int y = 0; y < ph; y++)
                for (int x = 0; x < pw; x++)
                    dst[(size_t)y * g[n].host.linesize[p] + x] =
                        fr->data[p][(size_t)(y / 2) * fr->linesize[p] + x / 2];
        }
        gf_frame_upload(&g[n]);
        av_frame_unref(fr);
        n++;
    }
    cr_assert_eq(n, NF, "made.mkv: %d frames read (%s)", n, err.msg);
    av_frame_free(&fr);
    av_packet_free(&pkt);
    vio_in_free(&in);
}

static void load_profile(struct vr_config *cfg, const char *name)
{
    vr_err err = { 0, "" };
    cr_assert_eq(config_load_profile(cfg, name, &err), 0, "%s", err.msg);
    cfg->smooth_hold = 0; /* as g_seg_engine: the engines' float paths compared */
}

/* people_cu_eye against people_eye on the made frames, quality-people
 * with people_zoom = zoom and people_zoom2 = zoom2 (0: off), the layouts
 * split between the eyes or not. */
static void tier_equals(double zoom, double zoom2, int split)
{
    struct gf_frame g[NF];
    made_frames(g);
    struct vr_config cfg;
    load_profile(&cfg, "quality-people");
    cfg.people_zoom = zoom;
    cfg.people_zoom2 = zoom2;
    cfg.people_zoom_split = split;
    const struct frame_rect eye[2] = { { 0, 0, W / 2, H }, { W / 2, 0, W / 2, H } };
    const int ww = 1024, wh = 1024;
    vr_err err = { 0, "" };
    struct people *cpu = NULL;
    struct people_cu *gpu = NULL;
    cr_assert_eq(people_create(&cfg, eye[0].w, eye[0].h, 2, &cpu, &err), 0, "%s", err.msg);
    cr_assert_eq(people_cu_create(&cfg, eye, 2, &gpu, NULL, &err), 0, "%s", err.msg);
    float *want = calloc((size_t)ww * wh, sizeof *want);
    float *d_work = NULL;
    cr_assert(want);
    GF_CUDA(cudaMalloc((void **)&d_work, (size_t)ww * wh * sizeof *d_work));
    int pasted = 0;
    for (int f = 0; f < NF; f++) {
        struct frame_batch fb;
        frame_batch_one(&fb, &g[f].dev);
        for (int e = 0; e < 2; e++) {
            memset(want, 0, (size_t)ww * wh * sizeof *want);
            GF_CUDA(cudaMemset(d_work, 0, (size_t)ww * wh * sizeof *d_work));
            int nc = -1, ng = -1;
            cr_assert_eq(people_eye(cpu, e, &g[f].host, eye[e], want, ww, wh, &nc, &err), 0,
                         "cpu: %s", err.msg);
            cr_assert_eq(people_cu_eye(gpu, e, &fb, 0, d_work, ww, wh, &ng, 0, &err), 0,
                         "cuda: %s", err.msg);
            float *got = gf_dev_floats(d_work, (size_t)ww * wh);
            double sum = 0.0, mass = 0.0;
            size_t off = 0, at = 0;
            const double worst = gf_max_abs(got, want, (size_t)ww * wh, &at);
            for (size_t i = 0; i < (size_t)ww * wh; i++) {
                const double d = fabs((double)got[i] - (double)want[i]);
                sum += d;
                mass += want[i];
                off += d > 0.05;
            }
            const double mean = sum / ((double)ww * wh), frac = (double)off / ((double)ww * wh);
            cr_log_info("frame %d eye %d: %d people pasted (cuda %d), work mass %.4f, "
                        "|cuda - cpu| max %.4f mean %.5f, %.3f%% off by > 0.05", f, e, nc, ng,
                        mass / ((double)ww * wh), worst, mean, 100.0 * frac);
            cr_expect_eq(ng, nc, "frame %d eye %d: cuda pasted %d people, cpu %d", f, e, ng, nc);
            cr_expect(mean <= 2e-3 && frac <= 0.005, "frame %d eye %d: mean |cuda - cpu| %g, "
                      "%.3f%% of the pixels off by > 0.05", f, e, mean, 100.0 * frac);
            pasted += nc;
            free(got);
        }
    }
    cr_expect_gt(pasted, 0, "the CPU tier pasted no one: the case compares nothing");
    cudaFree(d_work);
    free(want);
    people_free(&cpu);
    people_cu_free(&gpu);
    cr_assert_null(gpu);
    for (int f = 0; f < NF; f++)
        gf_frame_free(&g[f]);
}

Test(g_seg_people_cuda, tier_equals_cpu, .timeout = 300)
{
    tier_equals(0, 0, 0);
}

/* The zoomed crops (people_zoom 2: 64 crops of 112 px an eye, one
 * detector batch of 81 with the plain ones) and their ROI filter, shared
 * code (people_crops_all, people_crop_found), give the CPU's people. */
Test(g_seg_people_cuda, tier_with_zoom_equals_cpu, .timeout = 600)
{
    tier_equals(2.0, 0, 0);
}

/* A second zoom (people_zoom2 1.7: 64 more crops, of 132 px) in the
 * same batch: the GPU's batch is sized by people_crops_max. */
Test(g_seg_people_cuda, tier_with_two_zooms_equals_cpu, .timeout = 600)
{
    tier_equals(2.0, 1.7, 0);
}

/* The two layouts split between the eyes (people_zoom_split: eye 0 takes
 * zoom 2's 64 crops, eye 1 zoom 1.7's): each eye's batch is its own
 * layout's, and the people equal the CPU's. */
Test(g_seg_people_cuda, tier_with_split_zooms_equals_cpu, .timeout = 600)
{
    tier_equals(2.0, 1.7, 1);
}

/* The NF masks of one engine on the frames (host frames for SEG_CPU,
 * device frames for SEG_CUDA), into out[f] (W x H). */
static void engine_masks(int backend, const char *profile, struct gf_frame *g, uint8_t **out)
{
    struct vr_config cfg;
    load_profile(&cfg, profile);
    vr_err err = { 0, "" };
    struct seg_opts o = { .backend = backend, .cfg = &cfg, .layout = SEG_LAYOUT_SBS,
                          .in_w = W, .in_h = H, .out_w = W, .out_h = H, .max_batch = NF };
    struct seg *s = NULL;
    cr_assert_eq(seg_create(&o, &s, &err), 0, "%s %s: %s", backend == SEG_CPU ? "cpu" : "cuda",
                 profile, err.msg);
    struct seg_frame fr[NF];
    struct seg_mask m[NF];
    for (int f = 0; f < NF; f++) {
        fr[f] = backend == SEG_CPU ? g[f].host : g[f].dev;
        out[f] = malloc((size_t)W * H);
        cr_assert(out[f]);
        m[f] = (struct seg_mask){ out[f], W, H, W, 0 };
    }
    cr_assert_eq(seg_run(s, fr, NF, m, NULL, &err), 0, "%s %s: %s",
                 backend == SEG_CPU ? "cpu" : "cuda", profile, err.msg);
    seg_free(&s);
}

Test(g_seg_people_cuda, engine_equals_cpu, .timeout = 600)
{
    setenv("VR_NO_TUNE", "1", 1); /* the profile's precision, not a cached choice */
    struct gf_frame g[NF];
    made_frames(g);
    uint8_t *none[NF], *cpu[NF], *gpu[NF];
    engine_masks(SEG_CPU, "quality", g, none);
    engine_masks(SEG_CPU, "quality-people", g, cpu);
    engine_masks(SEG_CUDA, "quality-people", g, gpu);
    size_t tier_px = 0, tier_near = 0;
    for (int f = 0; f < NF; f++) {
        size_t t = 0, near = 0, close5 = 0;
        int worst = 0;
        for (size_t i = 0; i < (size_t)W * H; i++) {
            const int d = abs((int)gpu[f][i] - (int)cpu[f][i]);
            worst = d > worst ? d : worst;
            close5 += d <= 5;
            if (abs((int)cpu[f][i] - (int)none[f][i]) > 32) {
                t++;
                near += d <= 16;
            }
        }
        cr_log_info("frame %d: the tier changes %.3f%% of the matte; there cuda within 16 of "
                    "cpu at %.2f%%; everywhere within 5 at %.3f%%, max |cuda - cpu| %d", f,
                    100.0 * t / ((double)W * H), t ? 100.0 * near / t : 100.0,
                    100.0 * close5 / ((double)W * H), worst);
        cr_expect(close5 >= 0.995 * W * H, "frame %d: %.3f%% of the CUDA matte within 5 "
                  "levels of the CPU's", f, 100.0 * close5 / ((double)W * H));
        tier_px += t;
        tier_near += near;
    }
    cr_expect_gt(tier_px, (size_t)(0.001 * W * H), "the CPU tier changes %zu pixels: the case "
                 "compares nothing", tier_px);
    cr_expect(tier_near >= 0.98 * tier_px, "where the tier works, the CUDA matte is within 16 "
              "levels of the CPU's at %.2f%% of %zu pixels", 100.0 * tier_near / tier_px,
              tier_px);
    for (int f = 0; f < NF; f++) {
        free(none[f]);
        free(cpu[f]);
        free(gpu[f]);
        gf_frame_free(&g[f]);
    }
}

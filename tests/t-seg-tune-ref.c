/*
 * t-seg-tune-ref.c - the auto-tuner's plain-C half (kernels/seg/tune_ref.c),
 * without a GPU: a picture is stretched into each eye alike; the NV12 of
 * grey and of pure red are BT.709 limited range's values worked out by
 * hand; the reference mask is the CPU engine's even when the options name
 * the CUDA backend (which a CPU-only build refuses); the pick takes the
 * fastest row within TUNE_MAX_ABS, stores it in the cache file, and fails
 * naming the bound when no row is within it.
 */
#include "tune.h"
#include "tune_ref.h"
#include "util-seg.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(seg_tune_ref, picture_in_every_eye)
{
    const uint8_t px[2 * 2 * 3] = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120 };
    const struct tune_image img = { 2, 2, 6, px };
    enum { W = 16, H = 8 };
    uint8_t rgb[W * H * 3], again[W * H * 3];
    tune_frame_make(rgb, W, H, SEG_LAYOUT_SBS, &img);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W / 2; x++) {
            const uint8_t *l = rgb + (y * W + x) * 3, *r = l + W / 2 * 3;
            const uint8_t *want = px + (y * 2 / H) * 6 + (x * 2 / (W / 2)) * 3;
            cr_assert(!memcmp(l, want, 3) && !memcmp(r, want, 3), "pixel %d,%d", x, y);
        }
    tune_frame_make(rgb, W, H, SEG_LAYOUT_MONO, NULL);
    tune_frame_make(again, W, H, SEG_LAYOUT_MONO, NULL);
    cr_assert(!memcmp(rgb, again, sizeof rgb), "the synthetic scene changed between calls");
}

Test(seg_tune_ref, nv12_by_hand)
{
    uint8_t rgb[4 * 2 * 3], y[8], uv[4];
    memset(rgb, 128, sizeof rgb);
    tune_frame_nv12(rgb, 4, 2, y, uv);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(y[i], 126);   /* 16 + 219 * 128 / 255 = 125.9 */
    for (int i = 0; i < 4; i++)
        cr_assert_eq(uv[i], 128);
    for (int i = 0; i < 8; i++) {
        rgb[3 * i] = 255;
        rgb[3 * i + 1] = rgb[3 * i + 2] = 0;
    }
    tune_frame_nv12(rgb, 4, 2, y, uv);
    cr_assert_eq(y[0], 63);    /* 16 + 219 * 0.2126 */
    cr_assert_eq(uv[0], 102);  /* U: 128 - 224 * 0.2126 / 1.8556 */
    cr_assert_eq(uv[1], 240);  /* V: 128 + 224 * 0.7874 / 1.5748 */
}

Test(seg_tune_ref, reference_is_the_cpu_engine)
{
    enum { W = 64, H = 64 };
    struct vr_config c = tseg_cfg(NULL);
    static uint8_t rgb[W * H * 3], nv12[W * H * 3 / 2], ref[W * H], want[W * H];
    tune_frame_make(rgb, W, H, SEG_LAYOUT_MONO, NULL);
    tune_frame_nv12(rgb, W, H, nv12, nv12 + W * H);
    const struct seg_frame f = { .fmt = SEG_PIX_NV12, .w = W, .h = H,
                                 .data = { nv12, nv12 + W * H }, .linesize = { W, W } };
    struct seg_opts o = { .backend = SEG_CUDA, .cfg = &c, .in_w = W, .in_h = H, .out_w = W,
                          .out_h = H, .max_batch = 1 };
    vr_err e = { 0 };
    cr_assert_eq(tune_ref_mask(&o, &f, ref, &e), 0, "%s", e.msg);
    o.backend = SEG_CPU;
    struct seg *s = NULL;
    struct seg_mask m = { want, W, H, W, 0 };
    cr_assert_eq(seg_create(&o, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(seg_run(s, &f, 1, &m, NULL, &e), 0, "%s", e.msg);
    seg_free(&s);
    cr_assert(!memcmp(ref, want, sizeof ref));
    cr_assert_float_eq(tune_mask_diff(ref, want, sizeof ref), 0.0, 1e-12);
    want[17] = ref[17] > 128 ? ref[17] - 51 : ref[17] + 51;
    cr_assert_float_eq(tune_mask_diff(ref, want, sizeof ref), 0.2, 1e-9);
}

Test(seg_tune_ref, pick_fastest_within_bound)
{
    char dir[] = "/tmp/vr-tune-ref-XXXXXX";
    cr_assert(mkdtemp(dir));
    struct tune_report *r = calloc(1, sizeof *r);
    cr_assert(r);
    snprintf(r->cache_path, sizeof r->cache_path, "%s/tune.json", dir);
    snprintf(r->key_str, sizeof r->key_str, "test-gpu|model|cfg");
    r->best = -1;
    const double ms[] = { 5.0, 3.0, 4.0 };
    const int ok[] = { 1, 0, 1 };
    for (int i = 0; i < 3; i++) {
        r->rows[i] = (struct tune_row){ .frames = 4 * (i + 1), .ms_per_frame = ms[i],
                                        .max_abs = ok[i] ? 0.01 : 0.5, .ok = ok[i] };
        r->rows[i].net = (struct netcu_opts){ .max_batch = 8 * (i + 1), .fp16 = 1, .fused = i,
                                              .block = 256, .use_graph = 1 };
    }
    r->n_rows = 3;
    vr_err e = { 0 };
    cr_assert_eq(tune_pick(r, &e), 0, "%s", e.msg);
    cr_assert_eq(r->best, 2, "the fastest row within the bound is the third");
    struct tune_choice c;
    cr_assert_eq(tune_cache_load(r->cache_path, r->key_str, &c, &e), 0, "%s", e.msg);
    cr_assert(c.frames == 12 && c.net.fused == 2 && c.net.max_batch == 24 && c.ms_per_frame == 4.0);
    r->rows[0].ok = r->rows[2].ok = 0;
    r->best = -1;
    cr_assert_lt(tune_pick(r, &e), 0);
    cr_assert(strstr(e.msg, "0.02"), "%s", e.msg);
    unlink(r->cache_path);
    rmdir(dir);
    free(r);
}

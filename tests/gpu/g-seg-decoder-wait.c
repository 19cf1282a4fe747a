/*
 * g-seg-decoder-wait.c - the engine waits for work queued on the CUDA
 * context's legacy default stream before it reads device frames. That is
 * where libavcodec copies each NVDEC surface out, asynchronously; an engine
 * that did not wait read half-copied frames whenever the GPU was busy
 * (several workers on one GPU: 6-10 of 300 frames of an 8K clip differed
 * from one process's). Here the busy GPU is made, not hoped for: a 1 GiB
 * host-to-device copy is queued on the legacy stream ahead of the frame's
 * own copy, so the frame lands tens of milliseconds after seg_run is called.
 * Its mask must equal the mask of the same frame already in place.
 */
#include "util-frame.h"

#include "config.h"
#include "paths.h"
#include "seg.h"
#include "vio_image.h"

#define W 640
#define H 480
#define HOLDUP_BYTES ((size_t)1 << 30)

Test(g_seg_decoder_wait, frames_copied_on_the_legacy_stream_are_waited_for, .timeout = 120)
{
    setenv("VR_NO_TUNE", "1", 1);
    char path[4096];
    struct vio_image *img = NULL;
    vr_err err = { 0, "" };
    cr_assert_eq(vr_data_path("tests/data/people.jpg", path, sizeof path), 0);
    cr_assert_eq(vio_image_read(path, &img, &err), 0, "%s", err.msg);
    struct vr_config cfg;
    cr_assert_eq(config_load_profile(&cfg, "balanced", &err), 0, "%s", err.msg);
    const int ow = (int)(W * cfg.output_scale), oh = (int)(H * cfg.output_scale);

    /* people.jpg as an NV12 frame on the device */
    uint8_t *rgb = malloc((size_t)W * H * 3);
    cr_assert(rgb);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            memcpy(rgb + ((size_t)y * W + x) * 3,
                   img->data + (size_t)(y * img->h / H) * img->linesize + 3 * (x * img->w / W), 3);
    struct gf_frame g;
    gf_frame_alloc(&g, SEG_PIX_NV12, W, H, 0);
    gf_frame_from_rgb(&g, rgb, W * 3);
    gf_frame_upload(&g);

    struct seg_opts o = { .backend = SEG_CUDA, .cfg = &cfg, .layout = SEG_LAYOUT_MONO,
                          .in_w = W, .in_h = H, .out_w = ow, .out_h = oh, .max_batch = 1 };
    struct seg *gpu = NULL;
    cr_assert_eq(seg_create(&o, &gpu, &err), 0, "%s", err.msg);
    uint8_t *want = malloc((size_t)ow * oh), *got = malloc((size_t)ow * oh);
    cr_assert(want && got);
    struct seg_mask m = { want, ow, oh, ow, 0 };
    cr_assert_eq(seg_run(gpu, &g.dev, 1, &m, NULL, &err), 0, "%s", err.msg);
    seg_reset(gpu);

    /* the late frame: zeros until the legacy stream gets to its copy,
     * behind 1 GiB from pinned host memory */
    uint8_t *late, *holdup_d, *holdup_h;
    GF_CUDA(cudaMalloc((void **)&late, g.bytes));
    GF_CUDA(cudaMemset(late, 0, g.bytes));
    GF_CUDA(cudaMalloc((void **)&holdup_d, HOLDUP_BYTES));
    GF_CUDA(cudaMallocHost((void **)&holdup_h, HOLDUP_BYTES));
    memset(holdup_h, 1, HOLDUP_BYTES);
    GF_CUDA(cudaDeviceSynchronize());
    struct seg_frame lf = g.dev;
    for (int q = 0; q < 3; q++)
        if (g.dev.data[q])
            lf.data[q] = late + g.off[q];
    GF_CUDA(cudaMemcpyAsync(holdup_d, holdup_h, HOLDUP_BYTES, cudaMemcpyHostToDevice,
                            cudaStreamLegacy));
    GF_CUDA(cudaMemcpyAsync(late, g.dbuf, g.bytes, cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    m.data = got;
    cr_assert_eq(seg_run(gpu, &lf, 1, &m, NULL, &err), 0, "%s", err.msg);
    GF_CUDA(cudaDeviceSynchronize());

    size_t differ = 0;
    for (size_t k = 0; k < (size_t)ow * oh; k++)
        differ += got[k] != want[k];
    double person = 0;
    for (size_t k = 0; k < (size_t)ow * oh; k++)
        person += want[k];
    cr_assert_gt(person, 0.02 * 255.0 * ow * oh, "no person found in people.jpg: proves nothing");
    cr_assert_eq(differ, 0, "%zu of %d mask pixels differ: the engine read the frame before "
                 "the legacy stream's copy of it had landed", differ, ow * oh);

    cudaFreeHost(holdup_h);
    cudaFree(holdup_d);
    cudaFree(late);
    free(want);
    free(got);
    seg_free(&gpu);
    gf_frame_free(&g);
    free(rgb);
    vio_image_free(&img);
}

/*
 * g-worker-pipeline-matte.c - the matte handed from the engine to the GPU's
 * matte encoder in device memory (pipeline.c, matte_dev): whole pipeline
 * runs (NVDEC, SEG_CUDA, vrh264 on the GPU) whose video bytes equal those
 * of the same run with the matte downloaded and encoded from host memory
 * (pipe_opts.matte_via_host), with no download on the device path.
 */
#include "config.h"
#include "metrics.h"
#include "pipeline.h"
#include "util-pipeline.h"
#include "../util-video.h"

#include <criterion/criterion.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

static void run(const char *clip, const char *out, int via_host, struct metrics *m)
{
    struct pipe_opts o;
    gp_mask_opts(&o, "balanced", "{\"encoder\": \"vrh264\"}");
    o.matte_via_host = via_host;
    vr_err e = { 0 };
    char in[512], rel[128];
    snprintf(rel, sizeof rel, "tests/data/video/%s", clip);
    tv_data(in, sizeof in, rel);
    cr_assert_eq(pipeline_run(&o, in, out, m, &e), 0, "%s: %s", clip, e.msg);
}

/* Every video packet of path, concatenated (malloc'd), and their count. */
static uint8_t *video_bytes(const char *path, size_t *len, int *npkts)
{
    AVFormatContext *fc = NULL;
    cr_assert_geq(avformat_open_input(&fc, path, NULL, NULL), 0, "%s", path);
    cr_assert_geq(avformat_find_stream_info(fc, NULL), 0);
    int vs = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    cr_assert_geq(vs, 0);
    AVPacket *pkt = av_packet_alloc();
    uint8_t *buf = NULL;
    size_t n = 0;
    *npkts = 0;
    while (av_read_frame(fc, pkt) >= 0) {
        if (pkt->stream_index == vs) {
            buf = realloc(buf, n + (size_t)pkt->size);
            cr_assert(buf);
            memcpy(buf + n, pkt->data, (size_t)pkt->size);
            n += (size_t)pkt->size;
            (*npkts)++;
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    avformat_close_input(&fc);
    *len = n;
    return buf;
}

static void same_bytes_both_ways(const char *clip)
{
    char dir[256], host[512], dev[512];
    tv_tmpdir(dir, sizeof dir);
    snprintf(host, sizeof host, "%s/host.mkv", dir);
    snprintf(dev, sizeof dev, "%s/dev.mkv", dir);
    struct metrics mh, md;
    run(clip, host, 1, &mh);
    run(clip, dev, 0, &md);
    cr_assert_gt(mh.frames, 0);
    cr_assert_eq(md.frames, mh.frames);
    cr_assert_eq(mh.stage[MET_D2H].count, mh.frames, "the host path downloads every matte");
    cr_assert_eq(md.stage[MET_D2H].count, 0, "%s: %llu mattes went through the host", clip,
                 (unsigned long long)md.stage[MET_D2H].count);
    size_t lh, ld;
    int nh, nd;
    uint8_t *bh = video_bytes(host, &lh, &nh), *bd = video_bytes(dev, &ld, &nd);
    cr_assert_eq(nd, nh);
    cr_assert_eq(ld, lh, "%s: %zu bytes on the device path, %zu from the host", clip, ld, lh);
    cr_assert(!memcmp(bd, bh, lh), "%s: the streams differ", clip);
    free(bh);
    free(bd);
    tv_rmdir(dir);
}

Test(g_worker_pipeline_matte, device_matte_gives_the_host_paths_bytes_sbs, .init = quiet)
{
    same_bytes_both_ways("sbs.mkv");
}

Test(g_worker_pipeline_matte, device_matte_gives_the_host_paths_bytes_mono, .init = quiet)
{
    same_bytes_both_ways("mono.mkv");
}

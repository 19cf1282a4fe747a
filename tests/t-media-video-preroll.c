/*
 * t-media-video-preroll.c - a chunk's pre-roll (the GOP before its first
 * frame, decoded as references; its last frames warm the temporal filter
 * up) skips the pictures nothing refers to, in H.264 and single-layer HEVC
 * made with B-frames that are not references, and what it hands on (the
 * warm-up frames and the chunk's frames) is what a decode of the whole
 * file gives at the same timestamps, pixel for pixel (issue 43: the
 * pre-roll was most of a fleet chunk's time to its first frame).
 */
#include "util-video.h"
#include "vio_video.h"

#include <criterion/criterion.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

enum { NF = 50, W = 192, H = 96 };

/* Every frame of a decode: its pts in ms and its luma. */
struct frames {
    int n, warm;
    int64_t ms[NF];
    unsigned char *y[NF];
    int64_t dropped;
};

static void frames_free(struct frames *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->y[i]);
}

static void decode(const char *path, int64_t until_ms, int64_t warm_ms, struct frames *out)
{
    memset(out, 0, sizeof *out);
    struct vio_in *in = NULL;
    struct vio_in_opts o = { .path = path, .threads = 0, .preroll_until_ms = until_ms,
                             .warmup_from_ms = warm_ms };
    vr_err e = { 0 };
    cr_assert_eq(vio_in_open(&o, &in, &e), 0, "%s", e.msg);
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    int rc;
    while ((rc = vio_in_next(in, f, p, &e)) > 0) {
        if ((rc == VIO_FRAME || rc == VIO_WARMUP) && out->n < NF) {
            AVRational tb = vio_in_info(in)->time_base;
            out->ms[out->n] = av_rescale_q(f->pts, tb, (AVRational){ 1, 1000 });
            unsigned char *y = out->y[out->n++] = malloc((size_t)W * H);
            cr_assert_not_null(y);
            for (int r = 0; r < H; r++)
                memcpy(y + (size_t)r * W, f->data[0] + (size_t)r * f->linesize[0], W);
            out->warm += rc == VIO_WARMUP;
        }
        av_frame_unref(f);
        av_packet_unref(p);
    }
    cr_assert_eq(rc, VIO_EOF, "%s: %s", path, e.msg);
    out->dropped = vio_in_preroll_dropped(in);
    av_frame_free(&f);
    av_packet_free(&p);
    vio_in_free(&in);
}

/* One GOP of NF frames at 25 fps, three B-frames between references that
 * nothing refers to (no pyramid). */
static void check(const char *enc, const char *params)
{
    char dir[256], clip[400], cmd[1200];
    tv_tmpdir(dir, sizeof dir);
    snprintf(clip, sizeof clip, "%s/gop.mkv", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=25 "
             "-frames:v %d -c:v %s %s -pix_fmt yuv420p '%s'", W, H, NF, enc, params, clip);
    cr_assert_eq(system(cmd), 0, "%s", cmd);

    struct frames all, pre;
    decode(clip, 0, 0, &all);
    cr_assert_eq(all.n, NF);
    /* a pre-roll of 20 frames: 15 dropped, the next 5 warm-up frames */
    int64_t until = all.ms[20], warm = all.ms[15];
    decode(clip, until, warm, &pre);
    cr_assert_eq(pre.warm, 5, "%s: %d warm-up frames", enc, pre.warm);
    cr_assert_eq(pre.n, NF - 15, "%s: %d frames handed on", enc, pre.n);
    for (int i = 0; i < pre.n; i++) {
        cr_assert_eq(pre.ms[i], all.ms[15 + i], "%s: frame %d's time", enc, i);
        cr_assert(!memcmp(pre.y[i], all.y[15 + i], (size_t)W * H),
                  "%s: frame at %lld ms differs from the whole file's decode", enc,
                  (long long)pre.ms[i]);
    }
    /* of the 15 dropped, the 11 or so B-frames were never decoded */
    cr_assert_leq(pre.dropped, 6, "%s: %lld pre-roll frames decoded to be dropped", enc,
                  (long long)pre.dropped);
    frames_free(&all);
    frames_free(&pre);
    tv_rmdir(dir);
}

Test(media_video_preroll, h264_preroll_skips_unreferenced_pictures, .init = quiet)
{
    check("libx264", "-g 50 -keyint_min 50 -sc_threshold 0 -bf 3 -b_strategy 0 "
          "-x264-params b-pyramid=none:no-info=1");
}

Test(media_video_preroll, hevc_preroll_skips_unreferenced_pictures, .init = quiet)
{
    check("libx265", "-x265-params log-level=error:keyint=50:min-keyint=50:scenecut=0:"
          "bframes=3:b-adapt=0:b-pyramid=0:open-gop=0");
}

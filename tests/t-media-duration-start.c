/*
 * t-media-duration-start.c - the truncation check (vio_check_duration)
 * measures the video from its first frame when the stream's start time is
 * later. Seen on an H200: an 8K H.264 matte of 1.2 MB frames from vrh264,
 * whose first 5 packets libavformat reads with no dts while it probes,
 * got the 6th packet's time (0.167 s) as its start; 12 whole frames then
 * read as "the video ends at 0.233s but the container declares 0.400s".
 * The same late start is set here on a real clip, read whole.
 */
#include "util-video.h"
#include "vio_video.h"

#include <criterion/criterion.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <string.h>

struct read_span {
    long long frames;
    int64_t first, end; /* the first packet's pts, the last's pts + duration */
};

static AVFormatContext *open_clip(const char *path, int *vi)
{
    AVFormatContext *fmt = NULL;
    cr_assert_eq(avformat_open_input(&fmt, path, NULL, NULL), 0, "%s", path);
    cr_assert_geq(avformat_find_stream_info(fmt, NULL), 0);
    *vi = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    cr_assert_geq(*vi, 0);
    return fmt;
}

static struct read_span read_whole(AVFormatContext *fmt, int vi)
{
    struct read_span s = { 0, AV_NOPTS_VALUE, AV_NOPTS_VALUE };
    AVPacket *pkt = av_packet_alloc();
    cr_assert_not_null(pkt);
    while (av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index == vi && pkt->pts != AV_NOPTS_VALUE) {
            if (s.first == AV_NOPTS_VALUE || pkt->pts < s.first)
                s.first = pkt->pts;
            if (s.end == AV_NOPTS_VALUE || pkt->pts + pkt->duration > s.end)
                s.end = pkt->pts + pkt->duration;
            s.frames++;
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    cr_assert_gt(s.frames, 10);
    return s;
}

Test(media_duration_start, a_late_start_time_is_not_a_cut)
{
    char path[512];
    tv_data(path, sizeof path, "tests/data/video/sbs.mkv");
    int vi;
    AVFormatContext *fmt = open_clip(path, &vi);
    const struct read_span s = read_whole(fmt, vi);
    AVStream *st = fmt->streams[vi];
    vr_err err = { 0 };
    /* as read: whole, either way */
    cr_assert_eq(vio_check_duration(path, fmt, vi, s.frames, s.first, s.end, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(vio_check_duration(path, fmt, vi, s.frames, AV_NOPTS_VALUE, s.end, &err), 0,
                 "%s", err.msg);
    /* the start as libavformat gave the 8K matte: 6 frames late */
    const double fps = av_q2d(av_guess_frame_rate(fmt, st, NULL));
    cr_assert_gt(fps, 0);
    st->start_time = s.first + av_rescale_q(1, av_inv_q(av_d2q(fps / 6.0, 1000)), st->time_base);
    cr_assert_eq(vio_check_duration(path, fmt, vi, s.frames, s.first, s.end, &err), 0,
                 "whole, but said cut: %s", err.msg);
    /* without the first frame's time the old answer comes back: the check
     * is what changed, not the file */
    cr_assert_eq(vio_check_duration(path, fmt, vi, s.frames, AV_NOPTS_VALUE, s.end, &err),
                 VR_EFORMAT);
    cr_assert(strstr(err.msg, "truncated"), "%s", err.msg);
    /* and a file really cut short is still refused with its first frame known */
    err.msg[0] = 0;
    const int64_t half = s.first + (s.end - s.first) / 2;
    cr_assert_eq(vio_check_duration(path, fmt, vi, s.frames / 2, s.first, half, &err),
                 VR_EFORMAT);
    cr_assert(strstr(err.msg, "truncated"), "%s", err.msg);
    avformat_close_input(&fmt);
}

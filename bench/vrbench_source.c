/*
 * vrbench_source.c - `vrbench-video source SRC [CHUNK_SECONDS]`: how fast a
 * source is planned and read, SRC a file or a URL (http_io.h), so the two
 * can be compared (docs/PERF.md, "Sources over HTTP"). Prints the plan's
 * time and bytes read (remux_plan: the index and one packet per cut), then
 * a read of every packet through src_open_input (what a worker's range
 * read does, without the decode) in MB/s.
 */
#include "clock.h"
#include "http_io.h"
#include "remux_range.h"
#include "src_io.h"

#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_source(int argc, char **argv);

int cmd_source(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: vrbench-video source SRC [CHUNK_SECONDS]\n");
        return 2;
    }
    const char *src = argv[2];
    http_io_configure_private(1); /* the operator's own bench: loopback allowed */
    struct remux_plan_opts o = { .chunk_seconds = argc > 3 ? atof(argv[3]) : 10 };
    struct remux_plan pl;
    vr_err e = { 0 };
    double t0 = clock_mono_s();
    if (remux_plan(src, &o, &pl, &e) < 0) {
        fprintf(stderr, "plan: %s\n", e.msg);
        return 1;
    }
    double tp = clock_mono_s() - t0;
    printf("plan: %d chunks of %.0f s video in %.3f s, %.1f MB read (%s)\n", pl.nchunks,
           pl.duration_s, tp, pl.bytes_read / 1e6, pl.method);
    remux_plan_release(&pl);

    AVFormatContext *ic = NULL;
    t0 = clock_mono_s();
    if (src_open_input(&ic, src, NULL) < 0) {
        src_io_take_error(&e);
        fprintf(stderr, "open: %s\n", e.msg[0] ? e.msg : "failed");
        return 1;
    }
    AVPacket *pkt = av_packet_alloc();
    long long bytes = 0, n = 0;
    while (pkt && av_read_frame(ic, pkt) >= 0) {
        bytes += pkt->size;
        n++;
        av_packet_unref(pkt);
    }
    double tr = clock_mono_s() - t0;
    printf("read: %lld packets, %.1f MB in %.3f s: %.0f MB/s\n", n, bytes / 1e6, tr,
           bytes / 1e6 / tr);
    av_packet_free(&pkt);
    src_close_input(&ic);
    return 0;
}

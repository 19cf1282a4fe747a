/*
 * vrbench_preroll.c - `vrbench-video preroll SRC CHUNK_SECONDS WARMUP`:
 * what each chunk of SRC's plan pays before its first output frame
 * (issue 43), on the CPU: the plan as the controller makes it (ranges,
 * remux_plan with that warm-up; with PIECE_SECONDS an elastic job's: pieces
 * that long grouped into chunks, remux_plan_groups), then each range decoded as a worker
 * decodes it (vio_in) up to its first output frame. Prints per chunk its
 * frames, the pre-roll's frames decoded and dropped and the warm-up frames
 * (the numbers a worker's set-up line reports), then their totals and
 * means. Decodes ~a GOP a chunk, not the source.
 */
#include "remux_range.h"
#include "vio_video.h"

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_preroll(int argc, char **argv);

/* Chunk r decoded up to its first output frame: its dropped and warm-up
 * frames. 0 or -1 (with the error printed). */
static int preroll_chunk(const char *src, const struct chunk_range *r, long long *dropped,
                         long long *warmups)
{
    struct vio_in_opts io = { .path = src, .range = r };
    struct vio_in *in = NULL;
    vr_err e = { 0 };
    AVFrame *fr = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    int ev = fr && p ? vio_in_open(&io, &in, &e) : -1;
    while (ev >= 0 && (ev = vio_in_next(in, fr, p, &e)) > 0) {
        av_frame_unref(fr);
        av_packet_unref(p);
        if (ev == VIO_FRAME)
            break;
    }
    if (ev < 0)
        fprintf(stderr, "preroll: %s\n", e.msg[0] ? e.msg : "out of memory");
    else {
        *dropped = vio_in_preroll_dropped(in);
        *warmups = vio_in_warmups(in);
    }
    vio_in_free(&in);
    av_frame_free(&fr);
    av_packet_free(&p);
    return ev < 0 ? -1 : 0;
}

int cmd_preroll(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: vrbench-video preroll SRC CHUNK_SECONDS WARMUP [PIECE_SECONDS]\n");
        return 2;
    }
    const char *src = argv[2];
    double chunk_s = atof(argv[3]), piece_s = argc > 5 ? atof(argv[5]) : 0;
    struct remux_plan_opts o = { .chunk_seconds = piece_s > 0 ? piece_s : chunk_s,
                                 .warmup = atoi(argv[4]) };
    struct remux_plan pl;
    vr_err e = { 0 };
    if (!(chunk_s > 0) || remux_plan(src, &o, &pl, &e) < 0) {
        fprintf(stderr, "plan: %s\n", e.msg[0] ? e.msg : "CHUNK_SECONDS must be > 0");
        return 1;
    }
    int *starts = NULL, n = pl.nchunks;
    if (piece_s > 0 && (n = remux_plan_groups(&pl, chunk_s, &starts)) < 0) {
        remux_plan_release(&pl);
        return 1;
    }
    long long sum_drop = 0, sum_warm = 0;
    int rc = 0;
    for (int c = 0; c < n && rc == 0; c++) { /* a group's pre-roll is its first piece's */
        const struct chunk_range *r = &pl.chunks[starts ? starts[c] : c];
        long long d = 0, w = 0;
        if ((rc = preroll_chunk(src, r, &d, &w)) == 0)
            printf("chunk %d at %.2f s: pre-roll: %lld decoded and dropped, %lld warm-up\n", c,
                   r->start_s, d, w);
        sum_drop += d;
        sum_warm += w;
    }
    if (rc == 0)
        printf("RESULT preroll_dropped %lld frames (%.1f a chunk), warmup %lld frames (%.1f a "
               "chunk), %d chunks\n", sum_drop, (double)sum_drop / n, sum_warm,
               (double)sum_warm / n, n);
    free(starts);
    remux_plan_release(&pl);
    return rc ? 1 : 0;
}

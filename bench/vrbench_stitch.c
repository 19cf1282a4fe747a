/*
 * vrbench_stitch.c - `vrbench-video stitch CHUNK TIMES OUT`: the
 * controller's stitch of chunks read in place (remux_stitch_begin_ranges,
 * remux_stitch_add_ts, remux_stitch_end) over TIMES copies of one matte
 * chunk, each with a sidecar that places it after the one before, timed:
 * MB/s of output, wall and CPU seconds. The copy after a synchronous
 * wave is this loop (docs/PERF.md, issue 43); the SHA-256 sums before it
 * are not in it. CHUNK must hold one video stream and nothing else.
 */
#include "remux.h"
#include "remux_ts.h"

#include "clock.h"

#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_stitch(int argc, char **argv);

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* CHUNK's video pts, sorted, in t (one stream, its own time base), and the
 * span one copy covers (last pts + one frame - first). */
static int chunk_times(const char *path, struct remux_ts *t, int64_t *span)
{
    AVFormatContext *ic = NULL;
    AVPacket *p = av_packet_alloc();
    if (!p || avformat_open_input(&ic, path, NULL, NULL) < 0 ||
        avformat_find_stream_info(ic, NULL) < 0 || ic->nb_streams != 1 ||
        ic->streams[0]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
        fprintf(stderr, "stitch: %s: not a file of one video stream\n", path);
        av_packet_free(&p);
        avformat_close_input(&ic);
        return -1;
    }
    long long cap = 1024;
    t->nstreams = 1;
    t->s = calloc(1, sizeof *t->s);
    int64_t *a = malloc((size_t)cap * sizeof *a), dur = 0;
    long long n = 0;
    while (t->s && a && av_read_frame(ic, p) >= 0) {
        if (n == cap) {
            int64_t *b = realloc(a, (size_t)(cap *= 2) * sizeof *a);
            if (!b)
                break;
            a = b;
        }
        a[n++] = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
        dur = p->duration > 0 ? p->duration : dur;
        av_packet_unref(p);
    }
    qsort(a, (size_t)n, sizeof *a, cmp_i64);
    if (t->s)
        t->s[0] = (struct remux_ts_stream){ .tb_num = ic->streams[0]->time_base.num,
                                            .tb_den = ic->streams[0]->time_base.den,
                                            .n = n, .pts = a }; /* t owns a now */
    else
        free(a);
    *span = n ? a[n - 1] + (dur > 0 ? dur : 1) - a[0] : 0;
    av_packet_free(&p);
    avformat_close_input(&ic);
    return t->s && a && n ? 0 : -1;
}

/* Writes copy c's sidecar as dir/c.ts: called for c = 0, 1, ... in turn,
 * each shifts t by one more span, so copy c starts c spans in. */
static int sidecar(const char *dir, int c, struct remux_ts *t, int64_t span, char *path,
                   size_t len, vr_err *e)
{
    for (long long k = 0; k < t->s[0].n; k++)
        t->s[0].pts[k] += span * (c ? 1 : 0);
    snprintf(path, len, "%s/%d.ts", dir, c);
    return remux_ts_write(path, t, e);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int cmd_stitch(int argc, char **argv)
{
    if (argc != 5 || atoi(argv[3]) < 1 || atoi(argv[3]) > 1000)
        return fprintf(stderr, "usage: stitch CHUNK TIMES OUT\n"), 2;
    const char *chunk = argv[2], *out = argv[4];
    int times = atoi(argv[3]), rc = 1;
    char dir[] = "/tmp/vrbench-stitch-XXXXXX", ts[256];
    struct remux_ts t = { 0 };
    int64_t span;
    vr_err e = { 0 };
    if (!mkdtemp(dir) || chunk_times(chunk, &t, &span) < 0)
        goto out;
    for (int c = 0; c < times; c++)
        if (sidecar(dir, c, &t, span, ts, sizeof ts, &e) < 0)
            goto out;
    double t0 = clock_mono_s(), c0 = cpu_s();
    struct remux_stitcher *s = NULL;
    snprintf(ts, sizeof ts, "%s/0.ts", dir);
    int r = remux_stitch_begin_ranges(NULL, chunk, ts, times, out, &s, &e);
    for (int c = 0; r == 0 && c < times; c++) {
        snprintf(ts, sizeof ts, "%s/%d.ts", dir, c);
        r = remux_stitch_add_ts(s, chunk, ts, &e);
    }
    r = r == 0 ? remux_stitch_end(&s, &e) : (remux_stitch_abort(&s), r);
    double dt = clock_mono_s() - t0, cpu = cpu_s() - c0;
    struct stat st;
    if (r < 0 || stat(out, &st) < 0)
        goto out;
    printf("RESULT stitch_mb_s %.1f MB/s (%d chunks, %lld frames, %.1f MB in %.2f s wall, "
           "%.2f s CPU)\n", st.st_size / 1e6 / dt, times, t.s[0].n * times, st.st_size / 1e6,
           dt, cpu);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "vrbench-video: stitch: %s\n", e.msg[0] ? e.msg : "failed");
    for (int c = 0; c < times; c++) {
        snprintf(ts, sizeof ts, "%s/%d.ts", dir, c);
        unlink(ts);
    }
    rmdir(dir);
    remux_ts_release(&t);
    return rc;
}

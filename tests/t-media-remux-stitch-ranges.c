/*
 * t-media-remux-stitch-ranges.c - the stitch of chunks read in place: the
 * sidecar of exact timestamps (remux_ts) read back as written and refused
 * with the line named when damaged, and a whole job's chunks, processed
 * from their ranges by the real pipeline on the CPU, stitched with the
 * source deleted: the output has the source's frame times, its audio
 * packets bit for bit, and a damaged sidecar or overlapping chunks fail
 * with the chunk named; neither the chunks nor the stitch hold Matroska
 * CRC-32 elements (vio_streams_mux_settings).
 */
#include "config.h"
#include "pipeline.h"
#include "remux.h"
#include "remux_range.h"
#include "remux_ts.h"
#include "util-video.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char D[64];

static void setup(void)
{
    snprintf(D, sizeof D, "/tmp/vrtest-stitchr-XXXXXX");
    cr_assert_not_null(mkdtemp(D));
}

static void teardown(void)
{
    tsh("rm -rf '%s'", D);
}

TestSuite(media_remux_stitch_ranges, .init = setup, .fini = teardown, .timeout = 180);

/* ---- the sidecar ---- */

Test(media_remux_stitch_ranges, timestamps_sidecar_round_trip_and_damage)
{
    int64_t v[] = { -512, 0, 512, 9000000000000LL };
    int64_t ap[] = { INT64_MIN, 0, 1024 }, ad[] = { -1024, 0, 1024 }, au[] = { 1024, 1024, 0 };
    struct remux_ts_stream st[2] = {
        { .tb_num = 1, .tb_den = 15360, .n = 4, .pts = v },
        { .tb_num = 1, .tb_den = 48000, .n = 3, .pts = ap, .dts = ad, .dur = au },
    };
    struct remux_ts t = { .nstreams = 2, .s = st, .has_matrix = 1,
                          .matrix = { 0, 65536, 0, -65536, 0, 0, 0, 0, 1 << 30 } };
    char p[128];
    snprintf(p, sizeof p, "%s/a.mkv.ts", D);
    vr_err e = { 0 };
    cr_assert_eq(remux_ts_write(p, &t, &e), 0, "%s", e.msg);
    struct remux_ts r;
    cr_assert_eq(remux_ts_read(p, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.nstreams, 2);
    cr_assert(r.has_matrix && r.matrix[1] == 65536 && r.matrix[8] == 1 << 30);
    cr_assert(r.s[0].tb_den == 15360 && r.s[0].n == 4 && r.s[1].tb_den == 48000 && r.s[1].n == 3);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r.s[0].pts[i], v[i]);
    for (int i = 0; i < 3; i++)
        cr_assert(r.s[1].pts[i] == ap[i] && r.s[1].dts[i] == ad[i] && r.s[1].dur[i] == au[i]);
    remux_ts_release(&r);
    char n[160];
    cr_assert_eq(remux_ts_name("/x/jobs/j/out/00001.mkv", n, sizeof n, &e), 0);
    cr_assert_str_eq(n, "/x/jobs/j/out/00001.mkv.ts");

    /* damaged: each refused with the file and the line */
    static const char *const bad[][2] = {
        { "not-a-sidecar\n", "line 1" },
        { "vrseg-ts 1\nstreams 0\n", "line 2" },
        { "vrseg-ts 1\nstreams 1\nstream 0 tb 1/0 n 1\n5\n", "line 3" },
        { "vrseg-ts 1\nstreams 1\nstream 0 tb 1/25 n 2\n5\n5\n", "increase" },
        { "vrseg-ts 1\nstreams 1\nstream 0 tb 1/25 n 3\n5\n6\n", "ends inside" },
        { "vrseg-ts 1\nstreams 2\nstream 0 tb 1/25 n 0\nstream 1 tb 1/48000 n 1\n1 2\n", "line 5" },
        { "vrseg-ts 1\nstreams 1\nstream 0 tb 1/25 n 1\n99999999999999999999\n", "line 4" },
        { "vrseg-ts 1\nstreams 1\nstream 0 tb 1/25 n 1\n1\nmore\n", "after the last" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(p, "w");
        fputs(bad[i][0], f);
        fclose(f);
        cr_assert_eq(remux_ts_read(p, &r, &e), VR_EFORMAT, "case %zu read", i);
        cr_assert(strstr(e.msg, bad[i][1]) && strstr(e.msg, "a.mkv.ts"), "case %zu: %s", i, e.msg);
    }
    snprintf(p, sizeof p, "%s/none.ts", D);
    cr_assert_eq(remux_ts_read(p, &r, &e), VR_ENOENT);
}

/* ---- a job's chunks, from their ranges, stitched without the source ---- */

/* Processes every range of `src` with the CPU pipeline into D/NNNNN.mkv
 * and its sidecar; returns the chunk count. */
static int process_ranges(const char *src, double secs, int warmup)
{
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts po = { .chunk_seconds = secs, .warmup = warmup };
    cr_assert_eq(remux_plan(src, &po, &pl, &e), 0, "%s", e.msg);
    for (int c = 0; c < pl.nchunks; c++) {
        struct pipe_opts o;
        memset(&o, 0, sizeof o);
        o.backend = SEG_CPU;
        o.layout = -1;
        o.output = PIPE_OUT_MASK;
        cr_assert_eq(config_load_profile(&o.cfg, "fast", &e), 0, "%s", e.msg);
        char out[160], ts[176];
        snprintf(out, sizeof out, "%s/%05d.mkv", D, c);
        snprintf(ts, sizeof ts, "%s.ts", out);
        o.range = &pl.chunks[c];
        o.ts_path = ts;
        struct metrics m;
        cr_assert_eq(pipeline_run(&o, src, out, &m, &e), 0, "chunk %d: %s", c, e.msg);
        if (pl.chunks[c].frames >= 0)
            cr_assert_eq((long long)m.frames, pl.chunks[c].frames, "chunk %d", c);
    }
    int n = pl.nchunks;
    remux_plan_release(&pl);
    return n;
}

static int stitch(int n, const char *out, vr_err *e)
{
    char c[160], t[176];
    struct remux_stitcher *s = NULL;
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) { /* begun with chunk 0, then every chunk added */
        snprintf(c, sizeof c, "%s/%05d.mkv", D, i);
        snprintf(t, sizeof t, "%s.ts", c);
        if (i == 0)
            rc = remux_stitch_begin_ranges(NULL, c, t, n, out, &s, e);
        if (rc == 0)
            rc = remux_stitch_add_ts(s, c, t, e);
    }
    if (rc == 0)
        return remux_stitch_end(&s, e);
    remux_stitch_abort(&s);
    return rc;
}

static void framemd5(const char *path, const char *map, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map %s -c copy -f framemd5 - | grep -v '^#' | "
            "md5sum", path, map);
}

static void frame_times(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of "
            "csv=p=0 '%s' | sort -n | md5sum", path);
}

Test(media_remux_stitch_ranges, ranges_need_no_source)
{
    char src[128], out[128], a1[128], t1[128];
    snprintf(src, sizeof src, "%s/src.mp4", D);
    /* 1/15360 video and 1/48000 audio: a millisecond would not do */
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=160x96:rate=30 -f lavfi "
                     "-i sine=frequency=440:sample_rate=48000 -t 4 -c:v libx264 -preset veryfast "
                     "-g 15 -keyint_min 15 -sc_threshold 0 -bf 2 -pix_fmt yuv420p -c:a aac "
                     "'%s'", src), 0);
    /* the source's times as each container keeps them (Matroska: ms) */
    char srcmkv[140];
    snprintf(srcmkv, sizeof srcmkv, "%s/src-copy.mkv", D);
    cr_assert_eq(tsh("ffmpeg -v error -i '%s' -c copy '%s'", src, srcmkv), 0);
    int n = process_ranges(src, 1.0, 3);
    cr_assert_geq(n, 4, "%d chunks", n);
    static const char *const exts[] = { "mp4", "mkv" };
    char want[2][2][128]; /* the md5sum lines: 35 bytes */
    for (int k = 0; k < 2; k++) {
        framemd5(k ? srcmkv : src, "0:a", want[k][0], sizeof want[k][0]);
        frame_times(k ? srcmkv : src, want[k][1], sizeof want[k][1]);
    }
    cr_assert_eq(unlink(src), 0);
    vr_err e = { 0 };
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/out.%s", D, exts[k]);
        cr_assert_eq(stitch(n, out, &e), 0, "%s: %s", out, e.msg);
        framemd5(out, "0:a", a1, sizeof a1);
        frame_times(out, t1, sizeof t1);
        cr_assert_str_eq(a1, want[k][0], "%s: the audio differs from the source's", out);
        cr_assert_str_eq(t1, want[k][1], "%s: the frame times differ from the source's", out);
    }

    /* a sidecar that lists a frame too many */
    char ts[160];
    snprintf(ts, sizeof ts, "%s/00002.mkv.ts", D);
    cr_assert_eq(tsh("cp '%s' '%s.bak'", ts, ts), 0);
    struct remux_ts t;
    cr_assert_eq(remux_ts_read(ts, &t, &e), 0, "%s", e.msg);
    int64_t *more = realloc(t.s[0].pts, (size_t)(t.s[0].n + 1) * sizeof *more);
    cr_assert_not_null(more);
    more[t.s[0].n] = more[t.s[0].n - 1] + 1;
    t.s[0].pts = more;
    t.s[0].n++;
    cr_assert_eq(remux_ts_write(ts, &t, &e), 0, "%s", e.msg);
    remux_ts_release(&t);
    cr_assert_eq(stitch(n, out, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "chunk 2") && strstr(e.msg, "timestamps list"), "%s", e.msg);
    cr_assert_eq(tsh("mv '%s.bak' '%s'", ts, ts), 0);
    /* overlapping chunks: chunk 1 again in place of chunk 2 */
    cr_assert_eq(tsh("cp '%s/00001.mkv' '%s/00002.mkv' && cp '%s/00001.mkv.ts' '%s'", D, D, D,
                     ts), 0);
    cr_assert_eq(stitch(n, out, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "chunk 2") && strstr(e.msg, "overlap"), "%s", e.msg);
    /* no sidecar */
    cr_assert_eq(unlink(ts), 0);
    cr_assert_eq(stitch(n, out, &e), VR_ENOENT, "%s", e.msg);
    cr_assert(strstr(e.msg, "00002.mkv.ts"), "%s", e.msg);
}

/* A chunk whose codec reorders frames (B-frames: never our workers'
 * encoders, but a chunk file is read as untrusted) is refused with the
 * reason: the stitch gives a chunk's k-th packet its k-th time. */
Test(media_remux_stitch_ranges, a_chunk_with_b_frames_is_refused)
{
    char src[128], out[128];
    snprintf(src, sizeof src, "%s/src.mkv", D);
    snprintf(out, sizeof out, "%s/out.mkv", D);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=160x96:rate=25 -t 3 -c:v "
                     "libx264 -preset veryfast -g 25 -keyint_min 25 -sc_threshold 0 -bf 0 "
                     "-pix_fmt yuv420p '%s'", src), 0);
    int n = process_ranges(src, 1.0, 3);
    cr_assert_geq(n, 3, "%d chunks", n);
    vr_err e = { 0 };
    cr_assert_eq(stitch(n, out, &e), 0, "%s", e.msg);
    cr_assert_eq(tsh("ffmpeg -v error -y -copyts -i '%s/00001.mkv' -c:v libx264 -bf 3 "
                     "-b_strategy 0 '%s/b.mkv' && mv '%s/b.mkv' '%s/00001.mkv'", D, D, D, D), 0);
    cr_assert_eq(stitch(n, out, &e), VR_EFORMAT, "%s", e.msg);
    cr_assert(strstr(e.msg, "chunk 1") && strstr(e.msg, "reordered"), "%s", e.msg);
}

/* ---- no CRC-32 elements (vio_streams_mux_settings) ---- */

/* An EBML variable-length number at p (before end), its length in *len:
 * an ID keeps its marker bit, a size does not (strip). -1 when cut off. */
static long long ebml_vint(const unsigned char *p, const unsigned char *end, int strip, int *len)
{
    if (p >= end || !*p)
        return -1;
    int l = 1;
    while (!(*p & (0x80 >> (l - 1))))
        l++;
    if (p + l > end)
        return -1;
    unsigned long long v = strip ? (unsigned)(*p & (0xFF >> l)) : *p;
    for (int i = 1; i < l; i++)
        v = v << 8 | p[i];
    *len = l;
    return (long long)v;
}

/* The Segment's top-level elements of the Matroska file path (SeekHead,
 * Info, Tracks, Cluster, Cues, Tags, ...) in *level1, and how many of them
 * open with a CRC-32 element (ID 0xBF), which the muxer writes first. */
static int mkv_crc32s(const char *path, int *level1)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n, "%s", path);
    fclose(f);
    const unsigned char *p = b, *end = b + n;
    int l, crcs = 0;
    *level1 = 0;
    while (p < end) { /* the EBML header, then the Segment */
        long long id = ebml_vint(p, end, 0, &l);
        int li;
        long long size = ebml_vint(p + l, end, 1, &li);
        cr_assert(id >= 0 && size >= 0, "%s: not EBML at %ld", path, (long)(p - b));
        p += l + li;
        if (id != 0x18538067) {
            p += size;
            continue;
        }
        const unsigned char *send = size < end - p ? p + size : end;
        while (p < send) {
            long long cid = ebml_vint(p, send, 0, &l);
            long long csize = ebml_vint(p + l, send, 1, &li);
            cr_assert(cid >= 0 && csize >= 0 && csize <= send - p - l - li,
                      "%s: a damaged element at %ld", path, (long)(p - b));
            p += l + li;
            int il;
            (*level1)++;
            if (csize > 0 && ebml_vint(p, p + csize, 0, &il) == 0xBF)
                crcs++;
            p += csize;
        }
    }
    free(b);
    return crcs;
}

/* The workers' chunk outputs (written as `process` writes its output:
 * vio_encode.c) and the stitch of them carry no CRC-32: the muxer's CRC
 * was a quarter of the stitch's CPU, and both writers must agree for the
 * fleet's output to equal one process's byte for byte. */
Test(media_remux_stitch_ranges, no_crc32_elements_in_the_chunks_or_the_stitch)
{
    char src[128], out[128], c0[128];
    snprintf(src, sizeof src, "%s/src.mkv", D);
    snprintf(out, sizeof out, "%s/out.mkv", D);
    snprintf(c0, sizeof c0, "%s/00000.mkv", D);
    cr_assert_eq(tsh("ffmpeg -v error -y -f lavfi -i testsrc=size=160x96:rate=25 -t 3 -c:v "
                     "libx264 -preset veryfast -g 25 -bf 0 -pix_fmt yuv420p '%s'", src), 0);
    int n = process_ranges(src, 1.0, 3);
    cr_assert_geq(n, 3, "%d chunks", n);
    vr_err e = { 0 };
    cr_assert_eq(stitch(n, out, &e), 0, "%s", e.msg);
    int level1;
    /* the source (ffmpeg's default muxer) has them: the walk sees them */
    cr_assert_gt(mkv_crc32s(src, &level1), 3, "%s", src);
    cr_assert_eq(mkv_crc32s(c0, &level1), 0, "%s: CRC-32 elements", c0);
    cr_assert_geq(level1, 4, "%s: %d top-level elements", c0, level1);
    cr_assert_eq(mkv_crc32s(out, &level1), 0, "%s: CRC-32 elements", out);
    cr_assert_geq(level1, 4, "%s: %d top-level elements", out, level1);
}

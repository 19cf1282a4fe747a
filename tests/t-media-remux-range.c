/*
 * t-media-remux-range.c - chunks as ranges of the source (remux_range.h) on real
 * files of every container and GOP kind the planner takes: the packets the
 * readers hand out, concatenated chunk after chunk, equal a full read of
 * the file (every stream: pts, dts, size, flags, data), the pre-roll is the
 * GOP before each cut, and a source without an index, changed or cut short
 * after planning is refused with a reason.
 */
#include "remux_range.h"
#include "util-video.h"
#include "util-redis.h"
#include "vio_video.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <libavformat/avformat.h>
#include <libavutil/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char D[64];

static void setup(void)
{
    snprintf(D, sizeof D, "/tmp/vrtest-range-XXXXXX");
    cr_assert_not_null(mkdtemp(D));
}

static void teardown(void)
{
    tsh("rm -rf '%s'", D);
}

TestSuite(media_remux_range, .init = setup, .fini = teardown, .timeout = 120);

/* ---- packets as the tests compare them ---- */

#define MAXP 4096

struct pk {
    int stream;
    int64_t pts, dts;
    int size, key;
    uint32_t crc;
};

struct pks {
    struct pk p[MAXP];
    int n;
};

static void pk_add(struct pks *l, const AVPacket *p)
{
    cr_assert_lt(l->n, MAXP);
    const AVCRC *t = av_crc_get_table(AV_CRC_32_IEEE);
    l->p[l->n++] = (struct pk){ p->stream_index, p->pts, p->dts, p->size,
                                !!(p->flags & AV_PKT_FLAG_KEY),
                                av_crc(t, 0, p->data, (size_t)p->size) };
}

static AVFormatContext *open_file(const char *path)
{
    AVFormatContext *ic = NULL;
    cr_assert_eq(avformat_open_input(&ic, path, NULL, NULL), 0, "%s", path);
    cr_assert_geq(avformat_find_stream_info(ic, NULL), 0);
    return ic;
}

/* Every packet of the file, in file order. */
static void read_all(const char *path, struct pks *l)
{
    AVFormatContext *ic = open_file(path);
    AVPacket *p = av_packet_alloc();
    l->n = 0;
    while (av_read_frame(ic, p) >= 0) {
        pk_add(l, p);
        av_packet_unref(p);
    }
    av_packet_free(&p);
    avformat_close_input(&ic);
}

/* The packets chunk r hands out, its pre-roll (video packets before its
 * own keyframe) apart. Returns the reader's result (0 or VR_E*). */
static int read_range(const char *path, const struct chunk_range *r, struct pks *own,
                      struct pks *pre, vr_err *e)
{
    AVFormatContext *ic = open_file(path);
    struct remux_reader *rd;
    int rc = remux_reader_open(ic, r, path, &rd, e);
    AVPacket *p = av_packet_alloc();
    int in_own = !r->preroll;
    while (rc == 0 && (rc = remux_reader_next(rd, p, e)) > 0) {
        rc = 0;
        if (p->stream_index == r->vs && p->pts == r->start.pts)
            in_own = 1;
        pk_add(p->stream_index == r->vs && !in_own ? pre : own, p);
        av_packet_unref(p);
    }
    av_packet_free(&p);
    remux_reader_free(&rd);
    avformat_close_input(&ic);
    return rc;
}

/* The packets of stream s in l, in order. */
static int only(const struct pks *l, int s, struct pk *out)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        if (l->p[i].stream == s)
            out[n++] = l->p[i];
    return n;
}

/* Matroska stores no dts: libavformat derives them, from another history
 * after a seek, so only the other containers' are compared. */
static void assert_same_stream(const struct pks *a, const struct pks *b, int s, const char *what,
                               int cmp_dts)
{
    static struct pk x[MAXP], y[MAXP];
    int nx = only(a, s, x), ny = only(b, s, y);
    cr_assert_eq(nx, ny, "%s: stream %d: %d packets from the ranges, %d in the file", what, s,
                 nx, ny);
    for (int i = 0; i < nx; i++)
        cr_assert(x[i].pts == y[i].pts && (!cmp_dts || x[i].dts == y[i].dts) &&
                  x[i].size == y[i].size &&
                  x[i].key == y[i].key && x[i].crc == y[i].crc,
                  "%s: stream %d packet %d differs (pts %lld / %lld)", what, s, i,
                  (long long)x[i].pts, (long long)y[i].pts);
}

/* Plans `path`, reads every range and checks the concatenation against a
 * full read, stream by stream; returns the chunk count. */
static int check_ranges(const char *path, double secs, int warmup, int want_preroll)
{
    static struct pks all, cat, own, pre;
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = secs, .warmup = warmup };
    cr_assert_eq(remux_plan(path, &o, &pl, &e), 0, "%s: %s", path, e.msg);
    cr_assert_geq(pl.nchunks, 2, "%s: %d chunks", path, pl.nchunks);
    cr_assert_lt(pl.bytes_read, 4 << 20, "%s: the plan read %lld bytes", path, pl.bytes_read);
    read_all(path, &all);
    cat.n = 0;
    int prerolls = 0;
    long long vid = 0, est = 0;
    for (int c = 0; c < pl.nchunks; c++) {
        const struct chunk_range *r = &pl.chunks[c];
        own.n = pre.n = 0;
        cr_assert_eq(read_range(path, r, &own, &pre, &e), 0, "%s chunk %d: %s", path, c, e.msg);
        cr_assert_eq(r->has_end, c + 1 < pl.nchunks);
        prerolls += r->preroll;
        cr_assert_eq(pre.n > 0, r->preroll, "%s chunk %d: %d pre-roll packets", path, c, pre.n);
        if (r->preroll) /* the GOP before the cut: a keyframe, then up to the cut */
            cr_assert(pre.p[0].key, "%s chunk %d: the pre-roll starts with a non-keyframe", path, c);
        for (int i = 0; i < own.n; i++)
            cat.p[cat.n++] = own.p[i];
        int v = 0;
        for (int i = 0; i < own.n; i++)
            v += own.p[i].stream == r->vs;
        if (r->frames >= 0)
            cr_assert_eq(v, r->frames, "%s chunk %d: %d video packets, planned %lld", path, c, v,
                         r->frames);
        /* what the cuts place themselves by: counted, or a constant rate's
         * time span (every clip here is 30 fps): the frames shown in it,
         * which an open GOP's leading pictures (stored after the next
         * chunk's keyframe) move by a few, the total exact */
        if (r->frames >= 0 || strstr(r->demuxer, "matroska")) {
            long long d = v - r->frames_est;
            cr_assert(d >= -3 && d <= 3, "%s chunk %d: %d video packets, estimated %lld", path,
                      c, v, r->frames_est);
            vid += v;
            est += r->frames_est;
        }
    }
    cr_assert_eq(vid, est, "%s: %lld video packets, estimated %lld", path, vid, est);
    cr_assert_eq(prerolls > 0, want_preroll, "%s: %d chunks with a pre-roll", path, prerolls);
    AVFormatContext *ic = open_file(path);
    int cmp_dts = strcmp(ic->iformat->name, "matroska,webm") != 0;
    for (unsigned s = 0; s < ic->nb_streams; s++)
        assert_same_stream(&cat, &all, (int)s, path, cmp_dts);
    avformat_close_input(&ic);
    int n = pl.nchunks;
    remux_plan_release(&pl);
    return n;
}

/* ---- clips ---- */

#define SRC "-f lavfi -i testsrc=size=160x120:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 -t 6"
#define H264 "-c:v libx264 -preset veryfast -g 30 -keyint_min 30 -sc_threshold 0 -bf 3 " \
             "-x264-params b-pyramid=normal -pix_fmt yuv420p"

static void make(char *out, size_t n, const char *name, const char *args)
{
    snprintf(out, n, "%s/%s", D, name);
    cr_assert_eq(tsh("ffmpeg -v error -y " SRC " %s '%s'", args, out), 0, "making %s", name);
}

/* ---- tests ---- */

Test(media_remux_range, mkv_with_cues_h264_b_pyramid)
{
    char f[128];
    make(f, sizeof f, "cues.mkv", H264 " -c:a aac");
    cr_assert_geq(check_ranges(f, 1.0, 0, 0), 5);
    cr_assert_geq(check_ranges(f, 2.0, 4, 1), 2); /* a warm-up: every cut gets the GOP before */
}

Test(media_remux_range, mp4_moov_last_first_and_fragmented)
{
    char f[128];
    make(f, sizeof f, "last.mp4", H264 " -c:a aac");
    cr_assert_geq(check_ranges(f, 1.0, 0, 0), 5);
    cr_assert_geq(check_ranges(f, 1.5, 3, 1), 3);
    make(f, sizeof f, "first.mp4", H264 " -c:a aac -movflags +faststart");
    cr_assert_geq(check_ranges(f, 1.0, 0, 0), 5);
    make(f, sizeof f, "frag.mp4", H264 " -c:a aac -movflags +frag_keyframe+empty_moov+default_base_moof");
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = 1.0 };
    int rc = remux_plan(f, &o, &pl, &e);
    /* a fragmented MP4's index grows as it is read: the plan takes what it
     * lists, or says why it cannot */
    if (rc == 0) {
        remux_plan_release(&pl);
        check_ranges(f, 1.0, 0, 0);
    } else {
        cr_assert_eq(rc, VR_ENOTSUP, "%s", e.msg);
    }
}

Test(media_remux_range, mp4_edit_list_hiding_leading_frames)
{
    char f[128];
    make(f, sizeof f, "neg.mp4", H264 " -c:a aac -output_ts_offset -1");
    check_ranges(f, 1.0, 0, 0);
    check_ranges(f, 1.0, 2, 1);
}

Test(media_remux_range, hevc_open_gop_cuts_carry_the_gop_before)
{
    char f[128];
    make(f, sizeof f, "cra.mkv", "-c:v libx265 -preset ultrafast -x265-params "
         "log-level=error:keyint=30:min-keyint=30:scenecut=0:open-gop=1:bframes=3 -c:a aac");
    cr_assert_geq(check_ranges(f, 1.0, 0, 1), 5);
}

Test(media_remux_range, no_index_is_refused_with_the_reason)
{
    char f[128];
    make(f, sizeof f, "live.mkv", H264 " -c:a aac -live 1");
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = 1.0 };
    int rc = remux_plan(f, &o, &pl, &e);
    if (rc == 0) { /* a short live file: one range, the whole file */
        cr_assert_eq(pl.nchunks, 1, "%d chunks from a file without cues", pl.nchunks);
        remux_plan_release(&pl);
    } else {
        cr_assert_eq(rc, VR_ENOTSUP, "%s", e.msg);
    }
    make(f, sizeof f, "clip.ts", H264 " -c:a aac");
    cr_assert_eq(remux_plan(f, &o, &pl, &e), VR_ENOTSUP);
    cr_assert(strstr(e.msg, "keep no keyframe index") && strstr(e.msg, "clip.ts"), "%s", e.msg);
    cr_assert_eq(remux_plan("/nonexistent/x.mkv", &o, &pl, &e), VR_ENOENT);
}

Test(media_remux_range, a_source_changed_or_cut_short_after_the_plan_is_refused)
{
    char f[128], g[160];
    make(f, sizeof f, "a.mkv", H264 " -c:a aac");
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = 1.0 };
    cr_assert_eq(remux_plan(f, &o, &pl, &e), 0, "%s", e.msg);
    int fd = open(f, O_RDONLY);
    char fp1[REMUX_FP_MAX], fp2[REMUX_FP_MAX];
    cr_assert_eq(remux_fingerprint(fd, fp1, sizeof fp1, &e), 0);
    close(fd);
    static struct pks own, pre;
    /* re-encoded with other settings under the same name */
    snprintf(g, sizeof g, "%s/b.mkv", D);
    cr_assert_eq(tsh("ffmpeg -v error -y " SRC " -c:v libx264 -g 45 -bf 0 -c:a aac '%s' && "
                     "mv '%s' '%s'", g, g, f), 0);
    fd = open(f, O_RDONLY);
    cr_assert_eq(remux_fingerprint(fd, fp2, sizeof fp2, &e), 0);
    close(fd);
    cr_assert_str_neq(fp1, fp2);
    int bad = 0;
    for (int c = 1; c < pl.nchunks; c++)
        if (read_range(f, &pl.chunks[c], &own, &pre, &e) == VR_EFORMAT) {
            cr_assert(strstr(e.msg, "changed since it was planned"), "%s", e.msg);
            bad++;
        }
    cr_assert_gt(bad, 0, "no range of the re-encoded file was refused");
    remux_plan_release(&pl);
    /* cut short: the last chunks' ranges run past the end */
    make(f, sizeof f, "c.mkv", H264 " -c:a aac");
    cr_assert_eq(remux_plan(f, &o, &pl, &e), 0, "%s", e.msg);
    cr_assert_geq(pl.nchunks, 4, "%d chunks", pl.nchunks);
    cr_assert_eq(tsh("f='%s'; truncate -s $(( $(stat -c %%s \"$f\") / 2 )) \"$f\"", f), 0);
    int c = pl.nchunks - 2;
    int rc = read_range(f, &pl.chunks[c], &own, &pre, &e);
    cr_assert_eq(rc, VR_EFORMAT, "chunk %d of %d of a file cut in half: rc %d", c, pl.nchunks, rc);
    cr_assert(strstr(e.msg, "c.mkv"), "%s", e.msg);
    remux_plan_release(&pl);
}

/* ---- decoding ranges as a worker does (vio_in) ---- */

#define MAXF 1024

struct frames {
    int64_t pts[MAXF];
    uint32_t crc[MAXF];
    int n, warmups;
    long long dropped; /* pre-roll frames decoded and dropped (the set-up line's count) */
};

/* Decodes `path` (its range r, or all of it) on the CPU: every output
 * frame's pts and a CRC of its luma, and the warm-up frames counted. */
static void decode(const char *path, const struct chunk_range *r, struct frames *f)
{
    struct vio_in_opts io = { .path = path, .range = r };
    struct vio_in *in;
    vr_err e = { 0 };
    cr_assert_eq(vio_in_open(&io, &in, &e), 0, "%s", e.msg);
    AVFrame *fr = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    const AVCRC *t = av_crc_get_table(AV_CRC_32_IEEE);
    int ev;
    while ((ev = vio_in_next(in, fr, p, &e)) > 0) {
        if (ev == VIO_PACKET) {
            av_packet_unref(p);
            continue;
        }
        if (ev == VIO_WARMUP) {
            f->warmups++;
        } else {
            cr_assert_lt(f->n, MAXF);
            uint32_t c = 0;
            for (int y = 0; y < fr->height; y++)
                c = av_crc(t, c, fr->data[0] + (size_t)y * fr->linesize[0], (size_t)fr->width);
            f->pts[f->n] = fr->pts;
            f->crc[f->n++] = c;
        }
        av_frame_unref(fr);
    }
    cr_assert_eq(ev, VIO_EOF, "%s: %s", path, e.msg);
    f->dropped = vio_in_preroll_dropped(in);
    av_frame_free(&fr);
    av_packet_free(&p);
    vio_in_free(&in);
}

/* Every chunk decoded from its range, concatenated, gives the whole
 * file's frames bit for bit; a chunk with a pre-roll warms up with
 * `warmup` frames. */
static long long check_decode(const char *path, double secs, int warmup)
{
    long long dropped = 0;
    static struct frames all, part;
    memset(&all, 0, sizeof all);
    decode(path, NULL, &all);
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = secs, .warmup = warmup };
    cr_assert_eq(remux_plan(path, &o, &pl, &e), 0, "%s", e.msg);
    int k = 0;
    for (int c = 0; c < pl.nchunks; c++) {
        memset(&part, 0, sizeof part);
        decode(path, &pl.chunks[c], &part);
        cr_assert_eq(part.warmups, pl.chunks[c].preroll ? warmup : 0, "%s chunk %d: %d warm-up "
                     "frames", path, c, part.warmups);
        dropped += part.dropped;
        if (pl.chunks[c].frames >= 0)
            cr_assert_eq(part.n, pl.chunks[c].frames, "%s chunk %d", path, c);
        for (int i = 0; i < part.n; i++, k++) {
            cr_assert_lt(k, all.n, "%s: more frames from the chunks than the file has", path);
            cr_assert(part.pts[i] == all.pts[k] && part.crc[i] == all.crc[k],
                      "%s chunk %d frame %d (pts %lld): differs from the whole decode's frame "
                      "%d (pts %lld)", path, c, i, (long long)part.pts[i], k,
                      (long long)all.pts[k]);
        }
    }
    cr_assert_eq(k, all.n, "%s: %d frames from the chunks, %d from the file", path, k, all.n);
    remux_plan_release(&pl);
    return dropped;
}

Test(media_remux_range, decoded_ranges_equal_the_whole_decode)
{
    char f[128];
    make(f, sizeof f, "cra.mkv", "-c:v libx265 -preset ultrafast -x265-params "
         "log-level=error:keyint=30:min-keyint=30:scenecut=0:open-gop=1:bframes=3 -c:a aac");
    check_decode(f, 1.0, 0);
    check_decode(f, 1.0, 3);
    make(f, sizeof f, "neg.mp4", H264 " -c:a aac -output_ts_offset -1");
    check_decode(f, 1.0, 2);
    make(f, sizeof f, "b.mkv", H264 " -c:a aac");
    check_decode(f, 2.0, 4);
}

/* A source with irregular keyframes (scene cuts 9 frames after the
 * keyframes where an even plan cuts): each cut moves, within a quarter of
 * the chunk's length, to the keyframe whose pre-roll keeps the fewest
 * frames besides the warm-up (issue 43). The even plan cut at 45, 99 and
 * 153, each pre-roll decoding 37 frames only to drop them (111 in all);
 * cut at 54, 108 and 162, the keyframes 9 frames before are the
 * pre-rolls' and 1 frame a chunk is dropped. The frames are the whole
 * decode's either way. */
Test(media_remux_range, cuts_move_to_the_keyframe_with_the_shortest_preroll)
{
    char f[128];
    make(f, sizeof f, "scenes.mp4", "-c:v libx264 -preset veryfast -g 300 -keyint_min 300 "
         "-sc_threshold 0 -bf 0 -forced-idr 1 -force_key_frames 1.49,1.79,3.29,3.59,5.09,5.39 "
         "-pix_fmt yuv420p -c:a aac");
    long long dropped = check_decode(f, 1.5, 8);
    cr_assert_leq(dropped, 6, "%s: the pre-rolls decoded %lld frames only to drop them", f,
                  dropped);
    cr_assert_eq(check_ranges(f, 1.5, 8, 1), 4);
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = 1.5, .warmup = 8 };
    cr_assert_eq(remux_plan(f, &o, &pl, &e), 0, "%s", e.msg);
    for (int c = 0; c + 1 < pl.nchunks; c++) /* a quarter of 45 frames either way */
        cr_assert(pl.chunks[c].frames >= 34 && pl.chunks[c].frames <= 56,
                  "chunk %d: %lld frames", c, pl.chunks[c].frames);
    remux_plan_release(&pl);
}

/* The same clip planned in pieces (an elastic job, ctl_plan.c): a chunk
 * of whole pieces starts at the piece near its length with the shortest
 * pre-roll. Grouped at the first piece 1.5 s on (45, 99, 153) the chunks'
 * pre-rolls held 45 frames each, 37 only dropped; at 54, 108 and 162 they
 * hold 9, 1 dropped. */
Test(media_remux_range, elastic_chunks_start_at_the_piece_with_the_shortest_preroll)
{
    static struct pks own, pre;
    char f[128];
    make(f, sizeof f, "scenes.mp4", "-c:v libx264 -preset veryfast -g 300 -keyint_min 300 "
         "-sc_threshold 0 -bf 0 -forced-idr 1 -force_key_frames 1.49,1.79,3.29,3.59,5.09,5.39 "
         "-pix_fmt yuv420p -c:a aac");
    struct remux_plan pl;
    vr_err e = { 0 };
    const struct remux_plan_opts o = { .chunk_seconds = 0.25, .warmup = 8 };
    cr_assert_eq(remux_plan(f, &o, &pl, &e), 0, "%s", e.msg);
    cr_assert_eq(pl.nchunks, 7, "%d pieces", pl.nchunks);
    int *starts = NULL;
    int n = remux_plan_groups(&pl, 1.5, &starts);
    cr_assert_eq(n, 4, "%d chunks", n);
    cr_assert_eq(starts[n], pl.nchunks);
    long long dropped = 0;
    for (int g = 1; g < n; g++) {
        const struct chunk_range *r = &pl.chunks[starts[g]];
        own.n = pre.n = 0;
        cr_assert_eq(read_range(f, r, &own, &pre, &e), 0, "%s", e.msg);
        cr_assert_geq(pre.n, 8, "chunk %d: a pre-roll of %d frames", g, pre.n);
        dropped += pre.n - 8;
        double len = pl.chunks[starts[g]].start_s - pl.chunks[starts[g - 1]].start_s;
        cr_assert(len >= 1.5 * 0.75 - 1e-6 && len <= 1.5 * 1.25 + 1e-6, "chunk %d: %.2f s", g - 1,
                  len);
    }
    cr_assert_leq(dropped, 6, "the chunks' pre-rolls held %lld frames besides the warm-up",
                  dropped);
    free(starts);
    remux_plan_release(&pl);
}

/* The last wave graded (remux_plan_opts.wave_slots): on 4 slots the chunks
 * of a one-wave plan grow from short to long (the stitch takes each as it
 * ends), as many as the even plan's, every frame in one of them. */
Test(media_remux_range, the_last_wave_grows_from_short_to_long)
{
    char f[128];
    make(f, sizeof f, "graded.mp4", "-c:v libx264 -preset veryfast -g 5 -keyint_min 5 "
         "-sc_threshold 0 -pix_fmt yuv420p");
    struct remux_plan even, graded;
    vr_err e = { 0 };
    const struct remux_plan_opts oe = { .chunk_seconds = 1.5 };
    const struct remux_plan_opts og = { .chunk_seconds = 1.5, .wave_slots = 4 };
    cr_assert_eq(remux_plan(f, &oe, &even, &e), 0, "%s", e.msg);
    cr_assert_eq(remux_plan(f, &og, &graded, &e), 0, "%s", e.msg);
    cr_assert_eq(graded.nchunks, even.nchunks, "%d chunks graded, %d even", graded.nchunks,
                 even.nchunks);
    cr_assert_eq(graded.frames, even.frames);
    for (int i = 1; i < even.nchunks - 1; i++)
        cr_assert_eq(even.chunks[i].frames, even.chunks[0].frames, "even chunk %d: %lld frames",
                     i, even.chunks[i].frames);
    int n = graded.nchunks;
    cr_assert_geq(n, 4);
    for (int i = n - 4; i + 1 < n - 1; i++) /* the wave's last chunk takes what is left */
        cr_assert_lt(graded.chunks[i].frames, graded.chunks[i + 1].frames,
                     "chunk %d: %lld frames, chunk %d: %lld", i, graded.chunks[i].frames, i + 1,
                     graded.chunks[i + 1].frames);
    cr_assert_lt(graded.chunks[n - 4].frames, even.chunks[0].frames);
    remux_plan_release(&even);
    remux_plan_release(&graded);
}

/* A cut asked mid-read of a Matroska range (work stealing): its index has no
 * dts, so the reader tells by pts whether the cut's keyframe is out yet. It
 * used to refuse every such cut once a packet was out, so each cut chunk ran
 * again whole (the 1x H200 fleet: 191.7 fps against 290). */
Test(media_remux_range, a_matroska_range_takes_a_cut_asked_mid_read)
{
    char f[128];
    make(f, sizeof f, "cut.mkv", H264 " -c:a aac");
    struct remux_plan whole, keys;
    vr_err e = { 0 };
    const struct remux_plan_opts ow = { .chunk_seconds = 4.0 }, ok = { .chunk_seconds = 1.0 };
    cr_assert_eq(remux_plan(f, &ow, &whole, &e), 0, "%s", e.msg);
    cr_assert_eq(remux_plan(f, &ok, &keys, &e), 0, "%s", e.msg);
    cr_assert_geq(keys.nchunks, 4);
    struct chunk_range r = whole.chunks[0]; /* [0 s, 4 s) */
    struct remux_cut cut = { .state = REMUX_CUT_NONE };
    pthread_mutex_init(&cut.mu, NULL);
    r.cut = &cut;
    const struct chunk_range *at = &keys.chunks[2]; /* the keyframe at 2 s */
    cr_assert_eq(at->start.dts, AV_NOPTS_VALUE, "Matroska's index gives no dts");

    AVFormatContext *ic = open_file(f);
    struct remux_reader *rd;
    cr_assert_eq(remux_reader_open(ic, &r, f, &rd, &e), 0, "%s", e.msg);
    AVPacket *p = av_packet_alloc();
    int video = 0, rc;
    int64_t max_pts = INT64_MIN;
    while ((rc = remux_reader_next(rd, p, &e)) > 0) {
        if (p->stream_index == r.vs) {
            video++;
            max_pts = p->pts > max_pts ? p->pts : max_pts;
            if (video == 10) { /* mid-read: a third of the way to the cut */
                pthread_mutex_lock(&cut.mu);
                cut.end = at->start;
                cut.own_to = keys.chunks[1].own_to;
                cut.state = REMUX_CUT_ASKED;
                pthread_mutex_unlock(&cut.mu);
            }
        }
        av_packet_unref(p);
    }
    cr_assert_eq(rc, 0, "%s", e.msg);
    cr_assert_eq(cut.state, REMUX_CUT_TAKEN, "the cut was refused (state %d)", cut.state);
    cr_assert_lt(max_pts, at->start.pts, "a packet at or past the cut was handed out");
    cr_assert_eq(video, 60, "%d video packets before the 2 s cut, not 60", video);
    av_packet_free(&p);
    remux_reader_free(&rd);
    avformat_close_input(&ic);
    pthread_mutex_destroy(&cut.mu);
    remux_plan_release(&whole);
    remux_plan_release(&keys);
}

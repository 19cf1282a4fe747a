/*
 * t-media-remux-split.c - keyframe split and stitch by stream copy on real clips:
 * every packet lands in exactly one chunk (frames add up, each chunk starts
 * with a keyframe, chunk packets concatenate to the source's), stitching the
 * unprocessed chunks rebuilds the source's video packets and timestamps and
 * its audio bit for bit, and bad inputs fail with a reason; a Matroska
 * source whose B-frames come without a dts is cut with every timestamp set.
 */
#include "remux.h"
#include "util-video.h"
#include "util-redis.h"
#include "vio_video.h"

#include <libavutil/log.h>
#include <libavutil/mathematics.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char D[64];

static void setup(void)
{
    snprintf(D, sizeof D, "/tmp/vrtest-remux-XXXXXX");
    cr_assert_not_null(mkdtemp(D));
}

static void teardown(void)
{
    tsh("rm -rf '%s'", D);
}

TestSuite(media_remux_split, .init = setup, .fini = teardown, .timeout = 60);

Test(media_remux_split, probe_reports_video_and_rejects_non_video_and_unknown_codecs)
{
    char clip[128], txt[128];
    snprintf(clip, sizeof clip, "%s/a.mp4", D);
    cr_assert_eq(tclip_make(clip, 2, 128, 5, 1), 0);
    struct remux_info info;
    vr_err e = { 0 };
    cr_assert_eq(remux_probe(clip, &info, &e), 0, "%s", e.msg);
    cr_assert_eq(info.width, 128);
    cr_assert_eq(info.height, 96);
    cr_assert_eq(info.has_audio, 1);
    cr_assert_str_eq(info.codec, "h264");
    cr_assert_float_eq(info.fps, 10.0, 0.01);

    cr_assert_eq(remux_probe("/nonexistent/x.mp4", &info, &e), VR_ENOENT);
    cr_assert(strstr(e.msg, "no such file"), "%s", e.msg);
    snprintf(txt, sizeof txt, "%s/notes.mp4", D);
    FILE *f = fopen(txt, "w");
    fputs("this is not a video\n", f);
    fclose(f);
    cr_assert_eq(remux_probe(txt, &info, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "notes.mp4"), "%s", e.msg);
    snprintf(txt, sizeof txt, "%s/tone.m4a", D);
    cr_assert_eq(tsh("ffmpeg -v error -f lavfi -i sine -t 1 '%s'", txt), 0);
    cr_assert_eq(remux_probe(txt, &info, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "not a video"), "%s", e.msg);
    /* a Matroska file whose codec nothing here decodes: named, refused */
    char unk[128], src[512];
    snprintf(unk, sizeof unk, "%s/unknown.mkv", D);
    tv_data(src, sizeof src, "tests/data/video/mono.mkv");
    cr_assert_eq(tsh("sed 's|V_MPEG4/ISO/AVC|V_MPEG4/ISO/XYZ|' '%s' > '%s'", src, unk), 0);
    cr_assert_eq(remux_probe(unk, &info, &e), VR_ENOTSUP);
    cr_assert(strstr(e.msg, "unsupported codec (unknown)") && strstr(e.msg, "unknown.mkv"), "%s", e.msg);
}

Test(media_remux_split, split_is_frame_exact_and_stitch_rebuilds_source)
{
    char clip[128], dir[128], out[128], md5a[256], md5b[256];
    snprintf(clip, sizeof clip, "%s/in.mp4", D);
    snprintf(dir, sizeof dir, "%s/chunks", D);
    snprintf(out, sizeof out, "%s/out.mp4", D);
    cr_assert_eq(tclip_make(clip, 5, 160, 7, 1), 0);

    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 1.0 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(s.frames, 50);
    cr_assert_geq(s.nchunks, 4, "%d chunks", s.nchunks);
    long long sum = 0;
    const char *paths[64];
    char names[64][160];
    long long fr[64];
    for (int i = 0; i < s.nchunks; i++) {
        cr_assert_eq(s.chunks[i].first_frame, sum);
        sum += s.chunks[i].frames;
        /* Keyframe-aligned: GOP of 7 frames, so chunks are multiples of 7
         * except the tail, and at least 1 s (10 frames) except the tail. */
        if (i + 1 < s.nchunks) {
            cr_assert_eq(s.chunks[i].frames % 7, 0, "chunk %d: %lld", i, s.chunks[i].frames);
            cr_assert_geq(s.chunks[i].frames, 10);
        }
        remux_chunk_name(dir, i, names[i], sizeof names[i], NULL);
        paths[i] = names[i];
        fr[i] = s.chunks[i].frames;
        long long n;
        double d;
        cr_assert_eq(remux_count(names[i], &n, &d, &e), 0, "%s", e.msg);
        cr_assert_eq(n, s.chunks[i].frames);
        char kf[64];
        tsh_out(kf, sizeof kf, "ffprobe -v error -select_streams v -show_entries packet=flags "
                "-of csv=p=0 '%s' | head -1", names[i]);
        cr_assert(kf[0] == 'K', "chunk %d starts with '%s'", i, kf);
    }
    cr_assert_eq(sum, 50);

    /* Identity processing: the chunks' video packets concatenated equal the
     * source's, byte for byte. */
    cr_assert_eq(remux_stitch(clip, paths, s.nchunks, fr, out, &e), 0, "%s", e.msg);
    tsh_out(md5a, sizeof md5a, "ffmpeg -v error -i '%s' -map 0:v -c copy -f framemd5 - | "
            "grep -v '^#' | md5sum", clip);
    tsh_out(md5b, sizeof md5b, "ffmpeg -v error -i '%s' -map 0:v -c copy -f framemd5 - | "
            "grep -v '^#' | md5sum", out);
    cr_assert_str_eq(md5a, md5b, "video packets or timestamps differ");
    tsh_out(md5a, sizeof md5a, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", clip);
    tsh_out(md5b, sizeof md5b, "ffmpeg -v error -i '%s' -map 0:a -c copy -f md5 -", out);
    cr_assert_str_eq(md5a, md5b, "audio is not bit-exact");
    cr_assert_gt(strlen(md5a), 10);

    /* A chunk with a frame missing is caught and named. */
    long long bad[64];
    memcpy(bad, fr, sizeof bad);
    bad[1] += 1;
    bad[2] -= 1;
    unlink(out);
    cr_assert_eq(remux_stitch(clip, paths, s.nchunks, bad, out, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "chunk 1"), "%s", e.msg);
    cr_assert_neq(access(out, F_OK), 0, "a failed stitch left its output");
    remux_split_release(&s);
}

Test(media_remux_split, stitch_refuses_wrong_total_and_unknown_container)
{
    char clip[128], dir[128], out[128], c0[160];
    snprintf(clip, sizeof clip, "%s/in.mp4", D);
    snprintf(dir, sizeof dir, "%s/c", D);
    cr_assert_eq(tclip_make(clip, 1, 96, 5, 0), 0);
    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 10 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(s.nchunks, 1);
    remux_chunk_name(dir, 0, c0, sizeof c0, NULL);
    const char *p[] = { c0 };
    long long fr = s.frames - 1;
    snprintf(out, sizeof out, "%s/o.mkv", D);
    cr_assert_eq(remux_stitch(clip, p, 1, &fr, out, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "frames"), "%s", e.msg);
    fr = s.frames;
    snprintf(out, sizeof out, "%s/o.xyz", D);
    cr_assert_eq(remux_stitch(clip, p, 1, &fr, out, &e), VR_ENOTSUP);
    snprintf(out, sizeof out, "%s/o.mkv", D);
    cr_assert_eq(remux_stitch(clip, p, 1, &fr, out, &e), 0, "%s", e.msg);
    remux_split_release(&s);
}


/* D/open.mkv: two 30-frame 25 fps encodes with `codec` (ffmpeg -c:v
 * arguments) joined by stream copy, so the second starts with an IDR. */
static void open_gop_clip(const char *codec, char *clip, size_t n)
{
    snprintf(clip, n, "%s/open.mkv", D);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tsh("ffmpeg -v error -f lavfi -i testsrc2=size=128x96:rate=25 -frames:v 30 "
                         "-c:v %s '%s/part%d.mkv'", codec, D, i), 0);
    cr_assert_eq(tsh("cd '%s' && printf 'file part0.mkv\\nfile part1.mkv\\n' > list.txt && "
                     "ffmpeg -v error -f concat -safe 0 -i list.txt -c copy '%s'", D, clip), 0);
}

static int Unset; /* the muxer's "Timestamps are unset" lines */

static void count_unset(void *avcl, int level, const char *fmt, va_list vl)
{
    (void)avcl;
    (void)level;
    (void)vl;
    if (strstr(fmt, "Timestamps are unset"))
        Unset++;
}

Test(media_remux_split, open_gop_hevc_cuts_at_cra_with_a_preroll, .timeout = 120)
{
    /* Two x265 open-GOP encodes joined by stream copy, 25 fps: IDRs at
     * frames 0 and 30, CRAs every 10 frames in between, 3 B-frames. Chunks
     * start at every keyframe; those at a CRA carry the GOP before as a
     * pre-roll. Decoding a chunk and dropping the frames below
     * preroll_until must give exactly its own frames, bit for bit the
     * frames a decode of the whole source gives (the leading pictures after
     * each CRA included); and the worker's reader (vio_in, with its
     * truncation check) must accept every chunk as it is. Matroska gives
     * the B-frames a pts only: the split sets the dts the muxer would
     * compute, which warned "Timestamps are unset ... Fix your code" once a
     * chunk cut (issue 26, finding 9). */
    char clip[128], dir[128];
    open_gop_clip("libx265 -preset ultrafast -x265-params log-level=error:keyint=10:"
                  "min-keyint=10:scenecut=0:open-gop=1:bframes=3", clip, sizeof clip);
    snprintf(dir, sizeof dir, "%s/chunks", D);
    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 0.2 };
    av_log_set_callback(count_unset);
    int rc = remux_split(clip, dir, &so, &s, &e);
    av_log_set_callback(av_log_default_callback);
    cr_assert_eq(rc, 0, "%s", e.msg);
    cr_assert_eq(Unset, 0, "the muxer saw %d chunks' packets without timestamps", Unset);
    cr_assert_eq(s.frames, 60);
    cr_assert_eq(s.nchunks, 6, "a chunk per keyframe: %d chunks", s.nchunks);

    struct tv_file *src = calloc(1, sizeof *src), *c = calloc(1, sizeof *c);
    cr_assert(src && c);
    cr_assert_eq(tv_read(clip, 1, src), 0);
    cr_assert_eq(src->nframes, 60);
    for (int i = 0; i < s.nchunks; i++) {
        const struct remux_chunk *k = &s.chunks[i];
        /* 9-11 packets each: a CRA's leading pictures follow it in decode
         * order, so they travel with it */
        cr_assert(k->frames >= 9 && k->frames <= 11, "chunk %d: %lld frames", i, k->frames);
        /* IDRs (frames 0 and 30) are clean cuts; the CRAs need a pre-roll */
        int at_idr = k->first_frame == 0 || k->first_frame == 30;
        cr_assert_eq(k->preroll_frames > 0, !at_idr, "chunk %d (frame %lld): pre-roll %d", i,
                     k->first_frame, k->preroll_frames);
        char path[160];
        cr_assert_eq(remux_chunk_name(dir, i, path, sizeof path, &e), 0);
        cr_assert_eq(tv_read(path, 1, c), 0);
        int kept = 0;
        for (int f = 0; f < c->nframes; f++) {
            long long ms = av_rescale_q(c->pts[f], c->tb, (AVRational){ 1, 1000 });
            if (k->preroll_frames && ms < k->preroll_until)
                continue;
            cr_assert_lt(kept, k->frames, "chunk %d: more frames than its own", i);
            long long sf = k->first_frame + kept++;
            cr_assert(!memcmp(c->luma[f], src->luma[sf], (size_t)src->w * src->h),
                      "chunk %d frame %d differs from source frame %lld", i, f, sf);
        }
        cr_assert_eq(kept, k->frames, "chunk %d decodes to %d of its %lld frames", i, kept,
                     k->frames);
        tv_free(c);
        struct vio_in_opts io = { .path = path, .preroll_until_ms = k->preroll_until,
                                  .warmup_from_ms = k->preroll_until };
        struct vio_in *vi = NULL;
        cr_assert_eq(vio_in_open(&io, &vi, &e), 0, "%s", e.msg);
        AVFrame *fr = av_frame_alloc();
        AVPacket *pk = av_packet_alloc();
        int ev;
        while ((ev = vio_in_next(vi, fr, pk, &e)) > 0)
            av_frame_unref(fr);
        cr_assert_eq(ev, VIO_EOF, "chunk %d: %s", i, e.msg);
        cr_assert_eq(vio_in_frames(vi), k->frames, "chunk %d through vio_in", i);
        av_frame_free(&fr);
        av_packet_free(&pk);
        vio_in_free(&vi);
    }
    tv_free(src);
    free(src);
    free(c);
    remux_split_release(&s);
}

Test(media_remux_split, open_gop_h264_is_cut_only_at_idr, .timeout = 120)
{
    /* x264 open GOP: I pictures with recovery points every 10 frames. Its
     * decoder errors on their leading pictures' missing references, so no
     * pre-roll cut: the only cuts are the IDRs (frames 0 and 30), and every
     * chunk decodes to exactly its frames. */
    char clip[128], dir[128];
    open_gop_clip("libx264 -preset ultrafast -bf 3 -x264-params keyint=10:min-keyint=10:"
                  "scenecut=0:open-gop=1", clip, sizeof clip);
    snprintf(dir, sizeof dir, "%s/chunks", D);
    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 0.2 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(s.frames, 60);
    cr_assert_eq(s.nchunks, 2, "cuts only at the IDRs (0, 30): %d chunks", s.nchunks);
    struct tv_file *c = calloc(1, sizeof *c);
    cr_assert(c);
    for (int i = 0; i < s.nchunks; i++) {
        char path[160];
        cr_assert_eq(remux_chunk_name(dir, i, path, sizeof path, &e), 0);
        cr_assert_eq(s.chunks[i].frames, 30, "chunk %d", i);
        cr_assert_eq(s.chunks[i].preroll_frames, 0, "chunk %d", i);
        cr_assert_eq(tv_read(path, 0, c), 0);
        cr_assert_eq(c->nframes, 30, "chunk %d decodes to %d frames", i, c->nframes);
        tv_free(c);
    }
    free(c);
    remux_split_release(&s);
}

/* A source with more audio streams than the old fixed table held (64):
 * every one is stitched back, bit for bit. */
Test(media_remux_split, stitch_keeps_every_audio_stream_past_64)
{
    enum { NA = 70 };
    char clip[128], dir[128], out[128], maps[NA * 12 + 1] = "", n[32];
    snprintf(clip, sizeof clip, "%s/many.mkv", D);
    snprintf(dir, sizeof dir, "%s/chunks", D);
    snprintf(out, sizeof out, "%s/out.mkv", D);
    for (int i = 0; i < NA; i++)
        strcat(maps, " -map 1:a");
    cr_assert_eq(tsh("ffmpeg -v error -y -i /usr/share/doc/opencv-doc/examples/data/vtest.avi "
                     "-f lavfi -i sine=frequency=440:sample_rate=8000 -t 2 -map 0:v %s "
                     "-vf scale=64:48 -c:v libx264 -preset ultrafast -g 5 -pix_fmt yuv420p "
                     "-c:a pcm_s16le -shortest '%s'", maps, clip), 0);
    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 0.5 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    const char *paths[64];
    char names[64][160];
    long long fr[64];
    cr_assert_leq(s.nchunks, 64);
    for (int i = 0; i < s.nchunks; i++) {
        remux_chunk_name(dir, i, names[i], sizeof names[i], NULL);
        paths[i] = names[i];
        fr[i] = s.chunks[i].frames;
    }
    cr_assert_eq(remux_stitch(clip, paths, s.nchunks, fr, out, &e), 0, "%s", e.msg);
    tsh_out(n, sizeof n, "ffprobe -v error -select_streams a -show_entries stream=index -of csv=p=0 "
            "'%s' | wc -l", out);
    cr_assert_eq(atoi(n), NA, "%s audio streams of %d kept", n, NA);
    char a[256], b[256];
    tsh_out(a, sizeof a, "ffmpeg -v error -i '%s' -map 0:a:69 -c copy -f md5 -", clip);
    tsh_out(b, sizeof b, "ffmpeg -v error -i '%s' -map 0:a:69 -c copy -f md5 -", out);
    cr_assert_str_eq(a, b, "the 70th audio stream changed");
    remux_split_release(&s);
}

/* What the split's chunk_ready callback saw. */
struct ready_log {
    const char *dir;
    int calls, stop_at;
    int idx[64];
    long long frames[64];
    int later_file_existed; /* a file after the one handed over was already there */
};

static int ready_note(void *ctx, int idx, const struct remux_chunk *c, vr_err *err)
{
    struct ready_log *r = ctx;
    char path[256], next[256];
    remux_chunk_name(r->dir, idx, path, sizeof path, NULL);
    remux_chunk_name(r->dir, idx + 1, next, sizeof next, NULL);
    cr_assert_eq(access(path, R_OK), 0, "chunk %d handed over before its file exists", idx);
    r->later_file_existed |= access(next, F_OK) == 0;
    r->idx[r->calls] = idx;
    r->frames[r->calls++] = c->frames;
    if (idx == r->stop_at)
        return vr_err_set(err, VR_ECANCELED, "stopped at chunk %d", idx);
    return 0;
}

Test(media_remux_split, split_hands_each_chunk_over_as_soon_as_its_file_is_committed)
{
    char clip[128], dir[128];
    snprintf(clip, sizeof clip, "%s/in.mp4", D);
    snprintf(dir, sizeof dir, "%s/chunks", D);
    cr_assert_eq(tclip_make(clip, 5, 160, 7, 0), 0);
    struct ready_log r = { .dir = dir, .stop_at = -1 };
    struct remux_split_opts so = { .chunk_seconds = 1.0, .chunk_ready = ready_note, .ctx = &r };
    struct remux_split s;
    vr_err e = { 0 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    cr_assert_eq(r.calls, s.nchunks);
    for (int i = 0; i < s.nchunks; i++) {
        cr_assert_eq(r.idx[i], i);
        cr_assert_eq(r.frames[i], s.chunks[i].frames);
    }
    cr_assert_eq(r.later_file_existed, 0, "the split ran ahead of the caller");
    remux_split_release(&s);

    /* the caller stops the split (a cancelled job): no later chunk is cut */
    char dir2[128], third[256];
    snprintf(dir2, sizeof dir2, "%s/stopped", D);
    struct ready_log r2 = { .dir = dir2, .stop_at = 1 };
    so.ctx = &r2;
    cr_assert_eq(remux_split(clip, dir2, &so, &s, &e), VR_ECANCELED);
    cr_assert(strstr(e.msg, "stopped at chunk 1"), "%s", e.msg);
    cr_assert_eq(r2.calls, 2);
    remux_chunk_name(dir2, 2, third, sizeof third, NULL);
    cr_assert_neq(access(third, F_OK), 0, "chunk 2 was cut after the stop");
}

/* Every stream's packets and timestamps (the container's own ids differ). */
static void file_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0 -c copy -f framemd5 - | grep -v '^#' | md5sum",
            path);
}

Test(media_remux_split, stitch_fed_chunk_by_chunk_equals_the_whole_stitch_and_publishes_only_at_the_end)
{
    char clip[128], dir[128], whole[128], ahead[128], names[16][160];
    const char *paths[16];
    long long fr[16];
    snprintf(clip, sizeof clip, "%s/in.mp4", D);
    snprintf(dir, sizeof dir, "%s/c", D);
    snprintf(whole, sizeof whole, "%s/whole.mkv", D);
    snprintf(ahead, sizeof ahead, "%s/ahead.mkv", D);
    cr_assert_eq(tclip_make(clip, 4, 160, 5, 1), 0);
    struct remux_split s;
    vr_err e = { 0 };
    const struct remux_split_opts so = { .chunk_seconds = 1.0 };
    cr_assert_eq(remux_split(clip, dir, &so, &s, &e), 0, "%s", e.msg);
    cr_assert_geq(s.nchunks, 3);
    for (int i = 0; i < s.nchunks; i++) {
        remux_chunk_name(dir, i, names[i], sizeof names[i], NULL);
        paths[i] = names[i];
        fr[i] = s.chunks[i].frames;
    }
    cr_assert_eq(remux_stitch(clip, paths, s.nchunks, fr, whole, &e), 0, "%s", e.msg);

    struct remux_stitcher *st;
    cr_assert_eq(remux_stitch_begin(clip, paths[0], fr, s.nchunks, ahead, &st, &e), 0, "%s", e.msg);
    for (int i = 0; i < s.nchunks; i++) {
        cr_assert_eq(remux_stitch_added(st), i);
        cr_assert_eq(remux_stitch_add(st, paths[i], NULL, &e), 0, "%s", e.msg);
        cr_assert_neq(access(ahead, F_OK), 0, "published before the end");
    }
    cr_assert_eq(remux_stitch_add(st, paths[0], NULL, &e), VR_EINVAL, "a chunk past the last");
    cr_assert_eq(remux_stitch_end(&st, &e), 0, "%s", e.msg);
    cr_assert_null(st);
    char a[64], b[64];
    file_md5(whole, a, sizeof a);
    file_md5(ahead, b, sizeof b);
    cr_assert_str_eq(a, b, "the stitch fed chunk by chunk is another file");

    /* Ended early or dropped midway: nothing published, no temporary left. */
    unlink(ahead);
    cr_assert_eq(remux_stitch_begin(clip, paths[0], fr, s.nchunks, ahead, &st, &e), 0, "%s", e.msg);
    cr_assert_eq(remux_stitch_add(st, paths[0], NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(remux_stitch_end(&st, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "1 of"), "%s", e.msg);
    cr_assert_eq(remux_stitch_begin(clip, paths[0], fr, s.nchunks, ahead, &st, &e), 0, "%s", e.msg);
    cr_assert_eq(remux_stitch_add(st, paths[0], NULL, &e), 0, "%s", e.msg);
    remux_stitch_abort(&st);
    cr_assert_null(st);
    cr_assert_eq(tsh("ls -a '%s' | grep -q 'ahead'", D), 1, "a dropped stitch left a file");
    remux_split_release(&s);
}

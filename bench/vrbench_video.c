/*
 * vrbench_video.c - the pipeline's stage benchmarks that need no network:
 *
 *   vrbench-video gen SRC OUT W H FPS FRAMES MBPS
 *       a W x H SBS HEVC clip at MBPS Mbit/s from real footage (SRC is
 *       scaled into both eyes, the right eye shifted, with film grain so the
 *       bitrate is that of camera footage), encoded with libx265 ultrafast
 *   vrbench-video decode FILE SESSIONS [cpu]
 *       decode-only fps: SESSIONS threads each decode the whole file with
 *       NVDEC (frames left in GPU memory), or on the CPU
 *   vrbench-video encode FILE W H FRAMES INSTANCES [ENCODER [PRESET [THREADS]]]
 *       encode-only fps of matte-like frames (soft moving blobs) at W x H,
 *       INSTANCES encoders in parallel on separate frame ranges, each with
 *       THREADS threads (default: the cores shared out)
 *   vrbench-video encode-picture FILE FRAMES INSTANCES [ENCODER [PRESET [THREADS [CRF]]]]
 *       the same for FILE's own pictures with a picture's encoder settings,
 *       and their PSNR and bitrate (vrbench_encode_picture.c)
 *   vrbench-video source SRC [CHUNK_SECONDS]
 *       SRC (a file or a URL) planned, then read packet by packet (vrbench_source.c).
 *   vrbench-video preroll SRC CHUNK_SECONDS WARMUP [PIECE_SECONDS]
 *       each chunk of SRC's plan (an elastic job's with PIECE_SECONDS) decoded up to its first output frame: its
 *       pre-roll's dropped and warm-up frames (vrbench_preroll.c)
 *   vrbench-video repeat IN OUT TIMES
 *       IN copied TIMES times end to end by stream copy (vrbench_repeat.c):
 *       a long clip for the price of a short encode
 *   vrbench-video stitch CHUNK TIMES OUT
 *       the controller's stitch of TIMES copies of the matte chunk CHUNK
 *       read in place, each with its sidecar: MB/s, wall and CPU seconds
 *       (vrbench_stitch.c)
 *   vrbench-video diff A B
 *       mean and max absolute luma difference of two videos' frames, after
 *       scaling B to A's size (GPU matte vs CPU matte; the fleet's matte vs
 *       one process's), the worst frame and how many frames differ
 *   vrbench-video quality CLIP [--cpu | --gpu N] [--frames N] [--sheet PNG] [--width W]
 *                         [--truth TRUTH] [--people 0..4] [PROFILE...]
 *       the matte measures (holes, false positives against the first
 *       profile or the clip's truth matte, stereo agreement, flicker, tile
 *       borders, the pose detector's people found in each eye) per
 *       profile, and a contact sheet (vrbench_quality.c; docs/QUALITY.md)
 *
 * Each prints one "RESULT name value unit" line that bench/pipeline.sh
 * collects. Run by `make bench-pipeline`; see docs/notes/pipeline.md.
 */
#include "config.h"
#include "clock.h"
#include "vio_video.h"

#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cmd_repeat(int argc, char **argv);         /* vrbench_repeat.c */
int cmd_source(int argc, char **argv);         /* vrbench_source.c */
int cmd_preroll(int argc, char **argv);        /* vrbench_preroll.c */
int cmd_encode_picture(int argc, char **argv); /* vrbench_encode_picture.c */
int cmd_quality(int argc, char **argv);        /* vrbench_quality.c */
int cmd_stitch(int argc, char **argv);         /* vrbench_stitch.c */

static int die(const char *what, const vr_err *e)
{
    fprintf(stderr, "vrbench-video: %s: %s\n", what, e ? e->msg : "failed");
    return 1;
}

/* ---- gen ---- */

static int cmd_gen(int argc, char **argv)
{
    if (argc != 9)
        return fprintf(stderr, "usage: gen SRC OUT W H FPS FRAMES MBPS\n"), 2;
    const char *src = argv[2], *out = argv[3];
    int W = atoi(argv[4]), H = atoi(argv[5]), fps = atoi(argv[6]), frames = atoi(argv[7]);
    double mbps = atof(argv[8]);
    vr_err e = { 0 };
    /* the source frames, all in memory (a short clip) */
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = src };
    if (vio_in_open(&io, &in, &e) < 0)
        return die(src, &e);
    enum { MAXSRC = 64 };
    AVFrame *sf[MAXSRC];
    int ns = 0;
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    int ev;
    while (ns < MAXSRC && (ev = vio_in_next(in, f, p, &e)) > 0) {
        if (ev == VIO_FRAME) {
            sf[ns] = av_frame_clone(f);
            ns++;
            av_frame_unref(f);
        } else {
            av_packet_unref(p);
        }
    }
    if (ns == 0)
        return die(src, &e);
    const AVCodec *c = avcodec_find_encoder_by_name("libx265");
    AVCodecContext *enc = avcodec_alloc_context3(c);
    enc->width = W;
    enc->height = H;
    enc->pix_fmt = AV_PIX_FMT_YUV420P;
    enc->time_base = (AVRational){ 1, fps };
    enc->framerate = (AVRational){ fps, 1 };
    enc->bit_rate = (int64_t)(mbps * 1e6);
    enc->gop_size = fps;
    enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary *d = NULL;
    av_dict_set(&d, "preset", "ultrafast", 0);
    char xp[128];
    /* Closed GOPs of one second: IDR cut points for `vrctl` chunks, as a
     * deliverable for distributed processing is usually encoded. */
    snprintf(xp, sizeof xp, "log-level=error:open-gop=0:vbv-maxrate=%d:vbv-bufsize=%d",
             (int)(mbps * 1000), (int)(mbps * 1000));
    av_dict_set(&d, "x265-params", xp, 0);
    if (avcodec_open2(enc, c, &d) < 0)
        return die("libx265", NULL);
    AVFormatContext *oc = NULL;
    avformat_alloc_output_context2(&oc, NULL, NULL, out);
    AVStream *st = avformat_new_stream(oc, NULL);
    avcodec_parameters_from_context(st->codecpar, enc);
    st->time_base = enc->time_base;
    if (avio_open(&oc->pb, out, AVIO_FLAG_WRITE) < 0 || avformat_write_header(oc, NULL) < 0)
        return die(out, NULL);
    /* each eye: the source scaled to H x H (square eyes), right eye shifted */
    int eye = W / 2;
    struct SwsContext *sws = sws_getContext(sf[0]->width, sf[0]->height, sf[0]->format, eye, H,
                                            AV_PIX_FMT_YUV420P, SWS_BILINEAR, NULL, NULL, NULL);
    AVFrame *left = av_frame_alloc();
    left->format = AV_PIX_FMT_YUV420P;
    left->width = eye;
    left->height = H;
    av_frame_get_buffer(left, 64);
    AVFrame *o = av_frame_alloc();
    o->format = AV_PIX_FMT_YUV420P;
    o->width = W;
    o->height = H;
    av_frame_get_buffer(o, 64);
    unsigned seed = 12345;
    const int shift = eye / 64;
    double t0 = clock_mono_s();
    for (int i = 0; i < frames; i++) {
        const AVFrame *s = sf[i % ns];
        sws_scale(sws, (const uint8_t *const *)s->data, s->linesize, 0, s->height, left->data,
                  left->linesize);
        av_frame_make_writable(o);
        for (int pl = 0; pl < 3; pl++) {
            int ew = pl ? eye / 2 : eye, h = pl ? H / 2 : H, sh = pl ? shift / 2 : shift;
            for (int y = 0; y < h; y++) {
                const uint8_t *l = left->data[pl] + (size_t)y * left->linesize[pl];
                uint8_t *dl = o->data[pl] + (size_t)y * o->linesize[pl];
                memcpy(dl, l, (size_t)ew);
                memcpy(dl + ew, l + sh, (size_t)(ew - sh));
                memset(dl + ew + ew - sh, l[ew - 1], (size_t)sh);
                if (pl == 0) /* grain: +-6 on luma, like a camera sensor */
                    for (int x = 0; x < 2 * ew; x++) {
                        seed = seed * 1664525u + 1013904223u;
                        int v = dl[x] + (int)((seed >> 24) % 13) - 6;
                        dl[x] = (uint8_t)(v < 16 ? 16 : v > 235 ? 235 : v);
                    }
            }
        }
        o->pts = i;
        avcodec_send_frame(enc, o);
        while (avcodec_receive_packet(enc, p) == 0) {
            av_packet_rescale_ts(p, enc->time_base, st->time_base);
            p->stream_index = 0;
            av_interleaved_write_frame(oc, p);
        }
    }
    avcodec_send_frame(enc, NULL);
    while (avcodec_receive_packet(enc, p) == 0) {
        av_packet_rescale_ts(p, enc->time_base, st->time_base);
        p->stream_index = 0;
        av_interleaved_write_frame(oc, p);
    }
    av_write_trailer(oc);
    int64_t size = avio_size(oc->pb);
    avio_closep(&oc->pb);
    printf("gen: %s %dx%d %d frames at %d fps, %.1f Mbit/s, %.1f s to make\n", out, W, H, frames,
           fps, size * 8.0 / (frames / (double)fps) / 1e6, clock_mono_s() - t0);
    return 0;
}

/* ---- decode ---- */

struct dec_job {
    const char *path;
    int hw;
    int64_t frames;
    double first_s; /* from the bench's start to this session's first frame */
    vr_err e;
    int rc;
};

static double dec_t0; /* the bench's start (the process's, for SESSIONS 1) */

static void *dec_thread(void *arg)
{
    struct dec_job *j = arg;
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = j->path, .hw = j->hw };
    if ((j->rc = vio_in_open(&io, &in, &j->e)) < 0)
        return NULL;
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    int ev;
    while ((ev = vio_in_next(in, f, p, &j->e)) > 0) {
        if (ev == VIO_FRAME && j->frames++ == 0)
            j->first_s = clock_mono_s() - dec_t0;
        av_frame_unref(f);
        av_packet_unref(p);
    }
    j->rc = ev < 0 ? ev : 0;
    av_frame_free(&f);
    av_packet_free(&p);
    vio_in_free(&in);
    return NULL;
}

static int cmd_decode(int argc, char **argv)
{
    if (argc < 4)
        return fprintf(stderr, "usage: decode FILE SESSIONS [cpu]\n"), 2;
    int n = atoi(argv[3]), hw = !(argc > 4 && !strcmp(argv[4], "cpu"));
    if (n < 1 || n > 32)
        return 2;
    struct dec_job j[32];
    pthread_t t[32];
    double t0 = dec_t0 = clock_mono_s();
    for (int i = 0; i < n; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].path = argv[2];
        j[i].hw = hw;
        pthread_create(&t[i], NULL, dec_thread, &j[i]);
    }
    int64_t total = 0;
    double first_sum = 0, first_max = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (j[i].rc < 0)
            return die("decode", &j[i].e);
        total += j[i].frames;
        first_sum += j[i].first_s;
        first_max = fmax(first_max, j[i].first_s);
    }
    double dt = clock_mono_s() - t0;
    /* the first frame includes the decoder's creation (and, in a fresh
     * process, the CUDA context's): one process of N threads against N
     * processes of one (issue 43) */
    printf("RESULT decode_%s_%dsess_fps %.1f fps (%lld frames in %.2f s; first frame %.0f ms mean, "
           "%.0f ms last)\n", hw ? "nvdec" : "cpu", n, total / dt, (long long)total, dt,
           1000 * first_sum / n, 1000 * first_max);
    return 0;
}

/* ---- encode ---- */

static pthread_barrier_t enc_ready; /* frames pre-rendered in every thread */
enum { ENC_SOURCE_GOP = 60 };      /* the generator's keyframe interval */
static double enc_t0;

struct enc_job {
    const char *src, *encoder, *preset;
    int w, h, frames, index, threads;
    vr_err e;
    int rc;
};

/* soft-edged blobs that move: what a matte looks like to an encoder */
static void matte_frame(AVFrame *f, int i)
{
    int w = f->width, h = f->height;
    for (int y = 0; y < h; y++) {
        uint8_t *r = f->data[0] + (size_t)y * f->linesize[0];
        for (int x = 0; x < w; x++) {
            double v = 0;
            for (int b = 0; b < 4; b++) {
                double cx = w * (0.15 + 0.2 * b) + w * 0.05 * sin((i + 10 * b) * 0.05);
                double cy = h * 0.55, rx = w * 0.03, ry = h * 0.25;
                double dx = (x - cx) / rx, dy = (y - cy) / ry, d2 = dx * dx + dy * dy;
                if (d2 < 1.3)
                    v = fmax(v, d2 < 1 ? 255 : 255 * (1.3 - d2) / 0.3);
            }
            r[x] = (uint8_t)v;
        }
    }
    for (int pl = 1; pl < 3; pl++)
        for (int y = 0; y < h / 2; y++)
            memset(f->data[pl] + (size_t)y * f->linesize[pl], 128, (size_t)w / 2);
}

static void *enc_thread(void *arg)
{
    struct enc_job *j = arg;
    struct vio_in *in = NULL;
    struct vio_out *o = NULL;
    struct vio_in_opts io = { .path = j->src };
    if ((j->rc = vio_in_open(&io, &in, &j->e)) < 0) {
        pthread_barrier_wait(&enc_ready);
        return NULL;
    }
    struct vr_config cfg;
    config_defaults(&cfg);
    snprintf(cfg.encoder, sizeof cfg.encoder, "%s", j->encoder);
    snprintf(cfg.preset, sizeof cfg.preset, "%s", j->preset);
    char out[256];
    snprintf(out, sizeof out, "/tmp/vrbench-enc-%d.mkv", j->index);
    struct vio_out_opts oo = { .path = out, .format_name = out, .in = in, .w = j->w, .h = j->h,
                               .pix_fmt = AV_PIX_FMT_YUV420P, .full_range = 1, .cfg = &cfg,
                               .threads = j->threads, .matte = 1 };
    if ((j->rc = vio_out_open(&oo, &o, &j->e)) < 0) {
        pthread_barrier_wait(&enc_ready);
        goto out;
    }
    /* pre-render a few frames so the timing is the encoder's */
    enum { NPRE = 16 };
    AVFrame *fr[NPRE];
    for (int i = 0; i < NPRE; i++) {
        fr[i] = av_frame_alloc();
        fr[i]->format = AV_PIX_FMT_YUV420P;
        fr[i]->width = j->w;
        fr[i]->height = j->h;
        av_frame_get_buffer(fr[i], 64);
        matte_frame(fr[i], i * 3);
    }
    if (pthread_barrier_wait(&enc_ready) == PTHREAD_BARRIER_SERIAL_THREAD)
        enc_t0 = clock_mono_s();
    for (int i = 0; i < j->frames && j->rc == 0; i++) {
        fr[i % NPRE]->pts = i;
        /* the pipeline's GOPs: an IDR at each keyframe of the 1 s source GOP */
        fr[i % NPRE]->pict_type = i % ENC_SOURCE_GOP ? AV_PICTURE_TYPE_NONE : AV_PICTURE_TYPE_I;
        j->rc = vio_out_write(o, fr[i % NPRE], &j->e);
    }
    if (j->rc == 0)
        j->rc = vio_out_finish(o, &j->e);
    for (int i = 0; i < NPRE; i++)
        av_frame_free(&fr[i]);
out:
    vio_out_free(&o);
    vio_in_free(&in);
    remove(out);
    return NULL;
}

/* one a core on the biggest hosts lent (64 cores; the bench asks for one
 * an online CPU) and then some */
enum { ENC_MAX_INSTANCES = 256 };

static int cmd_encode(int argc, char **argv)
{
    if (argc < 7)
        return fprintf(stderr, "usage: encode FILE W H FRAMES INSTANCES [ENCODER [PRESET "
                       "[THREADS]]]\n"), 2;
    int w = atoi(argv[3]), h = atoi(argv[4]), frames = atoi(argv[5]), n = atoi(argv[6]);
    const char *encoder = argc > 7 ? argv[7] : "libx264", *preset = argc > 8 ? argv[8] : "ultrafast";
    if (n < 1 || n > ENC_MAX_INSTANCES)
        return fprintf(stderr, "encode: %d instances: 1 to %d\n", n, ENC_MAX_INSTANCES), 2;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 9 ? atoi(argv[9]) : (int)(cores / n > 0 ? cores / n : 1);
    struct enc_job j[ENC_MAX_INSTANCES];
    pthread_t t[ENC_MAX_INSTANCES];
    pthread_barrier_init(&enc_ready, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i] = (struct enc_job){ .src = argv[2], .encoder = encoder, .preset = preset, .w = w,
                                 .h = h, .frames = frames / n, .index = i };
        j[i].threads = threads;
        pthread_create(&t[i], NULL, enc_thread, &j[i]);
    }
    int total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (j[i].rc < 0)
            return die("encode", &j[i].e);
        total += j[i].frames;
    }
    double dt = clock_mono_s() - enc_t0;
    printf("RESULT encode_%s_%s_%dx%d_%dinst_%dthr_fps %.1f fps (%d frames in %.2f s; %.1f "
           "fps a core of %ld)\n", encoder, preset, w, h, n, threads, total / dt, total, dt,
           total / dt / (double)cores, cores);
    return 0;
}

/* ---- diff ---- */

/* The next decoded frame of `in` into f (unreferenced first): 1, 0 at the
 * end, <0 on error. */
static int next_frame(struct vio_in *in, AVFrame *f, AVPacket *p, vr_err *e)
{
    int ev;
    av_frame_unref(f);
    while ((ev = vio_in_next(in, f, p, e)) > 0) {
        av_packet_unref(p);
        if (ev == VIO_FRAME)
            return 1;
        av_frame_unref(f);
    }
    return ev;
}

/* Frame by frame, streaming: mean |A - B| of the luma (B sampled at A's
 * size), the worst frame's mean, the largest pixel difference, the frames
 * that differ at all and those whose mean exceeds one level; the first 40
 * frames that differ, each with its mean, on stderr. */
static int cmd_diff(int argc, char **argv)
{
    if (argc != 4)
        return fprintf(stderr, "usage: diff A B\n"), 2;
    vr_err e = { 0 };
    struct vio_in *ia = NULL, *ib = NULL;
    struct vio_in_opts oa = { .path = argv[2] }, ob = { .path = argv[3] };
    if (vio_in_open(&oa, &ia, &e) < 0 || vio_in_open(&ob, &ib, &e) < 0)
        return die("diff", &e);
    AVFrame *a = av_frame_alloc(), *b = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    double sum = 0, worst = 0;
    long long cnt = 0;
    int mx = 0, n = 0, differ = 0, over1 = 0, ra, rb;
    while ((ra = next_frame(ia, a, p, &e)) == 1 && (rb = next_frame(ib, b, p, &e)) == 1) {
        double fs = 0;
        for (int y = 0; y < a->height; y++) {
            const uint8_t *la = a->data[0] + (size_t)y * a->linesize[0];
            const uint8_t *lb = b->data[0] + (size_t)(y * b->height / a->height) * b->linesize[0];
            for (int x = 0; x < a->width; x++) {
                int d = abs(la[x] - lb[x * b->width / a->width]);
                fs += d;
                mx = d > mx ? d : mx;
            }
        }
        sum += fs;
        cnt += (long long)a->width * a->height;
        fs /= (double)a->width * a->height;
        worst = fs > worst ? fs : worst;
        if (fs > 0 && differ < 40) /* where they part: the frames, to stderr */
            fprintf(stderr, "diff: frame %d mean %.4f\n", n, fs);
        differ += fs > 0;
        over1 += fs > 1.0;
        n++;
    }
    int rest = ra == 1 ? 1 : next_frame(ib, b, p, &e);
    av_frame_free(&a);
    av_frame_free(&b);
    av_packet_free(&p);
    vio_in_free(&ia);
    vio_in_free(&ib);
    if (ra < 0 || rest < 0)
        return die("diff", &e);
    if (rest != 0 || n == 0)
        return fprintf(stderr, "diff: the files have different frame counts (%d compared)\n", n), 1;
    printf("RESULT diff_mean_abs %.4f (max %d; worst frame mean %.4f; %d of %d frames differ, "
           "%d by more than 1/255 on average)\n", sum / cnt, mx, worst, differ, n, over1);
    return 0;
}

int main(int argc, char **argv)
{
    av_log_set_level(AV_LOG_ERROR);
    if (argc > 1 && !strcmp(argv[1], "gen"))
        return cmd_gen(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "decode"))
        return cmd_decode(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "encode"))
        return cmd_encode(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "encode-picture"))
        return cmd_encode_picture(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "diff"))
        return cmd_diff(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "repeat"))
        return cmd_repeat(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "quality"))
        return cmd_quality(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "source"))
        return cmd_source(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "preroll"))
        return cmd_preroll(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "stitch"))
        return cmd_stitch(argc, argv);
    fprintf(stderr, "usage: vrbench-video gen|decode|encode|encode-picture|repeat|diff|quality|source|preroll|stitch ... (see the file's "
            "header)\n");
    return 2;
}

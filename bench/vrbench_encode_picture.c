/*
 * vrbench_encode_picture.c - `vrbench-video encode-picture`: the host's
 * ceiling for outputs that re-encode the whole picture (alpha-packed,
 * greenscreen) on the CPU, and what the encoder's settings cost in size and
 * quality.
 *
 *   vrbench-video encode-picture FILE FRAMES INSTANCES [ENCODER [PRESET [THREADS [CRF]]]]
 *
 * The first frames of FILE (decoded on the CPU, kept in memory) are encoded
 * FRAMES times in all, by INSTANCES encoders in parallel with THREADS threads
 * each (default: the cores shared out), with the pipeline's own encoder
 * settings for a picture (vio_out, CRF, an IDR every source second). Prints
 * the encode fps, then instance 0's output decoded again against the frames
 * it was given: PSNR of the luma and the bitrate at FILE's frame rate.
 */
#include "clock.h"
#include "config.h"
#include "vio_video.h"

#include <libswscale/swscale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NPRE = 16, MAX_INSTANCES = 64 };

struct pic_job {
    const char *src, *encoder, *preset;
    AVFrame *const *frames; /* NPRE source frames, shared read-only */
    int count, index, threads, crf, key_every;
    char out[96];
    vr_err e;
    int rc;
};

static pthread_barrier_t pic_ready;
static double pic_t0;

static void *pic_thread(void *arg)
{
    struct pic_job *j = arg;
    struct vio_in *in = NULL;
    struct vio_out *o = NULL;
    AVFrame *f = av_frame_alloc();
    struct vio_in_opts io = { .path = j->src };
    int64_t step = 1; /* a frame's duration in the stream's time base */
    j->rc = vio_in_open(&io, &in, &j->e);
    if (j->rc == 0) {
        const struct vio_info *inf = vio_in_info(in);
        step = av_rescale_q(1, av_inv_q((AVRational){ j->key_every, 1 }), inf->time_base);
        struct vr_config cfg;
        config_defaults(&cfg);
        snprintf(cfg.encoder, sizeof cfg.encoder, "%s", j->encoder);
        snprintf(cfg.preset, sizeof cfg.preset, "%s", j->preset);
        cfg.crf = j->crf;
        struct vio_out_opts oo = { .path = j->out, .format_name = j->out, .in = in,
                                   .w = j->frames[0]->width, .h = j->frames[0]->height,
                                   .pix_fmt = AV_PIX_FMT_YUV420P, .cfg = &cfg,
                                   .threads = j->threads };
        j->rc = vio_out_open(&oo, &o, &j->e);
    }
    if (pthread_barrier_wait(&pic_ready) == PTHREAD_BARRIER_SERIAL_THREAD)
        pic_t0 = clock_mono_s();
    for (int i = 0; i < j->count && j->rc == 0; i++) {
        /* a header of our own over the shared pictures: pts and type are ours */
        av_frame_unref(f);
        av_frame_ref(f, j->frames[i % NPRE]);
        f->pts = i * step;
        f->pict_type = i % j->key_every ? AV_PICTURE_TYPE_NONE : AV_PICTURE_TYPE_I;
        j->rc = vio_out_write(o, f, &j->e);
    }
    if (j->rc == 0)
        j->rc = vio_out_finish(o, &j->e);
    av_frame_free(&f);
    vio_out_free(&o);
    vio_in_free(&in);
    return NULL;
}

/* The first NPRE frames of src as yuv420p; 0 or -1. */
static int read_source(const char *src, AVFrame **frames, AVRational *fps, vr_err *e)
{
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = src };
    if (vio_in_open(&io, &in, e) < 0)
        return -1;
    *fps = vio_in_info(in)->frame_rate;
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    struct SwsContext *sws = NULL;
    int n = 0, ev;
    while (n < NPRE && (ev = vio_in_next(in, f, p, e)) > 0) {
        av_packet_unref(p);
        if (ev != VIO_FRAME)
            continue;
        AVFrame *d = frames[n++] = av_frame_alloc();
        d->format = AV_PIX_FMT_YUV420P;
        d->width = f->width & ~1;
        d->height = f->height & ~1;
        av_frame_get_buffer(d, 64);
        sws = sws_getCachedContext(sws, f->width, f->height, f->format, d->width, d->height,
                                   AV_PIX_FMT_YUV420P, SWS_POINT, NULL, NULL, NULL);
        sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, d->data,
                  d->linesize);
        av_frame_unref(f);
    }
    sws_freeContext(sws);
    av_frame_free(&f);
    av_packet_free(&p);
    vio_in_free(&in);
    if (n < NPRE) {
        if (!e->msg[0])
            vr_err_set(e, VR_EINVAL, "%s: fewer than %d frames", src, NPRE);
        return -1;
    }
    return 0;
}

/* PSNR of the luma of `out` (decoded) against the frames it was given. */
static int luma_psnr(const char *out, AVFrame *const *frames, double *psnr, vr_err *e)
{
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = out };
    if (vio_in_open(&io, &in, e) < 0)
        return -1;
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    double sq = 0, px = 0;
    int n = 0, ev;
    while ((ev = vio_in_next(in, f, p, e)) > 0) {
        av_packet_unref(p);
        if (ev != VIO_FRAME)
            continue;
        const AVFrame *s = frames[n++ % NPRE];
        for (int y = 0; y < s->height; y++) {
            const uint8_t *a = s->data[0] + (size_t)y * s->linesize[0];
            const uint8_t *b = f->data[0] + (size_t)y * f->linesize[0];
            for (int x = 0; x < s->width; x++)
                sq += (double)(a[x] - b[x]) * (a[x] - b[x]);
        }
        px += (double)s->width * s->height;
        av_frame_unref(f);
    }
    av_frame_free(&f);
    av_packet_free(&p);
    vio_in_free(&in);
    if (ev < 0 || n == 0)
        return -1;
    *psnr = sq > 0 ? 10 * log10(255.0 * 255.0 * px / sq) : 99;
    return 0;
}

int cmd_encode_picture(int argc, char **argv)
{
    if (argc < 5)
        return fprintf(stderr, "usage: encode-picture FILE FRAMES INSTANCES [ENCODER [PRESET "
                       "[THREADS [CRF]]]]\n"), 2;
    int frames = atoi(argv[3]), n = atoi(argv[4]);
    const char *encoder = argc > 5 ? argv[5] : "libx265", *preset = argc > 6 ? argv[6] : "ultrafast";
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 7 ? atoi(argv[7]) : (int)(cores / n > 0 ? cores / n : 1);
    int crf = argc > 8 ? atoi(argv[8]) : 23;
    if (n < 1 || n > MAX_INSTANCES || frames < n || threads < 1 || crf < 0 || crf > 51)
        return fprintf(stderr, "encode-picture: bad numbers\n"), 2;
    vr_err e = { 0 };
    AVFrame *src[NPRE];
    AVRational fps;
    if (read_source(argv[2], src, &fps, &e) < 0)
        return fprintf(stderr, "encode-picture: %s\n", e.msg), 1;
    int key_every = fps.num > 0 && fps.den > 0 ? (fps.num + fps.den / 2) / fps.den : 30;
    static struct pic_job j[MAX_INSTANCES];
    pthread_t t[MAX_INSTANCES];
    pthread_barrier_init(&pic_ready, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        j[i] = (struct pic_job){ .src = argv[2], .encoder = encoder, .preset = preset,
                                 .frames = src, .count = frames / n, .index = i,
                                 .threads = threads, .crf = crf, .key_every = key_every };
        snprintf(j[i].out, sizeof j[i].out, "/tmp/vrbench-pic-%d-%d.mkv", (int)getpid(), i);
        pthread_create(&t[i], NULL, pic_thread, &j[i]);
    }
    int total = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (j[i].rc < 0 && !failed++)
            fprintf(stderr, "encode-picture: %s\n", j[i].e.msg);
        total += j[i].count;
    }
    double dt = clock_mono_s() - pic_t0;
    int w = src[0]->width, h = src[0]->height;
    double psnr = 0;
    struct stat st;
    int q = !failed && stat(j[0].out, &st) == 0 && luma_psnr(j[0].out, src, &psnr, &e) == 0;
    for (int i = 0; i < n; i++)
        remove(j[i].out);
    for (int i = 0; i < NPRE; i++)
        av_frame_free(&src[i]);
    if (failed)
        return 1;
    printf("RESULT encode_picture_%s_%s_crf%d_%dx%d_%dinst_%dthr_fps %.1f fps (%d frames in "
           "%.2f s, %ld cores)\n", encoder, preset, crf, w, h, n, threads, total / dt, total, dt, cores);
    if (q)
        printf("RESULT picture_quality_%s_%s_crf%d psnr_y %.2f dB, %.1f Mbit/s at %.2f fps\n",
               encoder, preset, crf, psnr, st.st_size * 8.0 / j[0].count * av_q2d(fps) / 1e6,
               av_q2d(fps));
    else
        fprintf(stderr, "encode-picture: instance 0's output could not be measured: %s\n", e.msg);
    return 0;
}

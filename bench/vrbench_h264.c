/*
 * vrbench_h264.c - the matte encoder (kernels/h264, the C twin) against
 * libx264 ultrafast at the same QP, on a matte: size, luma PSNR, CPU time
 * a frame.
 *
 *   vrbench-h264 MATTE QP [FRAMES [GOP [FPS [gpu]]]]
 *
 * MATTE is any video whose luma is a matte (`vr-worker process --output
 * mask`, FFV1 for a lossless one). Its first FRAMES frames (default 30) are
 * held in memory, then coded by each encoder on one thread with an IDR
 * every GOP frames (default 30: a 1 s source GOP at 30 fps) as the
 * pipeline does: x264 with the matte's settings (vio_encode.c: constant
 * QP, no scene cuts, no B-frames). CPU time is the encoding thread's
 * (CLOCK_THREAD_CPUTIME_ID), the frames already in memory; x264's PSNR is
 * from its stream decoded by libavcodec. The bitrate is at FPS (default
 * 60). With `gpu` (a CUDA build on a GPU), the CUDA encoder too: 600
 * frames (the clip's, over and over) from device memory and from host
 * memory, frame by frame (waiting for each frame's bytes) and queued
 * (h264enc_queue: frame n escaped while frame n+1 is coded; its packets
 * checked equal to the frame-by-frame run's), its fps (wall clock) and the
 * process's CPU time a frame; then K such queued encoders at once, a
 * thread and a stream each as the product's worker slots have (K from
 * VR_H264_ENCODERS, default "1 2 4"; vrbench_h264_gpus.c): the frames of
 * all over the wall time, the GPU's fps ("per GPU"). Prints a table and "RESULT name value unit"
 * lines. Run by `make bench-h264` (mk/bench-h264.mk); numbers in
 * docs/PERF.md. VR_H264_SLICES=S in the environment codes S slices a frame
 * (1 .. the MB rows; else the encoder's default, h264enc_slices_default),
 * VR_H264_INTRA_P=1 Intra 16x16 MBs in P frames (h264enc_intra_p_default).
 */
#include "h264enc.h"
#include "vrbench_h264.h"

#ifdef VR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* VR_H264_SLICES: the slices a frame asked for, 0 (the default) when unset. */
static int env_slices(void)
{
    const char *v = getenv("VR_H264_SLICES");
    return v ? atoi(v) : 0;
}

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int die(const char *what)
{
    fprintf(stderr, "vrbench-h264: %s\n", what);
    return 1;
}

/* The first `max` frames' luma of path. 0 or -1. */
static int read_clip(const char *path, int max, struct clip *c)
{
    AVFormatContext *fc = NULL;
    if (avformat_open_input(&fc, path, NULL, NULL) < 0 || avformat_find_stream_info(fc, NULL) < 0)
        return -1;
    int vi = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (vi < 0)
        return -1;
    const AVCodec *dc = avcodec_find_decoder(fc->streams[vi]->codecpar->codec_id);
    AVCodecContext *d = avcodec_alloc_context3(dc);
    avcodec_parameters_to_context(d, fc->streams[vi]->codecpar);
    if (avcodec_open2(d, dc, NULL) < 0)
        return -1;
    c->w = d->width;
    c->h = d->height;
    c->n = 0;
    c->y = calloc((size_t)max, sizeof *c->y);
    AVPacket *p = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    int eof = 0;
    while (c->n < max && !eof) {
        if (av_read_frame(fc, p) < 0) {
            eof = 1;
            avcodec_send_packet(d, NULL);
        } else if (p->stream_index == vi) {
            avcodec_send_packet(d, p);
        }
        av_packet_unref(p);
        while (c->n < max && avcodec_receive_frame(d, f) == 0) {
            uint8_t *y = malloc((size_t)c->w * c->h);
            for (int r = 0; r < c->h; r++)
                memcpy(y + (size_t)r * c->w, f->data[0] + (size_t)r * f->linesize[0], (size_t)c->w);
            c->y[c->n++] = y;
            av_frame_unref(f);
        }
    }
    av_frame_free(&f);
    av_packet_free(&p);
    avcodec_free_context(&d);
    avformat_close_input(&fc);
    return c->n > 0 ? 0 : -1;
}

static double psnr_of(double sse, double pixels)
{
    return sse > 0 ? 10 * log10(255.0 * 255.0 * pixels / sse) : 99;
}

static double sse_plane(const uint8_t *a, int als, const uint8_t *b, int bls, int w, int h)
{
    double s = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double d = (double)a[(size_t)y * als + x] - b[(size_t)y * bls + x];
            s += d * d;
        }
    return s;
}

static double proc_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

struct row {
    const char *name;
    long long bytes;
    double psnr, cpu_ms;
};

static int run_ours(const struct clip *c, int qp, int gop, double fps, struct row *r)
{
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = c->w, .h = c->h, .qp = qp, .fps_num = (int)fps, .fps_den = 1,
                              .full_range = 1, .slices = env_slices() };
    if (h264enc_new(&o, &e, &err) < 0)
        return die(err.msg);
    int hl;
    h264enc_headers(e, &hl);
    r->bytes = hl;
    double cpu = 0, sse = 0;
    for (int i = 0; i < c->n; i++) {
        const uint8_t *p;
        int size, key, rls;
        double t0 = thread_cpu_s();
        if (h264enc_frame(e, c->y[i], c->w, i % gop == 0, &p, &size, &key, &err) < 0)
            return die(err.msg);
        cpu += thread_cpu_s() - t0;
        r->bytes += size;
        const uint8_t *rec = h264enc_recon(e, &rls);
        sse += sse_plane(c->y[i], c->w, rec, rls, c->w, c->h);
    }
    r->name = "vr h264 (C twin, 1 thread)";
    r->psnr = psnr_of(sse, (double)c->n * c->w * c->h);
    r->cpu_ms = 1000 * cpu / c->n;
    h264enc_free(&e);
    return 0;
}

/* x264 packets decoded as they come, for the PSNR (not timed) */
static double decode_sse(AVCodecContext *d, const AVPacket *p, const struct clip *c, int *k)
{
    double s = 0;
    AVFrame *f = av_frame_alloc();
    avcodec_send_packet(d, p);
    while (avcodec_receive_frame(d, f) == 0) {
        if (*k < c->n)
            s += sse_plane(c->y[*k], c->w, f->data[0], f->linesize[0], c->w, c->h);
        (*k)++;
        av_frame_unref(f);
    }
    av_frame_free(&f);
    return s;
}

static int run_x264(const struct clip *c, int qp, int gop, double fps, struct row *r)
{
    const AVCodec *ec = avcodec_find_encoder_by_name("libx264");
    const AVCodec *dc = avcodec_find_decoder(AV_CODEC_ID_H264);
    if (!ec || !dc)
        return die("libx264 or the h264 decoder is not in this FFmpeg build");
    AVCodecContext *e = avcodec_alloc_context3(ec), *d = avcodec_alloc_context3(dc);
    e->width = c->w;
    e->height = c->h;
    e->pix_fmt = AV_PIX_FMT_YUVJ420P;
    e->time_base = (AVRational){ 1, (int)fps };
    e->max_b_frames = 0;
    e->gop_size = 250;
    e->thread_count = 1;
    AVDictionary *o = NULL;
    char v[64];
    av_dict_set(&o, "preset", "ultrafast", 0);
    snprintf(v, sizeof v, "%d", qp);
    av_dict_set(&o, "qp", v, 0);
    av_dict_set(&o, "forced-idr", "1", 0);
    av_dict_set(&o, "x264-params", "scenecut=0", 0);
    if (avcodec_open2(e, ec, &o) < 0 || avcodec_open2(d, dc, NULL) < 0)
        return die("cannot open libx264");
    av_dict_free(&o);
    AVFrame *f = av_frame_alloc();
    f->format = e->pix_fmt;
    f->width = c->w;
    f->height = c->h;
    av_frame_get_buffer(f, 64);
    for (int pl = 1; pl < 3; pl++)
        for (int y = 0; y < c->h / 2; y++)
            memset(f->data[pl] + (size_t)y * f->linesize[pl], 128, (size_t)c->w / 2);
    AVPacket *p = av_packet_alloc();
    double cpu = 0, sse = 0;
    int k = 0;
    r->bytes = 0;
    for (int i = 0; i <= c->n; i++) {
        double t0 = thread_cpu_s();
        if (i < c->n) {
            av_frame_make_writable(f);
            for (int y = 0; y < c->h; y++)
                memcpy(f->data[0] + (size_t)y * f->linesize[0], c->y[i] + (size_t)y * c->w, (size_t)c->w);
            f->pts = i;
            f->pict_type = i % gop == 0 ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
            avcodec_send_frame(e, f);
        } else {
            avcodec_send_frame(e, NULL);
        }
        int rc;
        while ((rc = avcodec_receive_packet(e, p)) == 0) {
            cpu += thread_cpu_s() - t0;
            r->bytes += p->size;
            sse += decode_sse(d, p, c, &k);
            av_packet_unref(p);
            t0 = thread_cpu_s();
        }
        cpu += thread_cpu_s() - t0;
    }
    sse += decode_sse(d, NULL, c, &k);
    r->name = "libx264 ultrafast (1 thread)";
    r->psnr = psnr_of(sse, (double)c->n * c->w * c->h);
    r->cpu_ms = 1000 * cpu / c->n;
    av_packet_free(&p);
    av_frame_free(&f);
    avcodec_free_context(&e);
    avcodec_free_context(&d);
    return 0;
}

/* The CUDA encoder over `total` frames (the clip's in turn), from device
 * memory (dev) or host memory, frame by frame (h264enc_frame*) or queued
 * (async: h264enc_queue, the CPU escaping frame n while the GPU codes
 * n+1): fps and CPU ms a frame. *sum gets the packets' hash. */
static int run_gpu(const struct clip *c, int qp, int gop, double fps, int dev, int async,
                   int total, uint64_t *sum)
{
#ifdef VR_HAVE_CUDA
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = c->w, .h = c->h, .qp = qp, .fps_num = (int)fps, .fps_den = 1,
                              .full_range = 1, .use_gpu = 1, .gpu = 0, .slices = env_slices() };
    if (h264enc_new(&o, &e, &err) < 0)
        return die(err.msg);
    uint8_t **d = calloc((size_t)c->n, sizeof *d);
    for (int i = 0; i < c->n; i++) {
        if (cudaMalloc((void **)&d[i], (size_t)c->w * c->h) != cudaSuccess ||
            cudaMemcpy(d[i], c->y[i], (size_t)c->w * c->h, cudaMemcpyHostToDevice) != cudaSuccess)
            return die("cannot upload the clip");
    }
    long long bytes = 0, got = 0;
    const uint8_t *p;
    int size, key;
    int64_t tag;
    uint64_t h = 0xcbf29ce484222325ull;
    /* warm-up: first launches, the first IDR */
    for (int i = 0; i < 4; i++)
        if (h264enc_frame_dev(e, d[i % c->n], c->w, i == 0, &p, &size, &key, &err) < 0)
            return die(err.msg);
    double w0 = h264b_wall_s(), c0 = proc_cpu_s();
    for (int i = 0; i <= total; i++) {
        int k = i % c->n, idr = i % gop == 0, rc;
        if (i == total && !async)
            break;
        if (i == total)
            rc = h264enc_flush(e, &p, &size, &key, &tag, &err);
        else if (async)
            rc = h264enc_queue(e, dev ? d[k] : c->y[k], c->w, dev, idr, i, &p, &size, &key, &tag,
                               &err);
        else
            rc = dev ? h264enc_frame_dev(e, d[k], c->w, idr, &p, &size, &key, &err)
                     : h264enc_frame(e, c->y[k], c->w, idr, &p, &size, &key, &err);
        if (rc < 0)
            return die(err.msg);
        if (size && async && tag != got)
            return die("async: a packet out of order");
        got += size > 0;
        bytes += size;
        h = h264b_hash(h, p, size);
    }
    double wall = h264b_wall_s() - w0, cpu = proc_cpu_s() - c0;
    if (got != total)
        return die("a packet lost");
    char name[64];
    snprintf(name, sizeof name, "vr h264 CUDA, %s%s", dev ? "matte on GPU" : "matte from host",
             async ? ", async" : "");
    printf("%-36s %12lld %10.2f %9s %12.3f   %.0f fps (%d frames, IDR every %d)\n", name, bytes,
           bytes * 8.0 * fps / total / 1e6, "=C twin", 1000 * cpu / total, total / wall, total, gop);
    printf("RESULT h264_cuda_%s%s_fps %.0f fps\n", dev ? "dev" : "host", async ? "_async" : "",
           total / wall);
    printf("RESULT h264_cuda_%s%s_cpu %.3f ms\n", dev ? "dev" : "host", async ? "_async" : "",
           1000 * cpu / total);
    *sum = h;
    for (int i = 0; i < c->n; i++)
        cudaFree(d[i]);
    free(d);
    h264enc_free(&e);
    return 0;
#else
    (void)c, (void)qp, (void)gop, (void)fps, (void)dev, (void)async, (void)total, (void)sum;
    return die("gpu: this build has no CUDA");
#endif
}

/* The CUDA rows: frame by frame and queued, from device and host memory;
 * the queued runs' packets must be the frame-by-frame run's. Then the
 * per-GPU rows: K encoders at once (vrbench_h264_gpus.c), each's packets
 * the same again. */
static int run_gpus(const struct clip *c, int qp, int gop, double fps)
{
    uint64_t h[4];
    if (run_gpu(c, qp, gop, fps, 1, 0, 600, &h[0]) || run_gpu(c, qp, gop, fps, 1, 1, 600, &h[1]) ||
        run_gpu(c, qp, gop, fps, 0, 0, 600, &h[2]) || run_gpu(c, qp, gop, fps, 0, 1, 600, &h[3]))
        return 1;
    if (h[1] != h[0] || h[2] != h[0] || h[3] != h[0])
        return die("the CUDA runs' packets differ");
    printf("RESULT h264_cuda_async_same_bytes 1 bool\n");
    return h264b_per_gpu(c, qp, gop, fps, env_slices(), 600, h[0]);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return die("usage: vrbench-h264 MATTE QP [FRAMES [GOP [FPS]]]");
    int qp = atoi(argv[2]), frames = argc > 3 ? atoi(argv[3]) : 30;
    int gop = argc > 4 ? atoi(argv[4]) : 30;
    double fps = argc > 5 ? atof(argv[5]) : 60;
    if (frames < 1 || frames > 1000 || gop < 1 || fps <= 0)
        return die("FRAMES 1..1000, GOP >= 1, FPS > 0");
    struct clip c;
    if (read_clip(argv[1], frames, &c) < 0)
        return die("cannot read the matte");
    struct row r[2];
    if (run_ours(&c, qp, gop, fps, &r[0]) || run_x264(&c, qp, gop, fps, &r[1]))
        return 1;
    printf("vrbench-h264: %s, %dx%d, %d frames, QP %d, IDR every %d, bitrate at %.0f fps, "
           "%d slices, intra in P %s\n", argv[1], c.w, c.h, c.n, qp, gop, fps,
           env_slices() ? env_slices() : h264enc_slices_default(c.h, h264enc_intra_p_default()),
           h264enc_intra_p_default() ? "on" : "off");
    printf("%-30s %12s %10s %9s %12s\n", "encoder", "bytes", "Mbit/s", "PSNR dB", "CPU ms/frame");
    for (int i = 0; i < 2; i++)
        printf("%-30s %12lld %10.2f %9.2f %12.2f\n", r[i].name, r[i].bytes,
               r[i].bytes * 8.0 * fps / c.n / 1e6, r[i].psnr, r[i].cpu_ms);
    if (argc > 6 && !strcmp(argv[6], "gpu") &&
        run_gpus(&c, qp, gop, fps))
        return 1;
    printf("RESULT h264_vs_x264_bytes %.3f x\n", (double)r[0].bytes / r[1].bytes);
    printf("RESULT h264_vs_x264_psnr %.2f dB\n", r[0].psnr - r[1].psnr);
    printf("RESULT h264_vs_x264_cpu %.3f x\n", r[0].cpu_ms / r[1].cpu_ms);
    for (int i = 0; i < c.n; i++)
        free(c.y[i]);
    free(c.y);
    return 0;
}

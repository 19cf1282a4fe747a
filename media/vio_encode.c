/*
 * vio_encode.c - vio_out: the output encoder (picked automatically or named
 * in the config) and the muxer, which also takes the input's other streams
 * as copied packets (see vio_video.h).
 *
 * The "auto" encoder rule:
 *   1. frames wider or taller than 4096 use HEVC, smaller ones H.264 (H.264
 *      encoders in NVENC and most players' decoders stop at 4096), except
 *      a colour output (alpha, greenscreen) of an HEVC source, which stays
 *      HEVC: re-coded as H.264 at the same settings it took 8.3 times the
 *      bytes (x264's ultrafast is Constrained Baseline);
 *   2. on GPU runs NVENC (h264_nvenc / hevc_nvenc) is tried first; it fails to
 *      open on GPUs without an encoder (H100, H200) and we fall through;
 *   3. libx264 / libx265 with the config's preset and crf, threads = cores.
 * The matte (--output mask) has its own encoder, "vrh264" (kernels/h264:
 * H.264 Constrained Baseline, Intra 16x16 IDRs, P frames of skips and
 * P16x16 at searched integer vectors); vio_matte_encoder says when "auto"
 * picks it.
 * GOPs and rate control follow rate_control's rule below: the fleet's
 * chunks and one `process` code every frame alike.
 */
#include "vio_video.h"

#include "remux_ts.h"

#include "h264enc.h"

#include "log.h"
#include "vio_streams.h"
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <libavutil/opt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct vio_out {
    char path[1024];
    AVFormatContext *oc;
    AVCodecContext *enc;       /* libavcodec's encoder, or NULL with h264 */
    struct h264enc *h264;      /* the matte encoder (VIO_MATTE_H264), or NULL */
    AVRational enc_tb;         /* the time base frames come in (the input video's) */
    long long since_idr;       /* h264: frames since its last IDR */
    AVStream *vst;
    AVPacket *pkt;
    int *map;              /* input stream index -> output index or -1 */
    int nmap;
    AVRational *in_tb;     /* input streams' time bases, by input index */
    pthread_mutex_t lock;  /* muxer access: encode thread vs. copy thread */
    int lock_ok;
    int header_written;
    int64_t bytes;
    int64_t frames;
    struct out_times *times;   /* [oc->nb_streams] when recording (vio_out_ts), else NULL */
    int32_t matrix[9];         /* the input video's display matrix, for vio_out_ts */
    int matrix_ok;
};

/* What one output stream was given, in its input's time base. Stream 0
 * (frames) is touched by the encoding thread only, the others by the
 * copying thread only, so neither needs the lock. */
struct out_times {
    AVRational tb;
    int64_t *pts, *dts, *dur;
    long long n, cap;
};

/* ---- encoder ---- */

static int ncores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 1024 ? (int)n : 1;
}

/* x264/x265 preset names -> NVENC p1 (fastest) .. p7 */
static const char *nvenc_preset(const char *p)
{
    static const char *const x[] = { "ultrafast", "superfast", "veryfast", "faster", "fast",
                                     "medium", "slow" };
    static const char *const nv[] = { "p1", "p1", "p2", "p3", "p4", "p5", "p6" };
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (!strcmp(p, x[i]))
            return nv[i];
    return "p7";
}

/* Frames between IDRs when the source gives none sooner (x264's default). */
enum { MAX_GOP = 250 };

/* Each frame's coding depends on its GOP alone, whatever the thread count
 * and wherever the job was cut (docs/notes/temporal.md, "One answer"):
 * no scene-cut keyframes (the source's keyframes are the cuts), and x264's
 * frame threads limited to a fixed motion range instead of one derived
 * from the thread count. A matte is coded at a constant QP: CRF carries a
 * complexity history across keyframes (an I frame's QP comes from the P
 * frames before it), so a chunk's first GOP would differ from the same GOP
 * inside one `process`. QP = crf + MATTE_QP_ABOVE_CRF gives an 8K matte the
 * size CRF gave it (0.2 dB less PSNR) for about a quarter less encoding
 * time (no lookahead analysis): docs/PERF.md, "The matte's encoder". */
enum { MATTE_QP_ABOVE_CRF = 2, THREAD_MV_RANGE = 256 };

/* The matte's constant QP, whichever encoder codes it. */
static int matte_qp(const struct vr_config *cfg)
{
    int qp = cfg->crf + MATTE_QP_ABOVE_CRF;
    return qp > 51 ? 51 : qp < 0 ? 0 : qp;
}

static void rate_control(AVDictionary **d, const char *name, const struct vio_out_opts *op,
                         int threads)
{
    char v[128];
    int qp = matte_qp(op->cfg);
    const char *rc = op->matte ? "qp" : "crf";
    int q = op->matte ? qp : op->cfg->crf;
    if (!strcmp(name, "libx265")) {
        snprintf(v, sizeof v, "pools=%d:log-level=error:scenecut=0:%s=%d", threads, rc, q);
        av_dict_set(d, "x265-params", v, 0);
        return;
    }
    snprintf(v, sizeof v, "%d", q);
    av_dict_set(d, rc, v, 0);
    snprintf(v, sizeof v, "scenecut=0:mvrange-thread=%d", THREAD_MV_RANGE);
    av_dict_set(d, "x264-params", v, 0);
}

static int try_encoder(struct vio_out *o, const char *name, const struct vio_out_opts *op,
                       const struct vio_info *inf, vr_err *err)
{
    char eb[128];
    const AVCodec *c = avcodec_find_encoder_by_name(name);
    if (!c)
        return vr_err_set(err, VR_ENOTSUP, "encoder %s is not in this FFmpeg build", name);
    AVCodecContext *e = avcodec_alloc_context3(c);
    if (!e)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    e->width = op->w;
    e->height = op->h;
    e->pix_fmt = op->pix_fmt;
    e->time_base = inf->time_base;
    e->framerate = inf->frame_rate;
    e->sample_aspect_ratio = (AVRational){ 1, 1 };
    /* No B-frames: packets come out in presentation order, so a chunk's
     * k-th packet is its k-th frame and the stitch gives it the source's
     * k-th timestamp (reordered chunks scrambled the quality profile's
     * timestamps at every cut). A matte loses next to nothing by it. */
    e->max_b_frames = 0;
    e->color_range = op->full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    e->colorspace = AVCOL_SPC_BT709;
    e->color_primaries = AVCOL_PRI_BT709;
    e->color_trc = AVCOL_TRC_BT709;
    if (o->oc->oformat->flags & AVFMT_GLOBALHEADER)
        e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int threads = op->threads > 0 ? op->threads : ncores();
    AVDictionary *d = NULL;
    char v[64];
    const struct vr_config *cfg = op->cfg;
    int gop_coded = strstr(name, "nvenc") || !strcmp(name, "libx264") || !strcmp(name, "libx265");
    if (gop_coded) {
        /* GOPs follow the source: an IDR where the caller marks the
         * source's keyframes (every chunk starts on one), else one every
         * MAX_GOP frames counted from the last. */
        e->gop_size = MAX_GOP;
        av_dict_set(&d, "forced-idr", "1", 0);
    }
    if (strstr(name, "nvenc")) {
        av_dict_set(&d, "preset", nvenc_preset(cfg->preset), 0);
        av_dict_set(&d, "rc", "constqp", 0);
        snprintf(v, sizeof v, "%d", cfg->crf);
        av_dict_set(&d, "qp", v, 0);
        av_dict_set(&d, "gpu", "any", 0);
    } else if (!strcmp(name, "libx264") || !strcmp(name, "libx265")) {
        av_dict_set(&d, "preset", cfg->preset, 0);
        rate_control(&d, name, op, threads);
        if (strcmp(name, "libx265"))
            e->thread_count = threads;
    } else {
        e->thread_count = threads;
        /* FFV1 carries its coder's state from frame to frame within a GOP
         * counted from the encoder's open: intra-only, a frame's bytes are
         * the same whichever chunk codes it (a fleet's output is then
         * `process`'s byte for byte) */
        if (!strcmp(name, "ffv1"))
            e->gop_size = 1;
    }
    int r = avcodec_open2(e, c, &d);
    av_dict_free(&d);
    if (r < 0) {
        avcodec_free_context(&e);
        return vr_err_set(err, VR_ECODEC, "cannot open encoder %s at %dx%d: %s", name, op->w, op->h,
                          vio_av_err(r, eb, sizeof eb));
    }
    o->enc = e;
    return 0;
}

/* The matte encoder of kernels/h264 (h264enc.h): its SPS/PPS as the
 * stream's extradata (Annex B, as libx264 gives them: the muxers convert),
 * the stream's parameters set here since no AVCodecContext exists. */
static int open_matte_h264(struct vio_out *o, const struct vio_out_opts *op,
                           const struct vio_info *inf, vr_err *err)
{
    if (!op->matte)
        return vr_err_set(err, VR_EINVAL, "encoder %s codes mattes only (--output mask): it "
                          "writes no colour", VIO_MATTE_H264);
    AVRational fr = inf->frame_rate;
    struct h264enc_opts ho = { .w = op->w, .h = op->h, .qp = matte_qp(op->cfg),
                               .fps_num = fr.num > 0 && fr.den > 0 ? fr.num : 0,
                               .fps_den = fr.num > 0 && fr.den > 0 ? fr.den : 0,
                               .full_range = op->full_range,
                               .intra_p = op->cfg->matte_intra_p ? 1 : -1,
                               .use_gpu = op->gpu_run && h264enc_cuda_built(), .gpu = op->gpu };
    int rc = h264enc_new(&ho, &o->h264, err);
    if (rc < 0)
        return rc;
    o->enc_tb = inf->time_base;
    return 0;
}

static int matte_h264_stream(struct vio_out *o, const struct vio_out_opts *op, vr_err *err)
{
    AVCodecParameters *cp = o->vst->codecpar;
    int n;
    const uint8_t *hdr = h264enc_headers(o->h264, &n);
    cp->extradata = av_mallocz((size_t)n + AV_INPUT_BUFFER_PADDING_SIZE);
    if (!cp->extradata)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    memcpy(cp->extradata, hdr, (size_t)n);
    cp->extradata_size = n;
    cp->codec_type = AVMEDIA_TYPE_VIDEO;
    cp->codec_id = AV_CODEC_ID_H264;
    cp->format = AV_PIX_FMT_YUV420P;
    cp->width = op->w;
    cp->height = op->h;
    cp->profile = FF_PROFILE_H264_CONSTRAINED_BASELINE;
    cp->level = hdr[7]; /* the SPS's level_idc, after its start code, header and 2 bytes */
    cp->sample_aspect_ratio = (AVRational){ 1, 1 };
    cp->color_range = op->full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    cp->color_space = AVCOL_SPC_BT709;
    cp->color_primaries = AVCOL_PRI_BT709;
    cp->color_trc = AVCOL_TRC_BT709;
    cp->video_delay = 0;
    return 0;
}

const char *vio_matte_encoder(int gpu_run, int has_nvenc, int w, int h, const char **why)
{
    if (w > 4096 || h > 4096) {
#define BIG_WHY "a matte wider or taller than 4096: HEVC, as for any output that large"
        *why = gpu_run && !has_nvenc
                   ? BIG_WHY ", by the CPU (no NVENC on this GPU): about 2 fps at 8192x4096 on "
                             "16 cores; --encoder " VIO_MATTE_H264 " codes it on the GPU, as "
                             "H.264 level 6"
                   : BIG_WHY;
#undef BIG_WHY
        return gpu_run && has_nvenc ? "hevc_nvenc" : "libx265";
    }
    if (gpu_run && has_nvenc) {
        *why = "this GPU has NVENC: it encodes without the CPU";
        return "h264_nvenc";
    }
    if (gpu_run && h264enc_cuda_built()) {
        *why = "no NVENC on this GPU: the matte encoder of kernels/h264 runs on it, the CPU "
               "only muxes";
        return VIO_MATTE_H264;
    }
    if (gpu_run) {
        *why = "no NVENC on this GPU, and this build has no CUDA matte encoder: " VIO_MATTE_CPU_WHY;
        return VIO_MATTE_CPU;
    }
    *why = "a CPU run: " VIO_MATTE_CPU_WHY;
    return VIO_MATTE_CPU;
}

int vio_encoder_name_ok(const char *name)
{
    return !strcmp(name, "auto") || !strcmp(name, VIO_MATTE_H264) ||
           avcodec_find_encoder_by_name(name) != NULL;
}

int vio_encoder_probe(const char *name, vr_err *err)
{
    char eb[128];
    const AVCodec *c = avcodec_find_encoder_by_name(name);
    if (!c)
        return vr_err_set(err, VR_ENOTSUP, "encoder %s is not in this FFmpeg build", name);
    AVCodecContext *e = avcodec_alloc_context3(c);
    if (!e)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    e->width = 256;
    e->height = 256;
    e->pix_fmt = AV_PIX_FMT_YUV420P;
    e->time_base = (AVRational){ 1, 25 };
    int r = avcodec_open2(e, c, NULL);
    avcodec_free_context(&e);
    if (r < 0)
        return vr_err_set(err, VR_ECODEC, "cannot open encoder %s: %s", name,
                          vio_av_err(r, eb, sizeof eb));
    return 0;
}

static int open_encoder(struct vio_out *o, const struct vio_out_opts *op,
                        const struct vio_info *inf, vr_err *err)
{
    const char *want = op->cfg->encoder;
    if (!strcmp(want, VIO_MATTE_H264))
        return open_matte_h264(o, op, inf, err);
    if (strcmp(want, "auto") != 0)
        return try_encoder(o, want, op, inf, err);
    int big = op->w > 4096 || op->h > 4096;
    int hevc = big || (!op->matte && inf->codec && !strcmp(inf->codec, "hevc"));
    /* A worker opens an encoder per chunk: an NVENC that failed for this
     * codec and size is not probed again (GPUs without NVENC: H100, H200). */
    static struct { int w, h; } nvenc_failed[2];
    static pthread_mutex_t nvenc_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&nvenc_mu);
    int known_bad = nvenc_failed[hevc].w == op->w && nvenc_failed[hevc].h == op->h;
    pthread_mutex_unlock(&nvenc_mu);
    if (op->try_nvenc && !known_bad) {
        vr_err e2 = { 0 };
        if (try_encoder(o, hevc ? "hevc_nvenc" : "h264_nvenc", op, inf, &e2) == 0)
            return 0;
        log_info("NVENC unavailable (%s); using the CPU encoder", e2.msg);
        pthread_mutex_lock(&nvenc_mu);
        nvenc_failed[hevc].w = op->w;
        nvenc_failed[hevc].h = op->h;
        pthread_mutex_unlock(&nvenc_mu);
    }
    if (op->matte) {
        const char *why;
        const char *name = vio_matte_encoder(op->gpu_run, 0, op->w, op->h, &why);
        if (!strcmp(name, VIO_MATTE_H264))
            return open_matte_h264(o, op, inf, err);
        static int said_big; /* once a process: a fleet worker opens one a chunk */
        if (op->gpu_run && big && !__atomic_exchange_n(&said_big, 1, __ATOMIC_RELAXED))
            log_warn("matte %dx%d, encoder %s: %s", op->w, op->h, name, why); /* o->path: a temp fd */
        return try_encoder(o, name, op, inf, err);
    }
    return try_encoder(o, hevc ? "libx265" : "libx264", op, inf, err);
}

/* ---- streams ---- */

/* Every stream vio_streams_plan keeps, copied as it is; the rest dropped
 * with one line saying so. */
static int add_copied_streams(struct vio_out *o, const AVFormatContext *ic, int video_index,
                              const char *name, vr_err *err)
{
    int *copy = av_malloc_array(ic->nb_streams ? ic->nb_streams : 1, sizeof *copy);
    if (!copy)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    vio_streams_plan(ic, video_index, o->oc->oformat, name, copy, NULL, 0);
    int rc = 0;
    for (unsigned i = 0; rc == 0 && i < ic->nb_streams && (int)i < o->nmap; i++) {
        const AVStream *is = ic->streams[i];
        o->in_tb[i] = is->time_base;
        if (!copy[i])
            continue;
        AVStream *os = avformat_new_stream(o->oc, NULL);
        if (!os || avcodec_parameters_copy(os->codecpar, is->codecpar) < 0) {
            rc = vr_err_set(err, VR_ENOMEM, "out of memory");
            break;
        }
        os->codecpar->codec_tag = 0;
        os->time_base = is->time_base;
        os->disposition = is->disposition;
        av_dict_copy(&os->metadata, is->metadata, 0);
        o->map[i] = os->index;
    }
    av_free(copy);
    return rc;
}

/* ---- the times given (vio_out_ts) ---- */

static int times_open(struct vio_out *o, AVRational vtb, const AVStream *ivs)
{
    size_t sz = 0;
    const uint8_t *m = av_stream_get_side_data(ivs, AV_PKT_DATA_DISPLAYMATRIX, &sz);
    if (m && sz >= sizeof o->matrix) {
        memcpy(o->matrix, m, sizeof o->matrix);
        o->matrix_ok = 1;
    }
    o->times = av_calloc(o->oc->nb_streams, sizeof *o->times);
    if (!o->times)
        return VR_ENOMEM;
    o->times[0].tb = vtb;
    for (int i = 0; i < o->nmap; i++)
        if (o->map[i] > 0)
            o->times[o->map[i]].tb = o->in_tb[i];
    return 0;
}

static void times_add(struct out_times *t, int64_t pts, int64_t dts, int64_t dur)
{
    if (t->n == t->cap) {
        long long cap = t->cap ? 2 * t->cap : 1024;
        int64_t *p = av_realloc_array(t->pts, (size_t)cap, sizeof *p);
        int64_t *d = p ? av_realloc_array(t->dts, (size_t)cap, sizeof *d) : NULL;
        int64_t *u = d ? av_realloc_array(t->dur, (size_t)cap, sizeof *u) : NULL;
        if (p)
            t->pts = p;
        if (d)
            t->dts = d;
        if (!u) {
            t->cap = -1; /* out of memory: vio_out_ts says so */
            return;
        }
        t->dur = u;
        t->cap = cap;
    }
    if (t->cap < 0)
        return;
    t->pts[t->n] = pts;
    t->dts[t->n] = dts;
    t->dur[t->n++] = dur;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int vio_out_ts(const struct vio_out *o, struct remux_ts *t, vr_err *err)
{
    memset(t, 0, sizeof *t);
    if (!o->times)
        return vr_err_set(err, VR_EINVAL, "%s: its times were not recorded", o->path);
    int n = (int)o->oc->nb_streams;
    if (o->matrix_ok) {
        t->has_matrix = 1;
        memcpy(t->matrix, o->matrix, sizeof t->matrix);
    }
    if (!(t->s = calloc((size_t)n, sizeof *t->s)))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    t->nstreams = n;
    for (int k = 0; k < n; k++) {
        const struct out_times *r = &o->times[k];
        struct remux_ts_stream *d = &t->s[k];
        size_t bytes = (size_t)(r->n ? r->n : 1) * sizeof(int64_t);
        d->tb_num = r->tb.num;
        d->tb_den = r->tb.den;
        d->n = r->n;
        if (r->cap < 0 || !(d->pts = malloc(bytes)) ||
            (k && (!(d->dts = malloc(bytes)) || !(d->dur = malloc(bytes))))) {
            remux_ts_release(t);
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        }
        if (!r->n) /* a stream the range owns no packet of */
            continue;
        memcpy(d->pts, r->pts, (size_t)r->n * sizeof(int64_t));
        if (k) {
            memcpy(d->dts, r->dts, (size_t)r->n * sizeof(int64_t));
            memcpy(d->dur, r->dur, (size_t)r->n * sizeof(int64_t));
        } else {
            qsort(d->pts, (size_t)d->n, sizeof *d->pts, cmp_i64);
        }
    }
    return 0;
}

static void times_free(struct vio_out *o)
{
    for (unsigned k = 0; o->times && o->oc && k < o->oc->nb_streams; k++) {
        av_free(o->times[k].pts);
        av_free(o->times[k].dts);
        av_free(o->times[k].dur);
    }
    av_freep(&o->times);
}

/* ---- open ---- */

int vio_out_open(const struct vio_out_opts *op, struct vio_out **out, vr_err *err)
{
    *out = NULL;
    char eb[128];
    int rc, r;
    struct vio_out *o = av_mallocz(sizeof *o);
    if (!o)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    snprintf(o->path, sizeof o->path, "%s", op->path);
    if (pthread_mutex_init(&o->lock, NULL) != 0) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    o->lock_ok = 1;
    o->since_idr = -1;
    const struct vio_info *inf = vio_in_info(op->in);
    const AVFormatContext *ic = vio_in_format(op->in);
    const AVOutputFormat *of = av_guess_format(NULL, op->format_name, NULL);
    if (!of) {
        rc = vr_err_set(err, VR_EINVAL, "%s: unknown container for this file name (use .mkv or .mp4)",
                        op->format_name);
        goto fail;
    }
    if ((r = avformat_alloc_output_context2(&o->oc, of, NULL, op->path)) < 0) {
        rc = vr_err_set(err, VR_ENOMEM, "%s: %s", op->path, vio_av_err(r, eb, sizeof eb));
        goto fail;
    }
    /* Matroska draws its Segment and Track UIDs at random otherwise: two
     * runs of one input (a fleet's stitch and a process, a file and its
     * URL) then differ in 44 header bytes though every frame is equal;
     * and no CRC-32s, as the stitch writes none (vio_streams.h) */
    vio_streams_mux_settings(o->oc);
    o->pkt = av_packet_alloc();
    o->nmap = (int)ic->nb_streams;
    o->map = av_malloc_array(o->nmap ? o->nmap : 1, sizeof *o->map);
    o->in_tb = av_malloc_array(o->nmap ? o->nmap : 1, sizeof *o->in_tb);
    if (!o->pkt || !o->map || !o->in_tb) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < o->nmap; i++)
        o->map[i] = -1;

    if ((rc = open_encoder(o, op, inf, err)) < 0) {
        vr_err_prefix(err, "%s", op->format_name);
        goto fail;
    }
    o->vst = avformat_new_stream(o->oc, NULL);
    if (!o->vst || (o->enc && avcodec_parameters_from_context(o->vst->codecpar, o->enc) < 0)) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    if (o->h264 && (rc = matte_h264_stream(o, op, err)) < 0)
        goto fail;
    if (o->enc)
        o->enc_tb = o->enc->time_base;
    o->vst->time_base = o->enc_tb;
    o->vst->avg_frame_rate = inf->frame_rate;
    const AVStream *ivs = ic->streams[inf->video_index];
    av_dict_copy(&o->vst->metadata, ivs->metadata, 0);
    av_dict_set(&o->vst->metadata, "encoder", NULL, 0);
    o->vst->disposition = ivs->disposition;
    /* stereo, spherical, rotation: a player shows the matte as the source */
    vio_streams_side_data(o->vst, ivs, o->oc->oformat, op->format_name);
    if (op->copy_streams &&
        (rc = add_copied_streams(o, ic, inf->video_index, op->format_name, err)) < 0)
        goto fail;

    if (op->record_ts && times_open(o, inf->time_base, ivs) < 0) {
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    if ((r = avio_open(&o->oc->pb, op->path, AVIO_FLAG_WRITE)) < 0) {
        rc = vr_err_set(err, VR_EIO, "%s: cannot create: %s", op->path, vio_av_err(r, eb, sizeof eb));
        goto fail;
    }
    if ((r = avformat_write_header(o->oc, NULL)) < 0) {
        rc = vr_err_set(err, VR_EIO, "%s: cannot write the header: %s", op->path,
                        vio_av_err(r, eb, sizeof eb));
        goto fail;
    }
    o->header_written = 1;
    *out = o;
    return 0;
fail:
    vio_out_free(&o);
    return rc;
}

const char *vio_out_encoder(const struct vio_out *o)
{
    return o->h264 ? VIO_MATTE_H264 : o->enc->codec->name;
}

/* ---- writing ---- */

/* A libav write error as an error value: a full disk (or quota) in the
 * words every writer uses (storage_errno), anything else as VR_EIO. */
static int vio_out_io_err(const struct vio_out *o, int r, const char *what, vr_err *err)
{
    char eb[128];
    if (r == AVERROR(ENOSPC) || r == AVERROR(EDQUOT))
        return storage_errno(AVUNERROR(r), what, o->path, err);
    return vr_err_set(err, VR_EIO, "%s: %s: %s", o->path, what, vio_av_err(r, eb, sizeof eb));
}

static int mux(struct vio_out *o, AVPacket *p, vr_err *err)
{
    pthread_mutex_lock(&o->lock);
    int64_t sz = p->size;
    int r = av_interleaved_write_frame(o->oc, p);  /* takes the reference */
    if (r >= 0)
        o->bytes += sz;
    pthread_mutex_unlock(&o->lock);
    if (r < 0)
        return vio_out_io_err(o, r, "cannot write", err);
    return 0;
}

static int drain(struct vio_out *o, vr_err *err)
{
    char eb[128];
    for (;;) {
        int r = avcodec_receive_packet(o->enc, o->pkt);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF)
            return 0;
        if (r < 0)
            return vr_err_set(err, VR_ECODEC, "%s: encoder %s failed: %s", o->path,
                              o->enc->codec->name, vio_av_err(r, eb, sizeof eb));
        o->pkt->stream_index = o->vst->index;
        av_packet_rescale_ts(o->pkt, o->enc->time_base, o->vst->time_base);
        int rc = mux(o, o->pkt, err);
        if (rc < 0)
            return rc;
    }
}

/* One access unit of the matte encoder into the file at pts. */
static int mux_h264(struct vio_out *o, const uint8_t *p, int size, int key, int64_t pts,
                    vr_err *err)
{
    if (av_new_packet(o->pkt, size) < 0)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    memcpy(o->pkt->data, p, (size_t)size);
    o->pkt->pts = o->pkt->dts = pts; /* no reordering: decode order is presentation order */
    if (key)
        o->pkt->flags |= AV_PKT_FLAG_KEY;
    o->pkt->stream_index = o->vst->index;
    av_packet_rescale_ts(o->pkt, o->enc_tb, o->vst->time_base);
    return mux(o, o->pkt, err);
}

/* Frames between IDRs when the source gives none sooner, as MAX_GOP does
 * for x264: an IDR where the caller marks the source's keyframes, else one
 * every MAX_GOP frames counted from the last. The luma y (stride ls) is in
 * the encoder's device memory when dev. Queued (h264enc_queue): on the GPU
 * this frame is coded while the one before it is escaped and written here;
 * vio_out_finish writes the last. */
static int write_h264(struct vio_out *o, const uint8_t *y, int ls, int dev, int64_t pts,
                      int src_key, vr_err *err)
{
    const uint8_t *p;
    int size, key;
    int64_t at;
    int idr = src_key || o->since_idr < 0 || o->since_idr >= MAX_GOP - 1;
    int rc = h264enc_queue(o->h264, y, ls, dev, idr, pts, &p, &size, &key, &at, err);
    if (rc < 0)
        return vr_err_prefix(err, "%s: frame %lld", o->path, (long long)o->frames);
    o->since_idr = idr ? 0 : o->since_idr + 1;
    o->frames++;
    if (o->times)
        times_add(&o->times[0], pts, pts, 0);
    return size ? mux_h264(o, p, size, key, at, err) : 0;
}

int vio_out_matte_on_device(const struct vio_out *o) { return o->h264 && h264enc_on_gpu(o->h264); }

int vio_out_write_matte_dev(struct vio_out *o, const uint8_t *y, int ls, int64_t pts, int key,
                            vr_err *err)
{
    if (!vio_out_matte_on_device(o))
        return vr_err_set(err, VR_EINVAL, "%s: encoder %s takes no matte in device memory",
                          o->path, vio_out_encoder(o));
    return write_h264(o, y, ls, 1, pts, key, err);
}

int vio_out_write(struct vio_out *o, const AVFrame *f, vr_err *err)
{
    char eb[128];
    if (o->h264)
        return write_h264(o, f->data[0], f->linesize[0], 0, f->pts,
                          f->pict_type == AV_PICTURE_TYPE_I, err);
    int r = avcodec_send_frame(o->enc, f);
    if (r < 0)
        return vr_err_set(err, VR_ECODEC, "%s: encoder %s refused frame %lld: %s", o->path,
                          o->enc->codec->name, (long long)o->frames, vio_av_err(r, eb, sizeof eb));
    o->frames++;
    if (o->times)
        times_add(&o->times[0], f->pts, f->pts, 0);
    return drain(o, err);
}

int vio_out_copy(struct vio_out *o, AVPacket *pkt, vr_err *err)
{
    int si = pkt->stream_index;
    if (si < 0 || si >= o->nmap || o->map[si] < 0) {
        av_packet_unref(pkt);
        return 0;
    }
    AVStream *os = o->oc->streams[o->map[si]];
    if (o->times)
        times_add(&o->times[os->index], pkt->pts, pkt->dts, pkt->duration);
    av_packet_rescale_ts(pkt, o->in_tb[si], os->time_base);
    pkt->stream_index = os->index;
    pkt->pos = -1;
    return mux(o, pkt, err);
}

int vio_out_finish(struct vio_out *o, vr_err *err)
{
    char eb[128];
    int r;
    if (o->h264) { /* the matte encoder's last frame, still queued on the GPU */
        const uint8_t *p;
        int size, key;
        int64_t at;
        int rc = h264enc_flush(o->h264, &p, &size, &key, &at, err);
        if (rc < 0 || (size && (rc = mux_h264(o, p, size, key, at, err)) < 0))
            return rc < 0 ? vr_err_prefix(err, "%s: the last frame", o->path) : rc;
    }
    if (o->enc) {
        r = avcodec_send_frame(o->enc, NULL);
        if (r < 0 && r != AVERROR_EOF)
            return vr_err_set(err, VR_ECODEC, "%s: cannot flush encoder: %s", o->path,
                              vio_av_err(r, eb, sizeof eb));
        int rc = drain(o, err);
        if (rc < 0)
            return rc;
    }
    pthread_mutex_lock(&o->lock);
    r = av_write_trailer(o->oc);
    o->header_written = 0;
    int rc2 = o->oc->pb->error;
    avio_closep(&o->oc->pb);
    pthread_mutex_unlock(&o->lock);
    if (r < 0 || rc2 < 0)
        return vio_out_io_err(o, r < 0 ? r : rc2, "cannot finish the file", err);
    /* durable before the caller renames it into place */
    int fd = open(o->path, O_RDONLY);
    if (fd < 0 || fsync(fd) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return storage_errno(e, "cannot fsync", o->path, err);
    }
    off_t end = lseek(fd, 0, SEEK_END);
    if (end > 0)
        o->bytes = end;
    close(fd);
    return 0;
}

int64_t vio_out_bytes(const struct vio_out *o) { return o->bytes; }

void vio_out_free(struct vio_out **op)
{
    struct vio_out *o = op ? *op : NULL;
    if (!o)
        return;
    times_free(o);
    if (o->oc) {
        if (o->oc->pb)
            avio_closep(&o->oc->pb);
        avformat_free_context(o->oc);
    }
    avcodec_free_context(&o->enc);
    h264enc_free(&o->h264);
    av_packet_free(&o->pkt);
    av_free(o->map);
    av_free(o->in_tb);
    if (o->lock_ok)
        pthread_mutex_destroy(&o->lock);
    av_free(o);
    *op = NULL;
}

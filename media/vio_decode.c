/*
 * vio_decode.c - vio_in: demux one file, decode its video stream on the CPU
 * or with NVDEC (cuda hwaccel, frames left in GPU memory), and hand every
 * other packet through untouched (see vio_video.h).
 *
 * Damaged packets are concealed by default, as ffmpeg does: the decoder's
 * own concealment kept, a packet it refuses skipped, each counted
 * (vio_in_concealed). With fail_on_decode_error (--on-decode-error fail)
 * they must fail instead: the decoder runs with AV_EF_EXPLODE and frames
 * flagged corrupt are errors. Either way a stream that ends well before
 * the duration its container declares is reported as truncated.
 */
#include "vio_video.h"

#include "url_root.h"
#include "log.h"
#include "remux_range.h"
#include "src_io.h"
#include "storage.h"
#include "vio_nvdec.h"

#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
#include <libavutil/spherical.h>
#include <libavutil/stereo3d.h>
#include <stdio.h>
#include <string.h>

struct vio_in {
    char path[1024];
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVCodecParameters *dec_par; /* what dec was opened for, or NULL (vio_in_open_from) */
    AVBufferRef *hw_dev;
    AVStream *st;
    struct vio_info info;
    int64_t pkt_index;     /* video packets read */
    int64_t frame_index;   /* frames returned */
    int64_t video_bytes;
    int64_t last_pts;      /* AV_NOPTS_VALUE before the first frame */
    int64_t first_pts;     /* the first frame's, for the truncation check */
    int64_t last_dur;      /* pts units of the last frame, for the truncation check */
    int64_t last_pkt_pts;  /* of the last video packet sent, for error positions */
    int draining;          /* demuxer at EOF, decoder flushed */
    int64_t preroll_until; /* ms; frames before it are references only (0: none) */
    int64_t warmup_from;   /* ms; pre-roll frames from here on are warm-up frames */
    int64_t preroll_dropped, warmups;
    int64_t concealed;     /* decode errors concealed (vio_in_concealed) */
    int errors_in_row;     /* decoder errors with no frame between: a bound on concealing */
    struct remux_reader *range; /* reads one chunk's range of the file, or NULL: all of it */
    int range_has_end;     /* the range stops before the end: no truncation check */
    int64_t range_until, range_warm; /* its pre-roll (remux_reader_preroll), stream ticks */
    struct vio_in_opts opened; /* how it was opened (path and range not kept): retarget's check */
};

/* ---- helpers ---- */

const char *vio_av_err(int averr, char *buf, size_t n)
{
    if (av_strerror(averr, buf, n) < 0)
        snprintf(buf, n, "libav error %d", averr);
    return buf;
}

void vio_fmt_pts(char *buf, size_t n, int64_t pts, AVRational tb)
{
    if (pts == AV_NOPTS_VALUE)
        snprintf(buf, n, "no pts");
    else
        snprintf(buf, n, "pts %.3fs", (double)pts * av_q2d(tb));
}

/* "path: stream I (codec)" */
static void where(const struct vio_in *in, char *buf, size_t n)
{
    snprintf(buf, n, "%s: stream %d (%s)", in->path, in->info.video_index,
             in->info.codec ? in->info.codec : "?");
}

static enum AVPixelFormat pick_cuda(AVCodecContext *ctx, const enum AVPixelFormat *fmts)
{
    (void)ctx;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_CUDA)
            return *p;
    /* NVDEC cannot take this stream (profile, bit depth, size): failing here
     * makes the first decode call fail with a message, never a silent CPU
     * fallback that would break the caller's device-pointer assumption. */
    return AV_PIX_FMT_NONE;
}

static int open_hw(struct vio_in *in, const AVCodec *codec, const struct vio_in_opts *o,
                   vr_err *err)
{
    int ok = 0;
    for (int i = 0;; i++) {
        const AVCodecHWConfig *c = avcodec_get_hw_config(codec, i);
        if (!c)
            break;
        if (c->device_type == AV_HWDEVICE_TYPE_CUDA &&
            (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
            ok = 1;
    }
    if (!ok)
        return vr_err_set(err, VR_ENOTSUP, "%s: the %s decoder has no NVDEC (cuda) support in this build",
                          in->path, codec->name);
    char dev[16], eb[128];
    snprintf(dev, sizeof dev, "%d", o->gpu);
    /* the device's primary context: the one the CUDA runtime (the
     * segmentation kernels) uses, so decoded frames are plain device
     * memory to it, not another context's allocations */
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "primary_ctx", "1", 0);
    int r = av_hwdevice_ctx_create(&in->hw_dev, AV_HWDEVICE_TYPE_CUDA, dev, opts, 0);
    av_dict_free(&opts);
    if (r < 0) {
        /* the primary context is already active with other flags (someone
         * initialised the CUDA runtime first): a context of NVDEC's own */
        log_warn("%s: NVDEC cannot share the CUDA runtime's context; using its own", in->path);
        r = av_hwdevice_ctx_create(&in->hw_dev, AV_HWDEVICE_TYPE_CUDA, dev, NULL, 0);
    }
    if (r < 0)
        return vr_err_set(err, VR_ECUDA, "%s: cannot open NVDEC on GPU %d: %s", in->path, o->gpu,
                          vio_av_err(r, eb, sizeof eb));
    in->dec->hw_device_ctx = av_buffer_ref(in->hw_dev);
    if (!in->dec->hw_device_ctx)
        return vr_err_set(err, VR_ENOMEM, "%s: out of memory", in->path);
    in->dec->get_format = pick_cuda;
    /* surfaces the pipeline holds (queued + batched) on top of the decoder's own */
    in->dec->extra_hw_frames = o->extra_frames > 0 ? o->extra_frames : 4;
    in->info.hw = 1;
    return 0;
}

static void read_side_data(struct vio_in *in)
{
    in->info.stereo = -1;
    in->info.projection = -1;
    size_t sz = 0;
    const AVStereo3D *s3 = (const AVStereo3D *)av_stream_get_side_data(in->st, AV_PKT_DATA_STEREO3D, &sz);
    if (s3 && sz >= sizeof *s3) {
        switch (s3->type) {
        case AV_STEREO3D_2D:          in->info.stereo = 0; break;
        case AV_STEREO3D_SIDEBYSIDE:  in->info.stereo = 1; break;
        case AV_STEREO3D_TOPBOTTOM:   in->info.stereo = 2; break;
        default: break; /* frame-packed, checkerboard...: not a layout we segment */
        }
    }
    const AVSphericalMapping *sp =
        (const AVSphericalMapping *)av_stream_get_side_data(in->st, AV_PKT_DATA_SPHERICAL, &sz);
    if (sp && sz >= sizeof *sp) {
        in->info.spherical = 1;
        in->info.projection = (int)sp->projection;
    }
}

/* ---- open ---- */

/* A chunk read in place: the reader seeks, checks and reads the pre-roll
 * ahead; its thresholds replace the ms ones of a chunk file's pre-roll. */
static int open_range(struct vio_in *in, const struct chunk_range *r, vr_err *err)
{
    if (r->vs != in->info.video_index)
        return vr_err_set(err, VR_EFORMAT, "%s: the source changed since it was planned: its "
                          "video is stream %d, planned %d", in->path, in->info.video_index, r->vs);
    int rc = remux_reader_open(in->fmt, r, in->path, &in->range, err);
    if (rc < 0)
        return rc;
    in->range_has_end = r->has_end;
    in->preroll_until = 0;
    remux_reader_preroll(in->range, &in->range_until, &in->range_warm);
    return 0;
}

/* Where reading stands before the first packet: the counters, the last
 * times and the pre-roll thresholds of `o` (open_range replaces them for a
 * range); `o`'s path names the input in messages. */
static void reading_reset(struct vio_in *in, const struct vio_in_opts *o)
{
    snprintf(in->path, sizeof in->path, "%s", o->path);
    in->pkt_index = in->frame_index = in->video_bytes = 0;
    in->last_pts = in->last_pkt_pts = in->first_pts = AV_NOPTS_VALUE;
    in->last_dur = 0;
    in->draining = 0;
    in->preroll_until = o->preroll_until_ms;
    in->warmup_from = o->warmup_from_ms;
    in->preroll_dropped = in->warmups = in->concealed = 0;
    in->errors_in_row = 0;
}

/* The decoder for in's stream, as `o` asks. */
static int open_decoder(struct vio_in *in, const AVCodec *codec, const struct vio_in_opts *o,
                        vr_err *err)
{
    char eb[128];
    int vi = in->info.video_index, r;
    if (!(in->dec = avcodec_alloc_context3(codec)))
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    if ((r = avcodec_parameters_to_context(in->dec, in->st->codecpar)) < 0)
        return vr_err_set(err, VR_ECODEC, "%s: stream %d: bad codec parameters: %s", o->path, vi,
                          vio_av_err(r, eb, sizeof eb));
    in->dec->pkt_timebase = in->st->time_base;
    /* Failing: the decoder's first doubt is an error. Concealing: its
     * defaults, as ffmpeg's (a damaged slice concealed from its neighbours). */
    if (o->fail_on_decode_error)
        in->dec->err_recognition |= AV_EF_EXPLODE | AV_EF_CRCCHECK;
    in->dec->thread_count = o->threads;
    if (o->hw) {
        /* Known limits first (8K H.264 is beyond every NVDEC): the caller
         * falls back to the CPU once, not after a failed decode per chunk. */
        char why[160];
        const struct vio_info *inf = &in->info;
        if (!vio_nvdec_can(inf->codec, inf->w, inf->h, inf->bit_depth, NULL, why, sizeof why))
            return vr_err_set(err, VR_ENOTSUP, "%s: %s", o->path, why);
        if (!o->threads)
            in->dec->thread_count = vio_nvdec_threads();
        int rc = open_hw(in, codec, o, err);
        if (rc < 0)
            return rc;
    }
    if ((r = avcodec_open2(in->dec, codec, NULL)) < 0)
        return vr_err_set(err, VR_ECODEC, "%s: stream %d: cannot open the %s decoder: %s",
                          o->path, vi, codec->name, vio_av_err(r, eb, sizeof eb));
    /* kept for vio_in_open_from's match (none when out of memory: no reuse) */
    if ((in->dec_par = avcodec_parameters_alloc()) &&
        avcodec_parameters_copy(in->dec_par, in->st->codecpar) < 0)
        avcodec_parameters_free(&in->dec_par);
    return 0;
}

/* Whether `o` asks for the decoding an input was opened with (`a`): what
 * lets its decoder serve again (vio_in_retarget, vio_in_open_from). */
static int same_decoding(const struct vio_in_opts *a, const struct vio_in_opts *o)
{
    return o->hw == a->hw && (!o->hw || o->gpu == a->gpu) && o->threads == a->threads &&
           o->extra_frames == a->extra_frames &&
           o->fail_on_decode_error == a->fail_on_decode_error;
}

/* Whether `in`'s stream decodes with donor's open decoder as it is: the
 * same decoding asked for and the same stream parameters (the extradata
 * holds the parameter sets), as the next video of a camera rig has. */
static int decoder_fits(const struct vio_in *in, const struct vio_in *donor,
                        const AVCodec *codec, const struct vio_in_opts *o)
{
    if (!donor->dec || !donor->dec_par || donor->dec->codec != codec ||
        !same_decoding(&donor->opened, o))
        return 0;
    const AVCodecParameters *x = in->st->codecpar, *y = donor->dec_par;
    return x->codec_id == y->codec_id && x->width == y->width && x->height == y->height &&
           x->format == y->format && x->profile == y->profile && x->level == y->level &&
           x->extradata_size == y->extradata_size &&
           (!x->extradata_size || !memcmp(x->extradata, y->extradata, (size_t)x->extradata_size));
}

/* Moves donor's decoder (with NVDEC: its decoder and surfaces, seconds to
 * create when 32 chunks start at once) to `in`, flushed as a player's seek
 * flushes it; 1 when taken, 0 when it does not fit. */
static int take_decoder(struct vio_in *in, struct vio_in *donor, const AVCodec *codec,
                        const struct vio_in_opts *o)
{
    if (!donor || !decoder_fits(in, donor, codec, o))
        return 0;
    in->dec = donor->dec;
    in->dec_par = donor->dec_par;
    in->hw_dev = donor->hw_dev;
    donor->dec = NULL;
    donor->dec_par = NULL;
    donor->hw_dev = NULL;
    avcodec_flush_buffers(in->dec);
    in->dec->pkt_timebase = in->st->time_base;
    in->info.hw = o->hw;
    return 1;
}

int vio_in_open(const struct vio_in_opts *o, struct vio_in **out, vr_err *err)
{
    return vio_in_open_from(o, NULL, out, NULL, err);
}

/* ---- an input, step by step ---- */

/* A video stream nothing decodes (AVERROR_DECODER_NOT_FOUND): the error
 * names its codec and tag. */
static int no_decoder(const struct vio_in *in, const char *path, vr_err *err)
{
    /* AVERROR_DECODER_NOT_FOUND: a video stream, but nothing decodes it
     * (a codec the container names and FFmpeg does not know is "none") */
    int si = -1;
    for (unsigned i = 0; si < 0 && i < in->fmt->nb_streams; i++)
        if (in->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO)
            si = (int)i;
    const AVCodecParameters *p = si >= 0 ? in->fmt->streams[si]->codecpar : NULL;
    char tag[AV_FOURCC_MAX_STRING_SIZE] = "";
    if (p && p->codec_tag)
        av_fourcc_make_string(tag, p->codec_tag);
    return vr_err_set(err, VR_ENOTSUP, "%s: stream %d (video): unsupported codec %s%s%s: this "
                      "FFmpeg build has no decoder for it", path, si,
                      p && p->codec_id != AV_CODEC_ID_NONE ? avcodec_get_name(p->codec_id)
                                                           : "(unknown)",
                      tag[0] ? ", tag " : "", tag);
}

/* The video stream vi's figures into in->info: 0, or a frame size
 * refused. */
static int read_info(struct vio_in *in, int vi, const struct vio_in_opts *o, vr_err *err)
{
    int rc;
    in->st = in->fmt->streams[vi];
    AVCodecParameters *par = in->st->codecpar;
    struct vio_info *inf = &in->info;
    inf->video_index = vi;
    inf->codec = avcodec_get_name(par->codec_id);
    inf->w = par->width;
    inf->h = par->height;
    if ((rc = vio_frame_size_check(o->path, inf->w, inf->h, err)) < 0)
        return rc;
    inf->time_base = in->st->time_base;
    inf->frame_rate = av_guess_frame_rate(in->fmt, in->st, NULL);
    inf->nb_frames = in->st->nb_frames;
    inf->duration_s = vio_declared_duration(in->fmt, in->st->index);
    if (inf->duration_s <= 0 && in->fmt->duration > 0) /* the whole file's: a guess */
        inf->duration_s = (double)in->fmt->duration / AV_TIME_BASE;
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)par->format);
    inf->bit_depth = d ? d->comp[0].depth : 8;
    inf->sw_fmt = (enum AVPixelFormat)par->format;
    inf->coded_fmt = inf->sw_fmt;
    inf->full_range = par->color_range == AVCOL_RANGE_JPEG;
    return 0;
}

int vio_in_open_from(const struct vio_in_opts *o, struct vio_in **donor, struct vio_in **out,
                     int *decoder_kept, vr_err *err)
{
    *out = NULL;
    if (decoder_kept)
        *decoder_kept = 0;
    char eb[128];
    int rc;
    struct vio_in *in = av_mallocz(sizeof *in);
    if (!in)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    in->opened = *o;
    in->opened.path = NULL;
    in->opened.range = NULL;
    reading_reset(in, o);
    in->info.video_index = -1;

    /* only a regular file: libav's open() of a FIFO would wait for ever,
     * and a device or a socket is no video either */
    if (!url_root_is_url(o->path) && (rc = storage_check_regular(o->path, err)) < 0)
        goto fail;
    /* a store's object: the plan's (the range's fingerprint), else the job fails */
    int r = src_open_input(&in->fmt, o->path,
                           o->range && o->range->fingerprint[0] ? o->range->fingerprint : NULL);
    if (r < 0 && src_io_take_error(err)) {
        rc = err ? err->code : VR_EIO;
        goto fail;
    }
    if (r < 0) {
        rc = vr_err_set(err, r == AVERROR(ENOENT) ? VR_ENOENT : VR_EFORMAT,
                        "%s: cannot open: %s", o->path, vio_av_err(r, eb, sizeof eb));
        goto fail;
    }
    if ((r = avformat_find_stream_info(in->fmt, NULL)) < 0) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: cannot read stream info: %s", o->path,
                        vio_av_err(r, eb, sizeof eb));
        goto fail;
    }
    const AVCodec *codec = NULL;
    int vi = av_find_best_stream(in->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (vi == AVERROR_STREAM_NOT_FOUND) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: no video stream", o->path);
        goto fail;
    }
    if (vi < 0 || !codec) {
        rc = no_decoder(in, o->path, err);
        goto fail;
    }
    if ((rc = read_info(in, vi, o, err)) < 0)
        goto fail;
    struct vio_info *inf = &in->info;
    read_side_data(in);

    if (donor && take_decoder(in, *donor, codec, o)) {
        vio_in_free(donor);
        if (decoder_kept)
            *decoder_kept = 1;
    } else if ((rc = open_decoder(in, codec, o, err)) < 0) {
        goto fail;
    }
    if (o->hw)
        inf->sw_fmt = inf->bit_depth > 8 ? AV_PIX_FMT_P010 : AV_PIX_FMT_NV12;
    /* only the video stream is decoded; others are passed through */
    for (unsigned i = 0; i < in->fmt->nb_streams; i++)
        if ((int)i != vi && in->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
            (in->fmt->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC))
            in->fmt->streams[i]->discard = AVDISCARD_ALL;
    if (o->range && (rc = open_range(in, o->range, err)) < 0)
        goto fail;
    *out = in;
    return 0;
fail:
    vio_in_free(&in);
    return rc;
}

int vio_in_retarget(struct vio_in *in, const struct vio_in_opts *o, vr_err *err)
{
    if (!in->range || !o->range || !same_decoding(&in->opened, o))
        return vr_err_set(err, VR_EINVAL, "%s: not an input that can read another range", in->path);
    remux_reader_free(&in->range);
    avcodec_flush_buffers(in->dec);
    reading_reset(in, o);
    return open_range(in, o->range, err);
}

const struct vio_info *vio_in_info(const struct vio_in *in) { return &in->info; }
const AVFormatContext *vio_in_format(const struct vio_in *in) { return in->fmt; }
int64_t vio_in_video_bytes(const struct vio_in *in) { return in->video_bytes; }
int64_t vio_in_frames(const struct vio_in *in) { return in->frame_index; }
int64_t vio_in_preroll_dropped(const struct vio_in *in) { return in->preroll_dropped; }
int64_t vio_in_warmups(const struct vio_in *in) { return in->warmups; }
int64_t vio_in_concealed(const struct vio_in *in) { return in->concealed; }

/* ---- reading ---- */

/* Where a frame of a chunk's pre-roll (the GOP before the chunk's first
 * keyframe) stands: 0 not in the pre-roll, 1 a reference only (dropped),
 * 2 a warm-up frame (returned as VIO_WARMUP for the temporal filter, never
 * output). Leading pictures at the pre-roll's head may be broken (their
 * references lie before the file), so no check applies to pre-roll frames. */
static int preroll_kind_at(const struct vio_in *in, int64_t pts)
{
    if (in->range) /* in stream ticks */
        return pts == AV_NOPTS_VALUE || pts >= in->range_until ? 0 : pts < in->range_warm ? 1 : 2;
    if (in->preroll_until <= 0 || pts == AV_NOPTS_VALUE)
        return 0;
    int64_t ms = av_rescale_q(pts, in->info.time_base, (AVRational){ 1, 1000 });
    if (ms >= in->preroll_until)
        return 0;
    if (ms < in->warmup_from)
        return 1;
    return 2;
}

static int preroll_kind(const struct vio_in *in, const AVFrame *f)
{
    return preroll_kind_at(in, f->best_effort_timestamp != AV_NOPTS_VALUE
                                   ? f->best_effort_timestamp : f->pts);
}

/* Whether the stream says which pictures nothing refers to, so that a
 * pre-roll can skip them: H.264's nal_ref_idc 0; HEVC's sub-layer
 * non-reference pictures, which no picture refers to when the stream has
 * one temporal layer (its hvcC says so; Annex B headers are not read). */
static int nonref_skippable(const AVCodecParameters *par)
{
    if (par->codec_id == AV_CODEC_ID_H264)
        return 1;
    if (par->codec_id != AV_CODEC_ID_HEVC || par->extradata_size < 23 || par->extradata[0] != 1)
        return 0;
    return ((par->extradata[21] >> 3) & 7) == 1; /* numTemporalLayers */
}

/* The decoder's skipping for the packet of presentation time pts: a
 * pre-roll frame that is only dropped (kind 1) needs decoding only as a
 * reference, so the pictures nothing refers to are skipped (a GOP's
 * pre-roll is most of a chunk's time to its first frame: about 55 of a
 * 60-frame GOP decoded for 5 warm-up frames, docs/PERF.md). */
static void preroll_skip(struct vio_in *in, int64_t pts)
{
    int skip = pts != AV_NOPTS_VALUE && preroll_kind_at(in, pts) == 1 &&
               nonref_skippable(in->st->codecpar);
    in->dec->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
}

static int check_frame(struct vio_in *in, AVFrame *f, vr_err *err)
{
    char w[1200], pb[64];
    where(in, w, sizeof w);
    int64_t pts = f->best_effort_timestamp;
    if (pts == AV_NOPTS_VALUE)
        pts = f->pts;
    vio_fmt_pts(pb, sizeof pb, pts, in->info.time_base);
    if (f->decode_error_flags || (f->flags & AV_FRAME_FLAG_CORRUPT)) {
        if (in->opened.fail_on_decode_error)
            return vr_err_set(err, VR_EFORMAT, "%s: frame %lld %s: corrupt frame (decode error "
                              "flags 0x%x)", w, (long long)in->frame_index, pb,
                              f->decode_error_flags);
        in->concealed++;
    }
    if (f->width != in->info.w || f->height != in->info.h)
        return vr_err_set(err, VR_ENOTSUP, "%s: frame %lld %s: size changes from %dx%d to %dx%d",
                          w, (long long)in->frame_index, pb, in->info.w, in->info.h, f->width,
                          f->height);
    if (pts == AV_NOPTS_VALUE) {
        /* a stream without timestamps: number frames at the guessed rate */
        AVRational fr = in->info.frame_rate.num ? in->info.frame_rate : (AVRational){ 25, 1 };
        int64_t step = av_rescale_q(1, av_inv_q(fr), in->info.time_base);
        pts = in->last_pts == AV_NOPTS_VALUE ? 0 : in->last_pts + (step > 0 ? step : 1);
    }
    if (in->last_pts != AV_NOPTS_VALUE && pts <= in->last_pts)
        return vr_err_set(err, VR_EFORMAT, "%s: frame %lld %s: timestamp not after the previous frame's",
                          w, (long long)in->frame_index, pb);
    in->last_dur = f->pkt_duration > 0 ? f->pkt_duration
                   : in->last_pts != AV_NOPTS_VALUE ? pts - in->last_pts : 0;
    f->pts = pts;
    if (in->last_pts == AV_NOPTS_VALUE)
        in->first_pts = pts;
    in->last_pts = pts;
    if (in->info.hw && in->frame_index == 0 && f->hw_frames_ctx)
        in->info.sw_fmt = ((AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format;
    in->frame_index++;
    return 0;
}

/* A Matroska/WebM track's DURATION tag ("HH:MM:SS.nnnnnnnnn", written by
 * mkvmerge and libavformat) in seconds, or 0 (none, or not that shape). */
static double tag_duration(const AVStream *st)
{
    const AVDictionaryEntry *t = av_dict_get(st->metadata, "DURATION", NULL, 0);
    int h, m;
    double sec;
    char tail;
    if (!t || sscanf(t->value, "%d:%d:%lf%c", &h, &m, &sec, &tail) != 3)
        return 0;
    if (h < 0 || h > 1000000 || m < 0 || m > 59 || !(sec >= 0 && sec < 60))
        return 0;
    return h * 3600.0 + m * 60.0 + sec;
}

double vio_declared_duration(const AVFormatContext *fmt, int vi)
{
    const AVStream *st = fmt->streams[vi];
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
        return (double)st->duration * av_q2d(st->time_base);
    double tag = tag_duration(st);
    if (tag > 0)
        return tag;
    /* the container's length is the video's only when nothing else can
     * outlast it (Matroska: audio padded past the last frame is common) */
    for (unsigned i = 0; i < fmt->nb_streams; i++)
        if ((int)i != vi && !(fmt->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC) &&
            fmt->streams[i]->codecpar->codec_type != AVMEDIA_TYPE_ATTACHMENT)
            return 0;
    return fmt->duration > 0 ? (double)fmt->duration / AV_TIME_BASE : 0;
}

int vio_check_duration(const char *path, AVFormatContext *fmt, int vi, long long frames,
                       int64_t first, int64_t end, vr_err *err)
{
    const AVStream *st = fmt->streams[vi];
    double declared = vio_declared_duration(fmt, vi);
    if (declared <= 0 || frames <= 0)
        return 0;
    int64_t start = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    if (first != AV_NOPTS_VALUE && first < start)
        start = first;
    double end_s = (double)(end - start) * av_q2d(st->time_base);
    AVRational g = av_guess_frame_rate(fmt, fmt->streams[vi], NULL);
    double fr = g.num > 0 && g.den > 0 ? av_q2d(g) : 25;
    double slack = 2.0 / fr + 0.1;
    if (end_s + slack < declared)
        return vr_err_set(err, VR_EFORMAT, "%s: stream %d (%s): truncated: the video ends after "
                          "frame %lld at %.3fs but the container declares %.3fs", path, vi,
                          avcodec_get_name(st->codecpar->codec_id), frames - 1, end_s, declared);
    /* within the slack, yet a whole frame or more short: taken, and said
     * (finding 11: a damaged MP4 gave 26 of 30 frames without a word) */
    if (end_s + 1.0 / fr < declared + 1e-6)
        log_warn("%s: stream %d: the video ends at %.3fs, %.3fs before the %.3fs the container "
                 "declares: about %.0f frame(s) missing at the end (within the slack, "
                 "accepted)", path, vi, end_s, declared - end_s, declared, (declared - end_s) * fr);
    return 0;
}

/* The container said how long the stream is; a stream that stops well short
 * of that was cut off (a partial download, a full disk). */
static int check_complete(struct vio_in *in, vr_err *err)
{
    char w[1200];
    where(in, w, sizeof w);
    if (in->frame_index == 0)
        return vr_err_set(err, VR_EFORMAT, "%s: no frame could be decoded (empty or truncated file)", w);
    if (in->range_has_end || (in->range && remux_reader_has_end(in->range)))
        /* a range before the end (planned, or cut while read): its end was checked by packet */
        return 0;
    return vio_check_duration(in->path, in->fmt, in->info.video_index, in->frame_index,
                              in->first_pts, in->last_pts + in->last_dur, err);
}

/* The next packet of the file, or of its range: 0, AVERROR_EOF, or <0
 * (a libav error; in range mode a VR_E* with err set). */
static int read_packet(struct vio_in *in, AVPacket *pkt, vr_err *err)
{
    if (!in->range)
        return av_read_frame(in->fmt, pkt);
    int rc = remux_reader_next(in->range, pkt, err);
    return rc > 0 ? 0 : rc == 0 ? AVERROR_EOF : rc;
}

/* Whether the decoder's error just now is concealed: not when failing on
 * them, nor after CONCEAL_IN_ROW_MAX of them with no frame between (a
 * stream that is all damage, or a decoder repeating one error). */
#define CONCEAL_IN_ROW_MAX 256
static int conceal_error(struct vio_in *in)
{
    return !in->opened.fail_on_decode_error && ++in->errors_in_row <= CONCEAL_IN_ROW_MAX;
}

int vio_in_next(struct vio_in *in, AVFrame *frame, AVPacket *pkt, vr_err *err)
{
    char w[1200], eb[128], pb[64];
    for (;;) {
        int r = avcodec_receive_frame(in->dec, frame);
        if (r == 0)
            in->errors_in_row = 0;
        int pre = r == 0 ? preroll_kind(in, frame) : 0;
        if (pre == 1) {
            in->preroll_dropped++;
            av_frame_unref(frame);
            continue;
        }
        if (pre == 2) {
            if (frame->best_effort_timestamp != AV_NOPTS_VALUE)
                frame->pts = frame->best_effort_timestamp;
            in->warmups++;
            return VIO_WARMUP;
        }
        if (r == 0) {
            int rc = check_frame(in, frame, err);
            if (rc < 0) {
                av_frame_unref(frame);
                return rc;
            }
            return VIO_FRAME;
        }
        if (r == AVERROR_EOF) {
            int rc = check_complete(in, err);
            return rc < 0 ? rc : VIO_EOF;
        }
        if (r != AVERROR(EAGAIN) && conceal_error(in)) {
            in->concealed++;
            continue;
        }
        if (r != AVERROR(EAGAIN)) {
            where(in, w, sizeof w);
            vio_fmt_pts(pb, sizeof pb, in->last_pkt_pts, in->info.time_base);
            return vr_err_set(err, VR_EFORMAT, "%s: frame %lld (after packet %lld %s): cannot decode: %s",
                              w, (long long)in->frame_index, (long long)in->pkt_index - 1, pb,
                              vio_av_err(r, eb, sizeof eb));
        }
        if (in->draining) { /* EAGAIN while draining: decoder bug; do not spin */
            where(in, w, sizeof w);
            return vr_err_set(err, VR_ECODEC, "%s: decoder stalled while draining", w);
        }
        r = read_packet(in, pkt, err);
        if (r < 0 && r != AVERROR_EOF && in->range)
            return r; /* the reader's VR_E*, its message set */
        if (r == AVERROR_EOF || (r < 0 && avio_feof(in->fmt->pb) && !in->fmt->pb->error)) {
            in->draining = 1;
            avcodec_send_packet(in->dec, NULL);
            continue;
        }
        if (r < 0 && src_io_take_error(err)) /* a store's object: its status, its name */
            return err ? err->code : VR_EIO;
        if (r < 0) {
            where(in, w, sizeof w);
            return vr_err_set(err, VR_EIO, "%s: packet %lld: read failed: %s", w,
                              (long long)in->pkt_index, vio_av_err(r, eb, sizeof eb));
        }
        if (pkt->stream_index != in->info.video_index)
            return VIO_PACKET;
        in->video_bytes += pkt->size;
        int64_t idx = in->pkt_index++;
        int64_t ppts = pkt->pts;
        in->last_pkt_pts = ppts;
        preroll_skip(in, ppts);
        r = avcodec_send_packet(in->dec, pkt);
        av_packet_unref(pkt);
        if (r < 0 && r != AVERROR(ENOMEM) && conceal_error(in)) {
            in->concealed++; /* the packet is skipped, as ffmpeg skips it */
            continue;
        }
        if (r < 0) {
            where(in, w, sizeof w);
            vio_fmt_pts(pb, sizeof pb, ppts, in->info.time_base);
            return vr_err_set(err, VR_EFORMAT, "%s: packet %lld %s: cannot decode: %s", w,
                              (long long)idx, pb, vio_av_err(r, eb, sizeof eb));
        }
    }
}

void vio_in_free(struct vio_in **inp)
{
    struct vio_in *in = inp ? *inp : NULL;
    if (!in)
        return;
    remux_reader_free(&in->range);
    avcodec_free_context(&in->dec);
    avcodec_parameters_free(&in->dec_par);
    av_buffer_unref(&in->hw_dev);
    src_close_input(&in->fmt);
    av_free(in);
    *inp = NULL;
}

void vio_in_close_file(struct vio_in *in)
{
    if (!in)
        return;
    remux_reader_free(&in->range);
    src_close_input(&in->fmt);
    in->st = NULL;
}

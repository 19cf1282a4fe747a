/*
 * vio_video.h - video I/O for the pipeline: demux + decode (vio_in), encode +
 * mux with the other streams copied untouched (vio_out), on libavformat /
 * libavcodec.
 *
 *   vio_in:  file ──demux──▶ video packets ──decode (CPU, or NVDEC through the
 *            cuda hwaccel with frames left in GPU memory)──▶ AVFrame
 *                          └▶ every other packet, as is (for vio_out_copy)
 *   vio_out: AVFrame ──encode (NVENC if it opens, else libx264 / libx265)──▶
 *            mux ◀── copied packets (timestamps rescaled, data untouched)
 *
 * Timestamps: decoded frames carry the input stream's pts (best effort) in
 * the input video time base; vio_out encodes them with that time base, so
 * every output frame has the input frame's time. Errors name the file, the
 * stream and the position (packet or frame index and pts), e.g.
 * "in.mkv: stream 0 (h264): packet 412 pts 16.480s: cannot decode: ...".
 *
 * Threading: one thread drives a vio_in; vio_out may be fed from two threads
 * (encoded frames from one, copied packets from another): it serialises
 * muxer access internally.
 */
#ifndef VR_VIO_VIDEO_H
#define VR_VIO_VIDEO_H

#include "config.h"
#include "vr_err.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdint.h>

struct chunk_range;

/* Frame sizes above these are refused before any allocation: 16384 per
 * side and 16384x8192 in all (16K side-by-side; a 16000x16000 frame is
 * 384 MB of YUV, more than a container's packet or a chunk can carry). */
#define VIO_MAX_DIM 16384
#define VIO_MAX_PIXELS (16384LL * 8192)

/* 0 when a w x h frame is within the limits above, else VR_EFORMAT naming
 * `path`, the size and the limit. Every reader of a source checks it
 * (vio_in_open, remux_probe) before it sizes anything from it. */
int vio_frame_size_check(const char *path, int w, int h, vr_err *err);

/* ---- input ---- */

struct vio_in_opts {
    const char *path;
    int hw;            /* 1: NVDEC via the cuda hwaccel (frames stay on the GPU) */
    int gpu;           /* CUDA device index for hw */
    int threads;       /* CPU decoder threads, 0 = auto */
    int extra_frames;  /* hw: extra decoder surfaces (0 = 4; 8 made NVDEC refuse 8K HEVC on an H100) */
    int64_t preroll_until_ms; /* a chunk's pre-roll (remux.h): frames with pts below this
                               * many ms are decoded as references and dropped, uncounted
                               * (H.264, single-layer HEVC: the pictures nothing refers
                               * to are not decoded at all); 0 = none */
    int64_t warmup_from_ms;   /* pre-roll frames at or after this many ms are returned as
                               * VIO_WARMUP (the temporal filter's warm-up), uncounted;
                               * set it to preroll_until_ms for none */
    const struct chunk_range *range; /* read only this range of the file (remux_range.h):
                               * seek, check, its packets and the other streams' packets it
                               * owns; its pre-roll replaces the two above. NULL: all */
    int fail_on_decode_error; /* 1: a packet the decoder refuses or a frame it marks
                               * corrupt is an error; 0: concealed as ffmpeg does (the
                               * decoder's concealment kept, the packet skipped) and
                               * counted (vio_in_concealed) */
};

struct vio_info {
    int w, h;
    enum AVPixelFormat sw_fmt; /* pixel format in memory (hw: NV12 / P010) */
    enum AVPixelFormat coded_fmt; /* the stream's own (yuv420p...): its format's name */
    int hw;                    /* frames are AV_PIX_FMT_CUDA with device pointers */
    int bit_depth;
    int full_range;
    AVRational time_base;      /* of the video stream (frame pts) */
    AVRational frame_rate;     /* guessed; {0,1} when unknown */
    int64_t nb_frames;         /* container's count, 0 when unknown */
    double duration_s;         /* container's, 0 when unknown */
    const char *codec;         /* "h264", "hevc", ... (static) */
    int video_index;           /* in the input's streams */
    int stereo;                /* from side data: 0 mono, 1 sbs, 2 tb, -1 none */
    int spherical;             /* spherical-video side data present (360/180) */
    int projection;            /* enum AVSphericalProjection, -1 when none */
};

struct vio_in;

/* Opens `o->path`, finds the best video stream and opens its decoder (with
 * NVDEC when o->hw; VR_ENOTSUP when NVDEC cannot take the stream, by its
 * known limits (vio_nvdec.h) or its build, so the caller may fall back
 * knowingly). Returns 0 or VR_ENOENT / VR_EFORMAT / VR_ENOTSUP /
 * VR_ECODEC with the file named. */
int vio_in_open(const struct vio_in_opts *o, struct vio_in **out, vr_err *err);

/* vio_in_open, taking the open decoder of *donor (another file's input,
 * then freed) when the new stream's parameters and `o`'s decoding are the
 * ones it was opened for: the next video of the same camera or encoder
 * skips NVDEC's decoder creation. *decoder_kept (may be NULL) says whether
 * it was taken; a donor that does not fit is left as it is. */
int vio_in_open_from(const struct vio_in_opts *o, struct vio_in **donor, struct vio_in **out,
                     int *decoder_kept, vr_err *err);

/* Closes the file (demuxer, range) of an input and keeps its decoder: what
 * is left can only be a donor to vio_in_open_from, or be freed. */
void vio_in_close_file(struct vio_in *in);

/* Points an input opened with a range at another range of the same file,
 * keeping its demuxer and its decoder (with NVDEC, the decoder and its
 * surfaces: creating them took seconds when 32 chunks started at once).
 * The decoder is flushed, as a player's seek does, so the range decodes as
 * from a fresh open; counters start again. `o` must ask for the same
 * decoding (hw, GPU, threads) and name a range; o->path only renames the
 * input in messages (the file read is the one opened). Returns 0, VR_EINVAL
 * when `o` cannot reuse `in`, or the range's error (as vio_in_open). */
int vio_in_retarget(struct vio_in *in, const struct vio_in_opts *o, vr_err *err);

const struct vio_info *vio_in_info(const struct vio_in *in);

/* The demuxer, for vio_out to copy stream parameters from (borrowed). */
const AVFormatContext *vio_in_format(const struct vio_in *in);

enum vio_event { VIO_EOF = 0, VIO_FRAME, VIO_PACKET, VIO_WARMUP };

/* The next thing in the file: VIO_FRAME with `frame` holding a decoded
 * video frame (the caller owns the reference: av_frame_unref), VIO_WARMUP
 * likewise for a pre-roll frame to be segmented but not output, VIO_PACKET
 * with `pkt` holding a non-video packet to copy (caller unrefs), or VIO_EOF
 * once the decoder is drained. `frame` and `pkt` must be unreferenced on
 * entry. Returns the event (>= 0) or a VR_E* code naming the position.
 * A decode error or a frame marked corrupt is an error with
 * o->fail_on_decode_error, else concealed and counted; a stream that ends
 * well before the duration its container declares, or a frame size
 * change, is an error. */
int vio_in_next(struct vio_in *in, AVFrame *frame, AVPacket *pkt, vr_err *err);

/* Bytes of video packets read so far; frames returned so far (VIO_FRAME);
 * pre-roll frames decoded and dropped so far; warm-up frames returned. */
int64_t vio_in_video_bytes(const struct vio_in *in);
int64_t vio_in_frames(const struct vio_in *in);
int64_t vio_in_preroll_dropped(const struct vio_in *in);
int64_t vio_in_warmups(const struct vio_in *in);

/* Decode errors concealed so far: frames returned that the decoder marked
 * corrupt (its concealment in them), plus packets it refused (skipped). */
int64_t vio_in_concealed(const struct vio_in *in);

/* Frees and clears *in; accepts NULL and half-built inputs. */
void vio_in_free(struct vio_in **in);

/* ---- output ---- */

struct vio_out_opts {
    const char *path;          /* file to write (a temp name is fine) */
    const char *format_name;   /* container, guessed from this name (the final name) */
    const struct vio_in *in;   /* source of the copied streams and the time base */
    int w, h;                  /* video frame size */
    enum AVPixelFormat pix_fmt;/* of the frames given to vio_out_write (software) */
    int full_range;
    const struct vr_config *cfg; /* encoder ("auto" or a name), crf, preset */
    int try_nvenc;             /* "auto" tries NVENC first (GPU runs) */
    int gpu_run;               /* a GPU run: "auto" codes the matte with VIO_MATTE_H264
                                * where NVENC is absent (vio_matte_encoder), and
                                * VIO_MATTE_H264 runs on CUDA device `gpu` */
    int gpu;
    int threads;               /* encoder threads, 0 = tuned to the core count */
    int matte;                 /* a matte: constant QP, no rate-control history (vio_encode.c) */
    int copy_streams;          /* copy the input's non-video streams */
    int record_ts;             /* keep every written packet's input times (vio_out_ts) */
};

struct vio_out;

/* Opens the encoder (see the rule in vio_encode.c) and the muxer and writes
 * the header. Returns 0 or VR_E* naming the file or the encoder. */
int vio_out_open(const struct vio_out_opts *o, struct vio_out **out, vr_err *err);

/* The encoder that was opened ("libx264", "hevc_nvenc", VIO_MATTE_H264, ...). */
const char *vio_out_encoder(const struct vio_out *o);

/* The matte encoder of kernels/h264 (h264enc.h), by its config name: H.264
 * Constrained Baseline of a grey picture, constant QP, IDRs where the
 * caller marks the source's keyframes. */
#define VIO_MATTE_H264 "vrh264"

/* What "auto" codes a CPU run's matte with, and why (docs/PERF.md, "The
 * matte encoder": the bench that decided it). */
#define VIO_MATTE_CPU "libx264"
#define VIO_MATTE_CPU_WHY "x264 ultrafast takes less CPU a frame than the matte encoder's C " \
                          "twin (2.6x less on a 4096x2048 matte, one thread each)"

/* The encoder "auto" gives a w x h matte: on a GPU run (gpu_run) with or
 * without NVENC (has_nvenc), or on the CPU; *why says why in words (static).
 * Returns a static name: h264_nvenc / hevc_nvenc, VIO_MATTE_H264, libx264
 * or libx265. vio_out_open follows it (NVENC only once it has opened);
 * `vr-worker info` prints it. */
const char *vio_matte_encoder(int gpu_run, int has_nvenc, int w, int h, const char **why);

/* Whether `name` may be asked for as --encoder: auto, the project's own
 * matte encoder (VIO_MATTE_H264) or an encoder of this FFmpeg build. */
int vio_encoder_name_ok(const char *name);
#define VIO_ENCODER_NAMES "auto, " VIO_MATTE_H264 ", libx264, libx265, ..."

/* Opens and closes a small encoder `name` (e.g. h264_nvenc): 0 when it
 * opens, VR_ENOTSUP / VR_ECODEC with libav's reason when not. How a host
 * learns once whether its GPUs have NVENC (worker/nvenc_host.c). */
int vio_encoder_probe(const char *name, vr_err *err);

/* Encodes `f` (pts in the input video time base; borrowed, not modified)
 * and writes the packets that come out. A frame whose pict_type is
 * AV_PICTURE_TYPE_I starts a closed GOP (an IDR): give it to the source's
 * keyframes, so the fleet's chunks and one `process` code the same GOPs.
 * Thread-safe against vio_out_copy. */
int vio_out_write(struct vio_out *o, const AVFrame *f, vr_err *err);

/* 1 when o's encoder takes the matte in device memory (the matte encoder
 * of kernels/h264 on the run's GPU): vio_out_write_matte_dev then spares
 * the matte's trip through the host. */
int vio_out_matte_on_device(const struct vio_out *o);

/* vio_out_write for such an encoder: the matte (luma only, w x h of the
 * options, stride ls) in the output's GPU's memory, pts in the input video
 * time base, key the source's keyframe (an IDR here). The matte is read
 * before the call returns. VR_EINVAL where vio_out_matte_on_device is 0. */
int vio_out_write_matte_dev(struct vio_out *o, const uint8_t *y, int ls, int64_t pts, int key,
                            vr_err *err);

/* Writes a packet from vio_in_next (VIO_PACKET) with its timestamps rescaled
 * to the output stream; the packet's data is not modified. Packets of
 * streams that were not copied are dropped. The packet is unreferenced. */
int vio_out_copy(struct vio_out *o, AVPacket *pkt, vr_err *err);

/* Flushes the encoder, writes the trailer, flushes and fsyncs the file.
 * Returns 0 or VR_E*. */
int vio_out_finish(struct vio_out *o, vr_err *err);

/* The exact input times of everything written (remux_ts.h), when opened
 * with record_ts: stream 0 the frames' pts sorted, stream k the copied
 * packets of output stream k. For the stitch of chunks read in place; call
 * after vio_out_finish. t is filled (remux_ts_release frees it); 0 or
 * VR_ENOMEM / VR_EINVAL (not recorded). */
struct remux_ts;
int vio_out_ts(const struct vio_out *o, struct remux_ts *t, vr_err *err);

/* Bytes written to the file so far (after finish: its size). */
int64_t vio_out_bytes(const struct vio_out *o);

/* Frees and clears *o (does not delete the file); accepts NULL. */
void vio_out_free(struct vio_out **o);

/* ---- helpers ---- */

/* "name: position" text for errors: pts in seconds, or "no pts". */
void vio_fmt_pts(char *buf, size_t n, int64_t pts, AVRational tb);

/* How long stream vi of fmt is, as the file declares it, in seconds: the
 * stream's own duration, else its Matroska DURATION tag, else the
 * container's only when no other stream could outlast the video (Matroska
 * gives no per-stream duration, and its audio or subtitles often run past
 * the last frame); 0 when unknown. */
double vio_declared_duration(const AVFormatContext *fmt, int vi);

/* The truncation check both readers make (a decode here, the split in
 * remux.c), so both refuse a cut-off file with the same words: `frames`
 * frames of stream vi of fmt were read, the first at `first`
 * (AV_NOPTS_VALUE: unknown), and the last ends at `end` (pts + duration,
 * the stream's time base); VR_EFORMAT when that is well short of the
 * duration the container declares ("truncated: the video ends after frame
 * N at Xs but the container declares Ys"), 0 otherwise or when it declares
 * none. The video is measured from the stream's start time (0 when
 * unknown), or from its first frame where that is earlier: libavformat gives an 8K H.264 matte
 * of big packets (its first 5 read with no dts while it probes) the 6th
 * packet's time as its start, and the file would read as cut short. */
int vio_check_duration(const char *path, AVFormatContext *fmt, int vi, long long frames,
                       int64_t first, int64_t end, vr_err *err);

/* libav* error text. */
const char *vio_av_err(int averr, char *buf, size_t n);

#endif

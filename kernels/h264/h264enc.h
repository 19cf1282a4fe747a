/*
 * h264enc.h - the matte encoder: a grey picture (the matte, in the luma
 * plane) into H.264 that every decoder plays.
 *
 * What it writes: Constrained Baseline (profile_idc 66, constraint_set0
 * and 1), 4:2:0 with chroma a constant 128, CAVLC, a few slices a frame
 * (bands of whole MB rows, a NAL unit each, that predict nothing from each
 * other: so their wavefronts run side by side on the GPU), a fixed QP, the deblocking filter off, the level the smallest that holds
 * the frame size and rate (h264enc_level). IDR frames where the caller
 * asks (the source's keyframes: docs/notes/temporal.md, "One answer"),
 * Intra 16x16; every other frame is P with each MB's integer-pel vector
 * searched alone (+-16 pixels), then either P_Skip (its vector P_Skip's
 * and nothing to code against the reference there) or P_L0_16x16, or with
 * intra_p Intra 16x16 where that is cheaper. Frames
 * whose size is not a multiple of 16 are padded (the edge repeated) and
 * cropped in the SPS. The algorithm, its stages and why: docs/notes/h264.md;
 * the stages themselves: h264_ref.h.
 *
 * Output is Annex B (start codes): the SPS and PPS once (h264enc_headers,
 * the stream's extradata) and one access unit a frame (its slices' NAL
 * units).
 *
 * One encoder is driven by one thread.
 */
#ifndef VR_H264ENC_H
#define VR_H264ENC_H

#include "vr_err.h"

#include <stdint.h>

struct h264enc_opts {
    int w, h;                /* frame size, even, 16 .. H264ENC_MAX_DIM */
    int qp;                  /* 0 .. 51, the P frames'; an IDR's: h264enc_idr_qp */
    int fps_num, fps_den;    /* frame rate, for the level; 0/0: 60 */
    int full_range;          /* 1: the VUI says full range (a matte's 255 is exactly 1) */
    int use_gpu;             /* 1: code on CUDA device `gpu` (h264_cuda.h), else on the CPU */
    int intra_p;             /* Intra 16x16 MBs in P frames: 1 on, -1 off, 0 the default
                              * (h264enc_intra_p_default) */
    int slices;              /* slices a frame, 1 .. the MB rows ((h + 15) / 16); 0: the
                              * default (h264enc_slices_default) */
    int gpu;
};

enum { H264ENC_MAX_DIM = 8192 };

/* Frames and MBs of each kind coded so far. */
struct h264enc_stats {
    long long idr, p;              /* frames */
    long long mb_i16, mb_p16, mb_skip;
    long long graph_frames;        /* on the GPU: P frames launched as one CUDA graph */
};

struct h264enc;

/* Checks o and allocates an encoder (its buffers sized once, for the frame
 * size; on the GPU too with use_gpu). Returns 0 or VR_EINVAL naming the bad
 * option / VR_ENOMEM / VR_ENOTBUILT or VR_ECUDA (use_gpu). */
int h264enc_new(const struct h264enc_opts *o, struct h264enc **out, vr_err *err);

/* The SPS and PPS, Annex B; owned by e, valid while it lives. */
const uint8_t *h264enc_headers(const struct h264enc *e, int *size);

/* Codes one frame: luma y (w x h of the options, stride ls >= w; borrowed,
 * only read), an IDR when idr is set or nothing was coded yet. *pkt is the
 * access unit (Annex B), owned by e and valid until the next call or the
 * free; *key says it is an IDR. Returns 0 or VR_E* with the reason. */
int h264enc_frame(struct h264enc *e, const uint8_t *y, int ls, int idr, const uint8_t **pkt,
                  int *size, int *key, vr_err *err);

/* h264enc_frame with y in device memory (an encoder opened with use_gpu):
 * the matte never leaves the GPU. y must be complete when it is called: the
 * encoder works on a stream of its own that waits for no other stream, so
 * the producer synchronizes its stream (or copy) first. */
int h264enc_frame_dev(struct h264enc *e, const uint8_t *y, int ls, int idr, const uint8_t **pkt,
                      int *size, int *key, vr_err *err);

/* Asynchronous h264enc_frame / h264enc_frame_dev (y in device memory when
 * y_dev): on the GPU it queues this frame and hands back the packet of the
 * one queued before (*size 0 when there was none), so that the CPU escapes
 * frame n while the GPU codes frame n+1. y is the caller's again when it
 * returns. tag (a pts, say) comes back in *tag_out with its frame's packet.
 * On the CPU the packet is this frame's own. The packets are those of
 * h264enc_frame, byte for byte, in order; *pkt is valid until the next
 * call. After the last frame, h264enc_flush hands back the one still
 * queued (*size 0 when none); h264enc_frame refuses while one is. */
int h264enc_queue(struct h264enc *e, const uint8_t *y, int ls, int y_dev, int idr, int64_t tag,
                  const uint8_t **pkt, int *size, int *key, int64_t *tag_out, vr_err *err);
int h264enc_flush(struct h264enc *e, const uint8_t **pkt, int *size, int *key, int64_t *tag_out,
                  vr_err *err);

/* The last frame's reconstruction (luma, padded to whole MBs, stride *ls):
 * what a decoder shows for it (read back from the GPU with use_gpu; after
 * h264enc_queue, the last frame queued's). Owned
 * by e; valid until the next frame. NULL when the GPU fails to give it. */
const uint8_t *h264enc_recon(struct h264enc *e, int *ls);

void h264enc_stats(const struct h264enc *e, struct h264enc_stats *s);

/* level_idc (10 x the level: 52 for 5.2) of the smallest level whose frame
 * size and MB rate hold w x h at fps (Table A-1); 62 when none does. */
int h264enc_level(int w, int h, double fps);

/* Whether an encoder opened with intra_p 0 codes Intra 16x16 MBs in P
 * frames: VR_H264_INTRA_P=1 or 0 in the environment, else the built-in
 * default (docs/notes/h264.md, "Intra in P frames"). */
int h264enc_intra_p_default(void);

/* The slices a frame of height h has by default: with intra_p on, one a
 * 32 MB rows (512 pixels), at least one: 4 at 2048; with it off, one. It
 * depends on the size and the job's intra_p alone, so every worker of a
 * job cuts its frames alike (fleet = process). */
int h264enc_slices_default(int h, int intra_p);

/* The QP of an IDR of an encoder at QP qp: qp - 3, as x264's I frames. */
int h264enc_idr_qp(int qp);

/* 1 when e codes on a GPU (opened with use_gpu): h264enc_frame_dev takes
 * its frames in that device's memory. */
int h264enc_on_gpu(const struct h264enc *e);

/* 1 when this build has the CUDA encoder (the stages as kernels), else 0. */
int h264enc_cuda_built(void);

/* Frees and clears *e; accepts NULL. */
void h264enc_free(struct h264enc **e);

#endif

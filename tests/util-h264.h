/*
 * util-h264.h - the matte encoder's round trip for the tests and the fuzz
 * target: frames through h264enc, the stream through libavcodec's own
 * H.264 decoder (not through anything of ours), each decoded frame against
 * the encoder's reconstruction of it.
 */
#ifndef VR_T_H264_UTIL_H
#define VR_T_H264_UTIL_H

#include "h264enc.h"

#include <stddef.h>
#include <stdint.h>

/* What a round trip saw. */
struct th264_result {
    int frames_decoded;
    int luma_mismatch;     /* frames whose decoded luma differs from the recon */
    int chroma_mismatch;   /* frames whose decoded chroma is not all 128 */
    int first_bad;         /* first frame that differs, -1 if none */
    int dec_w, dec_h;      /* decoded size (the cropped size, if the SPS is right) */
    int profile, level;    /* as libavcodec read them */
    long long bytes;       /* the stream's size */
    struct h264enc_stats st;
    double psnr;           /* luma PSNR of the recon against the source, dB (99: equal) */
    /* the motion vectors libavcodec's CPU decoder read (exported: not with
     * NVDEC): blocks with a nonzero one, the largest component in pixels,
     * and the nonzero ones whose source block touches the coded picture's
     * edge */
    long long mv_nonzero, mv_at_edge;
    int mv_max;
    char err[256];         /* the first error, "" when none */
};

/* Encodes n frames at w x h, QP qp: frame i is frames + i * w * h (stride
 * w), an IDR where idr[i] (NULL: the first frame only); decodes and
 * compares. 0 when every step ran (the comparison is in r), -1 with r->err. */
int th264_roundtrip(const uint8_t *frames, int n, int w, int h, int qp, const uint8_t *idr,
                    struct th264_result *r);

/* How th264_roundtrip_with codes and decodes. */
struct th264_how {
    int gpu_encoder;   /* 1: the CUDA encoder on GPU 0 (else the C twin) */
    int nvdec;         /* 1: libavcodec's h264 decoder through its NVDEC (cuda)
                        * hwaccel on GPU 0, frames downloaded as NV12 */
    int intra_p;       /* h264enc_opts intra_p: 1 Intra 16x16 MBs in P frames,
                        * -1 none, 0 the encoder's default */
    int slices;        /* h264enc_opts slices: 0 the encoder's default */
};

/* th264_roundtrip, coded and decoded as `how` says. */
int th264_roundtrip_with(const uint8_t *frames, int n, int w, int h, int qp, const uint8_t *idr,
                         const struct th264_how *how, struct th264_result *r);

#endif

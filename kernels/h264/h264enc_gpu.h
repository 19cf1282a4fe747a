/*
 * h264enc_gpu.h - the matte encoder's frames on a GPU (h264enc.c's other
 * backend): the stages of h264_cuda.h on one stream, the packed slice data
 * copied back; the CPU writes the headers and escapes the NAL unit.
 *
 * Owned by its h264enc; one thread at a time (it sets its device on every
 * call, so any thread may drive it).
 */
#ifndef VR_H264ENC_GPU_H
#define VR_H264ENC_GPU_H

#include "vr_err.h"

#include <stdint.h>

struct h264_gpu;

/* Device buffers for w x h (mbw x mbh MBs) on GPU dev; intra_p: P frames
 * may have Intra 16x16 MBs (stages 1c, 1d). 0, VR_ENOTBUILT (a build
 * without CUDA) or VR_ECUDA naming the step. */
int h264_gpu_new(int dev, int w, int h, int mbw, int mbh, int intra_p, struct h264_gpu **out,
                 vr_err *err);

/* One frame: luma y (stride ls; in device memory when y_dev, else host),
 * IDR or P against the last frame, at qp. The slice data (every MB's bits)
 * is OR-ed into rbsp from bit hdr_bits on (rbsp zero from the byte that
 * bit is in on, but for the header's bits before it); *bits gets its
 * length, *run_end the skipped MBs after the last coded one, counts[3] the
 * MBs by type. 0 or VR_ECUDA. */
int h264_gpu_frame(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint8_t *rbsp, uint32_t hdr_bits, uint64_t *bits, uint32_t *run_end,
                   uint32_t counts[3], vr_err *err);

/* h264_gpu_frame in two halves, so that the GPU codes the next frame while
 * the CPU escapes this one: queue a frame (at most two queued; the header's
 * hdr_bits as for h264_gpu_frame), returning once its luma y is copied (y
 * is the caller's again), then collect the oldest queued frame's slice data
 * into rbsp (holding that frame's header) as h264_gpu_frame does. The
 * reference is the last frame queued. 0, VR_EINVAL (queue full or empty)
 * or VR_ECUDA. */
int h264_gpu_queue(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, vr_err *err);
int h264_gpu_collect(struct h264_gpu *g, uint8_t *rbsp, uint32_t hdr_bits, uint64_t *bits,
                     uint32_t *run_end, uint32_t counts[3], vr_err *err);

/* Frames queued and not collected yet. */
int h264_gpu_pending(const struct h264_gpu *g);

/* The last frame queued's reconstruction into host memory dst (stride
 * mbw*16). */
int h264_gpu_recon(struct h264_gpu *g, uint8_t *dst, vr_err *err);

void h264_gpu_free(struct h264_gpu **g);

#endif

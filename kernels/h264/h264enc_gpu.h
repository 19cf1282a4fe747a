/*
 * h264enc_gpu.h - the matte encoder's frames on a GPU (h264enc.c's other
 * backend): the stages of h264_cuda.h on one stream, the packed slices
 * copied back; the CPU ORs in their headers and escapes the NAL units.
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
 * may have Intra 16x16 MBs (stages 1c, 1d); slices a frame (1..mbh). 0,
 * VR_ENOTBUILT (a build without CUDA) or VR_ECUDA naming the step. */
int h264_gpu_new(int dev, int w, int h, int mbw, int mbh, int intra_p, int slices,
                 struct h264_gpu **out, vr_err *err);

/* One frame: luma y (stride ls; in device memory when y_dev, else host),
 * IDR or P against the last frame, at qp; hdr_bits: a slice header's bits
 * less first_mb_in_slice's (struct h264_frame). The packed slices (stage
 * 5's out, h264_ref.h) into rbsp (h264_rbsp_cap bytes), slice k from byte
 * sbyte[k] (sbyte[slices]: the end), its header's room zero; counts[3] the
 * MBs by type. 0 or VR_ECUDA. */
int h264_gpu_frame(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                   vr_err *err);

/* h264_gpu_frame in two halves, so that the GPU codes the next frame while
 * the CPU escapes this one: queue a frame (at most two queued; the header's
 * hdr_bits as for h264_gpu_frame), returning once its luma y is copied (y
 * is the caller's again), then collect the oldest queued frame's slice data
 * into rbsp and sbyte as h264_gpu_frame does. The
 * reference is the last frame queued. 0, VR_EINVAL (queue full or empty)
 * or VR_ECUDA. */
int h264_gpu_queue(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, vr_err *err);
int h264_gpu_collect(struct h264_gpu *g, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                     vr_err *err);

/* Frames queued and not collected yet. */
int h264_gpu_pending(const struct h264_gpu *g);

/* P frames whose stages ran as one CUDA graph (VR_H264_GRAPH, default on;
 * 0: launched one by one, as before issue 40's twelfth pass). */
long long h264_gpu_graph_frames(const struct h264_gpu *g);

/* The last frame queued's reconstruction into host memory dst (stride
 * mbw*16). */
int h264_gpu_recon(struct h264_gpu *g, uint8_t *dst, vr_err *err);

void h264_gpu_free(struct h264_gpu **g);

#endif

/*
 * h264_cuda.h - the matte encoder's stages as CUDA kernels: the twins of
 * h264_ref.h's ref_h264_* (same arguments, plus the stream), every
 * pointer of struct h264_frame (and y, out, tmp) in device memory. Launches are
 * asynchronous on `s`; each returns 0 or VR_ECUDA with the launch error in
 * err (a worker fails the chunk, never exits).
 */
#ifndef VR_H264_CUDA_H
#define VR_H264_CUDA_H

#include "h264_ref.h"
#include "vr_err.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

int cu_h264_load(const struct h264_frame *f, const uint8_t *y, int yls, int w, int h,
                 cudaStream_t s, vr_err *err);
int cu_h264_search(const struct h264_frame *f, cudaStream_t s, vr_err *err);
int cu_h264_inter(const struct h264_frame *f, cudaStream_t s, vr_err *err);
/* The IDR's stage 1; prog: mbh + 1 ints of device memory (rows' counts
 * and the blocks' ticket), cleared here on the stream. lanes 1: each MB's
 * code with its source loaded before it waits and its modes' SADs summed
 * together (intra_mb_lanes); 0: intra_mb_warp, as before issue 40's
 * eleventh pass (VR_H264_INTRA_LANES=0, for comparison). */
int cu_h264_intra(const struct h264_frame *f, int *prog, int lanes, cudaStream_t s, vr_err *err);
/* Stages 1c and 1d of a P frame (h264_ref.h: ref_h264_intra_p, ref_h264_pfix):
 * the MBs that may turn intra in one launch. lanes 1: a candidate waits
 * only for the candidates among its left, top and top-left neighbours
 * (k_intra_cands; prog: mbh + 1 + mbw * mbh ints, the last mbw * mbh
 * each MB's "done"); 0: a warp a row of MBs (the IDR's wavefront, waiting
 * only where an MB and the MB above or above left are candidates, each
 * slice from its own top row; prog as for cu_h264_intra). Then every inter
 * MB's skip and mvd, a thread an MB. */
int cu_h264_intra_p(const struct h264_frame *f, int *prog, int lanes, cudaStream_t s, vr_err *err);
int cu_h264_pfix(const struct h264_frame *f, cudaStream_t s, vr_err *err);
/* The scans' per-block scratch (tmp below, device memory): a frame has at
 * most 262144 MBs, scanned in blocks of 1024. skipruns, cavlc and scan
 * take the same tmp, in that order. */
enum { H264_SCAN_BLOCKS = 256, H264_SCAN_TMP_WORDS = 3 * H264_SCAN_BLOCKS };

int cu_h264_skipruns(const struct h264_frame *f, uint64_t *tmp, cudaStream_t s, vr_err *err);
int cu_h264_cavlc(const struct h264_frame *f, int idr, uint64_t *tmp, cudaStream_t s,
                  vr_err *err);
int cu_h264_scan(const struct h264_frame *f, uint64_t *tmp, cudaStream_t s, vr_err *err);
int cu_h264_slices(const struct h264_frame *f, int idr, cudaStream_t s, vr_err *err);
int cu_h264_clear(const struct h264_frame *f, uint8_t *out, int pad, cudaStream_t s, vr_err *err);
int cu_h264_pack(const struct h264_frame *f, uint8_t *out, int idr, cudaStream_t s, vr_err *err);

#ifdef __cplusplus
}
#endif

#endif

/*
 * pose_frame.h - the pose tier's pixel steps around its two models (issue
 * 39, people.h): the eye picture to RGB24, the detector's letterboxed
 * 224x224 input, a person's turned ROI sampled to the landmark model's
 * 256x256 input, the model's logits to a mask, and that mask pasted back
 * into a work mask. The C twins (pose_frame_ref.c) are what the CPU
 * engine runs (pose_detect.c, pose_segment.c, people_ref.c); the CUDA twins
 * (pose_frame.cu) are the CUDA backend's (people.cu).
 *
 * Every rule is spelled out below and each twin follows it to the float
 * op (no FMA contraction on either side; the ROI's cosine and sine are
 * taken on the host, by the same libm, for both): the GPU gives the C
 * twin's bits, except pose_sigmoid (the device's expf: within 1e-6).
 * Buffers are caller-owned and never aliased; the CUDA twins take device
 * pointers (the ROI struct stays on the host), enqueue on `st` and
 * return 0, or VR_ECUDA with the launch error in `err`.
 */
#ifndef VR_POSE_FRAME_H
#define VR_POSE_FRAME_H

#include "pose.h"
#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Float RGB in [0,1] (frame_preprocess_ref's eye picture) to RGB24:
 * out[i] = frame_to_u8(in[i]) for i < n. */
void pose_pic_u8_ref(const float *in, size_t n, uint8_t *out);

/* The letterbox of a w x h picture into the detector's square input (side
 * S = POSE_DET_SIZE): scale = S / max(w, h), the picture centred at
 * ox = (S - w * scale) / 2, oy likewise. pose_detect maps its boxes back
 * with the same numbers. */
static inline void pose_letterbox_fit(int w, int h, float *scale, float *ox, float *oy)
{
    const float S = (float)POSE_DET_SIZE;
    *scale = S / (float)(w > h ? w : h);
    *ox = (S - (float)w * *scale) / 2;
    *oy = (S - (float)h * *scale) / 2;
}

/* The detector's input in [224][224][3], [-1,1]: for input pixel (x, y),
 * xc = x + 0.5f; inside when ox <= xc < ox + w * scale (y likewise);
 * outside -1 (MediaPipe's black border); inside, the RGB24 picture
 * (`linesize` bytes a row) sampled bilinearly at ((xc - ox) / scale -
 * 0.5f, ...) clamped to [0, w-1] x [0, h-1] (taps at the floor and the
 * next, clamped; top = p00 + fx * (p10 - p00), bottom alike, top + fy *
 * (bottom - top)), then / 127.5f - 1. */
void pose_letterbox_ref(const uint8_t *rgb, int w, int h, int linesize, float *in);

/* The landmark model's input in [256][256][3], [0,1]: ROI pixel (u, v)
 * has its centre at (du, dv) = (((u + 0.5f) / 256 - 0.5f) * size, ...),
 * picture point x = cx + du * c - dv * s, y = cy + du * s + dv * c
 * (c, s = cosf, sinf of the angle); the picture sampled bilinearly at
 * (x - 0.5f, y - 0.5f), taps outside the picture black; the sum in the
 * order (0,0), (1,0), (0,1), (1,1) of (wx * wy) * value, then / 255. */
void pose_roi_sample_ref(const uint8_t *rgb, int w, int h, int linesize,
                         const struct pose_roi *roi, float *in);

/* out[i] = 1 / (1 + expf(-logit[i])) for i < n: the ROI's mask from the
 * landmark model's segmentation logits. */
void pose_sigmoid_ref(const float *logit, size_t n, float *out);

/* Pastes an ROI mask roi_mask [256][256] (0..1), times `weight`, into a
 * w x h mask with a max: for pixel (x, y), (dx, dy) = (x + 0.5f - cx,
 * y + 0.5f - cy), u = (dx * c + dy * s) / size + 0.5f, v = (-dx * s + dy
 * * c) / size + 0.5f; where 0 <= u, v < 1, the mask sampled bilinearly
 * at (u * 256 - 0.5f, v * 256 - 0.5f), taps clamped to the mask, summed
 * as pose_roi_sample_ref's, times weight; mask = max(mask, that). Pixels
 * outside the ROI are not touched. */
void pose_paste_ref(const struct pose_roi *roi, const float *roi_mask, float weight, int w,
                    int h, float *mask);

#ifdef VR_HAVE_CUDA
#include <cuda_runtime.h>

int pose_pic_u8_cuda(const float *in, size_t n, uint8_t *out, cudaStream_t st, vr_err *err);
int pose_letterbox_cuda(const uint8_t *rgb, int w, int h, int linesize, float *in,
                        cudaStream_t st, vr_err *err);
int pose_roi_sample_cuda(const uint8_t *rgb, int w, int h, int linesize,
                         const struct pose_roi *roi, float *in, cudaStream_t st, vr_err *err);
int pose_sigmoid_cuda(const float *logit, size_t n, float *out, cudaStream_t st, vr_err *err);
int pose_paste_cuda(const struct pose_roi *roi, const float *roi_mask, float weight, int w,
                    int h, float *mask, cudaStream_t st, vr_err *err);
#endif

#ifdef __cplusplus
}
#endif

#endif

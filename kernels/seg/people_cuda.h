/*
 * people_cuda.h - the people tier (people.h, `people: "pose"`) in the CUDA
 * backend: the same steps as the CPU engine's people_ref.c, each eye of each
 * frame in order, with the eye picture, the detector's and the landmark
 * model's inputs, their nets, the masks and their paste on the GPU
 * (pose_frame.h's CUDA twins, net_cuda.h) and the small decisions on the
 * host (pose_detections' anchors and NMS, people_track.h's window) from
 * the detector's outputs and the landmark model's presence scores, copied
 * back. An eye costs two or three waits for the stream: after the
 * detector (every crop in one batch), after the seen ROIs (one batch) and
 * after the confirmed and carried ones (one batch).
 *
 * The matte equals the CPU engine's within the u8 step frame_preprocess's
 * twins may differ by and float rounding in the nets (g_seg_people_cuda).
 * Only built with nvcc (VR_HAVE_CUDA).
 */
#ifndef VR_PEOPLE_CUDA_H
#define VR_PEOPLE_CUDA_H

#include "frame_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "config.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct people_cu;

/* Loads both pose models (found with vr_data_path), makes their nets on
 * the current device (float32) and sizes every buffer for the plan's
 * eyes (frame pixels, n_eyes <= FRAME_CU_MAX_EYES, all of eye[0]'s size or
 * smaller, as people_create sizes them). *bytes, when not NULL, gets the
 * device memory held. */
int people_cu_create(const struct vr_config *cfg, const struct frame_rect *eye, int n_eyes,
                     struct people_cu **out, size_t *bytes, vr_err *err);

/* people_eye of the CUDA backend: eye e of frame f of the batch fb (device
 * planes), its work mask `work` (device, ww x wh) lifted to each pasted ROI
 * mask with a max, on `st`. Waits for the stream (the host decides from
 * the nets' small outputs). *found, when not NULL, gets the count of
 * people pasted. */
int people_cu_eye(struct people_cu *p, int e, const struct frame_batch *fb, int f, float *work,
                  int ww, int wh, int *found, cudaStream_t st, vr_err *err);

/* Empties the windows of past frames (a new video). */
void people_cu_reset(struct people_cu *p);

/* Frees and clears *p; accepts NULL and a half-built one. */
void people_cu_free(struct people_cu **p);

#ifdef __cplusplus
}
#endif

#endif

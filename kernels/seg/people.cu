/*
 * people.cu - the people tier in the CUDA backend (people_cuda.h):
 * people_ref.c's steps, in its order, around the GPU's kernels and nets.
 */
#include "people_cuda.h" /* first: frame_cuda.h brings the C headers in with C linkage */
extern "C" {
#include "model.h"
#include "paths.h"
#include "people.h"
#include "pose_frame.h"
}
#include "net_cuda.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define DET_IN   ((size_t)POSE_DET_SIZE * POSE_DET_SIZE * 3)
#define DET_REG  ((size_t)POSE_ANCHORS * POSE_COORDS)
#define SEG_PX   ((size_t)POSE_SEG_SIZE * POSE_SEG_SIZE)
#define SEG_MAX  (2 * PEOPLE_MAX) /* landmark runs of one batch: confirmed + carried */

struct people_cu {
    struct model *mdet, *mseg;
    struct netcu *det, *seg;
    struct vr_config cfg;            /* its people_grid and zooms lay out the crops */
    int max_crops;                   /* detector inputs an eye at most: the net's batch */
    int pw_max, ph_max;              /* the eye picture's largest size */
    int n_eyes;
    struct frame_rect eye[FRAME_CU_MAX_EYES]; /* frame pixels */
    struct frame_rect *d_eye;        /* the same on the device */
    float *d_fpic;                   /* [ph][pw][3] in [0,1] */
    uint8_t *d_pic;                  /* the same as RGB24 */
    float *d_det_in;                 /* [max_crops][224][224][3] */
    float *d_reg, *d_logit;          /* the detector's outputs, [max_crops] each */
    float *h_reg, *h_logit;          /* pinned copies */
    float *d_seg_in;                 /* [SEG_MAX][256][256][3] */
    float *d_seg_out[POSE_SEG_OUTPUTS]; /* the landmark model's outputs, [SEG_MAX] each */
    float *d_mask;                   /* [SEG_MAX][256][256]: sigmoid of the logits */
    float *h_presence;               /* pinned, [SEG_MAX] */
    struct pose_person scratch[POSE_ANCHORS];
    struct pose_person cand[POSE_MAX_PEOPLE * PEOPLE_CROPS_ALL];
    struct people_window win[PEOPLE_EYES];
};

static int cu_fail(cudaError_t e, const char *what, vr_err *err)
{
    return vr_err_set(err, VR_ECUDA, "people (cuda): %s: %s", what, cudaGetErrorString(e));
}

static int dev_alloc(void **ptr, size_t bytes, size_t *held, const char *what, vr_err *err)
{
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e != cudaSuccess) {
        *ptr = NULL;
        return vr_err_set(err, VR_ENOMEM, "people (cuda): cannot allocate %zu MB for %s: %s",
                          bytes >> 20, what, cudaGetErrorString(e));
    }
    *held += bytes;
    return 0;
}

static int load_net(const char *rel, int batch, struct model **m, struct netcu **net,
                    vr_err *err)
{
    char path[4096];
    if (vr_data_path(rel, path, sizeof path) != 0)
        return vr_err_set(err, VR_ENOENT, "people (cuda): no %s (set VR_DATA_DIR to the "
                          "directory holding models/)", rel);
    int rc = model_load(path, m, err);
    if (rc < 0)
        return rc;
    /* float32 (the CPU engine's), fused steps without the stage kernels
     * (fused 1: the pose nets' pointwise + depthwise pairs, 5x5 windows
     * at 56x56, run slower as one stage kernel: the detector at 81 crops
     * 6.6 ms against 6.8, H200), no graph: batch sizes vary from call to
     * call (g_net_pose: within 2e-4 of the CPU) */
    struct netcu_opts o = { batch, 0, 1, 0, 0, 0, 0 };
    return netcu_create_outputs(*m, &o, net, err);
}

int people_cu_create(const struct vr_config *cfg, const struct frame_rect *eye, int n_eyes,
                     struct people_cu **out, size_t *bytes, vr_err *err)
{
    *out = NULL;
    if (n_eyes < 1 || n_eyes > FRAME_CU_MAX_EYES || n_eyes > PEOPLE_EYES)
        return vr_err_set(err, VR_EINVAL, "people (cuda): %d eyes", n_eyes);
    struct people_cu *p = (struct people_cu *)calloc(1, sizeof *p);
    if (!p)
        return vr_err_set(err, VR_ENOMEM, "people (cuda): out of memory");
    size_t held = 0;
    int rc;
    cudaError_t e;
    /* the zoomed crops ride in the detector's one batch */
    p->max_crops = people_crops_max(cfg, people_split(cfg, n_eyes));
    const size_t mc = (size_t)p->max_crops;
    if ((rc = load_net("models/pose_detection.tflite", p->max_crops, &p->mdet, &p->det, err)) < 0
        || (rc = load_net("models/pose_landmark_lite.tflite", SEG_MAX, &p->mseg, &p->seg,
                          err)) < 0)
        goto fail;
    if (p->mdet->in_w != POSE_DET_SIZE || p->mdet->in_h != POSE_DET_SIZE
        || netcu_output_count(p->det, 0) != DET_REG
        || netcu_output_count(p->det, 1) != POSE_ANCHORS
        || p->mseg->in_w != POSE_SEG_SIZE || p->mseg->in_h != POSE_SEG_SIZE
        || p->mseg->n_outputs != POSE_SEG_OUTPUTS
        || netcu_output_count(p->seg, POSE_SEG_OUT_MASK) != SEG_PX
        || netcu_output_count(p->seg, POSE_SEG_OUT_PRESENCE) != 1) {
        rc = vr_err_set(err, VR_EFORMAT, "people (cuda): the pose models' inputs or outputs "
                        "are not MediaPipe Pose's");
        goto fail;
    }
    p->cfg = *cfg;
    p->n_eyes = n_eyes;
    memcpy(p->eye, eye, n_eyes * sizeof *eye);
    people_pic_max(cfg, eye[0].w, eye[0].h, &p->pw_max, &p->ph_max);
    {
        const size_t pic = (size_t)p->pw_max * p->ph_max * 3;
        if ((rc = dev_alloc((void **)&p->d_eye, n_eyes * sizeof *p->d_eye, &held, "eyes", err)) < 0
            || (rc = dev_alloc((void **)&p->d_fpic, pic * sizeof(float), &held, "picture", err)) < 0
            || (rc = dev_alloc((void **)&p->d_pic, pic, &held, "picture", err)) < 0
            || (rc = dev_alloc((void **)&p->d_det_in, mc * DET_IN * sizeof(float),
                               &held, "detector input", err)) < 0
            || (rc = dev_alloc((void **)&p->d_reg, mc * DET_REG * sizeof(float), &held,
                               "detector output", err)) < 0
            || (rc = dev_alloc((void **)&p->d_logit, mc * POSE_ANCHORS * sizeof(float),
                               &held, "detector output", err)) < 0
            || (rc = dev_alloc((void **)&p->d_seg_in, SEG_MAX * SEG_PX * 3 * sizeof(float), &held,
                               "landmark input", err)) < 0
            || (rc = dev_alloc((void **)&p->d_mask, SEG_MAX * SEG_PX * sizeof(float), &held,
                               "masks", err)) < 0)
            goto fail;
        for (int k = 0; k < POSE_SEG_OUTPUTS; k++)
            if ((rc = dev_alloc((void **)&p->d_seg_out[k],
                                SEG_MAX * netcu_output_count(p->seg, k) * sizeof(float), &held,
                                "landmark output", err)) < 0)
                goto fail;
    }
    if ((e = cudaMallocHost((void **)&p->h_reg, mc * DET_REG * sizeof(float)))
            != cudaSuccess
        || (e = cudaMallocHost((void **)&p->h_logit, mc * POSE_ANCHORS * sizeof(float)))
               != cudaSuccess
        || (e = cudaMallocHost((void **)&p->h_presence, SEG_MAX * sizeof(float))) != cudaSuccess
        || (e = cudaMemcpy(p->d_eye, eye, n_eyes * sizeof *eye, cudaMemcpyHostToDevice))
               != cudaSuccess) {
        rc = cu_fail(e, "host buffers", err);
        goto fail;
    }
    held += netcu_device_bytes(p->det) + netcu_device_bytes(p->seg);
    if (bytes)
        *bytes = held;
    *out = p;
    return 0;
fail:
    people_cu_free(&p);
    return rc;
}

void people_cu_reset(struct people_cu *p)
{
    for (int e = 0; p && e < PEOPLE_EYES; e++)
        people_window_reset(&p->win[e]);
}

void people_cu_free(struct people_cu **pp)
{
    struct people_cu *p = pp ? *pp : NULL;
    if (!p)
        return;
    netcu_free(&p->det);
    netcu_free(&p->seg);
    model_free(&p->mdet);
    model_free(&p->mseg);
    void *dev[] = { p->d_eye, p->d_fpic, p->d_pic, p->d_det_in, p->d_reg, p->d_logit,
                    p->d_seg_in, p->d_mask };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        cudaFree(dev[i]);
    for (int k = 0; k < POSE_SEG_OUTPUTS; k++)
        cudaFree(p->d_seg_out[k]);
    cudaFreeHost(p->h_reg);
    cudaFreeHost(p->h_logit);
    cudaFreeHost(p->h_presence);
    free(p);
    *pp = NULL;
}

/* people_ref.c's detect_all: every crop of eye `eye` (the zoomed ones too)
 * letterboxed and detected in one batch, the outputs decoded on the host;
 * returns the merged count. */
static int detect_all(struct people_cu *p, int eye, int pw, int ph, cudaStream_t st, vr_err *err)
{
    struct frame_rect crop[PEOPLE_CROPS_ALL];
    int plain;
    const int nc = people_crops_all(pw, ph, &p->cfg, people_split(&p->cfg, p->n_eyes), eye, crop,
                                    &plain);
    int rc;
    for (int q = 0; q < nc; q++)
        if ((rc = pose_letterbox_cuda(p->d_pic + ((size_t)crop[q].y * pw + crop[q].x) * 3,
                                      crop[q].w, crop[q].h, pw * 3, p->d_det_in + q * DET_IN, st,
                                      err)) < 0)
            return rc;
    float *outs[2] = { p->d_reg, p->d_logit };
    if ((rc = netcu_run_outputs(p->det, p->d_det_in, nc, outs, st, err)) < 0)
        return vr_err_prefix(err, "people (cuda): detector");
    cudaError_t e;
    if ((e = cudaMemcpyAsync(p->h_reg, p->d_reg, nc * DET_REG * sizeof(float),
                             cudaMemcpyDeviceToHost, st)) != cudaSuccess
        || (e = cudaMemcpyAsync(p->h_logit, p->d_logit, nc * POSE_ANCHORS * sizeof(float),
                                cudaMemcpyDeviceToHost, st)) != cudaSuccess
        || (e = cudaStreamSynchronize(st)) != cudaSuccess)
        return cu_fail(e, "detector", err);
    int n = 0;
    for (int q = 0; q < nc; q++) {
        const int room = (int)(sizeof p->cand / sizeof p->cand[0]) - n;
        if (room <= 0)
            break;
        const int k = pose_detections(p->h_reg + q * DET_REG, p->h_logit + q * POSE_ANCHORS,
                                      crop[q].w, crop[q].h, p->scratch, p->cand + n,
                                      room < POSE_MAX_PEOPLE ? room : POSE_MAX_PEOPLE);
        n += people_crop_found(p->cand + n, k, &crop[q], q >= plain);
    }
    return pose_nms(p->cand, n, 0.3f);
}

/* The landmark model on n ROIs of the eye picture (picture pixels), one
 * batch; the presence scores into p->h_presence (waits), the masks
 * (sigmoid) into p->d_mask. */
static int segment(struct people_cu *p, int pw, int ph, const struct pose_roi *r, int n,
                   cudaStream_t st, vr_err *err)
{
    int rc;
    for (int i = 0; i < n; i++) {
        if (!(r[i].size > 0) || !(r[i].size < 8.0f * MODEL_MAX_DIM) || !isfinite(r[i].cx)
            || !isfinite(r[i].cy) || !isfinite(r[i].angle))
            return vr_err_set(err, VR_EINVAL, "people (cuda): bad ROI");
        if ((rc = pose_roi_sample_cuda(p->d_pic, pw, ph, pw * 3, &r[i],
                                       p->d_seg_in + i * SEG_PX * 3, st, err)) < 0)
            return rc;
    }
    if ((rc = netcu_run_outputs(p->seg, p->d_seg_in, n, p->d_seg_out, st, err)) < 0)
        return vr_err_prefix(err, "people (cuda): landmark model");
    if ((rc = pose_sigmoid_cuda(p->d_seg_out[POSE_SEG_OUT_MASK], n * SEG_PX, p->d_mask, st,
                                err)) < 0)
        return rc;
    cudaError_t e;
    if ((e = cudaMemcpyAsync(p->h_presence, p->d_seg_out[POSE_SEG_OUT_PRESENCE],
                             n * sizeof(float), cudaMemcpyDeviceToHost, st)) != cudaSuccess
        || (e = cudaStreamSynchronize(st)) != cudaSuccess)
        return cu_fail(e, "landmark model", err);
    return 0;
}

int people_cu_eye(struct people_cu *p, int e, const struct frame_batch *fb, int f, float *work,
                  int ww, int wh, int *found, cudaStream_t st, vr_err *err)
{
    if (found)
        *found = 0;
    if (e < 0 || e >= p->n_eyes || f < 0 || f >= fb->n)
        return vr_err_set(err, VR_EINVAL, "people (cuda): eye %d of frame %d", e, f);
    int pw, ph, rc;
    people_pic_size(p->pw_max, p->ph_max, p->eye[e], &pw, &ph);
    /* the eye picture: frame f alone as a batch of one */
    static struct frame_batch one_zero;
    struct frame_batch one = one_zero;
    one.n = 1;
    one.fmt = fb->fmt;
    one.full_range = fb->full_range;
    for (int q = 0; q < 3; q++) {
        one.data[0][q] = fb->data[f][q];
        one.linesize[0][q] = fb->linesize[f][q];
    }
    if ((rc = frame_preprocess_batch_cuda(&one, p->d_eye + e, 1, pw, ph, p->d_fpic, st, err)) < 0
        || (rc = pose_pic_u8_cuda(p->d_fpic, (size_t)pw * ph * 3, p->d_pic, st, err)) < 0)
        return rc;
    int n = detect_all(p, e, pw, ph, st, err);
    if (n < 0)
        return n;
    n = n > PEOPLE_MAX ? PEOPLE_MAX : n;
    /* seen(t): the detector's ROIs whose own mask says present */
    struct pose_roi seen[PEOPLE_MAX];
    int ns = 0;
    for (int i = 0; i < n; i++)
        ns += people_roi_of(&p->cand[i], pw, ph, &seen[ns]);
    if (ns && (rc = segment(p, pw, ph, seen, ns, st, err)) < 0)
        return rc;
    struct people_window *win = &p->win[e];
    struct people_seen now = { 0 };
    struct pose_roi paste[SEG_MAX];
    float weight[SEG_MAX];
    int np = 0;
    for (int i = 0; i < ns; i++) {
        if (!(p->h_presence[i] >= PEOPLE_PRESENCE))
            continue;
        now.roi[now.n++] = seen[i];
        if (!people_confirmed(win, &seen[i]))
            continue;
        people_smoothed(win, &seen[i], &paste[np]); /* pasted at the smoothed ROI */
        weight[np++] = 1.0f;
    }
    /* the window's people this frame missed, segmented on this frame */
    np += people_carried(win, &now, paste + np, weight + np, PEOPLE_MAX);
    if (np && (rc = segment(p, pw, ph, paste, np, st, err)) < 0)
        return rc;
    const float sx = (float)ww / pw, sy = (float)wh / ph;
    int kept = 0;
    for (int i = 0; i < np; i++) {
        if (!(p->h_presence[i] >= PEOPLE_PRESENCE) || weight[i] <= 0)
            continue;
        /* straight into the work mask: a max, as people_ref.c's pasted mask
         * then max into work gives (work >= 0) */
        struct pose_roi r = paste[i];
        people_roi_to_work(&r, sx, sy);
        if ((rc = pose_paste_cuda(&r, p->d_mask + i * SEG_PX, weight[i], ww, wh, work, st,
                                  err)) < 0)
            return rc;
        kept++;
    }
    people_window_push(win, &now);
    if (found)
        *found = kept;
    return 0;
}

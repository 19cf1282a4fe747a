/*
 * pose_segment.c - a person's ROI through MediaPipe Pose's landmark model
 * (pose.h): the ROI from the detector's keypoints
 * (pose_detection_to_roi.pbtxt: AlignmentPointsRectsCalculator on
 * keypoints 0 and 1, target angle 90 degrees, then RectTransformation
 * scale 1.25, square), sampled into the 256x256 input, the model run on
 * the CPU engine (net.h), its segmentation logits (third output,
 * Identity_2) turned into a 0..1 mask (the pixel steps: pose_frame.h).
 */
#include "pose.h"

#include "model.h"
#include "net.h"
#include "pose_frame.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


struct pose_segmenter {
    struct model *m;
    struct net *net;
    float *in;
    float *outs[POSE_SEG_OUTPUTS];
};

void pose_roi_from_person(const struct pose_person *p, struct pose_roi *roi)
{
    const float dx = p->kp[1][0] - p->kp[0][0], dy = p->kp[1][1] - p->kp[0][1];
    float a = (float)M_PI / 2 - atan2f(-dy, dx);
    a -= 2 * (float)M_PI * floorf((a + (float)M_PI) / (2 * (float)M_PI)); /* to [-pi, pi) */
    roi->cx = p->kp[0][0];
    roi->cy = p->kp[0][1];
    roi->size = 2.0f * hypotf(dx, dy) * 1.25f;
    roi->angle = a;
}

int pose_segmenter_create(const char *model_path, struct pose_segmenter **out, vr_err *err)
{
    *out = NULL;
    struct pose_segmenter *s = calloc(1, sizeof *s);
    if (!s)
        return vr_err_set(err, VR_ENOMEM, "pose: out of memory");
    int rc = model_load(model_path, &s->m, err);
    if (rc)
        goto fail;
    if (s->m->in_h != POSE_SEG_SIZE || s->m->in_w != POSE_SEG_SIZE || s->m->in_c != 3 ||
        s->m->n_outputs != POSE_SEG_OUTPUTS) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: not a pose landmark model (input %dx%dx%d, %d "
                        "outputs; 256x256x3 and 5 expected)", model_path, s->m->in_h,
                        s->m->in_w, s->m->in_c, s->m->n_outputs);
        goto fail;
    }
    if ((rc = net_create_outputs(s->m, 1, &s->net, err)))
        goto fail;
    if (net_output_count(s->net, POSE_SEG_OUT_MASK) != (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE ||
        net_output_count(s->net, POSE_SEG_OUT_PRESENCE) != 1) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: output 2 is not a 256x256 mask or output 1 "
                        "not one score", model_path);
        goto fail;
    }
    s->in = malloc((size_t)POSE_SEG_SIZE * POSE_SEG_SIZE * 3 * sizeof *s->in);
    if (!s->in)
        goto nomem;
    for (int k = 0; k < POSE_SEG_OUTPUTS; k++)
        if (!(s->outs[k] = malloc(net_output_count(s->net, k) * sizeof(float))))
            goto nomem;
    *out = s;
    return 0;
nomem:
    rc = vr_err_set(err, VR_ENOMEM, "pose: out of memory");
fail:
    pose_segmenter_free(&s);
    return rc;
}

void pose_segmenter_free(struct pose_segmenter **ps)
{
    struct pose_segmenter *s = ps ? *ps : NULL;
    if (!s)
        return;
    net_free(&s->net);
    model_free(&s->m);
    free(s->in);
    for (int k = 0; k < POSE_SEG_OUTPUTS; k++)
        free(s->outs[k]);
    free(s);
    *ps = NULL;
}

int pose_segment(struct pose_segmenter *s, const uint8_t *rgb, int w, int h, int linesize,
                 const struct pose_roi *roi, float *roi_mask, float *presence, vr_err *err)
{
    if (!s || !rgb || !roi || !roi_mask || w < 1 || h < 1 || w > MODEL_MAX_DIM ||
        h > MODEL_MAX_DIM || linesize < 3 * w || !(roi->size > 0) ||
        !(roi->size < 8.0f * MODEL_MAX_DIM) || !isfinite(roi->cx) || !isfinite(roi->cy) ||
        !isfinite(roi->angle))
        return vr_err_set(err, VR_EINVAL, "pose_segment: bad picture %dx%d or ROI", w, h);
    pose_roi_sample_ref(rgb, w, h, linesize, roi, s->in);
    int rc = net_run_outputs(s->net, s->in, 1, s->outs, err);
    if (rc)
        return rc;
    pose_sigmoid_ref(s->outs[POSE_SEG_OUT_MASK], (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE, roi_mask);
    if (presence)
        *presence = s->outs[POSE_SEG_OUT_PRESENCE][0];
    return 0;
}

/*
 * pose_detect.c - the pose tier's person detector (pose.h): the picture
 * letterboxed into pose_detection.tflite's 224x224 input, the net run on
 * the CPU engine (net.h, float32 C twins), its outputs decoded and
 * suppressed (pose_decode.c), the coordinates mapped back to the picture.
 */
#include "pose.h"

#include "model.h"
#include "net.h"
#include "pose_frame.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pose_detector {
    struct model *m;
    struct net *net;
    float *in;                              /* [224][224][3] */
    float *reg, *logit;                     /* the two outputs */
    struct pose_person cand[POSE_ANCHORS];  /* before suppression */
};

int pose_detector_create(const char *model_path, struct pose_detector **out, vr_err *err)
{
    *out = NULL;
    struct pose_detector *d = calloc(1, sizeof *d);
    if (!d)
        return vr_err_set(err, VR_ENOMEM, "pose: out of memory");
    int rc = model_load(model_path, &d->m, err);
    if (rc)
        goto fail;
    const struct model *m = d->m;
    if (m->in_h != POSE_DET_SIZE || m->in_w != POSE_DET_SIZE || m->in_c != 3 ||
        m->n_outputs != 2) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: not the pose detector (input %dx%dx%d, %d "
                        "outputs; 224x224x3 and 2 expected)", model_path, m->in_h, m->in_w,
                        m->in_c, m->n_outputs);
        goto fail;
    }
    if ((rc = net_create_outputs(m, 1, &d->net, err)))
        goto fail;
    if (net_output_count(d->net, 0) != (size_t)POSE_ANCHORS * POSE_COORDS ||
        net_output_count(d->net, 1) != POSE_ANCHORS) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: outputs of %zu and %zu values, %d and %d "
                        "expected", model_path, net_output_count(d->net, 0),
                        net_output_count(d->net, 1), POSE_ANCHORS * POSE_COORDS, POSE_ANCHORS);
        goto fail;
    }
    d->in = malloc((size_t)POSE_DET_SIZE * POSE_DET_SIZE * 3 * sizeof *d->in);
    d->reg = malloc((size_t)POSE_ANCHORS * POSE_COORDS * sizeof *d->reg);
    d->logit = malloc((size_t)POSE_ANCHORS * sizeof *d->logit);
    if (!d->in || !d->reg || !d->logit) {
        rc = vr_err_set(err, VR_ENOMEM, "pose: out of memory");
        goto fail;
    }
    *out = d;
    return 0;
fail:
    pose_detector_free(&d);
    return rc;
}

void pose_detector_free(struct pose_detector **pd)
{
    struct pose_detector *d = pd ? *pd : NULL;
    if (!d)
        return;
    net_free(&d->net);
    model_free(&d->m);
    free(d->in);
    free(d->reg);
    free(d->logit);
    free(d);
    *pd = NULL;
}

int pose_detect(struct pose_detector *d, const uint8_t *rgb, int w, int h, int linesize,
                struct pose_person *out, int max, int *n, vr_err *err)
{
    *n = 0;
    if (!d || !rgb || !out || max < 0 || w < 1 || h < 1 || w > MODEL_MAX_DIM ||
        h > MODEL_MAX_DIM || linesize < 3 * w)
        return vr_err_set(err, VR_EINVAL, "pose_detect: bad picture %dx%d (linesize %d)", w,
                          h, linesize);
    pose_letterbox_ref(rgb, w, h, linesize, d->in);
    float *outs[2] = { d->reg, d->logit };
    int rc = net_run_outputs(d->net, d->in, 1, outs, err);
    if (rc)
        return rc;
    const int k = pose_detections(d->reg, d->logit, w, h, d->cand, out, max);
    *n = k;
    return 0;
}

int pose_detections(const float *regressors, const float *logits, int w, int h,
                    struct pose_person *cand, struct pose_person *out, int max)
{
    const float S = (float)POSE_DET_SIZE;
    float scale, ox, oy;
    pose_letterbox_fit(w, h, &scale, &ox, &oy);
    int k = pose_decode(regressors, logits, 0.5f, cand, POSE_ANCHORS);
    k = pose_nms(cand, k, 0.3f);
    if (k > max)
        k = max;
    /* From the square's [0,1] back to the picture's pixels. */
    for (int i = 0; i < k; i++) {
        struct pose_person p = cand[i];
        p.x0 = (p.x0 * S - ox) / scale;
        p.x1 = (p.x1 * S - ox) / scale;
        p.y0 = (p.y0 * S - oy) / scale;
        p.y1 = (p.y1 * S - oy) / scale;
        for (int j = 0; j < 4; j++) {
            p.kp[j][0] = (p.kp[j][0] * S - ox) / scale;
            p.kp[j][1] = (p.kp[j][1] * S - oy) / scale;
        }
        out[i] = p;
    }
    return k;
}

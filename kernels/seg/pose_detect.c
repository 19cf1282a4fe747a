/*
 * pose_detect.c - the pose tier's person detector (pose.h): the picture
 * letterboxed into pose_detection.tflite's 224x224 input, the net run on
 * the CPU engine (net.h, float32 C twins), its outputs decoded and
 * suppressed (pose_decode.c), the coordinates mapped back to the picture.
 */
#include "pose.h"

#include "model.h"
#include "net.h"

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

/* Bilinear sample of channel c at (x, y) in source pixels (centres at
 * integers), edges clamped. */
static float sample(const uint8_t *rgb, int w, int h, int ls, float x, float y, int c)
{
    x = fminf(fmaxf(x, 0.0f), (float)(w - 1));
    y = fminf(fmaxf(y, 0.0f), (float)(h - 1));
    const int x0 = (int)x, y0 = (int)y;
    const int x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
    const float fx = x - (float)x0, fy = y - (float)y0;
    const uint8_t *r0 = rgb + (size_t)y0 * ls, *r1 = rgb + (size_t)y1 * ls;
    const float top = r0[x0 * 3 + c] + fx * (r0[x1 * 3 + c] - r0[x0 * 3 + c]);
    const float bot = r1[x0 * 3 + c] + fx * (r1[x1 * 3 + c] - r1[x0 * 3 + c]);
    return top + fy * (bot - top);
}

/* The picture scaled by `scale` into the square input at offset (ox, oy);
 * outside it black, as MediaPipe's zero border: -1 in [-1,1]. */
static void letterbox(float *in, const uint8_t *rgb, int w, int h, int ls, float scale,
                      float ox, float oy)
{
    const int S = POSE_DET_SIZE;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            float *px = in + ((size_t)y * S + x) * 3;
            const float sx = ((float)x + 0.5f - ox) / scale - 0.5f;
            const float sy = ((float)y + 0.5f - oy) / scale - 0.5f;
            const int inside = (float)x + 0.5f >= ox && (float)x + 0.5f < ox + w * scale &&
                               (float)y + 0.5f >= oy && (float)y + 0.5f < oy + h * scale;
            for (int c = 0; c < 3; c++)
                px[c] = inside ? sample(rgb, w, h, ls, sx, sy, c) / 127.5f - 1.0f : -1.0f;
        }
}

int pose_detect(struct pose_detector *d, const uint8_t *rgb, int w, int h, int linesize,
                struct pose_person *out, int max, int *n, vr_err *err)
{
    *n = 0;
    if (!d || !rgb || !out || max < 0 || w < 1 || h < 1 || w > MODEL_MAX_DIM ||
        h > MODEL_MAX_DIM || linesize < 3 * w)
        return vr_err_set(err, VR_EINVAL, "pose_detect: bad picture %dx%d (linesize %d)", w,
                          h, linesize);
    const float S = (float)POSE_DET_SIZE;
    const float scale = S / (float)(w > h ? w : h);
    const float ox = (S - w * scale) / 2, oy = (S - h * scale) / 2;
    letterbox(d->in, rgb, w, h, linesize, scale, ox, oy);
    float *outs[2] = { d->reg, d->logit };
    int rc = net_run_outputs(d->net, d->in, 1, outs, err);
    if (rc)
        return rc;
    int k = pose_decode(d->reg, d->logit, 0.5f, d->cand, POSE_ANCHORS);
    k = pose_nms(d->cand, k, 0.3f);
    if (k > max)
        k = max;
    /* From the square's [0,1] back to the picture's pixels. */
    for (int i = 0; i < k; i++) {
        struct pose_person p = d->cand[i];
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
    *n = k;
    return 0;
}

/*
 * pose_segment.c - a person's ROI through MediaPipe Pose's landmark model
 * (pose.h): the ROI from the detector's keypoints
 * (pose_detection_to_roi.pbtxt: AlignmentPointsRectsCalculator on
 * keypoints 0 and 1, target angle 90 degrees, then RectTransformation
 * scale 1.25, square), sampled into the 256x256 input, the model run on
 * the CPU engine (net.h), its segmentation logits (third output,
 * Identity_2) turned into a 0..1 mask, and the mask pasted back into the
 * picture through the same rotation.
 */
#include "pose.h"

#include "model.h"
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEG_OUT_PRESENCE 1  /* [1,1], already a sigmoid */
#define SEG_OUT_MASK     2  /* [1,256,256,1] logits */

struct pose_segmenter {
    struct model *m;
    struct net *net;
    float *in;
    float *outs[5];
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
        s->m->n_outputs != 5) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: not a pose landmark model (input %dx%dx%d, %d "
                        "outputs; 256x256x3 and 5 expected)", model_path, s->m->in_h,
                        s->m->in_w, s->m->in_c, s->m->n_outputs);
        goto fail;
    }
    if ((rc = net_create_outputs(s->m, 1, &s->net, err)))
        goto fail;
    if (net_output_count(s->net, SEG_OUT_MASK) != (size_t)POSE_SEG_SIZE * POSE_SEG_SIZE ||
        net_output_count(s->net, SEG_OUT_PRESENCE) != 1) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: output 2 is not a 256x256 mask or output 1 "
                        "not one score", model_path);
        goto fail;
    }
    s->in = malloc((size_t)POSE_SEG_SIZE * POSE_SEG_SIZE * 3 * sizeof *s->in);
    if (!s->in)
        goto nomem;
    for (int k = 0; k < 5; k++)
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
    for (int k = 0; k < 5; k++)
        free(s->outs[k]);
    free(s);
    *ps = NULL;
}

/* ROI coordinates (u, v) in [0,1]^2 to picture pixels (centres at .5). */
static void roi_to_pic(const struct pose_roi *r, float u, float v, float *x, float *y)
{
    const float dx = (u - 0.5f) * r->size, dy = (v - 0.5f) * r->size;
    const float c = cosf(r->angle), s = sinf(r->angle);
    *x = r->cx + dx * c - dy * s;
    *y = r->cy + dx * s + dy * c;
}

static float bilinear_u8(const uint8_t *rgb, int w, int h, int ls, float x, float y, int c)
{
    const int x0 = (int)floorf(x), y0 = (int)floorf(y);
    const float fx = x - (float)x0, fy = y - (float)y0;
    float v = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            const int xx = x0 + i, yy = y0 + j;
            if (xx < 0 || yy < 0 || xx >= w || yy >= h)
                continue; /* black outside the picture */
            v += (i ? fx : 1 - fx) * (j ? fy : 1 - fy) * rgb[(size_t)yy * ls + xx * 3 + c];
        }
    return v;
}

int pose_segment(struct pose_segmenter *s, const uint8_t *rgb, int w, int h, int linesize,
                 const struct pose_roi *roi, float *roi_mask, float *presence, vr_err *err)
{
    if (!s || !rgb || !roi || !roi_mask || w < 1 || h < 1 || w > MODEL_MAX_DIM ||
        h > MODEL_MAX_DIM || linesize < 3 * w || !(roi->size > 0) ||
        !(roi->size < 8.0f * MODEL_MAX_DIM) || !isfinite(roi->cx) || !isfinite(roi->cy) ||
        !isfinite(roi->angle))
        return vr_err_set(err, VR_EINVAL, "pose_segment: bad picture %dx%d or ROI", w, h);
    const int S = POSE_SEG_SIZE;
    for (int v = 0; v < S; v++)
        for (int u = 0; u < S; u++) {
            float x, y;
            roi_to_pic(roi, ((float)u + 0.5f) / S, ((float)v + 0.5f) / S, &x, &y);
            float *px = s->in + ((size_t)v * S + u) * 3;
            for (int c = 0; c < 3; c++)
                px[c] = bilinear_u8(rgb, w, h, linesize, x - 0.5f, y - 0.5f, c) / 255.0f;
        }
    int rc = net_run_outputs(s->net, s->in, 1, s->outs, err);
    if (rc)
        return rc;
    const float *logit = s->outs[SEG_OUT_MASK];
    for (size_t i = 0; i < (size_t)S * S; i++)
        roi_mask[i] = 1.0f / (1.0f + expf(-logit[i]));
    if (presence)
        *presence = s->outs[SEG_OUT_PRESENCE][0];
    return 0;
}

void pose_paste(const struct pose_roi *roi, const float *roi_mask, int w, int h, float *mask)
{
    const int S = POSE_SEG_SIZE;
    const float c = cosf(roi->angle), s = sinf(roi->angle);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            /* picture pixel centre back into the ROI's mask pixels */
            const float dx = (float)x + 0.5f - roi->cx, dy = (float)y + 0.5f - roi->cy;
            const float u = (dx * c + dy * s) / roi->size + 0.5f;
            const float v = (-dx * s + dy * c) / roi->size + 0.5f;
            if (!(u >= 0 && u < 1 && v >= 0 && v < 1))
                continue;
            const float mu = u * S - 0.5f, mv = v * S - 0.5f;
            const int u0 = (int)floorf(mu), v0 = (int)floorf(mv);
            const float fu = mu - (float)u0, fv = mv - (float)v0;
            float val = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    const int uu = u0 + i < 0 ? 0 : (u0 + i >= S ? S - 1 : u0 + i);
                    const int vv = v0 + j < 0 ? 0 : (v0 + j >= S ? S - 1 : v0 + j);
                    val += (i ? fu : 1 - fu) * (j ? fv : 1 - fv) * roi_mask[(size_t)vv * S + uu];
                }
            float *m = &mask[(size_t)y * w + x];
            if (val > *m)
                *m = val;
        }
}

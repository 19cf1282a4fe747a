/*
 * pose_decode.c - the arithmetic after MediaPipe Pose's detector
 * (pose.h): its SSD anchors, the decoding of box and keypoint regressors
 * against them, and weighted non-maximum suppression, with the options of
 * mediapipe/modules/pose_detection/pose_detection_cpu.pbtxt:
 *
 *   anchors: 5 layers, strides 8 16 32 32 32, 224x224 input, offsets 0.5,
 *     aspect ratio 1 plus the interpolated one (2 anchors a layer), fixed
 *     anchor size (only the centres matter);
 *   decoding: x_scale = y_scale = w_scale = h_scale = 224, output order
 *     (x, y, w, h), 4 keypoints after the box, score = sigmoid of the
 *     logit clipped to +-100, kept when >= 0.5;
 *   suppression: WEIGHTED, IoU, threshold 0.3.
 */
#include "pose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pose_anchors(float centers[POSE_ANCHORS][2])
{
    static const int strides[] = { 8, 16, 32, 32, 32 };
    const int layers = 5;
    int k = 0;
    for (int layer = 0; layer < layers;) {
        /* Layers of one stride share a feature map; each adds 2 anchors a cell. */
        int last = layer, per_cell = 0;
        while (last < layers && strides[last] == strides[layer]) {
            per_cell += 2;
            last++;
        }
        const int fm = (POSE_DET_SIZE + strides[layer] - 1) / strides[layer];
        for (int y = 0; y < fm; y++)
            for (int x = 0; x < fm; x++)
                for (int a = 0; a < per_cell && k < POSE_ANCHORS; a++, k++) {
                    centers[k][0] = ((float)x + 0.5f) / (float)fm;
                    centers[k][1] = ((float)y + 0.5f) / (float)fm;
                }
        layer = last;
    }
}

int pose_decode(const float *regressors, const float *logits, float min_score,
                struct pose_person *out, int max)
{
    float anchors[POSE_ANCHORS][2]; /* 18 KB, recomputed: cheaper than a lock */
    pose_anchors(anchors);
    const float s = (float)POSE_DET_SIZE;
    int n = 0;
    for (int i = 0; i < POSE_ANCHORS && n < max; i++) {
        float l = logits[i];
        l = l < -100.0f ? -100.0f : (l > 100.0f ? 100.0f : l);
        const float score = 1.0f / (1.0f + expf(-l));
        if (!(score >= min_score))
            continue;
        const float *r = regressors + (size_t)i * POSE_COORDS;
        const float ax = anchors[i][0], ay = anchors[i][1];
        const float cx = r[0] / s + ax, cy = r[1] / s + ay, w = r[2] / s, h = r[3] / s;
        struct pose_person *p = &out[n++];
        p->score = score;
        p->x0 = cx - w / 2;
        p->y0 = cy - h / 2;
        p->x1 = cx + w / 2;
        p->y1 = cy + h / 2;
        for (int k = 0; k < 4; k++) {
            p->kp[k][0] = r[4 + 2 * k] / s + ax;
            p->kp[k][1] = r[5 + 2 * k] / s + ay;
        }
    }
    return n;
}

static float iou(const struct pose_person *a, const struct pose_person *b)
{
    const float ix = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0);
    const float iy = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
    if (ix <= 0 || iy <= 0)
        return 0;
    const float inter = ix * iy;
    const float u = (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) - inter;
    return u > 0 ? inter / u : 0;
}

static int by_score(const void *pa, const void *pb)
{
    const struct pose_person *a = pa, *b = pb;
    return (a->score < b->score) - (a->score > b->score);
}

int pose_nms(struct pose_person *p, int n, float iou_threshold)
{
    if (n <= 0)
        return 0;
    qsort(p, (size_t)n, sizeof *p, by_score);
    char *used = calloc((size_t)n, 1);
    if (!used)
        return 0;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (used[i])
            continue;
        /* The top candidate and every one overlapping it, score-weighted. */
        struct pose_person top = p[i], sum;
        memset(&sum, 0, sizeof sum);
        float wsum = 0;
        for (int j = i; j < n; j++) {
            if (used[j] || (j != i && iou(&top, &p[j]) <= iou_threshold))
                continue;
            used[j] = 1;
            const float w = p[j].score;
            wsum += w;
            sum.x0 += w * p[j].x0;
            sum.y0 += w * p[j].y0;
            sum.x1 += w * p[j].x1;
            sum.y1 += w * p[j].y1;
            for (int k = 0; k < 4; k++) {
                sum.kp[k][0] += w * p[j].kp[k][0];
                sum.kp[k][1] += w * p[j].kp[k][1];
            }
        }
        struct pose_person *o = &p[kept++];
        o->score = top.score;
        o->x0 = sum.x0 / wsum;
        o->y0 = sum.y0 / wsum;
        o->x1 = sum.x1 / wsum;
        o->y1 = sum.y1 / wsum;
        for (int k = 0; k < 4; k++) {
            o->kp[k][0] = sum.kp[k][0] / wsum;
            o->kp[k][1] = sum.kp[k][1] / wsum;
        }
    }
    free(used);
    return kept;
}

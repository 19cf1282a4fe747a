/*
 * seg_quality_people.c - people found (seg_quality_people.h): the
 * detector over an eye and its crops, and each person's axis held against
 * the matte.
 */
#include "seg_quality_people.h"

#include "people.h"

#include <math.h>
#include <stdlib.h>

/* A detection the measure trusts: a body standing up (the mid-hip below
 * the neck) whose axis is at most twice the box's side. The detector's
 * weak finds on made (score 0.52-0.61) had their hip above the neck, or an
 * axis 5.8 boxes long; true ones are 0.5-1.2 boxes. */
static int plausible(const struct pose_person *p)
{
    float ax, ay, bx, by;
    quality_person_axis(p, &ax, &ay, &bx, &by);
    const float side = fmaxf(p->x1 - p->x0, p->y1 - p->y0);
    return by > ay && hypotf(bx - ax, by - ay) <= 2 * side;
}

/* The same person found at two scales (a crop's box twice the whole
 * eye's: their IoU passes NMS's test) has the same axis: both ends within
 * half the smaller box's side. */
static int same_person(const struct pose_person *a, const struct pose_person *b)
{
    float a0x, a0y, a1x, a1y, b0x, b0y, b1x, b1y;
    quality_person_axis(a, &a0x, &a0y, &a1x, &a1y);
    quality_person_axis(b, &b0x, &b0y, &b1x, &b1y);
    const float r = 0.5f * fminf(a->x1 - a->x0, b->x1 - b->x0);
    return hypotf(a0x - b0x, a0y - b0y) <= r && hypotf(a1x - b1x, a1y - b1y) <= r;
}

int quality_people_find(struct pose_detector *d, const uint8_t *rgb, int w, int h, int ls,
                        int grid, struct pose_person *out, int max, int *n, vr_err *err)
{
    struct frame_rect crop[PEOPLE_CROPS];
    const int nc = people_crops(w, h, grid > 4 ? 4 : grid, crop);
    /* every crop's candidates before the merge */
    struct pose_person *cand = malloc(sizeof *cand * POSE_MAX_PEOPLE * (size_t)nc);
    *n = 0;
    if (!cand)
        return vr_err_set(err, VR_ENOMEM, "people found: out of memory");
    int k = 0, rc = 0;
    for (int q = 0; q < nc && rc == 0; q++) {
        int got = 0;
        rc = pose_detect(d, rgb + (size_t)crop[q].y * ls + (size_t)crop[q].x * 3, crop[q].w,
                         crop[q].h, ls, cand + k, POSE_MAX_PEOPLE, &got, err);
        k += rc == 0 ? people_crop_found(cand + k, got, &crop[q], 0) : 0;
    }
    k = rc == 0 ? pose_nms(cand, k, 0.3f) : 0;
    for (int i = 0; i < k && *n < max; i++) { /* most likely first (pose_nms) */
        int dup = !plausible(&cand[i]);
        for (int j = 0; j < *n && !dup; j++)
            dup = same_person(&out[j], &cand[i]);
        if (!dup)
            out[(*n)++] = cand[i];
    }
    free(cand);
    return rc;
}

void quality_person_axis(const struct pose_person *p, float *ax, float *ay, float *bx,
                         float *by)
{
    *ax = 0.5f * (p->x0 + p->x1);
    *ay = 0.5f * (p->y0 + p->y1);
    *bx = p->kp[0][0];
    *by = p->kp[0][1];
}

double quality_axis_cover(const uint8_t *m, int w, int h, int ls, float ax, float ay, float bx,
                          float by)
{
    int in = 0, on = 0;
    for (int k = 0; k <= QUALITY_PEOPLE_STEPS; k++) {
        const float t = (float)k / QUALITY_PEOPLE_STEPS;
        const float fx = ax + t * (bx - ax), fy = ay + t * (by - ay);
        if (!(fx >= 0 && fy >= 0 && fx < w && fy < h)) /* NaN too */
            continue;
        in++;
        on += m[(size_t)(int)fy * ls + (int)fx] >= 128;
    }
    return in ? (double)on / in : -1;
}

void quality_people_cover(const struct pose_person *p, int n, const uint8_t *m, int w, int h,
                          int ls, struct quality_count *c, int *found)
{
    for (int i = 0; i < n; i++) {
        float ax, ay, bx, by;
        quality_person_axis(&p[i], &ax, &ay, &bx, &by);
        const double cov = quality_axis_cover(m, w, h, ls, ax, ay, bx, by);
        const int v = cov < 0 ? -1 : cov >= QUALITY_PEOPLE_COVER;
        if (v >= 0) {
            c->den += 1;
            c->num += v;
        }
        if (found)
            found[i] = v;
    }
}

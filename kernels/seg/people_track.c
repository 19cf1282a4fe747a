/*
 * people_track.c - the people tier's window of past frames and its rule
 * (people_track.h).
 */
#include "people_track.h"

#include <math.h>
#include <string.h>

enum { SLOTS = CONFIG_PEOPLE_WINDOW - 1 };

void people_window_reset(struct people_window *w)
{
    memset(w, 0, sizeof *w);
}

void people_window_push(struct people_window *w, const struct people_seen *now)
{
    w->head = (w->head + 1) % SLOTS;
    w->f[w->head] = *now;
    if (w->have < SLOTS)
        w->have++;
}

/* seen(t-j), j = 1..have */
static const struct people_seen *ago(const struct people_window *w, int j)
{
    return &w->f[(w->head - (j - 1) + SLOTS) % SLOTS];
}

float people_roi_iou(const struct pose_roi *a, const struct pose_roi *b)
{
    const float ha = a->size / 2, hb = b->size / 2;
    float ix = (a->cx + ha < b->cx + hb ? a->cx + ha : b->cx + hb)
               - (a->cx - ha > b->cx - hb ? a->cx - ha : b->cx - hb);
    float iy = (a->cy + ha < b->cy + hb ? a->cy + ha : b->cy + hb)
               - (a->cy - ha > b->cy - hb ? a->cy - ha : b->cy - hb);
    if (!(ix > 0 && iy > 0))
        return 0;
    const float in = ix * iy, un = a->size * a->size + b->size * b->size - in;
    return un > 0 ? in / un : 0;
}

static int overlaps(const struct people_seen *s, const struct pose_roi *r)
{
    for (int i = 0; i < s->n; i++)
        if (people_roi_iou(&s->roi[i], r) >= PEOPLE_TRACK_IOU)
            return 1;
    return 0;
}

int people_confirmed(const struct people_window *w, const struct pose_roi *r)
{
    if (w->have == 0)
        return 1;
    for (int j = 1; j <= w->have; j++)
        if (overlaps(ago(w, j), r))
            return 1;
    return 0;
}

void people_smoothed(const struct people_window *w, const struct pose_roi *r,
                     struct pose_roi *out)
{
    float cx = r->cx, cy = r->cy, size = r->size, c = cosf(r->angle), s = sinf(r->angle);
    int n = 1;
    for (int j = 1; j <= w->have; j++) {
        const struct people_seen *f = ago(w, j);
        int best = -1;
        float bi = PEOPLE_TRACK_IOU;
        for (int i = 0; i < f->n; i++) {
            float iou = people_roi_iou(&f->roi[i], r);
            if (iou >= bi)
                bi = iou, best = i;
        }
        if (best < 0)
            continue;
        const struct pose_roi *q = &f->roi[best];
        cx += q->cx, cy += q->cy, size += q->size;
        c += cosf(q->angle), s += sinf(q->angle);
        n++;
    }
    *out = (struct pose_roi){ cx / n, cy / n, size / n, atan2f(s, c) };
}

/* ROI r of seen(t-j) was seen in another frame of the window, or in the
 * stream's first frame (the window not full and t-j its oldest). */
static int seen_twice(const struct people_window *w, int j, const struct pose_roi *r)
{
    if (w->have < SLOTS && j == w->have)
        return 1;
    for (int k = 1; k <= w->have; k++)
        if (k != j && overlaps(ago(w, k), r))
            return 1;
    return 0;
}

int people_carried(const struct people_window *w, const struct people_seen *now,
                   struct pose_roi *out, float *weight, int max)
{
    int n = 0;
    for (int j = 1; j <= w->have; j++) {
        const struct people_seen *s = ago(w, j);
        for (int i = 0; i < s->n && n < max; i++) {
            const struct pose_roi *r = &s->roi[i];
            int taken = overlaps(now, r);
            for (int q = 0; q < n && !taken; q++)
                taken = people_roi_iou(&out[q], r) >= PEOPLE_TRACK_IOU;
            if (taken || !seen_twice(w, j, r))
                continue;
            out[n] = *r;
            weight[n++] = (float)(CONFIG_PEOPLE_WINDOW - j) / (CONFIG_PEOPLE_WINDOW - 1);
        }
    }
    return n;
}

/*
 * frame_temporal_ref.c - the temporal filter's C twin and the window's
 * bookkeeping both backends share (frame_temporal.h gives the rule).
 * Its CUDA twin is frame_temporal.cu.
 */
#include "frame_temporal.h"

#include <string.h>

/* ---- settings and the window ---- */

void temporal_opts_make(struct temporal_opts *o, int frames, double decay, int still,
                        double scene_cut, int w, int h)
{
    memset(o, 0, sizeof *o);
    o->frames = frames < 1 ? 1 : frames > TEMPORAL_MAX_FRAMES ? TEMPORAL_MAX_FRAMES : frames;
    if (!(decay > 0.0))
        o->frames = 1; /* no weight on the past: the filter is off */
    float w_i = 1.0f;
    for (int i = 0; i < TEMPORAL_MAX_FRAMES; i++) {
        o->weight[i] = w_i;
        w_i = w_i * (float)decay;
    }
    o->still = still;
    o->cut_sad = scene_cut > 0.0 ? (uint64_t)(scene_cut * (double)w * (double)h) : 0;
    o->w = w;
    o->h = h;
}

void temporal_opts_hold(struct temporal_opts *o, int hold)
{
    o->hold = o->frames > 1 && hold > 0 ? (hold > 255 ? 255 : hold) : 0;
}

void temporal_opts_still_r(struct temporal_opts *o, int r)
{
    o->still_r = r < 0 ? 0 : r > TEMPORAL_STILL_R_MAX ? TEMPORAL_STILL_R_MAX : r;
}

void temporal_opts_from_config(struct temporal_opts *o, const struct vr_config *cfg, int w,
                               int h)
{
    int k = cfg->smooth > 0.0 && cfg->smooth_frames > 1 ? cfg->smooth_frames : 1;
    temporal_opts_make(o, k, cfg->smooth, cfg->smooth_still, cfg->scene_cut, w, h);
    temporal_opts_hold(o, cfg->smooth_hold);
    temporal_opts_still_r(o, cfg->smooth_still_radius);
}

int temporal_warmup_frames(const struct temporal_opts *o)
{
    if (o->frames < 2)
        return 0;
    if (!o->hold)
        return o->frames - 1;
    int a = o->frames - 1 + CONFIG_HOLD_SPAN, b = 2 * CONFIG_HOLD_SPAN + 1;
    return a > b ? a : b;
}

void temporal_reset(struct temporal_state *s)
{
    s->have = 0;
    s->head = 0;
    s->nkeys = 0;
    s->refresh = 1;
}

void temporal_hold_step(struct temporal_state *s, uint64_t sad)
{
    s->refresh = temporal_hold_refresh(s->have, temporal_hold_key(sad), s->keys,
                                       s->nkeys);
    temporal_hold_push(s->keys, &s->nkeys, temporal_hold_key(sad));
}

int temporal_cut(const struct temporal_opts *o, struct temporal_state *s, uint64_t sad)
{
    if (s->have > 0 && o->cut_sad && sad > o->cut_sad) {
        s->have = 0;
        return 1;
    }
    return 0;
}

int temporal_next_slot(const struct temporal_opts *o, const struct temporal_state *s)
{
    int slots = o->frames - 1;
    return slots > 0 ? (s->head + 1) % slots : 0;
}

void temporal_push(const struct temporal_opts *o, struct temporal_state *s)
{
    if (o->frames < 2)
        return;
    s->head = temporal_next_slot(o, s);
    if (s->have < o->frames - 1)
        s->have++;
}

/* ---- C twin ---- */

void frame_temporal_luma_ref(const struct seg_frame *f, uint8_t *y, int w, int h)
{
    for (int oy = 0; oy < h; oy++) {
        int sy = (int)(((2LL * oy + 1) * f->h) / (2LL * h));
        const uint8_t *row = f->data[0] + (size_t)sy * f->linesize[0];
        for (int ox = 0; ox < w; ox++) {
            int sx = (int)(((2LL * ox + 1) * f->w) / (2LL * w));
            uint8_t v;
            switch (f->fmt) {
            case SEG_PIX_RGB24: {
                const uint8_t *px = row + 3 * (size_t)sx;
                v = (uint8_t)((77u * px[0] + 150u * px[1] + 29u * px[2] + 128u) >> 8);
                break;
            }
            case SEG_PIX_P010: {
                const uint16_t *r16 = (const uint16_t *)row;
                v = (uint8_t)(r16[sx] >> 8);
                break;
            }
            default:
                v = row[sx];
                break;
            }
            y[(size_t)oy * w + ox] = v;
        }
    }
}

uint64_t frame_temporal_sad_ref(const uint8_t *a, const uint8_t *b, int w, int h)
{
    uint64_t s = 0;
    for (size_t i = 0; i < (size_t)w * h; i++)
        s += (uint64_t)(a[i] > b[i] ? a[i] - b[i] : b[i] - a[i]);
    return s;
}

/* The largest |a(q) - b(q)| over the pixels q within r of (px, py),
 * clipped to the w x h plane. */
static int temporal_change_near(const uint8_t *a, const uint8_t *b, int w, int h, int px,
                                int py, int r)
{
    int m = 0;
    for (int qy = py - r; qy <= py + r; qy++) {
        if (qy < 0 || qy >= h)
            continue;
        for (int qx = px - r; qx <= px + r; qx++) {
            if (qx < 0 || qx >= w)
                continue;
            const size_t q = (size_t)qy * w + qx;
            int d = a[q] > b[q] ? a[q] - b[q] : b[q] - a[q];
            m = d > m ? d : m;
        }
    }
    return m;
}

void frame_temporal_ref(const struct temporal_opts *o, const struct temporal_state *s,
                        uint8_t *mask, int ls, const uint8_t *y, uint8_t *ring_m,
                        uint8_t *ring_y, uint8_t *held)
{
    const int w = o->w, h = o->h, slots = o->frames - 1;
    const size_t plane = (size_t)w * h;
    if (slots < 1)
        return;
    const int next = temporal_next_slot(o, s);
    const int hold = o->hold > 0 && !s->refresh && s->have > 0;
    const uint8_t *y_prev = ring_y + (size_t)s->head * plane;
    for (int py = 0; py < h; py++)
        for (int px = 0; px < w; px++) {
            const size_t p = (size_t)py * w + px;
            uint8_t *m = mask + (size_t)py * ls + px;
            const uint8_t raw = *m;
            float acc = (float)raw, wsum = 1.0f;
            for (int i = 1; i <= s->have; i++) {
                int slot = ((s->head - (i - 1)) % slots + slots) % slots;
                int d = temporal_change_near(y, ring_y + slot * plane, w, h, px, py, o->still_r);
                if (d <= o->still) {
                    acc = acc + o->weight[i] * (float)ring_m[slot * plane + p];
                    wsum = wsum + o->weight[i];
                }
            }
            float q = acc / wsum;
            q = q + 0.5f;
            uint8_t out = (uint8_t)(int)q;
            if (hold) {
                int dy = temporal_change_near(y, y_prev, w, h, px, py, o->still_r);
                int dm = out > held[p] ? out - held[p] : held[p] - out;
                if (dy <= o->still && dm <= o->hold)
                    out = held[p];
            }
            if (o->hold > 0)
                held[p] = out;
            *m = out;
            ring_m[next * plane + p] = raw;
        }
    /* after the loop: slot `next` may be the oldest tap, whose lumas the
     * neighbourhoods above still read */
    memcpy(ring_y + next * plane, y, plane);
}

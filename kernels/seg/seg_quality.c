/*
 * seg_quality.c - the matte measures of seg_quality.h: erosion of the reference's
 * sure regions, the per-band disparity search, IoU, still-area flicker and
 * the step across tile borders. Plain loops; the planes are measurement
 * sized (an eye of at most a few thousand pixels a side).
 */
#include "seg_quality.h"

#include "seg_impl.h"

#include <stdlib.h>

/* ---- holes and false positives ---- */

void quality_sure(const uint8_t *ref, const uint8_t *m, int w, int h, int fg,
                  uint8_t *scratch, struct quality_count *c)
{
    const int r = QUALITY_ERODE;
    /* horizontal pass: scratch = 1 where the row's window is all sure */
    for (int y = 0; y < h; y++) {
        const uint8_t *row = ref + (size_t)y * w;
        uint8_t *s = scratch + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            int a = x - r < 0 ? 0 : x - r, b = x + r >= w ? w - 1 : x + r, ok = 1;
            for (int k = a; k <= b && ok; k++)
                ok = fg ? row[k] >= QUALITY_SURE_FG : row[k] <= QUALITY_SURE_BG;
            s[x] = (uint8_t)ok;
        }
    }
    /* vertical pass, counting as it goes */
    for (int x = 0; x < w; x++) {
        for (int y = 0; y < h; y++) {
            int a = y - r < 0 ? 0 : y - r, b = y + r >= h ? h - 1 : y + r, ok = 1;
            for (int k = a; k <= b && ok; k++)
                ok = scratch[(size_t)k * w + x] & 1;
            if (!ok)
                continue;
            uint8_t v = m[(size_t)y * w + x];
            c->den += 1;
            c->num += fg ? v < 128 : v > 128;
        }
    }
}

/* ---- stereo ---- */

/* The shift d in [-dmax, dmax] minimising the mean |L(x) - R(x - d)| over
 * rows [y0, y1) (every other one) and the columns x of [a, b) where x - d
 * is inside the eye (at least half of them); ties to the smaller |d|. */
static int disparity_cols(const uint8_t *yl, const uint8_t *yr, int w, int y0, int y1, int a,
                          int b, int dmax)
{
    int best = 0;
    double best_cost = 1e300;
    for (int d = -dmax; d <= dmax; d++) {
        int x0 = a > d ? a : d, x1 = b < w + d ? b : w + d; /* R(x - d) inside */
        if (x1 - x0 < (b - a + 1) / 2 || x1 <= x0)
            continue;
        long long sad = 0, n = 0;
        for (int y = y0; y < y1; y += 2) {
            const uint8_t *l = yl + (size_t)y * w, *rr = yr + (size_t)y * w;
            for (int x = x0; x < x1; x++)
                sad += abs(l[x] - rr[x - d]);
            n += x1 - x0;
        }
        /* a tie goes to the smaller shift: flat pictures keep d = 0 */
        double cost = n ? (double)sad / n + 1e-6 * abs(d) : 1e300;
        if (cost < best_cost) {
            best_cost = cost;
            best = d;
        }
    }
    return best;
}

/* Whether column x of rows [y0, y1) holds matte (>= 128) in either eye. */
static int column_matted(const uint8_t *ml, const uint8_t *mr, int ls, int y0, int y1, int x)
{
    for (int y = y0; y < y1; y++)
        if (ml[(size_t)y * ls + x] >= 128 || mr[(size_t)y * ls + x] >= 128)
            return 1;
    return 0;
}

void quality_stereo(const uint8_t *ml, const uint8_t *mr, const uint8_t *yl,
                    const uint8_t *yr, int w, int h, int ls, int bands, int dmax,
                    struct quality_count *c)
{
    /* the luma planes are eye-sized and contiguous (rows of w) */
    for (int b = 0; b < bands; b++) {
        int y0 = (int)((long long)h * b / bands), y1 = (int)((long long)h * (b + 1) / bands);
        if (y1 <= y0)
            continue;
        /* each group of matted columns gets the disparity of its own
         * picture: people at another depth than the band's background are
         * compared at theirs; gaps under a quarter of dmax (an arm from
         * its body) are joined, wider ones (people apart) are not */
        const int join = dmax / 4 > 1 ? dmax / 4 : 1;
        int x = 0;
        while (x < w) {
            while (x < w && !column_matted(ml, mr, ls, y0, y1, x))
                x++;
            if (x >= w)
                break;
            int s0 = x, s1 = x, gap = 0;
            for (; x < w && gap < join; x++) {
                if (column_matted(ml, mr, ls, y0, y1, x)) {
                    s1 = x + 1;
                    gap = 0;
                } else {
                    gap++;
                }
            }
            x = s1;
            int d = disparity_cols(yl, yr, w, y0, y1, s0, s1, dmax);
            int x0 = s0 > d ? s0 : d, x1 = s1 < w + d ? s1 : w + d;
            for (int y = y0; y < y1; y++) {
                const uint8_t *l = ml + (size_t)y * ls, *r = mr + (size_t)y * ls;
                for (int xx = x0; xx < x1; xx++) {
                    int p = l[xx] >= 128, q = r[xx - d] >= 128;
                    c->num += p & q;
                    c->den += p | q;
                }
            }
        }
    }
}

/* ---- flicker ---- */

void quality_flicker(const uint8_t *m0, const uint8_t *m1, const uint8_t *y0,
                     const uint8_t *y1, int w, int h, uint8_t *scratch,
                     struct quality_count *mask, struct quality_count *pic)
{
    const int r = QUALITY_STILL_R;
    /* scratch = 1 where the luma moved within r pixels along the row... */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int a = x - r < 0 ? 0 : x - r, b = x + r >= w ? w - 1 : x + r, moved = 0;
            for (int k = a; k <= b && !moved; k++) {
                size_t i = (size_t)y * w + k;
                moved = abs(y1[i] - y0[i]) > QUALITY_STILL;
            }
            scratch[(size_t)y * w + x] = (uint8_t)moved;
        }
    /* ...and a pixel is still when no row within r of it moved there */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int a = y - r < 0 ? 0 : y - r, b = y + r >= h ? h - 1 : y + r, moved = 0;
            for (int k = a; k <= b && !moved; k++)
                moved = scratch[(size_t)k * w + x];
            if (moved)
                continue;
            size_t i = (size_t)y * w + x;
            mask->num += abs(m1[i] - m0[i]);
            mask->den += 1;
            pic->num += abs(y1[i] - y0[i]);
            pic->den += 1;
        }
}

/* ---- tile borders ---- */

/* The step across column x (dx) or row x (!dx) of an eye, summed over its
 * length; 0 with n = 0 off the eye. */
static double line_step(const uint8_t *m, int w, int h, int ls, int x, int dx, long *n)
{
    double s = 0;
    *n = 0;
    if (x <= 0 || x >= (dx ? w : h))
        return 0;
    if (dx)
        for (int y = 0; y < h; y++)
            s += abs(m[(size_t)y * ls + x] - m[(size_t)y * ls + x - 1]);
    else
        for (int k = 0; k < w; k++)
            s += abs(m[(size_t)x * ls + k] - m[(size_t)(x - 1) * ls + k]);
    *n = dx ? h : w;
    return s;
}

static const int near_off[] = { -16, -12, -8, -4, 4, 8, 12, 16 };

void quality_borders(const uint8_t *m, int w, int h, int ls, const int *xs, int nx,
                     const int *ys, int ny, struct quality_count *on,
                     struct quality_count *near)
{
    for (int axis = 0; axis < 2; axis++) {
        const int *v = axis ? ys : xs, nv = axis ? ny : nx;
        for (int i = 0; i < nv; i++) {
            long n;
            double s = line_step(m, w, h, ls, v[i], !axis, &n);
            on->num += s;
            on->den += n;
            for (size_t k = 0; k < sizeof near_off / sizeof near_off[0]; k++) {
                s = line_step(m, w, h, ls, v[i] + near_off[k], !axis, &n);
                near->num += s;
                near->den += n;
            }
        }
    }
}

/* ---- a clip ---- */

void quality_seg_borders(const struct seg *s, int eye, int *xs, int *nx, int *ys, int *ny)
{
    const struct tile_eye *te = &s->plan.eye[eye];
    *nx = *ny = 0;
    for (int i = 0; i < te->n; i++) {
        const struct frame_rect r = te->src[i];
        int e = te->dst[i].edges;
        if (e & FRAME_TILE_FLOOR)
            continue;
        int x0 = r.x - te->eye.x, y0 = r.y - te->eye.y;
        int cand_x[2] = { e & FRAME_EDGE_L ? x0 : -1, e & FRAME_EDGE_R ? x0 + r.w : -1 };
        int cand_y[2] = { e & FRAME_EDGE_T ? y0 : -1, e & FRAME_EDGE_B ? y0 + r.h : -1 };
        for (int k = 0; k < 2; k++) {
            if (cand_x[k] >= 0 && *nx < QUALITY_MAX_BORDERS)
                xs[(*nx)++] = (int)((long long)cand_x[k] * te->out.w / te->eye.w);
            if (cand_y[k] >= 0 && *ny < QUALITY_MAX_BORDERS)
                ys[(*ny)++] = (int)((long long)cand_y[k] * te->out.h / te->eye.h);
        }
    }
}

void quality_add_borders(struct quality_sums *q, const struct seg *s, const uint8_t *m, int w)
{
    const struct tile_plan *p = &s->plan;
    for (int e = 0; e < p->n_eyes; e++) {
        int xs[QUALITY_MAX_BORDERS], ys[QUALITY_MAX_BORDERS], nx, ny;
        const struct frame_rect o = p->eye[e].out;
        quality_seg_borders(s, e, xs, &nx, ys, &ny);
        quality_borders(m + (size_t)o.y * w + o.x, o.w, o.h, w, xs, nx, ys, ny,
                        &q->border, &q->near);
    }
}

void quality_add_frame(struct quality_sums *q, const struct seg *s, const uint8_t *ref,
                       const uint8_t *m, const uint8_t *y, const uint8_t *prev_m,
                       const uint8_t *prev_y, int w, int h, uint8_t *scratch)
{
    quality_sure(ref, m, w, h, 1, scratch, &q->holes);
    quality_sure(ref, m, w, h, 0, scratch, &q->fp);
    if (prev_m && prev_y)
        quality_flicker(prev_m, m, prev_y, y, w, h, scratch, &q->flicker, &q->picture);
    quality_add_borders(q, s, m, w);
    const struct tile_plan *p = &s->plan;
    if (p->n_eyes == 2 && p->eye[0].out.h == p->eye[1].out.h
        && p->eye[0].out.w == p->eye[1].out.w && p->eye[0].out.y == p->eye[1].out.y) {
        /* side by side: the eyes' luma copied out contiguous for the search */
        const struct frame_rect l = p->eye[0].out, r = p->eye[1].out;
        uint8_t *yl = scratch, *yr = scratch + (size_t)l.w * l.h;
        for (int row = 0; row < l.h; row++)
            for (int x = 0; x < l.w; x++) {
                yl[(size_t)row * l.w + x] = y[(size_t)(l.y + row) * w + l.x + x];
                yr[(size_t)row * l.w + x] = y[(size_t)(r.y + row) * w + r.x + x];
            }
        quality_stereo(m + (size_t)l.y * w + l.x, m + (size_t)r.y * w + r.x, yl, yr, l.w,
                       l.h, w, 8, l.w / 8, &q->stereo);
    }
    q->frames++;
}

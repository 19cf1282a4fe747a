/*
 * output_alpha.c - the colour frame with the matte packed for VR
 * passthrough players (DeoVR-style "_alpha" files).
 *
 * Per eye (two for SBS / TB, one for mono): the eye's matte, scaled to 40 %
 * of the eye, is cut into quadrants Q1..Q4, and each quadrant is written into
 * the matching corner of that eye, where a fisheye image has no picture:
 *
 *   +--Q1--+            +--Q2--+
 *   |      |  fisheye   |      |
 *   +------+   circle   +------+
 *   +--Q3--+            +--Q4--+
 *
 * Players read the matte from the red channel; we write it as gray (R = G =
 * B = matte, i.e. Y = 16 + a * 219/255 with neutral chroma), which keeps the
 * red-channel reading while avoiding 4:2:0 chroma subsampling of the matte.
 * Everything else is the decoded colour frame, unchanged.
 *
 * Only a fisheye eye leaves those corners black; an equirectangular 180°
 * or a flat eye has picture there, which the blocks would cover. The
 * pipeline asks output_alpha_corners_dark on the first frame and refuses
 * such a source unless told to use the corners anyway (--alpha-area).
 */
#include "output_kinds.h"

#include <string.h>

static void copy_colour(const struct output_plan *p, const AVFrame *src, AVFrame *dst)
{
    for (int y = 0; y < p->enc_h; y++)
        memcpy(dst->data[0] + (size_t)y * dst->linesize[0], src->data[0] + (size_t)y * src->linesize[0],
               (size_t)p->enc_w);
    for (int c = 1; c < 3; c++)
        for (int y = 0; y < p->enc_h / 2; y++)
            memcpy(dst->data[c] + (size_t)y * dst->linesize[c],
                   src->data[c] + (size_t)y * src->linesize[c], (size_t)p->enc_w / 2);
}

/* Writes the qw x qh block of the matte at (mx, my) into the frame at
 * (fx, fy); all even, so chroma lines up. */
static void put_block(AVFrame *dst, const uint8_t *mask, int mask_ls, int mx, int my, int qw,
                      int qh, int fx, int fy)
{
    for (int y = 0; y < qh; y++) {
        const uint8_t *m = mask + (size_t)(my + y) * mask_ls + mx;
        uint8_t *d = dst->data[0] + (size_t)(fy + y) * dst->linesize[0] + fx;
        for (int x = 0; x < qw; x++)
            d[x] = (uint8_t)(16 + (m[x] * 219 + 127) / 255);
    }
    for (int c = 1; c < 3; c++)
        for (int y = 0; y < qh / 2; y++)
            memset(dst->data[c] + (size_t)(fy / 2 + y) * dst->linesize[c] + fx / 2, 128,
                   (size_t)qw / 2);
}

void output_alpha_compose(const struct output_plan *p, const AVFrame *src, const uint8_t *mask,
                          int mask_ls, AVFrame *dst)
{
    copy_colour(p, src, dst);
    int ex = p->layout == SEG_LAYOUT_SBS ? 2 : 1, ey = p->layout == SEG_LAYOUT_TB ? 2 : 1;
    int ew = (p->enc_w / ex) & ~1, eh = (p->enc_h / ey) & ~1;   /* eye in the frame */
    int sw = p->mask_w / ex, sh = p->mask_h / ey;               /* eye in the matte */
    int hw = (sw / 2) & ~1, hh = (sh / 2) & ~1;                 /* Q1 size */
    for (int e = 0; e < ex * ey; e++) {
        int fx = (e % ex) * ew, fy = (e / ex) * eh;   /* eye origin, frame */
        int mx = (e % ex) * sw, my = (e / ex) * sh;   /* eye origin, matte */
        int rw = (sw - hw) & ~1, rh = (sh - hh) & ~1; /* Q2/Q4 widths, Q3/Q4 heights */
        put_block(dst, mask, mask_ls, mx, my, hw, hh, fx, fy);
        put_block(dst, mask, mask_ls, mx + hw, my, rw, hh, fx + ew - rw, fy);
        put_block(dst, mask, mask_ls, mx, my + hh, hw, rh, fx, fy + eh - rh);
        put_block(dst, mask, mask_ls, mx + hw, my + hh, rw, rh, fx + ew - rw, fy + eh - rh);
    }
}

/* A sample of a corner block holds picture when it is brighter than
 * CORNER_BRIGHT_Y; the block does when more than CORNER_PICTURE_PCT % of
 * its samples outside the eye's inscribed circle do (the blocks reach into
 * a fisheye's circle: only what lies outside it is black there). */
#define CORNER_BRIGHT_Y    40
#define CORNER_PICTURE_PCT 2

/* Counts the samples of the qw x qh luma block at (fx, fy) that lie
 * outside the circle of radius r (plus a 2-sample margin for a soft edge)
 * around (cx, cy), and how many of those are bright. */
static void corner_count(const AVFrame *src, int fx, int fy, int qw, int qh, double cx,
                         double cy, double r, long *outside, long *bright)
{
    double r2 = (r + 2) * (r + 2);
    for (int y = 0; y < qh; y++) {
        const uint8_t *row = src->data[0] + (size_t)(fy + y) * src->linesize[0] + fx;
        double dy = fy + y + 0.5 - cy;
        for (int x = 0; x < qw; x++) {
            double dx = fx + x + 0.5 - cx;
            if (dx * dx + dy * dy <= r2)
                continue;
            (*outside)++;
            *bright += row[x] > CORNER_BRIGHT_Y;
        }
    }
}

int output_alpha_corners_dark(const struct output_plan *p, const AVFrame *src)
{
    int ex = p->layout == SEG_LAYOUT_SBS ? 2 : 1, ey = p->layout == SEG_LAYOUT_TB ? 2 : 1;
    int ew = (p->enc_w / ex) & ~1, eh = (p->enc_h / ey) & ~1;
    int sw = p->mask_w / ex, sh = p->mask_h / ey;
    int hw = (sw / 2) & ~1, hh = (sh / 2) & ~1;
    int rw = (sw - hw) & ~1, rh = (sh - hh) & ~1;
    double r = (ew < eh ? ew : eh) / 2.0;
    for (int e = 0; e < ex * ey; e++) {
        int fx = (e % ex) * ew, fy = (e / ex) * eh;
        double cx = fx + ew / 2.0, cy = fy + eh / 2.0;
        long outside = 0, bright = 0;
        corner_count(src, fx, fy, hw, hh, cx, cy, r, &outside, &bright);
        corner_count(src, fx + ew - rw, fy, rw, hh, cx, cy, r, &outside, &bright);
        corner_count(src, fx, fy + eh - rh, hw, rh, cx, cy, r, &outside, &bright);
        corner_count(src, fx + ew - rw, fy + eh - rh, rw, rh, cx, cy, r, &outside, &bright);
        if (bright * 100 > outside * CORNER_PICTURE_PCT)
            return 0;
    }
    return 1;
}

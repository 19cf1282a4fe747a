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

#include "vio_corners.h"

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

int output_alpha_corners_dark(const struct output_plan *p, const AVFrame *src)
{
    int ex = p->layout == SEG_LAYOUT_SBS ? 2 : 1, ey = p->layout == SEG_LAYOUT_TB ? 2 : 1;
    return vio_corners_dark(src, ex, ey, (p->enc_w / ex) & ~1, (p->enc_h / ey) & ~1,
                            p->mask_w / ex, p->mask_h / ey);
}

/*
 * h264_mb_ref.c - stage 1 of the matte encoder, the C twin (h264_ref.h):
 * the per-MB code of h264_mb_impl.h (and the search of h264_mv_impl.h) over
 * every MB of a P frame, or over one
 * anti-diagonal of an IDR.
 */
#include "h264_mb_impl.h"

void ref_h264_load(const struct h264_frame *f, const uint8_t *y, int yls, int w, int h)
{
    for (int py = 0; py < f->mbh * 16; py++)
        for (int px = 0; px < f->mbw * 16; px++)
            load_px(f, y, yls, w, h, px, py);
}

void ref_h264_search(const struct h264_frame *f)
{
    for (int my = 0; my < f->mbh; my++)
        for (int mx = 0; mx < f->mbw; mx++)
            search_qpel_mb(f, mx, my);
}

void ref_h264_inter(const struct h264_frame *f)
{
    for (int my = 0; my < f->mbh; my++)
        for (int mx = 0; mx < f->mbw; mx++)
            inter_mb(f, mx, my);
}

void ref_h264_intra(const struct h264_frame *f, int d)
{
    for (int my = 0; my < f->mbh; my++) {
        int mx = d - my;
        if (mx >= 0 && mx < f->mbw)
            intra_mb(f, mx, my);
    }
}

void ref_h264_intra_p(const struct h264_frame *f)
{
    for (int my = 0; my < f->mbh; my++)
        for (int mx = 0; mx < f->mbw; mx++) {
            const struct h264_mb *m = &f->mb[my * f->mbw + mx];
            if (intra_p_candidate(m))
                intra_mb_bar(f, mx, my, m->sad);
        }
}

void ref_h264_pfix(const struct h264_frame *f)
{
    for (int my = 0; my < f->mbh; my++)
        for (int mx = 0; mx < f->mbw; mx++)
            pfix_mb(f, mx, my);
}

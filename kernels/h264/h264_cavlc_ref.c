/*
 * h264_cavlc_ref.c - stages 2-5 of the matte encoder, the C twin
 * (h264_ref.h): skip runs and the MB counts, each MB's CAVLC codewords
 * (h264_cavlc_impl.h), the prefix sum of their lengths, the slices'
 * places, the pack.
 */
#include "h264_cavlc_impl.h"

#include <string.h>

void ref_h264_skipruns(const struct h264_frame *f)
{
    int n = f->mbw * f->mbh;
    uint32_t r = 0;
    f->counts[0] = f->counts[1] = f->counts[2] = 0;
    for (int i = 0; i < n; i++) {
        f->run[i] = r;
        r = f->mb[i].type == H264_MB_SKIP ? r + 1 : 0;
        f->counts[f->mb[i].type]++;
    }
    f->run[n] = r;
}

void ref_h264_cavlc(const struct h264_frame *f, int idr)
{
    int n = f->mbw * f->mbh;
    for (int i = 0; i < n; i++)
        cavlc_mb(f, idr, i);
}

void ref_h264_scan(const struct h264_frame *f)
{
    int n = f->mbw * f->mbh;
    uint64_t s = 0;
    for (int i = 0; i < n; i++) {
        f->pos[i] = s;
        s += f->nbits[i];
    }
    f->pos[n] = s;
}

void ref_h264_slices(const struct h264_frame *f, int idr) { slices_place(f, idr); }

void ref_h264_clear(const struct h264_frame *f, uint8_t *out, int pad)
{
    memset(out, 0, (size_t)(f->sbyte[f->slices] + (uint64_t)pad));
}

void ref_h264_pack(const struct h264_frame *f, uint8_t *out, int idr)
{
    int n = f->mbw * f->mbh;
    for (int i = 0; i < n; i++)
        pack_mb(f, out, i);
    for (int k = 0; k < f->slices; k++)
        pack_slice_end(f, out, idr, k);
}

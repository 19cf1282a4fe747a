/*
 * output_mask.c - the matte as a grayscale video: Y is the matte (full
 * range, so 255 = person exactly), chroma is neutral.
 */
#include "output_kinds.h"

#include <string.h>

void output_mask_compose(const struct output_plan *p, const uint8_t *mask, int mask_ls,
                         AVFrame *dst)
{
    for (int y = 0; y < p->enc_h; y++)
        memcpy(dst->data[0] + (size_t)y * dst->linesize[0], mask + (size_t)y * mask_ls,
               (size_t)p->enc_w);
    /* chroma never changes, but the encoder may hand the buffer back
     * recycled, so write it every frame (a memset is cheap) */
    for (int c = 1; c < 3; c++)
        for (int y = 0; y < p->enc_h / 2; y++)
            memset(dst->data[c] + (size_t)y * dst->linesize[c], 128, (size_t)p->enc_w / 2);
}

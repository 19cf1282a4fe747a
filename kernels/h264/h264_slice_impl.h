/*
 * h264_slice_impl.h - the matte encoder's slices: a frame is cut into
 * f->slices slices of whole MB rows, as even as rows allow (slice k begins
 * at row k * mbh / slices). Nothing is predicted across a slice's top edge
 * (ITU-T H.264 6.4.8: a neighbour in another slice is not available):
 * neither Intra 16x16 samples, nor vectors, nor nC, and the skip runs end
 * with the slice; so each slice's wavefront (h264_mb.cu) starts at its own
 * top and the slices run side by side. One source for the twins.
 */
#ifndef VR_H264_SLICE_IMPL_H
#define VR_H264_SLICE_IMPL_H

#include "h264_dev.h"
#include "h264_ref.h"

/* The slice of MB row y: the largest k with k * mbh / slices <= y. */
H264_DEV static inline int slice_of_row(const struct h264_frame *f, int y)
{
    return ((y + 1) * f->slices - 1) / f->mbh;
}

/* The first MB row of slice k (k == slices: mbh). */
H264_DEV static inline int slice_first_row(const struct h264_frame *f, int k)
{
    return k * f->mbh / f->slices;
}

/* Whether the MBs of row y have their top neighbours (row y - 1, same slice). */
H264_DEV static inline int slice_has_top(const struct h264_frame *f, int y)
{
    return y > 0 && slice_of_row(f, y - 1) == slice_of_row(f, y);
}

/* The bits of ue(v) k. */
H264_DEV static inline int ue_len(uint32_t k)
{
    int len = 0;
    while (((k + 1) >> len) > 1)
        len++;
    return 2 * len + 1;
}

#endif

/*
 * vio_limits.c - the frame size every reader of a source checks before it
 * sizes anything from it (vio_video.h): here alone, so the readers (the
 * decoder, the split's and stitch's demuxers) share it without depending
 * on one another.
 */
#include "vio_video.h"

int vio_frame_size_check(const char *path, int w, int h, vr_err *err)
{
    if (w <= 0 || h <= 0)
        return vr_err_set(err, VR_EFORMAT, "%s: the video stream has no frame size", path);
    if (w > VIO_MAX_DIM || h > VIO_MAX_DIM || (long long)w * h > VIO_MAX_PIXELS)
        return vr_err_set(err, VR_EFORMAT, "%s: frame size %dx%d is over the size limit "
                          "(%d per side, %lld pixels: 16384x8192)", path, w, h, VIO_MAX_DIM,
                          VIO_MAX_PIXELS);
    return 0;
}

/*
 * util-x264.h - libx264 ultrafast as the matte encoder's yardstick in the
 * tests: frames coded with the matte's x264 settings at a fixed QP
 * (media/vio_encode.c: no B-frames, no scene cuts; bench/vrbench_h264.c
 * the same), decoded by libavcodec, luma PSNR against the source.
 */
#ifndef VR_T_X264_UTIL_H
#define VR_T_X264_UTIL_H

#include <stdint.h>

/* n frames of w x h luma (frame i at frames + i * w * h), chroma 128, an
 * IDR on the first frame only, at QP qp: *bytes the stream's size, *psnr
 * its decoded luma's PSNR (dB). 0, or -1 when libx264 or the decoder is
 * not there or fails. */
int tx264_psnr(const uint8_t *frames, int n, int w, int h, int qp, long long *bytes, double *psnr);

#endif

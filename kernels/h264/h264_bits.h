/*
 * h264_bits.h - an MSB-first bit writer and the Exp-Golomb codes, for the
 * matte encoder's headers (h264enc.c) and each MB's codewords
 * (h264_cavlc.c). A byte is written whole when a code reaches its first
 * bit, so the buffer needs no clearing; writes past cap are dropped and
 * counted in `over` (the caller sizes buffers so that cannot happen, and
 * checks).
 */
#ifndef VR_H264_BITS_H
#define VR_H264_BITS_H

#include "h264_dev.h"

#include <stdint.h>

struct h264_bw {
    uint8_t *buf;
    uint32_t cap;   /* bytes */
    uint32_t bit;   /* bits written */
    uint32_t over;  /* bits dropped past cap */
};

/* The low n bits of v (n <= 32), most significant first. */
H264_DEV static inline void h264_put(struct h264_bw *w, uint32_t v, int n)
{
    while (n > 0) {
        uint32_t byte = w->bit >> 3;
        int off = (int)(w->bit & 7), take = 8 - off < n ? 8 - off : n;
        uint32_t part = (v >> (n - take)) & ((1u << take) - 1);
        if (byte >= w->cap) {
            w->over += (uint32_t)take;
        } else if (off == 0) {
            w->buf[byte] = (uint8_t)(part << (8 - take));
        } else {
            w->buf[byte] |= (uint8_t)(part << (8 - off - take));
        }
        w->bit += (uint32_t)take;
        n -= take;
    }
}

/* ue(v): codeNum k as len zeros, then k + 1 in len + 1 bits. */
H264_DEV static inline void h264_ue(struct h264_bw *w, uint32_t k)
{
    uint32_t x = k + 1;
    int len = 0;
    while ((x >> len) > 1)
        len++;
    h264_put(w, 0, len);
    h264_put(w, x, len + 1);
}

/* se(v): 0, 1, -1, 2, -2, ... as ue 0, 1, 2, 3, 4, ... */
H264_DEV static inline void h264_se(struct h264_bw *w, int v)
{
    h264_ue(w, v > 0 ? 2u * (uint32_t)v - 1 : 2u * (uint32_t)(-v));
}

#endif

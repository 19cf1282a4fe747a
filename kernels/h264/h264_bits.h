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
    uint64_t acc;   /* the word writer's bits not yet stored (the low nacc) */
    int nacc;       /* 0..31 between calls */
    int byte_writer; /* on the GPU: the byte writer instead (VR_H264_CAVLC_WORDS=0) */
};

/* The low n bits of v (n <= 32), most significant first: the byte
 * writer, each byte read and written in buf as a code reaches it. */
H264_DEV static inline void h264_put_bytes(struct h264_bw *w, uint32_t v, int n)
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

/* The top `bytes` bytes of x into buf from byte `at` (at a multiple of 4
 * from the writer's start), most significant first; on the GPU one
 * store where the word is aligned and inside cap. */
H264_DEV static inline void h264_store_word(struct h264_bw *w, uint32_t at, uint32_t x, int bytes)
{
#ifdef __CUDACC__
    if (bytes == 4 && at + 4 <= w->cap && !((uintptr_t)(w->buf + at) & 3)) {
        *(uint32_t *)(w->buf + at) = (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
        return;
    }
#endif
    for (int k = 0; k < bytes; k++) {
        if (at + (uint32_t)k < w->cap)
            w->buf[at + k] = (uint8_t)(x >> (24 - 8 * k));
        else
            w->over += 8;
    }
}

/* The word writer (the GPU's, for an MB's codewords): the same bytes as
 * h264_put_bytes once h264_flush_words has run, with the bits gathered in
 * a register and stored 32 at a time, never read back. The byte writer
 * read and wrote global memory on every code, a dependent round trip a
 * code on the chain of the slowest MB of each warp. */
H264_DEV static inline void h264_put_words(struct h264_bw *w, uint32_t v, int n)
{
    if (n <= 0)
        return;
    w->acc = (w->acc << n) | ((uint64_t)v & ((1ull << n) - 1));
    w->nacc += n;
    w->bit += (uint32_t)n;
    if (w->nacc >= 32) {
        w->nacc -= 32;
        h264_store_word(w, (w->bit - (uint32_t)w->nacc) / 8 - 4, (uint32_t)(w->acc >> w->nacc), 4);
        w->acc &= (1ull << w->nacc) - 1;
    }
}

/* The word writer's last bits, the rest of their last byte zero (as the
 * byte writer leaves it). */
H264_DEV static inline void h264_flush_words(struct h264_bw *w)
{
    if (w->nacc > 0) {
        h264_store_word(w, (w->bit - (uint32_t)w->nacc) / 8,
                        (uint32_t)(w->acc << (32 - w->nacc)), (w->nacc + 7) / 8);
        w->nacc = 0;
        w->acc = 0;
    }
}

/* h264_put: the byte writer in C (headers, the twins), the word writer
 * on the GPU unless byte_writer; h264_flush ends a buffer's codes (a
 * no-op for the bytes). */
#ifdef __CUDACC__
H264_DEV static inline void h264_put(struct h264_bw *w, uint32_t v, int n)
{
    if (w->byte_writer)
        h264_put_bytes(w, v, n);
    else
        h264_put_words(w, v, n);
}
H264_DEV static inline void h264_flush(struct h264_bw *w)
{
    if (!w->byte_writer)
        h264_flush_words(w);
}
#else
static inline void h264_put(struct h264_bw *w, uint32_t v, int n) { h264_put_bytes(w, v, n); }
static inline void h264_flush(struct h264_bw *w) { (void)w; }
#endif

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

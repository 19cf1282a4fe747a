/*
 * t-h264-bits.c - the matte encoder's two bit writers (kernels/h264/
 * h264_bits.h) write the same bytes: the GPU's word writer (bits gathered
 * in a register, stored 32 at a time, flushed at the end) against the
 * byte writer the twins and the headers use, on random codes of 0..32
 * bits, into buffers at every alignment mod 4. k_cavlc's bytes then equal
 * the twin's by this and g_h264_encode's comparisons.
 */
#include "h264_bits.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

TestSuite(h264_bits, .timeout = 30);

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

Test(h264_bits, word_writer_equals_byte_writer)
{
    enum { CAP = 1024 };
    static uint8_t a[CAP + 8], b[CAP + 8];
    for (int round = 0; round < 2000; round++) {
        const int shift = round & 3, codes = 1 + (int)(rnd() % 300);
        memset(a, 0xa5, sizeof a); /* neither writer may rely on a cleared buffer */
        memset(b, 0x5a, sizeof b);
        struct h264_bw wb = { a + shift, CAP, 0, 0, 0, 0, 0 }, ww = { b + shift, CAP, 0, 0, 0, 0, 0 };
        for (int k = 0; k < codes && wb.bit + 32 <= 8 * CAP; k++) {
            /* short codes mostly, as CAVLC's, and some of 17..32 bits */
            int n = rnd() % 4 ? (int)(rnd() % 17) : (int)(rnd() % 33);
            uint32_t v = rnd() ^ rnd() << 21;
            h264_put_bytes(&wb, v, n);
            h264_put_words(&ww, v, n);
            cr_assert_eq(ww.bit, wb.bit, "round %d code %d: %u bits, the byte writer's %u", round,
                         k, ww.bit, wb.bit);
        }
        h264_flush_words(&ww);
        cr_assert_eq(ww.over, 0u);
        cr_assert_eq(wb.over, 0u);
        uint32_t bytes = (wb.bit + 7) / 8;
        cr_assert_eq(memcmp(a + shift, b + shift, bytes), 0, "round %d: %u bits differ", round,
                     wb.bit);
    }
}

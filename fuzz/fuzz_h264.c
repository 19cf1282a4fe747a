/*
 * fuzz_h264.c - libFuzzer target for the matte encoder (kernels/h264): any
 * mask content, size and QP must code to a stream that libavcodec decodes
 * to exactly the encoder's reconstruction, every frame.
 *
 * The input: byte 0 the width (16..78, even), byte 1 the height, byte 2
 * the QP (mod 52), byte 3 the frame count (1..4) in bits 0-1, Intra 16x16
 * MBs in P frames (h264enc_opts intra_p) on with bit 2, slices with bit 3
 * (1 + byte 0's top 3 bits, mod the MB rows; else one), an IDR bit per
 * frame from bit 4; the rest is the masks' pixels, repeated to fill them
 * (short inputs give flat or striped masks, long ones noise). Built and
 * run by `make fuzz` (mk/fuzz.mk); seeds in tests/data/fuzz-seeds/h264/.
 */
#include "util-h264.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int w = 16 + 2 * (data[0] % 32), h = 16 + 2 * (data[1] % 32), qp = data[2] % 52;
    int n = 1 + (data[3] & 3);
    uint8_t idr[4];
    for (int i = 0; i < n; i++)
        idr[i] = (data[3] >> (4 + i)) & 1;
    size_t fs = (size_t)n * w * h, m = size - 4;
    uint8_t *f = malloc(fs);
    if (!f)
        return 0;
    for (size_t k = 0; k < fs; k++)
        f[k] = m ? data[4 + k % m] : 0;
    struct th264_result r;
    int rows = (h + 15) / 16, s = (data[3] & 8) ? 1 + (data[0] >> 5) % rows : 1;
    struct th264_how how = { .intra_p = (data[3] & 4) ? 1 : -1, .slices = s };
    if (th264_roundtrip_with(f, n, w, h, qp, idr, &how, &r) < 0 || r.frames_decoded != n ||
        r.luma_mismatch || r.chroma_mismatch || r.dec_w != w || r.dec_h != h) {
        fprintf(stderr, "fuzz_h264: %dx%d QP %d, %d frames, %d slices: %s; decoded %d, %d differ "
                "(first %d), chroma %d, size %dx%d\n", w, h, qp, n, s, r.err, r.frames_decoded,
                r.luma_mismatch,
                r.first_bad, r.chroma_mismatch, r.dec_w, r.dec_h);
        abort();
    }
    free(f);
    return 0;
}

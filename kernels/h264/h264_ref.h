/*
 * h264_ref.h - the matte encoder's stages, in plain C: the twins of the
 * CUDA kernels (one function a launch), run by h264enc.c on the CPU.
 *
 * A frame is coded in stages that a GPU runs one macroblock (MB) a thread
 * (docs/notes/h264.md):
 *   1. ref_h264_search then ref_h264_inter (P frame, every MB at once:
 *      each MB's integer motion vector, then its coding against the
 *      reference there) or ref_h264_intra (IDR,
 *      one anti-diagonal of MBs a call: an MB predicts from its left, top
 *      and top-left neighbours, which lie on earlier diagonals): predict,
 *      4x4 integer transform, quantise, reconstruct exactly as the standard
 *      decoder does; the MB's type, levels and each 4x4 block's
 *      total_coeff recorded in struct h264_mb;
 *   2. ref_h264_skipruns: each coded MB's mb_skip_run (a scan);
 *   3. ref_h264_cavlc: each MB's codewords (mb_skip_run, header, residual
 *      with nC from its neighbours' total_coeff) into its own bit buffer,
 *      and their length;
 *   4. ref_h264_scan: the exclusive prefix sum of the lengths;
 *   4b. ref_h264_slices: each slice's place, byte-aligned: its header's
 *      room, its MBs' bits, its last skip run and trailing bits;
 *   5. ref_h264_pack: each MB's bits OR-ed in at its place, and each
 *      slice's end; the CPU then ORs each slice's header into its first
 *      bytes and escapes it into its NAL unit.
 * Slices (h264_slice_impl.h) cut the frame into bands of MB rows that
 * predict nothing from each other; the run of stage 2 is the frame's, cut
 * to the slice where it is written.
 * Without intra MBs in P frames (h264enc_opts intra_p off), no MB of a P
 * frame depends on another MB of that frame's coding: each MB searches its
 * vector alone (h264_mv_impl.h); the predictions of stage 1b read only the
 * neighbours' vectors, all final after the search. With them on, stages 1c
 * and 1d follow: an MB turning intra reads its neighbours' final
 * reconstructions (a wavefront on the GPU), then the inter MBs' vector
 * predictions are made again around the intra ones.
 *
 * The twins: ref_h264_* here (h264_mb_ref.c, h264_cavlc_ref.c), cu_h264_*
 * with a stream (h264_cuda.h: h264_mb.cu, h264_cavlc.cu), every pointer of
 * struct h264_frame then in device memory; the per-MB code is one source
 * (h264_mb_impl.h, h264_cavlc_impl.h), and they give the same bytes.
 *
 * Buffers are caller-owned; nothing here allocates. Planes are luma only
 * (chroma is a constant 128, coded as nothing: chroma DC prediction of 128
 * and no chroma residual) and padded to whole MBs.
 */
#ifndef VR_H264_REF_H
#define VR_H264_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An MB's codewords never take more than this many bytes: 256 levels of
 * at most 28 bits (|level| is clamped to H264_MAX_LEVEL), 17 coeff_tokens
 * of at most 16 bits, the header and the skip run: under 7700 bits. */
enum { H264_MB_MAX_BYTES = 1024, H264_MAX_LEVEL = 2047 };

/* The packed slices' buffer (stage 5's out): every MB at its largest, and
 * each slice's header, last skip run and trailing bits (under 32 bytes),
 * and 64 to spare. */
static inline size_t h264_rbsp_cap(int mbw, int mbh, int slices)
{
    return (size_t)mbw * mbh * H264_MB_MAX_BYTES + (size_t)slices * 32 + 64;
}

/* A P MB's vector is at most this many pixels each way (its whole-pel
 * search; the quarter-pel refinement stays inside it too). */
enum { H264_SEARCH = 16 };

enum h264_mb_type { H264_MB_SKIP = 0, H264_MB_P16 = 1, H264_MB_I16 = 2 };

/* What stage 1 decided for one MB; stage 3 reads it and its neighbours'. */
struct h264_mb {
    uint8_t type;        /* enum h264_mb_type */
    uint8_t mode;        /* I16: 0 vertical, 1 horizontal, 2 DC, 3 plane */
    uint8_t cbp;         /* luma coded_block_pattern: P16 a bit per 8x8, I16 0 or 15 */
    uint8_t nc[16];      /* total_coeff of each 4x4 block, raster over the MB (y*4+x);
                          * 0 for blocks not coded (their 8x8 not in cbp, skips);
                          * I16: its AC block's count (the DC block's is not kept) */
    int16_t mv[2];       /* P: the vector, quarter-pel (x, y); I16: 0 */
    int16_t mvd[2];      /* P16: mv minus its prediction (8.4.1.3) */
    int16_t dc[16];      /* I16: the Intra16x16DCLevel levels, zigzag order */
    int16_t lv[16][16];  /* levels of each 4x4 block (raster y*4+x), zigzag order;
                          * I16 uses [1..15] (AC), P16 all 16 */
    uint32_t sad;        /* P16 (stage 1b): SAD of the source against its inter
                          * prediction, which stage 1c's intra SADs must beat */
};

/* One frame's stage arguments. Set by h264enc.c; every pointer is a
 * caller-owned buffer of the size said. */
struct h264_frame {
    int mbw, mbh;             /* size in MBs */
    int qp;                   /* 0..51 */
    uint8_t *src;             /* source luma, mbw*16 x mbh*16, stride ls (stage 0 writes it) */
    const uint8_t *ref;       /* P: the reference's reconstruction, stride ls */
    uint8_t *rec;             /* this frame's reconstruction, stride ls (written) */
    int ls;
    struct h264_mb *mb;       /* [mbw*mbh] */
    uint32_t *run;            /* [mbw*mbh + 1]: skipped MBs just before MB i; [n]: after the last */
    uint8_t *bits;            /* [mbw*mbh][H264_MB_MAX_BYTES]: each MB's codewords */
    uint32_t *nbits;          /* [mbw*mbh]: their length in bits (0 for a skip) */
    uint64_t *pos;            /* [mbw*mbh + 1]: exclusive prefix sum of nbits; [n] = total */
    uint32_t *counts;         /* [3]: MBs of each enum h264_mb_type (stage 2) */
    int slices;               /* 1..mbh: slices of whole MB rows (h264_slice_impl.h) */
    uint32_t hdr_bits;        /* a slice header's bits less its first_mb_in_slice's */
    uint64_t *sbyte;          /* [slices + 1]: each slice's first byte in the packed
                               * output (stage 4b); [slices]: the end */
    int byte_writer;          /* the GPU's stages 3 and 5 with the twins' byte writer
                               * (h264_bits.h; VR_H264_CAVLC_WORDS=0, to compare); the
                               * C twin always writes bytes */
};

/* Stage 0: the w x h luma y (stride yls) into f->src (stride f->ls), padded
 * to whole MBs with the last column and row repeated. */
void ref_h264_load(const struct h264_frame *f, const uint8_t *y, int yls, int w, int h);

/* Stage 1a, P frame: each MB's vector (h264_mv_impl.h) into f->mb[].mv,
 * which holds the frame before's on entry. */
void ref_h264_search(const struct h264_frame *f);

/* Stage 1b, P frame: every MB against f->ref at its vector: P_Skip when the
 * vector is P_Skip's predicted one and nothing is left to code, else
 * P16x16 with its mvd. */
void ref_h264_inter(const struct h264_frame *f);

/* Stage 1c, P frame with Intra 16x16 MBs in P frames (h264enc_opts
 * intra_p): after stage 1b, each P16 MB with levels turns I16x16 when its
 * best intra prediction's SAD + 4 lambda is below its inter SAD, predicting
 * from its neighbours' final reconstructions; raster order here (the GPU:
 * a wavefront, row y's MB x after row y - 1's MB x where that or its left
 * neighbour is a candidate too; a slice's top row waits for none). */
void ref_h264_intra_p(const struct h264_frame *f);

/* Stage 1d, after 1c: every inter MB's P_Skip decision and mvd again, an
 * intra neighbour's vector now unavailable (refIdx -1, 8.4.1.3.1); the
 * reconstructions do not change (a P_Skip and a P16 without levels at the
 * same vector both copy the prediction). */
void ref_h264_pfix(const struct h264_frame *f);

/* Stage 1, IDR: the MBs (x, y) with x + y == d, Intra 16x16 with the
 * cheapest of the available V / H / DC / plane predictions by SAD. Call
 * for d = 0 .. mbw + mbh - 2 in order. */
void ref_h264_intra(const struct h264_frame *f, int d);

/* Stage 2: f->run and f->counts from the MB types. */
void ref_h264_skipruns(const struct h264_frame *f);

/* Stage 3: each MB's codewords into f->bits, their lengths into f->nbits;
 * idr: an I slice (no skip runs), else a P slice. */
void ref_h264_cavlc(const struct h264_frame *f, int idr);

/* Stage 4: f->pos from f->nbits. */
void ref_h264_scan(const struct h264_frame *f);

/* Stage 4b: f->sbyte from f->pos, the runs and f->hdr_bits: slice k
 * takes its header's bits (f->hdr_bits + first_mb_in_slice's), its MBs',
 * its last skip run's (a P slice) and the stop bit, rounded up to bytes. */
void ref_h264_slices(const struct h264_frame *f, int idr);

/* Before stage 5: zero out's bytes up to the last slice's end
 * (f->sbyte[slices]) and pad bytes more: the pack ORs into them. */
void ref_h264_clear(const struct h264_frame *f, uint8_t *out, int pad);

/* Stage 5: each MB's bits into out at its slice's place (f->sbyte) after
 * the header's room, and each slice's last skip run (a P slice) and stop
 * bit after its last MB. out must be zero up to the end (ref_h264_clear);
 * on the GPU out is 4-byte aligned with 4 bytes to spare (bytes are OR-ed
 * a word at a time). */
void ref_h264_pack(const struct h264_frame *f, uint8_t *out, int idr);

#ifdef __cplusplus
}
#endif

#endif

/*
 * vio_nvdec.h - whether NVDEC can decode a stream, decided before it is
 * opened: a pure function of codec, frame size, bit depth and the NVDEC
 * limits, so the choice is testable without a GPU. A stream it cannot take
 * (8K H.264: NVDEC stops at 4096x4096 for H.264 on every generation up to
 * Hopper) is decoded on the CPU instead of failing chunk after chunk.
 */
#ifndef VR_VIO_NVDEC_H
#define VR_VIO_NVDEC_H

#include <stddef.h>

/* One codec's NVDEC limits. */
struct vio_nvdec_cap {
    const char *codec;   /* libavcodec's name: "h264", "hevc", ...; NULL ends a table */
    int max_w, max_h;    /* largest coded size */
    int max_bit_depth;
};

/* The limits of NVDEC on Turing, Ampere, Ada and Hopper (NVIDIA's Video
 * Codec SDK support matrix), ended by a NULL codec. */
extern const struct vio_nvdec_cap vio_nvdec_caps_default[];

/* 1 when NVDEC can decode `codec` at w x h and bit_depth according to
 * `caps` (NULL: vio_nvdec_caps_default), else 0 with the reason in `why`
 * ("h264 8192x4096: NVDEC decodes h264 up to 4096x4096"). */
int vio_nvdec_can(const char *codec, int w, int h, int bit_depth,
                  const struct vio_nvdec_cap *caps, char *why, size_t n);

/* libavcodec threads for an NVDEC decoder whose caller left the count to
 * auto: VR_NVDEC_THREADS (1..16, benches), else VIO_NVDEC_THREADS. The
 * decoder's own work there is parsing. Auto's frame threads (16 on a
 * 32-core host) each cost an extra decode surface (48 MiB at 8K) and a
 * frame of delay: on an H200 one thread made 7 sessions' decode-only fps
 * 325.5 (auto 298.9), a session's first frame 1.1 s (1.9 s) and its GPU
 * memory half (docs/PERF.md, "One decoder thread"). */
#define VIO_NVDEC_THREADS 1
int vio_nvdec_threads(void);

#endif

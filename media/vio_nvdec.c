/*
 * vio_nvdec.c - NVDEC's limits and the decode choice (see vio_nvdec.h).
 */
#include "vio_nvdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct vio_nvdec_cap vio_nvdec_caps_default[] = {
    { "h264", 4096, 4096, 8 },
    { "hevc", 8192, 8192, 12 },
    { "av1", 8192, 8192, 10 },
    { "vp9", 8192, 8192, 12 },
    { "vp8", 4096, 4096, 8 },
    { "mpeg2video", 4080, 4080, 8 },
    { NULL, 0, 0, 0 },
};

int vio_nvdec_can(const char *codec, int w, int h, int bit_depth,
                  const struct vio_nvdec_cap *caps, char *why, size_t n)
{
    const struct vio_nvdec_cap *c = caps ? caps : vio_nvdec_caps_default;
    for (; c->codec; c++)
        if (codec && !strcmp(codec, c->codec))
            break;
    if (!c->codec) {
        snprintf(why, n, "%s: NVDEC does not decode this codec", codec ? codec : "?");
        return 0;
    }
    if (w > c->max_w || h > c->max_h) {
        snprintf(why, n, "%s %dx%d: NVDEC decodes %s up to %dx%d", codec, w, h, codec, c->max_w,
                 c->max_h);
        return 0;
    }
    if (bit_depth > c->max_bit_depth) {
        snprintf(why, n, "%s %d-bit: NVDEC decodes %s up to %d-bit", codec, bit_depth, codec,
                 c->max_bit_depth);
        return 0;
    }
    if (n)
        why[0] = '\0';
    return 1;
}

int vio_nvdec_threads(void)
{
    const char *v = getenv("VR_NVDEC_THREADS");
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : -1;
    return n >= 1 && n <= 16 && !*end ? (int)n : VIO_NVDEC_THREADS;
}

/*
 * remux_gop.h - the packets of the current GOP (from its keyframe on, in
 * decode order), kept by the split so that a chunk cut at an open-GOP
 * keyframe (HEVC CRA, H.264 recovery point) can carry them as a pre-roll:
 * the leading pictures after the cut reference them.
 */
#ifndef VR_REMUX_GOP_H
#define VR_REMUX_GOP_H

#include <stddef.h>
#include <stdint.h>

#define REMUX_GOP_MAX_PACKETS 1200          /* 20 s at 60 fps */
#define REMUX_GOP_MAX_BYTES   (512u << 20)  /* ~27 s of 150 Mbit/s */

struct AVPacket;

struct remux_gop {
    struct AVPacket **pkt;   /* owned references, decode order */
    int n, cap;
    size_t bytes;
    int overflow;            /* more than the limits: no pre-roll from this GOP */
};

/* Starts a new GOP (a keyframe arrived): drops the packets held. */
void remux_gop_reset(struct remux_gop *g);

/* Keeps a reference to pkt (its timestamps as they are now). Returns 0, or
 * -1 when out of memory (the GOP is marked overflowed, no pre-roll). */
int remux_gop_push(struct remux_gop *g, const struct AVPacket *pkt);

/* 1 when the GOP can serve as a pre-roll (some packets, within limits). */
int remux_gop_usable(const struct remux_gop *g);

/* Frees everything; accepts a zeroed struct. */
void remux_gop_free(struct remux_gop *g);

#endif

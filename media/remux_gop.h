/*
 * remux_gop.h - the packets before the next cut (from a keyframe on, in
 * decode order), kept by the split so that a chunk can carry them as a
 * pre-roll: the references of an open-GOP cut's leading pictures (HEVC
 * CRA, H.264 recovery point), and the frames that warm the temporal filter
 * up. With a warm-up they reach back as many GOPs as the filter's depth
 * takes (an all-intra source: that many GOPs of one frame), not one GOP.
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
    int overflow;            /* more than the limits: no pre-roll from these GOPs */
    int *start;              /* [ngop]: where each GOP kept starts in pkt[] */
    unsigned char *open;     /* [ngop]: its keyframe may have leading pictures (not a
                              * clean cut), which a pre-roll leaves out */
    int ngop, gcap;
    int keep;                /* set by the caller: frames of history a cut wants (the
                              * warm-up); 0: only the GOP before the cut */
    int leading;             /* set by the caller: the most leading pictures an open
                              * keyframe may have (the stream's reorder depth) */
    int from_start;          /* set by the caller to 1 before the first packet: what is
                              * kept still starts at the stream's first packet */
};

/* Drops the packets held (a fresh start: not from the stream's start). */
void remux_gop_reset(struct remux_gop *g);

/* A keyframe (`open`: not a clean cut) starts a new GOP: with keep == 0
 * the packets held are dropped; else the oldest GOPs are, while those after
 * them still hold `keep` frames before any later cut. Returns 0, or -1
 * when out of memory (no pre-roll until the next keyframe). */
int remux_gop_key(struct remux_gop *g, int open);

/* Keeps a reference to pkt (its timestamps as they are now). Returns 0, or
 * -1 when out of memory (the GOP is marked overflowed, no pre-roll). */
int remux_gop_push(struct remux_gop *g, const struct AVPacket *pkt);

/* 1 when the packets held can serve as a pre-roll: some, within limits,
 * and (with keep) `keep` frames less the first keyframe's leading pictures,
 * or all the stream has had. */
int remux_gop_usable(const struct remux_gop *g);

/* Frees everything; accepts a zeroed struct. */
void remux_gop_free(struct remux_gop *g);

#endif

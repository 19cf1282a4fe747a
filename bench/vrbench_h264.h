/*
 * vrbench_h264.h - what bench/vrbench_h264.c shares with its per-GPU row
 * (vrbench_h264_gpus.c): the clip held in memory, the packets' hash, the
 * wall clock.
 */
#ifndef VR_BENCH_H264_H
#define VR_BENCH_H264_H

#include <stdint.h>

struct clip {
    int w, h, n;
    uint8_t **y; /* n frames of w*h */
};

/* The packets' hash: h (0xcbf29ce484222325 to start) updated by n bytes. */
uint64_t h264b_hash(uint64_t h, const uint8_t *p, int n);

/* CLOCK_MONOTONIC in seconds. */
double h264b_wall_s(void);

/* The per-GPU row: for each K of VR_H264_ENCODERS (default "1 2 4"), K
 * threads each with its own CUDA encoder (slices a frame, 0: the default)
 * code `total` frames of c (one copy in device memory, read by all)
 * queued, as run_gpu's queued row does; prints the frames of all over the
 * wall time as the GPU's fps. Each encoder's packets must hash to `want`
 * (the single encoder's). 0 or 1 (said on stderr). */
int h264b_per_gpu(const struct clip *c, int qp, int gop, double fps, int slices, int total,
                  uint64_t want);

#endif

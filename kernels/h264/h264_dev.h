/*
 * h264_dev.h - what lets the matte encoder's per-MB code (h264_*_impl.h,
 * h264_bits.h) compile both as plain C (the twins) and as CUDA device
 * code (the kernels): function and table qualifiers, and the byte OR of
 * the pack, atomic on the GPU where two MBs' threads share a byte.
 */
#ifndef VR_H264_DEV_H
#define VR_H264_DEV_H

#include <stdint.h>

#ifdef __CUDACC__
#define H264_DEV __device__
#define H264_TABLE static __constant__ const
/* out is 4-byte aligned: the byte's word, OR-ed atomically */
__device__ static inline void h264_or8(uint8_t *out, uint64_t k, uint8_t v)
{
    if (v)
        atomicOr((unsigned int *)(out + (k & ~(uint64_t)3)), (unsigned int)v << (8 * (k & 3)));
}
#else
#define H264_DEV
#define H264_TABLE static const
static inline void h264_or8(uint8_t *out, uint64_t k, uint8_t v) { out[k] |= v; }
#endif

#endif

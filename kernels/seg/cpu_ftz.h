/*
 * cpu_ftz.h - run float code on the CPU with denormals flushed to zero.
 *
 * The network's sigmoid gives values like 1e-40 over background, and every
 * product with them (blend weights, box filters, guided coefficients) then
 * runs through the x86 slow path for subnormal floats: measured 2x slower
 * for the whole CPU engine on a mostly-background frame. Values that small
 * are 0 for an 8-bit mask, and CUDA kernels flush them too (the twins'
 * tolerance is 1/255), so the CPU backend turns on FTZ/DAZ for the duration
 * of a call and restores the caller's mode after.
 */
#ifndef VR_CPU_FTZ_H
#define VR_CPU_FTZ_H

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>

/* Turns FTZ and DAZ on; returns the previous control word for cpu_ftz_end(). */
static inline unsigned cpu_ftz_begin(void)
{
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    return csr;
}

static inline void cpu_ftz_end(unsigned csr)
{
    _mm_setcsr(csr);
}
#else
static inline unsigned cpu_ftz_begin(void) { return 0; }
static inline void cpu_ftz_end(unsigned csr) { (void)csr; }
#endif

#endif

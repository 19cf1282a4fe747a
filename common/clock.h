/*
 * clock.h - the two clocks the product reads. Durations (stage times,
 * timeouts, rates) come from the monotonic clock, which never jumps with
 * NTP or an operator's `date`; timestamps stored in Redis records and shown
 * to people come from the wall clock.
 */
#ifndef VR_CLOCK_H
#define VR_CLOCK_H

#include <stdlib.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on the monotonic clock (an arbitrary origin: subtract two). */
static inline double clock_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The same in milliseconds and microseconds. */
static inline double clock_mono_ms(void) { return clock_mono_s() * 1e3; }
static inline double clock_mono_us(void) { return clock_mono_s() * 1e6; }

/* Milliseconds since the epoch (the time stored in records). */
static inline long long clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Test-only slowness: the milliseconds in environment variable `env` (0
 * when unset or not a positive number, at most 1000). A test that needs a
 * slow step (a chunk longer than its lease, a split it can interrupt) makes
 * it slow itself this way instead of assuming the machine's speed. */
static inline unsigned clock_test_delay_ms(const char *env)
{
    const char *s = getenv(env);
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || v <= 0)
        return 0;
    return (unsigned)(v > 1000 ? 1000 : v);
}

#ifdef __cplusplus
}
#endif

#endif

/*
 * ctl_pulse.c - the main loop's pulse (ctl.h): the loop, a split and a
 * stitch mark each turn; the heartbeat and /healthz read how long ago the
 * last one was, so a controller stuck in one call stops saying it works.
 * A leaf file: everything that turns calls it, it calls nothing of theirs.
 */
#include "ctl.h"

#include "clock.h"

void ctl_loop_pulse(struct ctl *c)
{
    __atomic_store_n(&c->loop_turn_ms, (long long)clock_mono_ms(), __ATOMIC_RELAXED);
}

double ctl_loop_stalled(const struct ctl *c)
{
    long long at = __atomic_load_n(&c->loop_turn_ms, __ATOMIC_RELAXED);
    long long idle = (long long)clock_mono_ms() - at;
    double stuck = at > 0 && idle > c->stall_ms ? idle / 1000.0 : 0;
    return stuck > 0 || !c->stitch_view ? stuck : ctl_loop_stalled(c->stitch_view);
}

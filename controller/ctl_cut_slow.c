/*
 * ctl_cut_slow.c - a straggler's chunk is cut before anyone is idle (issue
 * 44): cut only once the fleet is idle, a slow worker still encodes what
 * its reader read ahead and the cut's margin at its own low rate, and that
 * sets the job's end. So each turn the running chunks' rates (their
 * workers' heartbeats: frames encoded over the time since the chunk
 * started) predict when each ends; a worker expected to end later than
 * the fleet could drain all that is left, by more than a tail's set-up
 * and a slack for rates that jitter, has its chunk cut so that it keeps
 * what it encodes in that drain time. The tail is parted among the other
 * workers (ctl_cut.c, one part each, none shorter than a few set-ups) and
 * waits in the priority stream, which each reads first once its chunk
 * ends: in one part, the first worker free took it alone while the others
 * idled until an idle cut parted it again (measured 1.46x the straggler-
 * free job's time against 1.21-1.23x in parts, docs/PERF.md).
 */
#include "ctl_cut.h"

/* Equal workers' rates differ by noise: a worker is slow when it would end
 * this much (a fraction of the drain time) after the fleet, and more. */
#define CTL_CUT_SLOW_SLACK 0.25

int ctl_cut_slow_pick(const struct ctl_cut_rate *r, int n, long long *want, int *first)
{
    double left = 0, fps = 0;
    int known = 0, s = -1, f = -1;
    for (int i = 0; i < n; i++) {
        if (r[i].fps <= 0 || r[i].left <= 0)
            continue;
        left += (double)r[i].left;
        fps += r[i].fps;
        known++;
        double end = r[i].left / r[i].fps;
        if (s < 0 || end > r[s].left / r[s].fps)
            s = i;
        if (f < 0 || end < r[f].left / r[f].fps)
            f = i;
    }
    if (known < 2 || s == f)
        return -1;
    double drain = left / fps; /* every worker busy until all that is left is done */
    double setup = CTL_CUT_SETUP_MS / 1000.0 + r[s].warmup / r[f].fps;
    if (r[s].left / r[s].fps <= drain * (1 + CTL_CUT_SLOW_SLACK) + setup)
        return -1;
    /* it keeps what the lower of its rates encodes: the one between its
     * heartbeats, over the first few frames, read 3.3 fps for 2 */
    double keep_fps = r[s].fps_low > 0 && r[s].fps_low < r[s].fps ? r[s].fps_low : r[s].fps;
    *want = r[s].done + (long long)(keep_fps * drain);
    *first = f;
    return s;
}

/*
 * ctl_cut_fast.c - who a tail is cut for (issue 44): an idle worker whose
 * rate is well under the fleet's takes no tail, since a tail taken by a
 * straggler becomes the job's end again; a cut is made only when the tail
 * at its taker's rate (its set-up and warm-up in) and the head left to the
 * running worker both end before the running worker would end the whole;
 * and when several fast workers wait, the running worker keeps its share
 * of what is left for all of them, not half (the tail is cut again for the
 * next one), so a tail split three ways is split in thirds.
 */
#include "ctl_cut.h"

#include <stdlib.h>
#include <string.h>

/* A worker whose rate is under this fraction of the fleet's median is slow. */
#define CTL_CUT_FAST_MIN 0.5

static int ctl_cut_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ctl_cut_fleet_median(const struct rq_worker_info *w, int n, const struct ctl_cut_rate *r,
                            int nr)
{
    double *v = malloc((size_t)(n + nr + 1) * sizeof *v);
    int k = 0;
    if (!v)
        return 0;
    for (int i = 0; i < nr; i++)
        if (r[i].fps > 0)
            v[k++] = r[i].fps;
    for (int i = 0; i < n; i++)
        if (!strcmp(w[i].state, "idle") && w[i].fps > 0 && w[i].fps < 1e5)
            v[k++] = w[i].fps;
    qsort(v, (size_t)k, sizeof *v, ctl_cut_cmp_d);
    double m = k ? (k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2) : 0;
    free(v);
    return m;
}

int ctl_cut_idle_slow(const struct rq_worker_info *w, double median)
{
    double fps = w->fps > 0 && w->fps < 1e5 ? w->fps : 0; /* its last chunk's */
    return w->chunks_done > 0 && fps > 0 && median > 0 && fps < CTL_CUT_FAST_MIN * median;
}

int ctl_cut_pays(long long left, long long tail, int warmup, double run_fps, double idle_fps)
{
    if (run_fps <= 0 || tail <= 0 || tail >= left)
        return tail > 0 && tail < left; /* rates unknown: the even split's rule */
    double fps = idle_fps > 0 ? idle_fps : run_fps;
    double whole = left / run_fps, head = (left - tail) / run_fps;
    double t = CTL_CUT_SETUP_MS / 1000.0 + (warmup + tail) / fps;
    return (head > t ? head : t) < whole;
}

/*
 * remux_plan_wave.c - an elastic plan's last wave graded (issue 43): its
 * chunks (groups of pieces, remux_plan_groups) cut again from short to
 * long in source order, as remux_plan grades an even plan's.
 *
 * On one GPU a job is one wave: every slot ran one chunk of the same
 * length at the same shared NVDEC rate, so all ended within a second and
 * the stitch, which takes chunks in order, had the whole output (1.75 GB,
 * ~7 s at ~250 MB/s) left after the last one with the GPU idle. Graded,
 * the first chunks end first and are stitched while the others run; the
 * slots they free take cuts of the longest (the last) chunks (ctl_cut.c),
 * whose tails come last in the output as well.
 */
#include "remux_range.h"

/* The wave's first chunk is 1 - GRADE times the mean, its last 1 + GRADE
 * (remux_plan.c's PLAN_WAVE_GRADE, for the even plan). */
#define WAVE_GRADE 0.4

int remux_plan_grade_groups(const struct remux_plan *pl, int *starts, int n, int wave)
{
    int w = wave < n ? wave : n, first = n - w;
    if (w < 2 || pl->nchunks < 2)
        return n;
    double a = pl->chunks[starts[first]].start_s;
    double b = pl->chunks[0].start_s + pl->duration_s;
    double mean = (b - a) / w, at = a;
    int prev = starts[first];
    for (int j = 1; j < w; j++) {
        at += mean * (1 - WAVE_GRADE + 2 * WAVE_GRADE * (j - 1) / (w - 1));
        int i = prev + 1, last = pl->nchunks - (w - j); /* room for one piece each after */
        while (i < last && pl->chunks[i].start_s < at - 1e-6)
            i++;
        if (i > last) /* fewer pieces than chunks: leave the even groups */
            return n;
        starts[first + j] = prev = i;
    }
    return n;
}

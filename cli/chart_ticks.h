/*
 * chart_ticks.h - gridlines a reader can read: steps of 1, 2 or 5 times a
 * power of ten (0, 2, 4, 6 fps; 0, 0.5, 1 fps), as plotting libraries
 * choose them, for the charts of `vrctl report`.
 */
#ifndef VR_CHART_TICKS_H
#define VR_CHART_TICKS_H

/* The axis of a chart whose largest value is `top` (<= 0: an empty chart,
 * drawn as 0..1) with at most `most` steps (>= 1): the step, the axis's
 * end (a whole number of steps >= top) and the decimals a label needs
 * (0 for a step of 1 or more). Returns the number of steps. */
struct chart_axis {
    double step, end;
    int decimals;
};
int chart_ticks(double top, int most, struct chart_axis *ax);

#endif

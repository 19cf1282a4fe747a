/*
 * chart_ticks.c - 1-2-5 gridline steps (see chart_ticks.h).
 */
#include "chart_ticks.h"

#include <math.h>

int chart_ticks(double top, int most, struct chart_axis *ax)
{
    if (!(top > 0) || !isfinite(top))
        top = 1;
    if (most < 1)
        most = 1;
    double raw = top / most, mag = pow(10, floor(log10(raw)));
    static const double mult[] = { 1, 2, 5, 10 };
    double step = 10 * mag;
    for (int i = 0; i < 4; i++)
        if (mult[i] * mag * most >= top * (1 - 1e-9)) {
            step = mult[i] * mag;
            break;
        }
    int n = (int)ceil(top / step - 1e-9);
    ax->step = step;
    ax->end = n * step;
    ax->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    return n;
}

/*
 * remux_place.c - where a copied chunk's frames fall in its range when the
 * worker's decoder dropped some (a damaged packet it refused, concealed as
 * ffmpeg does: --on-decode-error conceal). A copy chunk's timeline starts
 * at its own first packet, so the matte's times alone cannot say which
 * frames are missing; the chunk's input copy can: its frames in
 * presentation order are the pre-roll's (not written) and then the
 * range's, and each matte frame keeps its input frame's time.
 */
#include "remux_io.h"

#include <stdlib.h>

/* The index in a[lo, hi) nearest to v. */
static long long nearest(const int64_t *a, long long lo, long long hi, int64_t v)
{
    long long l = lo, h = hi;
    while (l < h) { /* first a[i] >= v */
        long long m = l + (h - l) / 2;
        if (a[m] < v)
            l = m + 1;
        else
            h = m;
    }
    if (l == hi || (l > lo && v - a[l - 1] <= a[l] - v))
        return l - 1;
    return l;
}

int remux_place_by_input(const char *input, const int64_t *cpts, long long cn, AVRational ctb,
                         long long frames, long long *place, vr_err *err)
{
    int64_t *ipts, ifd;
    long long in;
    AVRational itb;
    int rc = remux_pts_list(input, &ipts, &in, &itb, &ifd, err);
    if (rc < 0)
        return rc;
    long long pre = in - frames; /* the pre-roll's frames come first */
    if (pre < 0 || cn > frames) {
        rc = vr_err_set(err, VR_EFORMAT, "%lld frames, its input %lld, its range %lld", cn, in,
                        frames);
        goto out;
    }
    /* a tick of the coarser time base: the matte may count in ms */
    int64_t tol = av_rescale_q_rnd(1, ctb, itb, AV_ROUND_UP);
    if (tol < 1)
        tol = 1;
    for (long long j = 0; j < cn; j++) {
        int64_t v = av_rescale_q(cpts[j], ctb, itb);
        long long k = nearest(ipts, pre, in, v);
        int64_t d = ipts[k] > v ? ipts[k] - v : v - ipts[k];
        if (d > tol || (j > 0 && k - pre <= place[j - 1])) {
            rc = vr_err_set(err, VR_EFORMAT, "its frame at %.3f s is not one of its input's",
                            cpts[j] * av_q2d(ctb));
            goto out;
        }
        place[j] = k - pre;
    }
out:
    free(ipts);
    return rc;
}

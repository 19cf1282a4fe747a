/*
 * ctl_thread_view.c - the controller as a thread beside the loop sees it
 * (the stitch thread, the chunk objects' sweeper): one place that says
 * which of the loop's state a thread must not share, so the two threads
 * cannot drift apart in what they clear.
 */
#include "ctl.h"

#include <string.h>

int ctl_thread_view(struct ctl *tc, const struct ctl *c, vr_err *err)
{
    *tc = *c;
    explicit_bzero(tc->notify.secret, sizeof tc->notify.secret); /* not the thread's */
    tc->q = NULL;
    tc->stitches = NULL;
    tc->nstitches = 0;
    tc->between_chunks = NULL;
    tc->loop_turn_ms = 0;
    tc->stitcher = NULL; /* its calls work in place */
    tc->stitch_view = NULL;
    tc->chunk_gc = NULL;
    return rq_open(c->url, 10000, &tc->q, err);
}

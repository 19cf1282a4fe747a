/*
 * ctl_cut_rate.c - a busy worker's rate on the chunk in hand, as the
 * straggler rule needs it (ctl_cut_slow.c): frames over time between its
 * heartbeats since the first that showed a frame encoded. The rate a
 * heartbeat carries counts from the chunk's start, set-up included, which
 * under load makes every worker look slow for its first seconds and the
 * fleet's drain time too long; a straggler then keeps more than it can do.
 */
#include "ctl_cut.h"

#include <stdio.h>
#include <string.h>

#define CTL_CUT_RATE_MAX 256
/* A rate is trusted over two heartbeats and this many frames. */
#define CTL_CUT_RATE_FRAMES 2

struct ctl_cut_rate_seen {
    char name[160];
    char chunk[96];
    long long seen0, frames0; /* the first heartbeat with a frame of it encoded */
};

static struct ctl_cut_rate_seen rate_now[CTL_CUT_RATE_MAX], rate_was[CTL_CUT_RATE_MAX];
static int n_now;

void ctl_cut_rate_note(const struct rq_worker_info *w, int n)
{
    int n_was = n_now;
    memcpy(rate_was, rate_now, (size_t)n_was * sizeof rate_was[0]);
    n_now = 0;
    for (int i = 0; i < n && n_now < CTL_CUT_RATE_MAX; i++) {
        if (strcmp(w[i].state, "busy") || w[i].chunk_frames <= 0)
            continue;
        struct ctl_cut_rate_seen *e = &rate_now[n_now++];
        snprintf(e->name, sizeof e->name, "%s", w[i].name);
        snprintf(e->chunk, sizeof e->chunk, "%s", w[i].chunk);
        e->seen0 = w[i].seen_ms;
        e->frames0 = w[i].chunk_frames;
        for (int j = 0; j < n_was; j++)
            if (!strcmp(rate_was[j].name, w[i].name) && !strcmp(rate_was[j].chunk, w[i].chunk) &&
                rate_was[j].frames0 <= w[i].chunk_frames) {
                e->seen0 = rate_was[j].seen0;
                e->frames0 = rate_was[j].frames0;
                break;
            }
    }
}

double ctl_cut_rate_of(const struct rq_worker_info *w)
{
    for (int i = 0; i < n_now; i++) {
        const struct ctl_cut_rate_seen *e = &rate_now[i];
        if (strcmp(e->name, w->name) || strcmp(e->chunk, w->chunk))
            continue;
        long long dt = w->seen_ms - e->seen0, df = w->chunk_frames - e->frames0;
        int hb = w->hb_ms > 0 && w->hb_ms <= 60000 ? w->hb_ms : 1000;
        return dt >= 2LL * hb && df >= CTL_CUT_RATE_FRAMES ? df * 1000.0 / dt : 0;
    }
    return 0;
}

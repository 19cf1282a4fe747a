/*
 * remux_gop.c - the packets before the next cut, for pre-rolls (see
 * remux_gop.h). References, not copies: libavformat's packet buffers are
 * refcounted.
 */
#include "remux_gop.h"

#include <libavcodec/avcodec.h>
#include <stdlib.h>
#include <string.h>

void remux_gop_reset(struct remux_gop *g)
{
    for (int i = 0; i < g->n; i++)
        av_packet_free(&g->pkt[i]);
    g->n = 0;
    g->bytes = 0;
    g->overflow = 0;
    g->ngop = 0;
    g->from_start = 0;
}

/* Frames GOP i on would give a pre-roll: its keyframe's leading pictures
 * are left out, and an open keyframe may have `leading` of them. */
static int gop_frames_from(const struct remux_gop *g, int i)
{
    return g->n - g->start[i] - (g->open[i] ? g->leading : 0);
}

/* Drops the oldest GOP's packets. */
static void gop_drop_first(struct remux_gop *g)
{
    int k = g->ngop > 1 ? g->start[1] : g->n;
    for (int i = 0; i < k; i++) {
        g->bytes -= (size_t)g->pkt[i]->size;
        av_packet_free(&g->pkt[i]);
    }
    memmove(g->pkt, g->pkt + k, (size_t)(g->n - k) * sizeof *g->pkt);
    g->n -= k;
    memmove(g->start, g->start + 1, (size_t)(g->ngop - 1) * sizeof *g->start);
    memmove(g->open, g->open + 1, (size_t)(g->ngop - 1));
    g->ngop--;
    for (int i = 0; i < g->ngop; i++)
        g->start[i] -= k;
    g->from_start = 0;
}

int remux_gop_key(struct remux_gop *g, int open)
{
    if (g->keep <= 0 || g->overflow)
        remux_gop_reset(g);
    while (g->ngop > 1 && gop_frames_from(g, 1) >= g->keep)
        gop_drop_first(g);
    if (g->ngop == g->gcap) {
        int cap = g->gcap ? 2 * g->gcap : 16;
        int *s = realloc(g->start, (size_t)cap * sizeof *s);
        if (s)
            g->start = s;
        unsigned char *o = s ? realloc(g->open, (size_t)cap) : NULL;
        if (!o) {
            remux_gop_reset(g);
            g->overflow = 1;
            return -1;
        }
        g->open = o;
        g->gcap = cap;
    }
    g->start[g->ngop] = g->n;
    g->open[g->ngop++] = (unsigned char)(open != 0);
    return 0;
}

int remux_gop_push(struct remux_gop *g, const AVPacket *pkt)
{
    if (g->overflow)
        return 0;
    if (g->n >= REMUX_GOP_MAX_PACKETS || g->bytes + (size_t)pkt->size > REMUX_GOP_MAX_BYTES) {
        remux_gop_reset(g);
        g->overflow = 1;
        return 0;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        AVPacket **p = realloc(g->pkt, (size_t)cap * sizeof *p);
        if (!p)
            goto nomem;
        g->pkt = p;
        g->cap = cap;
    }
    AVPacket *c = av_packet_clone(pkt);
    if (!c)
        goto nomem;
    g->pkt[g->n++] = c;
    g->bytes += (size_t)pkt->size;
    return 0;
nomem:
    remux_gop_reset(g);
    g->overflow = 1;
    return -1;
}

int remux_gop_usable(const struct remux_gop *g)
{
    if (g->overflow || g->n <= 0 || g->ngop <= 0)
        return 0;
    return g->keep <= 0 || g->from_start || gop_frames_from(g, 0) >= g->keep;
}

void remux_gop_free(struct remux_gop *g)
{
    if (!g)
        return;
    remux_gop_reset(g);
    free(g->pkt);
    free(g->start);
    free(g->open);
    g->pkt = NULL;
    g->start = NULL;
    g->open = NULL;
    g->cap = g->gcap = 0;
}

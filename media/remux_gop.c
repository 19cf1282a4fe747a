/*
 * remux_gop.c - the current GOP's packets for pre-rolls (see remux_gop.h).
 * References, not copies: libavformat's packet buffers are refcounted.
 */
#include "remux_gop.h"

#include <libavcodec/avcodec.h>
#include <stdlib.h>

void remux_gop_reset(struct remux_gop *g)
{
    for (int i = 0; i < g->n; i++)
        av_packet_free(&g->pkt[i]);
    g->n = 0;
    g->bytes = 0;
    g->overflow = 0;
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
    return !g->overflow && g->n > 0;
}

void remux_gop_free(struct remux_gop *g)
{
    if (!g)
        return;
    remux_gop_reset(g);
    free(g->pkt);
    g->pkt = NULL;
    g->cap = 0;
}

/*
 * remux_carry.c - which of the source's streams the stitch of ranges reads
 * from the source, beside the chunks (remux_carry.h).
 */
#include "remux_carry.h"

#include "remux_io.h"
#include "src_io.h"
#include "vio_streams.h"

#include <libavformat/avformat.h>
#include <stdlib.h>

int remux_carry_plan(const char *src, const AVOutputFormat *of, AVFormatContext **ic,
                     int **carry, char *note, size_t n, vr_err *err)
{
    *ic = NULL;
    *carry = NULL;
    /* the chunk's muxer: remux_chunk_name names every chunk output .mkv */
    const AVOutputFormat *chunk = av_guess_format("matroska", NULL, NULL);
    AVFormatContext *c = NULL;
    int ret = src_open_input(&c, src, NULL);
    if (ret < 0)
        return remux_averr(ret, "cannot open", src, err);
    unsigned ns = c->nb_streams ? c->nb_streams : 1;
    int vs = av_find_best_stream(c, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    int *in_chunk = calloc(ns, sizeof *in_chunk), *in_out = calloc(ns, sizeof *in_out);
    if (!in_chunk || !in_out || !chunk) {
        free(in_chunk);
        free(in_out);
        src_close_input(&c);
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    }
    char scratch[8];
    vio_streams_plan(c, vs, chunk, src, in_chunk, scratch, sizeof scratch);
    vio_streams_plan(c, vs, of, src, in_out, note, n);
    int any = 0;
    for (unsigned i = 0; i < c->nb_streams; i++) {
        in_out[i] = in_out[i] && !in_chunk[i];
        any |= in_out[i];
        if (!in_out[i])
            c->streams[i]->discard = AVDISCARD_ALL;
    }
    free(in_chunk);
    if (!any) {
        free(in_out);
        src_close_input(&c);
        return 0;
    }
    *ic = c;
    *carry = in_out;
    return 0;
}

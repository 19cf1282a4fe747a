/*
 * vio_streams.c - the streams and the video side data an output carries of
 * its source (vio_streams.h): one rule for `process` and for the stitch.
 */
#include "vio_streams.h"

#include "log.h"

#include <libavcodec/avcodec.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
#include <stdio.h>
#include <string.h>

/* Why stream i is not copied, or NULL when it is. */
static const char *vio_stream_skip(const AVStream *is, const AVOutputFormat *of)
{
    enum AVMediaType t = is->codecpar->codec_type;
    if (is->disposition & AV_DISPOSITION_ATTACHED_PIC)
        return "cover art is not carried";
    if (t == AVMEDIA_TYPE_ATTACHMENT)
        return "attachments are not carried";
    if (t != AVMEDIA_TYPE_AUDIO && t != AVMEDIA_TYPE_SUBTITLE && t != AVMEDIA_TYPE_DATA &&
        t != AVMEDIA_TYPE_VIDEO)
        return "a stream of unknown type";
    if (is->discard == AVDISCARD_ALL)
        return "not read";
    /* < 0: the muxer keeps no list; the copy is tried */
    if (avformat_query_codec(of, is->codecpar->codec_id, FF_COMPLIANCE_NORMAL) == 0)
        return "the container cannot hold it";
    return NULL;
}

int vio_streams_plan(const AVFormatContext *ic, int vi, const AVOutputFormat *of,
                     const char *path, int *copy, char *note, size_t n_note)
{
    if (note && n_note)
        note[0] = '\0';
    char dropped[512] = "";
    size_t used = 0;
    int n = 0, ndropped = 0;
    for (unsigned i = 0; i < ic->nb_streams; i++) {
        const AVStream *is = ic->streams[i];
        const char *why = (int)i == vi ? "" : vio_stream_skip(is, of);
        copy[i] = why == NULL;
        n += copy[i];
        if (!why || !*why)
            continue;
        ndropped++;
        const char *type = av_get_media_type_string(is->codecpar->codec_type);
        if (used < sizeof dropped) {
            int w = snprintf(dropped + used, sizeof dropped - used, "%sstream %u (%s %s): %s",
                             used ? "; " : "", i, type ? type : "unknown",
                             avcodec_get_name(is->codecpar->codec_id), why);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (ndropped && note)
        snprintf(note, n_note, "%d source stream%s not copied into this %s file: %s", ndropped,
                 ndropped > 1 ? "s" : "", of->name, dropped);
    else if (ndropped)
        log_warn("%s: %d source stream%s not copied into this %s file: %s", path, ndropped,
                 ndropped > 1 ? "s" : "", of->name, dropped);
    return n;
}

/* The muxers that write a display matrix (the tkhd matrix). */
static int vio_holds_rotation(const AVOutputFormat *of)
{
    static const char *const mov[] = { "mov", "mp4", "ipod", "ismv", "3gp", "3g2", "psp", "f4v",
                                       NULL };
    for (int i = 0; mov[i]; i++)
        if (!strcmp(of->name, mov[i]))
            return 1;
    return 0;
}

void vio_streams_side_data(AVStream *dst, const AVStream *src, const AVOutputFormat *of,
                           const char *path)
{
    static const enum AVPacketSideDataType types[] = { AV_PKT_DATA_STEREO3D, AV_PKT_DATA_SPHERICAL,
                                                       AV_PKT_DATA_DISPLAYMATRIX };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t sz = 0;
        const uint8_t *sd = av_stream_get_side_data(src, types[i], &sz);
        if (!sd || !sz)
            continue;
        if (types[i] == AV_PKT_DATA_DISPLAYMATRIX) {
            if (sz >= 9 * sizeof(int32_t))
                vio_streams_rotation(dst, (const int32_t *)sd, of, path);
            continue;
        }
        uint8_t *copy = av_stream_new_side_data(dst, types[i], sz);
        if (copy)
            memcpy(copy, sd, sz);
    }
}

void vio_streams_rotation(AVStream *dst, const int32_t *m, const AVOutputFormat *of,
                          const char *path)
{
    if (!vio_holds_rotation(of)) {
        log_warn("%s: the source's display matrix (rotation %.0f degrees) is not carried: "
                 "the %s muxer does not write it (use .mp4 or .mov)", path,
                 av_display_rotation_get(m), of->name);
        return;
    }
    uint8_t *copy = av_stream_new_side_data(dst, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof *m);
    if (copy)
        memcpy(copy, m, 9 * sizeof *m);
}

/* ---- muxer settings ---- */

void vio_streams_mux_settings(AVFormatContext *oc)
{
    oc->flags |= AVFMT_FLAG_BITEXACT;
    if (oc->oformat->priv_class && oc->priv_data &&
        av_opt_find(oc->priv_data, "write_crc32", NULL, 0, 0))
        av_opt_set_int(oc->priv_data, "write_crc32", 0, 0);
}

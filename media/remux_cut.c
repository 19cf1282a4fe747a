/*
 * remux_cut.c - is a keyframe a clean place to cut a video into chunks?
 *
 * Containers flag every random-access picture as a keyframe, but an HEVC CRA
 * picture (x265's default open GOP) is followed by leading pictures that
 * reference the GOP before it, and an H.264 I picture with only a recovery
 * point SEI is the same story: a chunk starting there decodes fewer frames
 * than it holds. IDR/BLA (HEVC) and IDR (H.264) are clean cuts; other codecs
 * (AV1, VP9) trust the keyframe flag, their keyframes being closed. An HEVC
 * CRA is a cut with a pre-roll (remux.h).
 */
#include "remux.h"

#include <libavcodec/avcodec.h>

/* ---- NAL walking ---- */

/* The NAL length size of length-prefixed (avcC/hvcC) extradata, or 0 for
 * Annex B start codes. */
static int nal_length_size(const AVCodecParameters *par)
{
    const uint8_t *x = par->extradata;
    int n = par->extradata_size;
    if (!x || n < 1 || x[0] != 1)
        return 0;
    if (par->codec_id == AV_CODEC_ID_H264)
        return n >= 5 ? (x[4] & 3) + 1 : 0;
    return n >= 22 ? (x[21] & 3) + 1 : 0; /* HEVC */
}

/* The type of the first picture (VCL) NAL in the packet, or -1. */
static int first_vcl_type(const AVCodecParameters *par, const uint8_t *p, int size)
{
    int hevc = par->codec_id == AV_CODEC_ID_HEVC;
    int ls = nal_length_size(par);
    int i = 0;
    while (i < size) {
        int start, len;
        if (ls) {
            if (i + ls > size)
                return -1;
            len = 0;
            for (int k = 0; k < ls; k++)
                len = (len << 8) | p[i + k];
            start = i + ls;
            if (len <= 0 || len > size - start)
                return -1;
            i = start + len;
        } else {
            /* Annex B: skip to the byte after the next 00 00 01 */
            while (i + 3 <= size && !(p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1))
                i++;
            if (i + 3 > size)
                return -1;
            start = i + 3;
            i = start;
            len = size - start;
        }
        if (start >= size)
            return -1;
        int type = hevc ? (p[start] >> 1) & 0x3f : p[start] & 0x1f;
        if (hevc ? type < 32 : (type >= 1 && type <= 5))
            return type;
    }
    return -1;
}

/* ---- the rule ---- */

int remux_preroll_cut(const AVCodecParameters *par, const AVPacket *pkt)
{
    if (!(pkt->flags & AV_PKT_FLAG_KEY) || par->codec_id != AV_CODEC_ID_HEVC)
        return 0;
    return first_vcl_type(par, pkt->data, pkt->size) == 21; /* CRA_NUT */
}

int remux_clean_cut(const AVCodecParameters *par, const AVPacket *pkt)
{
    if (!(pkt->flags & AV_PKT_FLAG_KEY))
        return 0;
    if (par->codec_id != AV_CODEC_ID_HEVC && par->codec_id != AV_CODEC_ID_H264)
        return 1;
    int t = first_vcl_type(par, pkt->data, pkt->size);
    if (par->codec_id == AV_CODEC_ID_H264)
        return t == 5;            /* IDR */
    return t >= 16 && t <= 20;    /* BLA_W_LP .. IDR_N_LP; not CRA (21) */
}

int remux_leading_max(const AVCodecParameters *par)
{
    /* leading pictures follow their keyframe in decode order and precede it
     * in output order: the reorder depth bounds them (HEVC at most 16) */
    int d = par->video_delay;
    return d > 0 && d <= REMUX_LEADING_MAX ? d : REMUX_LEADING_MAX;
}

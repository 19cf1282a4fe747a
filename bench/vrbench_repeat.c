/*
 * vrbench_repeat.c - `vrbench-video repeat IN OUT TIMES`: IN's streams
 * copied TIMES times one after another (stream copy, timestamps shifted by
 * IN's length each time), so a long benchmark clip costs one short encode.
 * IN must start every stream at a keyframe (the generator's closed GOPs).
 */
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_repeat(int argc, char **argv);

/* The end of IN's longest stream, in AV_TIME_BASE units (last pts + its
 * duration): how far each copy shifts. */
static int64_t clip_end(AVFormatContext *ic, AVPacket *p)
{
    int64_t end = 0;
    while (av_read_frame(ic, p) >= 0) {
        AVRational tb = ic->streams[p->stream_index]->time_base;
        int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
        if (ts != AV_NOPTS_VALUE) {
            int64_t e = av_rescale_q(ts + (p->duration > 0 ? p->duration : 0), tb, AV_TIME_BASE_Q);
            end = e > end ? e : end;
        }
        av_packet_unref(p);
    }
    return end;
}

int cmd_repeat(int argc, char **argv)
{
    if (argc != 5 || atoi(argv[4]) < 1)
        return fprintf(stderr, "usage: repeat IN OUT TIMES\n"), 2;
    const char *in = argv[2], *out = argv[3];
    int times = atoi(argv[4]), rc = 1;
    AVFormatContext *ic = NULL, *oc = NULL;
    AVPacket *p = av_packet_alloc();
    if (!p || avformat_open_input(&ic, in, NULL, NULL) < 0 ||
        avformat_find_stream_info(ic, NULL) < 0 ||
        avformat_alloc_output_context2(&oc, NULL, NULL, out) < 0) {
        fprintf(stderr, "repeat: cannot open %s or create %s\n", in, out);
        goto done;
    }
    for (unsigned i = 0; i < ic->nb_streams; i++) {
        AVStream *os = avformat_new_stream(oc, NULL);
        if (!os || avcodec_parameters_copy(os->codecpar, ic->streams[i]->codecpar) < 0)
            goto done;
        os->codecpar->codec_tag = 0;
        os->time_base = ic->streams[i]->time_base;
        av_dict_copy(&os->metadata, ic->streams[i]->metadata, 0);
    }
    av_dict_copy(&oc->metadata, ic->metadata, 0);
    int64_t len = clip_end(ic, p);
    if (avio_open(&oc->pb, out, AVIO_FLAG_WRITE) < 0 || avformat_write_header(oc, NULL) < 0)
        goto done;
    long long packets = 0;
    int64_t last[64];
    for (int i = 0; i < 64; i++)
        last[i] = INT64_MIN;
    for (int t = 0; t < times; t++) {
        if (avformat_seek_file(ic, -1, INT64_MIN, 0, 0, 0) < 0)
            goto done;
        while (av_read_frame(ic, p) >= 0) {
            AVStream *is = ic->streams[p->stream_index], *os = oc->streams[p->stream_index];
            int64_t shift = av_rescale_q(len * t, AV_TIME_BASE_Q, is->time_base);
            if (p->pts != AV_NOPTS_VALUE)
                p->pts += shift;
            if (p->dts != AV_NOPTS_VALUE)
                p->dts += shift;
            av_packet_rescale_ts(p, is->time_base, os->time_base);
            /* Matroska keeps no dts: a copy's first packets come without
             * one, and the muxer needs them increasing */
            int64_t *l = &last[p->stream_index % 64];
            if (p->dts == AV_NOPTS_VALUE || p->dts <= *l)
                p->dts = *l == INT64_MIN ? p->pts : *l + 1;
            if (p->pts != AV_NOPTS_VALUE && p->pts < p->dts)
                p->pts = p->dts;
            *l = p->dts;
            p->pos = -1;
            if (av_interleaved_write_frame(oc, p) < 0)
                goto done;
            packets++;
        }
    }
    if (av_write_trailer(oc) < 0)
        goto done;
    printf("repeat: %s %d times into %s (%lld packets, %.1f s)\n", in, times, out, packets,
           len * times / (double)AV_TIME_BASE);
    rc = 0;
done:
    av_packet_free(&p);
    avformat_close_input(&ic);
    if (oc && oc->pb)
        avio_closep(&oc->pb);
    avformat_free_context(oc);
    if (rc)
        fprintf(stderr, "repeat: failed\n");
    return rc;
}

/*
 * util-video.c - independent read-back of video files for the video and
 * pipeline tests (see util-video.h).
 */
#include "util-video.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tv_read(const char *path, int keep_luma, struct tv_file *f)
{
    memset(f, 0, sizeof *f);
    AVFormatContext *fc = NULL;
    if (avformat_open_input(&fc, path, NULL, NULL) < 0)
        return -1;
    avformat_find_stream_info(fc, NULL);
    const AVCodec *c = NULL;
    int vi = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, &c, 0);
    AVCodecContext *d = vi >= 0 ? avcodec_alloc_context3(c) : NULL;
    if (!d) {
        avformat_close_input(&fc);
        return -1;
    }
    avcodec_parameters_to_context(d, fc->streams[vi]->codecpar);
    d->pkt_timebase = fc->streams[vi]->time_base;
    avcodec_open2(d, c, NULL);
    f->tb = fc->streams[vi]->time_base;
    f->w = d->width;
    f->h = d->height;
    AVPacket *p = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int eof = 0;
    while (!eof) {
        int r = av_read_frame(fc, p);
        if (r < 0) {
            eof = 1;
            avcodec_send_packet(d, NULL);
        } else if (p->stream_index != vi) {
            if (f->npkts < TV_MAX_PKTS) {
                struct tv_pkt *k = &f->pkts[f->npkts++];
                k->stream_type = fc->streams[p->stream_index]->codecpar->codec_type;
                k->pts = p->pts;
                k->tb = fc->streams[p->stream_index]->time_base;
                k->size = p->size;
                k->data = malloc((size_t)p->size + 1);
                memcpy(k->data, p->data, (size_t)p->size);
            }
            av_packet_unref(p);
            continue;
        } else {
            avcodec_send_packet(d, p);
            av_packet_unref(p);
        }
        while (avcodec_receive_frame(d, fr) == 0) {
            if (f->nframes < TV_MAX_FRAMES) {
                f->pts[f->nframes] = fr->best_effort_timestamp;
                if (keep_luma) {
                    uint8_t *y = malloc((size_t)f->w * f->h);
                    for (int r2 = 0; r2 < f->h; r2++)
                        memcpy(y + (size_t)r2 * f->w, fr->data[0] + (size_t)r2 * fr->linesize[0], (size_t)f->w);
                    f->luma[f->nframes] = y;
                }
            }
            f->nframes++;
            av_frame_unref(fr);
        }
    }
    av_frame_free(&fr);
    av_packet_free(&p);
    avcodec_free_context(&d);
    avformat_close_input(&fc);
    return 0;
}

void tv_free(struct tv_file *f)
{
    for (int i = 0; i < TV_MAX_FRAMES; i++)
        free(f->luma[i]);
    for (int i = 0; i < f->npkts; i++)
        free(f->pkts[i].data);
    memset(f, 0, sizeof *f);
}

void tv_assert_same_timing(const struct tv_file *a, const struct tv_file *b)
{
    cr_assert_gt(a->nframes, 0);
    cr_assert_eq(a->nframes, b->nframes, "frame count %d vs %d", a->nframes, b->nframes);
    for (int i = 0; i < a->nframes && i < TV_MAX_FRAMES; i++)
        cr_assert_eq(av_compare_ts(a->pts[i], a->tb, b->pts[i], b->tb), 0,
                     "frame %d: pts %lld (%d/%d) vs %lld (%d/%d)", i, (long long)a->pts[i],
                     a->tb.num, a->tb.den, (long long)b->pts[i], b->tb.num, b->tb.den);
}

void tv_assert_same_packets(const struct tv_file *a, const struct tv_file *b)
{
    cr_assert_gt(a->npkts, 0, "no audio packets in the input");
    cr_assert_eq(a->npkts, b->npkts, "packet count %d vs %d", a->npkts, b->npkts);
    for (int i = 0; i < a->npkts; i++) {
        const struct tv_pkt *x = &a->pkts[i], *y = &b->pkts[i];
        cr_assert_eq(x->stream_type, y->stream_type);
        cr_assert_eq(x->size, y->size, "packet %d: %d vs %d bytes", i, x->size, y->size);
        cr_assert_eq(memcmp(x->data, y->data, (size_t)x->size), 0, "packet %d differs", i);
        cr_assert_eq(av_compare_ts(x->pts, x->tb, y->pts, y->tb), 0, "packet %d: pts differs", i);
    }
}

void tv_box_means(const struct tv_file *f, int frame, const int (*boxes)[4], int nboxes,
                  double *in, double *out)
{
    double si = 0, so = 0;
    long ni = 0, no = 0;
    const uint8_t *y = f->luma[frame];
    for (int r = 0; r < f->h; r++)
        for (int c = 0; c < f->w; c++) {
            double x320 = (c + 0.5) * 320.0 / f->w, y240 = (r + 0.5) * 240.0 / f->h;
            int inside = 0;
            for (int b = 0; b < nboxes; b++)
                if (x320 >= boxes[b][0] && x320 < boxes[b][2] && y240 >= boxes[b][1] && y240 < boxes[b][3])
                    inside = 1;
            if (inside) {
                si += y[(size_t)r * f->w + c];
                ni++;
            } else {
                so += y[(size_t)r * f->w + c];
                no++;
            }
        }
    *in = ni ? si / ni : 0;
    *out = no ? so / no : 0;
}

int tv_damage(const char *src, const char *dst, double fraction, int corrupt)
{
    FILE *a = fopen(src, "rb");
    if (!a)
        return -1;
    fseek(a, 0, SEEK_END);
    long n = ftell(a);
    rewind(a);
    uint8_t *buf = malloc((size_t)n);
    if (fread(buf, 1, (size_t)n, a) != (size_t)n) {
        fclose(a);
        free(buf);
        return -1;
    }
    fclose(a);
    long keep = n;
    if (corrupt) {
        /* garbage over a stretch of the middle: inside video packets */
        for (long i = n * 2 / 5; i < n * 3 / 5; i++)
            buf[i] = (uint8_t)(i * 131 + 7);
    } else {
        keep = (long)(n * fraction);
    }
    FILE *b = fopen(dst, "wb");
    fwrite(buf, 1, (size_t)keep, b);
    fclose(b);
    free(buf);
    return 0;
}

/* Where video packet n lies in the file: 0 with *pos and *size, or -1. */
static int packet_place(const char *path, int n, int64_t *pos, int *size)
{
    AVFormatContext *fc = NULL;
    if (avformat_open_input(&fc, path, NULL, NULL) < 0)
        return -1;
    int vi = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    AVPacket *pkt = av_packet_alloc();
    int k = 0, rc = -1;
    while (vi >= 0 && pkt && av_read_frame(fc, pkt) >= 0) {
        int hit = pkt->stream_index == vi && k++ == n;
        if (hit && pkt->pos >= 0) {
            *pos = pkt->pos;
            *size = pkt->size;
            rc = 0;
        }
        av_packet_unref(pkt);
        if (hit)
            break;
    }
    av_packet_free(&pkt);
    avformat_close_input(&fc);
    return rc;
}

int tv_damage_packet(const char *src, const char *dst, int n)
{
    int64_t pos;
    int size;
    if (packet_place(src, n, &pos, &size) < 0 || size <= 16)
        return -1;
    FILE *a = fopen(src, "rb");
    if (!a)
        return -1;
    fseek(a, 0, SEEK_END);
    long len = ftell(a);
    rewind(a);
    uint8_t *buf = malloc((size_t)len);
    int ok = buf && fread(buf, 1, (size_t)len, a) == (size_t)len && pos + size <= len;
    fclose(a);
    for (int64_t i = pos + 8; ok && i < pos + size; i++)
        buf[i] ^= 0x5a;
    FILE *b = ok ? fopen(dst, "wb") : NULL;
    ok = b && fwrite(buf, 1, (size_t)len, b) == (size_t)len;
    if (b)
        ok = fclose(b) == 0 && ok;
    free(buf);
    return ok ? 0 : -1;
}

void tv_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/vrt-video-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

void tv_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

int tv_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

void tv_data(char *buf, size_t n, const char *rel)
{
    const char *d = getenv("VR_DATA_DIR");
    snprintf(buf, n, "%s%s%s", d ? d : "", d ? "/" : "", rel);
}

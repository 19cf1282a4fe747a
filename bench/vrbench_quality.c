/*
 * vrbench_quality.c - `vrbench-video quality`: the matte measures that need
 * no ground truth (kernels/seg/seg_quality.h), per profile, on a
 * side-by-side clip, and a contact sheet (source | matte | overlay, a row a
 * profile) to look at:
 *
 *   vrbench-video quality CLIP [--cpu | --gpu N] [--frames N] [--sheet OUT.png]
 *                         [--width W] [--truth TRUTH] [--people G] [PROFILE...]
 *
 * PROFILE is a name (configs/<name>.json) or a path to a .json file applied
 * over the defaults; the first one is the reference of the holes and false
 * positives (default: fast balanced quality), unless --truth gives the
 * clip's truth matte (a video of the clip's frames, 8-bit gray: 255 person,
 * 0 background, any size: sampled to the matte's; bench/quality-made.sh
 * writes one), against which every profile is then measured, and which is
 * the sheet's first row. The engine runs on the CPU (the
 * C twins) unless --gpu; mattes are made at the clip's size, or W wide when
 * the clip is wider (default 1024: 8K runs its tiles, the measures stay
 * cheap). People found: the pose detector's people of every frame and eye
 * (whole eye and G x G crops, default 3; 0 leaves the measure out; the
 * detector runs on the CPU engine, once a clip), each found when the
 * matte holds 80% of their body's axis (neck to mid-hip), the axis drawn
 * on the sheet's overlay green or red. Prints one "RESULT
 * quality_<profile> ..." line a profile; its borders come with the
 * reference's across the same lines ("reference"): the reference has no
 * tiles of that plan, so its ratio is what the scene alone puts there (a
 * pole or a photo's edge along a border). With --truth, first the truth's
 * stereo agreement with itself: the measure's ceiling on the clip.
 */
#include "config.h"
#include "clock.h"
#include "seg.h"
#include "seg_quality.h"
#include "vio_image.h"
#include "vio_video.h"
#include "vrbench_quality_people.h"

#include <libavutil/frame.h>
#include <libswscale/swscale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_quality(int argc, char **argv);

enum { QMAX_PROFILES = 8, QMAX_FRAMES = 64 };

struct qclip {
    int n, w, h;              /* frames, clip size */
    AVFrame *yuv[QMAX_FRAMES];/* YUV420P at the clip's size */
    int mw, mh;               /* matte size */
    uint8_t *luma[QMAX_FRAMES];/* at matte size */
};

static int qdie(const char *what, const vr_err *e)
{
    fprintf(stderr, "vrbench-video quality: %s: %s\n", what, e && e->msg[0] ? e->msg : "failed");
    return 1;
}

static int read_clip(const char *path, int frames, int max_w, struct qclip *c, vr_err *e)
{
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = path };
    if (vio_in_open(&io, &in, e) < 0)
        return -1;
    AVFrame *f = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    struct SwsContext *sws = NULL;
    int ev, rc = 0;
    while (c->n < frames && (ev = vio_in_next(in, f, p, e)) > 0) {
        if (ev != VIO_FRAME) {
            av_packet_unref(p);
            continue;
        }
        AVFrame *o = av_frame_alloc();
        o->format = AV_PIX_FMT_YUV420P;
        o->width = f->width;
        o->height = f->height;
        av_frame_get_buffer(o, 64);
        sws = sws_getCachedContext(sws, f->width, f->height, f->format, o->width, o->height,
                                   AV_PIX_FMT_YUV420P, SWS_POINT, NULL, NULL, NULL);
        sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, o->data,
                  o->linesize);
        c->yuv[c->n++] = o;
        av_frame_unref(f);
    }
    if (c->n == 0) {
        rc = -1;
        if (!e->msg[0])
            vr_err_set(e, VR_EFORMAT, "%s: no frames", path);
    } else {
        c->w = c->yuv[0]->width;
        c->h = c->yuv[0]->height;
        c->mw = c->w > max_w ? max_w : c->w;
        c->mh = (int)((long long)c->h * c->mw / c->w) & ~1;
        c->mw &= ~1;
        for (int i = 0; i < c->n; i++) {
            c->luma[i] = malloc((size_t)c->mw * c->mh);
            quality_plane_at(c->yuv[i]->data[0], c->yuv[i]->linesize[0], c->w, c->h, c->luma[i],
                             c->mw, c->mh);
        }
    }
    sws_freeContext(sws);
    av_frame_free(&f);
    av_packet_free(&p);
    vio_in_free(&in);
    return rc;
}

/* The truth of the clip's first c->n frames (a gray video: FFV1 from
 * bench/quality-made.sh; any other format is read as its luma), brought to
 * the matte's size, into t[0..c->n). */
static int read_truth(const char *path, const struct qclip *c, uint8_t **t, vr_err *e)
{
    struct vio_in *in = NULL;
    struct vio_in_opts io = { .path = path };
    if (vio_in_open(&io, &in, e) < 0)
        return -1;
    AVFrame *f = av_frame_alloc(), *g = av_frame_alloc();
    AVPacket *p = av_packet_alloc();
    struct SwsContext *sws = NULL;
    int ev, n = 0;
    while (n < c->n && (ev = vio_in_next(in, f, p, e)) > 0) {
        if (ev != VIO_FRAME) {
            av_packet_unref(p);
            continue;
        }
        const uint8_t *src = f->data[0];
        int ls = f->linesize[0];
        if (f->format != AV_PIX_FMT_GRAY8) { /* 8-bit luma of anything else */
            av_frame_unref(g);
            g->format = AV_PIX_FMT_GRAY8;
            g->width = f->width;
            g->height = f->height;
            av_frame_get_buffer(g, 64);
            sws = sws_getCachedContext(sws, f->width, f->height, f->format, g->width,
                                       g->height, AV_PIX_FMT_GRAY8, SWS_POINT, NULL, NULL, NULL);
            sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height,
                      g->data, g->linesize);
            src = g->data[0];
            ls = g->linesize[0];
        }
        t[n] = malloc((size_t)c->mw * c->mh);
        quality_plane_at(src, ls, f->width, f->height, t[n++], c->mw, c->mh);
        av_frame_unref(f);
    }
    sws_freeContext(sws);
    av_frame_free(&f);
    av_frame_free(&g);
    av_packet_free(&p);
    vio_in_free(&in);
    if (n < c->n && !e->msg[0])
        vr_err_set(e, VR_EFORMAT, "%s: %d frames, the clip has %d", path, n, c->n);
    return n < c->n ? -1 : 0;
}

static int load_profile(const char *name, struct vr_config *cfg, vr_err *e)
{
    if (strstr(name, ".json")) {
        config_defaults(cfg);
        return config_apply_file(cfg, name, e);
    }
    return config_load_profile(cfg, name, e);
}

/* Mattes of every frame of the clip with one profile, into m (n planes). */
static int run_profile(const struct vr_config *cfg, int gpu, const struct qclip *c,
                       uint8_t **m, struct seg **out, double *ms, vr_err *e)
{
    struct seg_opts o = { .backend = gpu >= 0 ? SEG_CUDA : SEG_CPU, .gpu = gpu < 0 ? 0 : gpu,
                          .cfg = cfg, .layout = SEG_LAYOUT_SBS, .in_w = c->w, .in_h = c->h,
                          .out_w = c->mw, .out_h = c->mh, .max_batch = 1 };
    if (seg_create(&o, out, e) < 0)
        return -1;
    double t0 = clock_mono_ms();
    for (int i = 0; i < c->n; i++) {
        const AVFrame *f = c->yuv[i];
        struct seg_frame sf = { .fmt = SEG_PIX_YUV420P, .w = f->width, .h = f->height };
        for (int k = 0; k < 3; k++) {
            sf.data[k] = f->data[k];
            sf.linesize[k] = f->linesize[k];
        }
        struct seg_mask sm = { .data = m[i], .w = c->mw, .h = c->mh, .linesize = c->mw };
        if (seg_run(*out, &sf, 1, &sm, NULL, e) < 0)
            return -1;
    }
    *ms = (clock_mono_ms() - t0) / c->n;
    return 0;
}

/* ---- contact sheet ---- */

/* One row of the sheet: source | matte | overlay, each cw x ch. */
static void sheet_row(struct vio_image *img, int row, const AVFrame *f, const uint8_t *m,
                      int mw, int mh, int cw, int ch)
{
    struct SwsContext *sws = sws_getContext(f->width, f->height, f->format, cw, ch,
                                            AV_PIX_FMT_RGB24, SWS_AREA, NULL, NULL, NULL);
    uint8_t *rgb = malloc((size_t)cw * ch * 3);
    uint8_t *dst[1] = { rgb };
    int ls[1] = { cw * 3 };
    sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, ls);
    sws_freeContext(sws);
    for (int y = 0; y < ch; y++) {
        uint8_t *o = img->data + (size_t)(row * ch + y) * img->linesize;
        const uint8_t *mr = m + (size_t)(y * mh / ch) * mw;
        for (int x = 0; x < cw; x++) {
            const uint8_t *s = rgb + ((size_t)y * cw + x) * 3;
            int a = mr[x * mw / cw];
            for (int k = 0; k < 3; k++) {
                o[x * 3 + k] = s[k];
                o[(cw + x) * 3 + k] = (uint8_t)a;
            }
            vio_overlay_px(o + (2 * cw + x) * 3, s, a);
        }
    }
    free(rgb);
}

/* ---- the command ---- */

static int people_total(const struct qpeople *q, int n, int eye)
{
    int t = 0;
    for (int i = 0; i < n; i++)
        t += q[i].n[eye];
    return t;
}

static int quality_usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: vrbench-video quality CLIP [--cpu | --gpu N] [--frames 1..%d] [--sheet OUT.png]\n"
            "                             [--width W] [--truth TRUTH] [--people 0..4] [PROFILE...]\n"
            "\n"
            "the matte measures per profile on a side-by-side clip (docs/QUALITY.md):\n"
            "holes and false positives (against the first profile, or TRUTH), stereo\n"
            "agreement, flicker in still areas against the picture's, tile borders and\n"
            "the pose detector's people found in each eye; one RESULT line a profile\n"
            "\n"
            "  --cpu | --gpu N  the engine: the C twins (default) or GPU N\n"
            "  --frames N       frames of the clip to measure (default 10)\n"
            "  --sheet OUT.png  contact sheet: source | matte | overlay, a row a profile\n"
            "  --width W        mattes at most W wide (default 1024; 8K runs its tiles)\n"
            "  --truth TRUTH    a truth matte video (8-bit gray; bench/quality-made.sh)\n"
            "  --people G       the detector's crops, G x G (default 3; 0: no people measure)\n"
            "  PROFILE          a name (configs/NAME.json) or a .json file over the\n"
            "                   defaults, at most %d (default: fast balanced quality)\n",
            QMAX_FRAMES, QMAX_PROFILES);
    return rc;
}

int cmd_quality(int argc, char **argv)
{
    const char *clip = NULL, *sheet = NULL, *truth = NULL, *prof[QMAX_PROFILES];
    int np = 0, frames = 10, gpu = -1, max_w = 1024, grid = 3;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gpu") && i + 1 < argc)
            gpu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu"))
            gpu = -1;
        else if (!strcmp(argv[i], "--sheet") && i + 1 < argc)
            sheet = argv[++i];
        else if (!strcmp(argv[i], "--width") && i + 1 < argc)
            max_w = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
            truth = argv[++i];
        else if (!strcmp(argv[i], "--people") && i + 1 < argc)
            grid = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return quality_usage(stdout, 0);
        else if (argv[i][0] == '-' && argv[i][1] == '-')
            return fprintf(stderr, "quality: unknown option %s (or its value missing)\n",
                           argv[i]), quality_usage(stderr, 2);
        else if (!clip)
            clip = argv[i];
        else if (np < QMAX_PROFILES)
            prof[np++] = argv[i];
        else
            return fprintf(stderr, "quality: at most %d profiles\n", QMAX_PROFILES), 2;
    }
    if (!clip || frames < 1 || frames > QMAX_FRAMES || max_w < 16 || max_w > 16384 || grid < 0
        || grid > 4)
        return quality_usage(stderr, 2);
    if (np == 0) {
        prof[np++] = "fast";
        prof[np++] = "balanced";
        prof[np++] = "quality";
    }
    vr_err e = { 0 };
    struct qclip c = { 0 };
    if (read_clip(clip, frames, max_w, &c, &e) < 0)
        return qdie(clip, &e);
    size_t plane = (size_t)c.mw * c.mh;
    uint8_t *m[QMAX_PROFILES][QMAX_FRAMES], *t[QMAX_FRAMES];
    if (truth && read_truth(truth, &c, t, &e) < 0)
        return qdie(truth, &e);
    struct qpeople *qp = NULL;
    double t_people = clock_mono_ms();
    if (grid > 0 && qpeople_clip(c.yuv, c.n, grid, c.mw, c.mh, &qp, &e) < 0)
        return qdie("people found", &e);
    t_people = clock_mono_ms() - t_people;
    int row0 = truth != NULL; /* the sheet's first row is the truth */
    int found[2][QUALITY_PEOPLE_MAX];
    uint8_t *scratch = malloc(plane);
    int cw = c.mw > 960 ? 960 : c.mw, ch = (int)((long long)c.mh * cw / c.mw);
    struct vio_image *img = NULL;
    if (sheet && vio_image_alloc(cw * 3, ch * (np + row0), &img, &e) < 0)
        return qdie(sheet, &e);
    printf("clip %s: %d frames of %dx%d, mattes %dx%d on the %s; reference %s\n", clip, c.n,
           c.w, c.h, c.mw, c.mh, gpu >= 0 ? "GPU" : "CPU", truth ? truth : prof[0]);
    if (qp)
        printf("people: the detector's, %d in the left eyes and %d in the right over %d frames "
               "(%.0f ms)\n", people_total(qp, c.n, 0), people_total(qp, c.n, 1), c.n, t_people);
    if (img && truth) {
        sheet_row(img, 0, c.yuv[c.n / 2], t[c.n / 2], c.mw, c.mh, cw, ch);
        if (qp) {
            struct quality_count tc[2] = { 0 };
            qpeople_cover(&qp[c.n / 2], t[c.n / 2], c.mw, c.mh, tc, found);
            qpeople_draw(img, 0, 2, cw, ch, c.mw, &qp[c.n / 2], found);
        }
    }
    for (int p = 0; p < np; p++) {
        struct vr_config cfg;
        struct seg *s = NULL;
        double ms = 0;
        for (int i = 0; i < c.n; i++)
            m[p][i] = malloc(plane);
        if (load_profile(prof[p], &cfg, &e) < 0 || run_profile(&cfg, gpu, &c, m[p], &s, &ms, &e) < 0) {
            seg_free(&s);
            return qdie(prof[p], &e);
        }
        struct quality_sums q = { 0 }, rq = { 0 }, tq = { 0 };
        for (int i = 0; i < c.n; i++) {
            const uint8_t *ref = truth ? t[i] : m[0][i];
            quality_add_frame(&q, s, ref, m[p][i], c.luma[i], i ? m[p][i - 1] : NULL,
                              i ? c.luma[i - 1] : NULL, c.mw, c.mh, scratch);
            /* the reference, which has no tiles of this plan, across the
             * same lines: what the scene alone puts there */
            quality_add_borders(&rq, s, ref, c.mw);
            if (truth && p == 0) /* the measure's own ceiling on this clip */
                quality_add_frame(&tq, s, ref, ref, c.luma[i], NULL, NULL, c.mw, c.mh, scratch);
        }
        if (truth && p == 0)
            printf("RESULT quality_truth stereo %.3f IoU (the truth against itself)\n",
                   quality_ratio(tq.stereo, 1));
        seg_free(&s);
        struct quality_count pc[2] = { 0 };
        for (int i = 0; qp && i < c.n; i++)
            qpeople_cover(&qp[i], m[p][i], c.mw, c.mh, pc, i == c.n / 2 ? found : NULL);
        char people[64] = "";
        if (qp)
            snprintf(people, sizeof people, " people %.0f/%.0f %.0f/%.0f", pc[0].num, pc[0].den,
                     pc[1].num, pc[1].den);
        printf("RESULT quality_%s holes %.2f %% fp %.2f %% stereo %.3f IoU flicker %.3f "
               "picture %.3f borders %.2f (reference %.2f)%s (%.1f ms a frame)\n", prof[p],
               100 * quality_ratio(q.holes, 0), 100 * quality_ratio(q.fp, 0),
               quality_ratio(q.stereo, 1), quality_ratio(q.flicker, 0),
               quality_ratio(q.picture, 0),
               quality_ratio(q.border, 0) / (quality_ratio(q.near, 0) + 1e-9),
               quality_ratio(rq.border, 0) / (quality_ratio(rq.near, 0) + 1e-9), people, ms);
        fflush(stdout);
        if (img)
            sheet_row(img, p + row0, c.yuv[c.n / 2], m[p][c.n / 2], c.mw, c.mh, cw, ch);
        if (img && qp)
            qpeople_draw(img, p + row0, 2, cw, ch, c.mw, &qp[c.n / 2], found);
    }
    if (img && vio_image_write_rgb_png(sheet, img, &e) < 0)
        return qdie(sheet, &e);
    if (img)
        printf("sheet %s: frame %d, a row a profile (%s first): source | matte | overlay%s\n",
               sheet, c.n / 2, truth ? "the truth" : prof[0],
               qp ? " (the detector's people: their axes green where found, red where "
                    "missed)" : "");
    vio_image_free(&img);
    free(qp);
    return 0;
}

/*
 * vrbench_quality_people.c - people found for `vrbench-video quality`
 * (vrbench_quality_people.h).
 */
#include "vrbench_quality_people.h"

#include "paths.h"
#include "vio_image.h"

#include <libswscale/swscale.h>
#include <math.h>
#include <stdlib.h>

/* Eye e of a side-by-side frame as RGB24 at most QUALITY_PEOPLE_SIDE a
 * side, into a new buffer (*pw x *ph, rows of 3 * pw). */
static uint8_t *eye_rgb(const AVFrame *f, int e, int *pw, int *ph)
{
    const int ew = f->width / 2, eh = f->height, lng = ew > eh ? ew : eh;
    const int side = lng < QUALITY_PEOPLE_SIDE ? lng : QUALITY_PEOPLE_SIDE;
    *pw = (int)((long long)ew * side / lng);
    *ph = (int)((long long)eh * side / lng);
    uint8_t *rgb = malloc((size_t)*pw * *ph * 3);
    struct SwsContext *sws = sws_getContext(ew, eh, f->format, *pw, *ph, AV_PIX_FMT_RGB24,
                                            SWS_AREA, NULL, NULL, NULL);
    if (!rgb || !sws) {
        free(rgb);
        sws_freeContext(sws);
        return NULL;
    }
    /* YUV 4:2:0: the right eye starts at column ew, chroma at ew / 2 */
    const int x0 = e * ew;
    const uint8_t *src[3] = { f->data[0] + x0, f->data[1] + x0 / 2, f->data[2] + x0 / 2 };
    uint8_t *dst[1] = { rgb };
    int ls[1] = { *pw * 3 };
    sws_scale(sws, src, f->linesize, 0, eh, dst, ls);
    sws_freeContext(sws);
    return rgb;
}

int qpeople_find(struct pose_detector *d, const AVFrame *f, int grid, int mw, int mh,
                 struct qpeople *out, vr_err *err)
{
    for (int e = 0; e < 2; e++) {
        int pw, ph;
        uint8_t *rgb = eye_rgb(f, e, &pw, &ph);
        if (!rgb)
            return vr_err_set(err, VR_ENOMEM, "people found: out of memory");
        int rc = quality_people_find(d, rgb, pw, ph, pw * 3, grid, out->p[e],
                                     QUALITY_PEOPLE_MAX, &out->n[e], err);
        free(rgb);
        if (rc < 0)
            return rc;
        const float sx = (float)(mw / 2) / pw, sy = (float)mh / ph;
        for (int i = 0; i < out->n[e]; i++) {
            struct pose_person *p = &out->p[e][i];
            p->x0 *= sx, p->x1 *= sx, p->y0 *= sy, p->y1 *= sy;
            for (int k = 0; k < 4; k++)
                p->kp[k][0] *= sx, p->kp[k][1] *= sy;
        }
    }
    return 0;
}

int qpeople_clip(AVFrame *const *f, int n, int grid, int mw, int mh, struct qpeople **out,
                 vr_err *err)
{
    char path[4096];
    struct pose_detector *d = NULL;
    *out = NULL;
    if (vr_data_path("models/pose_detection.tflite", path, sizeof path) != 0)
        return vr_err_set(err, VR_ENOENT, "people found: no models/pose_detection.tflite (set "
                          "VR_DATA_DIR to the directory holding models/)");
    int rc = pose_detector_create(path, &d, err);
    struct qpeople *q = rc < 0 ? NULL : calloc((size_t)n, sizeof *q);
    if (rc == 0 && !q)
        rc = vr_err_set(err, VR_ENOMEM, "people found: out of memory");
    for (int i = 0; i < n && rc == 0; i++)
        rc = qpeople_find(d, f[i], grid, mw, mh, &q[i], err);
    pose_detector_free(&d);
    if (rc < 0)
        free(q);
    else
        *out = q;
    return rc;
}

void qpeople_cover(const struct qpeople *q, const uint8_t *m, int mw, int mh,
                   struct quality_count c[2], int found[2][QUALITY_PEOPLE_MAX])
{
    for (int e = 0; e < 2; e++)
        quality_people_cover(q->p[e], q->n[e], m + e * (mw / 2), mw / 2, mh, mw, &c[e],
                             found ? found[e] : NULL);
}

static void px(struct vio_image *img, int x, int y, int found)
{
    if (x < 0 || y < 0 || x >= img->w || y >= img->h)
        return;
    uint8_t *o = img->data + (size_t)y * img->linesize + (size_t)x * 3;
    o[0] = found ? 0 : 255;
    o[1] = found ? 255 : 0;
    o[2] = 0;
}

void qpeople_draw(struct vio_image *img, int row, int cell, int cw, int ch, int mw,
                  const struct qpeople *q, int found[2][QUALITY_PEOPLE_MAX])
{
    const float s = (float)cw / mw; /* sheet px a matte px (the cell keeps the aspect) */
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < q->n[e]; i++) {
            if (found[e][i] < 0)
                continue;
            float ax, ay, bx, by;
            quality_person_axis(&q->p[e][i], &ax, &ay, &bx, &by);
            /* the axis, clipped to the cell: what was measured */
            const float ox = cell * cw + e * (mw / 2) * s, oy = (float)row * ch;
            const int n = 2 * (int)(fabsf(bx - ax) * s + fabsf(by - ay) * s) + 2;
            for (int k = 0; k <= n; k++) {
                const float t = (float)k / n;
                const int x = (int)(ox + (ax + t * (bx - ax)) * s);
                const int y = (int)(oy + (ay + t * (by - ay)) * s);
                if (x >= cell * cw && x < (cell + 1) * cw && y >= row * ch && y < (row + 1) * ch)
                    for (int d = -1; d <= 1; d++)
                        px(img, x + d, y, found[e][i]);
            }
        }
}

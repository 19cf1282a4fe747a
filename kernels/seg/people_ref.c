/*
 * people_ref.c - the people tier (people.h) of the CPU engine, the C twin of
 * the CUDA backend's (people.cu, people_cuda.h): the eye sampled to an RGB picture,
 * the detector run on it whole and on overlapping crops, the detections
 * merged, each person's ROI segmented and pasted into the work mask, as
 * the eye's window of past frames confirms or carries it (people_track.h).
 */
#include "people.h"

#include "paths.h"
#include "pose.h"
#include "pose_frame.h"

#include <stdlib.h>
#include <string.h>

struct people {
    struct pose_detector *det;
    struct pose_segmenter *seg;
    struct vr_config cfg;        /* its people_grid and zooms lay out the crops */
    int split;                   /* people_split */
    int pw_max, ph_max;          /* the eye picture's largest size */
    float *fpic;                 /* [ph][pw][3] in [0,1] (frame_preprocess_ref) */
    uint8_t *pic;                /* the same as RGB24 */
    float *roi;                  /* [256][256] */
    float *pasted;               /* [wh][ww], allocated at the first eye */
    size_t pasted_sz;
    struct pose_person cand[POSE_MAX_PEOPLE * PEOPLE_CROPS_ALL];
    struct people_window win[PEOPLE_EYES];
};

static int load(const char *rel, char *path, size_t n, vr_err *err)
{
    if (vr_data_path(rel, path, n) != 0)
        return vr_err_set(err, VR_ENOENT, "people: no %s (set VR_DATA_DIR to the directory "
                          "holding models/)", rel);
    return 0;
}

int people_create(const struct vr_config *cfg, int eye_w, int eye_h, int n_eyes,
                  struct people **out, vr_err *err)
{
    *out = NULL;
    if (eye_w < 1 || eye_h < 1)
        return vr_err_set(err, VR_EINVAL, "people: eye %dx%d", eye_w, eye_h);
    struct people *p = calloc(1, sizeof *p);
    if (!p)
        return vr_err_set(err, VR_ENOMEM, "people: out of memory");
    char path[4096];
    int rc;
    if ((rc = load("models/pose_detection.tflite", path, sizeof path, err)) < 0
        || (rc = pose_detector_create(path, &p->det, err)) < 0
        || (rc = load("models/pose_landmark_lite.tflite", path, sizeof path, err)) < 0
        || (rc = pose_segmenter_create(path, &p->seg, err)) < 0)
        goto fail;
    p->cfg = *cfg;
    p->split = people_split(cfg, n_eyes);
    people_pic_max(cfg, eye_w, eye_h, &p->pw_max, &p->ph_max);
    const size_t px = (size_t)p->pw_max * p->ph_max;
    p->fpic = malloc(px * 3 * sizeof *p->fpic);
    p->pic = malloc(px * 3);
    p->roi = malloc((size_t)POSE_SEG_SIZE * POSE_SEG_SIZE * sizeof *p->roi);
    if (!p->fpic || !p->pic || !p->roi) {
        rc = vr_err_set(err, VR_ENOMEM, "people: out of memory");
        goto fail;
    }
    *out = p;
    return 0;
fail:
    people_free(&p);
    return rc;
}

void people_reset(struct people *p)
{
    for (int e = 0; p && e < PEOPLE_EYES; e++)
        people_window_reset(&p->win[e]);
}

void people_free(struct people **pp)
{
    struct people *p = pp ? *pp : NULL;
    if (!p)
        return;
    pose_detector_free(&p->det);
    pose_segmenter_free(&p->seg);
    free(p->fpic);
    free(p->pic);
    free(p->roi);
    free(p->pasted);
    free(p);
    *pp = NULL;
}

/* ---- shared with the CUDA backend's tier (people.cu) ---- */

void people_pic_max(const struct vr_config *cfg, int eye_w, int eye_h, int *pw_max, int *ph_max)
{
    const int lng = eye_w > eye_h ? eye_w : eye_h;
    const int side = lng < cfg->people_size ? lng : cfg->people_size;
    *pw_max = (int)((long long)eye_w * side / lng);
    *ph_max = (int)((long long)eye_h * side / lng);
    if (*pw_max < 1)
        *pw_max = 1;
    if (*ph_max < 1)
        *ph_max = 1;
}

void people_pic_size(int pw_max, int ph_max, struct frame_rect eye, int *pw, int *ph)
{
    const int lng = eye.w > eye.h ? eye.w : eye.h;
    const int side = pw_max > ph_max ? pw_max : ph_max;
    int w = (int)((long long)eye.w * side / lng), h = (int)((long long)eye.h * side / lng);
    *pw = w < 1 ? 1 : (w > pw_max ? pw_max : w);
    *ph = h < 1 ? 1 : (h > ph_max ? ph_max : h);
}

int people_crops(int pw, int ph, int grid, struct frame_rect *crop)
{
    int n = 0;
    for (int g = 1; g <= (grid > 1 ? 2 : 1); g++) {
        const int cells = g == 1 ? 1 : grid;
        int cw = g == 1 ? pw : (int)(pw * 1.5 / cells), ch = g == 1 ? ph : (int)(ph * 1.5 / cells);
        cw = cw > pw ? pw : cw;
        ch = ch > ph ? ph : ch;
        /* a crop the detector would enlarge shows it nothing new */
        if (g > 1 && (cw < POSE_DET_SIZE || ch < POSE_DET_SIZE))
            break;
        for (int j = 0; j < cells; j++)
            for (int i = 0; i < cells; i++) {
                const int x0 = cells > 1 ? (pw - cw) * i / (cells - 1) : 0;
                const int y0 = cells > 1 ? (ph - ch) * j / (cells - 1) : 0;
                crop[n++] = (struct frame_rect){ x0, y0, cw, ch };
            }
    }
    return n;
}

int people_zoom_crops(int pw, int ph, double zoom, struct frame_rect *crop)
{
    if (!(zoom > 1.0))
        return 0;
    const int side = (int)(POSE_DET_SIZE / zoom + 0.5);
    if (side < 8 || side > pw || side > ph)
        return 0;
    /* cells a row so neighbours overlap by a quarter side (a far person on
     * one crop's edge is whole in the next), 8 at most: the cost's bound
     * (past it they spread: people.h) */
    const int step = side * 3 / 4;
    int nx = (pw - side + step - 1) / step + 1, ny = (ph - side + step - 1) / step + 1;
    nx = nx > 8 ? 8 : nx;
    ny = ny > 8 ? 8 : ny;
    int n = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            const int x0 = nx > 1 ? (pw - side) * i / (nx - 1) : (pw - side) / 2;
            const int y0 = ny > 1 ? (ph - side) * j / (ny - 1) : (ph - side) / 2;
            crop[n++] = (struct frame_rect){ x0, y0, side, side };
        }
    return n;
}

int people_split(const struct vr_config *cfg, int n_eyes)
{
    return cfg->people_zoom_split && n_eyes == 2 && cfg->stereo_bands > 0
           && cfg->people_zoom > 1.0 && cfg->people_zoom2 > 1.0;
}

int people_crops_all(int pw, int ph, const struct vr_config *cfg, int split, int e,
                     struct frame_rect *crop, int *n_plain)
{
    int n = *n_plain = people_crops(pw, ph, cfg->people_grid, crop);
    if (!split || e == 0)
        n += people_zoom_crops(pw, ph, cfg->people_zoom, crop + n);
    if (!split || e == 1)
        n += people_zoom_crops(pw, ph, cfg->people_zoom2, crop + n);
    return n;
}

int people_crops_max(const struct vr_config *cfg, int split)
{
    const int layouts = split ? 1 : (cfg->people_zoom > 1.0) + (cfg->people_zoom2 > 1.0);
    return PEOPLE_CROPS + layouts * PEOPLE_ZOOM_CROPS;
}

/* The zoomed crop's size filter: those of c[0..k-1] whose ROI is no larger
 * than PEOPLE_ZOOM_ROI times the crop's side, kept in order; their count. */
static int zoom_keep(struct pose_person *c, int k, const struct frame_rect *crop)
{
    const float side = (float)(crop->w > crop->h ? crop->w : crop->h);
    int kept = 0;
    for (int q = 0; q < k; q++) {
        struct pose_roi r;
        pose_roi_from_person(&c[q], &r);
        if (r.size <= PEOPLE_ZOOM_ROI * side) /* false: NaN too */
            c[kept++] = c[q];
    }
    return kept;
}

int people_crop_found(struct pose_person *c, int k, const struct frame_rect *crop, int zoomed)
{
    if (zoomed)
        k = zoom_keep(c, k, crop);
    for (int q = 0; q < k; q++) {
        struct pose_person *m = &c[q];
        m->x0 += crop->x, m->x1 += crop->x, m->y0 += crop->y, m->y1 += crop->y;
        for (int t = 0; t < 4; t++)
            m->kp[t][0] += crop->x, m->kp[t][1] += crop->y;
    }
    return k;
}

int people_roi_of(const struct pose_person *c, int pw, int ph, struct pose_roi *r)
{
    pose_roi_from_person(c, r);
    if (!(r->size >= 4.0f))
        return 0; /* a few pixels: nothing to segment */
    if (r->size > PEOPLE_ROI_MAX * (pw > ph ? pw : ph))
        return 0; /* not a far person (docs/QUALITY.md) */
    return 1;
}

void people_roi_to_work(struct pose_roi *r, float sx, float sy)
{
    r->cx *= sx, r->cy *= sy, r->size *= 0.5f * (sx + sy);
}

/* ---- the CPU engine's tier ---- */

/* Detections of eye e's whole picture and of its crops (people_crops_all: the
 * zoomed ones' filtered by their ROI's size), in picture pixels, merged;
 * returns their count. */
static int detect_all(struct people *p, int e, int pw, int ph, vr_err *err)
{
    struct frame_rect crop[PEOPLE_CROPS_ALL];
    int plain;
    const int nc = people_crops_all(pw, ph, &p->cfg, p->split, e, crop, &plain);
    int n = 0, rc;
    for (int q = 0; q < nc; q++) {
        int k = 0;
        const int room = (int)(sizeof p->cand / sizeof p->cand[0]) - n;
        if (room <= 0)
            break;
        rc = pose_detect(p->det, p->pic + ((size_t)crop[q].y * pw + crop[q].x) * 3, crop[q].w,
                         crop[q].h, pw * 3, p->cand + n,
                         room < POSE_MAX_PEOPLE ? room : POSE_MAX_PEOPLE, &k, err);
        if (rc < 0)
            return rc;
        n += people_crop_found(p->cand + n, k, &crop[q], q >= plain);
    }
    return pose_nms(p->cand, n, 0.3f);
}

/* Segments ROI r (picture pixels) on the eye picture and pastes its mask,
 * times `weight`, into p->pasted (ww x wh; sx, sy: work px a picture px)
 * when the person is present; *present gets whether it was. */
static int segment_paste(struct people *p, int pw, int ph, struct pose_roi r, float weight,
                         float sx, float sy, int ww, int wh, int *present, vr_err *err)
{
    float presence = 0;
    int rc = pose_segment(p->seg, p->pic, pw, ph, pw * 3, &r, p->roi, &presence, err);
    if (rc < 0)
        return rc;
    *present = presence >= PEOPLE_PRESENCE;
    if (!*present || weight <= 0)
        return 0;
    people_roi_to_work(&r, sx, sy);
    pose_paste_ref(&r, p->roi, weight, ww, wh, p->pasted);
    return 1;
}

int people_eye(struct people *p, int e, const struct seg_frame *f, struct frame_rect eye,
               float *work, int ww, int wh, int *found, vr_err *err)
{
    if (found)
        *found = 0;
    if (e < 0 || e >= PEOPLE_EYES)
        return vr_err_set(err, VR_EINVAL, "people: eye %d", e);
    int pw, ph;
    people_pic_size(p->pw_max, p->ph_max, eye, &pw, &ph);
    if ((size_t)ww * wh > p->pasted_sz) {
        free(p->pasted);
        if (!(p->pasted = malloc((size_t)ww * wh * sizeof *p->pasted)))
            return p->pasted_sz = 0, vr_err_set(err, VR_ENOMEM, "people: out of memory");
        p->pasted_sz = (size_t)ww * wh;
    }
    frame_preprocess_ref(f, &eye, 1, pw, ph, p->fpic);
    pose_pic_u8_ref(p->fpic, (size_t)pw * ph * 3, p->pic);
    int n = detect_all(p, e, pw, ph, err);
    if (n < 0)
        return n;
    n = n > PEOPLE_MAX ? PEOPLE_MAX : n;
    memset(p->pasted, 0, (size_t)ww * wh * sizeof *p->pasted);
    const float sx = (float)ww / pw, sy = (float)wh / ph;
    struct people_window *win = &p->win[e];
    struct people_seen now = { 0 };
    int kept = 0, rc, present;
    /* this frame's people: seen(t); pasted when the window confirms them */
    for (int i = 0; i < n; i++) {
        struct pose_roi r;
        if (!people_roi_of(&p->cand[i], pw, ph, &r))
            continue;
        /* seen(t) is judged at the detector's own ROI, a function of
         * frame t alone; a confirmed person is pasted at the smoothed one */
        if ((rc = segment_paste(p, pw, ph, r, 0, sx, sy, ww, wh, &present, err)) < 0)
            return rc;
        if (!present)
            continue;
        now.roi[now.n++] = r;
        if (!people_confirmed(win, &r))
            continue;
        struct pose_roi sm;
        people_smoothed(win, &r, &sm);
        if ((rc = segment_paste(p, pw, ph, sm, 1, sx, sy, ww, wh, &present, err)) < 0)
            return rc;
        kept += rc;
    }
    /* the window's people this frame missed, segmented on this frame */
    struct pose_roi carry[PEOPLE_MAX];
    float cw[PEOPLE_MAX];
    const int nc = people_carried(win, &now, carry, cw, PEOPLE_MAX);
    for (int i = 0; i < nc; i++) {
        if ((rc = segment_paste(p, pw, ph, carry[i], cw[i], sx, sy, ww, wh, &present, err)) < 0)
            return rc;
        kept += rc;
    }
    people_window_push(win, &now);
    for (size_t i = 0; kept && i < (size_t)ww * wh; i++)
        if (p->pasted[i] > work[i])
            work[i] = p->pasted[i];
    if (found)
        *found = kept;
    return 0;
}

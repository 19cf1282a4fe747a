/*
 * tune_ref.c - the auto-tuner's plain-C half, the twin of tune.cu (which
 * times the CUDA engine's variants): what every candidate is measured
 * against. The frame the candidates see (an image stretched into every
 * eye, or a synthetic scene, as NV12 like NVDEC gives it), the CPU
 * engine's mask of it (float32 C network and C frame kernels: the
 * reference), how far a candidate's mask strays from it, and the pick of
 * the fastest candidate within TUNE_MAX_ABS, stored in the cache. Built in
 * every build; tests/t-seg-tune-ref.c runs it without a GPU.
 */
#include "tune_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the frame the candidates see ---- */

/* A w x h RGB24 frame: `img` stretched (nearest) into every eye of the
 * layout, or, without one, a synthetic scene (a lit background with
 * texture and noise, and person-sized bright and dark blobs), so the
 * network's output covers its whole range rather than sitting near 0. */
void tune_frame_make(uint8_t *rgb, int w, int h, enum seg_layout layout,
                       const struct tune_image *img)
{
    int ew = layout == SEG_LAYOUT_SBS ? w / 2 : w, eh = layout == SEG_LAYOUT_TB ? h / 2 : h;
    uint32_t seed = 12345;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int ex = x >= ew ? x - ew : x, ey = y >= eh ? y - eh : y;
            ex = ex < ew ? ex : ew - 1; /* odd sizes: the second eye's extra column */
            ey = ey < eh ? ey : eh - 1;
            uint8_t *o = rgb + ((size_t)y * w + x) * 3;
            if (img) {
                const uint8_t *s = img->data + (size_t)((long long)ey * img->h / eh) * img->linesize
                                   + 3 * (size_t)((long long)ex * img->w / ew);
                o[0] = s[0];
                o[1] = s[1];
                o[2] = s[2];
                continue;
            }
            seed = seed * 1664525u + 1013904223u;
            float u = (float)ex / ew, v = (float)ey / eh, n = (float)(seed >> 24) / 255.0f;
            float bg = 0.35f + 0.25f * sinf(9.0f * u) * cosf(7.0f * v) + 0.1f * n;
            /* a standing figure: head and torso ellipses */
            float hx = (u - 0.45f) / 0.06f, hy = (v - 0.3f) / 0.08f;
            float tx = (u - 0.45f) / 0.12f, ty = (v - 0.62f) / 0.25f;
            int person = hx * hx + hy * hy < 1.0f || tx * tx + ty * ty < 1.0f;
            float r = person ? 0.8f + 0.1f * n : bg, g = person ? 0.55f : bg * 0.9f,
                  b = person ? 0.45f : bg * 1.1f;
            o[0] = (uint8_t)fminf(255.0f, r * 255.0f);
            o[1] = (uint8_t)fminf(255.0f, g * 255.0f);
            o[2] = (uint8_t)fminf(255.0f, b * 255.0f);
        }
}

/* NV12 (BT.709 limited range, chroma averaged over 2x2) of an RGB24 frame;
 * y is w*h bytes, uv w*(h/2) (even w, h). */
void tune_frame_nv12(const uint8_t *rgb, int w, int h, uint8_t *y, uint8_t *uv)
{
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            const uint8_t *p = rgb + ((size_t)r * w + c) * 3;
            y[(size_t)r * w + c] =
                (uint8_t)lrintf(16.0f + 219.0f / 255.0f * (0.2126f * p[0] + 0.7152f * p[1] + 0.0722f * p[2]));
        }
    for (int r = 0; r < h / 2; r++)
        for (int c = 0; c < w / 2; c++) {
            float R = 0, G = 0, B = 0;
            for (int k = 0; k < 4; k++) {
                const uint8_t *p = rgb + ((size_t)(2 * r + k / 2) * w + 2 * c + k % 2) * 3;
                R += p[0];
                G += p[1];
                B += p[2];
            }
            R /= 4 * 255.0f;
            G /= 4 * 255.0f;
            B /= 4 * 255.0f;
            float Y = 0.2126f * R + 0.7152f * G + 0.0722f * B;
            uv[(size_t)r * w + 2 * c] = (uint8_t)lrintf(128.0f + 224.0f * (B - Y) / 1.8556f);
            uv[(size_t)r * w + 2 * c + 1] = (uint8_t)lrintf(128.0f + 224.0f * (R - Y) / 1.5748f);
        }
}

/* ---- the reference and the pick ---- */

int tune_ref_mask(const struct seg_opts *o, const struct seg_frame *hf, uint8_t *mask,
                  vr_err *err)
{
    struct seg_opts co = *o;
    co.backend = SEG_CPU;
    struct seg *cpu = NULL;
    struct seg_mask hm = { mask, co.out_w, co.out_h, co.out_w, 0 };
    int rc = seg_create(&co, &cpu, err);
    if (rc == 0)
        rc = seg_run(cpu, hf, 1, &hm, NULL, err);
    seg_free(&cpu);
    return rc < 0 ? vr_err_prefix(err, "tune: CPU reference engine") : 0;
}

double tune_mask_diff(const uint8_t *mask, const uint8_t *ref, size_t n)
{
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)mask[i] - (int)ref[i]);
        worst = d > worst ? d : worst;
    }
    return worst / 255.0;
}

/* The fastest candidate that kept the mask within TUNE_MAX_ABS, stored in
 * the cache. */
int tune_pick(struct tune_report *r, vr_err *err)
{
    for (int i = 0; i < r->n_rows; i++)
        if (r->rows[i].ok && (r->best < 0 || r->rows[i].ms_per_frame < r->rows[r->best].ms_per_frame))
            r->best = i;
    if (r->best < 0)
        return vr_err_set(err, VR_ECUDA, "tune: no network variant kept the mask within %.2f of "
                          "the CPU engine's (see the table)", TUNE_MAX_ABS);
    const struct tune_row *b = &r->rows[r->best];
    r->choice.net = b->net;
    r->choice.frames = b->frames;
    r->choice.ms_per_frame = b->ms_per_frame;
    r->choice.max_abs = b->max_abs;
    return tune_cache_store(r->cache_path, r->key_str, &r->choice, err);
}


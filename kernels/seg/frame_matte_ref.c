/*
 * frame_matte_ref.c - the C twins of frame_matte.cu: the clean-up of an
 * eye's work mask between the blend and the refinement (issue 39).
 *
 *  - gate, on the tiles before the blend: the whole-eye pass is the prior
 *    of the tiles. A tile sees a piece of background alone and may invent
 *    a person in it: a grey or white tile-shaped block at 8K, where the
 *    whole pass, which sees the scene, is sure there is none. A tile that
 *    claims much more of its area than the whole pass (dilated) does there
 *    is distrusted, and its values are bounded by the whole pass: a person
 *    the whole pass found or half saw stays (dilated value >=
 *    FRAME_GATE_HI: no bound). A tile that adds only a little, as small
 *    far-away people the whole pass cannot see at its scale, keeps them:
 *    measuring the claim per tile, not per pixel, is what tells the two
 *    apart (the whole pass gives a far pedestrian of vtest-100.jpg 0..2 of
 *    255, the same as the grass).
 *  - fuse: a second model's whole-eye pass lifts the blended mask where it
 *    is sure. The general selfie model leaves holes in small people (42%
 *    of the bundled sample's), the landscape model misses the players of
 *    tests/data/people.jpg altogether; each is sure where the other fails.
 *  - morph: a grey close then open of the work mask: holes inside a
 *    silhouette narrower than 2r+1 work pixels are filled, specks as small
 *    are removed; the edges stay where they were (close and open are
 *    idempotent on shapes wider than the window), and the refinement runs
 *    after it, at full resolution.
 *
 * frame_ref.h states the rules; the CUDA twins follow them bit for bit
 * (max, min, an integer sum and the same rounded float steps).
 */
#include "frame_ref.h"

#include <stddef.h>

/* ---- gate ---- */

/* The whole pass's model pixel (nearest) under tile pixel i of a tile at
 * t0 (work px) of length tl, tile m pixels long, in a work mask n long. */
static inline int gate_index(int i, int m, float t0, float tl, int n)
{
    float px = t0 + ((float)i + 0.5f) / (float)m * tl;
    int k = (int)(px / (float)n * (float)m);
    return k < 0 ? 0 : (k > m - 1 ? m - 1 : k);
}

static float dilated(const float *whole, int mw, int mh, int cx, int cy, int r)
{
    int x0 = cx - r < 0 ? 0 : cx - r, x1 = cx + r > mw - 1 ? mw - 1 : cx + r;
    int y0 = cy - r < 0 ? 0 : cy - r, y1 = cy + r > mh - 1 ? mh - 1 : cy + r;
    float d = 0.0f;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            float v = whole[(size_t)y * mw + x];
            d = v > d ? v : d;
        }
    return d;
}

void frame_gate_ref(float *tiles, int n, int mw, int mh, const struct frame_tile *tile,
                    int ww, int wh, int r, float *scratch)
{
    if (n < 2 || !(tile[n - 1].edges & FRAME_TILE_FLOOR))
        return;
    const float *whole = tiles + (size_t)(n - 1) * mw * mh;
    const size_t np = (size_t)mw * mh;
    for (int i = 0; i < n - 1; i++) {
        const struct frame_tile *t = &tile[i];
        float *out = tiles + (size_t)i * np;
        long long claim = 0; /* where the tile says more than the dilated whole, by how much */
        for (int y = 0; y < mh; y++) {
            int cy = gate_index(y, mh, t->y, t->h, wh);
            for (int x = 0; x < mw; x++) {
                int cx = gate_index(x, mw, t->x, t->w, ww);
                float d = dilated(whole, mw, mh, cx, cy, r);
                scratch[(size_t)y * mw + x] = d;
                int over = (int)frame_to_u8(out[(size_t)y * mw + x]) - (int)frame_to_u8(d);
                claim += over > 0 ? over : 0;
            }
        }
        float trust = frame_gate_trust(claim, mw, mh);
        for (size_t k = 0; k < np; k++) {
            float g = (scratch[k] - FRAME_GATE_LO) / (FRAME_GATE_HI - FRAME_GATE_LO);
            g = g < trust ? trust : g;
            g = g > 1.0f ? 1.0f : g;
            out[k] = out[k] < g ? out[k] : g;
        }
    }
}

/* ---- fuse ---- */

void frame_fuse_ref(const float *p, int mw, int mh, int ww, int wh, float *work)
{
    for (int y = 0; y < wh; y++) {
        float v = ((float)y + 0.5f) / (float)wh;
        for (int x = 0; x < ww; x++) {
            float u = ((float)x + 0.5f) / (float)ww;
            float val = frame_tile_sample(p, mw, mh, u * (float)mw - 0.5f, v * (float)mh - 0.5f);
            float f = 2.0f * val - 1.0f;
            float *o = &work[(size_t)y * ww + x];
            *o = *o > f ? *o : f;
        }
    }
}

/* ---- morph ---- */

/* One separable pass of a max (is_max) or min filter of radius r along x
 * (dx = 1) or y (dx = 0), window clipped to the image. */
static void minmax_pass(const float *in, float *out, int w, int h, int r, int is_max, int dx)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int p = dx ? x : y, len = dx ? w : h;
            int a = p - r < 0 ? 0 : p - r, b = p + r > len - 1 ? len - 1 : p + r;
            float m = in[(size_t)y * w + x];
            for (int k = a; k <= b; k++) {
                float v = dx ? in[(size_t)y * w + k] : in[(size_t)k * w + x];
                m = is_max ? (v > m ? v : m) : (v < m ? v : m);
            }
            out[(size_t)y * w + x] = m;
        }
}

void frame_morph_ref(float *work, int w, int h, int r, float *scratch)
{
    if (r <= 0)
        return;
    /* close (max, min), then open (min, max); each a pass along x into
     * scratch and along y back into work */
    static const int order[4] = { 1, 0, 0, 1 };
    for (int i = 0; i < 4; i++) {
        minmax_pass(work, scratch, w, h, r, order[i], 1);
        minmax_pass(scratch, work, w, h, r, order[i], 0);
    }
}

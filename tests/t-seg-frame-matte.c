/*
 * t-seg-frame-matte.c - the work mask's clean-up (frame_matte_ref.c) on
 * hand-made masks: the whole pass bounds the tiles (a tile that invents a
 * person over its piece of background is bounded by the whole pass: what
 * the whole pass found stays, as far as the dilation reaches, the rest
 * goes; a tile that adds a small person the whole pass cannot see keeps
 * it), the second model lifts the mask only where it is sure, and
 * close/open fills a hole and removes a speck while a
 * square's edges stay where they were.
 */
#include "frame_ref.h"

#include <criterion/criterion.h>
#include <string.h>

#define TOL 1e-6f

Test(seg_frame_matte, gate_removes_invented_keeps_found)
{
    /* whole pass 16x16 over a 32x32 work mask; tile A the left half, B the
     * right half, both 16x16 model pixels */
    enum { M = 16, NP = M * M };
    float t[3 * NP], scratch[NP];
    struct frame_tile tile[3] = {
        { 0, 0, 16, 32, 1.0f, 0.25f, FRAME_EDGE_R, 0, 0.0f },
        { 16, 0, 16, 32, 1.0f, 0.25f, FRAME_EDGE_L, 0, 0.0f },
        { 0, 0, 32, 32, 1.0f, 0.0f, FRAME_TILE_FLOOR, 0, 0.0f },
    };
    float *a = t, *b = t + NP, *whole = t + 2 * NP;
    for (int i = 0; i < NP; i++) {
        a[i] = 1.0f;      /* A invents a person over all of its piece */
        b[i] = 0.0f;      /* B adds a small one the whole pass cannot see */
        whole[i] = 0.01f; /* the whole pass: sure background ... */
    }
    for (int y = 8; y < 11; y++)
        for (int x = 8; x < 11; x++)
            b[y * M + x] = 1.0f;
    whole[4 * M + 4] = 0.9f; /* ... and a person at its pixel (4, 4), in A's half */
    frame_gate_ref(t, 3, M, M, tile, 32, 32, 1, scratch);
    /* A's pixel (x, y) lies over the whole pass's (x / 2, y): its person,
     * dilated by 1, is A's x 6..11, y 3..5; the rest of A is gone */
    for (int y = 0; y < M; y++)
        for (int x = 0; x < M; x++)
            cr_assert_float_eq(a[y * M + x], x >= 6 && x <= 11 && y >= 3 && y <= 5 ? 1.0f : 0.0f,
                               TOL, "A (%d, %d)", x, y);
    /* B claims 9 of its 256 pixels: trusted, its small person stays */
    for (int y = 0; y < M; y++)
        for (int x = 0; x < M; x++)
            cr_assert_float_eq(b[y * M + x], x >= 8 && x < 11 && y >= 8 && y < 11 ? 1.0f : 0.0f,
                               TOL, "B (%d, %d)", x, y);
    cr_assert_float_eq(whole[4 * M + 4], 0.9f, TOL, "the whole pass is left as it is");
    /* the trust: full up to SLACK of the area, none from SLACK + SPAN */
    cr_assert_float_eq(frame_gate_trust(0, M, M), 1.0f, TOL);
    cr_assert_float_eq(frame_gate_trust((long long)(0.10 * 255 * NP), M, M), 0.5f, 1e-3f);
    cr_assert_float_eq(frame_gate_trust(255 * NP, M, M), 0.0f, TOL);
    /* no whole pass under the tiles: nothing to bound by */
    tile[2].edges = 0;
    for (int i = 0; i < NP; i++)
        a[i] = 1.0f;
    frame_gate_ref(t, 3, M, M, tile, 32, 32, 1, scratch);
    cr_assert_float_eq(a[0], 1.0f, TOL);
}

Test(seg_frame_matte, fuse_lifts_only_where_sure)
{
    /* the second model's 4x4 output over an 8x8 work mask: sure of a person
     * in its left column, unsure (0.5) in the next, sure of background after */
    float p[16], work[64];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            p[y * 4 + x] = x == 0 ? 1.0f : (x == 1 ? 0.5f : 0.0f);
    for (int i = 0; i < 64; i++)
        work[i] = 0.2f; /* the first model: a hole */
    work[7] = 0.9f;     /* and a person the second one does not see */
    frame_fuse_ref(p, 4, 4, 8, 8, work);
    /* work x 0 samples p at -0.25 (clamped: 1.0) -> 2*1 - 1 = 1 */
    cr_assert_float_eq(work[8 * 3 + 0], 1.0f, TOL, "the hole is filled where it is sure");
    /* x 1 samples at 0.25: 0.875 -> 0.75 */
    cr_assert_float_eq(work[8 * 3 + 1], 0.75f, TOL);
    /* x 3 samples at 1.25: 0.375 -> -0.25: the first model's 0.2 stays */
    cr_assert_float_eq(work[8 * 3 + 3], 0.2f, TOL, "an unsure second model adds nothing");
    cr_assert_float_eq(work[7], 0.9f, TOL, "the fusion never lowers the mask");
}

Test(seg_frame_matte, morph_fills_holes_removes_specks_keeps_edges)
{
    enum { W = 40, H = 30 };
    float m[W * H], scratch[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            m[y * W + x] = x >= 10 && x < 30 && y >= 5 && y < 25 ? 1.0f : 0.0f;
    m[15 * W + 20] = 0.0f;            /* a hole inside the person */
    m[15 * W + 21] = 0.1f;
    m[2 * W + 3] = 0.9f;              /* a speck on the background */
    frame_morph_ref(m, W, H, 1, scratch);
    cr_assert_float_eq(m[15 * W + 20], 1.0f, TOL, "the hole is filled");
    cr_assert_float_eq(m[15 * W + 21], 1.0f, TOL);
    cr_assert_float_eq(m[2 * W + 3], 0.0f, TOL, "the speck is gone");
    for (int y = 0; y < H; y++)       /* the square is exactly where it was */
        for (int x = 0; x < W; x++)
            cr_assert_float_eq(m[y * W + x],
                               x >= 10 && x < 30 && y >= 5 && y < 25 ? 1.0f : 0.0f, TOL,
                               "(%d, %d)", x, y);
    float before[W * H];
    memcpy(before, m, sizeof m);
    frame_morph_ref(m, W, H, 0, scratch); /* radius 0: nothing */
    cr_assert_eq(memcmp(before, m, sizeof m), 0);
}

/*
 * t-net-ops-tconv.c - mediapipe's Convolution2DTransposeBias: output size and
 * crop (op_tconv_geom), the model's 2x2 stride-2 kernel with bias worked
 * out by hand, overlapping taps (kernel wider than the stride) with SAME
 * cropping, and a brute-force check on random sizes.
 */
#include "model.h"
#include "ops_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static struct conv_geom tgeom(int n, int ih, int iw, int cin, int cout, int kh, int kw, int s,
                              int padding)
{
    struct conv_geom g = { .n = n, .ih = ih, .iw = iw, .cin = cin, .cout = cout, .kh = kh,
                           .kw = kw, .sh = s, .sw = s, .dh = 1, .dw = 1 };
    op_tconv_geom(&g, padding);
    return g;
}

Test(net_ops_tconv, geometry)
{
    struct conv_geom g = tgeom(1, 128, 128, 16, 1, 2, 2, 2, MPAD_SAME);
    cr_assert_eq(g.oh, 256);
    cr_assert_eq(g.pad_top, 0);
    g = tgeom(1, 3, 3, 1, 1, 2, 2, 2, MPAD_SAME); /* odd input: 2*3 - 1 */
    cr_assert_eq(g.oh, 5);
    cr_assert_eq(g.pad_top, 0);
    g = tgeom(1, 2, 2, 1, 1, 3, 3, 2, MPAD_VALID);
    cr_assert_eq(g.oh, 5);
    g = tgeom(1, 2, 2, 1, 1, 3, 3, 2, MPAD_SAME); /* total 1: out 4, crop 0 */
    cr_assert_eq(g.oh, 4);
    cr_assert_eq(g.pad_top, 0);
    g = tgeom(1, 4, 4, 1, 1, 4, 4, 1, MPAD_SAME); /* total 3: out 4, crop 1 */
    cr_assert_eq(g.oh, 4);
    cr_assert_eq(g.pad_top, 1);
}

Test(net_ops_tconv, model_kernel_2x2_stride2_bias)
{
    /* 2x2 input, 2 channels -> 4x4, 1 channel. Each input pixel writes a
     * 2x2 block: bias + in.c0 * w[.][c0] + in.c1 * w[.][c1]. */
    const float in[8] = { 1, 0, 2, 1, 0, -1, 3, 3 }; /* (c0, c1) per pixel */
    /* OHWI [1][2][2][2]: tap (fy,fx) -> (w_c0, w_c1) */
    const float w[8] = { 1, 10, 2, 20, 3, 30, 4, 40 };
    const float b[1] = { 0.5f };
    float out[16];
    struct conv_geom g = tgeom(1, 2, 2, 2, 1, 2, 2, 2, MPAD_SAME);
    ref_tconv_bias(&g, in, w, b, out);
    for (int iy = 0; iy < 2; iy++)
        for (int ix = 0; ix < 2; ix++)
            for (int fy = 0; fy < 2; fy++)
                for (int fx = 0; fx < 2; fx++) {
                    const float *p = in + (iy * 2 + ix) * 2, *t = w + (fy * 2 + fx) * 2;
                    float want = 0.5f + p[0] * t[0] + p[1] * t[1];
                    float got = out[(iy * 2 + fy) * 4 + ix * 2 + fx];
                    cr_assert_float_eq(got, want, 0, "(%d,%d) tap (%d,%d) = %g, want %g", iy,
                                       ix, fy, fx, got, want);
                }
    /* spot values: pixel (0,0)=(1,0) tap (0,0): 0.5 + 1 = 1.5;
     * pixel (1,1)=(3,3) tap (1,1): 0.5 + 12 + 120 = 132.5 */
    cr_assert_float_eq(out[0], 1.5f, 0);
    cr_assert_float_eq(out[15], 132.5f, 0);
}

Test(net_ops_tconv, overlapping_taps_and_same_crop)
{
    /* 1x2 input [1, 2], kernel 1x3 [1, 10, 100], stride 2, bias 0:
     * VALID: [1, 10, 100+2, 20, 200]; SAME crops the last: 4 wide. */
    const float in[2] = { 1, 2 }, w[3] = { 1, 10, 100 }, b[1] = { 0 };
    float out[5];
    struct conv_geom g = tgeom(1, 1, 2, 1, 1, 1, 3, 2, MPAD_VALID);
    cr_assert_eq(g.oh, 1);
    cr_assert_eq(g.ow, 5);
    ref_tconv_bias(&g, in, w, b, out);
    static const float valid[5] = { 1, 10, 102, 20, 200 };
    for (int i = 0; i < 5; i++)
        cr_assert_float_eq(out[i], valid[i], 0, "VALID[%d] = %g", i, out[i]);
    g = tgeom(1, 1, 2, 1, 1, 1, 3, 2, MPAD_SAME);
    cr_assert_eq(g.ow, 4);
    ref_tconv_bias(&g, in, w, b, out);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], valid[i], 0, "SAME[%d] = %g", i, out[i]);
}

Test(net_ops_tconv, random_vs_double)
{
    unsigned s = 99;
#define RND() (s = s * 1103515245u + 12345u, (float)((s >> 8) & 0xffff) / 32768.f - 1.f)
#define IRND(lo, hi) (s = s * 1103515245u + 12345u, (lo) + (int)((s >> 8) % ((hi) - (lo) + 1)))
    for (int t = 0; t < 30; t++) {
        int n = IRND(1, 2), ih = IRND(1, 6), iw = IRND(1, 6), cin = IRND(1, 9),
            cout = IRND(1, 4), kh = IRND(1, 4), kw = IRND(1, 4), st = IRND(1, 3);
        int pad = IRND(0, 1) ? MPAD_SAME : MPAD_VALID;
        struct conv_geom g = tgeom(n, ih, iw, cin, cout, kh, kw, st, pad);
        size_t ni = (size_t)n * ih * iw * cin, nw = (size_t)cout * kh * kw * cin,
               no = (size_t)n * g.oh * g.ow * cout;
        float *in = malloc(ni * 4), *w = malloc(nw * 4), *b = malloc(cout * 4),
              *out = malloc(no * 4);
        double *want = calloc(no, 8);
        cr_assert(in && w && b && out && want);
        for (size_t i = 0; i < ni; i++)
            in[i] = RND();
        for (size_t i = 0; i < nw; i++)
            w[i] = RND();
        for (int i = 0; i < cout; i++)
            b[i] = RND();
        ref_tconv_bias(&g, in, w, b, out);
        /* Independent: the full (VALID) transposed convolution, then the
         * crop recomputed from mediapipe's formula. */
        int th = 0, tw = 0;
        if (pad == MPAD_SAME) {
            th = kh - (ih - 1) % st - 1;
            tw = kw - (iw - 1) % st - 1;
            th = th < 0 ? 0 : th;
            tw = tw < 0 ? 0 : tw;
        }
        int fh = (ih - 1) * st + kh, fw = (iw - 1) * st + kw;
        cr_assert_eq(g.oh, fh - th);
        cr_assert_eq(g.ow, fw - tw);
        for (int bi = 0; bi < n; bi++)
            for (int y = 0; y < g.oh; y++)
                for (int x = 0; x < g.ow; x++)
                    for (int oc = 0; oc < cout; oc++) {
                        double acc = b[oc];
                        int fy0 = y + th / 2, fx0 = x + tw / 2; /* full-output coords */
                        for (int iy = 0; iy < ih; iy++)
                            for (int ix = 0; ix < iw; ix++) {
                                int ky = fy0 - iy * st, kx = fx0 - ix * st;
                                if (ky < 0 || kx < 0 || ky >= kh || kx >= kw)
                                    continue;
                                for (int ic = 0; ic < cin; ic++)
                                    acc += (double)in[((bi * ih + iy) * iw + ix) * cin + ic] *
                                           w[((oc * kh + ky) * kw + kx) * cin + ic];
                            }
                        want[((bi * g.oh + y) * g.ow + x) * cout + oc] = acc;
                    }
        for (size_t i = 0; i < no; i++)
            cr_assert(fabs(out[i] - want[i]) < 1e-5, "case %d [%zu] = %.9g, want %.9g", t, i,
                      out[i], want[i]);
        free(in);
        free(w);
        free(b);
        free(out);
        free(want);
    }
#undef RND
#undef IRND
}

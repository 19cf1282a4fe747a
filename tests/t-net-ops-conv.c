/*
 * t-net-ops-conv.c - CONV_2D and DEPTHWISE_CONV_2D against values worked out by
 * hand (SAME vs VALID, TFLite's trailing extra padding at stride 2,
 * dilation, each fused activation), then against a brute-force
 * double-precision convolution written independently here, on random
 * sizes. The packed fast path (ref_conv2d_hwio) must give the plain
 * reference's bits, and so must the stem kernel's twin (ref_stem), whose
 * pool sums hold each block's outputs.
 */
#include "model.h"
#include "ops_fused.h"
#include "ops_ref.h"
#include "vr_err.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* Without FMA the two conv paths round identically and must agree bit for
 * bit; a build for a CPU with FMA (-march=native) lets the compiler fuse
 * multiply-adds differently in each, so only closeness is asked then. */
#ifdef __FMA__
#define FMA_SLACK 1
#else
#define FMA_SLACK 0
#endif

/* 1..16 in a 4x4 single-channel image: in(y, x) = 4y + x + 1. */
static void ramp16(float *in)
{
    for (int i = 0; i < 16; i++)
        in[i] = (float)(i + 1);
}

static struct conv_geom geom(int n, int ih, int iw, int cin, int cout, int k, int s, int d,
                             int padding, int act)
{
    struct conv_geom g = { .n = n, .ih = ih, .iw = iw, .cin = cin, .cout = cout, .kh = k,
                           .kw = k, .sh = s, .sw = s, .dh = d, .dw = d, .act = act };
    op_conv_geom(&g, padding);
    return g;
}

/* Runs both conv paths and checks they agree exactly; returns via out. */
static void conv_both(const struct conv_geom *g, const float *in, const float *w,
                      const float *b, float *out)
{
    size_t nw = (size_t)g->cout * g->kh * g->kw * g->cin;
    size_t no = (size_t)g->n * g->oh * g->ow * g->cout;
    float *packed = malloc(nw * sizeof(float)), *fast = malloc(no * sizeof(float));
    cr_assert(packed && fast);
    ref_conv2d(g, in, w, b, out);
    op_pack_hwio(w, g->cout, g->kh, g->kw, g->cin, packed);
    ref_conv2d_hwio(g, in, packed, b, fast);
    for (size_t i = 0; i < no; i++)
        cr_assert(out[i] == fast[i] || (isnan(out[i]) && isnan(fast[i])) ||
                      (FMA_SLACK && fabsf(out[i] - fast[i]) <= 1e-5f * (1 + fabsf(out[i]))),
                  "hwio differs at %zu: %.9g vs %.9g", i, fast[i], out[i]);
    free(packed);
    free(fast);
}

/* ---- geometry ---- */

Test(net_ops_conv, geometry_follows_tflite_padding)
{
    struct conv_geom g = geom(1, 4, 4, 1, 1, 3, 1, 1, MPAD_SAME, 0);
    cr_assert_eq(g.oh, 4);
    cr_assert_eq(g.pad_top, 1);
    g = geom(1, 4, 4, 1, 1, 3, 1, 1, MPAD_VALID, 0);
    cr_assert_eq(g.oh, 2);
    cr_assert_eq(g.pad_top, 0);
    /* stride 2 on 4: total padding 1 goes after (pad_top 0). */
    g = geom(1, 4, 4, 1, 1, 3, 2, 1, MPAD_SAME, 0);
    cr_assert_eq(g.oh, 2);
    cr_assert_eq(g.pad_top, 0);
    /* stride 2 on 5: total 2, one each side. */
    g = geom(1, 5, 5, 1, 1, 3, 2, 1, MPAD_SAME, 0);
    cr_assert_eq(g.oh, 3);
    cr_assert_eq(g.pad_top, 1);
    /* dilation 2: effective 5 taps. */
    g = geom(1, 4, 4, 1, 1, 3, 1, 2, MPAD_SAME, 0);
    cr_assert_eq(g.oh, 4);
    cr_assert_eq(g.pad_top, 2);
    g = geom(1, 7, 7, 1, 1, 3, 2, 2, MPAD_VALID, 0);
    cr_assert_eq(g.oh, 2); /* (7 + 2 - 5) / 2 */
    /* 5x5 stride 2 on 32, as the model's depthwise layers. */
    g = geom(1, 32, 32, 1, 1, 5, 2, 1, MPAD_SAME, 0);
    cr_assert_eq(g.oh, 16);
    cr_assert_eq(g.pad_top, 1); /* total (15*2 + 5 - 32) = 3 */
}

/* ---- hand-computed cases ---- */

Test(net_ops_conv, same_and_valid_3x3_ones)
{
    float in[16], w[9], out[16];
    ramp16(in);
    for (int i = 0; i < 9; i++)
        w[i] = 1.f;
    /* SAME: each output is the sum of its in-bounds 3x3 neighbourhood. */
    static const float same[16] = { 14, 24, 30, 22, 33, 54, 63, 45,
                                    57, 90, 99, 69, 46, 72, 78, 54 };
    struct conv_geom g = geom(1, 4, 4, 1, 1, 3, 1, 1, MPAD_SAME, MACT_NONE);
    conv_both(&g, in, w, NULL, out);
    for (int i = 0; i < 16; i++)
        cr_assert_float_eq(out[i], same[i], 0, "SAME[%d] = %g, want %g", i, out[i], same[i]);
    static const float valid[4] = { 54, 63, 90, 99 };
    g = geom(1, 4, 4, 1, 1, 3, 1, 1, MPAD_VALID, MACT_NONE);
    conv_both(&g, in, w, NULL, out);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], valid[i], 0, "VALID[%d] = %g", i, out[i]);
}

Test(net_ops_conv, stride2_pads_after)
{
    float in[16], w[9], out[4];
    ramp16(in);
    for (int i = 0; i < 9; i++)
        w[i] = 1.f;
    /* Windows start at rows/cols 0 and 2: the missing row/col is at the end.
     * (0,0) 1+2+3+5+6+7+9+10+11 = 54; (0,1) 3+4+7+8+11+12 = 45;
     * (1,0) 9+10+11+13+14+15 = 72; (1,1) 11+12+15+16 = 54. */
    static const float want[4] = { 54, 45, 72, 54 };
    struct conv_geom g = geom(1, 4, 4, 1, 1, 3, 2, 1, MPAD_SAME, MACT_NONE);
    conv_both(&g, in, w, NULL, out);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], want[i], 0, "[%d] = %g, want %g", i, out[i], want[i]);
}

Test(net_ops_conv, dilation2)
{
    float in[16], w[9], out[16];
    ramp16(in);
    for (int i = 0; i < 9; i++)
        w[i] = 1.f;
    /* pad 2; taps at offsets -2, 0, +2 around each pixel.
     * (0,0): rows 0,2 x cols 0,2 = 1+3+9+11 = 24
     * (0,1): rows 0,2 x cols 1,3 = 2+4+10+12 = 28
     * (1,1): rows 1,3 x cols 1,3 = 6+8+14+16 = 44
     * (2,3): rows 0,2 x cols 1,3 = 28 (row 4 out of bounds) */
    struct conv_geom g = geom(1, 4, 4, 1, 1, 3, 1, 2, MPAD_SAME, MACT_NONE);
    conv_both(&g, in, w, NULL, out);
    cr_assert_float_eq(out[0], 24, 0);
    cr_assert_float_eq(out[1], 28, 0);
    cr_assert_float_eq(out[5], 44, 0);
    cr_assert_float_eq(out[2 * 4 + 3], 28, 0);
}

Test(net_ops_conv, channels_weights_bias)
{
    /* 1x1 conv, 2 -> 3 channels, on 2 pixels, batch 2: the OHWI layout. */
    const float in[8] = { 1, 2, -1, 0.5f, 3, 0, 0, 0 };
    const float w[6] = { 1, 2, 3, 4, -1, 1 }; /* oc0 (1,2) oc1 (3,4) oc2 (-1,1) */
    const float b[3] = { 0.5f, -1, 0 };
    float out[12];
    struct conv_geom g = geom(2, 1, 2, 2, 3, 1, 1, 1, MPAD_VALID, MACT_NONE);
    conv_both(&g, in, w, b, out);
    static const float want[12] = {
        1 + 4 + 0.5f, 3 + 8 - 1,      -1 + 2,   /* (1, 2) */
        -1 + 1 + 0.5f, -3 + 2 - 1,    1 + 0.5f, /* (-1, 0.5) */
        3 + 0.5f,      9 - 1,         -3,       /* (3, 0) */
        0.5f,          -1,            0,        /* (0, 0) */
    };
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(out[i], want[i], 0, "[%d] = %g, want %g", i, out[i], want[i]);
}

Test(net_ops_conv, fused_activations)
{
    const float in[6] = { -8, -0.5f, 0.5f, 8, 0, 1e30f };
    const float w[1] = { 1 };
    float out[6];
    struct {
        int act;
        float want[6];
    } cases[] = {
        { MACT_NONE, { -8, -0.5f, 0.5f, 8, 0, 1e30f } },
        { MACT_RELU, { 0, 0, 0.5f, 8, 0, 1e30f } },
        { MACT_RELU_N1_TO_1, { -1, -0.5f, 0.5f, 1, 0, 1 } },
        { MACT_RELU6, { 0, 0, 0.5f, 6, 0, 6 } },
        { MACT_TANH, { tanhf(-8), tanhf(-0.5f), tanhf(0.5f), tanhf(8), 0, 1 } },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct conv_geom g = geom(1, 1, 6, 1, 1, 1, 1, 1, MPAD_VALID, cases[k].act);
        conv_both(&g, in, w, NULL, out);
        for (int i = 0; i < 6; i++)
            cr_assert_float_eq(out[i], cases[k].want[i], 1e-7f, "act %d [%d] = %g",
                               cases[k].act, i, out[i]);
    }
    /* TFLite clamps to [lowest, max] even with no activation. */
    cr_assert_eq(op_act(INFINITY, MACT_NONE), FLT_MAX);
    cr_assert_eq(op_act(-INFINITY, MACT_RELU_N1_TO_1), -1.f);
    cr_assert(isnan(op_act(NAN, MACT_RELU)));
}

Test(net_ops_conv, depthwise_hand)
{
    /* 3x3 input, 2 channels: ch0 = 1..9, ch1 = 10 * ch0; 3x3 weights:
     * ch0 all ones, ch1 the centre only; SAME. */
    float in[18], w[18], out[18];
    for (int i = 0; i < 9; i++) {
        in[2 * i] = (float)(i + 1);
        in[2 * i + 1] = 10.f * (i + 1);
        w[2 * i] = 1.f;
        w[2 * i + 1] = i == 4 ? 1.f : 0.f;
    }
    const float b[2] = { 0, 0.5f };
    struct conv_geom g = geom(1, 3, 3, 2, 2, 3, 1, 1, MPAD_SAME, MACT_NONE);
    ref_dwconv2d(&g, in, w, b, out);
    /* ch0 corner (0,0): 1+2+4+5 = 12; centre 45; ch1 copies input + 0.5 */
    cr_assert_float_eq(out[0], 12, 0);
    cr_assert_float_eq(out[2 * 4], 45, 0);
    cr_assert_float_eq(out[2 * 8], 5 + 6 + 8 + 9, 0);
    for (int i = 0; i < 9; i++)
        cr_assert_float_eq(out[2 * i + 1], 10.f * (i + 1) + 0.5f, 0);
    /* RELU6 clamps the big ones. */
    g.act = MACT_RELU6;
    ref_dwconv2d(&g, in, w, b, out);
    cr_assert_float_eq(out[0], 6, 0);
    cr_assert_float_eq(out[1], 6, 0);
}

Test(net_ops_conv, depthwise_multiplier2)
{
    /* 1 input channel, depth multiplier 2, 1x1 kernel: oc = ic*2 + m. */
    const float in[3] = { 1, 2, 3 };
    const float w[2] = { 2, -1 };
    const float b[2] = { 0, 10 };
    float out[6];
    struct conv_geom g = geom(1, 1, 3, 1, 2, 1, 1, 1, MPAD_VALID, MACT_NONE);
    ref_dwconv2d(&g, in, w, b, out);
    static const float want[6] = { 2, 9, 4, 8, 6, 7 };
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(out[i], want[i], 0, "[%d] = %g", i, out[i]);
}

/* ---- brute force in double precision ---- */

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.f - 1.f;
}

static int irand(unsigned *s, int lo, int hi)
{
    *s = *s * 1103515245u + 12345u;
    return lo + (int)((*s >> 8) % (unsigned)(hi - lo + 1));
}

/* Independent of ops_conv_ref.c: output size and padding recomputed from the
 * TensorFlow definitions. */
static void brute(const struct conv_geom *g, int padding, int depthwise, const float *in,
                  const float *w, const float *b, double *out, double *mag)
{
    int effh = (g->kh - 1) * g->dh + 1, effw = (g->kw - 1) * g->dw + 1;
    int oh = padding == MPAD_SAME ? (g->ih + g->sh - 1) / g->sh : (g->ih - effh) / g->sh + 1;
    int ow = padding == MPAD_SAME ? (g->iw + g->sw - 1) / g->sw : (g->iw - effw) / g->sw + 1;
    cr_assert_eq(oh, g->oh);
    cr_assert_eq(ow, g->ow);
    int pt = ((oh - 1) * g->sh + effh - g->ih) / 2, pl = ((ow - 1) * g->sw + effw - g->iw) / 2;
    pt = pt < 0 ? 0 : pt;
    pl = pl < 0 ? 0 : pl;
    int dm = g->cout / g->cin;
    for (int n = 0; n < g->n; n++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int oc = 0; oc < g->cout; oc++) {
                    double s = b ? b[oc] : 0, a = b ? fabs(b[oc]) : 0;
                    for (int fy = 0; fy < g->kh; fy++)
                        for (int fx = 0; fx < g->kw; fx++) {
                            int iy = y * g->sh - pt + fy * g->dh, ix = x * g->sw - pl + fx * g->dw;
                            if (iy < 0 || ix < 0 || iy >= g->ih || ix >= g->iw)
                                continue;
                            const float *ip = in + (((size_t)n * g->ih + iy) * g->iw + ix) * g->cin;
                            if (depthwise) {
                                double t = (double)ip[oc / dm] * w[(fy * g->kw + fx) * g->cout + oc];
                                s += t;
                                a += fabs(t);
                                continue;
                            }
                            for (int ic = 0; ic < g->cin; ic++) {
                                double t = (double)ip[ic] *
                                           w[((oc * g->kh + fy) * g->kw + fx) * g->cin + ic];
                                s += t;
                                a += fabs(t);
                            }
                        }
                    size_t o = (((size_t)n * oh + y) * ow + x) * g->cout + oc;
                    if (g->act == MACT_RELU)
                        s = s < 0 ? 0 : s;
                    else if (g->act == MACT_RELU6)
                        s = s < 0 ? 0 : s > 6 ? 6 : s;
                    out[o] = s;
                    mag[o] = a;
                }
}

static void random_cases(int depthwise)
{
    unsigned seed = depthwise ? 777u : 12345u;
    for (int t = 0; t < 60; t++) {
        int k = irand(&seed, 1, 5);
        /* Every third case is a 1x1 stride-1 conv: the GEMM path. */
        int gemm = !depthwise && t % 3 == 0;
        if (gemm)
            k = 1;
        int cin = irand(&seed, 1, 20);
        int dm = depthwise ? irand(&seed, 1, 2) : 1;
        int cout = depthwise ? cin * dm : irand(&seed, 1, 21);
        int s = gemm ? 1 : irand(&seed, 1, 3), d = gemm ? 1 : irand(&seed, 1, 2);
        int pad = irand(&seed, 0, 1) ? MPAD_SAME : MPAD_VALID;
        int ih = irand(&seed, (k - 1) * d + 1, 11), iw = irand(&seed, (k - 1) * d + 1, 11);
        int act = (int[]){ MACT_NONE, MACT_RELU, MACT_RELU6 }[irand(&seed, 0, 2)];
        struct conv_geom g = { .n = irand(&seed, 1, 3), .ih = ih, .iw = iw, .cin = cin,
                               .cout = cout, .kh = k, .kw = irand(&seed, 1, k), .sh = s,
                               .sw = irand(&seed, 1, s), .dh = d, .dw = d, .act = act };
        op_conv_geom(&g, pad);
        size_t ni = (size_t)g.n * ih * iw * cin, nw = (size_t)cout * g.kh * g.kw * cin;
        size_t no = (size_t)g.n * g.oh * g.ow * cout;
        float *in = malloc(ni * 4), *w = malloc(nw * 4), *b = malloc(cout * 4),
              *out = malloc(no * 4);
        double *want = malloc(no * 8), *mag = malloc(no * 8);
        cr_assert(in && w && b && out && want && mag);
        for (size_t i = 0; i < ni; i++)
            in[i] = frand(&seed) * 2;
        for (size_t i = 0; i < nw; i++)
            w[i] = frand(&seed);
        for (int i = 0; i < cout; i++)
            b[i] = frand(&seed);
        const float *bias = t % 4 == 1 ? NULL : b;
        if (depthwise)
            ref_dwconv2d(&g, in, w, bias, out);
        else
            conv_both(&g, in, w, bias, out);
        brute(&g, pad, depthwise, in, w, bias, want, mag);
        for (size_t i = 0; i < no; i++)
            cr_assert(fabs(out[i] - want[i]) <= 1e-6 * (mag[i] + 1),
                      "case %d (%s n%d %dx%dx%d k%dx%d s%d,%d d%d pad %d -> %dx%dx%d) "
                      "[%zu] = %.9g, want %.9g",
                      t, depthwise ? "dw" : "conv", g.n, ih, iw, cin, g.kh, g.kw, g.sh, g.sw,
                      d, pad, g.oh, g.ow, cout, i, out[i], want[i]);
        free(in);
        free(w);
        free(b);
        free(out);
        free(want);
        free(mag);
    }
}

Test(net_ops_conv, conv_random_vs_double)
{
    random_cases(0);
}

Test(net_ops_conv, depthwise_random_vs_double)
{
    random_cases(1);
}

/* ---- the stem kernel's twin (ops_stem_ref.c) ---- */

/* ref_stem is ref_conv2d and the two activations, bit for bit, and its
 * pool sums hold each 16x32 block's outputs: on a 21x35 map (2 x 2
 * blocks, partial at the right and bottom), the last block's sums are its
 * outputs' sums, and the blocks together sum the whole map. */
Test(net_ops_conv, stem_twin)
{
    struct conv_geom g = geom(2, 41, 70, 3, 16, 3, 2, 1, MPAD_SAME, MACT_RELU6);
    cr_assert(g.oh == 21 && g.ow == 35);
    const size_t ni = (size_t)g.n * g.ih * g.iw * 3, nw = 16 * 27, no = (size_t)g.n * 21 * 35 * 16;
    float *in = malloc(ni * 4), *w = malloc(nw * 4), b[16];
    float *want = malloc(no * 4), *out = aligned_alloc(16, no * 4), pool[2 * 4 * 16];
    cr_assert(in && w && want && out);
    uint32_t s = 7;
    for (size_t i = 0; i < ni; i++)
        in[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f;
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < 16; i++)
        b[i] = (float)i / 16 - 0.5f;
    cr_assert_eq(ref_stem_parts(&g), 4);
    cr_assert_eq(ref_stem(&g, in, w, b, MACT_RELU6, CU_ACT_HSWISH, out, pool), 0);
    ref_conv2d(&g, in, w, b, want);
    for (size_t i = 0; i < no; i++)
        cr_assert_eq(out[i], ref_act_ext(want[i], CU_ACT_HSWISH), "output %zu", i);
    for (int n = 0; n < g.n; n++)
        for (int c = 0; c < 16; c++) {
            double all = 0, last = 0, parts = 0;
            for (int y = 0; y < 21; y++)
                for (int x = 0; x < 35; x++) {
                    const float v = out[(((size_t)n * 21 + y) * 35 + x) * 16 + c];
                    all += v;
                    last += y >= 16 && x >= 32 ? v : 0;
                }
            for (int p = 0; p < 4; p++)
                parts += pool[(n * 4 + p) * 16 + c];
            cr_assert_float_eq(pool[(n * 4 + 3) * 16 + c], last, 1e-4 * (1 + fabs(last)));
            cr_assert_float_eq(parts, all, 1e-4 * (1 + fabs(all)));
        }
    /* not the stem's geometry, or an output the kernel cannot store */
    struct conv_geom other = geom(1, 16, 16, 4, 16, 3, 2, 1, MPAD_SAME, MACT_NONE);
    cr_assert(!ref_stem_ok(&other, out));
    cr_assert_eq(ref_stem(&other, in, w, b, 0, 0, out, NULL), VR_EINVAL);
    other = geom(1, 16, 16, 3, 16, 3, 1, 1, MPAD_SAME, MACT_NONE);
    cr_assert(!ref_stem_ok(&other, out));
    cr_assert(!ref_stem_ok(&g, (char *)out + 4));
    free(in);
    free(w);
    free(want);
    free(out);
}

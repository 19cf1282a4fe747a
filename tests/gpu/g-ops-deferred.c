/*
 * g-ops-deferred.c - the readers of a deferred resize (RS_DEFER in
 * net_cuda.cu: a map stored small, resized where it is read) against their
 * twins, which write the resize out: the squeeze-excite pool
 * (cu_se_args.in_rs_*) and the decoder tail's sum operand
 * (cu_tail_args.b_rs_*). Fresh random data, float32 and float16; the
 * selfie models' 64 -> 128 first, then odd sizes, align_corners, and
 * shrinking.
 */
#include "g-net-util.h"

#include "ops_fused.h"
#include "vr_err.h"

/* The pool: the small map given, the pool over its bilinear resize; in2 as
 * sums, as the network runs it. */
Test(gpu_ops, squeeze_excite_deferred_resize)
{
    gn_seed("squeeze_excite_deferred_resize");
    /* n, small h, w, pooled h, w, align, half: the selfie models' 64 -> 128,
     * then odd sizes both ways */
    const int cs[][7] = { { 3, 64, 64, 128, 128, 0, 1 }, { 2, 36, 64, 72, 128, 0, 1 },
                          { 2, 17, 9, 40, 21, 1, 0 }, { 1, 30, 22, 13, 50, 0, 0 } };
    const int c = 16, parts = 3, mid = 4;
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i];
            struct cu_se_args h;
            memset(&h, 0, sizeof h);
            h.n = q[0]; h.h = q[3]; h.w = q[4]; h.c = c; h.n_layers = 2;
            h.in_rs_h = q[1]; h.in_rs_w = q[2]; h.in_rs_align = q[5]; h.in_rs_half = q[6];
            float *w1 = gn_random((size_t)c * mid, -0.5f, 0.5f, 0), *b1 = gn_random(mid, -0.5f, 0.5f, 0);
            float *w2 = gn_random((size_t)mid * c, -0.5f, 0.5f, 0), *b2 = gn_random(c, -0.5f, 0.5f, 0);
            h.l[0] = (struct cu_se_layer){ c, mid, w1, b1, CU_ACT_NONE, CU_ACT_RELU };
            h.l[1] = (struct cu_se_layer){ mid, c, w2, b2, CU_ACT_NONE, CU_ACT_LOGISTIC };
            const size_t hw = (size_t)h.h * h.w, ns = (size_t)h.n * q[1] * q[2] * c,
                         nb = (size_t)h.n * hw * c, no = (size_t)h.n * c;
            float *small = gn_random(ns, -1, 1, f16), *in2 = gn_random(nb, -1, 1, 0);
            float *ps = calloc((size_t)h.n * parts * c, sizeof *ps), *want = malloc(no * 4);
            cr_assert(ps && want);
            for (int n = 0; n < h.n; n++)
                for (size_t p = 0; p < hw; p++)
                    for (int ch = 0; ch < c; ch++)
                        ps[((size_t)n * parts + p * parts / hw) * c + ch] +=
                            in2[((size_t)n * hw + p) * c + ch];
            h.in = small; h.in2 = in2; h.out = want;
            cr_assert_eq(ref_se(&h), 0);
            struct cu_se_args d = h;
            d.in = gn_up(small, ns, f16);
            d.in2 = NULL;
            d.in2_part = gn_up(ps, (size_t)h.n * parts * c, 0);
            d.in2_parts = parts;
            d.l[0].w = gn_up(w1, (size_t)c * mid, 0); d.l[0].bias = gn_up(b1, mid, 0);
            d.l[1].w = gn_up(w2, (size_t)mid * c, 0); d.l[1].bias = gn_up(b2, c, 0);
            d.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_se(&d, f16, 0), 0, "case %zu", i);
            gn_check("squeeze_excite_deferred_resize", i, d.out, want, no, f16, 4);
            struct cu_se_args bad = d;   /* in2 as a map: the kernel reads it at small size */
            bad.in2_part = NULL;
            bad.in2 = d.in;
            cr_assert_eq(cu_se(&bad, f16, 0), VR_EINVAL);
            const void *dev[] = { d.in, d.in2_part, d.l[0].w, d.l[0].bias, d.l[1].w,
                                  d.l[1].bias, d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            float *host[] = { w1, b1, w2, b2, small, in2, ps, want };
            for (size_t k = 0; k < sizeof host / sizeof host[0]; k++)
                free(host[k]);
        }
}

/* The tail: b small, resized in the prologue. */
Test(gpu_ops, decoder_tail_deferred_resize)
{
    gn_seed("decoder_tail_deferred_resize");
    /* n, h, w, b's h, w, align, half; the last one's block reads more of b
     * than the kernel stages (the path straight from device memory) */
    const int cs[][7] = { { 2, 128, 128, 64, 64, 0, 1 }, { 2, 72, 128, 36, 64, 0, 1 },
                          { 3, 37, 21, 19, 11, 1, 0 }, { 1, 9, 30, 40, 7, 0, 0 } };
    const int c = 16;
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i];
            const int n = q[0], h = q[1], w = q[2];
            const size_t nin = (size_t)n * h * w * c, nb = (size_t)n * q[3] * q[4] * c;
            struct cu_tail_args a = {
                .n = n, .h = h, .w = w, .cin = c, .c = c, .k = 3, .cout = 1,
                .act_p2 = CU_ACT_RELU, .act_d2 = CU_ACT_RELU, .act_t = CU_ACT_LOGISTIC,
                .b_rs_h = q[3], .b_rs_w = q[4], .b_rs_align = q[5], .b_rs_half = q[6],
            };
            float *in = gn_random(nin, -1, 1, f16), *scale = gn_random((size_t)n * c, 0, 1, f16);
            float *sum = gn_random(nb, -1, 1, f16);
            float *wp = gn_random((size_t)c * c, -0.5f, 0.5f, 0), *bp = gn_random(c, -0.2f, 0.2f, 0);
            float *wd = gn_random((size_t)9 * c, -0.5f, 0.5f, 0), *bd = gn_random(c, -0.2f, 0.2f, 0);
            float *wt = gn_random((size_t)4 * c, -0.5f, 0.5f, 0), *bt = gn_random(1, -0.2f, 0.2f, 0);
            const int oh = h % 2 ? 2 * h - 1 : 2 * h, ow = w % 2 ? 2 * w - 1 : 2 * w;
            const size_t nout = (size_t)n * oh * ow;
            float *want = malloc(nout * 4);
            cr_assert(want);
            a.a = in; a.a_scale = scale; a.b = sum;
            a.wp = wp; a.bp = bp; a.wd = wd; a.bd = bd; a.wt = wt; a.bt = bt;
            a.out = want;
            cr_assert_eq(ref_tail(&a), 0);
            struct cu_tail_args d = a;
            d.a = gn_up(in, nin, f16);
            d.a_scale = gn_up(scale, (size_t)n * c, f16);
            d.b = gn_up(sum, nb, f16);
            d.wp = gn_up(wp, (size_t)c * c, 0); d.bp = gn_up(bp, c, 0);
            d.wd = gn_up(wd, (size_t)9 * c, 0); d.bd = gn_up(bd, c, 0);
            d.wt = gn_up(wt, (size_t)4 * c, 0); d.bt = gn_up(bt, 1, 0);
            d.out = gn_poisoned(nout, f16);
            cr_assert_eq(cu_tail(&d, f16, 0), 0, "case %zu", i);
            gn_check("decoder_tail_deferred_resize", i, d.out, want, nout, f16, 4);
            const void *dev[] = { d.a, d.a_scale, d.b, d.wp, d.bp, d.wd, d.bd, d.wt, d.bt,
                                  d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            float *host[] = { in, scale, sum, wp, bp, wd, bd, wt, bt, want };
            for (size_t k = 0; k < sizeof host / sizeof host[0]; k++)
                free(host[k]);
        }
}

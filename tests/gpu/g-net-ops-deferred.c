/*
 * g-net-ops-deferred.c - the squeeze-excite pool of a deferred resize (NETPLAN_RS_DEFER
 * in net_plan.c: a map stored small, resized where it is read;
 * cu_se_args.in_rs_*) against its twin, which writes the resize out. Fresh
 * random data, float32 and float16; the selfie models' 64 -> 128 first,
 * then odd sizes, align_corners, and shrinking. The decoder stages' reads
 * of such a map are tested in g-net-ops-tail.c.
 */
#include "util-net.h"

#include "ops_fused.h"
#include "vr_err.h"

/* The pool: the small map given, the pool over its bilinear resize; in2 as
 * sums (the stem's, as at 128x128) and as a map (as at 32x32 and 64x64). */
Test(g_net_ops_deferred, squeeze_excite_deferred_resize)
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
            struct cu_se_args m = d;   /* in2 as the map itself */
            m.in2_part = NULL;
            m.in2_parts = 0;
            m.in2 = gn_up(in2, nb, 0);
            m.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_se_dt(&m, f16 ? CU_DT_IN0 | CU_DT_OUT : 0, 0), 0, "case %zu", i);
            gn_check("squeeze_excite_deferred_resize, in2 a map", i, m.out, want, no, f16, 4);
            cudaFree((void *)m.in2);
            cudaFree(m.out);
            const void *dev[] = { d.in, d.in2_part, d.l[0].w, d.l[0].bias, d.l[1].w,
                                  d.l[1].bias, d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            float *host[] = { w1, b1, w2, b2, small, in2, ps, want };
            for (size_t k = 0; k < sizeof host / sizeof host[0]; k++)
                free(host[k]);
        }
}

/*
 * g-ops-tail.c - the decoder-tail kernel (cu_tail, kernels/ops_tail.cu)
 * against its C twin (ref_tail) on fresh random data: the selfie models'
 * own last stage (128x128 and 72x128, 16 channels, SE scale and skip sum as
 * prologue, 3x3 depthwise, 2x2 transpose conv to one channel + sigmoid),
 * and shapes that take the other paths (odd sizes: partial blocks and a
 * cropped transpose conv; no prologue; 8 channels; 2 and 4 outputs; other
 * activations), float32 and float16 activations. The whole network with
 * the tail runs on real images in g-net-cuda.c.
 */
#include "g-net-util.h"

#include "vr_err.h"

/* n, h, w, cin, c, cout, scale+sum prologue */
static const int cases[][7] = {
    { 2, 128, 128, 16, 16, 1, 1 }, { 2, 72, 128, 16, 16, 1, 1 },
    { 3, 37, 21, 8, 8, 2, 0 },     { 1, 5, 3, 16, 16, 4, 1 },
};

Test(gpu_ops, decoder_tail)
{
    gn_seed("decoder_tail");
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *q = cases[i];
            const int n = q[0], h = q[1], w = q[2], cin = q[3], c = q[4], cout = q[5];
            const size_t nin = (size_t)n * h * w * cin;
            struct cu_tail_args a = {
                .n = n, .h = h, .w = w, .cin = cin, .c = c, .k = 3, .cout = cout,
                .act_p1 = CU_ACT_NONE, .act_p2 = i % 2 ? CU_ACT_RELU6 : CU_ACT_RELU,
                .act_d1 = CU_ACT_NONE, .act_d2 = CU_ACT_RELU,
                .act_d3 = i == 2 ? CU_ACT_HSWISH : CU_ACT_NONE, .act_t = CU_ACT_LOGISTIC,
            };
            float *in = gn_random(nin, -1, 1, f16);
            float *scale = q[6] ? gn_random((size_t)n * cin, 0, 1, f16) : NULL;
            float *sum = q[6] ? gn_random(nin, -1, 1, f16) : NULL;
            float *wp = gn_random((size_t)c * cin, -0.5f, 0.5f, 0);
            float *bp = gn_random(c, -0.2f, 0.2f, 0);
            float *wd = gn_random((size_t)9 * c, -0.5f, 0.5f, 0);
            float *bd = gn_random(c, -0.2f, 0.2f, 0);
            float *wt = gn_random((size_t)cout * 4 * c, -0.5f, 0.5f, 0);
            float *bt = gn_random(cout, -0.2f, 0.2f, 0);
            const int oh = h % 2 ? 2 * h - 1 : 2 * h, ow = w % 2 ? 2 * w - 1 : 2 * w;
            const size_t nout = (size_t)n * oh * ow * cout;
            float *want = malloc(nout * 4);
            cr_assert(want);
            a.a = in; a.a_scale = scale; a.b = sum;
            a.wp = wp; a.bp = bp; a.wd = wd; a.bd = bd; a.wt = wt; a.bt = bt;
            a.out = want;
            cr_assert_eq(ref_tail(&a), 0);
            struct cu_tail_args d = a;
            d.a = gn_up(in, nin, f16);
            d.a_scale = scale ? gn_up(scale, (size_t)n * cin, f16) : NULL;
            d.b = sum ? gn_up(sum, nin, f16) : NULL;
            d.wp = gn_up(wp, (size_t)c * cin, 0); d.bp = gn_up(bp, c, 0);
            d.wd = gn_up(wd, (size_t)9 * c, 0); d.bd = gn_up(bd, c, 0);
            d.wt = gn_up(wt, (size_t)cout * 4 * c, 0); d.bt = gn_up(bt, cout, 0);
            d.out = gn_poisoned(nout, f16);
            cr_assert(cu_tail_ok(&d), "case %zu refused", i);
            cr_assert_eq(cu_tail(&d, f16, 0), 0, "case %zu", i);
            gn_check("decoder_tail", i, d.out, want, nout, f16, 4);
            const void *dev[] = { d.a, d.a_scale, d.b, d.wp, d.bp, d.wd, d.bd, d.wt, d.bt,
                                  d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            float *host[] = { in, scale, sum, wp, bp, wd, bd, wt, bt, want };
            for (size_t k = 0; k < sizeof host / sizeof host[0]; k++)
                free(host[k]);
        }
}

Test(gpu_ops, decoder_tail_refuses_what_it_cannot_take)
{
    float w[64] = { 0 };
    const struct cu_tail_args ok = { .n = 1, .h = 4, .w = 4, .cin = 8, .c = 8, .k = 3,
                                     .cout = 1, .a = w, .wp = w, .wd = w, .wt = w, .bt = w,
                                     .out = w };
    cr_assert(cu_tail_ok(&ok));
    struct cu_tail_args bad = ok;
    bad.cin = 16;                           /* compiled for 16/16 and 8/8 only */
    cr_assert(!cu_tail_ok(&bad));
    cr_assert_eq(cu_tail(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.c = 17;
    cr_assert_eq(cu_tail(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.k = 5;                              /* the ring is one pixel */
    cr_assert_eq(cu_tail(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.bt = NULL;
    cr_assert_eq(cu_tail(&bad, 0, 0), VR_EINVAL);
    cr_assert_eq(ref_tail(&bad), VR_EINVAL);
}

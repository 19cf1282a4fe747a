/*
 * g-net-ops-pwdw.c - the pointwise + depthwise kernel (cu_pwdw,
 * kernels/net/ops_pwdw.cu) against its C twin (ref_pwdw) on fresh random data:
 * the selfie encoder's four pairs (16->16 3x3 stride 2 at 128x128, also
 * the landscape model's 72x128; 16->72 at 64x64; 24->88 3x3 stride 1 and
 * 24->96 5x5 stride 2 at 32x32, the last with 4x4 blocks) and shapes that
 * take the other paths (8 channels, odd sizes with partial blocks, 1x1 and
 * 2x2 windows, odd input channel counts, more than 32 input channels (the
 * 1x1's fragments re-split per output group), other activations), float32
 * and float16 activations. The whole network with it runs on real images
 * in g-net-cuda.c.
 */
#include "util-net.h"

#include "model.h"
#include "vr_err.h"

/* n, h, w, cin, c, k, stride, padding */
static const int cases[][8] = {
    { 2, 128, 128, 16, 16, 3, 2, MPAD_SAME }, { 2, 72, 128, 16, 16, 3, 2, MPAD_SAME },
    { 2, 64, 64, 16, 72, 3, 2, MPAD_SAME },   { 2, 32, 32, 24, 88, 3, 1, MPAD_SAME },
    { 2, 32, 32, 24, 96, 5, 2, MPAD_SAME },   { 3, 29, 17, 8, 8, 3, 1, MPAD_SAME },
    { 2, 13, 11, 12, 16, 2, 2, MPAD_VALID },  { 1, 9, 9, 3, 8, 1, 1, MPAD_SAME },
    { 2, 20, 23, 40, 32, 3, 1, MPAD_SAME },   { 1, 17, 16, 72, 24, 3, 2, MPAD_SAME },
};

Test(g_net_ops_pwdw, pw_dw)
{
    gn_seed("pw_dw");
    static const int acts[] = { CU_ACT_RELU, CU_ACT_NONE, CU_ACT_HSWISH, CU_ACT_RELU6 };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *q = cases[i];
            const int cin = q[3], c = q[4], k = q[5];
            struct cu_pwdw_args a = {
                .g = { .n = q[0], .ih = q[1], .iw = q[2], .cin = c, .cout = c, .kh = k,
                       .kw = k, .sh = q[6], .sw = q[6], .dh = 1, .dw = 1,
                       .act = i % 2 ? MACT_RELU6 : MACT_NONE },
                .cin = cin,
                .act_p1 = CU_ACT_NONE, .act_p2 = acts[i % 4], .act_d2 = acts[(i + 1) % 4],
            };
            op_conv_geom(&a.g, q[7]);
            const size_t nin = (size_t)q[0] * q[1] * q[2] * cin;
            const size_t nout = (size_t)q[0] * a.g.oh * a.g.ow * c;
            float *in = gn_random(nin, -2, 2, f16);
            float *wp = gn_random((size_t)c * cin, -0.5f, 0.5f, 0);
            float *bp = gn_random(c, -0.2f, 0.2f, 0);
            float *wd = gn_random((size_t)k * k * c, -0.5f, 0.5f, 0);
            float *bd = gn_random(c, -0.2f, 0.2f, 0);
            float *want = malloc(nout * 4);
            cr_assert(want);
            a.in = in; a.wp = wp; a.bp = bp; a.wd = wd; a.bd = bd; a.out = want;
            cr_assert_eq(ref_pwdw(&a), 0);
            struct cu_pwdw_args d = a;
            d.in = gn_up(in, nin, f16);
            d.wp = gn_up(wp, (size_t)c * cin, 0); d.bp = gn_up(bp, c, 0);
            d.wd = gn_up(wd, (size_t)k * k * c, 0); d.bd = gn_up(bd, c, 0);
            d.out = gn_poisoned(nout, f16);
            cr_assert(cu_pwdw_ok(&d), "case %zu refused", i);
            cr_assert_eq(cu_pwdw(&d, f16, 0), 0, "case %zu", i);
            gn_check("pw_dw", i, d.out, want, nout, f16, 4);
            const void *dev[] = { d.in, d.wp, d.bp, d.wd, d.bd, d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            float *host[] = { in, wp, bp, wd, bd, want };
            for (size_t j = 0; j < sizeof host / sizeof host[0]; j++)
                free(host[j]);
        }
}

Test(g_net_ops_pwdw, pw_dw_refuses_what_it_cannot_take)
{
    float w[64] = { 0 };
    struct cu_pwdw_args ok = {
        .g = { .n = 1, .ih = 8, .iw = 8, .cin = 8, .cout = 8, .kh = 3, .kw = 3, .sh = 2,
               .sw = 2, .dh = 1, .dw = 1 },
        .cin = 8, .in = w, .wp = w, .wd = w, .out = w,
    };
    op_conv_geom(&ok.g, MPAD_SAME);
    cr_assert(cu_pwdw_ok(&ok));
    struct cu_pwdw_args bad = ok;
    bad.g.cin = bad.g.cout = 12;            /* 8 channels a thread at a time */
    cr_assert_eq(cu_pwdw(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.g.kh = bad.g.kw = 7;                /* window up to 5x5 */
    cr_assert_eq(cu_pwdw(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.g.dh = 2;
    cr_assert_eq(cu_pwdw(&bad, 0, 0), VR_EINVAL);
    bad = ok;
    bad.wd = NULL;
    cr_assert_eq(cu_pwdw(&bad, 0, 0), VR_EINVAL);
    cr_assert_eq(ref_pwdw(&bad), VR_EINVAL);
}

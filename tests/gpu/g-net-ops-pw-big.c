/*
 * g-net-ops-pw-big.c - the pointwise steps whose weights do not fit in
 * shared memory or pass PW_MMA_MAX_W (the Pose models' 80->480, 96->576,
 * 112->672, 1152->192, 192->1152, 192->192, 480->80), which
 * cu_pointwise_dt sends to k_pw_gemm (ops_pw_tile.h), against the C twin (ref_pointwise): every prologue and epilogue operand,
 * a resize on load, float32 and float16 activations, outputs poisoned.
 * Small maps take its 64-pixel tiles, 14x14 at 40-60 crops its 128-pixel
 * ones (pw_gemm_launch); 1160 inputs end in a part slice of channels,
 * 96, 112, 200 and 672 outputs in a part block.
 */
#include "util-net.h"

#include "ops_pw_tile.h"
#include "ops_ref.h"

Test(g_net_ops_pw_big, global_weights_vs_twin)
{
    gn_seed("global_weights_vs_twin");
    /* n, out h, w, cin, cout, flags (1 a_scale, 2 bsum, 4 e_scale, 8 res, 16 resize from
     * half the map) */
    const int cs[][6] = {
        { 3, 14, 14, 80, 480, 0 },  { 2, 8, 8, 96, 576, 9 },     { 2, 7, 7, 112, 672, 5 },
        { 3, 7, 7, 1152, 192, 15 }, { 1, 4, 4, 192, 1152, 16 },  { 2, 16, 16, 576, 96, 8 },
        { 40, 14, 14, 112, 672, 13 }, { 60, 14, 14, 1160, 200, 6 }, { 40, 14, 14, 672, 112, 10 },
        { 5, 14, 14, 576, 96, 3 },   { 10, 14, 14, 192, 192, 9 }, { 3, 14, 14, 480, 80, 0 },
        { 50, 14, 14, 480, 80, 8 },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i], n = q[0], hw = q[1] * q[2], cin = q[3], cout = q[4];
            const int fl = q[5], rh = fl & 16 ? q[1] / 2 : 0, rw = fl & 16 ? q[2] / 2 : 0;
            struct pw_tile t;
            cr_assert_eq(pw_tile_of(cin, cout, (size_t)n * hw, &t), 0, "case %zu", i);
            cr_assert_eq(t.kind, PW_GLOBAL, "case %zu: %d->%d fits in shared memory", i, cin,
                         cout);
            const size_t ni = (size_t)n * (rh ? rh * rw : hw) * cin, no = (size_t)n * hw * cout;
            float *a = gn_random(ni, -1, 1, f16);
            float *w = gn_random((size_t)cin * cout, -0.1f, 0.1f, 0);
            float *b = gn_random(cout, -0.5f, 0.5f, 0);
            float *as = gn_random((size_t)n * cin, 0, 1, f16), *bs = gn_random(ni, -1, 1, f16);
            float *es = gn_random((size_t)n * cout, 0, 1, f16), *res = gn_random(no, -1, 1, f16);
            float *want = malloc(no * 4);
            cr_assert(want);
            const struct cu_pw_args h = {
                n, hw, cin, cout, a, fl & 1 ? as : NULL, fl & 2 ? bs : NULL, w, b,
                CU_ACT_RELU6, i % 2 ? CU_ACT_HSWISH : CU_ACT_NONE, fl & 4 ? es : NULL,
                fl & 8 ? res : NULL, CU_ACT_RELU, want, rh, rw, q[1], q[2], 0, 1 };
            ref_pointwise(&h);
            struct cu_pw_args d = h;
            d.a = gn_up(a, ni, f16);
            d.a_scale = fl & 1 ? gn_up(as, (size_t)n * cin, f16) : NULL;
            d.b = fl & 2 ? gn_up(bs, ni, f16) : NULL;
            d.w = gn_up(w, (size_t)cin * cout, 0);
            d.bias = gn_up(b, cout, 0);
            d.e_scale = fl & 4 ? gn_up(es, (size_t)n * cout, f16) : NULL;
            d.res = fl & 8 ? gn_up(res, no, f16) : NULL;
            d.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_pointwise(&d, f16, 0), 0, "case %zu: %d->%d refused", i, cin, cout);
            GN_CUDA(cudaDeviceSynchronize());
            gn_check("pointwise global weights", i, d.out, want, no, f16, 4.0f);
            const void *dev[] = { d.a, d.a_scale, d.b, d.w, d.bias, d.e_scale, d.res, d.out };
            gn_free_device(dev, sizeof dev / sizeof dev[0]);
            free(a); free(w); free(b); free(as); free(bs); free(es); free(res); free(want);
        }
}

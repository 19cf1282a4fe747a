/*
 * t-net-ops-eltwise.c - RELU, HARD_SWISH, LOGISTIC (with TFLite's cut-offs),
 * and ADD / MUL with the same shape or one value per (n, c) broadcast
 * over H,W, with fused activations and in-place output.
 */
#include "model.h"
#include "ops_ref.h"

#include <criterion/criterion.h>
#include <math.h>

Test(net_ops_eltwise, relu_and_hard_swish)
{
    const float in[8] = { -4, -3, -1, 0, 1, 3, 5, -0.f };
    float out[8];
    ref_relu(in, out, 8);
    static const float relu[8] = { 0, 0, 0, 0, 1, 3, 5, 0 };
    for (int i = 0; i < 8; i++)
        cr_assert_float_eq(out[i], relu[i], 0);
    ref_hard_swish(in, out, 8);
    /* x * min(6, max(0, x + 3)) / 6 */
    static const float hs[8] = { 0, 0, -2.f / 6, 0, 4.f / 6, 3, 5, 0 };
    for (int i = 0; i < 8; i++)
        cr_assert_float_eq(out[i], hs[i], 1e-7f, "hard_swish(%g) = %g", in[i], out[i]);
    /* in place */
    float x[3] = { -1, 2, -5 };
    ref_relu(x, x, 3);
    cr_assert(x[0] == 0 && x[1] == 2 && x[2] == 0);
}

Test(net_ops_eltwise, logistic_cutoffs)
{
    const float in[6] = { 0, 2, -2, 20, -10, 16.5f };
    float out[6];
    ref_logistic(in, out, 6);
    cr_assert_float_eq(out[0], 0.5f, 0);
    cr_assert_float_eq(out[1], 0.880797078f, 1e-7f);
    cr_assert_float_eq(out[2], 0.119202922f, 1e-7f);
    cr_assert_eq(out[3], 1.f);           /* above 16.619: exactly 1 */
    cr_assert_eq(out[4], expf(-10.f));   /* below -9: exp(x) */
    cr_assert(out[5] < 1.f && out[5] > 0.99999f);
}

Test(net_ops_eltwise, add_mul_full_shape)
{
    /* n=1, 1x2, c=2 */
    const float a[4] = { 1, -2, 3, 4 }, b[4] = { 10, 1, -5, 0.5f };
    float out[4];
    ref_add(1, 1, 2, 2, a, b, 1, MACT_NONE, out);
    cr_assert(out[0] == 11 && out[1] == -1 && out[2] == -2 && out[3] == 4.5f);
    ref_add(1, 1, 2, 2, a, b, 1, MACT_RELU, out);
    cr_assert(out[0] == 11 && out[1] == 0 && out[2] == 0 && out[3] == 4.5f);
    ref_mul(1, 1, 2, 2, a, b, 1, MACT_NONE, out);
    cr_assert(out[0] == 10 && out[1] == -2 && out[2] == -15 && out[3] == 2);
    ref_mul(1, 1, 2, 2, a, b, 1, MACT_RELU6, out);
    cr_assert(out[0] == 6 && out[1] == 0 && out[2] == 0 && out[3] == 2);
    ref_mul(1, 1, 2, 2, a, b, 1, MACT_RELU_N1_TO_1, out);
    cr_assert(out[0] == 1 && out[1] == -1 && out[2] == -1 && out[3] == 1);
    ref_add(1, 1, 2, 2, a, b, 1, MACT_TANH, out);
    cr_assert_float_eq(out[1], tanhf(-1.f), 1e-7f);
    cr_assert_float_eq(out[3], tanhf(4.5f), 1e-7f);
}

Test(net_ops_eltwise, broadcast_per_n_c)
{
    /* n=2, 2x1, c=3; b is [n][c] (an SE block's gate). */
    float a[12], out[12];
    for (int i = 0; i < 12; i++)
        a[i] = (float)(i + 1);
    const float b[6] = { 1, 0.5f, 0, 2, -1, 10 };
    ref_mul(2, 2, 1, 3, a, b, 0, MACT_NONE, out);
    static const float mul[12] = { 1, 1, 0, 4, 2.5f, 0, 14, -8, 90, 20, -11, 120 };
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(out[i], mul[i], 0, "mul[%d] = %g", i, out[i]);
    ref_add(2, 2, 1, 3, a, b, 0, MACT_NONE, out);
    static const float add[12] = { 2, 2.5f, 3, 5, 5.5f, 6, 9, 7, 19, 12, 10, 22 };
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(out[i], add[i], 0, "add[%d] = %g", i, out[i]);
    /* out may alias a */
    ref_mul(2, 2, 1, 3, a, b, 0, MACT_RELU, a);
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(a[i], mul[i] < 0 ? 0 : mul[i], 0, "in-place [%d] = %g", i, a[i]);
}

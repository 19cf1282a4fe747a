/*
 * g-net-ops-tail.c - the decoder-stage kernel (cu_tail, kernels/net/ops_tail.cu)
 * against its C twin (ref_tail) on fresh random data: the selfie models'
 * own last stage (128x128 and 72x128, 16 channels, SE scale and skip sum as
 * prologue, 3x3 depthwise, 2x2 transpose conv to one channel + sigmoid)
 * and the stages before it (ending in the next stage's 1x1 conv), the sum
 * operand full-size or small and resized on load, and shapes that take the
 * other paths (odd sizes: partial blocks and a cropped transpose conv; no
 * prologue; 8 channels; 2 and 4 outputs; other activations), float32 and
 * float16 activations. The whole network with these stages runs on real
 * images in g-net-cuda.c.
 */
#include "util-net.h"

#include "vr_err.h"

/* One case: the kernel against its twin on fresh random data. */
struct tail_case {
    int n, h, w, cin, c, cout, prologue;
    int pw;                       /* ends in a 1x1 conv (cout outputs) */
    int b_h, b_w, align, half;    /* b_h > 0: the sum operand small, resized on load */
};

static void run_case(const struct tail_case *q, size_t i, unsigned dt, const char *what)
{
    const int a16 = (dt & CU_DT_IN0) != 0, s16 = (dt & CU_DT_IN1) != 0;
    const int b16 = (dt & CU_DT_IN2) != 0, f16 = (dt & CU_DT_OUT) != 0;
    const int n = q->n, h = q->h, w = q->w, cin = q->cin, c = q->c, cout = q->cout;
    const size_t nin = (size_t)n * h * w * cin;
    const size_t nb = q->b_h > 0 ? (size_t)n * q->b_h * q->b_w * cin : nin;
    const size_t nwt = (size_t)cout * (q->pw ? 1 : 4) * c;
    struct cu_tail_args a = {
        .n = n, .h = h, .w = w, .cin = cin, .c = c, .k = 3, .cout = cout,
        .act_p1 = CU_ACT_NONE, .act_p2 = i % 2 ? CU_ACT_RELU6 : CU_ACT_RELU,
        .act_d1 = CU_ACT_NONE, .act_d2 = CU_ACT_RELU,
        .act_d3 = i == 2 ? CU_ACT_HSWISH : CU_ACT_NONE, .act_t = CU_ACT_LOGISTIC,
        .b_rs_h = q->b_h, .b_rs_w = q->b_w, .b_rs_align = q->align, .b_rs_half = q->half,
        .pw = q->pw,
    };
    float *in = gn_random(nin, -1, 1, a16);
    float *scale = q->prologue ? gn_random((size_t)n * cin, 0, 1, s16) : NULL;
    float *sum = q->prologue ? gn_random(nb, -1, 1, b16) : NULL;
    float *wp = gn_random((size_t)c * cin, -0.5f, 0.5f, 0);
    float *bp = gn_random(c, -0.2f, 0.2f, 0);
    float *wd = gn_random((size_t)9 * c, -0.5f, 0.5f, 0);
    float *bd = gn_random(c, -0.2f, 0.2f, 0);
    float *wt = gn_random(nwt, -0.5f, 0.5f, 0);
    float *bt = gn_random(cout, -0.2f, 0.2f, 0);
    const int oh = q->pw ? h : h % 2 ? 2 * h - 1 : 2 * h;
    const int ow = q->pw ? w : w % 2 ? 2 * w - 1 : 2 * w;
    const size_t nout = (size_t)n * oh * ow * cout;
    float *want = malloc(nout * 4);
    cr_assert(want);
    a.a = in; a.a_scale = scale; a.b = sum;
    a.wp = wp; a.bp = bp; a.wd = wd; a.bd = bd; a.wt = wt; a.bt = bt;
    a.out = want;
    cr_assert_eq(ref_tail(&a), 0);
    struct cu_tail_args d = a;
    d.a = gn_up(in, nin, a16);
    d.a_scale = scale ? gn_up(scale, (size_t)n * cin, s16) : NULL;
    d.b = sum ? gn_up(sum, nb, b16) : NULL;
    d.wp = gn_up(wp, (size_t)c * cin, 0); d.bp = gn_up(bp, c, 0);
    d.wd = gn_up(wd, (size_t)9 * c, 0); d.bd = gn_up(bd, c, 0);
    d.wt = gn_up(wt, nwt, 0); d.bt = gn_up(bt, cout, 0);
    d.out = gn_poisoned(nout, f16);
    cr_assert(cu_tail_ok(&d), "%s case %zu refused", what, i);
    cr_assert_eq(cu_tail_dt(&d, dt, 0), 0, "%s case %zu dt %u", what, i, dt);
    gn_check(what, i, d.out, want, nout, f16, 4);
    const void *dev[] = { d.a, d.a_scale, d.b, d.wp, d.bp, d.wd, d.bd, d.wt, d.bt, d.out };
    gn_free_device(dev, sizeof dev / sizeof dev[0]);
    float *host[] = { in, scale, sum, wp, bp, wd, bd, wt, bt, want };
    for (size_t k = 0; k < sizeof host / sizeof host[0]; k++)
        free(host[k]);
}

/* float32, float16, and the mix of the last stage at fp16 = 1 (the small
 * sum float16): each compiled in (ops_tail.cu) or read at run time. */
static void run_cases(const struct tail_case *cs, size_t count, const char *what)
{
    static const unsigned dts[] = { 0, CU_DT_ALL, CU_DT_IN2, CU_DT_IN0 | CU_DT_OUT };
    gn_seed(what);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t i = 0; i < count; i++)
            run_case(&cs[i], i, dts[d], what);
}

/* The last stage: the transpose conv. */
Test(g_net_ops_tail, decoder_tail)
{
    static const struct tail_case cs[] = {
        { 2, 128, 128, 16, 16, 1, 1, 0, 0, 0, 0, 0 },
        { 2, 72, 128, 16, 16, 1, 1, 0, 0, 0, 0, 0 },
        { 3, 37, 21, 8, 8, 2, 0, 0, 0, 0, 0, 0 },
        { 1, 5, 3, 16, 16, 4, 1, 0, 0, 0, 0, 0 },
    };
    run_cases(cs, sizeof cs / sizeof cs[0], "decoder_tail");
}

/* The sum operand small and resized on load (a deferred resize): the
 * selfie models' 64 -> 128, odd sizes and align_corners; the last case
 * shrinks. */
Test(g_net_ops_tail, decoder_tail_deferred_resize)
{
    static const struct tail_case cs[] = {
        { 2, 128, 128, 16, 16, 1, 1, 0, 64, 64, 0, 1 },
        { 2, 72, 128, 16, 16, 1, 1, 0, 36, 64, 0, 1 },
        { 3, 37, 21, 16, 16, 1, 1, 0, 19, 11, 1, 0 },
        { 1, 9, 30, 16, 16, 1, 1, 0, 40, 7, 0, 0 },
    };
    run_cases(cs, sizeof cs / sizeof cs[0], "decoder_tail_deferred_resize");
}

/* The stages before the last: the next stage's 1x1 conv ends them (the
 * selfie models' 32x32x24 and 64x64x16 stages, square and landscape, their
 * sums deferred from 16x16 and 32x32; odd sizes; no prologue). */
Test(g_net_ops_tail, decoder_stage_pw)
{
    static const struct tail_case cs[] = {
        { 2, 32, 32, 24, 24, 16, 1, 1, 16, 16, 0, 1 },
        { 2, 64, 64, 16, 16, 16, 1, 1, 32, 32, 0, 1 },
        { 2, 18, 32, 24, 24, 16, 1, 1, 9, 16, 0, 1 },
        { 3, 37, 21, 16, 16, 16, 1, 1, 19, 11, 1, 0 },
        { 1, 20, 13, 24, 24, 16, 0, 1, 0, 0, 0, 0 },
        { 2, 33, 17, 16, 16, 16, 1, 1, 0, 0, 0, 0 },
    };
    run_cases(cs, sizeof cs / sizeof cs[0], "decoder_stage_pw");
}

Test(g_net_ops_tail, decoder_tail_refuses_what_it_cannot_take)
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

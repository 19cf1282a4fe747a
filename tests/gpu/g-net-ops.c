/*
 * g-net-ops.c - every CUDA kernel of the network (ops_cuda.h) against its
 * C twin (ops_ref.h, ops_fused.h) on fresh random inputs, float32 and
 * float16 activations, several geometries each: SAME / VALID, strides,
 * dilations, depth multipliers, every activation, batch > 1, channel counts
 * that take the 8-wide paths and odd ones that do not, pixel counts that
 * leave partial blocks. Outputs are poisoned before each run, so an element
 * the kernel did not write fails as NaN.
 */
#include "util-net.h"

#include "model.h"
#include "ops_ref.h"

static const int acts[] = { CU_ACT_NONE, CU_ACT_RELU, CU_ACT_RELU_N1_TO_1, CU_ACT_RELU6,
                            CU_ACT_HSWISH, CU_ACT_LOGISTIC };

static float rt(int f16) { return f16 ? GN_RTOL16 : GN_RTOL32; }
static float at(int f16) { return f16 ? GN_ATOL16 : GN_ATOL32; }

/* ---- convolutions ---- */

struct conv_case { int n, ih, iw, cin, cout, k, s, d, pad, act; };

static void geom(struct conv_geom *g, const struct conv_case *c, int kh, int kw)
{
    memset(g, 0, sizeof *g);
    g->n = c->n; g->ih = c->ih; g->iw = c->iw; g->cin = c->cin; g->cout = c->cout;
    g->kh = kh; g->kw = kw; g->sh = g->sw = c->s; g->dh = g->dw = c->d; g->act = c->act;
    op_conv_geom(g, c->pad);
}

/* The stem kernel's pool sums (cu_stem with `pool`) against the sums of
 * the outputs it stored, per 16x32 block of each image. */
static void stem_pool_check(const struct conv_geom *g, const void *din, int f16, const void *dw,
                            const void *db, const float *stored)
{
    const int parts = cu_stem_parts(g), bw = (g->ow + 31) / 32;
    const size_t np = (size_t)g->n * parts * 16, no = (size_t)g->n * g->oh * g->ow * 16;
    float *dpool = NULL, *pool = malloc(np * sizeof *pool), *want = calloc(np, sizeof *want);
    cr_assert(pool && want);
    GN_CUDA(cudaMalloc((void **)&dpool, np * sizeof *dpool));
    void *dout = gn_poisoned(no, f16);
    cr_assert_eq(cu_stem(g, din, f16, dw, db, g->act, CU_ACT_NONE, dout, f16, dpool, 0), 0);
    GN_CUDA(cudaMemcpy(pool, dpool, np * sizeof *pool, cudaMemcpyDeviceToHost));
    for (int n = 0; n < g->n; n++)
        for (int y = 0; y < g->oh; y++)
            for (int x = 0; x < g->ow; x++)
                for (int c = 0; c < 16; c++)
                    want[((size_t)n * parts + (y / 16) * bw + x / 32) * 16 + c] +=
                        stored[(((size_t)n * g->oh + y) * g->ow + x) * 16 + c];
    gn_compare("stem pool sums", pool, want, np, 1e-5f, 1e-4f);
    cudaFree(dpool);
    cudaFree(dout);
    free(pool);
    free(want);
}

Test(g_net_ops, conv2d)
{
    gn_seed("conv2d");
    const struct conv_case cs[] = {
        { 2, 17, 13, 3, 16, 3, 2, 1, MPAD_SAME, MACT_RELU6 },
        { 3, 16, 16, 8, 12, 1, 1, 1, MPAD_VALID, MACT_NONE },
        { 1, 9, 11, 5, 7, 3, 1, 2, MPAD_SAME, MACT_RELU },
        { 2, 20, 19, 16, 24, 5, 2, 1, MPAD_VALID, MACT_RELU_N1_TO_1 },
        { 1, 256, 256, 3, 16, 3, 2, 1, MPAD_SAME, MACT_NONE },   /* the model's first conv */
        /* more for ops_stem.cu: the landscape model's, VALID, partial blocks */
        { 3, 144, 256, 3, 16, 3, 2, 1, MPAD_SAME, MACT_NONE },
        { 2, 41, 70, 3, 16, 3, 2, 1, MPAD_VALID, MACT_RELU },
        { 1, 35, 67, 3, 8, 3, 2, 1, MPAD_SAME, MACT_NONE },     /* 8 outputs: generic */
        /* weights past shared memory: few pixels, a thread an output (the
         * Pose landmark model's heads; padded, strided), and many pixels */
        { 4, 2, 2, 192, 195, 2, 1, 1, MPAD_VALID, MACT_NONE },
        { 3, 5, 5, 96, 130, 3, 2, 1, MPAD_SAME, MACT_RELU6 },
        { 1, 190, 190, 48, 16, 5, 1, 1, MPAD_SAME, MACT_RELU },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            struct conv_geom g;
            geom(&g, &cs[i], cs[i].k, cs[i].k);
            size_t ni = (size_t)g.n * g.ih * g.iw * g.cin, no = (size_t)g.n * g.oh * g.ow * g.cout;
            size_t nw = (size_t)g.cout * g.kh * g.kw * g.cin;
            float *in = gn_random(ni, -1, 1, f16), *w = gn_random(nw, -0.5f, 0.5f, 0);
            float *b = gn_random(g.cout, -0.5f, 0.5f, 0), *want = malloc(no * 4);
            ref_conv2d(&g, in, w, b, want);
            void *din = gn_up(in, ni, f16), *dw = gn_up(w, nw, 0), *db = gn_up(b, g.cout, 0);
            void *dout = gn_poisoned(no, f16);
            int rc = f16 ? cu_conv2d_h(&g, din, dw, db, dout, 0) : cu_conv2d(&g, din, dw, db, dout, 0);
            cr_assert_eq(rc, 0, "conv2d case %zu: rc %d", i, rc);
            float *got = gn_down(dout, no, f16);
            gn_compare(f16 ? "conv2d_h" : "conv2d", got, want, no, rt(f16), at(f16));
            if (cu_stem_ok(&g, dout))
                stem_pool_check(&g, din, f16, dw, db, got);
            free(got);
            /* mixed dtypes + an extended second activation (first layer path) */
            GN_CUDA(cudaFree(dout));
            void *din32 = gn_up(in, ni, 0);
            dout = gn_poisoned(no, 1);
            cr_assert_eq(cu_conv2d_x(&g, din32, 0, dw, db, g.act, CU_ACT_HSWISH, dout, 1, 0), 0);
            for (size_t j = 0; j < no; j++)
                want[j] = ref_act_ext(want[j], CU_ACT_HSWISH);
            got = gn_down(dout, no, 1);
            gn_compare("conv2d_x f32->f16", got, want, no, GN_RTOL16, GN_ATOL16);
            free(got);
            cudaFree(din32); cudaFree(din); cudaFree(dw); cudaFree(db); cudaFree(dout);
            free(in); free(w); free(b); free(want);
        }
}

Test(g_net_ops, dwconv2d)
{
    gn_seed("dwconv2d");
    const struct conv_case cs[] = {
        { 2, 32, 32, 16, 16, 3, 2, 1, MPAD_SAME, MACT_RELU },
        { 3, 15, 17, 24, 24, 5, 1, 1, MPAD_SAME, MACT_NONE },
        { 1, 10, 10, 4, 8, 3, 1, 1, MPAD_VALID, MACT_RELU6 },   /* depth multiplier 2 */
        { 2, 12, 9, 8, 8, 3, 1, 2, MPAD_SAME, MACT_NONE },      /* dilation */
        { 1, 16, 16, 5, 5, 5, 2, 1, MPAD_SAME, MACT_RELU },     /* odd channels */
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            struct conv_geom g;
            geom(&g, &cs[i], cs[i].k, cs[i].k);
            size_t ni = (size_t)g.n * g.ih * g.iw * g.cin, no = (size_t)g.n * g.oh * g.ow * g.cout;
            size_t nw = (size_t)g.kh * g.kw * g.cout;
            float *in = gn_random(ni, -1, 1, f16), *w = gn_random(nw, -0.5f, 0.5f, 0);
            float *b = gn_random(g.cout, -0.5f, 0.5f, 0), *want = malloc(no * 4);
            ref_dwconv2d(&g, in, w, b, want);
            void *din = gn_up(in, ni, f16), *dw = gn_up(w, nw, 0), *db = gn_up(b, g.cout, 0);
            void *dout = gn_poisoned(no, f16);
            int rc = f16 ? cu_dwconv2d_h(&g, din, dw, db, dout, 0)
                         : cu_dwconv2d(&g, din, dw, db, dout, 0);
            cr_assert_eq(rc, 0, "dwconv2d case %zu: rc %d", i, rc);
            float *got = gn_down(dout, no, f16);
            gn_compare(f16 ? "dwconv2d_h" : "dwconv2d", got, want, no, rt(f16), at(f16));
            free(got);
            cudaFree(din); cudaFree(dw); cudaFree(db); cudaFree(dout);
            free(in); free(w); free(b); free(want);
        }
}

Test(g_net_ops, dw_fused)
{
    gn_seed("dw_fused");
    const struct conv_case cs[] = {
        { 3, 32, 32, 24, 24, 3, 1, 1, MPAD_SAME, MACT_NONE },
        { 2, 16, 16, 128, 128, 5, 1, 1, MPAD_SAME, MACT_NONE },
        { 2, 7, 9, 6, 6, 3, 1, 1, MPAD_SAME, MACT_RELU },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            struct cu_dw_args a;
            memset(&a, 0, sizeof a);
            geom(&a.g, &cs[i], cs[i].k, cs[i].k);
            a.act2 = acts[(i + f16) % 6];
            a.act3 = acts[(i + 2) % 6];
            const struct conv_geom *g = &a.g;
            size_t ni = (size_t)g->n * g->ih * g->iw * g->cin, no = (size_t)g->n * g->oh * g->ow * g->cout;
            size_t nw = (size_t)g->kh * g->kw * g->cout;
            float *in = gn_random(ni, -1, 1, f16), *w = gn_random(nw, -0.5f, 0.5f, 0);
            float *b = gn_random(g->cout, -0.5f, 0.5f, 0), *res = gn_random(no, -1, 1, f16);
            float *want = malloc(no * 4);
            struct cu_dw_args h = a;
            h.in = in; h.w = w; h.bias = b; h.res = res; h.out = want;
            ref_dw_fused(&h);
            struct cu_dw_args d = a;
            d.in = gn_up(in, ni, f16); d.w = gn_up(w, nw, 0); d.bias = gn_up(b, g->cout, 0);
            d.res = gn_up(res, no, f16); d.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_dw_fused(&d, f16, 0), 0);
            float *got = gn_down(d.out, no, f16);
            gn_compare("dw_fused", got, want, no, rt(f16), at(f16));
            free(got);
            cudaFree((void *)d.in); cudaFree((void *)d.w); cudaFree((void *)d.bias);
            cudaFree((void *)d.res); cudaFree(d.out);
            free(in); free(w); free(b); free(res); free(want);
        }
}

Test(g_net_ops, pointwise_fused)
{
    gn_seed("pointwise_fused");
    /* n, hw, cin, cout, flags: 1 a_scale, 2 bsum, 4 e_scale, 8 res */
    const int cs[][5] = {
        { 2, 64 * 64, 16, 16, 0 }, { 3, 32 * 32, 24, 88, 1 }, { 2, 16 * 16, 128, 32, 15 },
        { 3, 100, 12, 8, 3 }, { 1, 16 * 16, 32, 128, 4 }, { 2, 1, 96, 24, 8 },
        { 2, 33, 5, 16, 6 },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            int n = cs[i][0], hw = cs[i][1], cin = cs[i][2], cout = cs[i][3], fl = cs[i][4];
            size_t ni = (size_t)n * hw * cin, no = (size_t)n * hw * cout;
            float *a = gn_random(ni, -1, 1, f16), *w = gn_random((size_t)cin * cout, -0.5f, 0.5f, 0);
            float *b = gn_random(cout, -0.5f, 0.5f, 0);
            float *as = gn_random((size_t)n * cin, 0, 1, f16), *bs = gn_random(ni, -1, 1, f16);
            float *es = gn_random((size_t)n * cout, 0, 1, f16), *res = gn_random(no, -1, 1, f16);
            float *want = malloc(no * 4);
            struct cu_pw_args h = { n, hw, cin, cout, a, fl & 1 ? as : NULL, fl & 2 ? bs : NULL,
                                    w, b, acts[i % 6], acts[(i + 3) % 6], fl & 4 ? es : NULL,
                                    fl & 8 ? res : NULL, acts[(i + 1) % 6], want, 0, 0, 0, 0, 0, 0 };
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
            cr_assert_eq(cu_pointwise(&d, f16, 0), 0, "pointwise case %zu", i);
            float *got = gn_down(d.out, no, f16);
            gn_compare("pointwise", got, want, no, rt(f16), at(f16) * (cin > 64 ? 2 : 1));
            free(got);
            cudaFree((void *)d.a); cudaFree((void *)d.a_scale); cudaFree((void *)d.b);
            cudaFree((void *)d.w); cudaFree((void *)d.bias); cudaFree((void *)d.e_scale);
            cudaFree((void *)d.res); cudaFree(d.out);
            free(a); free(w); free(b); free(as); free(bs); free(es); free(res); free(want);
        }
}

Test(g_net_ops, pointwise_resize_on_load)
{
    gn_seed("pointwise_resize_on_load");
    /* n, small h, w, out h, w, cin, cout, align, half, flags (4 e_scale, 8 res) */
    const int cs[][10] = { { 2, 16, 16, 32, 32, 128, 24, 0, 1, 0 },
                           { 3, 32, 32, 64, 64, 24, 16, 0, 1, 8 },
                           { 2, 7, 5, 13, 11, 8, 8, 1, 0, 4 },
                           { 1, 9, 16, 18, 32, 16, 16, 0, 0, 12 } };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i];
            int n = q[0], cin = q[5], cout = q[6], hw = q[3] * q[4];
            size_t ni = (size_t)n * q[1] * q[2] * cin, no = (size_t)n * hw * cout;
            float *a = gn_random(ni, -1, 1, f16), *w = gn_random((size_t)cin * cout, -.5f, .5f, 0);
            float *b = gn_random(cout, -.5f, .5f, 0), *es = gn_random((size_t)n * cout, 0, 1, f16);
            float *res = gn_random(no, -1, 1, f16), *want = malloc(no * 4);
            /* the twin as a composition: ref_resize_bilinear, then ref_pointwise */
            float *up = malloc((size_t)n * hw * cin * 4);
            ref_resize_bilinear(n, q[1], q[2], cin, a, q[3], q[4], q[7], q[8], up);
            struct cu_pw_args h = { n, hw, cin, cout, up, NULL, NULL, w, b, CU_ACT_NONE,
                                    acts[i % 6], q[9] & 4 ? es : NULL, q[9] & 8 ? res : NULL,
                                    CU_ACT_NONE, want, 0, 0, 0, 0, 0, 0 };
            ref_pointwise(&h);
            /* and the fused twin must agree with the composition */
            float *want2 = malloc(no * 4);
            struct cu_pw_args h2 = h;
            h2.a = a; h2.out = want2;
            h2.rs_h = q[1]; h2.rs_w = q[2]; h2.out_h = q[3]; h2.out_w = q[4];
            h2.rs_align = q[7]; h2.rs_half = q[8];
            ref_pointwise(&h2);
            gn_compare("ref_pointwise resize twin", want2, want, no, 1e-5f, 1e-5f);
            struct cu_pw_args d = h2;
            d.a = gn_up(a, ni, f16); d.w = gn_up(w, (size_t)cin * cout, 0);
            d.bias = gn_up(b, cout, 0);
            d.e_scale = q[9] & 4 ? gn_up(es, (size_t)n * cout, f16) : NULL;
            d.res = q[9] & 8 ? gn_up(res, no, f16) : NULL;
            d.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_pointwise(&d, f16, 0), 0, "case %zu", i);
            float *got = gn_down(d.out, no, f16);
            gn_compare("pointwise resize-on-load", got, want, no, rt(f16), at(f16) * 2);
            free(got);
            cudaFree((void *)d.a); cudaFree((void *)d.w); cudaFree((void *)d.bias);
            cudaFree((void *)d.e_scale); cudaFree((void *)d.res); cudaFree(d.out);
            free(a); free(w); free(b); free(es); free(res); free(want); free(want2); free(up);
        }
}

Test(g_net_ops, tconv)
{
    gn_seed("tconv");
    /* n, ih, iw, cin, cout, k, s, padding */
    const int cs[][8] = {
        { 2, 16, 16, 16, 1, 2, 2, MPAD_VALID }, { 1, 7, 9, 5, 2, 3, 2, MPAD_SAME },
        { 3, 8, 8, 8, 3, 2, 2, MPAD_SAME },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            struct conv_geom g;
            memset(&g, 0, sizeof g);
            g.n = cs[i][0]; g.ih = cs[i][1]; g.iw = cs[i][2]; g.cin = cs[i][3]; g.cout = cs[i][4];
            g.kh = g.kw = cs[i][5]; g.sh = g.sw = cs[i][6]; g.dh = g.dw = 1;
            op_tconv_geom(&g, cs[i][7]);
            size_t ni = (size_t)g.n * g.ih * g.iw * g.cin, no = (size_t)g.n * g.oh * g.ow * g.cout;
            size_t nw = (size_t)g.cout * g.kh * g.kw * g.cin;
            float *in = gn_random(ni, -1, 1, f16), *w = gn_random(nw, -0.5f, 0.5f, 0);
            float *b = gn_random(g.cout, -0.5f, 0.5f, 0), *want = malloc(no * 4);
            ref_tconv_bias(&g, in, w, b, want);
            void *din = gn_up(in, ni, f16), *dw = gn_up(w, nw, 0), *db = gn_up(b, g.cout, 0);
            void *dout = gn_poisoned(no, f16);
            int rc = f16 ? cu_tconv_bias_h(&g, din, dw, db, dout, 0)
                         : cu_tconv_bias(&g, din, dw, db, dout, 0);
            cr_assert_eq(rc, 0);
            float *got = gn_down(dout, no, f16);
            gn_compare("tconv_bias", got, want, no, rt(f16), at(f16));
            free(got);
            /* the network's last kernel: + sigmoid, float32 out */
            cudaFree(dout);
            dout = gn_poisoned(no, 0);
            cr_assert_eq(cu_tconv_x(&g, din, f16, dw, db, CU_ACT_LOGISTIC, dout, 0, 0), 0);
            ref_tconv_x(&g, in, w, b, CU_ACT_LOGISTIC, want);
            got = gn_down(dout, no, 0);
            gn_compare("tconv_x logistic", got, want, no, GN_RTOL32, GN_ATOL32);
            free(got);
            cudaFree(din); cudaFree(dw); cudaFree(db); cudaFree(dout);
            free(in); free(w); free(b); free(want);
        }
}

/* ---- element-wise, resampling, pooling ---- */

Test(g_net_ops, unary)
{
    gn_seed("unary");
    const size_t counts[] = { 1001, 4096 * 3 };
    for (int f16 = 0; f16 <= 1; f16++)
        for (int k = 0; k < 3; k++)
            for (int ci = 0; ci < 2; ci++) {
                size_t n = counts[ci];
                float *in = gn_random(n, -6, 6, f16), *want = malloc(n * 4);
                if (k == 0) ref_relu(in, want, n);
                else if (k == 1) ref_hard_swish(in, want, n);
                else ref_logistic(in, want, n);
                void *din = gn_up(in, n, f16), *dout = gn_poisoned(n, f16);
                int rc;
                if (f16)
                    rc = k == 0 ? cu_relu_h(din, dout, n, 0) : k == 1 ? cu_hard_swish_h(din, dout, n, 0)
                                                                  : cu_logistic_h(din, dout, n, 0);
                else
                    rc = k == 0 ? cu_relu(din, dout, n, 0) : k == 1 ? cu_hard_swish(din, dout, n, 0)
                                                                : cu_logistic(din, dout, n, 0);
                cr_assert_eq(rc, 0);
                float *got = gn_down(dout, n, f16);
                gn_compare("unary", got, want, n, rt(f16), at(f16));
                free(got);
                /* conversion variant: f16 in -> f32 out and back */
                cudaFree(dout);
                dout = gn_poisoned(n, !f16);
                cr_assert_eq(cu_unary_x(k == 0 ? CU_ACT_RELU : k == 1 ? CU_ACT_HSWISH : CU_ACT_LOGISTIC,
                                        din, f16, dout, !f16, n, 0), 0);
                got = gn_down(dout, n, !f16);
                gn_compare("unary_x", got, want, n, GN_RTOL16, GN_ATOL16);
                free(got);
                cudaFree(din); cudaFree(dout); free(in); free(want);
            }
}

Test(g_net_ops, add_mul)
{
    gn_seed("add_mul");
    const int cs[][4] = { { 2, 16, 16, 16 }, { 3, 7, 5, 5 }, { 2, 32, 32, 24 } };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < 3; i++)
            for (int full = 0; full <= 1; full++)
                for (int mul = 0; mul <= 1; mul++) {
                    int n = cs[i][0], h = cs[i][1], w = cs[i][2], c = cs[i][3];
                    int act = (int)((i + full + mul) % 4);
                    size_t cnt = (size_t)n * h * w * c, nb = full ? cnt : (size_t)n * c;
                    float *a = gn_random(cnt, -2, 2, f16), *b = gn_random(nb, -2, 2, f16);
                    float *want = malloc(cnt * 4);
                    (mul ? ref_mul : ref_add)(n, h, w, c, a, b, full, act, want);
                    void *da = gn_up(a, cnt, f16), *db = gn_up(b, nb, f16), *dout = gn_poisoned(cnt, f16);
                    int rc = f16 ? (mul ? cu_mul_h : cu_add_h)(n, h, w, c, da, db, full, act, dout, 0)
                                 : (mul ? cu_mul : cu_add)(n, h, w, c, da, db, full, act, dout, 0);
                    cr_assert_eq(rc, 0);
                    float *got = gn_down(dout, cnt, f16);
                    gn_compare(mul ? "mul" : "add", got, want, cnt, rt(f16), at(f16));
                    free(got);
                    cudaFree(da); cudaFree(db); cudaFree(dout); free(a); free(b); free(want);
                }
}

Test(g_net_ops, resize_bilinear)
{
    gn_seed("resize_bilinear");
    /* n, ih, iw, c, oh, ow, align_corners, half_pixel_centers */
    const int cs[][8] = {
        { 2, 16, 16, 128, 32, 32, 0, 1 }, { 1, 7, 5, 3, 13, 11, 1, 0 },
        { 3, 8, 8, 8, 16, 16, 0, 0 }, { 1, 9, 16, 24, 18, 32, 0, 1 }, { 2, 12, 10, 5, 5, 7, 0, 1 },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i];
            size_t ni = (size_t)q[0] * q[1] * q[2] * q[3], no = (size_t)q[0] * q[4] * q[5] * q[3];
            float *in = gn_random(ni, -1, 1, f16), *want = malloc(no * 4);
            ref_resize_bilinear(q[0], q[1], q[2], q[3], in, q[4], q[5], q[6], q[7], want);
            void *din = gn_up(in, ni, f16), *dout = gn_poisoned(no, f16);
            int rc = f16 ? cu_resize_bilinear_h(q[0], q[1], q[2], q[3], din, q[4], q[5], q[6], q[7], dout, 0)
                         : cu_resize_bilinear(q[0], q[1], q[2], q[3], din, q[4], q[5], q[6], q[7], dout, 0);
            cr_assert_eq(rc, 0);
            float *got = gn_down(dout, no, f16);
            gn_compare("resize_bilinear", got, want, no, rt(f16), at(f16));
            free(got);
            /* with activations after it (the decoder's resized 1x1 convs) */
            int a1 = acts[i % 6], a2 = i % 2 ? CU_ACT_HSWISH : CU_ACT_NONE;
            for (size_t j = 0; j < no; j++)
                want[j] = ref_act_ext(ref_act_ext(want[j], a1), a2);
            cr_assert_eq(cu_resize_bilinear_dt(q[0], q[1], q[2], q[3], din, q[4], q[5], q[6], q[7],
                                               a1, a2, dout, f16 ? CU_DT_ALL : 0, 0), 0);
            got = gn_down(dout, no, f16);
            gn_compare("resize_bilinear + act", got, want, no, rt(f16), at(f16));
            free(got);
            cudaFree(din); cudaFree(dout); free(in); free(want);
        }
}

Test(g_net_ops, avgpool_mean)
{
    gn_seed("avgpool_mean");
    const struct conv_case cs[] = {
        { 2, 16, 16, 8, 8, 3, 2, 1, MPAD_SAME, MACT_NONE },
        { 1, 15, 15, 4, 4, 15, 1, 1, MPAD_VALID, MACT_NONE },
        { 3, 9, 7, 3, 3, 2, 1, 1, MPAD_SAME, MACT_RELU6 },
    };
    for (int f16 = 0; f16 <= 1; f16++) {
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            struct conv_geom g;
            geom(&g, &cs[i], cs[i].k, cs[i].k);
            size_t ni = (size_t)g.n * g.ih * g.iw * g.cin, no = (size_t)g.n * g.oh * g.ow * g.cout;
            float *in = gn_random(ni, -1, 1, f16), *want = malloc(no * 4);
            ref_avgpool(&g, in, want);
            void *din = gn_up(in, ni, f16), *dout = gn_poisoned(no, f16);
            cr_assert_eq(f16 ? cu_avgpool_h(&g, din, dout, 0) : cu_avgpool(&g, din, dout, 0), 0);
            float *got = gn_down(dout, no, f16);
            gn_compare("avgpool", got, want, no, rt(f16), at(f16));
            free(got); cudaFree(din); cudaFree(dout); free(in); free(want);
        }
        const int ms[][4] = { { 3, 16, 16, 24 }, { 2, 7, 5, 3 }, { 2, 128, 128, 16 } };
        for (int i = 0; i < 3; i++) {
            int n = ms[i][0], h = ms[i][1], w = ms[i][2], c = ms[i][3];
            size_t ni = (size_t)n * h * w * c, no = (size_t)n * c;
            float *in = gn_random(ni, -1, 1, f16), *want = malloc(no * 4);
            ref_mean_hw(n, h, w, c, in, want);
            void *din = gn_up(in, ni, f16), *dout = gn_poisoned(no, f16);
            cr_assert_eq(f16 ? cu_mean_hw_h(n, h, w, c, din, dout, 0)
                             : cu_mean_hw(n, h, w, c, din, dout, 0), 0);
            float *got = gn_down(dout, no, f16);
            gn_compare("mean_hw", got, want, no, rt(f16), at(f16));
            free(got); cudaFree(din); cudaFree(dout); free(in); free(want);
        }
    }
}

Test(g_net_ops, squeeze_excite)
{
    gn_seed("squeeze_excite");
    /* n, h, w, c, layers, mid */
    const int cs[][6] = { { 3, 64, 64, 16, 2, 8 }, { 2, 16, 16, 96, 2, 24 },
                          { 2, 16, 16, 32, 1, 128 }, { 2, 9, 7, 5, 2, 3 }, { 1, 128, 128, 16, 0, 0 },
                          { 3, 128, 128, 16, 2, 4 }, { 2, 72, 128, 16, 2, 4 } };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const int *q = cs[i];
            struct cu_se_args h;
            memset(&h, 0, sizeof h);
            h.n = q[0]; h.h = q[1]; h.w = q[2]; h.c = q[3]; h.n_layers = q[4];
            int c = q[3];
            float *wl[3] = { 0 }, *bl[3] = { 0 };
            for (int l = 0; l < h.n_layers; l++) {
                int co = l == h.n_layers - 1 && h.n_layers > 1 ? q[3] : q[5];
                wl[l] = gn_random((size_t)c * co, -0.5f, 0.5f, 0);
                bl[l] = gn_random(co, -0.5f, 0.5f, 0);
                h.l[l] = (struct cu_se_layer){ c, co, wl[l], bl[l], acts[(i + l) % 4],
                                               l == h.n_layers - 1 ? CU_ACT_LOGISTIC : CU_ACT_RELU };
                c = co;
            }
            size_t ni = (size_t)h.n * h.h * h.w * h.c, no = (size_t)h.n * c;
            float *in = gn_random(ni, -1, 1, f16), *want = malloc(no * 4);
            float *in2 = i % 2 ? gn_random(ni, -1, 1, f16) : NULL;   /* pooled ADD */
            h.in = in; h.in2 = in2; h.out = want;
            cr_assert_eq(ref_se(&h), 0);
            struct cu_se_args d = h;
            d.in = gn_up(in, ni, f16);
            d.in2 = in2 ? gn_up(in2, ni, f16) : NULL;
            for (int l = 0; l < h.n_layers; l++) {
                d.l[l].w = gn_up(wl[l], (size_t)h.l[l].cin * h.l[l].cout, 0);
                d.l[l].bias = gn_up(bl[l], h.l[l].cout, 0);
            }
            d.out = gn_poisoned(no, f16);
            cr_assert_eq(cu_se(&d, f16, 0), 0);
            float *got = gn_down(d.out, no, f16);
            gn_compare("squeeze_excite", got, want, no, rt(f16) * 4, at(f16) * 4);
            free(got);
            if (in2) {   /* in2 given as the sums of 3 pixel ranges an image */
                const int parts = 3;
                const size_t hw = (size_t)h.h * h.w;
                float *ps = calloc((size_t)h.n * parts * h.c, sizeof *ps);
                cr_assert(ps);
                for (int n = 0; n < h.n; n++)
                    for (size_t p = 0; p < hw; p++)
                        for (int ch = 0; ch < h.c; ch++)
                            ps[((size_t)n * parts + p * parts / hw) * h.c + ch] +=
                                in2[((size_t)n * hw + p) * h.c + ch];
                struct cu_se_args d2 = d;
                d2.in2_part = gn_up(ps, (size_t)h.n * parts * h.c, 0);
                d2.in2_parts = parts;
                d2.out = gn_poisoned(no, f16);
                cr_assert_eq(cu_se(&d2, f16, 0), 0);
                got = gn_down(d2.out, no, f16);
                gn_compare("squeeze_excite, in2 as sums", got, want, no, rt(f16) * 4,
                           at(f16) * 4);
                free(got);
                cudaFree((void *)d2.in2_part);
                cudaFree(d2.out);
                free(ps);
            }
            cudaFree((void *)d.in); cudaFree((void *)d.in2); cudaFree(d.out);
            free(in2);
            for (int l = 0; l < h.n_layers; l++) {
                cudaFree((void *)d.l[l].w); cudaFree((void *)d.l[l].bias);
                free(wl[l]); free(bl[l]);
            }
            free(in); free(want);
        }
}

/* ---- mixed precision: each operand float16 or float32 at random ---- */

Test(g_net_ops, mixed_dtypes)
{
    gn_seed("mixed_dtypes");
    for (int rep = 0; rep < 6; rep++) {
        unsigned dt = gn_u32() & CU_DT_ALL;
        int f[6];
        for (int k = 0; k < 6; k++)
            f[k] = (dt >> k) & 1;
        /* pointwise with every prologue / epilogue operand */
        int n = 2, hw = 24 * 24, cin = 24, cout = 16;
        size_t ni = (size_t)n * hw * cin, no = (size_t)n * hw * cout;
        float *a = gn_random(ni, -1, 1, f[0]), *as = gn_random((size_t)n * cin, 0, 1, f[1]);
        float *bs = gn_random(ni, -1, 1, f[2]), *es = gn_random((size_t)n * cout, 0, 1, f[3]);
        float *res = gn_random(no, -1, 1, f[4]), *w = gn_random((size_t)cin * cout, -.5f, .5f, 0);
        float *b = gn_random(cout, -.5f, .5f, 0), *want = malloc(no * 4);
        struct cu_pw_args h = { n, hw, cin, cout, a, as, bs, w, b, CU_ACT_NONE, CU_ACT_HSWISH,
                                es, res, CU_ACT_RELU, want, 0, 0, 0, 0, 0, 0 };
        ref_pointwise(&h);
        struct cu_pw_args d = h;
        d.a = gn_up(a, ni, f[0]); d.a_scale = gn_up(as, (size_t)n * cin, f[1]);
        d.b = gn_up(bs, ni, f[2]); d.e_scale = gn_up(es, (size_t)n * cout, f[3]);
        d.res = gn_up(res, no, f[4]); d.w = gn_up(w, (size_t)cin * cout, 0);
        d.bias = gn_up(b, cout, 0); d.out = gn_poisoned(no, f[5]);
        cr_assert_eq(cu_pointwise_dt(&d, dt, 0), 0);
        float *got = gn_down(d.out, no, f[5]);
        gn_compare("pointwise_dt", got, want, no, f[5] ? GN_RTOL16 : GN_RTOL32,
                   f[5] ? GN_ATOL16 : GN_ATOL32);
        free(got);
        /* depthwise with residual */
        struct cu_dw_args dw;
        memset(&dw, 0, sizeof dw);
        struct conv_case cc = { n, 24, 24, cin, cin, 3, 1, 1, MPAD_SAME, MACT_RELU };
        geom(&dw.g, &cc, 3, 3);
        size_t nw = 9 * (size_t)cin;
        float *wd = gn_random(nw, -.5f, .5f, 0), *res2 = gn_random(ni, -1, 1, f[4]);
        float *want2 = malloc(ni * 4);
        struct cu_dw_args hd = dw;
        hd.in = a; hd.w = wd; hd.bias = b; hd.act2 = CU_ACT_HSWISH; hd.res = res2;
        hd.act3 = CU_ACT_NONE; hd.out = want2;
        /* bias has cout (16) values: the depthwise needs cin (24) */
        float *b24 = gn_random(cin, -.5f, .5f, 0);
        hd.bias = b24;
        ref_dw_fused(&hd);
        struct cu_dw_args dd = hd;
        dd.in = d.a; dd.w = gn_up(wd, nw, 0); dd.bias = gn_up(b24, cin, 0);
        dd.res = gn_up(res2, ni, f[4]); dd.out = gn_poisoned(ni, f[5]);
        cr_assert_eq(cu_dw_fused_dt(&dd, dt & (CU_DT_IN0 | CU_DT_RES | CU_DT_OUT), 0), 0);
        got = gn_down(dd.out, ni, f[5]);
        gn_compare("dw_fused_dt", got, want2, ni, f[5] ? GN_RTOL16 : GN_RTOL32,
                   f[5] ? GN_ATOL16 : GN_ATOL32);
        free(got);
        /* ADD of a float16 / float32 pair into either */
        float *want3 = malloc(ni * 4);
        ref_add(n, 24, 24, cin, a, bs, 1, MACT_NONE, want3);
        void *o3 = gn_poisoned(ni, f[5]);
        cr_assert_eq(cu_binary_dt(0, n, 24, 24, cin, d.a, d.b, 1, MACT_NONE, o3,
                                  (f[0] ? CU_DT_IN0 : 0) | (f[2] ? CU_DT_IN1 : 0) |
                                      (f[5] ? CU_DT_OUT : 0), 0), 0);
        got = gn_down(o3, ni, f[5]);
        gn_compare("add_dt", got, want3, ni, f[5] ? GN_RTOL16 : GN_RTOL32,
                   f[5] ? GN_ATOL16 : GN_ATOL32);
        free(got);
        cudaFree(o3);
        cudaFree((void *)d.a); cudaFree((void *)d.a_scale); cudaFree((void *)d.b);
        cudaFree((void *)d.e_scale); cudaFree((void *)d.res); cudaFree((void *)d.w);
        cudaFree((void *)d.bias); cudaFree(d.out);
        cudaFree((void *)dd.w); cudaFree((void *)dd.bias); cudaFree((void *)dd.res);
        cudaFree(dd.out);
        free(a); free(as); free(bs); free(es); free(res); free(w); free(b); free(want);
        free(wd); free(res2); free(want2); free(b24); free(want3);
    }
}

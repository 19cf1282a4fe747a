/*
 * g-net-ops-move.c - the pose tier's CUDA ops (ops_move.cu: PAD,
 * DEPTH_TO_SPACE, MAX_POOL_2D, CONCATENATION) against their C twins
 * (ops_move_ref.c) on fresh random inputs, outputs poisoned, the pose
 * models' own geometries among odd ones. They only move or compare values,
 * so the GPU must equal the twin bit for bit (tolerance 0).
 */
#include "util-net.h"

#include "model.h"
#include "ops_ref.h"

Test(g_net_ops_move, pad)
{
    gn_seed("pad");
    /* n h w c, then ph0 ph1 pw0 pw1 pc0 pc1 */
    const int cs[][10] = { { 1, 224, 224, 3, 1, 1, 1, 1, 0, 0 },
                           { 2, 56, 56, 144, 2, 2, 2, 2, 0, 0 },
                           { 3, 7, 5, 3, 0, 2, 1, 0, 1, 3 } };
    for (int i = 0; i < 3; i++) {
        const int *c = cs[i];
        const size_t ni = (size_t)c[0] * c[1] * c[2] * c[3];
        const size_t no = (size_t)c[0] * (c[1] + c[4] + c[5]) * (c[2] + c[6] + c[7]) *
                          (c[3] + c[8] + c[9]);
        float *in = gn_random(ni, -1, 1, 0), *want = malloc(no * 4);
        ref_pad(c[0], c[1], c[2], c[3], in, c[4], c[5], c[6], c[7], c[8], c[9], want);
        void *din = gn_up(in, ni, 0), *dout = gn_poisoned(no, 0);
        cr_assert_eq(cu_pad(c[0], c[1], c[2], c[3], din, c[4], c[5], c[6], c[7], c[8], c[9],
                            dout, 0), 0);
        float *got = gn_down(dout, no, 0);
        gn_compare("pad", got, want, no, 0, 0);
        free(got); cudaFree(din); cudaFree(dout); free(in); free(want);
    }
}

Test(g_net_ops_move, depth_to_space)
{
    gn_seed("depth_to_space");
    const int cs[][5] = { { 1, 7, 7, 1152, 2 }, { 2, 28, 28, 96, 2 }, { 3, 5, 3, 18, 3 } };
    for (int i = 0; i < 3; i++) {
        const int *c = cs[i];
        const size_t ni = (size_t)c[0] * c[1] * c[2] * c[3];
        float *in = gn_random(ni, -1, 1, 0), *want = malloc(ni * 4);
        ref_depth_to_space(c[0], c[1], c[2], c[3], c[4], in, want);
        void *din = gn_up(in, ni, 0), *dout = gn_poisoned(ni, 0);
        cr_assert_eq(cu_depth_to_space(c[0], c[1], c[2], c[3], c[4], din, dout, 0), 0);
        float *got = gn_down(dout, ni, 0);
        gn_compare("depth_to_space", got, want, ni, 0, 0);
        free(got); cudaFree(din); cudaFree(dout); free(in); free(want);
    }
}

Test(g_net_ops_move, maxpool)
{
    gn_seed("maxpool");
    /* n ih iw c k s padding act */
    const int cs[][8] = { { 1, 8, 8, 192, 2, 2, MPAD_VALID, MACT_NONE },
                          { 2, 9, 7, 5, 3, 2, MPAD_SAME, MACT_RELU6 },
                          { 3, 16, 15, 8, 3, 1, MPAD_SAME, MACT_RELU } };
    for (int i = 0; i < 3; i++) {
        const int *c = cs[i];
        struct conv_geom g = { .n = c[0], .ih = c[1], .iw = c[2], .cin = c[3], .cout = c[3],
                               .kh = c[4], .kw = c[4], .sh = c[5], .sw = c[5], .dh = 1,
                               .dw = 1, .act = c[7] };
        op_conv_geom(&g, c[6]);
        const size_t ni = (size_t)g.n * g.ih * g.iw * g.cin, no = (size_t)g.n * g.oh * g.ow * g.cout;
        float *in = gn_random(ni, -8, 8, 0), *want = malloc(no * 4);
        ref_maxpool(&g, in, want);
        void *din = gn_up(in, ni, 0), *dout = gn_poisoned(no, 0);
        cr_assert_eq(cu_maxpool(&g, din, dout, 0), 0);
        float *got = gn_down(dout, no, 0);
        gn_compare("maxpool", got, want, no, 0, 0);
        free(got); cudaFree(din); cudaFree(dout); free(in); free(want);
    }
}

Test(g_net_ops_move, concat)
{
    gn_seed("concat");
    /* outer, ia, ib, ic: the detector's [1,N,12] pieces, and channels */
    const int cs[][4] = { { 1, 1568 * 12, 392 * 12, 294 * 12 }, { 1568, 1, 1, 0 },
                          { 37, 5, 3, 7 } };
    for (int i = 0; i < 3; i++) {
        const int *c = cs[i];
        const size_t na = (size_t)c[0] * c[1], nb = (size_t)c[0] * c[2], nc = (size_t)c[0] * c[3];
        const size_t no = na + nb + nc;
        float *a = gn_random(na, -1, 1, 0), *b = gn_random(nb, -1, 1, 0);
        float *cc = gn_random(nc ? nc : 1, -1, 1, 0), *want = malloc(no * 4);
        ref_concat3(c[0], a, c[1], b, c[2], c[3] ? cc : NULL, c[3], want);
        void *da = gn_up(a, na, 0), *db = gn_up(b, nb, 0), *dc = gn_up(cc, nc ? nc : 1, 0);
        void *dout = gn_poisoned(no, 0);
        cr_assert_eq(cu_concat3(c[0], da, c[1], db, c[2], c[3] ? dc : NULL, c[3], dout, 0), 0);
        float *got = gn_down(dout, no, 0);
        gn_compare("concat", got, want, no, 0, 0);
        free(got); cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dout);
        free(a); free(b); free(cc); free(want);
    }
}

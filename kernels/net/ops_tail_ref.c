/*
 * ops_tail_ref.c - the plain-C twin of the decoder-stage kernel
 * (ops_fused.h, cu_tail in ops_tail.cu): the pointwise step with its
 * prologue, the depthwise step with the pointwise output as residual, and
 * the transpose conv with its activation or the next stage's 1x1 conv,
 * composed from the fused twins the GPU network ran before the kernel
 * existed. float32, host memory.
 */
#include "model.h"
#include "ops_fused.h"
#include "vr_err.h"

#include <stdlib.h>

int ref_tail(const struct cu_tail_args *p)
{
    if (!p || p->n < 1 || p->h < 1 || p->w < 1 || p->cin < 1 || p->c < 1 || p->cout < 1 ||
        p->k < 1 || !(p->k & 1) || !p->a || !p->wp || !p->wd || !p->wt || !p->bt || !p->out)
        return VR_EINVAL;
    const size_t map = (size_t)p->n * p->h * p->w * p->c;
    const size_t bmap = p->b_rs_h > 0 ? (size_t)p->n * p->h * p->w * p->cin : 1;
    float *t = malloc(map * sizeof(float)), *u = malloc(map * sizeof(float));
    float *b = malloc(bmap * sizeof(float));   /* a deferred resize of b, written out */
    if (!t || !u || !b) {
        free(t);
        free(u);
        free(b);
        return VR_ENOMEM;
    }
    if (p->b_rs_h > 0 && p->b)
        ref_resize_bilinear(p->n, p->b_rs_h, p->b_rs_w, p->cin, p->b, p->h, p->w,
                            p->b_rs_align, p->b_rs_half, b);
    struct cu_pw_args pw = {
        .n = p->n, .hw = p->h * p->w, .cin = p->cin, .cout = p->c, .a = p->a,
        .a_scale = p->a_scale, .b = p->b_rs_h > 0 && p->b ? b : p->b, .w = p->wp,
        .bias = p->bp, .act1 = p->act_p1, .act2 = p->act_p2, .out = t,
    };
    ref_pointwise(&pw);
    struct cu_dw_args dw = {
        .g = { .n = p->n, .ih = p->h, .iw = p->w, .cin = p->c, .cout = p->c, .kh = p->k,
               .kw = p->k, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .act = p->act_d1 },
        .in = t, .w = p->wd, .bias = p->bd, .act2 = p->act_d2, .res = t, .act3 = p->act_d3,
        .out = u,
    };
    op_conv_geom(&dw.g, MPAD_SAME);
    ref_dw_fused(&dw);
    if (p->pw) {   /* the next stage's 1x1 conv, no activation */
        struct cu_pw_args next = { .n = p->n, .hw = p->h * p->w, .cin = p->c, .cout = p->cout,
                                   .a = u, .w = p->wt, .bias = p->bt, .out = p->out };
        ref_pointwise(&next);
    } else {
        struct conv_geom tg = { .n = p->n, .ih = p->h, .iw = p->w, .cin = p->c,
                                .cout = p->cout, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1,
                                .dw = 1 };
        op_tconv_geom(&tg, MPAD_SAME);
        ref_tconv_x(&tg, u, p->wt, p->bt, p->act_t, p->out);
    }
    free(t);
    free(u);
    free(b);
    return 0;
}

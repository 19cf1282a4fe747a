/*
 * ops_block_ref.c - the plain-C twin of the chained inverted-residual block
 * kernel (ops_fused.h, cu_ir_chain in ops_block.cu): each block is the
 * composition of the fused twins the GPU network ran before the block
 * kernel existed (pointwise, depthwise, squeeze-excite, pointwise with the
 * SE scale as prologue and the residual as epilogue), so the chain means
 * exactly what those steps meant. float32, host memory.
 */
#include "model.h"
#include "ops_fused.h"
#include "vr_err.h"

#include <stdlib.h>
#include <string.h>

static int block_ok(const struct cu_ir_block *b)
{
    return b->ce > 0 && b->cs > 0 && b->k > 0 && (b->k & 1) && b->we && b->wd && b->w1 &&
           b->w2 && b->wp && b->cs <= CU_SE_MAX_CH && b->ce <= CU_SE_MAX_CH;
}

/* One block: x [n][hw][c] -> y (x and y may not alias; e, d scratch
 * [n][hw][ce], v [n][ce]). */
static void ir_block(const struct cu_ir_args *p, const struct cu_ir_block *b, const float *x,
                     float *y, float *e, float *d, float *v)
{
    const int hw = p->h * p->w;
    struct cu_pw_args ex = {
        .n = p->n, .hw = hw, .cin = p->c, .cout = b->ce, .a = x, .w = b->we, .bias = b->be,
        .act1 = b->act_e1, .act2 = b->act_e2, .out = e,
    };
    ref_pointwise(&ex);
    struct cu_dw_args dw = {
        .g = { .n = p->n, .ih = p->h, .iw = p->w, .cin = b->ce, .cout = b->ce, .kh = b->k,
               .kw = b->k, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .act = b->act_d1 },
        .in = e, .w = b->wd, .bias = b->bd, .act2 = b->act_d2, .out = d,
    };
    op_conv_geom(&dw.g, MPAD_SAME);
    ref_dw_fused(&dw);
    struct cu_se_args se = {
        .n = p->n, .h = p->h, .w = p->w, .c = b->ce, .in = d, .n_layers = 2,
        .l = { { b->ce, b->cs, b->w1, b->b1, b->act_r1, b->act_r2 },
               { b->cs, b->ce, b->w2, b->b2, b->act_s1, b->act_s2 } },
        .out = v,
    };
    ref_se(&se);
    struct cu_pw_args pr = {
        .n = p->n, .hw = hw, .cin = b->ce, .cout = p->c, .a = d, .a_scale = v,
        .w = b->wp, .bias = b->bp, .act1 = b->act_p1, .act2 = b->act_p2,
        .res = b->residual ? x : NULL, .act3 = b->act3, .out = y,
    };
    ref_pointwise(&pr);
}

int ref_ir_chain(const struct cu_ir_args *p)
{
    if (!p || p->n < 1 || p->h < 1 || p->w < 1 || p->c < 1 || !p->in || !p->out ||
        p->n_blocks < 1 || p->n_blocks > CU_IR_MAX_BLOCKS)
        return VR_EINVAL;
    int ce = 0;
    for (int i = 0; i < p->n_blocks; i++) {
        if (!block_ok(&p->b[i]))
            return VR_EINVAL;
        ce = p->b[i].ce > ce ? p->b[i].ce : ce;
    }
    const size_t map = (size_t)p->n * p->h * p->w;
    float *x = malloc(map * p->c * sizeof(float));
    float *y = malloc(map * p->c * sizeof(float));
    float *e = malloc(map * ce * sizeof(float));
    float *d = malloc(map * ce * sizeof(float));
    float *v = malloc((size_t)p->n * ce * sizeof(float));
    int rc = VR_ENOMEM;
    if (x && y && e && d && v) {
        memcpy(x, p->in, map * p->c * sizeof(float));
        for (int i = 0; i < p->n_blocks; i++) {
            ir_block(p, &p->b[i], x, y, e, d, v);
            float *t = x; x = y; y = t;
        }
        memcpy(p->out, x, map * p->c * sizeof(float));
        rc = 0;
    }
    free(x); free(y); free(e); free(d); free(v);
    return rc;
}

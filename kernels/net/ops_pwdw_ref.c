/*
 * ops_pwdw_ref.c - the plain-C twin of the pointwise + depthwise kernel
 * (ops_fused.h, cu_pwdw in ops_pwdw.cu): the two fused twins it replaces,
 * one after the other. float32, host memory.
 */
#include "ops_fused.h"
#include "vr_err.h"

#include <stdlib.h>

int ref_pwdw(const struct cu_pwdw_args *p)
{
    const struct conv_geom *g = p ? &p->g : NULL;
    if (!p || g->n < 1 || g->ih < 1 || g->iw < 1 || g->cin < 1 || g->cout != g->cin ||
        g->oh < 1 || g->ow < 1 || p->cin < 1 || !p->in || !p->wp || !p->wd || !p->out)
        return VR_EINVAL;
    float *t = malloc((size_t)g->n * g->ih * g->iw * g->cin * sizeof(float));
    if (!t)
        return VR_ENOMEM;
    struct cu_pw_args pw = {
        .n = g->n, .hw = g->ih * g->iw, .cin = p->cin, .cout = g->cin, .a = p->in,
        .w = p->wp, .bias = p->bp, .act1 = p->act_p1, .act2 = p->act_p2, .out = t,
    };
    ref_pointwise(&pw);
    struct cu_dw_args dw = { .g = *g, .in = t, .w = p->wd, .bias = p->bd, .act2 = p->act_d2,
                             .out = p->out };
    ref_dw_fused(&dw);
    free(t);
    return 0;
}

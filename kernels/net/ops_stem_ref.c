/*
 * ops_stem_ref.c - the C twin of the stem kernel (ops_stem.cu): the
 * network's first conv (3 -> 16 channels, 3x3, stride 2) as the generic
 * conv computes it (ref_conv2d), its two activations, and the per-block
 * channel sums the kernel hands to the decoder's squeeze-excite pool. The
 * blocks are the kernel's thread blocks (CU_STEM_TH x CU_STEM_TW outputs,
 * ops_fused.h), so the sums' layout is the kernel's; their summation order
 * is not (float rounding apart).
 */
#include "ops_fused.h"
#include "vr_err.h"

#include <stdint.h>
#include <string.h>

int ref_stem_ok(const struct conv_geom *g, const void *out)
{
    return g && g->cin == CU_STEM_CIN && g->cout == CU_STEM_COUT && g->kh == 3 && g->kw == 3 &&
           g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->n <= 65535 &&
           ((uintptr_t)out & 15) == 0;
}

int ref_stem_parts(const struct conv_geom *g)
{
    return ((g->ow + CU_STEM_TW - 1) / CU_STEM_TW) * ((g->oh + CU_STEM_TH - 1) / CU_STEM_TH);
}

int ref_stem(const struct conv_geom *g, const float *in, const float *w, const float *b,
             int act1, int act2, float *out, float *pool)
{
    if (!ref_stem_ok(g, out) || !in || !w)
        return VR_EINVAL;
    struct conv_geom c = *g;
    c.act = CU_ACT_NONE;   /* act1 and act2 below, as the kernel applies them */
    ref_conv2d(&c, in, w, b, out);
    const size_t per = (size_t)g->oh * g->ow * CU_STEM_COUT;
    for (size_t i = 0; i < (size_t)g->n * per; i++)
        out[i] = ref_act_ext(ref_act_ext(out[i], act1), act2);
    if (!pool)
        return 0;
    const int parts = ref_stem_parts(g), bw = (g->ow + CU_STEM_TW - 1) / CU_STEM_TW;
    memset(pool, 0, sizeof *pool * (size_t)g->n * parts * CU_STEM_COUT);
    for (int n = 0; n < g->n; n++)
        for (int y = 0; y < g->oh; y++)
            for (int x = 0; x < g->ow; x++) {
                float *p = pool + ((size_t)n * parts + (y / CU_STEM_TH) * bw + x / CU_STEM_TW) *
                                      CU_STEM_COUT;
                const float *o = out + (size_t)n * per + ((size_t)y * g->ow + x) * CU_STEM_COUT;
                for (int ch = 0; ch < CU_STEM_COUT; ch++)
                    p[ch] += o[ch];
            }
    return 0;
}

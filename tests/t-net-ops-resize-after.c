/*
 * t-net-ops-resize-after.c - the identity the GPU plan's RS_AFTER steps rest on
 * (kernels/net/net_plan.c, resize_after_pw): for every RESIZE_BILINEAR of the
 * real models read by a 1x1 CONV_2D, the conv on the small map and then the
 * resize (what the GPU runs) equals the resize and then the conv (the
 * model's order) to float rounding, the conv's activations applied after
 * either. Bilinear weights sum to one, so the bias commutes too. Plain C
 * references (ops_ref.h, ops_fused.h): checked in CI without a GPU; the GPU
 * steps themselves are compared with the CPU engine in g_net_cuda.
 */
#include "model.h"
#include "ops_fused.h"
#include "ops_ref.h"
#include "util-model-ops.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>

#define N 2

/* The op reading tensor t first after op i, or -1. */
static int reader(const struct model *m, int i, int t)
{
    for (int j = i + 1; j < m->n_ops; j++)
        for (int k = 0; k < m->ops[j].n_in; k++)
            if (m->ops[j].in[k] == t)
                return j;
    return -1;
}

static int check_model(const char *rel, int n_ops)
{
    struct model *m = umo_load(rel, n_ops);
    int pairs = 0;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *r = &m->ops[i];
        if (r->kind != MOP_RESIZE_BILINEAR)
            continue;
        const int j = reader(m, i, r->out);
        const struct model_op *o = j >= 0 ? &m->ops[j] : NULL;
        if (!o || o->kind != MOP_CONV_2D || o->in[0] != r->out)
            continue;
        const struct model_tensor *x = &m->tensors[r->in[0]], *w = &m->tensors[o->in[1]];
        if (w->shape[1] != 1 || w->shape[2] != 1 || o->stride_h != 1 || o->stride_w != 1)
            continue;
        const int ih = x->shape[1], iw = x->shape[2], cin = x->shape[3], cout = w->shape[0];
        const int oh = r->out_h, ow = r->out_w;
        const int a = reader(m, j, o->out);
        const int act2 = a >= 0 && m->ops[a].kind == MOP_RELU         ? CU_ACT_RELU
                         : a >= 0 && m->ops[a].kind == MOP_HARD_SWISH ? CU_ACT_HSWISH
                                                                      : CU_ACT_NONE;
        uint32_t seed = 4242 + (uint32_t)i;
        float *in = umo_random((size_t)N * ih * iw * cin, -2.f, 2.f, &seed);
        float *up = malloc((size_t)N * oh * ow * cin * sizeof(float));
        float *want = malloc((size_t)N * oh * ow * cout * sizeof(float));
        float *small = malloc((size_t)N * ih * iw * cout * sizeof(float));
        float *got = malloc((size_t)N * oh * ow * cout * sizeof(float));
        cr_assert(up && want && small && got);

        /* the model's order: resize, 1x1 conv + activations */
        ref_resize_bilinear(N, ih, iw, cin, in, oh, ow, r->align_corners,
                            r->half_pixel_centers, up);
        struct cu_pw_args p = { .n = N, .hw = oh * ow, .cin = cin, .cout = cout, .a = up,
                                .w = w->data, .bias = umo_bias(m, o), .act1 = o->act,
                                .act2 = act2, .out = want };
        ref_pointwise(&p);
        /* the GPU plan's: 1x1 conv on the small map, resize, activations */
        struct cu_pw_args q = p;
        q.hw = ih * iw;
        q.a = in;
        q.act1 = q.act2 = CU_ACT_NONE;
        q.out = small;
        ref_pointwise(&q);
        ref_resize_bilinear(N, ih, iw, cout, small, oh, ow, r->align_corners,
                            r->half_pixel_centers, got);
        const size_t count = (size_t)N * oh * ow * cout;
        for (size_t k = 0; k < count; k++)
            got[k] = ref_act_ext(ref_act_ext(got[k], o->act), act2);

        double worst = 0, d = umo_compare(got, want, count, 5e-5, 1e-4, &worst);
        cr_log_info("%s ops %d..%d: %dx%dx%d -> %dx%dx%d: max |diff| %.3g (%.2f of the "
                    "tolerance)", rel, i, j, ih, iw, cin, oh, ow, cout, d, worst);
        pairs++;
        free(in);
        free(up);
        free(want);
        free(small);
        free(got);
    }
    model_free(&m);
    return pairs;
}

Test(net_ops_resize_after, conv_then_resize_equals_resize_then_conv)
{
    /* the decoder's three: 16x16x128 -> 32x32x24, 32x32x24 -> 64x64x16,
     * 64x64x16 -> 128x128x16 (landscape: the same at 9x16 .. 72x128) */
    cr_assert_eq(check_model("models/selfie_segmentation.tflite", 136), 3);
    cr_assert_eq(check_model("models/selfie_segmentation_landscape.tflite", 136), 3);
}

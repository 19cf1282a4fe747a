/*
 * g-net-ops-block.c - the chained inverted-residual block kernel (cu_ir_chain,
 * kernels/net/ops_block.cu) against its C twin (ref_ir_chain) on fresh random
 * data: the bottleneck's own geometries (16x16 and the landscape model's
 * 9x16, 32 channels expanded to 128 and 96, 5x5 depthwise) and others that
 * take the kernel's other paths (3x3, no residual, an activation
 * after the residual, a map narrower than 16), float32 and float16 input
 * and output. The whole network with the chains runs on real images in
 * g-net-cuda.c.
 */
#include "util-net.h"

#include "vr_err.h"

static const int acts[] = { CU_ACT_NONE, CU_ACT_RELU, CU_ACT_RELU6, CU_ACT_HSWISH,
                            CU_ACT_LOGISTIC };

static int rand_act(void)
{
    return acts[gn_u32() % (sizeof acts / sizeof acts[0])];
}

/* block spec: ce, k, cs, residual */
struct chain_case { int n, h, w, c, n_blocks; int b[3][4]; };

/* Random weights (host), small enough that the chain's values stay O(1). */
static void random_block(struct cu_ir_block *b, int c, const int *spec)
{
    const int ce = spec[0], k = spec[1], cs = spec[2];
    const float we = 1.5f / sqrtf((float)c), wp = 1.5f / sqrtf((float)ce);
    *b = (struct cu_ir_block){
        ce, k, cs,
        gn_random((size_t)ce * c, -we, we, 0), gn_random(ce, -0.2f, 0.2f, 0),
        CU_ACT_NONE, CU_ACT_HSWISH,
        gn_random((size_t)k * k * ce, -0.3f, 0.3f, 0), gn_random(ce, -0.2f, 0.2f, 0),
        CU_ACT_NONE, rand_act(),
        gn_random((size_t)cs * ce, -0.5f, 0.5f, 0), gn_random(cs, -0.2f, 0.2f, 0),
        CU_ACT_NONE, CU_ACT_RELU,
        gn_random((size_t)ce * cs, -0.5f, 0.5f, 0), gn_random(ce, -0.2f, 0.2f, 0),
        CU_ACT_NONE, CU_ACT_LOGISTIC,
        gn_random((size_t)c * ce, -wp, wp, 0), gn_random(c, -0.2f, 0.2f, 0),
        CU_ACT_NONE, rand_act() == CU_ACT_LOGISTIC ? CU_ACT_RELU6 : CU_ACT_NONE,
        spec[3], spec[3] && gn_u32() % 2 ? CU_ACT_RELU : CU_ACT_NONE,
    };
}

/* The block's weights on the device (same struct, device pointers). */
static struct cu_ir_block device_block(const struct cu_ir_block *h, int c)
{
    struct cu_ir_block d = *h;
    d.we = gn_up(h->we, (size_t)h->ce * c, 0);
    d.be = gn_up(h->be, h->ce, 0);
    d.wd = gn_up(h->wd, (size_t)h->k * h->k * h->ce, 0);
    d.bd = gn_up(h->bd, h->ce, 0);
    d.w1 = gn_up(h->w1, (size_t)h->cs * h->ce, 0);
    d.b1 = gn_up(h->b1, h->cs, 0);
    d.w2 = gn_up(h->w2, (size_t)h->ce * h->cs, 0);
    d.b2 = gn_up(h->b2, h->ce, 0);
    d.wp = gn_up(h->wp, (size_t)c * h->ce, 0);
    d.bp = gn_up(h->bp, c, 0);
    return d;
}

static void free_block(struct cu_ir_block *b, int dev)
{
    const void *p[] = { b->we, b->be, b->wd, b->bd, b->w1, b->b1, b->w2, b->b2, b->wp, b->bp };
    if (dev) {
        gn_free_device(p, sizeof p / sizeof p[0]);
        return;
    }
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free((void *)p[i]);
}

Test(g_net_ops_block, ir_chain)
{
    gn_seed("ir_chain");
    static const struct chain_case cases[] = {
        { 3, 16, 16, 32, 3, { { 128, 5, 32, 1 }, { 128, 5, 32, 1 }, { 96, 5, 24, 1 } } },
        { 2, 9, 16, 32, 2, { { 128, 5, 32, 1 }, { 96, 5, 24, 1 } } },
        { 2, 8, 12, 16, 2, { { 48, 3, 8, 0 }, { 64, 5, 16, 1 } } },
        { 5, 4, 4, 16, 1, { { 32, 3, 4, 1 } } },
    };
    for (int f16 = 0; f16 <= 1; f16++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const struct chain_case *q = &cases[i];
            struct cu_ir_args h = { .n = q->n, .h = q->h, .w = q->w, .c = q->c,
                                    .n_blocks = q->n_blocks };
            for (int b = 0; b < q->n_blocks; b++)
                random_block(&h.b[b], q->c, q->b[b]);
            const size_t count = (size_t)q->n * q->h * q->w * q->c;
            float *in = gn_random(count, -2, 2, f16), *want = malloc(count * 4);
            cr_assert(want);
            h.in = in;
            h.out = want;
            cr_assert_eq(ref_ir_chain(&h), 0);
            struct cu_ir_args d = h;
            for (int b = 0; b < q->n_blocks; b++)
                d.b[b] = device_block(&h.b[b], q->c);
            d.in = gn_up(in, count, f16);
            d.out = gn_poisoned(count, f16);
            cr_assert(cu_ir_smem(&d) > 0, "case %zu: the kernel refuses its geometry", i);
            cr_assert_eq(cu_ir_chain(&d, f16, 0), 0, "case %zu", i);
            gn_check("ir_chain", i, d.out, want, count, f16, 10);
            cudaFree((void *)d.in);
            cudaFree(d.out);
            for (int b = 0; b < q->n_blocks; b++) {
                free_block(&d.b[b], 1);
                free_block(&h.b[b], 0);
            }
            free(in);
            free(want);
        }
}

Test(g_net_ops_block, ir_chain_refuses_what_it_cannot_take)
{
    gn_seed("ir_chain_refuses");
    const int spec[4] = { 32, 3, 8, 1 };
    struct cu_ir_args a = { .n = 1, .h = 4, .w = 4, .c = 16, .n_blocks = 1 };
    random_block(&a.b[0], 16, spec);
    float *buf = gn_poisoned(32 * 32 * 16, 0);
    a.in = a.out = buf;
    cr_assert(cu_ir_smem(&a) > 0);
    struct cu_ir_args bad = a;
    bad.w = 17;                             /* wider than a thread's row */
    cr_assert_eq(cu_ir_smem(&bad), 0);
    cr_assert_eq(cu_ir_chain(&bad, 0, 0), VR_EINVAL);
    bad = a;
    bad.b[0].ce = 40;                       /* not a multiple of 16 */
    cr_assert_eq(cu_ir_chain(&bad, 0, 0), VR_EINVAL);
    bad = a;
    bad.b[0].k = 7;                         /* 3 and 5 only */
    cr_assert_eq(cu_ir_chain(&bad, 0, 0), VR_EINVAL);
    bad = a;
    bad.h = 3; bad.w = 4;                   /* 12 pixels: not a multiple of 16 */
    cr_assert_eq(cu_ir_chain(&bad, 0, 0), VR_EINVAL);
    bad = a;
    bad.n_blocks = CU_IR_MAX_BLOCKS + 1;
    cr_assert_eq(cu_ir_chain(&bad, 0, 0), VR_EINVAL);
    cr_assert_eq(ref_ir_chain(&bad), VR_EINVAL);
    free_block(&a.b[0], 0);
    cudaFree(buf);
}

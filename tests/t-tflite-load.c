/*
 * t-model-load.c - the two shipped MediaPipe selfie models and the crafted
 * seeds in tests/data/fuzz-seeds/ load into the op graph that kernels/net/net_exec_ref.c
 * runs: op mix, sizes, weight layouts, options (padding, strides, resize
 * mode, the custom transpose conv), the file hash, and float16 weights
 * decoded exactly (subnormals included; inf and NaN refused).
 *
 * The expected op counts come from an independent dump of the files
 * (docs/notes/model.md), not from the loader.
 */
#define _GNU_SOURCE /* memmem */
#include "model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static const char *data_dir(void)
{
    const char *d = getenv("VR_DATA_DIR");
    return d && *d ? d : ".";
}

static struct model *load(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(), rel);
    struct model *m = NULL;
    vr_err e = { 0 };
    int rc = model_load(path, &m, &e);
    cr_assert_eq(rc, 0, "%s: %s", path, e.msg);
    cr_assert_not_null(m);
    return m;
}

static uint8_t *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(), rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_gt(n, 0);
    rewind(f);
    uint8_t *b = malloc((size_t)n);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void count_kinds(const struct model *m, int counts[MOP_COUNT])
{
    memset(counts, 0, sizeof(int) * MOP_COUNT);
    for (int i = 0; i < m->n_ops; i++) {
        cr_assert_lt((int)m->ops[i].kind, MOP_COUNT);
        counts[m->ops[i].kind]++;
    }
}

static int find_op(const struct model *m, enum model_op_kind k, int nth)
{
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].kind == k && nth-- == 0)
            return i;
    return -1;
}

/* Every op reads the graph input, a constant, or an earlier op's output. */
static void check_dataflow(const struct model *m)
{
    char *made = calloc((size_t)m->n_tensors, 1);
    cr_assert_not_null(made);
    made[m->input] = 1;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        for (int k = 0; k < o->n_in; k++) {
            int t = o->in[k];
            cr_assert(t >= 0 && t < m->n_tensors, "op %d input %d", i, k);
            cr_assert(made[t] || m->tensors[t].data, "op %d reads tensor %d before it exists",
                      i, t);
        }
        for (int k = o->n_in; k < 3; k++)
            cr_assert_eq(o->in[k], -1, "op %d: unused input slot %d set", i, k);
        cr_assert_null(m->tensors[o->out].data, "op %d writes a constant", i);
        cr_assert_not(made[o->out], "op %d redefines tensor %d", i, o->out);
        made[o->out] = 1;
    }
    cr_assert(made[m->output], "graph output never produced");
    free(made);
}

static void check_weights_finite(const struct model *m)
{
    size_t nonzero = 0, total = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const struct model_tensor *t = &m->tensors[i];
        if (!t->data)
            continue;
        for (size_t k = 0; k < t->count; k++) {
            cr_assert(isfinite(t->data[k]), "tensor %d (%s)[%zu] not finite", i, t->name, k);
            nonzero += t->data[k] != 0.0f;
        }
        total += t->count;
    }
    cr_assert_gt(total, 100000, "only %zu weights", total);
    cr_assert_gt(nonzero, total / 2, "%zu of %zu weights are non-zero", nonzero, total);
}

static uint64_t fnv1a(const uint8_t *b, size_t n)
{
    uint64_t h = 14695981039346656037ull;   /* FNV-1a 64 offset basis */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;  /* FNV 64 prime */
    return h;
}

/* ---- the shipped models ---- */

struct expect {
    const char *file;
    int h, w;
    int avg_pools, means;
    int resize[3][2];   /* RESIZE_BILINEAR targets, in order */
};

static const struct expect models[] = {
    { "models/selfie_segmentation.tflite", 256, 256, 10, 0,
      { { 32, 32 }, { 64, 64 }, { 128, 128 } } },
    { "models/selfie_segmentation_landscape.tflite", 144, 256, 0, 10,
      { { 18, 32 }, { 36, 64 }, { 72, 128 } } },
};

static void check_selfie(const struct expect *x)
{
    struct model *m = load(x->file);

    cr_assert_eq(m->in_h, x->h);
    cr_assert_eq(m->in_w, x->w);
    cr_assert_eq(m->in_c, 3);
    cr_assert_eq(m->out_c, 1);
    const struct model_tensor *y = &m->tensors[m->output];
    cr_assert_eq(y->rank, 4);
    cr_assert(y->shape[0] == 1 && y->shape[1] == x->h && y->shape[2] == x->w &&
              y->shape[3] == 1, "output [%d,%d,%d,%d]", y->shape[0], y->shape[1],
              y->shape[2], y->shape[3]);

    /* 246 ops in the file, 110 of them DEQUANTIZE folded into constants. */
    int c[MOP_COUNT];
    count_kinds(m, c);
    cr_assert_eq(m->n_ops, 136);
    cr_assert_eq(c[MOP_CONV_2D], 43);
    cr_assert_eq(c[MOP_DEPTHWISE_CONV_2D], 11);
    cr_assert_eq(c[MOP_HARD_SWISH], 11);
    cr_assert_eq(c[MOP_RELU], 22);
    cr_assert_eq(c[MOP_LOGISTIC], 11);
    cr_assert_eq(c[MOP_AVERAGE_POOL_2D], x->avg_pools);
    cr_assert_eq(c[MOP_MEAN], x->means);
    cr_assert_eq(c[MOP_MUL], 10);
    cr_assert_eq(c[MOP_ADD], 14);
    cr_assert_eq(c[MOP_RESIZE_BILINEAR], 3);
    cr_assert_eq(c[MOP_TRANSPOSE_CONV_BIAS], 1);

    /* First op: 3x3 stride-2 SAME conv on the input, OHWI weights [16][3][3][3]. */
    const struct model_op *o = &m->ops[0];
    cr_assert_eq(o->kind, MOP_CONV_2D);
    cr_assert_eq(o->in[0], m->input);
    cr_assert_eq(o->n_in, 3);
    const struct model_tensor *w = &m->tensors[o->in[1]], *b = &m->tensors[o->in[2]];
    cr_assert_eq(w->rank, 4);
    cr_assert(w->shape[0] == 16 && w->shape[1] == 3 && w->shape[2] == 3 && w->shape[3] == 3);
    cr_assert_eq(w->count, 16 * 27);
    cr_assert_not_null(w->data);
    cr_assert(b->rank == 1 && b->shape[0] == 16 && b->data);
    cr_assert_eq(o->padding, MPAD_SAME);
    cr_assert(o->stride_h == 2 && o->stride_w == 2 && o->dilation_h == 1 && o->dilation_w == 1);
    cr_assert_eq(o->act, MACT_NONE);
    cr_assert_eq(m->ops[1].kind, MOP_HARD_SWISH);

    /* Depthwise: [1][kh][kw][C], multiplier 1. */
    o = &m->ops[find_op(m, MOP_DEPTHWISE_CONV_2D, 0)];
    w = &m->tensors[o->in[1]];
    cr_assert(w->shape[0] == 1 && w->shape[1] == 3 && w->shape[2] == 3 && w->shape[3] == 16);
    cr_assert_eq(o->depth_multiplier, 1);

    /* Squeeze-excite: global pool or mean with kept dims, then MUL broadcasting [1,1,1,C]. */
    int gp = find_op(m, x->means ? MOP_MEAN : MOP_AVERAGE_POOL_2D, 0);
    cr_assert_geq(gp, 0);
    o = &m->ops[gp];
    cr_assert_eq(o->n_in, 1);
    const struct model_tensor *gin = &m->tensors[o->in[0]], *gout = &m->tensors[o->out];
    cr_assert(gout->rank == 4 && gout->shape[1] == 1 && gout->shape[2] == 1);
    if (x->means) {
        cr_assert_eq(o->keep_dims, 1);
    } else {
        cr_assert_eq(o->padding, MPAD_VALID);
        cr_assert(o->filter_h == gin->shape[1] && o->filter_w == gin->shape[2]);
    }
    o = &m->ops[find_op(m, MOP_MUL, 0)];
    cr_assert_eq(o->n_in, 2);
    const struct model_tensor *s = &m->tensors[o->in[1]];
    cr_assert(s->shape[1] == 1 && s->shape[2] == 1 &&
              s->shape[3] == m->tensors[o->in[0]].shape[3]);

    /* Upsampling: half-pixel bilinear to the sizes stored as INT32 constants. */
    for (int i = 0; i < 3; i++) {
        o = &m->ops[find_op(m, MOP_RESIZE_BILINEAR, i)];
        cr_assert_eq(o->half_pixel_centers, 1);
        cr_assert_eq(o->align_corners, 0);
        cr_assert(o->out_h == x->resize[i][0] && o->out_w == x->resize[i][1],
                  "resize %d: %dx%d", i, o->out_h, o->out_w);
        cr_assert_eq(o->n_in, 1);
        cr_assert_eq(o->in[1], -1);
    }

    /* Last two ops: the 2x2 stride-2 transpose conv (custom C enum 1 = SAME), sigmoid. */
    o = &m->ops[m->n_ops - 2];
    cr_assert_eq(o->kind, MOP_TRANSPOSE_CONV_BIAS);
    cr_assert_eq(o->padding, MPAD_SAME);
    cr_assert(o->stride_h == 2 && o->stride_w == 2);
    w = &m->tensors[o->in[1]];
    cr_assert(w->shape[0] == 1 && w->shape[1] == 2 && w->shape[2] == 2 && w->shape[3] == 16);
    cr_assert(m->tensors[o->in[2]].count == 1 && m->tensors[o->in[2]].data);
    cr_assert_eq(m->ops[m->n_ops - 1].kind, MOP_LOGISTIC);
    cr_assert_eq(m->ops[m->n_ops - 1].out, m->output);

    check_dataflow(m);
    check_weights_finite(m);

    /* Hash: FNV-1a 64 of the file bytes, 16 lowercase hex digits. */
    size_t len;
    uint8_t *bytes = slurp(x->file, &len);
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)fnv1a(bytes, len));
    cr_assert_str_eq(m->hash, want);
    free(bytes);

    model_free(&m);
    cr_assert_null(m);
}

Test(tflite_load, selfie_square_loads)
{
    check_selfie(&models[0]);
}

Test(tflite_load, selfie_landscape_loads)
{
    check_selfie(&models[1]);
}

Test(tflite_load, hashes_differ_and_match_memory_load)
{
    struct model *a = load(models[0].file), *b = load(models[1].file);
    cr_assert_str_neq(a->hash, b->hash);
    size_t len;
    uint8_t *bytes = slurp(models[0].file, &len);
    struct model *c = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load_mem(bytes, len, "mem", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(a->hash, c->hash);
    cr_assert_eq(a->n_ops, c->n_ops);
    /* The model owns copies: the caller's buffer can go. */
    memset(bytes, 0, len);
    free(bytes);
    cr_assert_eq(memcmp(a->tensors[a->ops[0].in[1]].data, c->tensors[c->ops[0].in[1]].data,
                        16 * 27 * sizeof(float)), 0);
    model_free(&a);
    model_free(&b);
    model_free(&c);
    model_free(&c);  /* NULL is fine */
    model_free(NULL);
}

Test(tflite_load, op_names)
{
    cr_assert_str_eq(model_op_name(MOP_CONV_2D), "CONV_2D");
    cr_assert_str_eq(model_op_name(MOP_RESIZE_BILINEAR), "RESIZE_BILINEAR");
    cr_assert_str_eq(model_op_name(MOP_TRANSPOSE_CONV_BIAS), "Convolution2DTransposeBias");
    for (int k = 0; k < MOP_COUNT; k++)
        cr_assert(model_op_name(k) && *model_op_name(k));
    cr_assert_str_eq(model_op_name(MOP_COUNT), "unknown");
}

/* ---- the crafted seeds (tests/data/model/mkseeds.py) ---- */

/* The generator's constant pattern: ((i*37 + seed*11) % 17 - 8) / 16. */
static float seed_value(size_t i, int seed)
{
    return (float)((int)((i * 37 + (size_t)seed * 11) % 17) - 8) / 16.0f;
}

static void check_tiny(struct model *m, enum model_op_kind pool)
{
    static const enum model_op_kind order[] = {
        MOP_CONV_2D, MOP_HARD_SWISH, MOP_DEPTHWISE_CONV_2D, 0 /* pool */, MOP_LOGISTIC,
        MOP_MUL, MOP_RESIZE_BILINEAR, MOP_ADD, MOP_TRANSPOSE_CONV_BIAS, MOP_LOGISTIC,
    };
    cr_assert_eq(m->n_ops, 10);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(m->ops[i].kind, i == 3 ? pool : order[i], "op %d is %s", i,
                     model_op_name(m->ops[i].kind));
    cr_assert(m->in_h == 8 && m->in_w == 8 && m->in_c == 3 && m->out_c == 1);
    check_dataflow(m);

    /* fp16 weights behind DEQUANTIZE (seed 1) and an fp32 bias (seed 2). */
    const struct model_tensor *w = &m->tensors[m->ops[0].in[1]];
    const struct model_tensor *b = &m->tensors[m->ops[0].in[2]];
    cr_assert_str_eq(w->name, "conv0/w");
    cr_assert_eq(w->count, 4 * 27);
    for (size_t i = 0; i < w->count; i++)
        cr_assert_eq(w->data[i], seed_value(i, 1), "w[%zu] = %g", i, w->data[i]);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(b->data[i], seed_value(i, 2));

    const struct model_op *dw = &m->ops[2];
    cr_assert(dw->stride_h == 2 && dw->act == MACT_RELU && dw->depth_multiplier == 1);
    cr_assert_eq(m->ops[7].act, MACT_RELU);   /* ADD's fused activation */
    cr_assert(m->ops[6].out_h == 4 && m->ops[6].half_pixel_centers == 1);
    const struct model_op *t = &m->ops[8];
    cr_assert(t->padding == MPAD_SAME && t->stride_h == 2 && t->stride_w == 2);
}

Test(tflite_load, seed_tiny_every_op_kind)
{
    struct model *m = load("tests/data/fuzz-seeds/tiny.tflite");
    check_tiny(m, MOP_AVERAGE_POOL_2D);
    const struct model_op *p = &m->ops[3];
    cr_assert(p->filter_h == 2 && p->filter_w == 2 && p->stride_h == 2 &&
              p->padding == MPAD_VALID);
    model_free(&m);
}

Test(tflite_load, seed_mean_keep_dims)
{
    struct model *m = load("tests/data/fuzz-seeds/tiny-mean.tflite");
    check_tiny(m, MOP_MEAN);
    cr_assert_eq(m->ops[3].keep_dims, 1);
    cr_assert_eq(m->ops[3].n_in, 1);
    model_free(&m);
}

Test(tflite_load, seed_external_buffer_and_old_opcodes)
{
    /* Buffer data stored after the flatbuffer (offset/size fields). */
    struct model *m = load("tests/data/fuzz-seeds/tiny-external.tflite");
    check_tiny(m, MOP_AVERAGE_POOL_2D);
    model_free(&m);
    /* Opcodes with only the deprecated byte field, as older converters wrote. */
    m = load("tests/data/fuzz-seeds/tiny-oldcodes.tflite");
    cr_assert_eq(m->n_ops, 11);
    cr_assert_eq(m->ops[8].kind, MOP_RELU);
    model_free(&m);
}

Test(tflite_load, seed_sub_is_unsupported)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/fuzz-seeds/tiny-sub.tflite", data_dir());
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load(path, &m, &e), VR_ENOTSUP);
    cr_assert_null(m);
    cr_assert(strstr(e.msg, "unsupported operator SUB (builtin 41)"), "%s", e.msg);
    cr_assert(strstr(e.msg, "tiny-sub.tflite"), "%s", e.msg);
}

/* ---- float16 decoding, through a patched seed ---- */

/* conv0/w's first three fp16 values (0.1875, 0.375, -0.5), little-endian. */
static const uint8_t w_head[6] = { 0x00, 0x32, 0x00, 0x36, 0x00, 0xb8 };

static int load_patched_half(uint16_t h0, uint16_t h1, struct model **m, vr_err *e)
{
    size_t len;
    uint8_t *b = slurp("tests/data/fuzz-seeds/tiny.tflite", &len);
    uint8_t *at = memmem(b, len, w_head, sizeof w_head);
    /* The first match is element 0 of conv0/w (the pattern recurs every 17
     * values); the callers check w[0..2], so a wrong match fails loudly. */
    cr_assert_not_null(at, "fp16 weights not found in the seed");
    at[0] = (uint8_t)h0;
    at[1] = (uint8_t)(h0 >> 8);
    at[2] = (uint8_t)h1;
    at[3] = (uint8_t)(h1 >> 8);
    int rc = model_load_mem(b, len, "patched", m, e);
    free(b);
    return rc;
}

Test(tflite_load, float16_subnormal_and_extremes)
{
    static const struct { uint16_t h; float f; } cases[] = {
        { 0x0001, 0x1p-24f },               /* smallest subnormal */
        { 0x03ff, 1023 * 0x1p-24f },        /* largest subnormal */
        { 0x8001, -0x1p-24f },
        { 0x0400, 0x1p-14f },               /* smallest normal */
        { 0x7bff, 65504.0f },               /* largest finite */
        { 0xfbff, -65504.0f },
        { 0x3c00, 1.0f },
        { 0x3555, 0.333251953125f },
        { 0x8000, -0.0f },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model *m = NULL;
        vr_err e = { 0 };
        cr_assert_eq(load_patched_half(cases[i].h, 0x3c00, &m, &e), 0, "%s", e.msg);
        const float *w = m->tensors[m->ops[0].in[1]].data;
        cr_assert_eq(w[0], cases[i].f, "0x%04x -> %a, want %a", cases[i].h, w[0], cases[i].f);
        cr_assert_eq(signbit(w[0]) != 0, (cases[i].h & 0x8000) != 0);
        cr_assert_eq(w[1], 1.0f);
        cr_assert_eq(w[2], -0.5f);
        model_free(&m);
    }
}

Test(tflite_load, float16_inf_nan_refused)
{
    static const uint16_t bad[] = { 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct model *m = NULL;
        vr_err e = { 0 };
        cr_assert_eq(load_patched_half(0x3c00, bad[i], &m, &e), VR_EFORMAT, "0x%04x", bad[i]);
        cr_assert_null(m);
        cr_assert(strstr(e.msg, "not finite") && strstr(e.msg, "conv0/w_fp16"), "%s", e.msg);
    }
}

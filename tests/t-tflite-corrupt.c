/*
 * t-model-corrupt.c - damaged and hostile model files: truncated, bit-flipped,
 * empty, wrong magic, and surgically patched (unsupported op, buffer index
 * out of range, use before definition, weights that do not fit the input).
 * Every load must return a negative code with a message, or a model that is
 * consistent (indices in range, shapes matching counts); never crash. Runs
 * in about a second in total.
 *
 * The patches walk the flatbuffer of the real model with the few trusted
 * helpers below (these files are known-good before the patch).
 */
#define _GNU_SOURCE /* memmem */
#include "model.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *SQUARE = "models/selfie_segmentation.tflite";
static const char *TINY = "tests/data/fuzz-seeds/tiny.tflite";

/* ---- helpers ---- */

static uint8_t *slurp(const char *rel, size_t *len)
{
    const char *d = getenv("VR_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d && *d ? d : ".", rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_gt(n, 8);
    rewind(f);
    uint8_t *b = malloc((size_t)n);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* A load either fails properly or yields a self-consistent model. */
static int try_load(const uint8_t *b, size_t len, const char *what)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    int rc = model_load_mem(b, len, "x.tflite", &m, &e);
    if (rc) {
        cr_assert_lt(rc, 0, "%s: rc %d", what, rc);
        cr_assert_null(m, "%s", what);
        cr_assert_eq(e.code, rc, "%s", what);
        cr_assert(strncmp(e.msg, "x.tflite: ", 10) == 0 && strlen(e.msg) > 12,
                  "%s: message \"%s\"", what, e.msg);
        return rc;
    }
    cr_assert(m->input >= 0 && m->input < m->n_tensors, "%s", what);
    cr_assert(m->output >= 0 && m->output < m->n_tensors, "%s", what);
    cr_assert(m->n_ops > 0 && m->in_h > 0 && m->in_w > 0 && m->in_c > 0 && m->out_c > 0);
    for (int i = 0; i < m->n_tensors; i++) {
        const struct model_tensor *t = &m->tensors[i];
        size_t c = 1;
        cr_assert(t->rank >= 0 && t->rank <= 4, "%s", what);
        for (int k = 0; k < t->rank; k++) {
            cr_assert(t->shape[k] >= 1 && t->shape[k] <= MODEL_MAX_DIM, "%s", what);
            c *= (size_t)t->shape[k];
        }
        cr_assert_eq(c, t->count, "%s", what);
    }
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        cr_assert(o->n_in >= 1 && o->n_in <= 3, "%s", what);
        for (int k = 0; k < o->n_in; k++)
            cr_assert(o->in[k] >= 0 && o->in[k] < m->n_tensors, "%s", what);
        cr_assert(o->out >= 0 && o->out < m->n_tensors, "%s", what);
    }
    model_free(&m);
    return 0;
}

/* Trusted flatbuffer walk (little-endian host, valid input). */
static uint32_t u32(const uint8_t *b, size_t p)
{
    return (uint32_t)b[p] | (uint32_t)b[p + 1] << 8 | (uint32_t)b[p + 2] << 16 |
           (uint32_t)b[p + 3] << 24;
}

static void put32(uint8_t *b, size_t p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[p + i] = (uint8_t)(v >> (8 * i));
}

static size_t fb_table(const uint8_t *b, size_t ref)
{
    return ref + u32(b, ref);
}

static size_t fb_field(const uint8_t *b, size_t t, int id)
{
    size_t vt = t - (size_t)(int32_t)u32(b, t);
    unsigned vlen = b[vt] | b[vt + 1] << 8;
    if (4 + 2 * (unsigned)id + 2 > vlen)
        return 0;
    unsigned off = b[vt + 4 + 2 * id] | b[vt + 5 + 2 * id] << 8;
    return off ? t + off : 0;
}

/* Element data of the vector in field `id` of table t; *n its length. */
static size_t fb_vec(const uint8_t *b, size_t t, int id, uint32_t *n)
{
    size_t f = fb_field(b, t, id);
    cr_assert_neq(f, 0, "vector field %d absent", id);
    size_t v = f + u32(b, f);
    *n = u32(b, v);
    return v + 4;
}

static size_t nth_table(const uint8_t *b, size_t t, int id, uint32_t i)
{
    uint32_t n;
    size_t data = fb_vec(b, t, id, &n);
    cr_assert_lt(i, n);
    return fb_table(b, data + 4 * (size_t)i);
}

static size_t subgraph(const uint8_t *b)
{
    return nth_table(b, fb_table(b, 0), 2, 0);
}

/* Position of element k of op i's input list (file op numbering). */
static size_t op_input(const uint8_t *b, uint32_t i, uint32_t k)
{
    uint32_t n;
    size_t data = fb_vec(b, nth_table(b, subgraph(b), 3, i), 1, &n);
    cr_assert_lt(k, n);
    return data + 4 * (size_t)k;
}

static int load_expect_error(const uint8_t *b, size_t len, int code, const char *needle)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    int rc = model_load_mem(b, len, "p.tflite", &m, &e);
    cr_assert_eq(rc, code, "rc %d (%s): %s", rc, vr_err_name(rc), e.msg);
    cr_assert_null(m);
    cr_assert(strstr(e.msg, needle), "\"%s\" lacks \"%s\"", e.msg, needle);
    return rc;
}

/* ---- damaged files ---- */

Test(tflite_corrupt, truncated_everywhere)
{
    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    char what[64];
    for (size_t n = 0; n <= 64; n++) {
        snprintf(what, sizeof what, "truncated to %zu", n);
        cr_assert_lt(try_load(b, n, what), 0, "%s loaded", what);
    }
    for (size_t n = 65; n < len; n += 997) {
        /* A private copy of exactly n bytes so ASan sees any over-read. */
        uint8_t *c = malloc(n);
        memcpy(c, b, n);
        snprintf(what, sizeof what, "truncated to %zu", n);
        cr_assert_lt(try_load(c, n, what), 0, "%s loaded", what);
        free(c);
    }
    free(b);
}

/* Flips `n` single bits of `file` one at a time (xorshift64: the same flips
 * every run), half of them in the first `hot` bytes, where tables and
 * vtables live; counts the loads that failed and those that loaded. */
static void flip_run(const char *file, int n, size_t hot, int *failed, int *loaded)
{
    size_t len;
    uint8_t *b = slurp(file, &len);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    char what[96];
    if (hot > len)
        hot = len;
    for (int i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        size_t pos = (i & 1) ? (size_t)(s % len) : (size_t)(s % hot);
        uint8_t bit = (uint8_t)(1u << ((s >> 32) & 7));
        b[pos] ^= bit;
        snprintf(what, sizeof what, "%s: flip %d at %zu", file, i, pos);
        if (try_load(b, len, what))
            (*failed)++;
        else
            (*loaded)++;
        b[pos] ^= bit;
    }
    free(b);
}

Test(tflite_corrupt, bit_flips)
{
    int failed = 0, loaded = 0;
    flip_run(SQUARE, 400, 4096, &failed, &loaded);
    /* Both outcomes must occur: a flip in weight data still loads. */
    cr_assert_gt(failed, 0);
    cr_assert_gt(loaded, 0);
    failed = loaded = 0;
    flip_run(TINY, 2000, 1024, &failed, &loaded);
    cr_assert_gt(failed, 0);
    cr_assert_gt(loaded, 0);
}

Test(tflite_corrupt, random_garbage_after_header)
{
    uint8_t buf[512];
    uint64_t s = 42;
    for (int i = 0; i < 200; i++) {
        for (size_t k = 0; k < sizeof buf; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            buf[k] = (uint8_t)(s >> 56);
        }
        memcpy(buf + 4, "TFL3", 4);
        put32(buf, 0, (uint32_t)(i * 4) % sizeof buf);
        cr_assert_lt(try_load(buf, sizeof buf, "garbage"), 0);
    }
}

Test(tflite_corrupt, empty_missing_and_wrong_magic)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load_mem((const uint8_t *)"", 0, "z.tflite", &m, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "z.tflite: empty file"), "%s", e.msg);

    char dir[] = "/tmp/vrtest-model-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/empty.tflite", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(model_load(path, &m, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "empty.tflite: empty file"), "%s", e.msg);
    unlink(path);

    snprintf(path, sizeof path, "%s/missing.tflite", dir);
    cr_assert_eq(model_load(path, &m, &e), VR_ENOENT);
    cr_assert(strstr(e.msg, "missing.tflite") && strstr(e.msg, "cannot open"), "%s", e.msg);
    cr_assert_eq(model_load(dir, &m, &e), VR_EIO);   /* a directory */
    cr_assert_null(m);

    /* Over MODEL_MAX_FILE: refused from its size, before reading (sparse file). */
    snprintf(path, sizeof path, "%s/huge.tflite", dir);
    f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)MODEL_MAX_FILE + 1), 0);
    fclose(f);
    cr_assert_eq(model_load(path, &m, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "huge.tflite: file is 67108865 bytes, limit 67108864"), "%s",
              e.msg);
    unlink(path);
    rmdir(dir);

    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    memcpy(b + 4, "TFL2", 4);
    load_expect_error(b, len, VR_EFORMAT,
                      "not a TensorFlow Lite model (file identifier \"TFL2\"");
    memcpy(b + 4, "\x89PNG", 4);
    load_expect_error(b, len, VR_EFORMAT, "identifier \"?PNG\"");
    free(b);
}

/* ---- surgical patches ---- */

Test(tflite_corrupt, unsupported_op_named)
{
    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    /* Operator code 0 is CONV_2D; op 2 in the file is the first conv. */
    size_t oc = nth_table(b, fb_table(b, 0), 1, 0);
    size_t dep = fb_field(b, oc, 0), code = fb_field(b, oc, 3);
    cr_assert(dep || code, "no opcode field to patch");
    if (dep)
        b[dep] = 41;
    if (code)
        put32(b, code, 41);
    load_expect_error(b, len, VR_ENOTSUP,
                      "p.tflite: op 2: unsupported operator SUB (builtin 41)");
    if (code)
        put32(b, code, 200);
    if (dep)
        b[dep] = 127;
    load_expect_error(b, len, VR_ENOTSUP, "unsupported operator");
    free(b);
}

Test(tflite_corrupt, buffer_index_out_of_range)
{
    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    size_t t1 = nth_table(b, subgraph(b), 0, 1);   /* first conv's fp16 weights */
    size_t f = fb_field(b, t1, 2);
    cr_assert_neq(f, 0);
    put32(b, f, 100000);
    load_expect_error(b, len, VR_EFORMAT, "tensor 1 (");
    load_expect_error(b, len, VR_EFORMAT, "buffer 100000 out of range");
    put32(b, f, 0x80000000u);   /* negative as int32 */
    load_expect_error(b, len, VR_EFORMAT, "out of range");
    free(b);
}

Test(tflite_corrupt, tensor_index_out_of_range)
{
    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    put32(b, op_input(b, 2, 0), 360);   /* 360 tensors */
    load_expect_error(b, len, VR_EFORMAT, "tensor index 360 out of range");
    put32(b, op_input(b, 2, 0), (uint32_t)-7);
    load_expect_error(b, len, VR_EFORMAT, "tensor index -7 out of range");
    free(b);
}

Test(tflite_corrupt, use_before_definition_and_cycle)
{
    size_t len;
    uint8_t *b = slurp(SQUARE, &len);
    /* op 2 (first conv) reading tensor 4, which op 3 produces later. */
    size_t p = op_input(b, 2, 0);
    put32(b, p, 4);
    load_expect_error(b, len, VR_EFORMAT,
                      "op 2 (CONV_2D): input tensor 4 is used before it is produced");
    /* op 2 reading its own output: a cycle. */
    put32(b, p, 3);
    load_expect_error(b, len, VR_EFORMAT, "used before it is produced");
    /* op 3 (HARD_SWISH) writing the graph input: a second definition. */
    put32(b, p, 0);
    uint32_t n;
    size_t outs = fb_vec(b, nth_table(b, subgraph(b), 3, 3), 2, &n);
    put32(b, outs, 0);
    load_expect_error(b, len, VR_EFORMAT, "output tensor 0 is already defined");
    free(b);
}

Test(tflite_corrupt, weights_must_fit_the_input)
{
    size_t len;
    uint8_t *b = slurp(TINY, &len);
    /* tiny.tflite: op 1 is conv0 (input 0, weights 2, bias 3); tensor 17 is the
     * transpose conv's weights [1,2,2,4]: as conv0's weights they take 4 channels. */
    put32(b, op_input(b, 1, 1), 17);
    load_expect_error(b, len, VR_EFORMAT,
                      "op 1 (CONV_2D): weights [1,2,2,4] take 4 input channels, input has 3");
    put32(b, op_input(b, 1, 1), 2);
    /* The bias as weights: rank 1, not 4. */
    put32(b, op_input(b, 1, 1), 3);
    load_expect_error(b, len, VR_EFORMAT, "weights tensor 3 has rank 1, 4 expected");
    put32(b, op_input(b, 1, 1), 2);
    /* The raw fp16 tensor, skipping its DEQUANTIZE: wrong type. */
    put32(b, op_input(b, 1, 1), 1);
    load_expect_error(b, len, VR_EFORMAT, "weights tensor 1 is FLOAT16, FLOAT32 expected");
    put32(b, op_input(b, 1, 1), 2);
    /* A constant as the activation input. */
    put32(b, op_input(b, 1, 0), 3);
    load_expect_error(b, len, VR_ENOTSUP, "input tensor 3 is a constant");
    put32(b, op_input(b, 1, 0), 0);
    cr_assert_eq(try_load(b, len, "restored"), 0);
    free(b);
}

Test(tflite_corrupt, shape_and_option_checks)
{
    size_t len;
    uint8_t *b = slurp(TINY, &len);
    /* Output tensor shape that the op cannot produce: conv0's output [1,4,4,4]. */
    size_t t4 = nth_table(b, subgraph(b), 0, 4);
    uint32_t n;
    size_t shp = fb_vec(b, t4, 0, &n);
    cr_assert_eq(n, 4);
    put32(b, shp + 4, 5);
    load_expect_error(b, len, VR_EFORMAT,
                      "output tensor 4 has shape [1,5,4,4], the op gives [1,4,4,4]");
    put32(b, shp + 4, 0);
    load_expect_error(b, len, VR_EFORMAT, "dimension 1 is 0");
    put32(b, shp + 4, MODEL_MAX_DIM + 1);
    load_expect_error(b, len, VR_EFORMAT, "must be 1..16384");
    put32(b, shp + 4, 4);
    cr_assert_eq(try_load(b, len, "restored"), 0);

    /* The transpose conv's custom options (a 12-byte vector): padding 0 is
     * kTfLitePaddingUnknown. */
    static const uint8_t opts[16] = { 12, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0 };
    uint8_t *o = memmem(b, len, opts, sizeof opts);
    cr_assert_not_null(o);
    o += 4;
    o[0] = 0;
    load_expect_error(b, len, VR_EFORMAT, "padding 0 unknown (1 SAME, 2 VALID)");
    o[0] = 2;   /* VALID: (4-1)*2+2 = 8, the same size here, so it loads */
    cr_assert_eq(try_load(b, len, "valid"), 0);
    o[0] = 1;
    o[4] = 0;   /* stride_w 0 */
    load_expect_error(b, len, VR_EFORMAT, "stride_w 0");
    free(b);
}

Test(tflite_corrupt, oversized_counts_refused_before_allocation)
{
    size_t len;
    uint8_t *b = slurp(TINY, &len);
    uint32_t n;
    /* Tensor count beyond MODEL_MAX_TENSORS. */
    size_t sg = subgraph(b);
    size_t tv = fb_vec(b, sg, 0, &n) - 4;
    put32(b, tv, MODEL_MAX_TENSORS + 1);
    load_expect_error(b, len, VR_EFORMAT, "tensors: 4097 entries, limit 4096");
    put32(b, tv, 0x7fffffff);
    load_expect_error(b, len, VR_EFORMAT, "limit");
    put32(b, tv, n + 1);   /* the next bytes taken as one more tensor offset */
    try_load(b, len, "one more tensor");
    put32(b, tv, n);
    /* Operator count, rank 5. */
    size_t ov = fb_vec(b, sg, 3, &n) - 4;
    put32(b, ov, MODEL_MAX_OPS + 1);
    load_expect_error(b, len, VR_EFORMAT, "operators: 4097 entries, limit 4096");
    put32(b, ov, n);
    size_t shp = fb_vec(b, nth_table(b, sg, 0, 0), 0, &n) - 4;
    put32(b, shp, 5);
    load_expect_error(b, len, VR_EFORMAT, "rank 5");
    free(b);
}

/* The pose detector's sparse weights (DENSIFY): a segment out of order and
 * an index past the row are named, never followed. Tensor 15 is conv2d_1's
 * [16,1,1,24] weights: CSR on the last dimension, uint8 segments (17) and
 * indices (96). */
Test(tflite_corrupt, sparse_arrays_checked)
{
    size_t len;
    uint8_t *b = slurp("models/pose_detection.tflite", &len);
    size_t t15 = nth_table(b, subgraph(b), 0, 15);
    size_t sp = fb_table(b, fb_field(b, t15, 6));
    size_t dim3 = nth_table(b, sp, 2, 3);
    uint32_t nseg, nind;
    size_t seg = fb_vec(b, fb_table(b, fb_field(b, dim3, 3)), 0, &nseg);
    size_t ind = fb_vec(b, fb_table(b, fb_field(b, dim3, 5)), 0, &nind);
    cr_assert(nseg == 17 && nind == 96 && b[seg + 16] == 96);
    uint8_t keep = b[seg + 1];
    b[seg + 1] = 200; /* row 0 ends past the 96 values */
    load_expect_error(b, len, VR_EFORMAT, "sparsity: row 0's segment out of order");
    b[seg + 1] = keep;
    keep = b[ind];
    b[ind] = 24; /* column 24 of 24 */
    load_expect_error(b, len, VR_EFORMAT, "index 24 beyond 24 columns");
    b[ind] = keep;
    cr_assert_eq(try_load(b, len, "restored"), 0);
    free(b);
}

/*
 * tflite.c - the TensorFlow Lite flatbuffer reader behind model.h.
 *
 * A tflite file is a flatbuffer: tables reached through 32-bit offsets, each
 * with a vtable of 16-bit field offsets, vectors prefixed by a 32-bit length.
 * This file reads it by hand, with every offset, vtable, vector length,
 * string and buffer range checked against the file size and against the
 * MODEL_MAX_* limits before it is used, so a truncated, corrupt or hostile
 * file yields an error naming what is wrong, never a crash or a huge
 * allocation. Absent fields take the schema's default (flatbuffer semantics).
 *
 * Loading goes in three passes over the first subgraph:
 *   1. tensors: shape (rank <= 4, dims 1..MODEL_MAX_DIM), type (FLOAT32,
 *      FLOAT16, INT32) and constant data, converted to float32 at once;
 *   2. operators, in file order: DEQUANTIZE of a constant copies its data to
 *      its output and disappears; every other op is checked (inputs defined
 *      earlier, weight shapes, output shape recomputed from the options) and
 *      appended to model->ops;
 *   3. the graph input and output.
 * Field ids follow tensorflow/lite/schema/schema.fbs; see docs/notes/model.md.
 */
#include "model.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- limits beyond model.h's (why: bound every count read from a file) ---- */
#define TFL_MAX_OPCODES  1024
#define TFL_MAX_BUFFERS  (2 * MODEL_MAX_TENSORS + 1)
#define TFL_MAX_IO       16          /* op or graph inputs/outputs */
#define TFL_MAX_ELEMS    (1u << 26)  /* elements of one tensor (256 MiB fp32) */
#define TFL_MAX_CUSTOM   64          /* custom op name length */
#define TFL_MAX_ACT      (1u << 28)  /* elements of all op outputs together */

/* Constants may take at most this many float32 elements per byte of file:
 * fp16 data converted (1 per 2 bytes) plus its DEQUANTIZE copy (1 more),
 * with room to spare; a sparse fp16 constant (DENSIFY) stores only its
 * non-zero values, so MediaPipe's pose detector needs 2.002 a byte: 4.
 * Why: a file of DEQUANTIZE ops all reading the same constant would
 * otherwise make thousands of copies. */
#define TFL_CONST_PER_BYTE 4

/* ---- schema constants ---- */
enum { TT_FLOAT32 = 0, TT_FLOAT16 = 1, TT_INT32 = 2 };

enum {
    BO_ADD = 0, BO_AVERAGE_POOL_2D = 1, BO_CONCATENATION = 2, BO_CONV_2D = 3,
    BO_DEPTHWISE_CONV_2D = 4, BO_DEPTH_TO_SPACE = 5, BO_DEQUANTIZE = 6, BO_LOGISTIC = 14,
    BO_MAX_POOL_2D = 17, BO_MUL = 18, BO_RELU = 19, BO_RESHAPE = 22,
    BO_RESIZE_BILINEAR = 23, BO_CUSTOM = 32, BO_PAD = 34, BO_MEAN = 40, BO_HARD_SWISH = 117,
    BO_DENSIFY = 124,
};

/* BuiltinOptions union tags. */
enum {
    OPT_NONE = 0, OPT_CONV_2D = 1, OPT_DEPTHWISE_CONV_2D = 2, OPT_POOL_2D = 5,
    OPT_CONCATENATION = 10, OPT_ADD = 11, OPT_RESIZE_BILINEAR = 15, OPT_RESHAPE = 17,
    OPT_MUL = 21, OPT_PAD = 22, OPT_REDUCER = 27, OPT_DEPTH_TO_SPACE = 94,
};

#define CUSTOM_TRANSPOSE_CONV_BIAS "Convolution2DTransposeBias"

/* tflite BuiltinOperator names, for error messages. */
static const char *const builtin_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR",
    "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM",
    "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1", "RELU6", "RESHAPE",
    "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE", "PAD", "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER",
    "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB", "DIV",
    "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX",
    "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL",
    "LESS_EQUAL", "SELECT", "SLICE", "SIN", "TRANSPOSE_CONV", "SPARSE_TO_DENSE",
    "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT",
    "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX",
    "PACK", "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK",
    "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL",
    "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU",
    "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS", "SPLIT_V", "UNIQUE", "CEIL",
    "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND",
    "HARD_SWISH", "IF", "WHILE", "NON_MAX_SUPPRESSION_V4",
    "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2", "DENSIFY",
    "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM",
    "CALL_ONCE", "BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL",
    "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE",
    "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL",
    "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2",
    "UNSORTED_SEGMENT_MIN",
};

static const char *builtin_name(int code)
{
    if (code >= 0 && code < (int)(sizeof builtin_names / sizeof builtin_names[0]))
        return builtin_names[code];
    return "unknown";
}

static const char *const op_names[MOP_COUNT] = {
    [MOP_CONV_2D] = "CONV_2D",
    [MOP_DEPTHWISE_CONV_2D] = "DEPTHWISE_CONV_2D",
    [MOP_HARD_SWISH] = "HARD_SWISH",
    [MOP_RELU] = "RELU",
    [MOP_LOGISTIC] = "LOGISTIC",
    [MOP_AVERAGE_POOL_2D] = "AVERAGE_POOL_2D",
    [MOP_MEAN] = "MEAN",
    [MOP_MUL] = "MUL",
    [MOP_ADD] = "ADD",
    [MOP_RESIZE_BILINEAR] = "RESIZE_BILINEAR",
    [MOP_TRANSPOSE_CONV_BIAS] = "Convolution2DTransposeBias",
    [MOP_PAD] = "PAD",
    [MOP_DEPTH_TO_SPACE] = "DEPTH_TO_SPACE",
    [MOP_MAX_POOL_2D] = "MAX_POOL_2D",
    [MOP_RESHAPE] = "RESHAPE",
    [MOP_CONCATENATION] = "CONCATENATION",
};

const char *model_op_name(enum model_op_kind k)
{
    if ((int)k >= 0 && k < MOP_COUNT)
        return op_names[k];
    return "unknown";
}

/* ---- bounded reader ---- */

struct rd {
    const uint8_t *b;
    size_t len;
    const char *name;   /* file name for messages */
    vr_err *err;
};

/* A table: its position, its vtable and their checked sizes. */
struct tbl {
    size_t pos, vt;
    size_t vt_len, obj_len;
};

/* A vector's element data and count (n == 0 when absent). */
struct vec {
    size_t data;
    uint32_t n;
};

static int fail(struct rd *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct rd *r, int code, const char *fmt, ...)
{
    char msg[224];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vr_err_set(r->err, code, "%s: %s", r->name, msg);
}

static int in_range(const struct rd *r, size_t pos, size_t n)
{
    return pos <= r->len && n <= r->len - pos;
}

static uint16_t ld16(const struct rd *r, size_t p)
{
    return (uint16_t)(r->b[p] | (r->b[p + 1] << 8));
}

static uint32_t ld32(const struct rd *r, size_t p)
{
    return (uint32_t)r->b[p] | ((uint32_t)r->b[p + 1] << 8) |
           ((uint32_t)r->b[p + 2] << 16) | ((uint32_t)r->b[p + 3] << 24);
}

static uint64_t ld64(const struct rd *r, size_t p)
{
    return (uint64_t)ld32(r, p) | ((uint64_t)ld32(r, p + 4) << 32);
}

/* Follows the uoffset at `ref` to a table and checks its vtable. */
static int table_at(struct rd *r, size_t ref, const char *what, struct tbl *t)
{
    if (!in_range(r, ref, 4))
        return fail(r, VR_EFORMAT, "%s: offset at %zu beyond end of file", what, ref);
    uint32_t rel = ld32(r, ref);
    if (rel > r->len - ref)
        return fail(r, VR_EFORMAT, "%s: offset %u at %zu beyond end of file", what, rel, ref);
    size_t pos = ref + rel;
    if (!in_range(r, pos, 4))
        return fail(r, VR_EFORMAT, "%s: table at %zu beyond end of file (%zu bytes)",
                    what, pos, r->len);
    int64_t vt = (int64_t)pos - (int32_t)ld32(r, pos);
    if (vt < 0 || !in_range(r, (size_t)vt, 4))
        return fail(r, VR_EFORMAT, "%s: vtable of table at %zu out of range", what, pos);
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vt_len = ld16(r, t->vt);
    t->obj_len = ld16(r, t->vt + 2);
    if (t->vt_len < 4 || (t->vt_len & 1) || !in_range(r, t->vt, t->vt_len))
        return fail(r, VR_EFORMAT, "%s: vtable at %zu has bad size %zu", what, t->vt,
                    t->vt_len);
    if (t->obj_len < 4 || !in_range(r, pos, t->obj_len))
        return fail(r, VR_EFORMAT, "%s: table at %zu has bad size %zu", what, pos,
                    t->obj_len);
    return 0;
}

/* Position of field `id` (of `size` bytes) in *p, or 0 when absent. */
static int field(struct rd *r, const struct tbl *t, int id, size_t size,
                 const char *what, size_t *p)
{
    *p = 0;
    size_t slot = 4 + 2 * (size_t)id;
    if (slot + 2 > t->vt_len)
        return 0;
    size_t off = ld16(r, t->vt + slot);
    if (off == 0)
        return 0;
    if (off < 4 || off + size > t->obj_len)
        return fail(r, VR_EFORMAT, "%s: field %d at offset %zu outside its table", what,
                    id, off);
    *p = t->pos + off;
    return 0;
}

static int get_u8(struct rd *r, const struct tbl *t, int id, int def, const char *what,
                  int *v)
{
    size_t p;
    int rc = field(r, t, id, 1, what, &p);
    if (rc)
        return rc;
    *v = p ? r->b[p] : def;
    return 0;
}

static int get_i8(struct rd *r, const struct tbl *t, int id, int def, const char *what,
                  int *v)
{
    size_t p;
    int rc = field(r, t, id, 1, what, &p);
    if (rc)
        return rc;
    *v = p ? (int)(int8_t)r->b[p] : def;
    return 0;
}

static int get_i32(struct rd *r, const struct tbl *t, int id, int32_t def,
                   const char *what, int32_t *v)
{
    size_t p;
    int rc = field(r, t, id, 4, what, &p);
    if (rc)
        return rc;
    *v = p ? (int32_t)ld32(r, p) : def;
    return 0;
}

static int get_u64(struct rd *r, const struct tbl *t, int id, const char *what,
                   uint64_t *v)
{
    size_t p;
    int rc = field(r, t, id, 8, what, &p);
    if (rc)
        return rc;
    *v = p ? ld64(r, p) : 0;
    return 0;
}

/* Vector field `id` of `esize`-byte elements, at most `max_n` of them. */
static int get_vec(struct rd *r, const struct tbl *t, int id, size_t esize,
                   uint32_t max_n, const char *what, struct vec *v)
{
    size_t p;
    v->data = 0;
    v->n = 0;
    int rc = field(r, t, id, 4, what, &p);
    if (rc || !p)
        return rc;
    uint32_t rel = ld32(r, p);
    if (rel > r->len - p)
        return fail(r, VR_EFORMAT, "%s: offset %u at %zu beyond end of file", what, rel, p);
    size_t vp = p + rel;
    if (!in_range(r, vp, 4))
        return fail(r, VR_EFORMAT, "%s: vector at %zu beyond end of file", what, vp);
    uint32_t n = ld32(r, vp);
    if (n > max_n)
        return fail(r, VR_EFORMAT, "%s: %u entries, limit %u", what, n, max_n);
    if (!in_range(r, vp + 4, (size_t)n * esize))
        return fail(r, VR_EFORMAT, "%s: %u entries at %zu run past end of file", what,
                    n, vp + 4);
    v->data = vp + 4;
    v->n = n;
    return 0;
}

/* String field copied into dst (printable ASCII only, truncated). */
static int get_str(struct rd *r, const struct tbl *t, int id, const char *what,
                   char *dst, size_t dsz)
{
    struct vec v;
    int rc = get_vec(r, t, id, 1, MODEL_MAX_FILE, what, &v);
    if (rc)
        return rc;
    size_t n = v.n < dsz - 1 ? v.n : dsz - 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = r->b[v.data + i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[n] = '\0';
    return 0;
}

/* ---- float16 ---- */

/* IEEE binary16 to binary32, exact: subnormals scaled, inf and NaN kept. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f;   /* zero or subnormal: man * 2^-24 */
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

/* ---- load state ---- */

struct opcode {
    int builtin;
    char custom[TFL_MAX_CUSTOM];
};

struct buffer {
    size_t pos, size;   /* size 0: no data */
};

/* Per-tensor facts the public struct does not keep. */
struct tinfo {
    int type;
    int defined;        /* graph input, constant, or produced by an earlier op */
    int is_const;
};

struct ld {
    struct rd r;
    struct model *m;
    struct opcode *codes;
    uint32_t n_codes;
    struct buffer *bufs;
    uint32_t n_bufs;
    struct tinfo *ti;
    struct tbl sg;
    size_t const_elems;     /* float32 values allocated for constants so far */
    size_t act_elems;       /* elements of op outputs so far */
    int op_index;       /* index in the file, for messages */
    const char *op_label;
};

static const char *type_name(int t)
{
    switch (t) {
    case TT_FLOAT32: return "FLOAT32";
    case TT_FLOAT16: return "FLOAT16";
    case TT_INT32:   return "INT32";
    default:         return "unsupported";
    }
}

static void shape_str(const struct model_tensor *t, char *s, size_t n)
{
    size_t o = 0;
    o += (size_t)snprintf(s + o, n - o, "[");
    for (int i = 0; i < t->rank && o < n; i++)
        o += (size_t)snprintf(s + o, n - o, "%s%d", i ? "," : "", t->shape[i]);
    if (o < n)
        snprintf(s + o, n - o, "]");
}

/* ---- pass 1: operator codes, buffers, tensors ---- */

static int read_opcodes(struct ld *L, const struct tbl *root)
{
    struct rd *r = &L->r;
    struct vec v;
    int rc = get_vec(r, root, 1, 4, TFL_MAX_OPCODES, "operator_codes", &v);
    if (rc)
        return rc;
    L->codes = calloc(v.n ? v.n : 1, sizeof *L->codes);
    if (!L->codes)
        return fail(r, VR_ENOMEM, "out of memory");
    L->n_codes = v.n;
    for (uint32_t i = 0; i < v.n; i++) {
        char what[48];
        snprintf(what, sizeof what, "operator code %u", i);
        struct tbl t;
        int dep;
        int32_t bc;
        if ((rc = table_at(r, v.data + 4 * (size_t)i, what, &t)) ||
            (rc = get_i8(r, &t, 0, 0, what, &dep)) ||
            (rc = get_i32(r, &t, 3, 0, what, &bc)) ||
            (rc = get_str(r, &t, 1, what, L->codes[i].custom, TFL_MAX_CUSTOM)))
            return rc;
        /* Old files only set the byte; new ones set both (tflite's rule). */
        int code = dep > bc ? dep : bc;
        if (code < 0)
            return fail(r, VR_EFORMAT, "%s: negative builtin code %d", what, code);
        L->codes[i].builtin = code;
    }
    return 0;
}

static int read_buffers(struct ld *L, const struct tbl *root)
{
    struct rd *r = &L->r;
    struct vec v;
    int rc = get_vec(r, root, 4, 4, TFL_MAX_BUFFERS, "buffers", &v);
    if (rc)
        return rc;
    L->bufs = calloc(v.n ? v.n : 1, sizeof *L->bufs);
    if (!L->bufs)
        return fail(r, VR_ENOMEM, "out of memory");
    L->n_bufs = v.n;
    for (uint32_t i = 0; i < v.n; i++) {
        char what[48];
        snprintf(what, sizeof what, "buffer %u", i);
        struct tbl t;
        struct vec d;
        uint64_t off, size;
        if ((rc = table_at(r, v.data + 4 * (size_t)i, what, &t)) ||
            (rc = get_vec(r, &t, 0, 1, MODEL_MAX_FILE, what, &d)) ||
            (rc = get_u64(r, &t, 1, what, &off)) ||
            (rc = get_u64(r, &t, 2, what, &size)))
            return rc;
        if (d.n) {
            L->bufs[i].pos = d.data;
            L->bufs[i].size = d.n;
        } else if (off > 1) {
            /* Large-model layout: data after the flatbuffer, at a file offset. */
            if (off > r->len || size > r->len - off)
                return fail(r, VR_EFORMAT, "%s: data range %llu+%llu beyond end of file",
                            what, (unsigned long long)off, (unsigned long long)size);
            L->bufs[i].pos = (size_t)off;
            L->bufs[i].size = (size_t)size;
        }
    }
    return 0;
}

/* Accounts for `n` more constant values against the file-size budget. */
static int add_const(struct ld *L, size_t n)
{
    L->const_elems += n;
    if (L->const_elems > (size_t)TFL_CONST_PER_BYTE * L->r.len)
        return fail(&L->r, VR_EFORMAT, "constants expand to %zu values, more than %d per "
                    "byte of the file", L->const_elems, TFL_CONST_PER_BYTE);
    return 0;
}

/* Converts `count` stored values of tensor idx (its file type) to float32. */
static int convert_values(struct ld *L, uint32_t idx, const uint8_t *p, size_t count,
                          float *dst)
{
    const struct model_tensor *mt = &L->m->tensors[idx];
    int type = L->ti[idx].type;
    for (size_t i = 0; i < count; i++) {
        float f;
        if (type == TT_FLOAT16) {
            f = half_to_float((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
        } else {
            uint32_t u = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) |
                         ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
            if (type == TT_INT32)
                f = (float)(int32_t)u;
            else
                memcpy(&f, &u, 4);
        }
        /* A NaN or inf weight would silently ruin every mask: refuse it. */
        if (!isfinite(f))
            return fail(&L->r, VR_EFORMAT, "tensor %u (%s): value %zu is not finite", idx,
                        mt->name, i);
        dst[i] = f;
    }
    return 0;
}

/* One int array of a DimensionMetadata (array_segments / array_indices: a
 * union of Int32Vector 1, Uint16Vector 2, Uint8Vector 3, each a table whose
 * field 0 is the values), exactly `want` entries. */
static int sparse_array(struct ld *L, const struct tbl *dm, int type_id, const char *what,
                        uint32_t want, struct vec *v, int *esize)
{
    struct rd *r = &L->r;
    int type, rc;
    size_t p;
    struct tbl t;
    if ((rc = get_u8(r, dm, type_id, 0, what, &type)) ||
        (rc = field(r, dm, type_id + 1, 4, what, &p)))
        return rc;
    *esize = type == 1 ? 4 : type == 2 ? 2 : type == 3 ? 1 : 0;
    if (!*esize || !p)
        return fail(r, VR_EFORMAT, "%s: array type %d (1..3 expected) or missing", what, type);
    if ((rc = table_at(r, p, what, &t)) ||
        (rc = get_vec(r, &t, 0, (size_t)*esize, TFL_MAX_ELEMS, what, v)))
        return rc;
    if (v->n != want)
        return fail(r, VR_EFORMAT, "%s: %u entries, %u expected", what, v->n, want);
    return 0;
}

static uint32_t sparse_at(const struct rd *r, const struct vec *v, int esize, uint32_t i)
{
    size_t p = v->data + (size_t)i * (size_t)esize;
    return esize == 4 ? ld32(r, p) : esize == 2 ? ld16(r, p) : r->b[p];
}

/* A sparse constant (DENSIFY's input) made dense: the layout MediaPipe's
 * models use, every dimension DENSE but the last, SPARSE_CSR, in the stored
 * order with no blocks. Other layouts are refused by name. */
static int read_sparse(struct ld *L, uint32_t idx, size_t ref, const struct buffer *b,
                       size_t esize)
{
    struct rd *r = &L->r;
    struct model_tensor *mt = &L->m->tensors[idx];
    char what[64];
    snprintf(what, sizeof what, "tensor %u (%.32s) sparsity", idx, mt->name);
    struct tbl sp, dm;
    struct vec order, blocks, dims, seg, ind;
    int rc, fmt, sesz, iesz;
    if ((rc = table_at(r, ref, what, &sp)) ||
        (rc = get_vec(r, &sp, 0, 4, 8, what, &order)) ||
        (rc = get_vec(r, &sp, 1, 4, 8, what, &blocks)) ||
        (rc = get_vec(r, &sp, 2, 4, 8, what, &dims)))
        return rc;
    if (mt->rank < 1 || blocks.n || dims.n != (uint32_t)mt->rank ||
        (order.n && order.n != (uint32_t)mt->rank))
        return fail(r, VR_ENOTSUP, "%s: only unblocked, one entry a dimension", what);
    for (uint32_t i = 0; i < order.n; i++)
        if (ld32(r, order.data + 4 * (size_t)i) != i)
            return fail(r, VR_ENOTSUP, "%s: traversal order not the stored order", what);
    uint32_t rows = 1;
    for (int d = 0; d < mt->rank; d++) {
        int32_t dense;
        if ((rc = table_at(r, dims.data + 4 * (size_t)d, what, &dm)) ||
            (rc = get_u8(r, &dm, 0, 0, what, &fmt)) ||
            (rc = get_i32(r, &dm, 1, 0, what, &dense)))
            return rc;
        if (d < mt->rank - 1) {
            if (fmt != 0 || dense != mt->shape[d])
                return fail(r, VR_ENOTSUP, "%s: dimension %d not DENSE of size %d", what, d,
                            mt->shape[d]);
            rows *= (uint32_t)dense; /* <= count: checked by read_tensor */
        } else if (fmt != 1) {
            return fail(r, VR_ENOTSUP, "%s: last dimension not SPARSE_CSR", what);
        }
    }
    if ((rc = sparse_array(L, &dm, 2, what, rows + 1, &seg, &sesz)))
        return rc;
    uint32_t nnz = sparse_at(r, &seg, sesz, rows), cols = (uint32_t)mt->shape[mt->rank - 1];
    if (nnz > mt->count || b->size != (size_t)nnz * esize)
        return fail(r, VR_EFORMAT, "%s: %u values, buffer holds %zu bytes", what, nnz, b->size);
    if ((rc = sparse_array(L, &dm, 4, what, nnz, &ind, &iesz)) || (rc = add_const(L, mt->count)))
        return rc;
    float *vals = malloc(((size_t)nnz + 1) * sizeof *vals);
    mt->data = calloc(mt->count, sizeof(float));
    if (!vals || !mt->data) {
        free(vals);
        return fail(r, VR_ENOMEM, "%s: out of memory", what);
    }
    if ((rc = convert_values(L, idx, r->b + b->pos, nnz, vals))) {
        free(vals);
        return rc;
    }
    for (uint32_t row = 0, k = 0; row < rows; row++) {
        uint32_t end = sparse_at(r, &seg, sesz, row + 1);
        if (sparse_at(r, &seg, sesz, row) != k || end < k || end > nnz) {
            free(vals);
            return fail(r, VR_EFORMAT, "%s: row %u's segment out of order", what, row);
        }
        for (; k < end; k++) {
            uint32_t c = sparse_at(r, &ind, iesz, k);
            if (c >= cols) {
                free(vals);
                return fail(r, VR_EFORMAT, "%s: index %u beyond %u columns", what, c, cols);
            }
            mt->data[(size_t)row * cols + c] = vals[k];
        }
    }
    free(vals);
    L->ti[idx].is_const = 1;
    L->ti[idx].defined = 1;
    return 0;
}

static int read_tensor(struct ld *L, uint32_t idx, size_t ref)
{
    struct rd *r = &L->r;
    struct model_tensor *mt = &L->m->tensors[idx];
    struct tinfo *ti = &L->ti[idx];
    char what[48];
    snprintf(what, sizeof what, "tensor %u", idx);
    struct tbl t;
    struct vec shp;
    int type;
    int32_t bufi;
    int rc;
    if ((rc = table_at(r, ref, what, &t)) ||
        (rc = get_str(r, &t, 3, what, mt->name, sizeof mt->name)) ||
        (rc = get_vec(r, &t, 0, 4, 1u << 20, what, &shp)) ||
        (rc = get_i8(r, &t, 1, TT_FLOAT32, what, &type)) ||
        (rc = get_i32(r, &t, 2, 0, what, &bufi)))
        return rc;
    if (shp.n > 4)
        return fail(r, VR_EFORMAT, "%s (%s): rank %u, at most 4 supported", what,
                    mt->name, shp.n);
    mt->rank = (int)shp.n;
    size_t count = 1;
    for (int i = 0; i < mt->rank; i++) {
        int32_t d = (int32_t)ld32(r, shp.data + 4 * (size_t)i);
        if (d < 1 || d > MODEL_MAX_DIM)
            return fail(r, VR_EFORMAT, "%s (%s): dimension %d is %d, must be 1..%d",
                        what, mt->name, i, d, MODEL_MAX_DIM);
        mt->shape[i] = d;
        count *= (size_t)d;
        if (count > TFL_MAX_ELEMS)
            return fail(r, VR_EFORMAT, "%s (%s): more than %u elements", what, mt->name,
                        TFL_MAX_ELEMS);
    }
    mt->count = count;
    if (type != TT_FLOAT32 && type != TT_FLOAT16 && type != TT_INT32)
        return fail(r, VR_ENOTSUP, "%s (%s): tensor type %d not supported "
                    "(FLOAT32, FLOAT16, INT32 are)", what, mt->name, type);
    ti->type = type;
    if (bufi < 0 || ((uint32_t)bufi >= L->n_bufs && bufi != 0))
        return fail(r, VR_EFORMAT, "%s (%s): buffer %d out of range (%u buffers)", what,
                    mt->name, bufi, L->n_bufs);
    if ((uint32_t)bufi >= L->n_bufs || L->bufs[bufi].size == 0)
        return 0;   /* no data: an activation */

    const struct buffer *b = &L->bufs[bufi];
    size_t esize = type == TT_FLOAT16 ? 2 : 4;
    size_t sp;
    if ((rc = field(r, &t, 6, 4, what, &sp)))
        return rc;
    if (sp)
        return read_sparse(L, idx, sp, b, esize);
    if (b->size != count * esize)
        return fail(r, VR_EFORMAT, "%s (%s): buffer %d holds %zu bytes, %s shape needs %zu",
                    what, mt->name, bufi, b->size, type_name(type), count * esize);
    if ((rc = add_const(L, count)))
        return rc;
    mt->data = malloc(count * sizeof(float));
    if (!mt->data)
        return fail(r, VR_ENOMEM, "%s: out of memory for %zu values", what, count);
    if ((rc = convert_values(L, idx, r->b + b->pos, count, mt->data)))
        return rc;
    ti->is_const = 1;
    ti->defined = 1;
    return 0;
}

/* ---- pass 2: operators ---- */

static int opfail(struct ld *L, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int opfail(struct ld *L, int code, const char *fmt, ...)
{
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(&L->r, code, "op %d (%s): %s", L->op_index, L->op_label, msg);
}

static const struct model_tensor *T(struct ld *L, int i)
{
    return &L->m->tensors[i];
}

/* An activation input: defined earlier, not a constant, NHWC with N == 1. */
static int need_act(struct ld *L, int t, const char *role)
{
    if (t < 0)
        return opfail(L, VR_EFORMAT, "%s tensor missing (index -1)", role);
    if (!L->ti[t].defined)
        return opfail(L, VR_EFORMAT, "%s tensor %d is used before it is produced", role, t);
    if (L->ti[t].is_const)
        return opfail(L, VR_ENOTSUP, "%s tensor %d is a constant, an activation is "
                      "expected", role, t);
    if (L->ti[t].type != TT_FLOAT32)
        return opfail(L, VR_ENOTSUP, "%s tensor %d is %s, FLOAT32 expected", role, t,
                      type_name(L->ti[t].type));
    const struct model_tensor *mt = T(L, t);
    if (mt->rank != 4 || mt->shape[0] != 1) {
        char s[64];
        shape_str(mt, s, sizeof s);
        return opfail(L, VR_ENOTSUP, "%s tensor %d has shape %s, [1,H,W,C] expected",
                      role, t, s);
    }
    return 0;
}

/* A constant input of the given rank and type (weights, bias, sizes). */
static int need_const(struct ld *L, int t, int rank, int type, const char *role)
{
    if (t < 0)
        return opfail(L, VR_EFORMAT, "%s tensor missing (index -1)", role);
    if (!L->ti[t].is_const)
        return opfail(L, VR_ENOTSUP, "%s tensor %d is not a constant", role, t);
    if (L->ti[t].type != type)
        return opfail(L, VR_EFORMAT, "%s tensor %d is %s, %s expected", role, t,
                      type_name(L->ti[t].type), type_name(type));
    if (T(L, t)->rank != rank)
        return opfail(L, VR_EFORMAT, "%s tensor %d has rank %d, %d expected", role, t,
                      T(L, t)->rank, rank);
    return 0;
}

/* The output must be a fresh FLOAT32 activation of exactly this shape. */
static int check_out(struct ld *L, int t, int rank, const int *shape)
{
    if (L->ti[t].defined)
        return opfail(L, VR_EFORMAT, "output tensor %d is already defined "
                      "(input, constant or earlier op)", t);
    if (L->ti[t].type != TT_FLOAT32)
        return opfail(L, VR_ENOTSUP, "output tensor %d is %s, FLOAT32 expected", t,
                      type_name(L->ti[t].type));
    const struct model_tensor *mt = T(L, t);
    int same = mt->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = mt->shape[i] == shape[i];
    if (!same) {
        char got[64], want[64];
        struct model_tensor w = { .rank = rank };
        memcpy(w.shape, shape, sizeof(int) * (size_t)rank);
        shape_str(mt, got, sizeof got);
        shape_str(&w, want, sizeof want);
        return opfail(L, VR_EFORMAT, "output tensor %d has shape %s, the op gives %s", t,
                      got, want);
    }
    return 0;
}

/* Options table of the expected union type, or t->pos == 0 when absent. */
static int options(struct ld *L, const struct tbl *op, int want, struct tbl *t)
{
    struct rd *r = &L->r;
    int type;
    size_t p;
    t->pos = 0;
    if (want == OPT_NONE)
        return 0;   /* ops without options we read (HARD_SWISH, ...): ignore any */
    int rc = get_u8(r, op, 3, OPT_NONE, "operator", &type);
    if (rc)
        return rc;
    if (type == OPT_NONE)
        return 0;
    if (type != want)
        return opfail(L, VR_EFORMAT, "options of type %d, %d expected", type, want);
    if ((rc = field(r, op, 4, 4, "operator", &p)) || !p)
        return rc;
    return table_at(r, p, "operator options", t);
}

/* Option readers that tolerate an absent table (all defaults). */
static int opt_i32(struct ld *L, const struct tbl *t, int id, int32_t def, int32_t *v)
{
    if (!t->pos) {
        *v = def;
        return 0;
    }
    return get_i32(&L->r, t, id, def, "operator options", v);
}

static int opt_u8(struct ld *L, const struct tbl *t, int id, int def, int *v)
{
    if (!t->pos) {
        *v = def;
        return 0;
    }
    return get_u8(&L->r, t, id, def, "operator options", v);
}

static int set_padding(struct ld *L, int schema_pad, struct model_op *o)
{
    if (schema_pad == 0)
        o->padding = MPAD_SAME;
    else if (schema_pad == 1)
        o->padding = MPAD_VALID;
    else
        return opfail(L, VR_EFORMAT, "padding %d unknown", schema_pad);
    return 0;
}

static int set_act(struct ld *L, int act, struct model_op *o)
{
    if (act < MACT_NONE || act > MACT_TANH)
        return opfail(L, VR_ENOTSUP, "fused activation %d not supported", act);
    o->act = (enum model_act)act;
    return 0;
}

/* An INT32 constant's value back from its float storage, clamped so the
 * conversion is defined (values that matter are small and exact). */
static int32_t const_int(float f)
{
    if (!(f > -1e9f))
        return -1000000000;
    if (f > 1e9f)
        return 1000000000;
    return (int32_t)f;
}

static int check_range(struct ld *L, const char *what, int32_t v)
{
    if (v < 1 || v > MODEL_MAX_DIM)
        return opfail(L, VR_EFORMAT, "%s %d, must be 1..%d", what, v, MODEL_MAX_DIM);
    return 0;
}

/* Output extent of a window op (conv, pool) along one axis. */
static int window_out(struct ld *L, enum model_padding pad, int in, int k, int stride,
                      int dil, int *out)
{
    int64_t eff = (int64_t)(k - 1) * dil + 1;
    if (pad == MPAD_SAME) {
        *out = (int)(((int64_t)in + stride - 1) / stride);
        return 0;
    }
    if (eff > in)
        return opfail(L, VR_EFORMAT, "window %lld larger than input %d with VALID padding",
                      (long long)eff, in);
    *out = (int)((in - eff + stride) / stride);
    return 0;
}

static int read_conv_opts(struct ld *L, const struct tbl *opt, int depthwise,
                          struct model_op *o)
{
    int pad, act;
    int32_t sw, sh, dw, dh, dm = 0;
    int rc;
    int a = depthwise ? 1 : 0;  /* depthwise has depth_multiplier at id 3 */
    if ((rc = opt_u8(L, opt, 0, 0, &pad)) || (rc = opt_i32(L, opt, 1, 0, &sw)) ||
        (rc = opt_i32(L, opt, 2, 0, &sh)) ||
        (depthwise && (rc = opt_i32(L, opt, 3, 0, &dm))) ||
        (rc = opt_u8(L, opt, 3 + a, 0, &act)) ||
        (rc = opt_i32(L, opt, 4 + a, 1, &dw)) || (rc = opt_i32(L, opt, 5 + a, 1, &dh)))
        return rc;
    if ((rc = set_padding(L, pad, o)) || (rc = set_act(L, act, o)) ||
        (rc = check_range(L, "stride_w", sw)) || (rc = check_range(L, "stride_h", sh)) ||
        (rc = check_range(L, "dilation_w", dw)) || (rc = check_range(L, "dilation_h", dh)))
        return rc;
    o->stride_w = sw;
    o->stride_h = sh;
    o->dilation_w = dw;
    o->dilation_h = dh;
    o->depth_multiplier = dm;
    return 0;
}

static int op_conv(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    const int depthwise = o->kind == MOP_DEPTHWISE_CONV_2D;
    int rc;
    (void)op;
    if ((rc = need_act(L, o->in[0], "input")) ||
        (rc = need_const(L, o->in[1], 4, TT_FLOAT32, "weights")) ||
        (rc = need_const(L, o->in[2], 1, TT_FLOAT32, "bias")) ||
        (rc = read_conv_opts(L, opt, depthwise, o)))
        return rc;
    const struct model_tensor *x = T(L, o->in[0]), *w = T(L, o->in[1]), *b = T(L, o->in[2]);
    int cin = x->shape[3], cout, kh = w->shape[1], kw = w->shape[2];
    if (depthwise) {
        /* [1][kh][kw][cout], cout = cin * depth_multiplier */
        cout = w->shape[3];
        if (w->shape[0] != 1 || cout % cin)
            return opfail(L, VR_EFORMAT, "depthwise weights [%d,%d,%d,%d] do not fit "
                          "%d input channels", w->shape[0], kh, kw, cout, cin);
        if (o->depth_multiplier != 0 && o->depth_multiplier != cout / cin)
            return opfail(L, VR_EFORMAT, "depth_multiplier %d, weights give %d",
                          o->depth_multiplier, cout / cin);
        o->depth_multiplier = cout / cin;
    } else {
        /* OHWI: [cout][kh][kw][cin] */
        cout = w->shape[0];
        if (w->shape[3] != cin)
            return opfail(L, VR_EFORMAT, "weights [%d,%d,%d,%d] take %d input channels, "
                          "input has %d", cout, kh, kw, w->shape[3], w->shape[3], cin);
        o->depth_multiplier = 1;
    }
    if (b->shape[0] != cout)
        return opfail(L, VR_EFORMAT, "bias has %d values for %d output channels",
                      b->shape[0], cout);
    int shape[4] = { 1, 0, 0, cout };
    if ((rc = window_out(L, o->padding, x->shape[1], kh, o->stride_h, o->dilation_h,
                         &shape[1])) ||
        (rc = window_out(L, o->padding, x->shape[2], kw, o->stride_w, o->dilation_w,
                         &shape[2])))
        return rc;
    return check_out(L, o->out, 4, shape);
}

static int op_pool(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int pad, act, rc;
    int32_t sw, sh, fw, fh;
    if ((rc = need_act(L, o->in[0], "input")) || (rc = opt_u8(L, opt, 0, 0, &pad)) ||
        (rc = opt_i32(L, opt, 1, 0, &sw)) || (rc = opt_i32(L, opt, 2, 0, &sh)) ||
        (rc = opt_i32(L, opt, 3, 0, &fw)) || (rc = opt_i32(L, opt, 4, 0, &fh)) ||
        (rc = opt_u8(L, opt, 5, 0, &act)))
        return rc;
    if ((rc = set_padding(L, pad, o)) || (rc = set_act(L, act, o)) ||
        (rc = check_range(L, "stride_w", sw)) || (rc = check_range(L, "stride_h", sh)) ||
        (rc = check_range(L, "filter_width", fw)) ||
        (rc = check_range(L, "filter_height", fh)))
        return rc;
    o->stride_w = sw;
    o->stride_h = sh;
    o->filter_w = fw;
    o->filter_h = fh;
    o->n_in = 1;
    const struct model_tensor *x = T(L, o->in[0]);
    int shape[4] = { 1, 0, 0, x->shape[3] };
    if ((rc = window_out(L, o->padding, x->shape[1], fh, sh, 1, &shape[1])) ||
        (rc = window_out(L, o->padding, x->shape[2], fw, sw, 1, &shape[2])))
        return rc;
    return check_out(L, o->out, 4, shape);
}

static int op_unary(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    (void)opt;
    int rc = need_act(L, o->in[0], "input");
    if (rc)
        return rc;
    o->n_in = 1;
    return check_out(L, o->out, 4, T(L, o->in[0])->shape);
}

/* ADD, MUL: second input the same shape as the first, or [1,1,1,C]. */
static int op_binary(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int act, rc;
    if ((rc = need_act(L, o->in[0], "first")) || (rc = need_act(L, o->in[1], "second")) ||
        (rc = opt_u8(L, opt, 0, 0, &act)) || (rc = set_act(L, act, o)))
        return rc;
    const struct model_tensor *a = T(L, o->in[0]), *b = T(L, o->in[1]);
    int same = 1, bcast = b->shape[1] == 1 && b->shape[2] == 1;
    for (int i = 1; i < 4; i++)
        same &= a->shape[i] == b->shape[i];
    if (!same && !(bcast && b->shape[3] == a->shape[3])) {
        char sa[64], sb[64];
        shape_str(a, sa, sizeof sa);
        shape_str(b, sb, sizeof sb);
        return opfail(L, VR_ENOTSUP, "shapes %s and %s: second must match or be [1,1,1,C]",
                      sa, sb);
    }
    o->n_in = 2;
    return check_out(L, o->out, 4, a->shape);
}

static int op_resize(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int rc;
    if ((rc = need_act(L, o->in[0], "input")) ||
        (rc = need_const(L, o->in[1], 1, TT_INT32, "size")))
        return rc;
    const struct model_tensor *s = T(L, o->in[1]);
    if (s->count != 2)
        return opfail(L, VR_EFORMAT, "size tensor has %zu values, 2 expected", s->count);
    int32_t oh = const_int(s->data[0]), ow = const_int(s->data[1]);
    if ((rc = check_range(L, "output height", oh)) ||
        (rc = check_range(L, "output width", ow)) ||
        (rc = opt_u8(L, opt, 2, 0, &o->align_corners)) ||
        (rc = opt_u8(L, opt, 3, 0, &o->half_pixel_centers)))
        return rc;
    o->align_corners = !!o->align_corners;
    o->half_pixel_centers = !!o->half_pixel_centers;
    if (o->align_corners && o->half_pixel_centers)
        return opfail(L, VR_EFORMAT, "align_corners and half_pixel_centers both set");
    o->out_h = oh;
    o->out_w = ow;
    /* The size now lives in out_h/out_w: the op reads one tensor. */
    o->in[1] = -1;
    o->n_in = 1;
    int shape[4] = { 1, oh, ow, T(L, o->in[0])->shape[3] };
    return check_out(L, o->out, 4, shape);
}

static int op_mean(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int rc;
    if ((rc = need_act(L, o->in[0], "input")) ||
        (rc = need_const(L, o->in[1], 1, TT_INT32, "axes")))
        return rc;
    const struct model_tensor *ax = T(L, o->in[1]);
    if (ax->count != 2)
        return opfail(L, VR_ENOTSUP, "%zu axes; only a mean over H and W is supported",
                      ax->count);
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        int a = const_int(ax->data[i]);
        if (a < 0)
            a += 4;
        if (a == 1 || a == 2)
            seen |= 1 << a;
    }
    if (seen != 6)
        return opfail(L, VR_ENOTSUP, "mean over axes %d,%d; only 1,2 (H, W) supported",
                      const_int(ax->data[0]), const_int(ax->data[1]));
    if ((rc = opt_u8(L, opt, 0, 0, &o->keep_dims)))
        return rc;
    o->keep_dims = !!o->keep_dims;
    /* Every activation stays [1,H,W,C]: a rank-2 result could only feed a
     * RESHAPE, which is not supported either. */
    if (!o->keep_dims)
        return opfail(L, VR_ENOTSUP, "keep_dims false (a [1,C] result) not supported");
    o->in[1] = -1;
    o->n_in = 1;
    int shape[4] = { 1, 1, 1, T(L, o->in[0])->shape[3] };
    return check_out(L, o->out, 4, shape);
}

/* mediapipe's op: custom_options is a TfLiteTransposeConvParams, whose C enum
 * TfLitePadding is Unknown=0, Same=1, Valid=2 (not the schema's 0/1). */
static int op_transpose_conv(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)opt;
    struct rd *r = &L->r;
    struct vec v;
    int rc;
    if ((rc = get_vec(r, op, 5, 1, MODEL_MAX_FILE, "operator", &v)))
        return rc;
    if (v.n != 12)
        return opfail(L, VR_EFORMAT, "custom options are %u bytes, 12 expected", v.n);
    int32_t pad = (int32_t)ld32(r, v.data), sw = (int32_t)ld32(r, v.data + 4),
            sh = (int32_t)ld32(r, v.data + 8);
    if (pad == 1)
        o->padding = MPAD_SAME;
    else if (pad == 2)
        o->padding = MPAD_VALID;
    else
        return opfail(L, VR_EFORMAT, "padding %d unknown (1 SAME, 2 VALID)", pad);
    if ((rc = check_range(L, "stride_w", sw)) || (rc = check_range(L, "stride_h", sh)) ||
        (rc = need_act(L, o->in[0], "input")) ||
        (rc = need_const(L, o->in[1], 4, TT_FLOAT32, "weights")) ||
        (rc = need_const(L, o->in[2], 1, TT_FLOAT32, "bias")))
        return rc;
    o->stride_w = sw;
    o->stride_h = sh;
    o->dilation_h = o->dilation_w = 1;
    o->act = MACT_NONE;
    const struct model_tensor *x = T(L, o->in[0]), *w = T(L, o->in[1]), *b = T(L, o->in[2]);
    int cout = w->shape[0], kh = w->shape[1], kw = w->shape[2];
    if (w->shape[3] != x->shape[3])
        return opfail(L, VR_EFORMAT, "weights take %d input channels, input has %d",
                      w->shape[3], x->shape[3]);
    if (b->shape[0] != cout)
        return opfail(L, VR_EFORMAT, "bias has %d values for %d output channels",
                      b->shape[0], cout);
    int64_t oh, ow;
    if (o->padding == MPAD_SAME) {
        oh = (int64_t)x->shape[1] * sh;
        ow = (int64_t)x->shape[2] * sw;
    } else {
        oh = (int64_t)(x->shape[1] - 1) * sh + kh;
        ow = (int64_t)(x->shape[2] - 1) * sw + kw;
    }
    if (oh > MODEL_MAX_DIM || ow > MODEL_MAX_DIM)
        return opfail(L, VR_EFORMAT, "output %lldx%lld too large", (long long)oh,
                      (long long)ow);
    int shape[4] = { 1, (int)oh, (int)ow, cout };
    return check_out(L, o->out, 4, shape);
}

/* DEQUANTIZE of a constant: the output becomes a constant with the same data. */
static int op_dequantize(struct ld *L, int in, int out)
{
    if (in < 0 || !L->ti[in].is_const || L->ti[in].type != TT_FLOAT16)
        return opfail(L, VR_ENOTSUP, "only FLOAT16 constants can be dequantized");
    const struct model_tensor *x = T(L, in);
    int rc = check_out(L, out, x->rank, x->shape);
    if (rc)
        return rc;
    if ((rc = add_const(L, x->count)))
        return rc;
    struct model_tensor *y = &L->m->tensors[out];
    y->data = malloc(x->count * sizeof(float));
    if (!y->data)
        return opfail(L, VR_ENOMEM, "out of memory");
    memcpy(y->data, x->data, x->count * sizeof(float));
    L->ti[out].is_const = 1;
    L->ti[out].defined = 1;
    return 0;
}

/* ---- the pose models' ops ---- */

/* An activation of any rank 2..4 with N == 1 (RESHAPE, CONCATENATION). */
static int need_act_any(struct ld *L, int t, const char *role)
{
    if (t < 0 || !L->ti[t].defined)
        return opfail(L, VR_EFORMAT, "%s tensor %d missing or used before it is produced",
                      role, t);
    if (L->ti[t].is_const || L->ti[t].type != TT_FLOAT32)
        return opfail(L, VR_ENOTSUP, "%s tensor %d is not a FLOAT32 activation", role, t);
    const struct model_tensor *mt = T(L, t);
    if (mt->rank < 2 || mt->shape[0] != 1)
        return opfail(L, VR_ENOTSUP, "%s tensor %d is not [1,...] of rank 2..4", role, t);
    return 0;
}

/* PAD with zeros: paddings [4][2] constant, none on N. */
static int op_pad(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    (void)opt;
    int rc;
    if ((rc = need_act(L, o->in[0], "input")) ||
        (rc = need_const(L, o->in[1], 2, TT_INT32, "paddings")))
        return rc;
    const struct model_tensor *x = T(L, o->in[0]), *pd = T(L, o->in[1]);
    if (pd->shape[0] != 4 || pd->shape[1] != 2)
        return opfail(L, VR_EFORMAT, "paddings are not [4,2]");
    int p[8], shape[4];
    for (int i = 0; i < 8; i++) {
        p[i] = const_int(pd->data[i]);
        if (p[i] < 0 || p[i] > MODEL_MAX_DIM)
            return opfail(L, VR_EFORMAT, "padding %d out of range 0..%d", p[i], MODEL_MAX_DIM);
    }
    if (p[0] || p[1])
        return opfail(L, VR_ENOTSUP, "padding along the batch");
    for (int i = 0; i < 4; i++)
        shape[i] = x->shape[i] + p[2 * i] + p[2 * i + 1];
    for (int i = 1; i < 4; i++)
        if (shape[i] > MODEL_MAX_DIM)
            return opfail(L, VR_EFORMAT, "padded size %d too large", shape[i]);
    o->pad_h0 = p[2]; o->pad_h1 = p[3];
    o->pad_w0 = p[4]; o->pad_w1 = p[5];
    o->pad_c0 = p[6]; o->pad_c1 = p[7];
    o->in[1] = -1;
    o->n_in = 1;
    return check_out(L, o->out, 4, shape);
}

static int op_depth_to_space(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int32_t bs;
    int rc;
    if ((rc = need_act(L, o->in[0], "input")) || (rc = opt_i32(L, opt, 0, 0, &bs)))
        return rc;
    const struct model_tensor *x = T(L, o->in[0]);
    if (bs < 1 || bs > 64 || x->shape[3] % (bs * bs))
        return opfail(L, VR_EFORMAT, "block size %d does not fit %d channels", bs,
                      x->shape[3]);
    if ((int64_t)x->shape[1] * bs > MODEL_MAX_DIM || (int64_t)x->shape[2] * bs > MODEL_MAX_DIM)
        return opfail(L, VR_EFORMAT, "output too large");
    o->block_size = bs;
    o->n_in = 1;
    int shape[4] = { 1, x->shape[1] * bs, x->shape[2] * bs, x->shape[3] / (bs * bs) };
    return check_out(L, o->out, 4, shape);
}

/* RESHAPE: the output tensor's own shape, same element count (the shape
 * operand, when present, is not needed). */
static int op_reshape(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    (void)opt;
    int rc = need_act_any(L, o->in[0], "input");
    if (rc)
        return rc;
    const struct model_tensor *x = T(L, o->in[0]), *y = T(L, o->out);
    if (y->rank < 2 || y->shape[0] != 1 || y->count != x->count)
        return opfail(L, VR_EFORMAT, "output has %zu values, input %zu (or is not [1,...])",
                      y->count, x->count);
    o->in[1] = -1;
    o->n_in = 1;
    return check_out(L, o->out, y->rank, y->shape);
}

/* CONCATENATION of 2 or 3 activations of one rank along a non-batch axis. */
static int op_concat(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o)
{
    (void)op;
    int32_t axis;
    int act, rc;
    if (o->n_in < 2 || o->n_in > 3)
        return opfail(L, VR_ENOTSUP, "%d inputs, 2 or 3 supported", o->n_in);
    if ((rc = opt_i32(L, opt, 0, 0, &axis)) || (rc = opt_u8(L, opt, 1, 0, &act)))
        return rc;
    if (act != MACT_NONE)
        return opfail(L, VR_ENOTSUP, "fused activation %d", act);
    for (int i = 0; i < o->n_in; i++)
        if ((rc = need_act_any(L, o->in[i], "input")))
            return rc;
    const struct model_tensor *a = T(L, o->in[0]);
    if (axis < 0)
        axis += a->rank;
    if (axis < 1 || axis >= a->rank)
        return opfail(L, VR_ENOTSUP, "axis %d of rank %d", axis, a->rank);
    int shape[4];
    memcpy(shape, a->shape, sizeof shape);
    for (int i = 1; i < o->n_in; i++) {
        const struct model_tensor *b = T(L, o->in[i]);
        for (int d = 0; d < a->rank && b->rank == a->rank; d++)
            if (d != axis && b->shape[d] != a->shape[d])
                return opfail(L, VR_EFORMAT, "input %d differs off the axis", i);
        if (b->rank != a->rank)
            return opfail(L, VR_EFORMAT, "inputs of ranks %d and %d", a->rank, b->rank);
        shape[axis] += b->shape[axis];
    }
    if (shape[axis] > MODEL_MAX_DIM)
        return opfail(L, VR_EFORMAT, "output too large");
    o->axis = axis + 4 - a->rank;
    return check_out(L, o->out, a->rank, shape);
}

/* DENSIFY of a sparse constant (made dense by read_sparse): its output
 * becomes that constant, of the same type, for the DEQUANTIZE after it. */
static int op_densify(struct ld *L, int in, int out)
{
    if (in < 0 || !L->ti[in].is_const)
        return opfail(L, VR_ENOTSUP, "only constants can be densified");
    const struct model_tensor *x = T(L, in), *y = T(L, out);
    if (L->ti[out].defined || L->ti[out].type != L->ti[in].type || y->count != x->count ||
        y->rank != x->rank)
        return opfail(L, VR_EFORMAT, "output tensor %d does not match its input", out);
    /* The values move (the sparse input feeds only this op in MediaPipe's
     * models; any later reader finds no data and is refused as an
     * activation used before it is produced). */
    struct model_tensor *w = &L->m->tensors[out];
    w->data = L->m->tensors[in].data;
    L->m->tensors[in].data = NULL;
    L->ti[in].is_const = 0;
    L->ti[in].defined = 0;
    L->ti[out].is_const = 1;
    L->ti[out].defined = 1;
    return 0;
}

/* ---- the op table: every operator the loader reads ---- */

/* Inputs an op takes from the file: a count, or one of these. */
#define IN_ANY    -1   /* as many as the file gives (CONCATENATION: op_concat checks) */
#define IN_1_OR_2 -2   /* RESHAPE: the shape operand is optional */

struct op_row {
    int builtin;
    const char *custom;      /* BO_CUSTOM: the custom operator's name */
    enum model_op_kind kind;
    int inputs;              /* a count, IN_ANY or IN_1_OR_2 */
    int options;             /* OPT_*: the options table's type (OPT_NONE: none read) */
    int (*read)(struct ld *L, const struct tbl *op, const struct tbl *opt, struct model_op *o);
    int (*fold)(struct ld *L, int in, int out);   /* or: a constant made at load time */
};

static const struct op_row op_table[] = {
    { BO_CONV_2D, NULL, MOP_CONV_2D, 3, OPT_CONV_2D, op_conv, NULL },
    { BO_DEPTHWISE_CONV_2D, NULL, MOP_DEPTHWISE_CONV_2D, 3, OPT_DEPTHWISE_CONV_2D, op_conv, NULL },
    { BO_HARD_SWISH, NULL, MOP_HARD_SWISH, 1, OPT_NONE, op_unary, NULL },
    { BO_RELU, NULL, MOP_RELU, 1, OPT_NONE, op_unary, NULL },
    { BO_LOGISTIC, NULL, MOP_LOGISTIC, 1, OPT_NONE, op_unary, NULL },
    { BO_AVERAGE_POOL_2D, NULL, MOP_AVERAGE_POOL_2D, 1, OPT_POOL_2D, op_pool, NULL },
    { BO_MEAN, NULL, MOP_MEAN, 2, OPT_REDUCER, op_mean, NULL },
    { BO_MUL, NULL, MOP_MUL, 2, OPT_MUL, op_binary, NULL },
    { BO_ADD, NULL, MOP_ADD, 2, OPT_ADD, op_binary, NULL },
    { BO_RESIZE_BILINEAR, NULL, MOP_RESIZE_BILINEAR, 2, OPT_RESIZE_BILINEAR, op_resize, NULL },
    { BO_PAD, NULL, MOP_PAD, 2, OPT_PAD, op_pad, NULL },
    { BO_DEPTH_TO_SPACE, NULL, MOP_DEPTH_TO_SPACE, 1, OPT_DEPTH_TO_SPACE, op_depth_to_space, NULL },
    { BO_MAX_POOL_2D, NULL, MOP_MAX_POOL_2D, 1, OPT_POOL_2D, op_pool, NULL },
    { BO_RESHAPE, NULL, MOP_RESHAPE, IN_1_OR_2, OPT_RESHAPE, op_reshape, NULL },
    { BO_CONCATENATION, NULL, MOP_CONCATENATION, IN_ANY, OPT_CONCATENATION, op_concat, NULL },
    { BO_CUSTOM, CUSTOM_TRANSPOSE_CONV_BIAS, MOP_TRANSPOSE_CONV_BIAS, 3, OPT_NONE,
      op_transpose_conv, NULL },
    { BO_DEQUANTIZE, NULL, MOP_COUNT, 1, OPT_NONE, NULL, op_dequantize },
    { BO_DENSIFY, NULL, MOP_COUNT, 1, OPT_NONE, NULL, op_densify },
};

/* The row of opcode oc, or NULL when the loader does not read it. */
static const struct op_row *op_row(const struct opcode *oc)
{
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++) {
        const struct op_row *row = &op_table[i];
        if (row->builtin == oc->builtin &&
            (!row->custom || strcmp(row->custom, oc->custom) == 0))
            return row;
    }
    return NULL;
}

static int read_tensor_list(struct ld *L, const struct tbl *t, int id, const char *what,
                            int *dst, int *n)
{
    struct vec v;
    int rc = get_vec(&L->r, t, id, 4, TFL_MAX_IO, what, &v);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < v.n; i++) {
        int32_t x = (int32_t)ld32(&L->r, v.data + 4 * (size_t)i);
        if (x < -1 || x >= L->m->n_tensors)
            return fail(&L->r, VR_EFORMAT, "%s: tensor index %d out of range (%d tensors)",
                        what, x, L->m->n_tensors);
        dst[i] = x;
    }
    *n = (int)v.n;
    return 0;
}

static int read_op(struct ld *L, int idx, size_t ref)
{
    struct rd *r = &L->r;
    char what[48];
    snprintf(what, sizeof what, "op %d", idx);
    L->op_index = idx;
    L->op_label = "?";
    struct tbl t, opt;
    uint32_t code;
    int32_t ci;
    int ins[TFL_MAX_IO], outs[TFL_MAX_IO], n_in = 0, n_out = 0;
    int rc;
    if ((rc = table_at(r, ref, what, &t)) || (rc = get_i32(r, &t, 0, 0, what, &ci)))
        return rc;
    if (ci < 0 || (uint32_t)ci >= L->n_codes)
        return fail(r, VR_EFORMAT, "%s: opcode index %d out of range (%u codes)", what, ci,
                    L->n_codes);
    code = (uint32_t)ci;
    const struct opcode *oc = &L->codes[code];
    if ((rc = read_tensor_list(L, &t, 1, what, ins, &n_in)) ||
        (rc = read_tensor_list(L, &t, 2, what, outs, &n_out)))
        return rc;
    L->op_label = oc->builtin == BO_CUSTOM ? oc->custom : builtin_name(oc->builtin);
    if (n_out != 1 || outs[0] < 0)
        return opfail(L, VR_ENOTSUP, "%d outputs, exactly 1 expected", n_out);

    const struct op_row *row = op_row(oc);
    if (!row && oc->builtin == BO_CUSTOM)
        return fail(r, VR_ENOTSUP, "op %d: unsupported custom operator \"%s\"", idx,
                    oc->custom);
    if (!row)
        return fail(r, VR_ENOTSUP, "op %d: unsupported operator %s (builtin %d)", idx,
                    builtin_name(oc->builtin), oc->builtin);
    if (row->fold) {
        if (n_in != 1)
            return opfail(L, VR_EFORMAT, "%d inputs, 1 expected", n_in);
        return row->fold(L, ins[0], outs[0]);
    }

    struct model_op o = { .in = { -1, -1, -1 }, .out = outs[0], .kind = row->kind,
                          .dilation_h = 1, .dilation_w = 1, .depth_multiplier = 1 };
    const int want_in = row->inputs == IN_ANY ? n_in
                      : row->inputs == IN_1_OR_2 ? (n_in == 1 ? 1 : 2) : row->inputs;
    L->op_label = model_op_name(o.kind);
    if (n_in != want_in || n_in > 3)
        return opfail(L, VR_EFORMAT, "%d inputs, %d expected", n_in, want_in);
    for (int i = 0; i < n_in; i++)
        o.in[i] = ins[i];
    o.n_in = n_in;
    if ((rc = options(L, &t, row->options, &opt)) || (rc = row->read(L, &t, &opt, &o)))
        return rc;
    L->act_elems += T(L, o.out)->count;
    if (L->act_elems > TFL_MAX_ACT)
        return opfail(L, VR_EFORMAT, "activations total more than %u values", TFL_MAX_ACT);
    L->ti[o.out].defined = 1;
    L->m->ops[L->m->n_ops++] = o;
    return 0;
}

/* ---- pass 3: graph input and output ---- */

static int read_io(struct ld *L)
{
    struct rd *r = &L->r;
    struct model *m = L->m;
    int ins[TFL_MAX_IO], outs[TFL_MAX_IO], n_in = 0, n_out = 0, rc;
    if ((rc = read_tensor_list(L, &L->sg, 1, "graph inputs", ins, &n_in)) ||
        (rc = read_tensor_list(L, &L->sg, 2, "graph outputs", outs, &n_out)))
        return rc;
    if (n_in != 1 || ins[0] < 0)
        return fail(r, VR_ENOTSUP, "graph has %d inputs, exactly 1 expected", n_in);
    if (n_out < 1 || n_out > MODEL_MAX_OUTPUTS)
        return fail(r, VR_ENOTSUP, "graph has %d outputs, 1..%d expected", n_out,
                    MODEL_MAX_OUTPUTS);
    for (int i = 0; i < n_out; i++) {
        if (outs[i] < 0)
            return fail(r, VR_EFORMAT, "graph output %d has no tensor", i);
        m->outputs[i] = outs[i];
    }
    m->n_outputs = n_out;
    m->input = ins[0];
    m->output = outs[0];
    const struct model_tensor *x = &m->tensors[m->input];
    if (L->ti[m->input].is_const || L->ti[m->input].type != TT_FLOAT32 || x->rank != 4 ||
        x->shape[0] != 1)
        return fail(r, VR_ENOTSUP, "graph input tensor %d must be a FLOAT32 [1,H,W,C] "
                    "activation", m->input);
    m->in_h = x->shape[1];
    m->in_w = x->shape[2];
    m->in_c = x->shape[3];
    L->ti[m->input].defined = 1;
    return 0;
}

static int check_output(struct ld *L)
{
    struct model *m = L->m;
    const struct model_tensor *y = &m->tensors[m->output];
    for (int k = 0; k < m->n_outputs; k++) {
        int produced = 0;
        for (int i = 0; i < m->n_ops; i++)
            produced |= m->ops[i].out == m->outputs[k];
        if (!produced)
            return fail(&L->r, VR_EFORMAT, "graph output tensor %d is not produced by any op",
                        m->outputs[k]);
    }
    if (y->rank < 1)
        return fail(&L->r, VR_EFORMAT, "graph output tensor %d is a scalar", m->output);
    m->out_c = y->shape[y->rank - 1];
    return 0;
}

/* ---- public ---- */

static void fnv1a_hex(const uint8_t *b, size_t n, char out[17])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void model_free(struct model **pm)
{
    if (!pm || !*pm)
        return;
    struct model *m = *pm;
    if (m->tensors)
        for (int i = 0; i < m->n_tensors; i++)
            free(m->tensors[i].data);
    free(m->tensors);
    free(m->ops);
    free(m);
    *pm = NULL;
}

int model_load_mem(const uint8_t *buf, size_t len, const char *name, struct model **out,
                   vr_err *err)
{
    struct ld L = { .r = { .b = buf, .len = len, .name = name ? name : "model",
                           .err = err } };
    struct rd *r = &L.r;
    struct tbl root;
    struct vec sgs, tens, ops;
    int32_t version;
    int rc;

    if (!out)
        return vr_err_set(err, VR_EINVAL, "model_load_mem: no output pointer");
    *out = NULL;
    if (!buf && len)
        return fail(r, VR_EINVAL, "no data");
    if (len == 0)
        return fail(r, VR_EFORMAT, "empty file");
    if (len > MODEL_MAX_FILE)
        return fail(r, VR_EFORMAT, "file is %zu bytes, limit %u", len, MODEL_MAX_FILE);
    if (len < 8)
        return fail(r, VR_EFORMAT, "file is %zu bytes, too short for a tflite model", len);
    if (memcmp(buf + 4, "TFL3", 4) != 0) {
        char id[5];
        for (int i = 0; i < 4; i++)
            id[i] = (buf[4 + i] >= 0x20 && buf[4 + i] < 0x7f) ? (char)buf[4 + i] : '?';
        id[4] = '\0';
        return fail(r, VR_EFORMAT, "not a TensorFlow Lite model (file identifier \"%s\", "
                    "expected \"TFL3\")", id);
    }

    if ((rc = table_at(r, 0, "model", &root)) ||
        (rc = get_i32(r, &root, 0, 0, "model", &version)))
        return rc;
    if (version != 3)
        return fail(r, VR_ENOTSUP, "schema version %d, 3 expected", version);

    L.m = calloc(1, sizeof *L.m);
    if (!L.m)
        return fail(r, VR_ENOMEM, "out of memory");
    L.m->input = L.m->output = -1;
    if ((rc = read_opcodes(&L, &root)) || (rc = read_buffers(&L, &root)) ||
        (rc = get_vec(r, &root, 2, 4, 64, "subgraphs", &sgs)))
        goto fail;
    if (sgs.n < 1) {
        rc = fail(r, VR_EFORMAT, "no subgraph");
        goto fail;
    }
    if ((rc = table_at(r, sgs.data, "subgraph 0", &L.sg)) ||
        (rc = get_vec(r, &L.sg, 0, 4, MODEL_MAX_TENSORS, "tensors", &tens)) ||
        (rc = get_vec(r, &L.sg, 3, 4, MODEL_MAX_OPS, "operators", &ops)))
        goto fail;

    L.m->tensors = calloc(tens.n ? tens.n : 1, sizeof *L.m->tensors);
    L.ti = calloc(tens.n ? tens.n : 1, sizeof *L.ti);
    L.m->ops = calloc(ops.n ? ops.n : 1, sizeof *L.m->ops);
    if (!L.m->tensors || !L.ti || !L.m->ops) {
        rc = fail(r, VR_ENOMEM, "out of memory");
        goto fail;
    }
    L.m->n_tensors = (int)tens.n;
    for (uint32_t i = 0; i < tens.n; i++)
        if ((rc = read_tensor(&L, i, tens.data + 4 * (size_t)i)))
            goto fail;
    if ((rc = read_io(&L)))
        goto fail;
    for (uint32_t i = 0; i < ops.n; i++)
        if ((rc = read_op(&L, (int)i, ops.data + 4 * (size_t)i)))
            goto fail;
    if (L.m->n_ops == 0) {
        rc = fail(r, VR_EFORMAT, "no operators besides DEQUANTIZE");
        goto fail;
    }
    if ((rc = check_output(&L)))
        goto fail;
    fnv1a_hex(buf, len, L.m->hash);

    free(L.codes);
    free(L.bufs);
    free(L.ti);
    *out = L.m;
    return 0;

fail:
    free(L.codes);
    free(L.bufs);
    free(L.ti);
    model_free(&L.m);
    return rc;
}

int model_load(const char *path, struct model **out, vr_err *err)
{
    if (!out || !path)
        return vr_err_set(err, VR_EINVAL, "model_load: no %s", out ? "path" : "output pointer");
    *out = NULL;
    /* non-blocking: a FIFO with no writer would block open() for ever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return vr_err_set(err, e == ENOENT ? VR_ENOENT : VR_EIO, "%s: cannot open: %s",
                          path, strerror(e));
    }
    struct stat st = { 0 };
    uint8_t *buf = NULL;
    int rc, fl;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = vr_err_set(err, VR_EIO, "%s: not a regular file%s", path,
                        S_ISFIFO(st.st_mode) ? " (a FIFO)" : "");
        goto done;
    }
    if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        rc = vr_err_set(err, VR_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    if (st.st_size == 0) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: empty file", path);
        goto done;
    }
    if ((uint64_t)st.st_size > MODEL_MAX_FILE) {
        rc = vr_err_set(err, VR_EFORMAT, "%s: file is %lld bytes, limit %u", path,
                        (long long)st.st_size, MODEL_MAX_FILE);
        goto done;
    }
    size_t len = (size_t)st.st_size, got = 0;
    buf = malloc(len);
    if (!buf) {
        rc = vr_err_set(err, VR_ENOMEM, "%s: out of memory for %zu bytes", path, len);
        goto done;
    }
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = vr_err_set(err, VR_EIO, "%s: read failed after %zu of %zu bytes%s%s", path,
                            got, len, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
            goto done;
        }
        got += (size_t)n;
    }
    rc = model_load_mem(buf, len, path, out, err);
done:
    free(buf);
    close(fd);
    return rc;
}

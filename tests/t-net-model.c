/*
 * t-net-model.c - the CPU executor (net_exec_ref.c) on the real models in models/:
 * the 256x256 and 144x256 selfie segmenters on a real photo of a person
 * (tests/data/net/astronaut-256.rgb), a batch of 3 against the same items
 * run one at a time, the whole run against a naive executor written here
 * (one buffer per tensor, the plain OHWI convolution: it checks the memory
 * plan and the packed weights), create-time errors on inconsistent graphs,
 * and the single-core time of one 256x256 inference.
 */
#include "model.h"
#include "net.h"
#include "ops_ref.h"
#include "paths.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define M256 "models/selfie_segmentation.tflite"
#define M144 "models/selfie_segmentation_landscape.tflite"
#define PHOTO "tests/data/net/astronaut-256.rgb" /* 256x256 rgb24 */

/* ---- helpers ---- */

static struct model *load(const char *name)
{
    char path[1024];
    cr_assert_eq(vr_data_path(name, path, sizeof path), 0, "%s not found", name);
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load(path, &m, &e), 0, "%s: %s", path, e.msg);
    return m;
}

/* The photo's central h rows as [h][256][3] floats in [0,1]; `flip`
 * mirrors it left-right (a second, different input). */
static float *photo(int h, int flip)
{
    char path[1024];
    cr_assert_eq(vr_data_path(PHOTO, path, sizeof path), 0, PHOTO " not found");
    unsigned char *rgb = malloc(256 * 256 * 3);
    FILE *f = fopen(path, "rb");
    cr_assert(f && rgb);
    cr_assert_eq(fread(rgb, 1, 256 * 256 * 3, f), 256 * 256 * 3, "short " PHOTO);
    fclose(f);
    float *x = malloc((size_t)h * 256 * 3 * sizeof(float));
    cr_assert(x);
    const int y0 = (256 - h) / 2;
    for (int y = 0; y < h; y++)
        for (int i = 0; i < 256; i++)
            for (int c = 0; c < 3; c++) {
                int sx = flip ? 255 - i : i;
                x[((size_t)y * 256 + i) * 3 + c] = rgb[((size_t)(y0 + y) * 256 + sx) * 3 + c] / 255.f;
            }
    free(rgb);
    return x;
}

static double box_mean(const float *m, int w, int x0, int y0, int x1, int y1)
{
    double s = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            s += m[y * w + x];
    return s / ((double)(x1 - x0) * (y1 - y0));
}

static void assert_mask(const float *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(isfinite(m[i]) && m[i] >= 0.f && m[i] <= 1.f, "mask[%zu] = %g", i, m[i]);
}

static float *run1(const struct model *m, const float *in)
{
    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert_eq(net_create(m, 1, &net, &e), 0, "%s", e.msg);
    float *out = malloc((size_t)m->in_h * m->in_w * sizeof(float));
    cr_assert(out);
    cr_assert_eq(net_run(net, in, 1, out, &e), 0, "%s", e.msg);
    net_free(&net);
    cr_assert_null(net);
    return out;
}

/* ---- a naive executor: every tensor its own buffer, plain kernels ---- */

static size_t tcount(const struct model_tensor *t)
{
    size_t c = 1;
    for (int i = 0; i < t->rank; i++)
        c *= (size_t)t->shape[i];
    return c;
}

static void naive_run(const struct model *m, const float *in, float *out)
{
    float **buf = calloc((size_t)m->n_tensors, sizeof *buf);
    cr_assert(buf);
    buf[m->input] = (float *)in;
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        const struct model_tensor *xt = &m->tensors[o->in[0]], *yt = &m->tensors[o->out];
        const float *x = buf[o->in[0]];
        cr_assert(x, "op %d input not computed", i);
        float *y = buf[o->out] = malloc(tcount(yt) * sizeof(float));
        cr_assert(y);
        const int ih = xt->shape[1], iw = xt->shape[2], c = xt->shape[3];
        struct conv_geom g = { .n = 1, .ih = ih, .iw = iw, .cin = c, .sh = o->stride_h,
                               .sw = o->stride_w, .dh = o->dilation_h, .dw = o->dilation_w,
                               .act = o->act };
        const struct model_tensor *w = o->n_in > 1 && o->in[1] >= 0 ? &m->tensors[o->in[1]] : NULL;
        const float *b = o->n_in > 2 && o->in[2] >= 0 ? m->tensors[o->in[2]].data : NULL;
        switch (o->kind) {
        case MOP_CONV_2D:
            g.cout = w->shape[0], g.kh = w->shape[1], g.kw = w->shape[2];
            op_conv_geom(&g, o->padding);
            ref_conv2d(&g, x, w->data, b, y);
            break;
        case MOP_DEPTHWISE_CONV_2D:
            g.cout = w->shape[3], g.kh = w->shape[1], g.kw = w->shape[2];
            op_conv_geom(&g, o->padding);
            ref_dwconv2d(&g, x, w->data, b, y);
            break;
        case MOP_AVERAGE_POOL_2D:
            g.cout = c, g.kh = o->filter_h, g.kw = o->filter_w, g.dh = g.dw = 1;
            op_conv_geom(&g, o->padding);
            ref_avgpool(&g, x, y);
            break;
        case MOP_TRANSPOSE_CONV_BIAS:
            g.cout = w->shape[0], g.kh = w->shape[1], g.kw = w->shape[2];
            op_tconv_geom(&g, o->padding);
            ref_tconv_bias(&g, x, w->data, b, y);
            break;
        case MOP_MEAN:
            ref_mean_hw(1, ih, iw, c, x, y);
            break;
        case MOP_HARD_SWISH:
            ref_hard_swish(x, y, tcount(xt));
            break;
        case MOP_RELU:
            ref_relu(x, y, tcount(xt));
            break;
        case MOP_LOGISTIC:
            ref_logistic(x, y, tcount(xt));
            break;
        case MOP_ADD:
        case MOP_MUL: {
            const struct model_tensor *bt = &m->tensors[o->in[1]];
            const float *a = x, *bb = buf[o->in[1]];
            int full = tcount(bt) == tcount(xt);
            if (tcount(bt) > tcount(xt)) { /* broadcast operand first: swap */
                a = bb, bb = x, xt = bt;
            }
            cr_assert(bb, "op %d second input not computed", i);
            if (o->kind == MOP_ADD)
                ref_add(1, xt->shape[1], xt->shape[2], xt->shape[3], a, bb, full, o->act, y);
            else
                ref_mul(1, xt->shape[1], xt->shape[2], xt->shape[3], a, bb, full, o->act, y);
            break;
        }
        case MOP_RESIZE_BILINEAR:
            ref_resize_bilinear(1, ih, iw, c, x, o->out_h, o->out_w, o->align_corners,
                                o->half_pixel_centers, y);
            break;
        default:
            cr_assert_fail("op %d: unexpected kind %d", i, o->kind);
        }
    }
    const struct model_tensor *yt = &m->tensors[m->output];
    for (size_t p = 0; p < (size_t)m->in_h * m->in_w; p++)
        out[p] = buf[m->output][p * yt->shape[3]];
    for (int t = 0; t < m->n_tensors; t++)
        if (t != m->input)
            free(buf[t]);
    free(buf);
}

/* ---- the real photo ---- */

Test(net_model, selfie_256_finds_the_person)
{
    struct model *m = load(M256);
    cr_assert_eq(m->in_h, 256);
    float *in = photo(256, 0), *out = run1(m, in);
    assert_mask(out, 256 * 256);
    /* Boxes on the 256x256 photo: her face, her suit, and two background
     * corners (the flag top-left, the grey backdrop top-right). */
    double face = box_mean(out, 256, 92, 28, 132, 64);
    double suit = box_mean(out, 256, 70, 120, 150, 200);
    double tl = box_mean(out, 256, 0, 0, 24, 24), tr = box_mean(out, 256, 232, 0, 256, 24);
    cr_log_info("256: face %.3f suit %.3f corners %.4f %.4f", face, suit, tl, tr);
    cr_assert_gt(face, 0.9, "face %.3f", face);
    cr_assert_gt(suit, 0.9, "suit %.3f", suit);
    cr_assert_lt(tl, 0.1, "top-left %.3f", tl);
    cr_assert_lt(tr, 0.1, "top-right %.3f", tr);
    free(in);
    free(out);
    model_free(&m);
}

Test(net_model, selfie_144x256_finds_the_person)
{
    struct model *m = load(M144);
    cr_assert_eq(m->in_h, 144);
    cr_assert_eq(m->in_w, 256);
    float *in = photo(144, 0), *out = run1(m, in); /* rows 56..199 of the photo */
    assert_mask(out, 144 * 256);
    double suit = box_mean(out, 256, 70, 70, 150, 130);
    double tl = box_mean(out, 256, 0, 0, 20, 20), tr = box_mean(out, 256, 236, 0, 256, 20);
    cr_log_info("144x256: suit %.3f corners %.4f %.4f", suit, tl, tr);
    cr_assert_gt(suit, 0.9, "suit %.3f", suit);
    cr_assert_lt(tl, 0.1, "top-left %.3f", tl);
    cr_assert_lt(tr, 0.1, "top-right %.3f", tr);
    free(in);
    free(out);
    model_free(&m);
}

/* ---- batch vs single, net vs naive ---- */

static void batch_equals_single(const char *name)
{
    struct model *m = load(name);
    const int h = m->in_h, w = m->in_w;
    const size_t isz = (size_t)h * w * 3, osz = (size_t)h * w;
    float *a = photo(h, 0), *b = photo(h, 1);
    float *in = malloc(3 * isz * sizeof(float)), *out = malloc(3 * osz * sizeof(float));
    cr_assert(in && out);
    memcpy(in, a, isz * sizeof(float));
    memcpy(in + isz, b, isz * sizeof(float));
    for (size_t i = 0; i < isz; i++) /* a smooth synthetic third input */
        in[2 * isz + i] = (float)((i / 3) % (size_t)w) / (float)w * 0.5f + 0.25f;

    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert_eq(net_create(m, 3, &net, &e), 0, "%s", e.msg);
    cr_assert_eq(net_run(net, in, 3, out, &e), 0, "%s", e.msg);
    assert_mask(out, 3 * osz);
    float *one = malloc(osz * sizeof(float));
    cr_assert(one);
    int exact = 1;
    for (int k = 0; k < 3; k++) {
        /* Same net, n = 1, then a net of batch 1. */
        cr_assert_eq(net_run(net, in + k * isz, 1, one, &e), 0, "%s", e.msg);
        float *solo = run1(m, in + k * isz);
        for (size_t i = 0; i < osz; i++) {
            float d1 = fabsf(one[i] - out[k * osz + i]), d2 = fabsf(solo[i] - out[k * osz + i]);
            cr_assert(d1 <= 1e-6f && d2 <= 1e-6f, "%s item %d [%zu]: batch %g, single %g / %g",
                      name, k, i, out[k * osz + i], one[i], solo[i]);
            exact &= d1 == 0 && d2 == 0;
        }
        free(solo);
    }
    cr_log_info("%s: batch 3 == 3 x batch 1 %s", name, exact ? "bit for bit" : "within 1e-6");
    /* The three inputs differ, and so must their masks. */
    cr_assert(memcmp(out, out + osz, osz * sizeof(float)) != 0);
    net_free(&net);
    free(one);
    free(a);
    free(b);
    free(in);
    free(out);
    model_free(&m);
}

Test(net_model, batch3_equals_single_256)
{
    batch_equals_single(M256);
}

Test(net_model, batch3_equals_single_144x256)
{
    batch_equals_single(M144);
}

Test(net_model, matches_naive_executor)
{
    const char *names[2] = { M256, M144 };
    for (int k = 0; k < 2; k++) {
        struct model *m = load(names[k]);
        float *in = photo(m->in_h, 1), *out = run1(m, in);
        float *ref = malloc((size_t)m->in_h * m->in_w * sizeof(float));
        cr_assert(ref);
        naive_run(m, in, ref);
        /* Same sums in the same order: equal bits, unless an FMA build
         * fused the two conv paths' multiply-adds differently. */
#ifdef __FMA__
        const float tol = 1e-4f;
#else
        const float tol = 0.f;
#endif
        for (size_t i = 0; i < (size_t)m->in_h * m->in_w; i++)
            cr_assert(fabsf(out[i] - ref[i]) <= tol, "%s [%zu]: net %.9g, naive %.9g",
                      names[k], i, out[i], ref[i]);
        free(in);
        free(out);
        free(ref);
        model_free(&m);
    }
}

Test(net_model, threads_give_the_same_bits)
{
    /* 5 items over 3 threads (shares 1, 2, 2), then 2 threads, then back
     * to 1: every run equal to single-item runs, bit for bit. */
    struct model *m = load(M144);
    const size_t isz = (size_t)m->in_h * m->in_w * 3, osz = (size_t)m->in_h * m->in_w;
    float *a = photo(m->in_h, 0), *b = photo(m->in_h, 1);
    float *in = malloc(5 * isz * sizeof(float)), *out = malloc(5 * osz * sizeof(float));
    cr_assert(in && out);
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < isz; i++) /* five different inputs */
            in[k * isz + i] = (k % 2 ? b[i] : a[i]) * (1.f - 0.1f * k);
    float *want[5];
    for (int k = 0; k < 5; k++)
        want[k] = run1(m, in + k * isz);
    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert_eq(net_create(m, 5, &net, &e), 0, "%s", e.msg);
    const int threads[4] = { 3, 2, 8, 1 };
    for (int t = 0; t < 4; t++) {
        cr_assert_eq(net_set_threads(net, threads[t], &e), 0, "%s", e.msg);
        for (int n = 1; n <= 5; n += 2) {
            memset(out, 0xff, 5 * osz * sizeof(float));
            cr_assert_eq(net_run(net, in, n, out, &e), 0, "%s", e.msg);
            for (int k = 0; k < n; k++)
                cr_assert(memcmp(out + k * osz, want[k], osz * sizeof(float)) == 0,
                          "%d threads, batch %d: item %d differs", threads[t], n, k);
        }
    }
    cr_assert_eq(net_set_threads(net, 0, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "threads"), "%s", e.msg);
    cr_assert_eq(net_set_threads(net, 4, &e), 0, "%s", e.msg);
    net_free(&net); /* with threads running */
    for (int k = 0; k < 5; k++)
        free(want[k]);
    free(a);
    free(b);
    free(in);
    free(out);
    model_free(&m);
}

/* ---- errors ---- */

Test(net_model, rejects_bad_arguments)
{
    struct model *m = load(M256);
    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert_eq(net_create(m, 0, &net, &e), VR_EINVAL);
    cr_assert_null(net);
    cr_assert(strstr(e.msg, "batch"), "%s", e.msg);
    cr_assert_eq(net_create(m, 2, &net, &e), 0, "%s", e.msg);
    float x = 0;
    cr_assert_eq(net_run(net, &x, 3, &x, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "batch 3"), "%s", e.msg);
    net_free(&net);
    net_free(&net); /* accepts NULL */
    net_free(NULL);
    model_free(&m);
}

static int first_op(const struct model *m, enum model_op_kind k)
{
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].kind == k)
            return i;
    cr_assert_fail("no %s op", model_op_name(k));
    return -1;
}

Test(net_model, rejects_inconsistent_graph)
{
    struct model *m = load(M256);
    struct net *net = NULL;
    vr_err e = { 0 };

    /* A stride the file's output shape disagrees with. */
    int c = first_op(m, MOP_CONV_2D);
    m->ops[c].stride_h = 1;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_EFORMAT);
    cr_assert_null(net);
    cr_assert(strstr(e.msg, "CONV_2D") && strstr(e.msg, "in the file"), "%s", e.msg);
    m->ops[c].stride_h = 2;

    /* Depthwise weights that do not fit the input's channels. */
    int d = first_op(m, MOP_DEPTHWISE_CONV_2D), other = -1;
    for (int i = d + 1; i < m->n_ops && other < 0; i++)
        if (m->ops[i].kind == MOP_DEPTHWISE_CONV_2D &&
            m->tensors[m->ops[i].in[1]].shape[3] != m->tensors[m->ops[d].in[1]].shape[3])
            other = m->ops[i].in[1];
    cr_assert_geq(other, 0);
    int keep = m->ops[d].in[1];
    m->ops[d].in[1] = other;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "DEPTHWISE_CONV_2D") && strstr(e.msg, "depth multiplier"), "%s",
              e.msg);
    m->ops[d].in[1] = keep;

    /* A fused TANH is refused, naming why. */
    m->ops[c].act = MACT_TANH;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_ENOTSUP);
    cr_assert(strstr(e.msg, "TANH"), "%s", e.msg);
    m->ops[c].act = MACT_NONE;

    /* An op reading a tensor nothing has written yet. */
    int last = m->n_ops - 1;
    keep = m->ops[1].in[0];
    m->ops[1].in[0] = m->ops[last].out;
    cr_assert_eq(net_create(m, 1, &net, &e), VR_EFORMAT);
    cr_assert(strstr(e.msg, "before any op writes it"), "%s", e.msg);
    m->ops[1].in[0] = keep;

    /* Restored, it works again. */
    cr_assert_eq(net_create(m, 1, &net, &e), 0, "%s", e.msg);
    net_free(&net);
    model_free(&m);
}

/* ---- speed ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of 20 single-image runs, logged for docs/notes/cpu-engine.md.
 * Run alone and pinned for a number worth quoting:
 *   taskset -c 0 build/tests/vrtests --filter 'net/speed_256' -j1 --verbose
 * The bound here only catches a pathological slowdown. */
Test(net_model, speed_256)
{
    struct model *m = load(M256);
    float *in = photo(256, 0), *out = malloc(256 * 256 * sizeof(float));
    struct net *net = NULL;
    vr_err e = { 0 };
    cr_assert(out);
    cr_assert_eq(net_create(m, 1, &net, &e), 0, "%s", e.msg);
    cr_assert_eq(net_run(net, in, 1, out, &e), 0, "%s", e.msg); /* warm up */
    /* Wall time, and this thread's CPU time: on a shared machine the
     * latter is what the code costs, the former includes waiting. */
    double ms[20], cpu[20];
    for (int r = 0; r < 20; r++) {
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        cr_assert_eq(net_run(net, in, 1, out, &e), 0, "%s", e.msg);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ms[r] = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        cpu[r] = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
    }
    qsort(ms, 20, sizeof ms[0], cmp_double);
    qsort(cpu, 20, sizeof cpu[0], cmp_double);
    double median = (ms[9] + ms[10]) / 2;
    cr_log_info("net_run 1x256x256: wall median %.2f ms (min %.2f), cpu median %.2f ms "
                "(20 runs)", median, ms[0], (cpu[9] + cpu[10]) / 2);
    assert_mask(out, 256 * 256);
    cr_assert_lt(median, 1000.0, "one 256x256 inference took %.1f ms", median);
    net_free(&net);
    free(in);
    free(out);
    model_free(&m);
}

/*
 * t-tflite-pose.c - MediaPipe Pose's models (models/pose_*.tflite) load:
 * the ops the pose tier added are read (PAD's paddings, DEPTH_TO_SPACE's
 * block, MAX_POOL_2D, RESHAPE, CONCATENATION's axis), DENSIFY's CSR
 * constants come out dense with the values a separate Python reader of the
 * flatbuffer gives (sums and a row of the detector's second 1x1 conv), and
 * every graph output is kept, in file order.
 */
#include "model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static int count_kind(const struct model *m, enum model_op_kind k)
{
    int n = 0;
    for (int i = 0; i < m->n_ops; i++)
        n += m->ops[i].kind == k;
    return n;
}

static const struct model_tensor *by_name(const struct model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    return NULL;
}

Test(tflite_pose, detector_loads_with_its_ops)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load("models/pose_detection.tflite", &m, &e), 0, "%s", e.msg);
    cr_assert(m->in_h == 224 && m->in_w == 224 && m->in_c == 3);
    /* 45 + 28 + 15 + 8 + 6 + 3 + 2 + 2: DEQUANTIZE and DENSIFY gone */
    cr_assert_eq(m->n_ops, 109);
    cr_assert_eq(count_kind(m, MOP_PAD), 8);
    cr_assert_eq(count_kind(m, MOP_DEPTH_TO_SPACE), 3);
    cr_assert_eq(count_kind(m, MOP_RESHAPE), 6);
    cr_assert_eq(count_kind(m, MOP_CONCATENATION), 2);
    cr_assert_eq(m->n_outputs, 2);
    cr_assert_str_eq(m->tensors[m->outputs[0]].name, "Identity");   /* [1,2254,12] */
    cr_assert_str_eq(m->tensors[m->outputs[1]].name, "Identity_1"); /* [1,2254,1] */
    cr_assert_eq(m->output, m->outputs[0]);
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        if (o->kind == MOP_PAD && i == 0) /* 224 -> 226: one on each side of H and W */
            cr_assert(o->pad_h0 == 1 && o->pad_h1 == 1 && o->pad_w0 == 1 && o->pad_w1 == 1 &&
                      o->pad_c0 == 0 && o->pad_c1 == 0);
        if (o->kind == MOP_DEPTH_TO_SPACE)
            cr_assert_eq(o->block_size, 2);
        if (o->kind == MOP_CONCATENATION) /* [1,N,C] along N: W of [1,1,N,C] */
            cr_assert(o->axis == 2 && o->n_in == 3);
    }
    model_free(&m);
}

Test(tflite_pose, densify_gives_the_dense_weights)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load("models/pose_detection.tflite", &m, &e), 0, "%s", e.msg);
    /* conv2d_1's weights [16,1,1,24]: 96 stored values, CSR over 16 rows */
    const struct model_tensor *w = by_name(m, "model_1/model/conv2d_1/Conv2D_dequantize2");
    cr_assert_not_null(w);
    cr_assert_eq(w->count, 16 * 24);
    double sum = 0, abs_sum = 0;
    int zeros = 0;
    for (size_t i = 0; i < w->count; i++) {
        sum += w->data[i];
        abs_sum += fabs(w->data[i]);
        zeros += w->data[i] == 0.0f;
    }
    cr_assert_eq(zeros, 288);
    cr_assert_float_eq(sum, 14.2207336, 1e-6);
    cr_assert_float_eq(abs_sum, 65.4219055, 1e-6);
    const float row0[6] = { 0, 0, 0.5849609375f, -0.201904296875f, 0, 0.1756591796875f };
    for (int i = 0; i < 6; i++)
        cr_assert_eq(w->data[i], row0[i], "value %d: %g, want %g", i, w->data[i], row0[i]);
    model_free(&m);
}

Test(tflite_pose, landmark_lite_keeps_five_outputs)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    cr_assert_eq(model_load("models/pose_landmark_lite.tflite", &m, &e), 0, "%s", e.msg);
    cr_assert(m->in_h == 256 && m->in_w == 256 && m->in_c == 3);
    cr_assert_eq(m->n_ops, 129);
    cr_assert_eq(count_kind(m, MOP_MAX_POOL_2D), 2);
    cr_assert_eq(count_kind(m, MOP_PAD), 5);
    cr_assert_eq(m->n_outputs, 5);
    /* the segmentation logits are the third output */
    const struct model_tensor *seg = &m->tensors[m->outputs[2]];
    cr_assert_str_eq(seg->name, "Identity_2");
    cr_assert(seg->rank == 4 && seg->shape[1] == 256 && seg->shape[2] == 256 &&
              seg->shape[3] == 1);
    model_free(&m);
}

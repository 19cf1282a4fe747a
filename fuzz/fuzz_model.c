/*
 * fuzz_model.c - libFuzzer target for the tflite loader (tflite/tflite.c).
 *
 * Feeds arbitrary bytes to model_load_mem(). A load must either fail with a
 * negative code and a message, or succeed with a model whose indices and
 * shapes are consistent (checked below, so a "successful" load of garbage
 * that would crash the network later is also a finding). Built and run by
 * `make fuzz` (mk/fuzz.mk); the corpus starts from tests/data/fuzz-seeds/
 * and the real models.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* ---- invariants of a loaded model ---- */

static void check_tensor_ref(const struct model *m, int t)
{
    if (t < 0 || t >= m->n_tensors)
        abort();
}

/* Activations are [1,H,W,C] (model.h's contract with kernels/net/net_exec_ref.c). */
static void check_act(const struct model *m, int t)
{
    check_tensor_ref(m, t);
    const struct model_tensor *x = &m->tensors[t];
    if (x->rank != 4 || x->shape[0] != 1 || x->data)
        abort();
}

static void check_model(const struct model *m)
{
    check_act(m, m->input);
    check_tensor_ref(m, m->output);
    if (m->n_ops < 1 || m->in_h < 1 || m->in_w < 1 || m->in_c < 1 || m->out_c < 1)
        abort();
    if (strlen(m->hash) != 16)
        abort();
    for (int i = 0; i < m->n_tensors; i++) {
        const struct model_tensor *t = &m->tensors[i];
        size_t count = 1;
        if (t->rank < 0 || t->rank > 4 || memchr(t->name, 0, sizeof t->name) == NULL)
            abort();
        for (int d = 0; d < t->rank; d++) {
            if (t->shape[d] < 1 || t->shape[d] > MODEL_MAX_DIM)
                abort();
            count *= (size_t)t->shape[d];
        }
        if (count != t->count)
            abort();
        if (t->data) /* touch every constant: ASan catches a short buffer */
            for (size_t k = 0; k < t->count; k++)
                if (t->data[k] != t->data[k])
                    abort();
    }
    for (int i = 0; i < m->n_ops; i++) {
        const struct model_op *o = &m->ops[i];
        if ((int)o->kind < 0 || o->kind >= MOP_COUNT || o->n_in < 1 || o->n_in > 3)
            abort();
        for (int k = 0; k < o->n_in; k++)
            check_tensor_ref(m, o->in[k]);
        check_act(m, o->in[0]);
        check_act(m, o->out);
        for (int k = o->n_in; k < 3; k++)
            if (o->in[k] != -1)
                abort();
        if (o->kind == MOP_TRANSPOSE_CONV_BIAS || o->kind == MOP_CONV_2D ||
            o->kind == MOP_DEPTHWISE_CONV_2D || o->kind == MOP_AVERAGE_POOL_2D)
            if (o->stride_h < 1 || o->stride_w < 1 ||
                (o->padding != MPAD_SAME && o->padding != MPAD_VALID))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model *m = NULL;
    vr_err e = { 0 };
    int rc = model_load_mem(data, size, "fuzz", &m, &e);
    if (rc == 0) {
        if (!m)
            abort();
        check_model(m);
    } else if (rc > 0 || m != NULL || e.msg[0] == '\0' || e.code != rc) {
        abort();
    }
    model_free(&m);
    if (m)
        abort();
    return 0;
}

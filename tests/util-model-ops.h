/*
 * util-model-ops.h - test helpers shared by t-net-ops-block.c and t-net-ops-tail.c: run a range of a
 * loaded tflite model's ops one at a time with the plain ops_ref.h references (what a fused twin
 * must mean), plus model loading, bias lookup, seeded inputs and the element-wise comparison.
 */
#ifndef VR_UTIL_MODEL_OPS_H
#define VR_UTIL_MODEL_OPS_H

#include "model.h"

#include <stddef.h>
#include <stdint.h>

/* Loads the model at rel_path (found by vr_data_path) and asserts it has want_ops ops, the model
 * the test knows. The caller frees it with model_free(). */
struct model *umo_load(const char *rel_path, int want_ops);

/* The op's bias tensor (its third input), or NULL when it has none. */
const float *umo_bias(const struct model *m, const struct model_op *o);

/* count floats uniform in [lo, hi) from a fixed LCG advanced in *seed, so failures reproduce;
 * the same seed gives the same values. The caller frees the array. */
float *umo_random(size_t count, float lo, float hi, uint32_t *seed);

/* Runs ops first..last (inclusive) on batch n (the model's N=1 shapes times n), reading and
 * writing buf, a caller-owned table of m->n_tensors pointers indexed by tensor id. On entry buf
 * holds the external inputs (the tensors no op in the range computes), every other entry NULL.
 * Each op's output is malloc'd into buf[op.out]. Supported: CONV_2D, DEPTHWISE_CONV_2D,
 * TRANSPOSE_CONV_BIAS, AVERAGE_POOL_2D, HARD_SWISH, RELU, LOGISTIC, and MUL / ADD of two equal
 * maps or a map and a [1][1][c] vector in either order. Asserts (naming the op) that inputs are
 * there, no output is computed twice and conv-like output sizes match the model.
 * Returns buf[m->ops[last].out]; every output stays in buf until umo_free_outputs(). */
float *umo_run(const struct model *m, int first, int last, int n, float **buf);

/* Frees the outputs umo_run() put in buf for ops first..last, the last op's included, and sets
 * those entries to NULL. The external inputs and buf itself stay the caller's. */
void umo_free_outputs(const struct model *m, int first, int last, float **buf);

/* Asserts, for every i < count, that got[i] and want[i] are finite and that
 * |got[i] - want[i]| <= atol + rtol * |want[i]|, naming the first element that is not.
 * Returns the largest |got - want|; *worst, when not NULL, gets the largest diff / tolerance. */
double umo_compare(const float *got, const float *want, size_t count, double atol, double rtol,
                   double *worst);

#endif

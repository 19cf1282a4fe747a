/*
 * net.h - runs a loaded model (model.h) on a batch of inputs.
 *
 * The CPU backend executes the ops in order with the C twins of ops_ref.h,
 * float32, planning activation buffers once at creation so a run allocates
 * nothing. The CUDA backend (net_cuda.h, when built with nvcc) runs the same
 * graph with hand-written kernels; this header is the CPU one and is what
 * the GPU one is checked against.
 *
 * net/ is the network's room: this executor (net_exec_ref.c), the GPU one
 * (net_cuda.h, net_exec.cu), the ops and their kernels. Twin rule, here and in seg/:
 * every CUDA kernel file X.cu has its plain-C twin X_ref.c beside it, the
 * same functions (ref_ for cu_) with the same arguments less the stream,
 * and the GPU tests (tests/gpu/) compare each pair on fresh random inputs.
 * The files without a twin, and why, are listed in tests/check-twins.sh
 * (part of `make test`), which checks the rule by name.
 */
#ifndef VR_NET_H
#define VR_NET_H

#include "model.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

struct net;

/* Prepares the model for batches of up to max_batch inputs. The net keeps a
 * pointer to `m`, which must outlive it. Returns 0 or a VR_E* code. */
int net_create(const struct model *m, int max_batch, struct net **out, vr_err *err);

/* Runs n (1..max_batch) inputs: `in` is [n][in_h][in_w][3] RGB in [0,1],
 * `out` is [n][in_h][in_w] (the sigmoid output, channel 0). Both host
 * memory, caller-owned. */
int net_run(struct net *net, const float *in, int n, float *out, vr_err *err);

/* For models with several outputs (the pose tier's): like net_create, but
 * every graph output (model.h's outputs[]) is kept whole, and the net runs
 * with net_run_outputs, not net_run. */
int net_create_outputs(const struct model *m, int max_batch, struct net **out, vr_err *err);

/* Values a batch item of graph output k (0 when k is out of range). */
size_t net_output_count(const struct net *net, int k);

/* Runs n inputs as net_run does; outs[k] receives graph output k, n *
 * net_output_count(net, k) floats, host memory, caller-owned. */
int net_run_outputs(struct net *net, const float *in, int n, float *const *outs, vr_err *err);

/* Makes later net_run() calls split their batch over `threads` threads
 * (1..NET_MAX_THREADS): each runs the whole graph on its share of the items
 * with activation memory of its own, so memory grows with the thread count
 * and a batch of one still runs on one thread. Results are bit for bit those
 * of one thread. Call between runs, never during one. Returns 0, or a VR_E*
 * code with the net back on one thread. */
#define NET_MAX_THREADS 64
int net_set_threads(struct net *net, int threads, vr_err *err);

/* Frees and clears *net; accepts NULL. */
void net_free(struct net **net);

#ifdef __cplusplus
}
#endif

#endif

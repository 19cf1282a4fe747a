/*
 * net_cuda.h - the network on the GPU: the same graph as net.h, run with the
 * hand-written kernels of kernels/net/ops_*.cu (fp16 half2 or fp32, fused where
 * it pays), captured as one CUDA graph per batch size and replayed. Weights
 * go to the GPU once, at creation. Only built with nvcc (VR_HAVE_CUDA).
 */
#ifndef VR_NET_CUDA_H
#define VR_NET_CUDA_H

#include "model.h"
#include "vr_err.h"

#ifdef __cplusplus
extern "C" {
#endif

struct netcu;

/* Variant knobs the auto-tuner chooses among (tune.h). */
struct netcu_opts {
    int max_batch;   /* tiles per run */
    int fp16;        /* 0: float32 activations; 1: float16 (half2 / 16-byte
                      * accesses, float32 arithmetic) in the decoder's last,
                      * largest stage, float32 before: masks within 0.02 of
                      * float32; 2: float16 everywhere (fastest; ~0.1 max abs) */
    int fused;       /* 0: one kernel per op; 1: fused conv+bias+act, SE
                      * block, tconv+sigmoid, prologues and epilogues; 2: as
                      * 1, and stage kernels with the stage's maps in shared
                      * memory: inverted-residual block runs (ops_block.cu),
                      * pointwise + depthwise pairs (ops_pwdw.cu), the
                      * decoder's stages (ops_tail.cu); the decoder's
                      * resized 1x1 convs on the small map, then resized */
    int block;       /* threads per block for the element-wise kernels (0 = default) */
    int use_graph;   /* 1: capture one CUDA graph per batch size */
    int one_stream;  /* 1: never split a batch. By default a net made for 32+
                      * tiles runs each batch of 2+ as two halves on two
                      * streams (one activation arena each, same memory in
                      * all): the halves' latency-bound kernels fill each
                      * other's idle SMs (+3.5% at 64 and 256 tiles on an
                      * H100; a small loss at 8). Same bits either way. */
    int write_resized; /* 1: write every upsampled map. By default (fused = 2)
                        * a map that only pools and decoder stages read stays
                        * small and they resize it where they read (NETPLAN_RS_DEFER,
                        * net_plan.c); rounding differs only. */
};

/* Prepares the net on the current CUDA device. `m` must outlive the net. */
int netcu_create(const struct model *m, const struct netcu_opts *o,
                 struct netcu **out, vr_err *err);

/* Runs n tiles on `stream` (a cudaStream_t): d_in is device memory
 * [n][in_h][in_w][3] float32 RGB in [0,1]; d_out is device memory
 * [n][in_h][in_w] float32 (the sigmoid output). Asynchronous: returns after
 * enqueueing; errors of the launch are reported, kernel faults surface at
 * the caller's next synchronisation. */
int netcu_run(struct netcu *net, const float *d_in, int n, float *d_out,
              void *stream, vr_err *err);

/* For models with several outputs (the pose tier's, as net.h's
 * net_create_outputs; their pointwise steps too big for shared memory take
 * k_pw_gemm, ops_pw_tile.h; each output equals the CPU engine's within
 * 2e-4 of its scale, g_net_pose): every graph output (model.h's outputs[]) is kept
 * whole, float32, and the net runs with netcu_run_outputs, not netcu_run.
 * A batch is never split over two streams (opts.one_stream is implied). */
int netcu_create_outputs(const struct model *m, const struct netcu_opts *o,
                         struct netcu **out, vr_err *err);

/* Values a tile of graph output k (0 when k is out of range or the net
 * was made by netcu_create). */
size_t netcu_output_count(const struct netcu *net, int k);

/* Runs n tiles as netcu_run does; d_outs[k] (device memory) receives graph
 * output k, n * netcu_output_count(net, k) floats. Asynchronous alike. */
int netcu_run_outputs(struct netcu *net, const float *d_in, int n, float *const *d_outs,
                      void *stream, vr_err *err);

/* Bytes of device memory the net holds (weights + activations). */
size_t netcu_device_bytes(const struct netcu *net);

/* Kernels one run launches (the plan's steps after fusion). */
int netcu_kernels(const struct netcu *net);

void netcu_free(struct netcu **net);

#ifdef __cplusplus
}
#endif

#endif

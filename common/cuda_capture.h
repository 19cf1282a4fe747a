/*
 * cuda_capture.h - a CUDA graph captured from a stream, tried again when
 * another thread spoiled the capture.
 *
 * A stream capture (ThreadLocal mode: the process's other threads' CUDA
 * calls go on meanwhile) is invalidated by what another thread does to
 * the whole context while it runs: a cudaFree, a cudaFreeHost, NVENC's or
 * NVDEC's set-up (serve --slot-mode threads: 16 slots of one process a
 * GPU, each with its network and its matte encoder). That says nothing of
 * the next capture, so the capture is tried again a few times before the
 * caller gives up (net_exec.cu fails the batch, h264enc_gpu.c launches
 * the stages one by one). One helper for both, so they retry alike.
 *
 * Only in a CUDA build (VR_HAVE_CUDA): it names the runtime's types.
 */
#ifndef VR_CUDA_CAPTURE_H
#define VR_CUDA_CAPTURE_H

#ifdef VR_HAVE_CUDA

#include "vr_err.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tries of one capture before it fails. */
enum { CUDA_CAPTURE_TRIES = 4 };

/* What a capture records: the launches fn makes on stream, arg its own.
 * 0 or VR_E* with err set. */
typedef int (*cuda_capture_fn)(void *arg, cudaStream_t stream, vr_err *err);

/* Captures fn's launches on stream into *graph (the caller's to destroy;
 * NULL on failure). A try that fails, either the capture itself
 * (cudaStreamEndCapture's error) or fn with VR_ECUDA (a launch refused
 * in a spoiled capture), is made again, up to CUDA_CAPTURE_TRIES tries,
 * 1, 2, 3 ms apart; fn's other errors end it at once. The stream is out
 * of capture and the runtime's last error cleared after a failed try.
 * who starts the messages ("netcu: graph capture failed: ..."). Returns
 * 0, fn's error, or VR_ECUDA (the capture could not begin, or its last
 * try failed). */
int cuda_capture(cudaStream_t stream, cuda_capture_fn fn, void *arg, const char *who,
                 cudaGraph_t *graph, vr_err *err);

#ifdef __cplusplus
}
#endif

#endif /* VR_HAVE_CUDA */

#endif

/*
 * cuda_capture.c - a CUDA graph captured from a stream, tried again when
 * another thread spoiled the capture (cuda_capture.h).
 */
#include "cuda_capture.h"

#ifdef VR_HAVE_CUDA

#include <unistd.h>

int cuda_capture(cudaStream_t stream, cuda_capture_fn fn, void *arg, const char *who,
                 cudaGraph_t *graph, vr_err *err)
{
    *graph = NULL;
    for (int t = 1;; t++) {
        cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        if (e != cudaSuccess)
            return vr_err_set(err, VR_ECUDA, "%s: cannot capture a graph: %s", who,
                              cudaGetErrorString(e));
        int rc = fn(arg, stream, err);
        e = cudaStreamEndCapture(stream, graph); /* always: the stream leaves capture */
        if (rc == 0 && e == cudaSuccess)
            return 0;
        if (*graph)
            cudaGraphDestroy(*graph);
        *graph = NULL;
        cudaGetLastError(); /* a spoiled try's failed launch is not the next call's */
        if ((rc < 0 && rc != VR_ECUDA) || t == CUDA_CAPTURE_TRIES)
            return rc < 0 ? rc
                          : vr_err_set(err, VR_ECUDA, "%s: graph capture failed: %s", who,
                                       cudaGetErrorString(e));
        usleep(1000 * t);
    }
}

#else

/* A build without CUDA has no captures; ISO C wants a declaration. */
typedef int cuda_capture_not_built;

#endif

/*
 * g-common-capture.c - cuda_capture (common/cuda_capture.h), the one
 * retrying stream capture of the network's and the matte encoder's CUDA
 * graphs: a spoiled try is made again and its graph runs what the good try
 * captured; an error of the caller's own ends it at once; a capture
 * spoiled every time fails after CUDA_CAPTURE_TRIES tries. Each time the
 * stream is out of capture afterwards. A try is spoiled as another
 * thread's whole-context call spoils it in the product: here by
 * synchronizing the capturing stream, which the runtime refuses and which
 * invalidates the capture (CUDA Programming Guide, "Invalidation").
 */
#include "cuda_capture.h"

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <stdint.h>

TestSuite(g_common_capture, .timeout = 60);

enum { BYTES = 4096 };

/* What the test's callback does: how often it was called, and on which
 * tries it spoils the capture or fails on its own. */
struct probe {
    uint8_t *d;        /* BYTES on the device, set to 0x5a by each try */
    int tries;
    int spoil_until;   /* tries 1..spoil_until spoil the capture */
    int own_error;     /* returned by every try (0: none) */
};

static int record(void *arg, cudaStream_t s, vr_err *err)
{
    struct probe *p = arg;
    p->tries++;
    if (cudaMemsetAsync(p->d, 0x5a, BYTES, s) != cudaSuccess)
        return vr_err_set(err, VR_ECUDA, "memset refused");
    if (p->tries <= p->spoil_until) {
        cudaStreamSynchronize(s); /* refused in a capture: it is invalidated */
        return vr_err_set(err, VR_ECUDA, "try %d spoiled", p->tries);
    }
    return p->own_error ? vr_err_set(err, p->own_error, "the caller's own error") : 0;
}

static cudaStream_t stream_new(struct probe *p)
{
    cudaStream_t s;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&p->d, BYTES), cudaSuccess);
    cr_assert_eq(cudaMemset(p->d, 0, BYTES), cudaSuccess);
    return s;
}

static void not_capturing(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st;
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusNone, "the stream left in capture");
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "a failed try's error left behind");
}

Test(g_common_capture, spoiled_try_is_tried_again)
{
    struct probe p = { .spoil_until = 1 };
    cudaStream_t s = stream_new(&p);
    cudaGraph_t g = NULL;
    vr_err err = { 0 };
    cr_assert_eq(cuda_capture(s, record, &p, "test", &g, &err), 0, "%s", err.msg);
    cr_assert_eq(p.tries, 2);
    cr_assert(g);
    not_capturing(s);
    /* the graph holds the good try's memset: nothing ran while captured */
    uint8_t h[BYTES];
    cr_assert_eq(cudaMemcpy(h, p.d, BYTES, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(h[0], 0, "a captured launch ran");
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
    cr_assert_eq(cudaMemcpy(h, p.d, BYTES, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < BYTES; i++)
        cr_assert_eq(h[i], 0x5a, "byte %d", i);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaFree(p.d);
    cudaStreamDestroy(s);
}

Test(g_common_capture, own_error_ends_at_once)
{
    struct probe p = { .own_error = VR_EINVAL };
    cudaStream_t s = stream_new(&p);
    cudaGraph_t g = NULL;
    vr_err err = { 0 };
    cr_assert_eq(cuda_capture(s, record, &p, "test", &g, &err), VR_EINVAL);
    cr_assert_eq(p.tries, 1);
    cr_assert_null(g);
    cr_assert_str_eq(err.msg, "the caller's own error");
    not_capturing(s);
    cudaFree(p.d);
    cudaStreamDestroy(s);
}

Test(g_common_capture, spoiled_every_time_fails_after_the_tries)
{
    struct probe p = { .spoil_until = 1000 };
    cudaStream_t s = stream_new(&p);
    cudaGraph_t g = NULL;
    vr_err err = { 0 };
    cr_assert_eq(cuda_capture(s, record, &p, "test", &g, &err), VR_ECUDA);
    cr_assert_eq(p.tries, CUDA_CAPTURE_TRIES);
    cr_assert_null(g);
    not_capturing(s);
    cudaFree(p.d);
    cudaStreamDestroy(s);
}

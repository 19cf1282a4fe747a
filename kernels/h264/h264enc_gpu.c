/*
 * h264enc_gpu.c - the matte encoder's frames on a GPU (h264enc_gpu.h):
 * upload (or take the device's luma), the stages of h264_cuda.h, the
 * slices' places read back, the pack, the packed slices read back. One wait a frame: the buffer is cleared to the length on the
 * device and read back as long as twice the last frame's (a longer one
 * waits again for the rest). Queue and collect are apart, with two slots,
 * so the CPU escapes frame n while the GPU codes frame n+1. A P frame's
 * stages from the search to the read-back of the slices' places run as
 * one CUDA graph (captured once for each reference and slot, a capture
 * that another thread spoils tried again: cuda_capture.h), so the host
 * makes one call for ~20 (VR_H264_GRAPH=0: launched one by one).
 */
#include "h264enc_gpu.h"

#include <stddef.h>

#ifdef VR_HAVE_CUDA

#include "cuda_capture.h"
#include "h264_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VR_H264_PROFILE=1 (benches): each stage's GPU time by events, summed by
 * frame kind and printed to stderr at the free. */
enum { PROF_LOAD, PROF_SEARCH, PROF_MB, PROF_INTRA_P, PROF_SKIPRUNS, PROF_CAVLC, PROF_SCAN,
       PROF_PACK, PROF_STAGES };
static const char *const prof_name[PROF_STAGES] = { "load", "search", "per-MB code", "intra in P",
                                                     "skip runs", "cavlc", "prefix sum",
                                                     "slices+clear+pack+copy+wait" };

struct h264_gpu {
    int dev;
    cudaStream_t s;
    struct h264_frame f;     /* device pointers; ref and rec swap each frame */
    uint8_t *in;             /* a host frame uploaded, w x h */
    uint8_t *rec[2];
    int cur;                 /* rec[cur] is the last frame queued's */
    /* Two slots, so that frame n+1 is queued while frame n's packet is
     * still read back and escaped: each has its packed slice data, its
     * pinned read-back and tail, its events. The per-MB buffers are
     * shared: the stream orders frame n's pack before frame n+1's stages. */
    uint8_t *out[2];         /* the packed slices */
    uint64_t *tail;          /* pinned, tail_words a slot: sbyte[slices + 1], counts[3];
                              * f.sbyte and f.counts alike on the device */
    int tail_words;
    uint8_t *pin[2];         /* pinned: the slice data read back (an async copy), grown */
    size_t pin_cap[2];
    size_t asked[2];         /* bytes the slot's read-back copies */
    int idr[2];
    cudaEvent_t done[2];     /* blocking events: the waits sleep instead of spinning a core */
    cudaEvent_t loaded;      /* the queued frame's luma is copied: its caller may reuse it */
    int head, npend;         /* the slot queued next; frames queued, not collected (0..2) */
    uint64_t *tmp;           /* the scans' scratch, H264_SCAN_TMP_WORDS */
    int *prog;               /* the wavefronts' rows' counts and ticket, mbh + 1; and
                              * with intra_p, each MB's "done" (mbw * mbh more) */
    size_t out_cap;
    size_t guess;            /* bytes read back before the length is known: twice the
                              * last frame's */
    int w, h;
    int intra_p;             /* P frames may have I16 MBs: stages 1c, 1d */
    int lanes;               /* VR_H264_INTRA_LANES (default 1): the intra stages'
                              * faster kernels (h264_cuda.h); 0: the tenth pass's */
    int graph;               /* VR_H264_GRAPH (default 1): a P frame's stages as a graph */
    /* [cur][slot]: the P frames' stages captured from the search to the
     * places' read-back against rec[cur] into slot's buffers, with the qp
     * and header bits they were captured with (kernel arguments) */
    cudaGraphExec_t gx[2][2];
    int gx_qp[2][2];
    uint32_t gx_hdr[2][2];
    long long graph_frames;  /* P frames launched as a graph */
    int prof;                /* VR_H264_PROFILE: ev[] recorded, ms[kind][stage] summed */
    cudaEvent_t ev[2][PROF_STAGES + 1];
    double ms[2][PROF_STAGES];
    long long nprof[2];
};

static void prof_mark(struct h264_gpu *g, int slot, int k)
{
    if (g->prof)
        cudaEventRecord(g->ev[slot][k], g->s);
}

/* After the frame's last wait: its stages' times into the sums. */
static void prof_add(struct h264_gpu *g, int slot)
{
    if (!g->prof)
        return;
    int idr = g->idr[slot];
    for (int k = 0; k < PROF_STAGES; k++) {
        float t = 0;
        if (cudaEventElapsedTime(&t, g->ev[slot][k], g->ev[slot][k + 1]) == cudaSuccess)
            g->ms[idr][k] += t;
    }
    g->nprof[idr]++;
}

static void prof_print(const struct h264_gpu *g)
{
    for (int kind = 0; g->prof && kind < 2; kind++) {
        if (!g->nprof[kind])
            continue;
        fprintf(stderr, "h264 GPU stages, %s frames (%lld), ms a frame:", kind ? "IDR" : "P",
                g->nprof[kind]);
        for (int k = 0; k < PROF_STAGES; k++)
            fprintf(stderr, " %s %.3f%s", prof_name[k], g->ms[kind][k] / (double)g->nprof[kind],
                    k + 1 < PROF_STAGES ? "," : "\n");
    }
    if (g->prof && g->graph_frames)
        fprintf(stderr, "h264 GPU stages: %lld P frames as a CUDA graph, whose whole time is under "
                "\"search\" (VR_H264_GRAPH=0: each stage's)\n", g->graph_frames);
}

/* The slot's pinned buffer at least `bytes` long (grown with room). */
static cudaError_t pin_room(struct h264_gpu *g, int slot, size_t bytes)
{
    if (bytes <= g->pin_cap[slot])
        return cudaSuccess;
    cudaFreeHost(g->pin[slot]);
    g->pin[slot] = NULL;
    g->pin_cap[slot] = 0;
    size_t cap = bytes + bytes / 2 + 65536;
    cudaError_t e = cudaMallocHost((void **)&g->pin[slot], cap);
    if (e == cudaSuccess)
        g->pin_cap[slot] = cap;
    return e;
}

/* Waits for what was queued on the stream up to now, asleep. */
static cudaError_t wait_stream(struct h264_gpu *g, cudaEvent_t ev)
{
    cudaError_t e = cudaEventRecord(ev, g->s);
    return e != cudaSuccess ? e : cudaEventSynchronize(ev);
}

static int cuda_fail(cudaError_t e, const char *what, vr_err *err)
{
    return vr_err_set(err, VR_ECUDA, "matte encoder on the GPU: %s: %s", what,
                      cudaGetErrorString(e));
}

#define CK(call, what)                                                                          \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            rc = cuda_fail(e_, what, err);                                                      \
            goto fail;                                                                          \
        }                                                                                       \
    } while (0)

int h264_gpu_new(int dev, int w, int h, int mbw, int mbh, int intra_p, int slices,
                 struct h264_gpu **out, vr_err *err)
{
    *out = NULL;
    int rc = 0;
    struct h264_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    g->dev = dev;
    g->w = w;
    g->h = h;
    g->intra_p = intra_p;
    size_t n = (size_t)mbw * mbh, plane = n * 256;
    g->f.mbw = mbw;
    g->f.mbh = mbh;
    g->f.ls = mbw * 16;
    g->f.slices = slices;
    g->tail_words = slices + 3;
    g->out_cap = h264_rbsp_cap(mbw, mbh, slices);
    g->guess = 1 << 20;
    CK(cudaSetDevice(dev), "cannot use the device");
    CK(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking), "cannot create a stream");
    CK(cudaMalloc((void **)&g->in, (size_t)w * h), "out of device memory");
    CK(cudaMalloc((void **)&g->f.src, plane), "out of device memory");
    CK(cudaMalloc((void **)&g->rec[0], plane), "out of device memory");
    CK(cudaMalloc((void **)&g->rec[1], plane), "out of device memory");
    CK(cudaMalloc((void **)&g->f.mb, n * sizeof *g->f.mb), "out of device memory");
    CK(cudaMalloc((void **)&g->f.run, (n + 1) * sizeof *g->f.run), "out of device memory");
    CK(cudaMalloc((void **)&g->f.nbits, n * sizeof *g->f.nbits), "out of device memory");
    CK(cudaMalloc((void **)&g->f.pos, (n + 1) * sizeof *g->f.pos), "out of device memory");
    CK(cudaMalloc((void **)&g->f.bits, n * H264_MB_MAX_BYTES), "out of device memory");
    CK(cudaMalloc((void **)&g->tmp, H264_SCAN_TMP_WORDS * sizeof *g->tmp), "out of device memory");
    CK(cudaMalloc((void **)&g->prog, ((size_t)mbh + 1 + (intra_p ? n : 0)) * sizeof *g->prog),
       "out of device memory");
    /* the slices' places and the counts after them, as in a slot's tail:
     * one read-back */
    CK(cudaMalloc((void **)&g->f.sbyte, (size_t)g->tail_words * sizeof *g->f.sbyte),
       "out of device memory");
    g->f.counts = (uint32_t *)(g->f.sbyte + slices + 1);
    CK(cudaMallocHost((void **)&g->tail, 2 * (size_t)g->tail_words * sizeof *g->tail),
       "out of pinned memory");
    CK(cudaEventCreateWithFlags(&g->loaded, cudaEventBlockingSync | cudaEventDisableTiming),
       "cannot create an event");
    const char *pe = getenv("VR_H264_PROFILE"), *pl = getenv("VR_H264_INTRA_LANES");
    const char *pg = getenv("VR_H264_GRAPH"), *pw = getenv("VR_H264_CAVLC_WORDS");
    g->prof = pe && pe[0] == '1';
    g->lanes = !(pl && pl[0] == '0' && !pl[1]);
    g->graph = !(pg && pg[0] == '0' && !pg[1]);
    g->f.byte_writer = pw && pw[0] == '0' && !pw[1];
    for (int slot = 0; slot < 2; slot++) {
        CK(cudaMalloc((void **)&g->out[slot], g->out_cap), "out of device memory");
        CK(cudaEventCreateWithFlags(&g->done[slot], cudaEventBlockingSync | cudaEventDisableTiming),
           "cannot create an event");
        for (int k = 0; g->prof && k <= PROF_STAGES; k++)
            CK(cudaEventCreate(&g->ev[slot][k]), "cannot create an event");
    }
    *out = g;
    return 0;
fail:
    h264_gpu_free(&g);
    return rc;
}

void h264_gpu_free(struct h264_gpu **gp)
{
    struct h264_gpu *g = gp ? *gp : NULL;
    if (!g)
        return;
    cudaSetDevice(g->dev);
    if (g->s)
        cudaStreamSynchronize(g->s);
    prof_print(g);
    for (int c = 0; c < 2; c++)
        for (int slot = 0; slot < 2; slot++)
            if (g->gx[c][slot])
                cudaGraphExecDestroy(g->gx[c][slot]);
    for (int slot = 0; slot < 2; slot++) {
        for (int k = 0; k <= PROF_STAGES; k++)
            if (g->ev[slot][k])
                cudaEventDestroy(g->ev[slot][k]);
        cudaFree(g->out[slot]);
        cudaFreeHost(g->pin[slot]);
        if (g->done[slot])
            cudaEventDestroy(g->done[slot]);
    }
    if (g->loaded)
        cudaEventDestroy(g->loaded);
    cudaFree(g->in);
    cudaFree(g->f.src);
    cudaFree(g->rec[0]);
    cudaFree(g->rec[1]);
    cudaFree(g->f.mb);
    cudaFree(g->f.run);
    cudaFree(g->f.nbits);
    cudaFree(g->f.pos);
    cudaFree(g->f.sbyte);
    cudaFree(g->f.bits);
    cudaFree(g->tmp);
    cudaFree(g->prog);
    cudaFreeHost(g->tail);
    if (g->s)
        cudaStreamDestroy(g->s);
    free(g);
    *gp = NULL;
}

/* The stages after the load, to the slices' places and counts read back
 * into the slot's tail (marks: the profile's events recorded between
 * them; never while the stream is captured). */
static int stages(struct h264_gpu *g, int slot, int idr, int marks, vr_err *err)
{
    int rc = 0;
    struct h264_frame *f = &g->f;
    const int prof = g->prof && marks;
#define MARK(k) (prof ? (void)cudaEventRecord(g->ev[slot][k], g->s) : (void)0)
    MARK(PROF_SEARCH);
    if (!idr && (rc = cu_h264_search(f, g->s, err)) < 0)
        return rc;
    MARK(PROF_MB);
    if (idr) {
        rc = cu_h264_intra(f, g->prog, g->lanes, g->s, err);
    } else {
        rc = cu_h264_inter(f, g->s, err);
    }
    if (rc < 0)
        return rc;
    MARK(PROF_INTRA_P);
    if (!idr && g->intra_p &&
        ((rc = cu_h264_intra_p(f, g->prog, g->lanes, g->s, err)) < 0 ||
         (rc = cu_h264_pfix(f, g->s, err)) < 0))
        return rc;
    MARK(PROF_SKIPRUNS);
    if ((rc = cu_h264_skipruns(f, g->tmp, g->s, err)) < 0)
        return rc;
    MARK(PROF_CAVLC);
    if ((rc = cu_h264_cavlc(f, idr, g->tmp, g->s, err)) < 0)
        return rc;
    MARK(PROF_SCAN);
    if ((rc = cu_h264_scan(f, g->tmp, g->s, err)) < 0)
        return rc;
    /* the slices placed, the buffer cleared to the length the device
     * knows, the pack, the places and counts read back */
    uint64_t *tail = g->tail + (size_t)g->tail_words * slot;
    MARK(PROF_PACK);
#undef MARK
    if ((rc = cu_h264_slices(f, idr, g->s, err)) < 0 ||
        (rc = cu_h264_clear(f, g->out[slot], 4, g->s, err)) < 0 ||
        (rc = cu_h264_pack(f, g->out[slot], idr, g->s, err)) < 0)
        return rc;
    CK(cudaMemcpyAsync(tail, f->sbyte, ((size_t)f->slices + 1) * sizeof(uint64_t) +
                                           3 * sizeof(uint32_t),
                       cudaMemcpyDeviceToHost, g->s), "cannot read the length back");
    return 0;
fail:
    return rc;
}

/* The graph's failure (why): said once, and the stages launched one by
 * one from then on (the frame's bytes are the same either way). */
static void graph_off(struct h264_gpu *g, const char *why)
{
    fprintf(stderr, "matte encoder: CUDA graph off (%s): the stages launched one by one\n", why);
    cudaGetLastError(); /* a capture's failed launch is not the next one's */
    g->graph = 0;
}

/* cuda_capture's callback: a P frame's stages into a slot's buffers, on
 * g->s (the stream captured), without the profile's marks. */
struct captured {
    struct h264_gpu *g;
    int slot;
};

static int stages_captured(void *arg, cudaStream_t s, vr_err *err)
{
    const struct captured *c = arg;
    (void)s;
    return stages(c->g, c->slot, 0, 0, err);
}

/* The P frame's stages for rec[g->cur] as reference and the slot's
 * buffers, captured once (again when qp or the header's bits change:
 * they are kernel arguments); NULL when the graph is off. Capture only
 * records the launches (ThreadLocal: other threads' CUDA calls go on; a
 * capture one of them spoils is tried again, cuda_capture.h). */
static cudaGraphExec_t graph_for(struct h264_gpu *g, int slot)
{
    const int c = g->cur;
    cudaGraphExec_t *x = &g->gx[c][slot];
    if (!g->graph)
        return NULL;
    if (*x && g->gx_qp[c][slot] == g->f.qp && g->gx_hdr[c][slot] == g->f.hdr_bits)
        return *x;
    if (*x) {
        cudaGraphExecDestroy(*x);
        *x = NULL;
    }
    vr_err cerr = { 0 };
    cudaGraph_t gr = NULL;
    struct captured arg = { g, slot };
    if (cuda_capture(g->s, stages_captured, &arg, "capture", &gr, &cerr) < 0) {
        graph_off(g, cerr.msg);
        return NULL;
    }
    cudaError_t e = cudaGraphInstantiate(x, gr, 0);
    cudaGraphDestroy(gr);
    if (e != cudaSuccess) {
        char why[128];
        snprintf(why, sizeof why, "cannot instantiate: %s", cudaGetErrorString(e));
        *x = NULL;
        graph_off(g, why);
        return NULL;
    }
    g->gx_qp[c][slot] = g->f.qp;
    g->gx_hdr[c][slot] = g->f.hdr_bits;
    return *x;
}

int h264_gpu_queue(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, vr_err *err)
{
    int rc = 0;
    if (g->npend >= 2)
        return vr_err_set(err, VR_EINVAL, "matte encoder on the GPU: two frames queued already");
    struct h264_frame *f = &g->f;
    int nxt = !g->cur, slot = g->head;
    f->qp = qp;
    f->hdr_bits = hdr_bits;
    f->ref = g->rec[g->cur];
    f->rec = g->rec[nxt];
    CK(cudaSetDevice(g->dev), "cannot use the device");
    prof_mark(g, slot, PROF_LOAD);
    if (!y_dev) {
        CK(cudaMemcpy2DAsync(g->in, (size_t)g->w, y, (size_t)ls, (size_t)g->w, (size_t)g->h,
                             cudaMemcpyHostToDevice, g->s), "cannot upload the frame");
        y = g->in;
        ls = g->w;
    }
    if ((rc = cu_h264_load(f, y, ls, g->w, g->h, g->s, err)) < 0)
        return rc;
    CK(cudaEventRecord(g->loaded, g->s), "cannot record an event");
    /* the load stays out of the graph: y changes from frame to frame */
    cudaGraphExec_t x = idr ? NULL : graph_for(g, slot);
    if (x) {
        prof_mark(g, slot, PROF_SEARCH);
        CK(cudaGraphLaunch(x, g->s), "cannot launch the frame's graph");
        for (int k = PROF_MB; k <= PROF_PACK; k++) /* the graph's whole time under "search" */
            prof_mark(g, slot, k);
        g->graph_frames++;
    } else if ((rc = stages(g, slot, idr, 1, err)) < 0) {
        return rc;
    }
    /* one wait a frame: a read-back of as many bytes as a frame may take
     * (twice the last one's); a bigger one reads the rest at the collect */
    size_t guess = g->guess < g->out_cap ? g->guess : g->out_cap;
    CK(pin_room(g, slot, guess), "out of pinned memory");
    CK(cudaMemcpyAsync(g->pin[slot], g->out[slot], guess, cudaMemcpyDeviceToHost, g->s),
       "cannot read the slice back");
    prof_mark(g, slot, PROF_STAGES);
    CK(cudaEventRecord(g->done[slot], g->s), "cannot record an event");
    g->asked[slot] = guess;
    g->idr[slot] = idr;
    g->head = !slot;
    g->npend++;
    g->cur = nxt;
    /* y is the caller's again once the load has copied it (the frame
     * before is done by then too, but this frame's stages run on) */
    CK(cudaEventSynchronize(g->loaded), "the frame's load failed");
    return 0;
fail:
    return rc;
}

int h264_gpu_collect(struct h264_gpu *g, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                     vr_err *err)
{
    int rc = 0;
    if (g->npend <= 0)
        return vr_err_set(err, VR_EINVAL, "matte encoder on the GPU: no frame queued");
    int slot = g->npend == 2 ? g->head : !g->head; /* the oldest */
    g->npend--;
    CK(cudaSetDevice(g->dev), "cannot use the device");
    CK(cudaEventSynchronize(g->done[slot]), "the frame's stages failed");
    prof_add(g, slot);
    const uint64_t *tail = g->tail + (size_t)g->tail_words * slot;
    size_t bytes = (size_t)tail[g->f.slices];
    if (bytes > g->out_cap)
        return vr_err_set(err, VR_EINVAL, "matte encoder on the GPU: %zu bytes over the buffer",
                          bytes);
    if (bytes > g->asked[slot]) {
        CK(pin_room(g, slot, bytes), "out of pinned memory");
        CK(cudaMemcpyAsync(g->pin[slot], g->out[slot], bytes, cudaMemcpyDeviceToHost, g->s),
           "cannot read the slice back");
        CK(wait_stream(g, g->done[slot]), "cannot read the slice back");
    }
    g->guess = 2 * bytes + 65536;
    memcpy(rbsp, g->pin[slot], bytes);
    memcpy(sbyte, tail, ((size_t)g->f.slices + 1) * sizeof *sbyte);
    memcpy(counts, (const uint8_t *)(tail + g->f.slices + 1), 3 * sizeof *counts);
    return 0;
fail:
    return rc;
}

int h264_gpu_frame(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                   vr_err *err)
{
    int rc = h264_gpu_queue(g, y, ls, y_dev, qp, idr, hdr_bits, err);
    return rc < 0 ? rc : h264_gpu_collect(g, rbsp, sbyte, counts, err);
}

int h264_gpu_pending(const struct h264_gpu *g) { return g->npend; }

long long h264_gpu_graph_frames(const struct h264_gpu *g) { return g->graph_frames; }

int h264_gpu_recon(struct h264_gpu *g, uint8_t *dst, vr_err *err)
{
    int rc = 0;
    size_t plane = (size_t)g->f.mbw * g->f.mbh * 256;
    CK(cudaSetDevice(g->dev), "cannot use the device");
    CK(cudaMemcpyAsync(dst, g->rec[g->cur], plane, cudaMemcpyDeviceToHost, g->s),
       "cannot read the reconstruction back");
    CK(cudaStreamSynchronize(g->s), "cannot read the reconstruction back");
    return 0;
fail:
    return rc;
}

#else /* a build without CUDA */

int h264_gpu_new(int dev, int w, int h, int mbw, int mbh, int intra_p, int slices,
                 struct h264_gpu **out, vr_err *err)
{
    (void)dev, (void)w, (void)h, (void)mbw, (void)mbh, (void)intra_p, (void)slices;
    *out = NULL;
    return vr_err_set(err, VR_ENOTBUILT, "matte encoder: this build has no CUDA (built without nvcc)");
}

int h264_gpu_frame(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                   vr_err *err)
{
    (void)g, (void)y, (void)ls, (void)y_dev, (void)qp, (void)idr, (void)rbsp, (void)hdr_bits;
    (void)sbyte, (void)counts;
    return vr_err_set(err, VR_ENOTBUILT, "matte encoder: this build has no CUDA");
}

int h264_gpu_queue(struct h264_gpu *g, const uint8_t *y, int ls, int y_dev, int qp, int idr,
                   uint32_t hdr_bits, vr_err *err)
{
    (void)g, (void)y, (void)ls, (void)y_dev, (void)qp, (void)idr, (void)hdr_bits;
    return vr_err_set(err, VR_ENOTBUILT, "matte encoder: this build has no CUDA");
}

int h264_gpu_collect(struct h264_gpu *g, uint8_t *rbsp, uint64_t *sbyte, uint32_t counts[3],
                     vr_err *err)
{
    (void)g, (void)rbsp, (void)sbyte, (void)counts;
    return vr_err_set(err, VR_ENOTBUILT, "matte encoder: this build has no CUDA");
}

int h264_gpu_pending(const struct h264_gpu *g)
{
    (void)g;
    return 0;
}

long long h264_gpu_graph_frames(const struct h264_gpu *g)
{
    (void)g;
    return 0;
}

int h264_gpu_recon(struct h264_gpu *g, uint8_t *dst, vr_err *err)
{
    (void)g, (void)dst;
    return vr_err_set(err, VR_ENOTBUILT, "matte encoder: this build has no CUDA");
}

void h264_gpu_free(struct h264_gpu **g)
{
    if (g)
        *g = NULL;
}

#endif

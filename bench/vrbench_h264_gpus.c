/*
 * vrbench_h264_gpus.c - vrbench-h264's per-GPU row: K CUDA encoders at
 * once on one GPU, as the product runs them (16 worker slots a GPU, threads
 * of one process, each slot with its own encoder and stream), so the GPU
 * codes K streams side by side. One encoder leaves most SMs idle in its
 * latency-bound stages (intra in P: docs/PERF.md, "The matte encoder");
 * the frames of K over the wall time are what a GPU codes.
 *
 * Each thread opens its encoder, warms it up as run_gpu does (so its
 * packets are the single encoder's, byte for byte: checked by hash), waits
 * at a barrier, then codes its frames queued from device memory. The wall
 * time runs from the barrier to the last thread's last packet.
 */
#include "vrbench_h264.h"

#include "h264enc.h"

#ifdef VR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t h264b_hash(uint64_t h, const uint8_t *p, int n)
{
    /* FNV-1a's step over 8-byte words, the tail bytewise: it runs inside
     * the timed loops, and bytewise it takes 0.8 ms a 180 KB frame on the
     * 2-core build box (0.05 ms by words); it weighed on the fifth pass's
     * measured runs (docs/PERF.md) */
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

double h264b_wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

#ifdef VR_HAVE_CUDA

enum { MAX_ENCODERS = 64 };

/* One thread's encoder: what it is given, what it hands back. */
struct coder {
    const struct clip *c;
    uint8_t *const *d;     /* the clip in device memory, shared */
    int qp, gop, slices, total;
    double fps;
    pthread_barrier_t *go; /* all threads and the timer */
    uint64_t hash;
    long long bytes, graph_frames;
    double end;            /* wall clock at its last packet */
    int failed;
    char msg[256];
};

/* The timed frames, queued (frame n escaped while n+1 is coded). 0 or -1. */
static int code_queued(struct coder *k, struct h264enc *e, vr_err *err)
{
    const uint8_t *p;
    int size, key;
    int64_t tag;
    long long got = 0;
    k->hash = 0xcbf29ce484222325ull;
    for (int i = 0; i <= k->total; i++) {
        int f = i % k->c->n, rc;
        rc = i == k->total ? h264enc_flush(e, &p, &size, &key, &tag, err)
                           : h264enc_queue(e, k->d[f], k->c->w, 1, i % k->gop == 0, i, &p,
                                           &size, &key, &tag, err);
        if (rc < 0)
            return -1;
        if (size && tag != got) {
            vr_err_set(err, VR_EINVAL, "a packet out of order");
            return -1;
        }
        got += size > 0;
        k->bytes += size;
        k->hash = h264b_hash(k->hash, p, size);
    }
    if (got != k->total) {
        vr_err_set(err, VR_EINVAL, "a packet lost");
        return -1;
    }
    return 0;
}

static void *coder_run(void *arg)
{
    struct coder *k = arg;
    struct h264enc *e = NULL;
    vr_err err = { 0 };
    struct h264enc_opts o = { .w = k->c->w, .h = k->c->h, .qp = k->qp, .fps_num = (int)k->fps,
                              .fps_den = 1, .full_range = 1, .use_gpu = 1, .gpu = 0,
                              .slices = k->slices };
    const uint8_t *p;
    int size, key;
    int ok = h264enc_new(&o, &e, &err) == 0;
    /* warm-up as run_gpu's: first launches, the first IDR, the graphs */
    for (int i = 0; ok && i < 4; i++)
        ok = h264enc_frame_dev(e, k->d[i % k->c->n], k->c->w, i == 0, &p, &size, &key, &err) == 0;
    pthread_barrier_wait(k->go); /* even failed: the others wait for it */
    if (ok)
        ok = code_queued(k, e, &err) == 0;
    k->end = h264b_wall_s();
    if (ok) {
        struct h264enc_stats st;
        h264enc_stats(e, &st);
        k->graph_frames = st.graph_frames;
    } else {
        k->failed = 1;
        snprintf(k->msg, sizeof k->msg, "%s", err.msg);
    }
    h264enc_free(&e);
    return NULL;
}

/* K encoders at once: the row and its RESULT line. 0 or 1. */
static int run_k(const struct clip *c, uint8_t *const *d, int qp, int gop, double fps,
                 int slices, int total, uint64_t want, int nk)
{
    struct coder *k = calloc((size_t)nk, sizeof *k);
    pthread_t *t = calloc((size_t)nk, sizeof *t);
    pthread_barrier_t go;
    int rc = 1;
    if (!k || !t || pthread_barrier_init(&go, NULL, (unsigned)nk + 1) != 0) {
        free(k);
        free(t);
        fprintf(stderr, "vrbench-h264: per GPU: out of memory\n");
        return 1;
    }
    for (int i = 0; i < nk; i++) {
        k[i] = (struct coder){ .c = c, .d = d, .qp = qp, .gop = gop, .slices = slices,
                               .total = total, .fps = fps, .go = &go };
        if (pthread_create(&t[i], NULL, coder_run, &k[i]) != 0) {
            /* the others wait at the barrier for it: no way on */
            fprintf(stderr, "vrbench-h264: per GPU: cannot start %d threads\n", nk);
            exit(1);
        }
    }
    pthread_barrier_wait(&go);
    double w0 = h264b_wall_s(), end = w0;
    long long bytes = 0, graphs = 0;
    int same = 1, failed = 0;
    for (int i = 0; i < nk; i++) {
        pthread_join(t[i], NULL);
        if (k[i].failed) {
            fprintf(stderr, "vrbench-h264: per GPU, encoder %d: %s\n", i, k[i].msg);
            failed = 1;
            continue;
        }
        end = k[i].end > end ? k[i].end : end;
        bytes += k[i].bytes;
        graphs += k[i].graph_frames;
        same &= k[i].hash == want;
    }
    pthread_barrier_destroy(&go);
    if (!failed && !same) {
        fprintf(stderr, "vrbench-h264: per GPU, %d encoders: packets differ from one "
                        "encoder's\n", nk);
    } else if (!failed) {
        double fr = (double)nk * total / (end - w0);
        char name[64];
        snprintf(name, sizeof name, "vr h264 CUDA, %d encoder%s at once", nk, nk > 1 ? "s" : "");
        printf("%-36s %12lld %10.2f %9s %12s   %.0f fps per GPU (%d x %d frames, %lld P "
               "frames as graphs, %.0f fps each)\n",
               name, bytes / nk, bytes / nk * 8.0 * fps / total / 1e6, "=C twin", "-", fr, nk,
               total, graphs, fr / nk);
        printf("RESULT h264_cuda_per_gpu_k%d_fps %.0f fps\n", nk, fr);
        rc = 0;
    }
    free(k);
    free(t);
    return rc;
}

/* VR_H264_ENCODERS: the K's, "1 2 4" by default; each 1..MAX_ENCODERS. */
static int parse_ks(int *ks, int max)
{
    const char *v = getenv("VR_H264_ENCODERS");
    const char *s = v && *v ? v : "1 2 4";
    int n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > MAX_ENCODERS || n == max)
            return -1;
        ks[n++] = (int)x;
        s = end;
        while (*s == ' ' || *s == ',')
            s++;
    }
    return n;
}

int h264b_per_gpu(const struct clip *c, int qp, int gop, double fps, int slices, int total,
                  uint64_t want)
{
    int ks[16], nk = parse_ks(ks, 16), rc = 0;
    if (nk <= 0) {
        fprintf(stderr, "vrbench-h264: VR_H264_ENCODERS: up to 16 counts, each 1..%d\n",
                MAX_ENCODERS);
        return 1;
    }
    uint8_t **d = calloc((size_t)c->n, sizeof *d);
    if (!d)
        return 1;
    for (int i = 0; i < c->n && !rc; i++)
        if (cudaMalloc((void **)&d[i], (size_t)c->w * c->h) != cudaSuccess ||
            cudaMemcpy(d[i], c->y[i], (size_t)c->w * c->h, cudaMemcpyHostToDevice) != cudaSuccess) {
            fprintf(stderr, "vrbench-h264: cannot upload the clip\n");
            rc = 1;
        }
    for (int i = 0; i < nk && !rc; i++)
        rc = run_k(c, d, qp, gop, fps, slices, total, want, ks[i]);
    for (int i = 0; i < c->n; i++)
        cudaFree(d[i]);
    free(d);
    return rc;
}

#else /* a build without CUDA */

int h264b_per_gpu(const struct clip *c, int qp, int gop, double fps, int slices, int total,
                  uint64_t want)
{
    (void)c, (void)qp, (void)gop, (void)fps, (void)slices, (void)total, (void)want;
    fprintf(stderr, "vrbench-h264: gpu: this build has no CUDA\n");
    return 1;
}

#endif

/*
 * bench_net.c - `make bench-net` (part 1 of `make bench-gpu`): throughput of
 * the network alone on the GPU, tiles/s, for batch sizes x fp16 / fp32 x
 * blocks / fused / unfused (netcu_opts.fused 2 / 1 / 0; always one CUDA
 * graph per batch), timed with CUDA events
 * around each replay after a warm-up; the median of --iters replays. Input
 * is a real image's tile repeated with small random jitter (never zeros).
 * Prints a table, and one JSON object per case into --json.
 *
 *   bench-net --model models/selfie_segmentation.tflite [--batches 1,8,64]
 *             [--iters 30] [--json out.json] [--dump DIR] [--profile BATCH]
 *
 * --profile BATCH first prints each kernel's time at that batch (events
 * between steps, no graph) with the bytes it moves at least.
 *
 * A model of several outputs (the pose tier's: pose_detection,
 * pose_landmark_lite) is made with netcu_create_outputs and run with
 * netcu_run_outputs, as the people tier runs it (every output kept, float32).
 *
 * --dump DIR writes DIR/in.f32 ([1][h][w][3]) and DIR/out.f32 ([1][h][w],
 * fp32 fused), and the other variants' masks beside it, so
 * bench/torch_net.py can check its PyTorch network against ours on the
 * same input.
 */
#include "model.h"
#include "net_cuda.h"
#include "vio_image.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BATCHES 16

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "bench-net: %s: %s\n", #call, cudaGetErrorString(e_));   \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static int maxb_arg(const int *b, int n)
{
    int m = 1;
    for (int i = 0; i < n; i++)
        m = b[i] > m ? b[i] : m;
    return m;
}

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* One tile from a real image (centre crop, nearest scaling if smaller);
 * falls back to a smooth synthetic pattern if the image is missing. */
static void fill_tile(float *t, int h, int w)
{
    struct vio_image *img = NULL;
    if (vio_image_read("tests/data/image/astronaut-256.png", &img, NULL) == 0) {
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const uint8_t *p = img->data + (size_t)(y * img->h / h) * img->linesize +
                                   3 * (size_t)(x * img->w / w);
                for (int c = 0; c < 3; c++)
                    t[((size_t)y * w + x) * 3 + c] = p[c] / 255.0f;
            }
        vio_image_free(&img);
        return;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                t[((size_t)y * w + x) * 3 + c] = 0.5f + 0.4f * ((x * (c + 1) + y) % 97) / 97.0f;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "bench-net: cannot write %s\n", path);
        if (f)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

/* Outputs of a multi-output net, one buffer an output, sized for maxb tiles. */
#define MAX_OUTS 8
static float *d_outs[MAX_OUTS];
static int multi;

static int net_make(const struct model *m, const struct netcu_opts *o, struct netcu **net,
                    vr_err *err)
{
    return multi ? netcu_create_outputs(m, o, net, err) : netcu_create(m, o, net, err);
}

static int net_go(struct netcu *net, const float *din, int n, float *dout, cudaStream_t st,
                  vr_err *err)
{
    return multi ? netcu_run_outputs(net, din, n, d_outs, st, err)
                 : netcu_run(net, din, n, dout, st, err);
}

static int alloc_outs(const struct model *m, int maxb, vr_err *err)
{
    struct netcu_opts o = { 1, 0, 2, 0, 0, 0, 0 };
    struct netcu *net = NULL;
    if (netcu_create_outputs(m, &o, &net, err) < 0)
        return -1;
    for (int k = 0; k < m->n_outputs && k < MAX_OUTS; k++)
        if (cudaMalloc((void **)&d_outs[k], netcu_output_count(net, k) * maxb * sizeof(float))
            != cudaSuccess)
            return -1;
    netcu_free(&net);
    return 0;
}

int main(int argc, char **argv)
{
    const char *model_path = "models/selfie_segmentation.tflite", *json = NULL, *dump = NULL;
    int batches[MAX_BATCHES] = { 1, 8, 32, 64, 128, 256 }, nb = 6, iters = 30, profile = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model_path = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
            profile = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) {
            nb = 0;
            for (char *s = argv[++i]; *s && nb < MAX_BATCHES; s++) {
                batches[nb++] = atoi(s);
                while (s[1] && s[1] != ',')
                    s++;
                if (s[1] == ',')
                    s++;
            }
        } else {
            fprintf(stderr, "usage: bench-net [--model F] [--batches 1,8,..] [--iters N] "
                            "[--json F] [--dump DIR]\n");
            return 2;
        }
    }
    if (profile < 0 || profile > maxb_arg(batches, nb))
        profile = 0;
    if (iters < 3 || iters > 10000)
        iters = 30;
    for (int i = 0; i < nb; i++)
        if (batches[i] < 1 || batches[i] > 4096) {
            fprintf(stderr, "bench-net: batch %d out of 1..4096\n", batches[i]);
            return 2;
        }
    struct model *m = NULL;
    vr_err err = { 0 };
    if (model_load(model_path, &m, &err) < 0) {
        fprintf(stderr, "bench-net: %s\n", err.msg);
        return 1;
    }
    int maxb = 1;
    for (int i = 0; i < nb; i++)
        maxb = batches[i] > maxb ? batches[i] : maxb;
    const int h = m->in_h, w = m->in_w;
    size_t tin = (size_t)h * w * 3, tout = (size_t)h * w;
    float *hin = malloc(tin * maxb * sizeof(float)), *hout = malloc(tout * sizeof(float));
    if (!hin || !hout)
        return 1;
    fill_tile(hin, h, w);
    uint32_t r = 12345;
    for (int b = 1; b < maxb; b++)
        for (size_t k = 0; k < tin; k++) {   /* jittered copies: distinct tiles */
            r = r * 1664525u + 1013904223u;
            float v = hin[k] + ((float)(r >> 8) / 16777216.0f - 0.5f) * 0.05f;
            hin[tin * b + k] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
    float *din = NULL, *dout = NULL;
    CK(cudaMalloc((void **)&din, tin * maxb * sizeof(float)));
    CK(cudaMalloc((void **)&dout, tout * maxb * sizeof(float)));
    CK(cudaMemcpy(din, hin, tin * maxb * sizeof(float), cudaMemcpyHostToDevice));
    multi = m->n_outputs > 1;
    if (multi && (m->n_outputs > MAX_OUTS || alloc_outs(m, maxb, &err) < 0)) {
        fprintf(stderr, "bench-net: %s: %d outputs: %s\n", model_path, m->n_outputs,
                err.msg[0] ? err.msg : "more than bench-net holds, or no memory");
        return 1;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        fprintf(stderr, "bench-net: cannot write %s\n", json);
        return 1;
    }
    printf("bench-net: %s on %s (%d SMs), %dx%d tiles, median of %d graph replays\n",
           model_path, prop.name, prop.multiProcessorCount, w, h, iters);
    printf("%-6s %-7s %-8s %10s %12s %10s\n", "batch", "prec", "variant", "ms/batch",
           "tiles/s", "dev MiB");
    float *times = malloc(sizeof(float) * iters);
    if (!times)
        return 1;

    if (dump && !multi) {
        mkdir(dump, 0755);
        if (write_file(dump, "in.f32", hin, tin * sizeof(float)))
            return 1;
        /* fp32 fused, fp32 unfused, fp16 fused, fp32 blocks, fp16 blocks */
        static const int dv[5][2] = { { 0, 1 }, { 0, 0 }, { 1, 1 }, { 0, 2 }, { 1, 2 } };
        static const char *const dname[5] = { "out.f32", "out-unfused.f32", "out-fp16.f32",
                                              "out-blocks.f32", "out-fp16-blocks.f32" };
        for (int v = 0; v < 5; v++) {
            struct netcu_opts o = { 1, dv[v][0], dv[v][1], 0, 1, 0, 0 };
            struct netcu *net = NULL;
            if (netcu_create(m, &o, &net, &err) < 0 || netcu_run(net, din, 1, dout, st, &err) < 0) {
                fprintf(stderr, "bench-net: %s\n", err.msg);
                return 1;
            }
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(hout, dout, tout * sizeof(float), cudaMemcpyDeviceToHost));
            if (write_file(dump, dname[v], hout, tout * sizeof(float)))
                return 1;
            netcu_free(&net);
        }
    }

    if (profile > 0) {
        /* per-kernel times (no graph: events between the steps), printed by
         * netcu_free to stderr; float32 blocks (the people tier's), fp16 = 1 fused
         * and blocks, fp16 = 2 blocks */
        setenv("VR_NETCU_PROFILE", "1", 1);
        static const int pv[4][2] = { { 0, 2 }, { 1, 1 }, { 1, 2 }, { 2, 2 } };
        for (int p = 0; p < 4; p++) {
            struct netcu_opts o = { profile, pv[p][0], pv[p][1], 0, 0, 0, 0 };
            struct netcu *net = NULL;
            if (net_make(m, &o, &net, &err) < 0)
                return fprintf(stderr, "bench-net: %s\n", err.msg), 1;
            for (int k = 0; k < 10; k++)
                if (net_go(net, din, profile, dout, st, &err) < 0)
                    return fprintf(stderr, "bench-net: %s\n", err.msg), 1;
            netcu_free(&net);
        }
        unsetenv("VR_NETCU_PROFILE");
    }

    for (int bi = 0; bi < nb; bi++)
        for (int v = 0; v < 9; v++) {
            /* fp16 = 1 (mixed, the product's), 2 (all float16), 0 (float32);
             * fused 2 (blocks), 1, 0 */
            static const int prec[3] = { 1, 2, 0 };
            int n = batches[bi], fp16 = prec[v / 3], fused = 2 - v % 3;
            struct netcu_opts o = { n, fp16, fused, 0, 1, 0, 0 };
            struct netcu *net = NULL;
            if (net_make(m, &o, &net, &err) < 0) {
                fprintf(stderr, "bench-net: batch %d: %s\n", n, err.msg);
                return 1;
            }
            for (int k = 0; k < 3; k++)   /* capture + warm-up */
                if (net_go(net, din, n, dout, st, &err) < 0) {
                    fprintf(stderr, "bench-net: %s\n", err.msg);
                    return 1;
                }
            CK(cudaStreamSynchronize(st));
            for (int k = 0; k < iters; k++) {
                CK(cudaEventRecord(e0, st));
                if (net_go(net, din, n, dout, st, &err) < 0) {
                    fprintf(stderr, "bench-net: %s\n", err.msg);
                    return 1;
                }
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&times[k], e0, e1));
            }
            CK(cudaGetLastError());
            qsort(times, iters, sizeof *times, cmpf);
            float med = times[iters / 2];
            double tps = n / (med / 1e3);
            static const char *const pname[] = { "fp32", "fp16", "fp16all" };
            static const char *const vname[] = { "unfused", "fused", "blocks" };
            printf("%-6d %-7s %-8s %10.3f %12.0f %10.1f\n", n, pname[fp16],
                   vname[fused], med, tps, netcu_device_bytes(net) / 1048576.0);
            if (jf)
                fprintf(jf, "{\"bench\":\"net\",\"gpu\":\"%s\",\"model\":\"%s\",\"batch\":%d,"
                            "\"precision\":\"%s\",\"variant\":\"%s\",\"ms_median\":%.4f,"
                            "\"ms_min\":%.4f,\"ms_max\":%.4f,\"tiles_per_s\":%.1f,"
                            "\"device_bytes\":%zu}\n",
                        prop.name, model_path, n, pname[fp16],
                        vname[fused], med, times[0], times[iters - 1], tps,
                        netcu_device_bytes(net));
            netcu_free(&net);
        }
    if (jf)
        fclose(jf);
    free(times);
    free(hin);
    free(hout);
    cudaFree(din);
    cudaFree(dout);
    model_free(&m);
    return 0;
}

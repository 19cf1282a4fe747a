/*
 * bench_seg.c - `make bench-gpu`, part 2: whole-frame segmentation
 * throughput of the SEG_CUDA engine (preprocess from NV12 in device memory
 * + tiles + network + blend + guided refinement to the output size +
 * smoothing), for 1080p mono, 4K, 6K and 8K side-by-side x batch sizes x
 * fp16 / fp32, in the balanced profile unless --profile says otherwise
 * (a comma list measures each profile in the same run, e.g. the people
 * tier's cost at 8K: --profile balanced,quality,quality-people --cases 8k).
 *
 * Prints a table (frames/s, tiles/s, ms per frame by stage, peak GPU
 * memory) and writes the same as JSON (--json PATH). Also measures the
 * device's copy bandwidth once, and for each case the bytes the frame
 * kernels must move per frame, so a shortfall can be read as "bytes" or
 * "not bytes" (launches, network arithmetic, occupancy).
 *
 *   bench_seg [--profile P[,P2...]] [--json PATH] [--cases 1080p,4k,6k,8k]
 *             [--batches 1,8,16] [--precisions fp16,fp32] [--seconds S] [--gpu N]
 *             [--tuned] [--breakdown]
 *
 * --tuned lets the engine take the tune cache's variant (by default the
 * precision asked is measured); --breakdown also times each frame kernel
 * alone at the largest batch.
 */
#include "config.h"
#include "clock.h"
#include "frame_cuda.h"
#include "frame_temporal.h"
#include "log.h"
#include "seg.h"
#include "seg_backend.h"

#include <cuda_runtime.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FRAMES_DISTINCT 4 /* frames a batch cycles through (each > L2) */

struct geom {
    const char *name;
    int w, h;
    enum seg_layout layout;
};

static const struct geom geoms[] = {
    { "1080p", 1920, 1080, SEG_LAYOUT_MONO },
    { "4k", 3840, 1920, SEG_LAYOUT_SBS },
    { "6k", 5760, 2880, SEG_LAYOUT_SBS },
    { "8k", 8192, 4096, SEG_LAYOUT_SBS },
};

#define MAX_PROFILES 8

struct result {
    const char *profile;
    const struct geom *g;
    int batch, fp16, ow, oh, tiles_per_frame;
    double fps, tiles_s, ms_frame, pre, net, post; /* per frame, ms */
    double engine_mb, used_mb;                     /* engine's allocations; process */
    double frame_bytes;                            /* bytes the frame kernels move */
    int ok;
    char err[256];
};

static double used_mb(void)
{
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    return (double)(tot - fr) / (1 << 20);
}

/* A device-to-device copy of 1 GiB, 5 times: the bandwidth ceiling (bytes
 * read + written per second). */
static double copy_gbs(void)
{
    size_t n = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) {
        cudaFree(a);
        return 0.0;
    }
    cudaMemset(a, 1, n);
    cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, 0);
    for (int i = 0; i < 5; i++)
        cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return 5.0 * 2.0 * n / (ms * 1e-3) / 1e9;
}

/* NV12 test content: a lit, textured scene with a bright figure per eye
 * (the kernels' cost does not depend on content; the network's neither). */
static void fill_nv12(uint8_t *y, uint8_t *uv, int w, int h, int seed)
{
    uint32_t s = 2463534242u + seed;
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            int ex = c % (w / 2 > 0 ? w / 2 : 1);
            int fig = abs(ex - w / 4) < w / 24 && r > h / 4;
            y[(size_t)r * w + c] = (uint8_t)(fig ? 200 + (s & 15) : 60 + ((c ^ r) & 63) + (s & 7));
        }
    for (int r = 0; r < h / 2; r++)
        for (int c = 0; c < w / 2; c++) {
            uv[(size_t)r * w + 2 * c] = (uint8_t)(120 + (c & 15));
            uv[(size_t)r * w + 2 * c + 1] = (uint8_t)(130 + (r & 15));
        }
}

/* Bytes the frame kernels must move per frame at least: preprocess reads
 * the eye once per covering tile (grid overlap + whole pass: counted from
 * the plan's tile areas), luma reads the eye's Y, refine reads Y at the
 * output sampling and writes the mask; work images are small and ignored. */
static double frame_bytes(const struct geom *g, int ow, int oh, int tiles_per_frame)
{
    (void)tiles_per_frame;
    double y = (double)g->w * g->h, uv = y / 2;
    double pre = 2.3 * (y + uv); /* 2x2 grid at 25% overlap: 1.3x; + whole pass: 1x */
    double luma = y;
    double refine = (double)ow * oh * 4 < y ? y : (double)ow * oh; /* area reads all Y */
    double mask = (double)ow * oh;
    return pre + luma + refine + mask;
}

static void run_case(const struct geom *g, int batch, int fp16, const struct vr_config *base,
                     int gpu, double seconds, uint8_t **dframes, struct result *r)
{
    vr_err err = { 0, "" };
    struct vr_config cfg = *base;
    snprintf(cfg.precision, sizeof cfg.precision, "%s", fp16 ? "fp16" : "fp32");
    memset(r, 0, sizeof *r);
    r->g = g;
    r->batch = batch;
    r->fp16 = fp16;
    r->ow = (int)(g->w * cfg.output_scale);
    r->oh = (int)(g->h * cfg.output_scale);
    r->ow += r->ow & 1;
    r->oh += r->oh & 1;

    double base_mb = used_mb();
    struct seg_opts o = { .backend = SEG_CUDA, .gpu = gpu, .cfg = &cfg, .layout = g->layout,
                          .in_w = g->w, .in_h = g->h, .out_w = r->ow, .out_h = r->oh,
                          .max_batch = batch };
    struct seg *s = NULL;
    uint8_t *dmask = NULL;
    struct seg_frame f[64];
    struct seg_mask m[64];
    if (seg_create(&o, &s, &err) < 0)
        goto fail;
    if (cudaMalloc((void **)&dmask, (size_t)batch * r->ow * r->oh) != cudaSuccess) {
        vr_err_set(&err, VR_ENOMEM, "mask buffers");
        goto fail;
    }
    for (int i = 0; i < batch; i++) {
        uint8_t *fr = dframes[i % MAX_FRAMES_DISTINCT];
        f[i] = (struct seg_frame){ .fmt = SEG_PIX_NV12, .w = g->w, .h = g->h,
                                   .data = { fr, fr + (size_t)g->w * g->h },
                                   .linesize = { g->w, g->w }, .on_device = 1 };
        m[i] = (struct seg_mask){ dmask + (size_t)i * r->ow * r->oh, r->ow, r->oh, r->ow, 1 };
    }
    struct seg_timing t;
    for (int i = 0; i < 3; i++)
        if (seg_run(s, f, batch, m, &t, &err) < 0)
            goto fail;
    int calls = 0;
    double pre = 0, net = 0, post = 0, t0 = clock_mono_s(), t1;
    do {
        if (seg_run(s, f, batch, m, &t, &err) < 0)
            goto fail;
        pre += t.preprocess;
        net += t.inference;
        post += t.postprocess;
        calls++;
        t1 = clock_mono_s();
    } while (t1 - t0 < seconds || calls < 5);
    double frames = (double)calls * batch;
    r->fps = frames / (t1 - t0);
    r->ms_frame = 1e3 * (t1 - t0) / frames;
    r->pre = pre / frames;
    r->net = net / frames;
    r->post = post / frames;
    r->engine_mb = seg_cuda_device_bytes(s) / (double)(1 << 20);
    r->used_mb = used_mb() - base_mb;
    /* tiles per frame from the network's share: the engine does not export
     * its plan, so count through the balanced plan's shape */
    {
        struct tile_plan tp;
        vr_err e2 = { 0, "" };
        if (tile_plan_make(&cfg, g->layout, g->w, g->h, r->ow, r->oh, 256, 256, &tp, &e2) == 0) {
            r->tiles_per_frame = 0;
            for (int i = 0; i < tp.n_eyes; i++)
                r->tiles_per_frame += tp.eye[i].n;
        }
    }
    r->tiles_s = r->fps * r->tiles_per_frame;
    r->frame_bytes = frame_bytes(g, r->ow, r->oh, r->tiles_per_frame);
    r->ok = 1;
    cudaFree(dmask);
    seg_free(&s);
    return;
fail:
    snprintf(r->err, sizeof r->err, "%s", err.msg);
    cudaFree(dmask);
    seg_free(&s);
}

/* ---- per-kernel breakdown ---- */

/* Times each batched frame kernel of the engine alone (CUDA events, median
 * of 20) for one geometry and batch, and sets it against the bytes it must
 * move: a kernel far under the copy bandwidth is bound by something else
 * (arithmetic, load instructions, launches), which the table says. */
static void breakdown(const struct geom *g, int batch, const struct vr_config *cfg, double bw,
                      uint8_t **dframes)
{
    vr_err err = { 0, "" };
    struct tile_plan tp;
    struct frame_cu_plan p;
    const int ow = (int)(g->w * cfg->output_scale) & ~1, oh = (int)(g->h * cfg->output_scale) & ~1;
    const int mw = 256, mh = 256;
    if (tile_plan_make(cfg, g->layout, g->w, g->h, ow, oh, mw, mh, &tp, &err) < 0) {
        fprintf(stderr, "breakdown: %s\n", err.msg);
        return;
    }
    frame_cu_plan_make(&tp, &p);
    const int tpf = p.tiles_per_frame;
    const size_t work = (size_t)batch * p.work_per_frame, tile_px = (size_t)mw * mh;
    struct frame_rect rects[2 * TILE_MAX_PER_EYE];
    struct frame_tile tiles[2 * TILE_MAX_PER_EYE];
    for (int e = 0; e < p.n_eyes; e++)
        for (int t = 0; t < tp.eye[e].n; t++) {
            rects[p.e[e].tile0 + t] = tp.eye[e].src[t];
            tiles[p.e[e].tile0 + t] = tp.eye[e].dst[t];
        }
    float *d_in = NULL, *d_out = NULL, *d_work = NULL, *d_luma = NULL, *d_a = NULL, *d_b = NULL,
          *d_scr = NULL;
    uint8_t *d_mask = NULL, *d_ty = NULL, *d_ring = NULL;
    unsigned long long *d_sad = NULL;
    struct temporal_opts topt;
    struct temporal_state tst;
    temporal_reset(&tst);
    temporal_opts_from_config(&topt, cfg, ow, oh);
    const size_t slots = topt.frames > 1 ? (size_t)topt.frames - 1 : 1;
    struct frame_rect *d_rects = NULL;
    struct frame_tile *d_tiles = NULL;
    int ok = cudaMalloc((void **)&d_in, batch * tpf * tile_px * 3 * 4) == cudaSuccess
             && cudaMalloc((void **)&d_out, batch * tpf * tile_px * 4) == cudaSuccess
             && cudaMalloc((void **)&d_work, work * 4) == cudaSuccess
             && cudaMalloc((void **)&d_luma, work * 4) == cudaSuccess
             && cudaMalloc((void **)&d_a, work * 4) == cudaSuccess
             && cudaMalloc((void **)&d_b, work * 4) == cudaSuccess
             && cudaMalloc((void **)&d_scr, work * 6 * 4) == cudaSuccess
             && cudaMalloc((void **)&d_mask, (size_t)batch * ow * oh) == cudaSuccess
             && cudaMalloc((void **)&d_ty, (size_t)batch * ow * oh) == cudaSuccess
             && cudaMalloc((void **)&d_ring, (2 * slots + 1 + batch) * ow * oh) == cudaSuccess
             && cudaMalloc((void **)&d_sad, (size_t)batch * sizeof *d_sad) == cudaSuccess
             && cudaMalloc((void **)&d_rects, sizeof rects) == cudaSuccess
             && cudaMalloc((void **)&d_tiles, sizeof tiles) == cudaSuccess;
    if (!ok) {
        fprintf(stderr, "breakdown: out of GPU memory\n");
        goto out;
    }
    cudaMemcpy(d_rects, rects, sizeof rects, cudaMemcpyHostToDevice);
    cudaMemcpy(d_tiles, tiles, sizeof tiles, cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0, batch * tpf * tile_px * 4);
    struct frame_batch fb;
    struct frame_masks fm;
    memset(&fb, 0, sizeof fb);
    fb.n = batch;
    fb.fmt = SEG_PIX_NV12;
    for (int i = 0; i < batch; i++) {
        uint8_t *fr = dframes[i % MAX_FRAMES_DISTINCT];
        fb.data[i][0] = fr;
        fb.data[i][1] = fr + (size_t)g->w * g->h;
        fb.linesize[i][0] = fb.linesize[i][1] = g->w;
        fm.data[i] = d_mask + (size_t)i * ow * oh;
        fm.linesize[i] = ow;
    }
    double Y = (double)g->w * g->h;
    struct {
        const char *name;
        double bytes; /* per frame, compulsory */
    } k[8] = {
        { "preprocess (NV12 -> tiles)", 1.5 * Y + tpf * tile_px * 12.0 },
        { "luma at work size", Y + p.work_per_frame * 4.0 },
        { "blend", tpf * tile_px * 4.0 + p.work_per_frame * 4.0 },
        { "guided coefficients (2)", p.work_per_frame * 4.0 * 4 },
        { "refine (mask)", Y + (double)ow * oh },
        { "temporal: luma + sums", (double)ow * oh * 2 },
        { "temporal: filter (window full)", (double)ow * oh * (2 + 2.0 * slots + 2) },
        /* what the engine runs instead of the first two where the plan allows */
        { "preprocess + luma, folded",
          1.5 * Y + tpf * tile_px * 12.0 + p.work_per_frame * 4.0 },
    };
    const int folds = frame_luma_folds(&p, rects, mw, mh);
    double per_k[8] = { 0 };
    cudaMemset(d_ring, 0, (2 * slots + 1) * ow * oh); /* the window, then the hold's plane */
    tst.have = (int)slots; /* the steady state: a full window, no cut */
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    printf("\nbreakdown: %s %dx%d, batch %d, mask %dx%d, %d tiles/frame (kernels alone, median "
           "of 20)\n%-30s %10s %10s %8s %9s\n", g->name, g->w, g->h, batch, ow, oh, tpf, "kernel",
           "ms/frame", "MB/frame", "GB/s", "% of copy");
    double total = 0;
    for (int ki = 0; ki < 7 + folds; ki++) {
        float ms[20];
        for (int rep = 0; rep < 22; rep++) {
            cudaEventRecord(e0, 0);
            int rc = 0;
            switch (ki) {
            case 0: rc = frame_preprocess_batch_cuda(&fb, d_rects, tpf, mw, mh, d_in, 0, &err); break;
            case 1: rc = frame_luma_batch_cuda(&fb, &p, d_luma, 0, &err); break;
            case 2: rc = frame_blend_batch_cuda(d_out, batch, mw, mh, d_tiles, &p, d_work, 0, &err); break;
            case 3: rc = frame_guided_coeffs_batch_cuda(d_luma, d_work, batch, &p, cfg->guided_radius,
                                                        (float)cfg->guided_eps, d_a, d_b, d_scr, 0, &err); break;
            case 4: rc = frame_refine_batch_cuda(d_a, d_b, 1, &fb, &p, &fm, 0, &err); break;
            case 5: rc = frame_temporal_luma_cuda(&topt, &tst, &fb, g->w, g->h, d_ty,
                                                  d_ring + slots * ow * oh, d_sad, 0, &err); break;
            case 6: rc = frame_temporal_cuda(&topt, &tst, batch, &fm, d_ty, d_sad, d_ring,
                                             d_ring + slots * ow * oh,
                                             d_ring + 2 * slots * ow * oh,
                                             d_ring + (2 * slots + 1) * ow * oh, 0, &err); break;
            default: rc = frame_preprocess_fold_batch_cuda(&fb, d_rects, &p, mw, mh, d_in,
                                                           d_luma, 0, &err); break;
            }
            cudaEventRecord(e1, 0);
            if (rc < 0 || cudaEventSynchronize(e1) != cudaSuccess) {
                fprintf(stderr, "breakdown: %s: %s\n", k[ki].name, err.msg);
                goto out2;
            }
            if (rep >= 2)
                cudaEventElapsedTime(&ms[rep - 2], e0, e1);
        }
        for (int i = 1; i < 20; i++) /* insertion sort for the median */
            for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
                float t = ms[j];
                ms[j] = ms[j - 1];
                ms[j - 1] = t;
            }
        double per = ms[10] / batch, gbs = k[ki].bytes / (per * 1e-3) / 1e9;
        per_k[ki] = per;
        total += ki < 7 ? per : 0.0;
        printf("%-30s %10.4f %10.1f %8.0f %8.0f%%\n", k[ki].name, per, k[ki].bytes / 1e6, gbs,
               100.0 * gbs / bw);
    }
    printf("%-30s %10.4f\n", "frame kernels, total", total);
    if (folds)
        printf("%-30s %10.4f\n", "  with the luma folded",
               total - per_k[0] - per_k[1] + per_k[7]);
out2:
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
out:
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_work);
    cudaFree(d_luma);
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_scr);
    cudaFree(d_mask);
    cudaFree(d_ty);
    cudaFree(d_ring);
    cudaFree(d_sad);
    cudaFree(d_rects);
    cudaFree(d_tiles);
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = atoi(tok);
    return n;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "profile", required_argument, 0, 'p' }, { "json", required_argument, 0, 'j' },
        { "cases", required_argument, 0, 'c' },   { "batches", required_argument, 0, 'b' },
        { "precisions", required_argument, 0, 'r' }, { "seconds", required_argument, 0, 's' },
        { "gpu", required_argument, 0, 'g' },     { "tuned", no_argument, 0, 't' },
        { "breakdown", no_argument, 0, 'k' },     { 0, 0, 0, 0 },
    };
    const char *profile = "balanced", *json = NULL, *cases = "1080p,4k,6k,8k";
    const char *precs = "fp16,fp32";
    int batches[16] = { 1, 8, 16 }, nb = 3, gpu = 0, tuned = 0, brk = 0, c;
    double seconds = 0.5;
    log_init("bench_seg");
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'p': profile = optarg; break;
        case 'j': json = optarg; break;
        case 'c': cases = optarg; break;
        case 'b': nb = parse_list(optarg, batches, 16); break;
        case 'r': precs = optarg; break;
        case 's': seconds = atof(optarg); break;
        case 'g': gpu = atoi(optarg); break;
        case 't': tuned = 1; break;
        case 'k': brk = 1; break;
        default: fprintf(stderr, "usage: see the top of bench/bench_seg.c\n"); return 2;
        }
    }
    for (int i = 0; i < nb; i++)
        if (batches[i] < 1 || batches[i] > 64) {
            fprintf(stderr, "bench_seg: batch %d outside 1..64\n", batches[i]);
            return 2;
        }
    if (!tuned)
        setenv("VR_NO_TUNE", "1", 1); /* measure the precision asked, not a cached choice */
    vr_err err = { 0, "" };
    static char plist[256];
    static struct vr_config cfgs[MAX_PROFILES];
    const char *pname[MAX_PROFILES];
    int np = 0;
    snprintf(plist, sizeof plist, "%s", profile);
    for (char *tok = strtok(plist, ","); tok; tok = strtok(NULL, ",")) {
        if (np == MAX_PROFILES) {
            fprintf(stderr, "bench_seg: at most %d profiles\n", MAX_PROFILES);
            return 2;
        }
        if (config_load_profile(&cfgs[np], tok, &err) < 0) {
            fprintf(stderr, "bench_seg: %s\n", err.msg);
            return 1;
        }
        pname[np++] = tok;
    }
    if (np == 0) {
        fprintf(stderr, "bench_seg: --profile names no profile\n");
        return 2;
    }
    if (cudaSetDevice(gpu) != cudaSuccess) {
        fprintf(stderr, "bench_seg: no CUDA GPU %d\n", gpu);
        return 1;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, gpu);
    cudaFree(NULL); /* the context, before the baseline memory reading */
    double bw = copy_gbs();
    printf("bench_seg: %s (%d SMs), profile %s, copy bandwidth %.0f GB/s (read+write)\n",
           prop.name, prop.multiProcessorCount, profile, bw);

    struct result res[128];
    int nres = 0;
    for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
        const struct geom *g = &geoms[gi];
        if (!strstr(cases, g->name))
            continue;
        size_t fb = (size_t)g->w * g->h * 3 / 2;
        uint8_t *h = malloc(fb), *dframes[MAX_FRAMES_DISTINCT] = { 0 };
        if (!h)
            return 1;
        for (int i = 0; i < MAX_FRAMES_DISTINCT; i++) {
            fill_nv12(h, h + (size_t)g->w * g->h, g->w, g->h, i);
            if (cudaMalloc((void **)&dframes[i], fb) != cudaSuccess
                || cudaMemcpy(dframes[i], h, fb, cudaMemcpyHostToDevice) != cudaSuccess) {
                fprintf(stderr, "bench_seg: cannot place %s frames on the GPU\n", g->name);
                return 1;
            }
        }
        free(h);
        if (brk) {
            int bmax = 1;
            for (int i = 0; i < nb; i++)
                bmax = batches[i] > bmax ? batches[i] : bmax;
            breakdown(g, bmax, &cfgs[0], bw, dframes);
        }
        for (int q = 0; q < np; q++)
            for (int pi = 0; pi < 2; pi++) {
                int fp16 = pi == 0;
                if (!strstr(precs, fp16 ? "fp16" : "fp32"))
                    continue;
                for (int bi = 0; bi < nb && nres < 128; bi++) {
                    struct result *r = &res[nres++];
                    run_case(g, batches[bi], fp16, &cfgs[q], gpu, seconds, dframes, r);
                    r->profile = pname[q];
                    if (!r->ok)
                        fprintf(stderr, "bench_seg: %s %s batch %d %s: %s\n", pname[q],
                                g->name, batches[bi], fp16 ? "fp16" : "fp32", r->err);
                    else
                        fprintf(stderr, "  %s %s b%d %s: %.0f fps\n", pname[q], g->name,
                                batches[bi], fp16 ? "fp16" : "fp32", r->fps);
                }
            }
        for (int i = 0; i < MAX_FRAMES_DISTINCT; i++)
            cudaFree(dframes[i]);
    }

    printf("\n%-14s %-6s %-9s %-5s %5s %-9s %9s %9s %8s %8s %8s %8s %8s %9s %9s\n", "profile",
           "case", "size",
           "prec", "batch", "mask", "frames/s", "tiles/s", "ms/frm", "pre", "net", "post",
           "GB/s fr", "engineMB", "usedMB");
    for (int i = 0; i < nres; i++) {
        const struct result *r = &res[i];
        char size[16], mask[16];
        snprintf(size, sizeof size, "%dx%d", r->g->w, r->g->h);
        snprintf(mask, sizeof mask, "%dx%d", r->ow, r->oh);
        if (!r->ok) {
            printf("%-14s %-6s %-9s %-5s %5d %-9s failed: %s\n", r->profile, r->g->name, size,
                   r->fp16 ? "fp16" : "fp32", r->batch, mask, r->err);
            continue;
        }
        /* achieved bandwidth of the frame stages (pre + post) */
        double gbs = r->frame_bytes / ((r->pre + r->post) * 1e-3) / 1e9;
        printf("%-14s %-6s %-9s %-5s %5d %-9s %9.1f %9.0f %8.4f %8.4f %8.4f %8.4f %8.0f %9.0f "
               "%9.0f\n", r->profile, r->g->name, size, r->fp16 ? "fp16" : "fp32", r->batch, mask,
               r->fps, r->tiles_s, r->ms_frame, r->pre, r->net, r->post, gbs, r->engine_mb,
               r->used_mb);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "bench_seg: cannot write %s\n", json);
            return 1;
        }
        fprintf(f, "{\"gpu\": \"%s\", \"sms\": %d, \"profile\": \"%s\", \"copy_gbs\": %.1f, "
                "\"results\": [\n", prop.name, prop.multiProcessorCount, profile, bw);
        for (int i = 0; i < nres; i++) {
            const struct result *r = &res[i];
            fprintf(f, "  {\"profile\": \"%s\", \"case\": \"%s\", \"w\": %d, \"h\": %d, "
                    "\"layout\": \"%s\", "
                    "\"precision\": \"%s\", \"batch\": %d, \"mask_w\": %d, \"mask_h\": %d, "
                    "\"ok\": %s, \"frames_per_s\": %.2f, \"tiles_per_s\": %.1f, "
                    "\"ms_per_frame\": %.5f, \"pre_ms\": %.5f, \"net_ms\": %.5f, "
                    "\"post_ms\": %.5f, \"frame_bytes\": %.0f, \"engine_mb\": %.1f, "
                    "\"used_mb\": %.1f}%s\n", r->profile, r->g->name, r->g->w, r->g->h,
                    seg_layout_name(r->g->layout), r->fp16 ? "fp16" : "fp32", r->batch, r->ow,
                    r->oh, r->ok ? "true" : "false", r->fps, r->tiles_s, r->ms_frame, r->pre,
                    r->net, r->post, r->frame_bytes, r->engine_mb, r->used_mb,
                    i + 1 < nres ? "," : "");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}

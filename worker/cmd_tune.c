/*
 * cmd_tune.c - `vr-worker tune`: auto-tunes the CUDA network for this GPU,
 * the profile's model and one input geometry (kernels/seg/tune.h), prints the
 * table of candidates and stores the choice in the tune cache, where every
 * later SEG_CUDA engine of the same key picks it up. A cached result is
 * shown without timing anything unless --force.
 */
#include "commands.h"

#include "cmdtable.h"
#include "config.h"
#include "seg.h"
#include "tune.h"
#include "pipeline_cuda.h"
#include "vio_image.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_report(const struct tune_report *r)
{
    printf("tune key:   %s\n", r->key_str);
    printf("cache:      %s%s\n", r->cache_path, r->from_cache ? " (cached result; --force re-tunes)" : "");
    if (!r->from_cache) {
        printf("tiles/frame %d; times: whole engine (CUDA events) on an NV12 frame in GPU "
               "memory;\nreference: the CPU engine (float32 C network); accept mask max abs "
               "<= %.2f\n\n", r->tiles_per_frame, TUNE_MAX_ABS);
        printf("  %-4s %-4s %-5s %-5s %-5s %6s %9s %10s %11s %9s  %s\n", "", "prec", "fused",
               "graph", "block", "frames", "ms/call", "ms/frame", "tiles/s", "max_abs", "");
        for (int i = 0; i < r->n_rows; i++) {
            const struct tune_row *w = &r->rows[i];
            if (w->ms <= 0.0) {
                printf("  %-4s %-4s %-5d %-5d %-5d %6d %9s %10s %11s %9s  %s\n",
                       i == r->best ? "*" : "", w->net.fp16 ? "fp16" : "fp32", w->net.fused,
                       w->net.use_graph, w->net.block, w->frames, "-", "-", "-", "-", w->note);
                continue;
            }
            printf("  %-4s %-4s %-5d %-5d %-5d %6d %9.3f %10.4f %11.0f %9.4f  %s\n",
                   i == r->best ? "*" : "", w->net.fp16 ? "fp16" : "fp32", w->net.fused,
                   w->net.use_graph, w->net.block, w->frames, w->ms, w->ms_per_frame,
                   w->tiles_per_s, w->max_abs, w->ok ? "" : w->note);
        }
        printf("\n");
    }
    if (!r->from_cache && r->best < 0)
        return;
    const struct tune_choice *c = &r->choice;
    printf("choice:     %s, fused=%d, graph=%d, block=%d, %d frames (%d tiles) a run: "
           "%.4f ms/frame, mask max abs %.4f\n", c->net.fp16 ? "fp16" : "fp32", c->net.fused,
           c->net.use_graph, c->net.block, c->frames, c->net.max_batch, c->ms_per_frame,
           c->max_abs);
    if (!r->from_cache)
        printf("took %.1f s\n", r->seconds);
}

/* "WxH", each side a whole number 4..16384. */
static int tune_size(const char *arg, int *w, int *h)
{
    char ws[16], msg[128];
    const char *x = strchr(arg, 'x');
    long a, b;
    if (!x || (size_t)(x - arg) >= sizeof ws)
        return -1;
    memcpy(ws, arg, (size_t)(x - arg));
    ws[x - arg] = '\0';
    if (cli_parse_long("width", ws, 4, 16384, &a, msg, sizeof msg) < 0 ||
        cli_parse_long("height", x + 1, 4, 16384, &b, msg, sizeof msg) < 0)
        return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cmd_tune(int argc, char **argv)
{
    static const struct option opts[] = {
        { "force", no_argument, 0, 'f' },    { "gpu", required_argument, 0, 'g' },
        { "profile", required_argument, 0, 'p' }, { "size", required_argument, 0, 's' },
        { "layout", required_argument, 0, 'l' }, { "image", required_argument, 0, 'i' },
        { 0, 0, 0, 0 },
    };
    struct tune_params tp = { .gpu = 0, .layout = SEG_LAYOUT_SBS, .in_w = 8192, .in_h = 4096 };
    const char *profile = "balanced", *overrides = NULL, *image = NULL;
    int c;
    while ((c = cli_getopt(argc, argv, "c:", opts)) != -1) {
        switch (c) {
        case 'f': tp.force = 1; break;
        case 'g':
            if (cli_opt_int("--gpu", optarg, 0, 64, &tp.gpu))
                return 2;
            break;
        case 'p': profile = optarg; break;
        case 'c': overrides = optarg; break;
        case 's':
            if (tune_size(optarg, &tp.in_w, &tp.in_h) < 0)
                return cli_usage_error("--size %s: want WxH, 4..16384 each", optarg);
            break;
        case 'l': {
            int l = seg_layout_parse(optarg);
            if (l < 0)
                return cli_usage_error("--layout %s: want mono, sbs or tb", optarg);
            tp.layout = (enum seg_layout)l;
            break;
        }
        case 'i': image = optarg; break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (optind != argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);

#ifndef VR_HAVE_CUDA
    (void)print_report;
    (void)image;
    (void)profile;
    (void)overrides;
    fprintf(stderr, "vr-worker tune: built without CUDA: nothing to tune\n");
    return 1;
#else
    struct vr_config cfg;
    vr_err err = { 0, "" };
    if (pcuda_check(tp.gpu, &err) < 0) {
        fprintf(stderr, "vr-worker tune: %s\n", err.msg);
        return 1;
    }
    if (config_load_profile(&cfg, profile, &err) < 0
        || (overrides && config_apply_file(&cfg, overrides, &err) < 0)) {
        fprintf(stderr, "vr-worker tune: %s\n", err.msg);
        return 2;
    }
    tp.cfg = &cfg;
    struct vio_image *img = NULL;
    struct tune_image view;
    if (image) {
        if (vio_image_read(image, &img, &err) < 0) {
            fprintf(stderr, "vr-worker tune: %s\n", err.msg);
            return 2;
        }
        view = (struct tune_image){ .w = img->w, .h = img->h, .linesize = img->linesize,
                                    .data = img->data };
        tp.image = &view;
    }
    struct tune_report *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "vr-worker tune: out of memory\n");
        vio_image_free(&img);
        return 1;
    }
    int rc = tune_run(&tp, r, &err);
    vio_image_free(&img);
    if (r->key_str[0] && (rc == 0 || r->n_rows > 0))
        print_report(r);
    if (rc < 0)
        fprintf(stderr, "vr-worker tune: %s\n", err.msg);
    free(r);
    return rc < 0 ? 1 : 0;
#endif
}

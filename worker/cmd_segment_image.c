/*
 * cmd_segment_image.c - `vr-worker segment-image`: one PNG/JPEG in, its
 * 8-bit person mask out as PNG at the input's size, on the CPU backend.
 *
 * The normal path is the whole engine (seg.h: layout, tiles, blend, guided
 * refinement). --raw is the network alone, for checking it against other
 * implementations: the input must already be the model's input size, and
 * the output is round(sigmoid * 255) of one pass, nothing else.
 */
#include "commands.h"

#include "cmdtable.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "seg.h"
#include "vio_image.h"
#include "vio_layout.h"

#include <libavutil/log.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct seg_image_args {
    const char *model, *profile, *overrides, *in, *out;
    int layout;          /* enum seg_layout, or VIO_LAYOUT_AUTO */
    int raw;
};

/* ---- the two paths ---- */

/* One network pass over an image that is exactly the model's input size. */
static int run_raw(const struct vr_config *cfg, const struct vio_image *img,
                   uint8_t *mask, const char *in, vr_err *err)
{
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = img->w, .h = img->h,
                           .data = { img->data }, .linesize = { img->linesize } };
    struct seg_mask m = { .data = mask, .w = img->w, .h = img->h, .linesize = img->w };
    int rc = seg_run_network(cfg, &f, &m, err);
    if (rc == VR_EINVAL) { /* the picture's size: "IN: --raw needs the model's ..." */
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return vr_err_set(err, rc, "%s: --raw %s", in, why);
    }
    return rc; /* other errors name the model; main() puts IN in front */
}

/* The whole engine, CPU backend, one frame. */
static int run_engine(const struct vr_config *cfg, enum seg_layout layout,
                      const struct vio_image *img, uint8_t *mask, vr_err *err)
{
    struct seg *s = NULL;
    struct seg_opts o = { .backend = SEG_CPU, .cfg = cfg, .layout = layout,
                          .in_w = img->w, .in_h = img->h, .max_batch = 1 };
    int rc = seg_create(&o, &s, err);
    if (rc < 0)
        return rc;
    struct seg_frame f = { .fmt = SEG_PIX_RGB24, .w = img->w, .h = img->h,
                           .data = { img->data }, .linesize = { img->linesize } };
    struct seg_mask m = { .data = mask, .w = img->w, .h = img->h, .linesize = img->w };
    struct seg_timing t;
    rc = seg_run(s, &f, 1, &m, &t, err);
    if (rc == 0)
        log_debug("engine: preprocess %.1f ms, network %.1f ms, blend+refine %.1f ms",
                  t.preprocess, t.inference, t.postprocess);
    seg_free(&s);
    return rc;
}

/* ---- command ---- */

static int parse_args(int argc, char **argv, struct seg_image_args *a)
{
    static const struct option opts[] = {
        { "model", required_argument, 0, 'm' },
        { "layout", required_argument, 0, 'l' },
        { "profile", required_argument, 0, 'p' },
        { "raw", no_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->profile = "balanced";
    a->layout = VIO_LAYOUT_AUTO; /* as `process` */
    optind = 1;
    int c;
    while ((c = cli_getopt(argc, argv, "+c:h", opts)) != -1) {
        switch (c) {
        case 'm': a->model = optarg; break;
        case 'p': a->profile = optarg; break;
        case 'c': a->overrides = optarg; break;
        case 'r': a->raw = 1; break;
        case 'l':
            /* auto as `process` has it: vio_layout's numbers are seg_layout's */
            if ((a->layout = vio_layout_parse(optarg)) == -1)
                return cli_usage_error("--layout %s: expected auto, mono, sbs or tb", optarg);
            break;
        case 'h':
            cli_cmd_usage(stdout, cli_prog(), cli_current());
            return -1;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("expected IN and OUT, got %d argument(s)", argc - optind);
    a->in = argv[optind];
    a->out = argv[optind + 1];
    /* The writer makes PNG only; a .jpg name would hold PNG bytes. */
    const char *dot = strrchr(a->out, '.');
    if (!dot || strcasecmp(dot, ".png") != 0)
        return cli_usage_error("%s: the mask is written as PNG: name it .png", a->out);
    return 0;
}

int cmd_segment_image(int argc, char **argv)
{
    struct seg_image_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    av_log_set_level(AV_LOG_FATAL); /* our one-line message says what failed */

    struct vr_config cfg;
    struct vio_image *img = NULL;
    uint8_t *mask = NULL;
    vr_err err = { 0 };
    if ((rc = config_load_profile(&cfg, a.profile, &err)) < 0
        || (a.overrides && (rc = config_apply_file(&cfg, a.overrides, &err)) < 0))
        goto fail;
    /* the local user's own file, so a path: a job's config only names a model */
    if (a.model && strlen(a.model) >= sizeof cfg.model_file) {
        rc = vr_err_set(&err, VR_EINVAL, "--model: path longer than %zu bytes",
                        sizeof cfg.model_file - 1);
        goto fail;
    }
    if (a.model)
        snprintf(cfg.model_file, sizeof cfg.model_file, "%s", a.model);
    double t0 = clock_mono_ms();
    if ((rc = vio_image_read(a.in, &img, &err)) < 0)
        goto fail;
    if (a.layout == VIO_LAYOUT_AUTO) {
        /* An image has no stereo or spherical metadata: name tags, aspect. */
        struct vio_info inf = { .w = img->w, .h = img->h, .stereo = -1 };
        const char *why = "";
        a.layout = vio_guess_layout(&inf, a.in, &why);
        log_info("%s: layout %s (%s)", a.in, vio_layout_name(a.layout), why);
    }
    double t1 = clock_mono_ms();
    if (!(mask = malloc((size_t)img->w * img->h))) {
        rc = vr_err_set(&err, VR_ENOMEM, "%s: out of memory", a.in);
        goto fail;
    }
    rc = a.raw ? run_raw(&cfg, img, mask, a.in, &err)
               : run_engine(&cfg, (enum seg_layout)a.layout, img, mask, &err);
    if (rc < 0) {
        if (!strstr(err.msg, a.in))
            vr_err_prefix(&err, "%s", a.in);
        goto fail;
    }
    double t2 = clock_mono_ms();
    if ((rc = vio_image_write_gray_png(a.out, mask, img->w, img->h, img->w, &err)) < 0)
        goto fail;
    log_debug("%s: %dx%d read %.1f ms, segment %.1f ms, write %.1f ms", a.in, img->w,
              img->h, t1 - t0, t2 - t1, clock_mono_ms() - t2);
    free(mask);
    vio_image_free(&img);
    return 0;

fail:
    fprintf(stderr, "%s %s: %s\n", cli_prog(), cli_current()->name, err.msg);
    free(mask);
    vio_image_free(&img);
    return 1;
}

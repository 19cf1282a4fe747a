/*
 * cmd_process.c - `vr-worker process`: one video, start to finish, through
 * the pipeline (pipeline.h), with its metrics printed and optionally written
 * as JSON, and a Chrome trace on request.
 */
#include "commands.h"

#include "config.h"
#include "cmdtable.h"
#include "http_io.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "output_kinds.h"
#include "out_dest.h"
#include "pipeline.h"
#include "pipeline_cuda.h"
#include "seg.h"
#include "storage.h"
#include "url_root.h"
#include "vio_video.h"

#include <getopt.h>
#include <libavutil/log.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct process_args {
    int gpu, cpu;                 /* --gpu N (gpu >= 0), --cpu */
    const char *profile, *overrides, *metrics, *trace, *in, *out;
    int layout;                   /* -1 = auto */
    int replace;                  /* -y: existing outputs may be replaced (-n: not, the default) */
    enum pipe_output output;
    int encode_threads;           /* --encode-threads; 0 = one per core */
    int fail_on_decode_error;     /* --on-decode-error fail */
    int alpha_corners;            /* --alpha-area corners */
    int crf;                      /* --crf N; -1: the profile's (or -c's) */
    const char *encoder;          /* --encoder NAME; NULL: the profile's (or -c's) */
};

static volatile int cancel_flag; /* set by SIGINT / SIGTERM: the pipeline stops */

static void on_signal(int sig)
{
    (void)sig;
    cancel_flag = 1;
}

/* ---- arguments ---- */

static int check_args(int argc, char **argv, struct process_args *a);

static int parse_args(int argc, char **argv, struct process_args *a)
{
    static const struct option opts[] = {
        { "gpu", required_argument, 0, 'g' },
        { "cpu", no_argument, 0, 'C' },
        { "profile", required_argument, 0, 'p' },
        { "layout", required_argument, 0, 'l' },
        { "output", required_argument, 0, 'O' },
        { "alpha-area", required_argument, 0, 'A' },
        { "metrics", required_argument, 0, 'M' },
        { "trace", required_argument, 0, 'T' },
        { "encode-threads", required_argument, 0, 'e' },
        { "on-decode-error", required_argument, 0, 'E' },
        { "crf", required_argument, 0, 'Q' },
        { "encoder", required_argument, 0, 'N' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->gpu = -1;
    a->profile = "balanced";
    a->layout = -1;
    a->output = PIPE_OUT_MASK;
    a->crf = -1;
    optind = 1;
    int c;
    /* no "+": IN may come before -o OUT */
    while ((c = cli_getopt(argc, argv, "c:o:ynh", opts)) != -1) {
        switch (c) {
        case 'g':
            if (cli_opt_int("--gpu", optarg, 0, 63, &a->gpu))
                return 2;
            break;
        case 'C': a->cpu = 1; break;
        case 'p': a->profile = optarg; break;
        case 'c': a->overrides = optarg; break;
        case 'o': a->out = optarg; break;
        case 'y': a->replace = 1; break;
        case 'n': a->replace = 0; break;
        case 'A':
            if (strcmp(optarg, "auto") && strcmp(optarg, "corners"))
                return cli_usage_error("--alpha-area %s: expected auto or corners", optarg);
            a->alpha_corners = !strcmp(optarg, "corners");
            break;
        case 'M': a->metrics = optarg; break;
        case 'Q':
            if (cli_opt_int("--crf", optarg, 0, 51, &a->crf))
                return 2;
            break;
        case 'N':
            if (!vio_encoder_name_ok(optarg))
                return cli_usage_error("--encoder %s: no such encoder (" VIO_ENCODER_NAMES ")",
                                       optarg);
            a->encoder = optarg;
            break;
        case 'T': a->trace = optarg; break;
        case 'e':
            if (cli_opt_int("--encode-threads", optarg, 1, 256, &a->encode_threads))
                return 2;
            break;
        case 'l':
            if (!strcmp(optarg, "auto"))
                a->layout = -1;
            else if ((a->layout = seg_layout_parse(optarg)) < 0)
                return cli_usage_error("--layout %s: expected auto, mono, sbs or tb", optarg);
            break;
        case 'O': {
            int k = output_kind_parse(optarg);
            if (k < 0)
                return cli_usage_error("--output %s: expected mask, alpha-packed or greenscreen", optarg);
            a->output = (enum pipe_output)k;
            break;
        }
        case 'E':
            if ((a->fail_on_decode_error = job_decode_error_fail(optarg)) < 0 || !optarg[0])
                return cli_usage_error("--on-decode-error %s: expected conceal or fail", optarg);
            break;
        case 'h':
            cli_cmd_usage(stdout, cli_prog(), cli_current());
            return -1;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    return check_args(argc, argv, a);
}

/* What the options say together, and the files they name. */
static int check_args(int argc, char **argv, struct process_args *a)
{
    if (a->cpu && a->gpu >= 0)
        return cli_usage_error("--gpu and --cpu exclude each other");
    if (argc - optind != 1)
        return cli_usage_error("expected one input file, got %d", argc - optind);
    if (!a->out)
        return cli_usage_error("missing -o OUT");
    a->in = argv[optind];
    http_io_configure_private(1); /* a URL: the operator's own request, as vrctl's */
    /* by device and inode, not by name: m/../m/./x.mp4, a link or a hard
     * link to the input would be replaced by the matte or the JSON */
    const struct storage_file in[] = { { "input", a->in }, { "-c", a->overrides } };
    /* -o URL: checked by the store when the run starts (out_dest.h) */
    const struct storage_file out[] = { { "-o", url_root_is_url(a->out) ? NULL : a->out },
                                        { "--metrics", a->metrics },
                                        { "--trace", a->trace } };
    vr_err e = { 0 };
    if (storage_outputs_check(in, 2, out, 3, a->replace, &e) < 0)
        return cli_usage_error("%s", e.msg);
    return 0;
}

/* ---- report ---- */

static void print_metrics(const struct metrics *m)
{
    printf("frames %llu in %.2f s: %.1f fps\n", (unsigned long long)m->frames, m->wall_s,
           metrics_fps(m));
    printf("%-12s %10s %10s %10s %10s\n", "stage (ms)", "p50", "p95", "p99", "mean");
    for (int i = 0; i < MET_NSTAGES; i++) {
        const struct hist *h = &m->stage[i];
        if (!h->count)
            continue;
        printf("%-12s %10.3f %10.3f %10.3f %10.3f\n", metrics_stage_name(i),
               hist_percentile(h, 50) / 1e3, hist_percentile(h, 95) / 1e3,
               hist_percentile(h, 99) / 1e3, hist_mean(h) / 1e3);
    }
    if (m->gpu_util_samples)
        printf("gpu: utilisation %.0f%%, peak memory %.0f MiB\n", metrics_gpu_util(m),
               (double)m->gpu_mem_peak / (1 << 20));
}

/* ---- command ---- */

int cmd_process(int argc, char **argv)
{
    struct process_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    av_log_set_level(AV_LOG_FATAL); /* our one-line messages say what failed */

    struct pipe_opts o;
    memset(&o, 0, sizeof o);
    vr_err err = { 0 };
    char *flags = config_flags_json(a.crf, a.encoder); /* over -c's file */
    if ((rc = config_load_profile(&o.cfg, a.profile, &err)) < 0 ||
        (a.overrides && (rc = config_apply_file(&o.cfg, a.overrides, &err)) < 0) ||
        (flags && (rc = config_apply_text(&o.cfg, flags, "--crf/--encoder", &err)) < 0)) {
        free(flags);
        goto fail;
    }
    free(flags);
    if (a.gpu >= 0) {
        o.backend = SEG_CUDA;
        o.gpu = a.gpu;
    } else if (a.cpu) {
        o.backend = SEG_CPU;
    } else {
        /* neither: the first GPU if there is one, else the CPU */
        vr_err probe = { 0 };
        o.backend = pcuda_check(0, &probe) == 0 ? SEG_CUDA : SEG_CPU;
        log_info("no --gpu/--cpu: using %s", o.backend == SEG_CUDA ? "GPU 0" : "the CPU");
    }
    o.layout = a.layout;
    o.output = a.output;
    o.encode_threads = a.encode_threads;
    o.alpha_corners = a.alpha_corners;
    o.trace_path = a.trace;
    o.cancel = &cancel_flag;
    o.fail_on_decode_error = a.fail_on_decode_error;
    if (a.output == PIPE_OUT_ALPHA_PACKED && !strstr(a.out, "_alpha"))
        log_warn("%s: passthrough players look for \"_alpha\" in the file name (e.g. clip_FISHEYE190_alpha.mp4)",
                 a.out);
    /* no SA_RESTART: a read the signal lands in returns EINTR rather than
     * waiting on, and the pipeline's threads see cancel_flag */
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct metrics *m = calloc(1, sizeof *m);
    if (!m) {
        rc = vr_err_set(&err, VR_ENOMEM, "out of memory");
        goto fail;
    }
    struct out_dest dest;
    if ((rc = out_dest_begin(&dest, a.out, a.replace, &err)) == 0 &&
        (rc = pipeline_run(&o, a.in, dest.local, m, &err)) == 0)
        rc = out_dest_commit(&dest, a.replace, &err);
    out_dest_end(&dest);
    if (rc == 0 && m->concealed)
        log_warn("%s: %llu decode errors concealed (damaged packets; --on-decode-error fail "
                 "refuses them)", a.in, (unsigned long long)m->concealed);
    if (rc == 0) {
        print_metrics(m);
        if (a.metrics && (rc = metrics_write_file(m, a.metrics, &err)) < 0) {
            free(m);
            goto fail;
        }
    }
    free(m);
    if (rc < 0)
        goto fail;
    return 0;
fail:
    log_error("%s", err.msg[0] ? err.msg : vr_err_name(rc));
    return 1;
}

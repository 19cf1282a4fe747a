/*
 * cmd_submit.c - `vrctl submit`: validate the input (exists, probes as video)
 * and the options before anything is enqueued, then record the job and
 * announce it in one MULTI/EXEC; prints the job id alone on stdout.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "config.h"
#include "job.h"
#include "remux.h"
#include "rq_jobs.h"
#include "storage.h"

#include <getopt.h>
#include <jansson.h>
#include <libavformat/avformat.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Absolute form of a path whose file may not exist yet (its directory must). */
static int vrctl_abs_out(const char *out, char *buf, size_t n)
{
    char a[JOB_PATH_MAX], b[JOB_PATH_MAX], dir[JOB_PATH_MAX];
    snprintf(a, sizeof a, "%s", out);
    snprintf(b, sizeof b, "%s", out);
    if (!realpath(dirname(a), dir))
        return -1;
    int w = snprintf(buf, n, "%s/%s", dir, basename(b));
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int vrctl_enqueue(struct rq *q, const struct job_spec *js, long long frames_est, vr_err *err)
{
    char *spec = NULL;
    int rc = job_spec_to_json(js, &spec, err);
    if (rc == 0)
        rc = rq_job_submit(q, js->id, spec, js->created_ms, frames_est, js->priority, err);
    free(spec);
    return rc;
}

/* The profile, with the -c file (its path in js->config) on top: the
 * messages `vr-worker process -c` gives; js->config becomes the file's
 * overrides as compact JSON, which every chunk applies. */
static int vrctl_check_config(struct job_spec *js)
{
    struct vr_config cfg;
    vr_err e = { 0 };
    if (config_load_profile(&cfg, js->profile, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (!js->config[0])
        return 0;
    char path[sizeof js->config], *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s", js->config);
    if (storage_read_file(path, 64 * 1024, &text, &len, &e) < 0 ||
        config_apply_text(&cfg, text, path, &e) < 0) {
        free(text);
        return cli_fail(2, "-c: %s", e.msg);
    }
    json_t *o = json_loads(text, 0, NULL);
    char *compact = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    free(text);
    if (!compact || strlen(compact) >= sizeof js->config) {
        int too_big = compact != NULL;
        free(compact);
        return too_big ? cli_fail(2, "-c %s: more overrides than a job can carry (2 KiB)", path)
                       : cli_fail(1, "-c %s: out of memory", path);
    }
    snprintf(js->config, sizeof js->config, "%s", compact);
    free(compact);
    return 0;
}

int vrctl_prepare(const char *in, const char *out, struct job_spec *js, struct remux_info *info)
{
    av_log_set_level(AV_LOG_FATAL);
    vr_err e = { 0 };
    if (remux_probe(in, info, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (!realpath(in, js->input))
        return cli_fail(2, "cannot resolve %s", in);
    if (remux_out_check(out, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (vrctl_abs_out(out, js->output, sizeof js->output) < 0)
        return cli_fail(2, "-o %s: its directory does not exist", out);
    /* the same file by device and inode, not by name (a hard link too) */
    struct stat si, so;
    if (!strcmp(js->input, js->output) ||
        (stat(js->input, &si) == 0 && stat(js->output, &so) == 0 && si.st_dev == so.st_dev &&
         si.st_ino == so.st_ino))
        return cli_fail(2, "-o %s: the output would overwrite the input", out);
    return vrctl_check_config(js);
}

int cmd_submit(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output-file", required_argument, 0, 'o' },
        VRCTL_SPEC_LONGOPTS,
        { "priority", required_argument, 0, 'P' },
        { "max-attempts", required_argument, 0, 'a' },
        { "wait", no_argument, 0, 'w' },
        { "redis", required_argument, 0, 'r' },
        { "redis-password-file", required_argument, 0, 'R' },
        { 0, 0, 0, 0 }
    };
    struct job_spec js;
    job_spec_defaults(&js);
    const char *out = NULL, *redis = NULL;
    int wait = 0, o;
    while ((o = cli_getopt(argc, argv, VRCTL_OPTSTRING, opts)) != -1) {
        int spec = vrctl_spec_option(o, optarg, &js);
        if (spec > 1)
            return spec;
        if (spec)
            continue;
        switch (o) {
        case 'o': out = optarg; break;
        case 'P':
            if (cli_opt_int("--priority", optarg, -100, 100, &js.priority))
                return 2;
            break;
        case 'a':
            if (cli_opt_int("--max-attempts", optarg, 1, 100, &js.max_attempts))
                return 2;
            break;
        case 'w': wait = 1; break;
        case 'r': redis = optarg; break;
        case 'R': rq_password_file(optarg); break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("expected one input video");
    if (!out)
        return cli_usage_error("missing -o OUT");
    const char *in = argv[optind];

    struct remux_info info;
    vr_err e = { 0 };
    int rc = vrctl_prepare(in, out, &js, &info);
    struct rq *q = NULL;
    if (rc || (rc = vrctl_connect(redis, &q)))
        return rc;
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    if (vrctl_enqueue(q, &js, info.frames_est, &e) < 0) {
        cli_fail(1, "%s", e.msg);
        rq_free(&q);
        return 1;
    }
    printf("%s\n", js.id);
    fflush(stdout);
    rc = wait ? vrctl_watch(q, js.id, NULL) : 0;
    rq_free(&q);
    return rc;
}

/*
 * cmd_submit.c - `vrctl submit`: validate the input (exists, probes as video)
 * and the options before anything is enqueued, then record the job and
 * announce it in one MULTI/EXEC; prints the job id alone on stdout. Logged
 * in as a submitter or the operator's user `vrctl`, a controller records
 * it (checking it again) and vrctl asks (vrctl_ask.c).
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "config.h"
#include "http_io.h"
#include "http_s3.h"
#include "job.h"
#include "out_dest.h"
#include "remux.h"
#include "remux_ts.h"
#include "rq_jobs.h"
#include "rq_stats.h"
#include "rq_submit.h"
#include "storage.h"
#include "submit_batch.h"
#include "text.h"
#include "url_root.h"
#include "vio_corners.h"
#include "vio_layout.h"

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
    const char *as = vrctl_asker();
    if (rc == 0 && !strcmp(as, RQ_OPERATOR)) /* a controller checks it, records it, answers */
        rc = vrctl_ask_submit(q, js, spec, frames_est, err);
    else if (rc == 0 && as[0]) /* a controller checks it and records it as as's */
        rc = rq_submit_as(q, as, js->id, spec, frames_est, js->priority, NULL, 0, err);
    else if (rc == 0)
        rc = rq_job_submit(q, js->id, spec, js->created_ms, frames_est, js->priority, err);
    free(spec);
    return rc;
}

/* The profile, with the -c file (its path in js->config) and then --crf
 * and --encoder on top: the messages `vr-worker process -c` gives;
 * js->config becomes those overrides as compact JSON, which every chunk
 * applies. */
static int vrctl_check_config(struct job_spec *js)
{
    struct vr_config cfg;
    vr_err e = { 0 };
    if (config_load_profile(&cfg, js->profile, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    char *flags = config_flags_json(vrctl_flags.crf,
                                    vrctl_flags.encoder[0] ? vrctl_flags.encoder : NULL);
    if (flags && config_apply_text(&cfg, flags, "--crf/--encoder", &e) < 0) {
        free(flags);
        return cli_fail(2, "%s", e.msg);
    }
    if (!js->config[0] && !flags)
        return 0;
    char path[sizeof js->config], *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s", js->config);
    if (path[0] && (storage_read_file(path, 64 * 1024, &text, &len, &e) < 0 ||
                    config_apply_text(&cfg, text, path, &e) < 0)) {
        free(text);
        free(flags);
        return cli_fail(2, "-c: %s", e.msg);
    }
    json_t *o = text ? json_loads(text, 0, NULL) : json_object();
    json_t *f = flags ? json_loads(flags, 0, NULL) : NULL;
    if (o && f)
        json_object_update(o, f); /* the flags win over the file */
    json_decref(f);
    free(flags);
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

/* alpha-packed covers the corners of each eye: a source whose first frame
 * has picture there (not fisheye) is refused now, with the message the
 * worker would give on its first chunk (unless --alpha-area corners). A
 * frame that does not decode here is left to the workers to judge. */
static int vrctl_check_alpha(const char *in, const struct job_spec *js)
{
    if (strncmp(js->output_kind, "alpha", 5) || js->alpha_area[0])
        return 0;
    vr_err e = { 0 };
    int layout = vio_layout_parse(js->layout[0] ? js->layout : "auto");
    if (vio_first_frame_corners_dark(in, layout, &layout, &e) != 0)
        return 0;
    return cli_fail(2, VIO_CORNERS_REFUSAL, vio_layout_name(layout), in);
}

/* The rest of vrctl_prepare for an output by URL: what `process -o URL`
 * checks before any work (out_dest_url_check: a plain file name the
 * stitch can write, no object there unless -y), and no user info (the
 * job carries the URL into Redis). */
static int vrctl_prepare_url_out(const char *out, int replace, struct job_spec *js)
{
    vr_err e = { 0 };
    char base[OUT_DEST_NAME_MAX];
    if (strlen(out) >= sizeof js->output)
        return cli_fail(2, "-o %.200s: a URL longer than %zu bytes", out, sizeof js->output - 1);
    /* s3:// without a key of the submitter's own: the controller's HEAD,
     * when it takes the job, is the check */
    int s3_blind = !strncmp(out, "s3://", 5) && !http_s3_have_credentials();
    if (url_root_plain(out, &e) < 0 ||
        out_dest_url_check(out, replace || s3_blind, base, sizeof base, &e) < 0 ||
        remux_out_check(base, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    snprintf(js->output, sizeof js->output, "%s", out);
    js->replace = replace != 0; /* the controller checks it again, and the MOVE */
    return vrctl_check_config(js);
}

int vrctl_prepare(const char *in, const char *out, int replace, struct job_spec *js,
                  struct remux_info *info)
{
    av_log_set_level(AV_LOG_FATAL);
    vr_err e = { 0 };
    /* a URL: probed from here as the submitter's own request (the address
     * rule guards the fleet's network from submitters, not from vrctl) */
    http_io_configure_private(1);
    if (url_root_is_url(in) && strlen(in) >= sizeof js->input)
        return cli_fail(2, "%.200s: a URL longer than %zu bytes", in, sizeof js->input - 1);
    if (url_root_is_url(in) && url_root_plain(in, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (remux_probe(in, info, &e) < 0 || remux_ts_streams_check(in, info->streams, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (info->still)
        return cli_fail(2, "%s is a still image (%s), not a video: `vr-worker segment-image %s "
                        "OUT.png` writes its mask", in, info->codec, in);
    if (vrctl_check_alpha(in, js) != 0)
        return 2;
    if (url_root_is_url(in))
        snprintf(js->input, sizeof js->input, "%s", in);
    else if (!realpath(in, js->input))
        return cli_fail(2, "cannot resolve %s", in);
    if (url_root_is_url(out)) /* the controller stitches it and uploads it (ctl_url_out.c) */
        return vrctl_prepare_url_out(out, replace, js);
    if (remux_out_check(out, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    if (vrctl_abs_out(out, js->output, sizeof js->output) < 0)
        return cli_fail(2, "-o %s: its directory does not exist", out);
    /* by device and inode, not by name (a hard link too); js->config still
     * holds -c's path here */
    const struct storage_file ins[] = { { "input", js->input },
                                        { "-c", js->config[0] ? js->config : NULL } };
    const struct storage_file outs[] = { { "-o", js->output } };
    if (storage_outputs_check(ins, 2, outs, 1, replace, &e) < 0)
        return cli_fail(2, "%s", e.msg);
    js->replace = replace != 0; /* the controller checks it again */
    return vrctl_check_config(js);
}

/* The id of a job in flight (not ended) that writes `output`, into by (n
 * bytes): 1, 0 none, <0 error. Two such jobs would both end "done", the
 * last stitch's file winning. Checked before the enqueue, so two submits
 * racing each other may both pass; the usual mistake, a second submit
 * while the first runs, is refused. A submitter's own jobs only: it may
 * read no other's, whose outputs lie outside its root anyway. */
static int vrctl_output_taken(struct rq *q, const char *output, char *by, size_t n, vr_err *err)
{
    enum { MAX_ACTIVE = 100000 };
    char (*ids)[48] = malloc(MAX_ACTIVE * sizeof *ids);
    char *text = malloc((JOB_MAX_JSON + 1));
    struct job_spec *js = malloc(sizeof *js);
    int rc = !ids || !text || !js ? vr_err_set(err, VR_ENOMEM, "out of memory") : 0;
    const char *as = vrctl_submitter(); /* a submitter reads its own jobs only */
    int count = rc < 0 ? 0
                : as[0] ? rq_owned_list(q, as, ids, MAX_ACTIVE, err)
                        : rq_active_list(q, ids, MAX_ACTIVE, err);
    if (count < 0)
        rc = count;
    for (int i = 0; rc == 0 && i < count; i++) {
        char state[32];
        if (rq_job_state(q, ids[i], state, sizeof state, NULL) <= 0 || job_state_ended(state) ||
            rq_job_spec(q, ids[i], text, (JOB_MAX_JSON + 1), NULL) <= 0 ||
            job_spec_parse(text, strlen(text), js, NULL) < 0)
            continue;
        if (!strcmp(js->output, output)) {
            snprintf(by, n, "%s", ids[i]);
            rc = 1;
        }
    }
    free(js);
    free(text);
    free(ids);
    return rc;
}

/* Enqueues prepared job js (its id set here, into id): refused when a
 * job in flight writes the same output. 0, or the exit code after saying
 * why. */
static int submit_one(struct rq *q, struct job_spec *js, const struct remux_info *info,
                      char *id, size_t n)
{
    char by[48];
    vr_err e = { 0 };
    int taken = vrctl_output_taken(q, js->output, by, sizeof by, &e);
    if (taken != 0) {
        if (taken > 0)
            fprintf(stderr, "vrctl submit: job %s, still in flight, writes %s: wait for it "
                    "or cancel it (vrctl cancel %s), or choose another -o\n", by, js->output, by);
        else
            fprintf(stderr, "vrctl submit: %s\n", e.msg);
        return 1;
    }
    vrctl_new_id(js->id, sizeof js->id);
    js->created_ms = rq_now_ms();
    int rc = vrctl_enqueue(q, js, info->frames_est, &e);
    if (rc)
        return cli_fail(rc < 0 ? 1 : rc, "%s", e.msg);
    snprintf(id, n, "%s", js->id);
    return 0;
}

/* submit DIR|GLOB|FILE... -o OUTDIR: a job a video (submit_batch.h), each
 * checked as one submit checks it; prints "ID  IN -> OUT" a job (--json:
 * an array of the jobs' objects). 0 when at least one job was queued and
 * none failed to be; 2 when none could be (every input refused); 1 when
 * Redis refused one. With --wait, the jobs are watched together. */
static int submit_batch(char **args, int n, const char *outdir, const char *redis,
                        const struct job_spec *base, int replace, int wait)
{
    struct batch_item *it = NULL;
    int refused = 0, m = batch_expand(args, n, outdir, base->output_kind, &it, &refused);
    if (m < 0)
        return 2;
    struct rq *q = NULL;
    int rc = 0, queued = 0;
    json_t *arr = json_array();
    for (int i = 0; i < m; i++) {
        struct job_spec js = *base; /* -c's path again: prepare rewrites it */
        struct remux_info info;
        char id[48];
        if (vrctl_prepare(it[i].in, it[i].out, replace, &js, &info)) {
            refused++;
            continue;
        }
        if (!q && (rc = vrctl_connect(redis, &q)))
            break;
        int one = submit_one(q, &js, &info, id, sizeof id);
        if (one) {
            rc = one;
            continue;
        }
        queued++;
        if (!vrctl_flags.json)
            printf("%s  %s -> %s\n", id, js.input, js.output);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "id", id, "input", js.input,
                                             "output", js.output, "state", "queued"));
        fflush(stdout);
    }
    fprintf(stderr, "vrctl submit: %d job%s queued, %d file%s refused\n", queued,
            text_plural(queued), refused, text_plural(refused));
    if (rc == 0 && queued == 0)
        rc = 2;
    /* the jobs (printed with --json); asked with no controller alive, a
     * job is watched once one records it */
    for (size_t i = 0; rc == 0 && wait && i < json_array_size(arr); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(arr, i), "id"));
        if (id && vrctl_wait_recorded(q, id, NULL) < 0)
            rc = cli_fail(1, "Redis failed while job %s waited to be recorded", id);
    }
    if (rc == 0 && wait)
        rc = vrctl_watch_all(q, NULL);
    struct rq_job_status *st = wait && q && vrctl_flags.json ? malloc(sizeof *st) : NULL;
    for (size_t i = 0; st && i < json_array_size(arr); i++) { /* as they ended */
        const char *id = json_string_value(json_object_get(json_array_get(arr, i), "id"));
        if (id && rq_job_status(q, id, 0, st, NULL) == 0)
            json_array_set_new(arr, i, rq_job_status_json(st));
    }
    free(st);
    if (vrctl_flags.json) {
        char *text = json_dumps(arr, VRCTL_JSON_FLAGS);
        if (text)
            printf("%s\n", text);
        free(text);
    }
    json_decref(arr);
    rq_free(&q);
    free(it);
    return rc;
}

int cmd_submit(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output-file", required_argument, 0, 'o' },
        VRCTL_SPEC_LONGOPTS,
        { "priority", required_argument, 0, 'P' },
        { "max-attempts", required_argument, 0, 'a' },
        { "wait", no_argument, 0, 'w' },
        RQ_LONGOPTS_REDIS,
        { 0, 0, 0, 0 }
    };
    struct job_spec js;
    job_spec_defaults(&js);
    struct rq_opts ro = { 0 };
    const char *out = NULL;
    int wait = 0, replace = 0, o;
    while ((o = cli_getopt(argc, argv, VRCTL_OPTSTRING, opts)) != -1) {
        int spec = vrctl_spec_option(o, optarg, &js);
        if (spec > 1)
            return spec;
        if (spec || rq_opts_take(&ro, o, optarg))
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
        case 'y': replace = 1; break;
        case 'n': replace = 0; break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (!out)
        return cli_usage_error("missing -o OUT");
    if (argc - optind < 1)
        return cli_usage_error("expected an input video (or a directory or pattern of them)");
    if (batch_wanted(argv + optind, argc - optind))
        return submit_batch(argv + optind, argc - optind, out, ro.redis, &js, replace, wait);
    struct remux_info info;
    char id[48];
    int rc = vrctl_prepare(argv[optind], out, replace, &js, &info);
    struct rq *q = NULL;
    if (rc || (rc = vrctl_connect(ro.redis, &q)))
        return rc;
    rc = submit_one(q, &js, &info, id, sizeof id);
    if (rc) {
        rq_free(&q);
        return rc;
    }
    if (!vrctl_flags.json)
        printf("%s\n", id);
    fflush(stdout);
    char hint[2][200];
    int nh = wait ? 0 : vrctl_liveness_hints(q, hint); /* watch says it itself */
    for (int i = 0; i < nh; i++)
        fprintf(stderr, "vrctl submit: note: %s\n", hint[i]);
    /* asked with no controller alive: the job is recorded when one starts */
    if (wait && (rc = vrctl_wait_recorded(q, id, NULL)) < 0)
        rc = cli_fail(1, "Redis failed while job %s waited to be recorded", id);
    rc = wait && rc == 0 ? vrctl_watch(q, id, NULL, 1) : rc;
    if (vrctl_flags.json)
        vrctl_print_result(q, id, rc);
    rq_free(&q);
    return rc;
}

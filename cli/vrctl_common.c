/*
 * vrctl_common.c - what vrctl's commands share: the Redis connection, the
 * job's events as lines (vrctl_event_print) and the job-spec options of
 * submit and run. The live progress display is vrctl_watch.c.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "rq_events.h"
#include "log.h"
#include "rq_fleet.h"
#include "rq_jobs.h"
#include "rq_stats.h"
#include "rq_submit.h"
#include "vio_layout.h"
#include "vio_video.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The submitter vrctl acts as: "" for the shared vrctl user, NAME when
 * the address's user is vrsub-NAME (set by vrctl_connect). */
static char vrctl_as[RQ_SUBMITTER_MAX];
static int vrctl_op; /* logged in as the operator's user `vrctl` (RQ_OPERATOR_USER) */

const char *vrctl_submitter(void)
{
    return vrctl_as;
}

const char *vrctl_asker(void)
{
    return vrctl_as[0] ? vrctl_as : vrctl_op ? RQ_OPERATOR : "";
}

void vrctl_new_id(char *buf, size_t n)
{
    if (vrctl_as[0])
        rq_submit_new_id(vrctl_as, buf, n);
    else
        job_new_id(buf, n);
}

static int vrctl_id_newer_first(const void *a, const void *b)
{
    return strcmp((const char *)b, (const char *)a);
}

int vrctl_job_list(struct rq *q, char (*ids)[48], int max, vr_err *err)
{
    if (!vrctl_as[0])
        return rq_job_list(q, ids, max, err);
    int n = rq_owned_list(q, vrctl_as, ids, max, err);
    if (n > 1)
        qsort(ids, (size_t)n, sizeof *ids, vrctl_id_newer_first);
    return n;
}

int vrctl_connect(const char *url, struct rq **out)
{
    const char *u = rq_url_pick(url);
    struct rq *q = NULL;
    vr_err e = { 0 };
    struct rq_url pu;
    *out = NULL;
    if (rq_url_parse(u, &pu, &e) < 0) /* a malformed address is bad usage */
        return cli_fail(2, "%s", e.msg);
    if (!rq_submitter_of_user(pu.user, vrctl_as, sizeof vrctl_as))
        vrctl_as[0] = '\0';
    vrctl_op = !strcmp(pu.user, RQ_OPERATOR_USER);
    explicit_bzero(pu.pass, sizeof pu.pass);
    for (int attempt = 0;; attempt++) {
        if (rq_open(u, 5000, &q, &e) == 0) {
            *out = q;
            return 0;
        }
        if (!q || e.code == VR_EINVAL || attempt == 4) {
            rq_free(&q);
            return cli_fail(1, "%s", e.msg); /* no answer, or a refused password */
        }
        rq_free(&q);
        usleep(200000u << attempt);
    }
}

int vrctl_no_job(const char *id)
{
    return cli_fail(2, "no job '%s'", id);
}

int vrctl_begin(int argc, char **argv, unsigned want, struct vrctl_session *s)
{
    static const struct option opts[] = {
        RQ_LONGOPTS_REDIS,
        { "json", no_argument, 0, 'j' },
        { "output", required_argument, 0, 'o' },
        { "follow", no_argument, 0, 'f' },
        { "state", required_argument, 0, 's' },
        { 0, 0, 0, 0 }
    };
    struct rq_opts ro = { 0 };
    memset(s, 0, sizeof *s);
    int o;
    while ((o = cli_getopt(argc, argv, (want & VRCTL_WANT_OUT) ? "o:yn" : "", opts)) != -1) {
        if (rq_opts_take(&ro, o, optarg))
            continue;
        if (o == 'j' && (want & VRCTL_WANT_JSON))
            s->json = 1;
        else if (o == 'o' && (want & VRCTL_WANT_OUT))
            s->output = optarg;
        else if ((o == 'y' || o == 'n') && (want & VRCTL_WANT_OUT))
            s->replace = o == 'y';
        else if (o == 'f' && (want & VRCTL_WANT_FOLLOW))
            s->follow = 1;
        else if (o == 's' && (want & VRCTL_WANT_STATE)) {
            for (const char *p = optarg; *p;) {
                char one[32];
                size_t n = strcspn(p, ",");
                snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
                if (!job_state_known(one))
                    return cli_usage_error("--state %s: '%s' is not a job state (%s)", optarg,
                                           one, "queued, splitting, running, stitching, done, "
                                           "failed, cancelled");
                p += n + (p[n] == ',');
            }
            s->state = optarg;
        }
        else if (o == '?')
            return 2; /* cli_getopt said why */
        else
            return cli_usage_error("option '%s' is not one of vrctl %s's", argv[optind - 1],
                                   argv[0]);
    }
    if ((want & VRCTL_WANT_OUT) && !s->output)
        return cli_usage_error("where to? (-o FILE)");
    int takes_id = (want & (VRCTL_WANT_ID | VRCTL_MAY_ID)) != 0;
    if (argc - optind > takes_id)
        return cli_usage_error("too many arguments");
    s->id = argc - optind == 1 ? argv[optind] : NULL;
    if ((want & VRCTL_WANT_ID) && !s->id)
        return cli_usage_error("which job? (vrctl status lists them)");
    if (s->id && !job_id_valid(s->id))
        return cli_usage_error("'%s' is not a job id", s->id);
    return vrctl_connect(ro.redis, &s->q);
}

void vrctl_end(struct vrctl_session *s)
{
    rq_free(&s->q);
}

/* ---- events: one line each, for `events`, `status` and the progress ---- */

/* A one-word kind for an event line, for columns and --json. Only the
 * words before the first path are looked at: a source named
 * /data/retry/in.mp4 made every splitting event a `retry` (issue 26,
 * finding 9). */
static const char *vrctl_event_kind(const char *msg_)
{
    char msg[256];
    const char *path = strstr(msg_, " /");
    snprintf(msg, sizeof msg, "%.*s", path ? (int)(path - msg_) : (int)strlen(msg_), msg_);
    static const struct { const char *needle, *kind; } kinds[] = {
        { "stopped answering", "worker-lost" }, { "Redis unreachable", "redis" },
        { "Redis answers again", "redis" },
        { "requeued", "requeued" }, { "dead-letter", "dead" }, { "enqueued again", "requeued" },
        { "cannot commit", "commit-retry" }, { "committed on try", "committed" },
        { " done", "done" }, { "done:", "job-done" }, { "failed", "failed" },
        { "cancelled", "cancelled" }, { "retry", "retry" }, { "stitching", "stitching" },
        { "splitting", "splitting" }, { "first chunk queued", "splitting" },
        { "running", "running" },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strstr(msg, kinds[i].needle))
            return kinds[i].kind;
    return "note";
}

void vrctl_event_print(const struct rq_event_entry *e, int json, FILE *f)
{
    const char *kind = vrctl_event_kind(e->msg);
    if (json) {
        json_t *o = json_pack("{s:s, s:I, s:o, s:o, s:s, s:s}", "id", e->id, "time_ms",
                              (json_int_t)e->ms, "chunk",
                              e->chunk >= 0 ? json_integer(e->chunk) : json_null(), "worker",
                              e->worker[0] ? json_string(e->worker) : json_null(), "event", kind,
                              "msg", e->msg);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            fprintf(f, "%s\n", s);
        free(s);
        json_decref(o);
        return;
    }
    time_t t = (time_t)(e->ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char chunk[16] = "-";
    if (e->chunk >= 0)
        snprintf(chunk, sizeof chunk, "%d", e->chunk);
    /* "chunk 3: worker W ..." : the chunk has its column already */
    const char *msg = e->msg;
    int skip = 0;
    if (e->chunk >= 0 && sscanf(msg, "chunk %*d: %n", &skip) == 0 && skip > 0)
        msg += skip;
    fprintf(f, "%02d:%02d:%02d.%03lld  chunk %-5s %-12s %-24s %s\n", tm.tm_hour, tm.tm_min,
            tm.tm_sec, e->ms % 1000, chunk, kind, e->worker[0] ? e->worker : "-", msg);
}

const char *vrctl_chunk_step(const char *chunking)
{
    return !strcmp(chunking, "range") ? "plan" : "split";
}

void vrctl_job_chunking(struct rq *q, const char *id, char *out, size_t n)
{
    char key[128];
    out[0] = '\0';
    rq_key_job(key, sizeof key, id);
    if (rq_hget(q, key, "chunking", out, n, NULL) <= 0 ||
        (strcmp(out, "range") && strcmp(out, "copy")))
        out[0] = '\0'; /* from Redis: only the two known words are shown */
}

struct vrctl_flags vrctl_flags = { .crf = -1 };

int vrctl_spec_option(int o, const char *arg, struct job_spec *js)
{
    switch (o) {
    case VRCTL_OPT_CRF:
        return cli_opt_int("--crf", arg, 0, 51, &vrctl_flags.crf) ? 2 : 1;
    case VRCTL_OPT_ENCODER:
        if (strlen(arg) >= sizeof vrctl_flags.encoder || !vio_encoder_name_ok(arg))
            return cli_usage_error("--encoder %s: no such encoder (" VIO_ENCODER_NAMES ")", arg);
        snprintf(vrctl_flags.encoder, sizeof vrctl_flags.encoder, "%s", arg);
        return 1;
    case VRCTL_OPT_JSON:
        vrctl_flags.json = 1;
        return 1;
    case VRCTL_OPT_PROFILE:
        snprintf(js->profile, sizeof js->profile, "%s", arg);
        return 1;
    case VRCTL_OPT_OUTPUT:
        if (!job_output_kind_valid(arg))
            return cli_usage_error("--output must be mask, alpha (alpha-packed) or greenscreen");
        snprintf(js->output_kind, sizeof js->output_kind, "%s", arg);
        return 1;
    case VRCTL_OPT_LAYOUT:
        if (vio_layout_parse(arg) == -1)
            return cli_usage_error("--layout %s: want auto, mono, sbs or tb", arg);
        snprintf(js->layout, sizeof js->layout, "%s", arg);
        return 1;
    case VRCTL_OPT_NOTIFY: {
        vr_err e = { 0 };
        if (job_notify_check(arg, &e) < 0)
            return cli_usage_error("--notify %s: %s", arg, e.msg);
        snprintf(js->notify, sizeof js->notify, "%s", arg);
        return 1;
    }
    case 'c': /* the path, until vrctl_prepare reads and checks the file */
        if (strlen(arg) >= sizeof js->config)
            return cli_usage_error("-c %s: path too long", arg);
        snprintf(js->config, sizeof js->config, "%s", arg);
        return 1;
    case VRCTL_OPT_ALPHA_AREA:
        if (strcmp(arg, "auto") && strcmp(arg, "corners"))
            return cli_usage_error("--alpha-area %s: want auto or corners", arg);
        snprintf(js->alpha_area, sizeof js->alpha_area, "%s", strcmp(arg, "auto") ? arg : "");
        return 1;
    case VRCTL_OPT_CHUNKING:
        if (!job_chunking_valid(arg))
            return cli_usage_error("--chunking %s: want auto, range or copy", arg);
        snprintf(js->chunking, sizeof js->chunking, "%s", strcmp(arg, "auto") ? arg : "");
        return 1;
    case VRCTL_OPT_DECODE_ERROR:
        if (job_decode_error_fail(arg) < 0 || !arg[0])
            return cli_usage_error("--on-decode-error %s: want conceal or fail", arg);
        snprintf(js->on_decode_error, sizeof js->on_decode_error, "%s",
                 strcmp(arg, "conceal") ? arg : "");
        return 1;
    case VRCTL_OPT_CHUNK:
        if (!strcmp(arg, "auto")) {
            js->chunk_seconds = 0;
            return 1;
        }
        char why[200];
        if (cli_parse_double("--chunk-seconds", arg, 0.2, 3600, &js->chunk_seconds, why,
                             sizeof why) < 0)
            return cli_usage_error("%s, or auto", why);
        return 1;
    default:
        return 0;
    }
}

void vrctl_print_result(struct rq *q, const char *id, int exit_code)
{
    struct rq_job_status *st = malloc(sizeof *st);
    json_t *o = st && rq_job_status(q, id, 0, st, NULL) == 0 ? rq_job_status_json(st) : NULL;
    if (!o)
        o = json_pack("{s:s, s:s}", "id", id, "state", "unknown");
    json_object_set_new(o, "exit", json_integer(exit_code));
    char *text = json_dumps(o, VRCTL_JSON_FLAGS);
    if (text)
        printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(o);
    free(st);
}

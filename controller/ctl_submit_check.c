/*
 * ctl_submit_check.c - what a controller checks of a job asked for in a
 * submitter's stream vr:submit:NAME or the operator's vr:submit:@ops
 * (issue 41, finding 3) before it records it. The entry is untrusted:
 * whoever holds the stream's Redis user may XADD anything, vrctl or not.
 * So every field is checked here, whatever vrctl checked before: the spec
 * by the job-spec parser (kinds, numbers in range, absolute paths, the
 * webhook URL), the id's form, the frame estimate's range, the profile
 * and its overrides loaded as the job's start loads them, the paths under
 * the roots (NAME/ under them for a submitter), and a submitter's limit of
 * live jobs. The job's start opens the files again, beneath the roots.
 */
#include "ctl.h"

#include "beneath.h"
#include "config.h"
#include "rq_submit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_FRAMES_EST_MAX 1000000000LL /* a chunk task's bound on frames, for a whole job */

/* why (n bytes) said: 1, a malformed entry. */
__attribute__((format(printf, 3, 4))) static int ctl_submit_bad(char *why, size_t n,
                                                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return 1;
}

int ctl_submit_parse(const struct ctl_submitter *s, const struct rq_msg *m, struct job_spec *js,
                     long long *frames, char *why, size_t n)
{
    const char *id = rq_msg_get(m, "id"), *spec = rq_msg_get(m, "spec");
    const char *fe = rq_msg_get(m, "frames_est");
    vr_err e = { 0 };
    if (!id || !job_id_valid(id))
        return ctl_submit_bad(why, n, "not a job id");
    if (!spec || job_spec_parse(spec, strnlen(spec, JOB_MAX_JSON + 1), js, &e) < 0)
        return ctl_submit_bad(why, n, "%s", e.msg[0] ? e.msg : "no job spec");
    if (strcmp(s->name, RQ_OPERATOR) ? !rq_submit_id_of(s->name, id)
                                     : strchr(id, RQ_SUBMITTER_ID_MARK) != NULL)
        /* a record of the operator's under a submitter's glob vr:job:NAMES*
         * would be that submitter's to read */
        return ctl_submit_bad(why, n, "job id %s is not of the form %s (a vrctl older than "
                              "the controller?)", id, strcmp(s->name, RQ_OPERATOR) ?
                              "NAMES..." : "YYYYMMDD-HHMMSS-xxxxxxxx");
    char *end = NULL;
    errno = 0;
    *frames = fe ? strtoll(fe, &end, 10) : 0;
    if (fe && (end == fe || *end || errno || *frames < 0 || *frames > CTL_FRAMES_EST_MAX))
        return ctl_submit_bad(why, n, "frames_est '%.40s' is not 0..%lld", fe,
                              CTL_FRAMES_EST_MAX);
    snprintf(js->id, sizeof js->id, "%s", id);
    return 0;
}

/* Path `path` (what: input or output) under root, or under URL root
 * url_root (the option naming it: opt) for a URL: "" or why not in why. */
static void ctl_submit_under(const char *what, const char *path, const char *root,
                             const char *url_root, const char *opt, char *why, size_t n)
{
    char rel[STORAGE_PATH_MAX];
    vr_err e = { 0 };
    if (url_root_is_url(path) ? url_root_check(path, url_root, opt, &e) < 0
                              : beneath_rel(root, path, rel, sizeof rel) < 0) {
        if (e.msg[0])
            snprintf(why, n, "%s", e.msg);
        else
            snprintf(why, n, "%s %.200s is outside the %s root %.200s (%s)", what, path, what,
                     root, opt);
    }
}

/* The profile and the job's overrides, as the job's start loads them
 * (ctl_decide): "" or why not in why. */
static void ctl_submit_config(const struct job_spec *js, char *why, size_t n)
{
    struct vr_config cfg;
    vr_err e = { 0 };
    if (config_load_profile(&cfg, js->profile, &e) < 0 ||
        (js->config[0] && config_apply_text(&cfg, js->config, "the job's config", &e) < 0))
        snprintf(why, n, "%s", e.msg);
}

int ctl_submit_refusal(struct ctl *c, const struct ctl_submitter *s, const struct job_spec *js,
                       char *why, size_t n)
{
    char in[STORAGE_PATH_MAX + RQ_SUBMITTER_MAX + 2], out[sizeof in];
    int op = !strcmp(s->name, RQ_OPERATOR);
    why[0] = '\0';
    if (op) {
        ctl_submit_under("input", js->input, c->input_root, c->input_url_root,
                         "vr-controller --input-root", why, n);
        if (!why[0])
            ctl_submit_under("output", js->output, c->output_root, c->output_url_root,
                             "vr-controller --output-root", why, n);
    } else { /* a submitter's: files under its own roots, no URL */
        snprintf(in, sizeof in, "%s/%s", c->input_root, s->name);
        snprintf(out, sizeof out, "%s/%s", c->output_root, s->name);
        char rel[STORAGE_PATH_MAX];
        if (strstr(js->input, "://") || beneath_rel(in, js->input, rel, sizeof rel) < 0)
            snprintf(why, n, "input %.200s is outside submitter %s's input root %.200s",
                     js->input, s->name, in);
        else if (strstr(js->output, "://") || beneath_rel(out, js->output, rel, sizeof rel) < 0)
            snprintf(why, n, "output %.200s is outside submitter %s's output root %.200s",
                     js->output, s->name, out);
    }
    if (!why[0])
        ctl_submit_config(js, why, n);
    if (why[0] || op)
        return 0;
    vr_err e = { 0 };
    long long live = rq_owned_live(c->q, s->name, &e);
    if (live < 0)
        return (int)live;
    if (live >= s->max_live)
        snprintf(why, n, "submitter %s has %lld jobs queued or running (at most %d: "
                 "vr-controller --submitter)", s->name, live, s->max_live);
    return 0;
}

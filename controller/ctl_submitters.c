/*
 * ctl_submitters.c - submitters who act as themselves (issue 41, findings
 * 3 and 9): `--submitter NAME:MAX`, and the intake of each such
 * submitter's stream vr:submit:NAME (queue/rq_submit.h), which only its
 * Redis user vrsub-NAME may write, so the stream's name says who asked.
 *
 * A job asked for there is recorded by the controller itself, with owner
 * NAME, when its input lies under INPUT-ROOT/NAME and its output under
 * OUTPUT-ROOT/NAME (names only here; the job's start then opens both
 * beneath the roots, following no link, as for every job) and NAME has
 * fewer than MAX jobs queued or running. Otherwise it is recorded failed
 * with the reason, so `vrctl status ID` says it. An entry without a valid
 * id or spec is logged and dropped. Once a second (the loop's audit turn),
 * at most CTL_INTAKE_MAX entries a submitter, its stream trimmed to
 * RQ_SUBMIT_STREAM_MAX.
 */
#include "ctl.h"

#include "beneath.h"
#include "cmdtable.h"
#include "log.h"
#include "rq_jobs.h"
#include "rq_stream.h"
#include "rq_submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_INTAKE_MAX 16

int ctl_submitter_option(struct ctl *c, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char name[RQ_SUBMITTER_MAX] = "";
    if (colon && (size_t)(colon - arg) < sizeof name)
        snprintf(name, sizeof name, "%.*s", (int)(colon - arg), arg);
    int max = 0;
    if (!colon || !rq_submitter_name_valid(name))
        return cli_usage_error("--submitter %s: want NAME:MAX, NAME 1-31 of a-z 0-9 _ -", arg);
    if (cli_opt_int("--submitter's MAX", colon + 1, 1, 100000, &max))
        return 2;
    if (c->nsubmitters >= CTL_SUBMITTERS_MAX)
        return cli_usage_error("--submitter: at most %d submitters", CTL_SUBMITTERS_MAX);
    for (int i = 0; i < c->nsubmitters; i++)
        if (!strcmp(c->submitters[i].name, name))
            return cli_usage_error("--submitter %s: given twice", name);
    struct ctl_submitter *s = &c->submitters[c->nsubmitters++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->max_live = max;
    return 0;
}

/* Why s may not have job js ("" when it may): a path outside its roots,
 * or its limit reached. <0 when Redis failed (try again next turn). */
static int ctl_submitter_refusal(struct ctl *c, const struct ctl_submitter *s,
                                 const struct job_spec *js, char *why, size_t n)
{
    char root[STORAGE_PATH_MAX + RQ_SUBMITTER_MAX + 2], rel[STORAGE_PATH_MAX];
    why[0] = '\0';
    snprintf(root, sizeof root, "%s/%s", c->input_root, s->name);
    if (strstr(js->input, "://") || beneath_rel(root, js->input, rel, sizeof rel) < 0) {
        snprintf(why, n, "input %.200s is outside submitter %s's input root %.200s", js->input,
                 s->name, root);
        return 0;
    }
    snprintf(root, sizeof root, "%s/%s", c->output_root, s->name);
    if (strstr(js->output, "://") || beneath_rel(root, js->output, rel, sizeof rel) < 0) {
        snprintf(why, n, "output %.200s is outside submitter %s's output root %.200s",
                 js->output, s->name, root);
        return 0;
    }
    vr_err e = { 0 };
    long long live = rq_owned_live(c->q, s->name, &e);
    if (live < 0)
        return (int)live;
    if (live >= s->max_live)
        snprintf(why, n, "submitter %s has %lld jobs queued or running (at most %d: "
                 "vr-controller --submitter)", s->name, live, s->max_live);
    return 0;
}

/* Entry m of s's stream: recorded, recorded failed, or dropped. */
static void ctl_submitter_take(struct ctl *c, const struct ctl_submitter *s,
                               const struct rq_msg *m)
{
    const char *id = rq_msg_get(m, "id"), *spec = rq_msg_get(m, "spec");
    const char *fe = rq_msg_get(m, "frames_est");
    struct job_spec *js = calloc(1, sizeof *js);
    vr_err e = { 0 };
    char *json = NULL;
    if (!js)
        return;
    if (!id || !job_id_valid(id) || !spec ||
        job_spec_parse(spec, strnlen(spec, JOB_MAX_JSON + 1), js, &e) < 0) {
        log_warn("submitter %s: entry %s dropped: %s", s->name, m->id,
                 e.msg[0] ? e.msg : "no valid job id or spec");
        free(js);
        return;
    }
    snprintf(js->id, sizeof js->id, "%s", id);
    char why[512];
    if (ctl_submitter_refusal(c, s, js, why, sizeof why) < 0 ||
        job_spec_to_json(js, &json, &e) < 0) {
        free(js);
        return; /* acked: Redis went away mid-intake; vrctl status says no such job */
    }
    long long frames = fe ? rq_record_ll(fe) : 0;
    int rc = rq_job_submit(c->q, id, json, rq_now_ms(), frames, js->priority, &e);
    if (rc == 0)
        rc = rq_job_note(c->q, id, "owner", s->name, &e);
    if (rc == 0 && !why[0])
        rc = rq_owned_add(c->q, s->name, id, &e);
    if (rc < 0)
        log_warn("submitter %s: job %s not recorded: %s", s->name, id, e.msg);
    else if (why[0]) {
        log_warn("submitter %s: job %s refused: %s", s->name, id, why);
        ctl_jobfiles_fail(c, id, 0, why);
    } else
        log_info("submitter %s: job %s recorded (%s -> %s)", s->name, id, js->input, js->output);
    free(json);
    free(js);
}

void ctl_submitters_intake(struct ctl *c)
{
    for (int i = 0; i < c->nsubmitters; i++) {
        const struct ctl_submitter *s = &c->submitters[i];
        char key[64];
        rq_submit_key(s->name, key, sizeof key);
        const char *streams[] = { key };
        if (rq_group_ensure(c->q, key, RQ_G_CONTROLLERS, NULL) < 0)
            continue;
        /* a submitter's flood costs only its own oldest asks */
        rq_submit_trim(c->q, s->name);
        for (int k = 0; k < CTL_INTAKE_MAX; k++) {
            struct rq_msg m = { 0 };
            if (rq_read(c->q, RQ_G_CONTROLLERS, c->name, streams, 1, 0, &m, NULL) <= 0)
                break;
            rq_ack(c->q, key, RQ_G_CONTROLLERS, m.id, NULL); /* once, by one controller */
            ctl_submitter_take(c, s, &m);
            rq_msg_release(&m);
        }
    }
}

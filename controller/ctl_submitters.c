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
 * RQ_SUBMIT_STREAM_MAX. An entry is acknowledged only once handled: the
 * job and its owner are recorded in one script, and an entry taken again
 * (its controller died before the ack) finds the job recorded and does no
 * more. A job's id must begin with NAME and its mark (rq_submit_new_id),
 * the keys NAME's Redis user may read. Cancel and retry entries: ctl_submit_cmd.c.
 */
#include "ctl.h"

#include "beneath.h"
#include "clock.h"
#include "cmdtable.h"
#include "log.h"
#include "rq_jobs.h"
#include "rq_stream.h"
#include "rq_submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_INTAKE_MAX 16

int ctl_submitter_option(struct ctl *c, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char name[RQ_SUBMITTER_MAX] = "", num[32] = "";
    if (colon && (size_t)(colon - arg) < sizeof name)
        snprintf(name, sizeof name, "%.*s", (int)(colon - arg), arg);
    int max = 0, chunks = 0;
    if (!colon || !rq_submitter_name_valid(name))
        return cli_usage_error("--submitter %s: want NAME:MAX[:CHUNKS], NAME 1-31 of a-z 0-9 _ -",
                               arg);
    const char *second = strchr(colon + 1, ':');
    snprintf(num, sizeof num, "%.*s", second ? (int)(second - colon - 1) : 31, colon + 1);
    if (cli_opt_int("--submitter's MAX", num, 1, 100000, &max))
        return 2;
    if (second && cli_opt_int("--submitter's CHUNKS", second + 1, max, JOB_MAX_CHUNKS, &chunks))
        return 2;
    if (c->nsubmitters >= CTL_SUBMITTERS_MAX)
        return cli_usage_error("--submitter: at most %d submitters", CTL_SUBMITTERS_MAX);
    for (int i = 0; i < c->nsubmitters; i++)
        if (!strcmp(c->submitters[i].name, name))
            return cli_usage_error("--submitter %s: given twice", name);
    struct ctl_submitter *s = &c->submitters[c->nsubmitters++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->max_live = max;
    s->max_chunks = chunks;
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

/* The job of entry m (an id and a spec) of s's stream: recorded, recorded
 * failed, or dropped. <0 when Redis failed: the entry is left pending, to
 * be taken again (ctl_submitters_intake). */
static int ctl_submitter_job(struct ctl *c, const struct ctl_submitter *s,
                             const struct rq_msg *m)
{
    const char *id = rq_msg_get(m, "id"), *spec = rq_msg_get(m, "spec");
    const char *fe = rq_msg_get(m, "frames_est");
    struct job_spec *js = calloc(1, sizeof *js);
    vr_err e = { 0 };
    char *json = NULL, why[512], was[512];
    if (!js)
        return VR_ENOMEM;
    if (!id || !job_id_valid(id) || !spec ||
        job_spec_parse(spec, strnlen(spec, JOB_MAX_JSON + 1), js, &e) < 0) {
        log_warn("submitter %s: entry %s dropped: %s", s->name, m->id,
                 e.msg[0] ? e.msg : "no valid job id or spec");
        free(js);
        return 0;
    }
    if (!rq_submit_id_of(s->name, id)) { /* its record would lie outside its user's reads */
        log_warn("submitter %s: entry %s dropped: job id %s is not of the form %s%c... "
                 "(a vrctl older than the controller?)", s->name, m->id, id, s->name,
                 RQ_SUBMITTER_ID_MARK);
        free(js);
        return 0;
    }
    snprintf(js->id, sizeof js->id, "%s", id);
    int rc = ctl_submitter_refusal(c, s, js, why, sizeof why);
    if (rc >= 0)
        rc = job_spec_to_json(js, &json, &e);
    long long frames = fe ? rq_record_ll(fe) : 0;
    if (rc >= 0)
        rc = rq_submit_record(c->q, s->name, id, json, frames, js->priority, why, was,
                              sizeof was, &e);
    if (rc < 0)
        log_warn("submitter %s: job %s not recorded yet: %s", s->name, id, e.msg);
    else if (rc == 0)
        log_warn("submitter %s: job %s refused: the id is another job's", s->name, id);
    else if (rc == 2)
        log_info("submitter %s: job %s recorded already (its entry is taken again)", s->name, id);
    else if (rc == 3 || why[0]) {
        log_warn("submitter %s: job %s refused: %s", s->name, id, rc == 3 ? was : why);
        rc = ctl_jobfiles_fail(c, id, 0, rc == 3 ? was : why) == VR_EREDIS ? VR_EREDIS : 0;
    } else
        log_info("submitter %s: job %s recorded (%s -> %s)", s->name, id, js->input, js->output);
    free(json);
    free(js);
    return rc < 0 ? rc : 0;
}

/* Entry m of s's stream, a job or a cancel or retry: 0 handled (ack it),
 * <0 not yet. VR_TEST_INTAKE_DELAY_MS (tests only): a stall between the
 * read and the record, for a test to kill the controller in. */
static int ctl_submitter_take(struct ctl *c, const struct ctl_submitter *s,
                              const struct rq_msg *m)
{
    unsigned delay = clock_test_delay_ms("VR_TEST_INTAKE_DELAY_MS");
    if (delay)
        usleep(delay * 1000u);
    if (rq_msg_get(m, "cmd"))
        return ctl_submitter_cmd(c, s, m);
    return ctl_submitter_job(c, s, m);
}

/* Entries a controller read and never handled (it died between the read
 * and the record, or Redis failed mid-way) are taken again once idle this
 * long; a live controller handles one in milliseconds. */
#define CTL_INTAKE_ORPHAN_MS 5000

/* Up to CTL_INTAKE_MAX entries of stream key: the orphaned ones
 * (orphans) or new ones, each acknowledged only once handled, so a
 * controller killed between the read and the record loses none. */
static void ctl_submitter_drain(struct ctl *c, const struct ctl_submitter *s, const char *key,
                                int orphans)
{
    const char *streams[] = { key };
    for (int k = 0; k < CTL_INTAKE_MAX; k++) {
        struct rq_msg m = { 0 };
        int got = orphans ? rq_autoclaim(c->q, key, RQ_G_CONTROLLERS, c->name,
                                         CTL_INTAKE_ORPHAN_MS, &m, NULL)
                          : rq_read(c->q, RQ_G_CONTROLLERS, c->name, streams, 1, 0, &m, NULL);
        if (got <= 0)
            break;
        int rc = ctl_submitter_take(c, s, &m);
        if (rc >= 0)
            rq_ack(c->q, key, RQ_G_CONTROLLERS, m.id, NULL); /* once, by one controller */
        rq_msg_release(&m);
        if (rc < 0)
            break; /* Redis trouble: the rest next turn */
    }
}

void ctl_submitters_intake(struct ctl *c)
{
    for (int i = 0; i < c->nsubmitters; i++) {
        const struct ctl_submitter *s = &c->submitters[i];
        char key[64];
        rq_submit_key(s->name, key, sizeof key);
        if (rq_group_ensure(c->q, key, RQ_G_CONTROLLERS, NULL) < 0)
            continue;
        /* a submitter's flood costs only its own oldest asks */
        rq_submit_trim(c->q, s->name);
        ctl_submitter_drain(c, s, key, 1);
        ctl_submitter_drain(c, s, key, 0);
    }
    /* the operator's user `vrctl`: cancel, retry and purge of any job
     * (ctl_submit_cmd.c); max_live 0, no limit; a job entry there is
     * dropped (no id is of its form) */
    static const struct ctl_submitter op = { .name = RQ_OPERATOR };
    char key[64];
    rq_submit_key(op.name, key, sizeof key);
    if (rq_group_ensure(c->q, key, RQ_G_CONTROLLERS, NULL) < 0)
        return;
    rq_submit_trim(c->q, op.name);
    ctl_submitter_drain(c, &op, key, 1);
    ctl_submitter_drain(c, &op, key, 0);
}

/*
 * ctl_submitters.c - submitters who act as themselves (issue 41, findings
 * 3 and 9): `--submitter NAME:MAX`, and the intake of each such
 * submitter's stream vr:submit:NAME (queue/rq_submit.h), which only its
 * Redis user vrsub-NAME may write, so the stream's name says who asked.
 *
 * A job asked for there is recorded by the controller itself, with owner
 * NAME, when its input lies under INPUT-ROOT/NAME and its output under
 * OUTPUT-ROOT/NAME (names only here; every open of the job's files
 * checks them again against NAME's roots, the input's mode against the
 * roots' owner too: ctl_paths_owner.c) and NAME has
 * fewer than MAX jobs queued or running. Otherwise it is recorded failed
 * with the reason, so `vrctl status ID` says it. An entry without a valid
 * id or spec is logged and dropped. Once a second (the loop's audit turn),
 * at most CTL_INTAKE_MAX entries a submitter, its stream trimmed to
 * RQ_SUBMIT_STREAM_MAX. An entry is acknowledged only once handled: the
 * job and its owner are recorded in one script, and an entry taken again
 * (its controller died before the ack) finds the job recorded and does no
 * more. A job's id must begin with NAME and its mark (rq_submit_new_id),
 * the keys NAME's Redis user may read. Each job entry is answered in
 * vr:reply:NAME:<entry> (the id, or why not). What is checked:
 * ctl_submit_check.c. Cancel and retry entries: ctl_submit_cmd.c.
 *
 * The operator's user `vrctl` submits the same way, in vr:submit:@ops
 * (issue 41: its ACL line has no EVAL and writes no job record): a job
 * under the controller's own roots, no owner, no limit; vrctl waits for
 * the answer and prints it.
 */
#include "ctl.h"

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

/* The job of entry m (an id and a spec) of s's stream, checked
 * (ctl_submit_check.c): recorded, recorded failed saying why, or dropped
 * when malformed; answered in vr:reply:NAME:<entry> (vrctl, logged in as
 * the operator's user, waits for it). The operator's job has no owner and
 * no limit. <0 when Redis failed: the entry is left pending, to be taken
 * again (ctl_submitters_intake). */
static int ctl_submitter_job(struct ctl *c, const struct ctl_submitter *s,
                             const struct rq_msg *m)
{
    vr_err e = { 0 };
    char *json = NULL, why[512], was[512];
    long long frames = 0;
    int op = !strcmp(s->name, RQ_OPERATOR), was_code = 0;
    if (rq_submit_answer_get(c->q, s->name, m->id, &was_code, why, sizeof why, &e) != 0)
        return e.code < 0 ? e.code : 0; /* answered before its controller's ack, or Redis */
    struct job_spec *js = calloc(1, sizeof *js);
    if (!js)
        return VR_ENOMEM;
    if (ctl_submit_parse(s, m, js, &frames, why, sizeof why)) {
        log_warn("submitter %s: entry %s dropped: %s", s->name, m->id, why);
        rq_submit_answer(c->q, s->name, m->id, 2, why);
        free(js);
        return 0;
    }
    const char *id = js->id;
    int rc = ctl_submit_refusal(c, s, js, why, sizeof why);
    if (rc >= 0)
        rc = job_spec_to_json(js, &json, &e);
    if (rc >= 0)
        rc = rq_submit_record(c->q, op ? "" : s->name, id, json, frames, js->priority, why,
                              was, sizeof was, &e);
    int code = 0;
    if (rc < 0)
        log_warn("submitter %s: job %s not recorded yet: %s", s->name, id, e.msg);
    else if (rc == 0) {
        log_warn("submitter %s: job %s refused: the id is another job's", s->name, id);
        snprintf(why, sizeof why, "job %s exists already", id);
        code = 1;
    } else if (rc == 2)
        log_info("submitter %s: job %s recorded already (its entry is taken again)", s->name, id);
    else if (rc == 3 || why[0]) {
        if (rc == 3)
            snprintf(why, sizeof why, "%s", was);
        log_warn("submitter %s: job %s refused: %s", s->name, id, why);
        rc = ctl_jobfiles_fail(c, id, 0, why) == VR_EREDIS ? VR_EREDIS : 0;
        code = 2;
    } else
        log_info("submitter %s: job %s recorded (%s -> %s)", s->name, id, js->input, js->output);
    if (rc >= 0)
        rq_submit_answer(c->q, s->name, m->id, code, code ? why : id);
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
    /* the operator's user `vrctl`: submit, cancel, retry and purge of any
     * job (ctl_submit_cmd.c); max_live 0, no limit, no owner */
    static const struct ctl_submitter op = { .name = RQ_OPERATOR };
    char key[64];
    rq_submit_key(op.name, key, sizeof key);
    if (rq_group_ensure(c->q, key, RQ_G_CONTROLLERS, NULL) < 0)
        return;
    rq_submit_trim(c->q, op.name);
    ctl_submitter_drain(c, &op, key, 1);
    ctl_submitter_drain(c, &op, key, 0);
}

/*
 * ctl_submit_cmd.c - a submitter's cancel and retry (issue 41): entries
 * {cmd, id} of its own stream vr:submit:NAME, which only its Redis user
 * vrsub-NAME may write (queue/rq_submit.h). The controller does either
 * only for a job whose `owner` is NAME (recorded by ctl_submitters.c, never
 * by the submitter), a retry only while NAME has fewer than its MAX jobs
 * live, and answers in vr:reply:NAME:<entry>, which vrctl waits for. A job
 * of another's, or none, gets the same answer, so a submitter learns
 * nothing of others' jobs. An entry taken twice (its controller died
 * before the ack) finds its answer written and does nothing again.
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"
#include "rq_rerun.h"
#include "rq_submit.h"

#include <stdio.h>
#include <string.h>

/* s's cancel of its job id: the answer's code and text. <0 Redis failed. */
static int ctl_submitter_cancel(struct ctl *c, const struct ctl_submitter *s, const char *id,
                                char *text, size_t n)
{
    char state[32] = "", why[96];
    vr_err e = { 0 };
    snprintf(why, sizeof why, "cancelled by submitter %s", s->name);
    int rc = rq_job_cancel(c->q, id, why, state, sizeof state, &e);
    if (rc == 1) {
        rq_event(c->q, id, "%s", why);
        log_info("job %s %s", id, why);
        snprintf(text, n, "%s cancelled", id);
        return 0;
    }
    if (rc == 0) {
        snprintf(text, n, "job %s already %s", id, state);
        return 1;
    }
    if (rc == VR_ENOENT) {
        snprintf(text, n, "no job '%s' of submitter %s's", id, s->name);
        return 2;
    }
    return rc;
}

/* s's retry of its job id, within its limit of live jobs. */
static int ctl_submitter_retry(struct ctl *c, const struct ctl_submitter *s, const char *id,
                               char *text, size_t n)
{
    char what[256] = "";
    vr_err e = { 0 };
    long long live = rq_owned_live(c->q, s->name, &e);
    if (live < 0)
        return (int)live;
    if (live >= s->max_live) {
        snprintf(text, n, "submitter %s has %lld jobs queued or running (at most %d: "
                 "vr-controller --submitter)", s->name, live, s->max_live);
        return 1;
    }
    /* counted first: a job live again and not counted would pass the limit */
    int rc = rq_owned_add(c->q, s->name, id, &e);
    if (rc == 0)
        rc = rq_job_rerun(c->q, id, what, sizeof what, &e);
    if (rc == 1) {
        log_info("job %s: retried by submitter %s (%s)", id, s->name, what);
        snprintf(text, n, "%s: retrying (%s)", id, what);
        return 0;
    }
    if (rc == 0) {
        snprintf(text, n, "job %s is %s; only failed or cancelled jobs are retried", id, what);
        return 1;
    }
    if (rc == VR_ENOENT) {
        snprintf(text, n, "no job '%s' of submitter %s's", id, s->name);
        return 2;
    }
    return rc;
}

int ctl_submitter_cmd(struct ctl *c, const struct ctl_submitter *s, const struct rq_msg *m)
{
    const char *cmd = rq_msg_get(m, "cmd"), *id = rq_msg_get(m, "id");
    char owner[RQ_SUBMITTER_MAX + 1] = "", text[400], jk[128];
    int code = 0, was = 0;
    vr_err e = { 0 };
    if (rq_submit_answer_get(c->q, s->name, m->id, &was, text, sizeof text, &e) != 0)
        return e.code < 0 ? e.code : 0; /* answered before its controller's ack, or Redis */
    int cancel = !strcmp(cmd, "cancel");
    if (!cancel && strcmp(cmd, "retry")) {
        snprintf(text, sizeof text, "a controller does cancel or retry, not this");
        code = 1;
    } else if (!id || !job_id_valid(id)) {
        snprintf(text, sizeof text, "not a job id");
        code = 2;
    } else {
        rq_key_job(jk, sizeof jk, id);
        int rc = rq_hget(c->q, jk, "owner", owner, sizeof owner, &e);
        if (rc < 0)
            return rc;
        if (rc == 0 || strcmp(owner, s->name)) {
            log_warn("submitter %s: %s of job %s refused: not its job", s->name, cmd, id);
            snprintf(text, sizeof text, "no job '%s' of submitter %s's", id, s->name);
            code = 2;
        } else if ((code = cancel ? ctl_submitter_cancel(c, s, id, text, sizeof text)
                                  : ctl_submitter_retry(c, s, id, text, sizeof text)) < 0)
            return code;
    }
    rq_submit_answer(c->q, s->name, m->id, code, text);
    return 0;
}

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
 *
 * The operator's user `vrctl` asks the same way in vr:submit:@ops
 * (RQ_OPERATOR: its ACL line writes no job or chunk state): cancel and
 * retry of any job, whoever owns it (a submitter's retried job counts
 * against its owner's live jobs again, with no limit), and purge
 * (ctl_operator.c).
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"
#include "rq_rerun.h"
#include "rq_submit.h"

#include <stdio.h>
#include <string.h>

/* The answer to a job that is none of s's (or none at all). */
static void ctl_submitter_no_job(const struct ctl_submitter *s, const char *id, char *text,
                                 size_t n)
{
    if (s->max_live)
        snprintf(text, n, "no job '%s' of submitter %s's", id, s->name);
    else
        snprintf(text, n, "no job '%s'", id);
}

/* s's cancel of its job id: the answer's code and text. <0 Redis failed. */
static int ctl_submitter_cancel(struct ctl *c, const struct ctl_submitter *s, const char *id,
                                char *text, size_t n)
{
    char state[32] = "", why[96];
    vr_err e = { 0 };
    if (strcmp(s->name, RQ_OPERATOR))
        snprintf(why, sizeof why, "cancelled by submitter %s", s->name);
    else
        snprintf(why, sizeof why, "cancelled by the user"); /* as vrctl's own cancel says */
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
        ctl_submitter_no_job(s, id, text, n);
        return 2;
    }
    return rc;
}

/* s's retry of its job id, within its limit of live jobs. */
static int ctl_submitter_retry(struct ctl *c, const struct ctl_submitter *s, const char *id,
                               const char *owner, char *text, size_t n)
{
    char what[256] = "";
    vr_err e = { 0 };
    int rc = 0;
    long long live = s->max_live ? rq_owned_live(c->q, s->name, &e) : 0;
    if (live < 0)
        return (int)live;
    if (!s->max_live) { /* the operator: no limit, but the owner counts the job again */
        if (owner[0] && (rc = rq_owned_add(c->q, owner, id, &e)) < 0)
            return rc;
    } else if (live >= s->max_live) {
        snprintf(text, n, "submitter %s has %lld jobs queued or running (at most %d: "
                 "vr-controller --submitter)", s->name, live, s->max_live);
        return 1;
    }
    /* counted first: a job live again and not counted would pass the limit */
    if (s->max_live)
        rc = rq_owned_add(c->q, s->name, id, &e);
    if (rc == 0)
        rc = rq_job_rerun(c->q, id, what, sizeof what, &e);
    if (rc == 1) {
        log_info("job %s: retried by %s%s (%s)", id, s->max_live ? "submitter " : "the operator",
                 s->max_live ? s->name : "", what);
        snprintf(text, n, "%s: retrying (%s)", id, what);
        return 0;
    }
    if (rc == 0) {
        snprintf(text, n, "job %s is %s; only failed or cancelled jobs are retried", id, what);
        return 1;
    }
    if (rc == VR_ENOENT) {
        ctl_submitter_no_job(s, id, text, n);
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
    int cancel = !strcmp(cmd, "cancel"), op = !strcmp(s->name, RQ_OPERATOR);
    if (op && cmd && !strncmp(cmd, "purge", 5) && (!strcmp(cmd, "purge") ||
                                                   !strcmp(cmd, "purge-before"))) {
        if ((code = ctl_operator_purge(c, cmd, id, text, sizeof text)) < 0)
            return code;
    } else if (!cancel && strcmp(cmd, "retry")) {
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
        if (!op && (rc == 0 || strcmp(owner, s->name))) {
            log_warn("submitter %s: %s of job %s refused: not its job", s->name, cmd, id);
            snprintf(text, sizeof text, "no job '%s' of submitter %s's", id, s->name);
            code = 2;
        } else if ((code = cancel ? ctl_submitter_cancel(c, s, id, text, sizeof text)
                                  : ctl_submitter_retry(c, s, id, owner, text, sizeof text)) < 0)
            return code;
    }
    rq_submit_answer(c->q, s->name, m->id, code, text);
    return 0;
}

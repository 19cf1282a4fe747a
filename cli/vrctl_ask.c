/*
 * vrctl_ask.c - `vrctl cancel`, `retry`, `purge` (and the operator's
 * `submit`) logged in as a submitter (vrsub-NAME) or as the operator's
 * user `vrctl` (issue 41):
 * neither Redis user may write job or chunk state, so vrctl asks in its
 * own stream (vr:submit:NAME, vr:submit:@ops) and a controller does it:
 * for a submitter run with `--submitter NAME:...`, only NAME's own jobs;
 * for the operator, any job (queue/rq_submit.h). vrctl waits for the
 * answer and prints it. The operator's submit goes the same way: its user
 * writes no job record either.
 */
#include "vrctl.h"

#include "clock.h"
#include "cmdtable.h"
#include "rq_fleet.h"
#include "rq_jobs.h"
#include "rq_submit.h"
#include "text.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VRCTL_ASK_WAIT_MS 30000 /* a controller takes these entries once a second */

/* How long vrctl waits for an answer: VRCTL_ASK_WAIT_MS, or with
 * VR_TEST_ASK_WAIT_MS (tests only, at most 1 s) that long, so a test of
 * the answer that never comes does not sit out the 30 s. */
static int vrctl_ask_wait_ms(void)
{
    unsigned test = clock_test_delay_ms("VR_TEST_ASK_WAIT_MS");
    return test ? (int)test : VRCTL_ASK_WAIT_MS;
}

/* The answer to entry of as's stream, within vrctl_ask_wait_ms(): 1 (its
 * code and text, stripped of controls), 0 none came, <0 Redis (e). */
static int vrctl_ask_wait(struct rq *q, const char *as, const char *entry, int *code,
                          char *text, size_t n, vr_err *e)
{
    for (int t = 0, wait = vrctl_ask_wait_ms(); t < wait; t += 100) {
        int rc = rq_submit_answer_get(q, as, entry, code, text, n, e);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            text_strip_controls(text); /* written by whoever holds the controller's user */
            return 1;
        }
        usleep(100000);
    }
    return 0;
}

/* Why no answer came, into msg (n bytes), for `vrctl shown` as `as`. */
static void vrctl_no_answer(const char *shown, const char *as, char *msg, size_t n)
{
    if (strcmp(as, RQ_OPERATOR))
        snprintf(msg, n, "vrctl %s: no controller answered within %d s: is one running with "
                 "--submitter %s:MAX?", shown, vrctl_ask_wait_ms() / 1000, as);
    else
        snprintf(msg, n, "vrctl %s: no controller answered within %d s: is one running? "
                 "(logged in as %s, vrctl asks a controller to do it)", shown,
                 vrctl_ask_wait_ms() / 1000, RQ_OPERATOR_USER);
}

int vrctl_ask(struct rq *q, const char *cmd, const char *arg)
{
    const char *as = vrctl_asker();
    const char *shown = !strcmp(cmd, "purge-before") ? "purge" : cmd;
    char entry[64], text[600];
    vr_err e = { 0 };
    int code = 1, rc = rq_submit_cmd(q, as, cmd, arg, entry, sizeof entry, &e);
    if (rc == 0)
        rc = vrctl_ask_wait(q, as, entry, &code, text, sizeof text, &e);
    if (rc < 0) {
        fprintf(stderr, "vrctl %s: %s\n", shown, e.msg);
        return 1;
    }
    if (rc == 0) {
        vrctl_no_answer(shown, as, text, sizeof text);
        fprintf(stderr, "%s\n", text);
        return 1;
    }
    if (code == 0)
        printf("%s\n", text);
    else
        fprintf(stderr, "vrctl %s: %s\n", shown, text);
    return code;
}

int vrctl_ask_submit(struct rq *q, const struct job_spec *js, const char *spec,
                     long long frames_est, vr_err *err)
{
    char entry[64], text[600];
    struct rq_liveness lv;
    int code = 1, rc = rq_submit_as(q, RQ_OPERATOR, js->id, spec, frames_est, js->priority,
                                    entry, sizeof entry, err);
    if (rc < 0)
        return rc;
    /* none alive: the first to start records it (submit's note says so),
     * as a job waited queued for one before */
    if (rq_liveness_read(q, &lv, NULL) == 0 && lv.controllers == 0)
        return 0;
    rc = vrctl_ask_wait(q, RQ_OPERATOR, entry, &code, text, sizeof text, err);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        vrctl_no_answer("submit", RQ_OPERATOR, text, sizeof text);
        return vr_err_set(err, VR_ETIMEDOUT, "%s; one that starts later still records job %s "
                          "(vrctl status %s)", text + strlen("vrctl submit: "), js->id,
                          js->id);
    }
    if (code == 0)
        return 0;
    vr_err_set(err, VR_EINVAL, "%s", text);
    return code;
}

int vrctl_wait_recorded(struct rq *q, const char *id, const char *entry)
{
    char state[32], text[600];
    for (;;) {
        int code = 0, rc = rq_job_state(q, id, state, sizeof state, NULL);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        if (entry && (rc = rq_submit_answer_get(q, vrctl_asker(), entry, &code, text,
                                                sizeof text, NULL)) < 0)
            return rc;
        if (entry && rc == 1 && code != 0) { /* refused: nothing will record it */
            text_strip_controls(text);
            return cli_fail(code, "%s", text);
        }
        usleep(200000);
    }
}

int vrctl_asked(struct rq *q, const char *id, char *entry)
{
    const char *as = vrctl_asker();
    char state[32];
    if (!as[0])
        return 0; /* a user who writes job records: none is asked */
    int rc = rq_job_state(q, id, state, sizeof state, NULL);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = rq_submit_asked(q, as, id, entry, 64, NULL);
    if (rc <= 0)
        return rc;
    int code = 0;
    char text[600];
    /* answered with a refusal: nothing will record it (submit said why) */
    rc = rq_submit_answer_get(q, as, entry, &code, text, sizeof text, NULL);
    return rc < 0 ? rc : rc == 0 || code == 0;
}

int vrctl_ask_controller(struct vrctl_session *v, const char *cmd)
{
    return vrctl_ask(v->q, cmd, v->id);
}

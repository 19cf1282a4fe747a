/*
 * vrctl_ask.c - `vrctl cancel`, `retry` and `purge` logged in as a
 * submitter (vrsub-NAME) or as the operator's user `vrctl` (issue 41):
 * neither Redis user may write job or chunk state, so vrctl asks in its
 * own stream (vr:submit:NAME, vr:submit:@ops) and a controller does it:
 * for a submitter run with `--submitter NAME:...`, only NAME's own jobs;
 * for the operator, any job (queue/rq_submit.h). vrctl waits for the
 * answer and prints it.
 */
#include "vrctl.h"

#include "rq_submit.h"
#include "text.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VRCTL_ASK_WAIT_MS 30000 /* a controller takes these entries once a second */

int vrctl_ask(struct rq *q, const char *cmd, const char *arg)
{
    const char *as = vrctl_asker();
    const char *shown = !strcmp(cmd, "purge-before") ? "purge" : cmd;
    char entry[64], text[600];
    vr_err e = { 0 };
    if (rq_submit_cmd(q, as, cmd, arg, entry, sizeof entry, &e) < 0) {
        fprintf(stderr, "vrctl %s: %s\n", shown, e.msg);
        return 1;
    }
    for (int t = 0; t < VRCTL_ASK_WAIT_MS; t += 100) {
        int code = 1, rc = rq_submit_answer_get(q, as, entry, &code, text, sizeof text, &e);
        if (rc < 0) {
            fprintf(stderr, "vrctl %s: %s\n", shown, e.msg);
            return 1;
        }
        if (rc == 1) {
            text_strip_controls(text); /* written by whoever holds the controller's user */
            if (code == 0)
                printf("%s\n", text);
            else
                fprintf(stderr, "vrctl %s: %s\n", shown, text);
            return code;
        }
        usleep(100000);
    }
    if (strcmp(as, RQ_OPERATOR))
        fprintf(stderr, "vrctl %s: no controller answered within %d s: is one running with "
                "--submitter %s:MAX?\n", shown, VRCTL_ASK_WAIT_MS / 1000, as);
    else
        fprintf(stderr, "vrctl %s: no controller answered within %d s: is one running? "
                "(logged in as %s, vrctl asks a controller to do it)\n", shown,
                VRCTL_ASK_WAIT_MS / 1000, RQ_OPERATOR_USER);
    return 1;
}

int vrctl_ask_controller(struct vrctl_session *v, const char *cmd)
{
    return vrctl_ask(v->q, cmd, v->id);
}

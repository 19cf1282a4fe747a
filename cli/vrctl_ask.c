/*
 * vrctl_ask.c - `vrctl cancel` and `vrctl retry` logged in as a submitter
 * (vrsub-NAME, issue 41): its Redis user may write nothing but its own
 * stream vr:submit:NAME, so vrctl asks there and a controller run with
 * `--submitter NAME:...` does it, only for NAME's own jobs, and answers
 * (queue/rq_submit.h). vrctl waits for the answer and prints it.
 */
#include "vrctl.h"

#include "rq_submit.h"
#include "text.h"

#include <stdio.h>
#include <unistd.h>

#define VRCTL_ASK_WAIT_MS 30000 /* a controller takes its submitters' entries once a second */

int vrctl_ask_controller(struct vrctl_session *v, const char *cmd)
{
    const char *as = vrctl_submitter();
    char entry[64], text[600];
    vr_err e = { 0 };
    if (rq_submit_cmd(v->q, as, cmd, v->id, entry, sizeof entry, &e) < 0) {
        fprintf(stderr, "vrctl %s: %s\n", cmd, e.msg);
        return 1;
    }
    for (int t = 0; t < VRCTL_ASK_WAIT_MS; t += 100) {
        int code = 1, rc = rq_submit_answer_get(v->q, as, entry, &code, text, sizeof text, &e);
        if (rc < 0) {
            fprintf(stderr, "vrctl %s: %s\n", cmd, e.msg);
            return 1;
        }
        if (rc == 1) {
            text_strip_controls(text); /* written by whoever holds the controller's user */
            if (code == 0)
                printf("%s\n", text);
            else
                fprintf(stderr, "vrctl %s: %s\n", cmd, text);
            return code;
        }
        usleep(100000);
    }
    fprintf(stderr, "vrctl %s: no controller answered within %d s: is one running with "
            "--submitter %s:MAX?\n", cmd, VRCTL_ASK_WAIT_MS / 1000, as);
    return 1;
}

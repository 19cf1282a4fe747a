/*
 * t-dist-sec-operator.c - the shared operator's user `vrctl` narrowed
 * (issue 41, finding 3), against a real redis-server under
 * deploy/redis-users.acl: its line writes no chunk record, chunk stream,
 * job counter or cancel list, and deletes nothing, so `vrctl cancel`,
 * `retry` and `purge` logged in as it ask a controller through its own
 * stream vr:submit:@ops, which does them for any job and answers; with no
 * controller running, vrctl says so after 30 s.
 */
#include "rq.h"
#include "util-acl.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct tdist D;
static struct tacl A;
static struct rq *Q; /* admin */

static void teardown(void)
{
    tacl_down(&D, &Q);
}

TestSuite(dist_sec_operator, .fini = teardown, .timeout = 200);

#define REFUSED(...) TACL_VRCTL_REFUSED(&A, __VA_ARGS__)

/* vrctl CMD ARG as the vrctl user: its exit status. */
static int op(const char *cmd, const char *arg)
{
    char out[400];
    const char *args[] = { cmd, arg, NULL };
    return tacl_vrctl(A.uv, A.pv, out, sizeof out, args);
}

static void state_is(const char *id, const char *want)
{
    char st[32];
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert_str_eq(st, want, "job %s", id);
}

Test(dist_sec_operator, the_vrctl_user_writes_no_chunk_and_asks_a_controller)
{
    Q = tacl_up(&D, &A);
    cr_assert_gt(tacl_controller(&D, &A, NULL), 0); /* no worker: the job stays running */
    char in[400], out[400], id[128], ck[200], jk[200], st[32];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    const char *sub[] = { "--chunk-seconds", "1", NULL };
    cr_assert_eq(tacl_submit(&A, in, out, sub, id, sizeof id), 0, "%s", id);
    tacl_wait_state(Q, &D, id, "running", 30000, st, sizeof st);

    /* no chunk record, chunk stream, counter, cancel list or delete */
    snprintf(ck, sizeof ck, "vr:chunk:%s:0", id);
    snprintf(jk, sizeof jk, "vr:job:%s", id);
    REFUSED("HSET", ck, "state", "done");
    REFUSED("XADD", "vr:chunks", "*", "job", id, "idx", "0");
    REFUSED("HINCRBY", jk, "chunks_done", "1");
    REFUSED("SADD", "vr:cancels", id);
    REFUSED("UNLINK", jk);
    REFUSED("XADD", "vr:submit:alice", "*", "cmd", "cancel", "id", id); /* nor as a submitter */

    /* cancel, retry and purge through the controller, for any job */
    cr_assert_eq(op("cancel", id), 0);
    state_is(id, "cancelled");
    cr_assert_eq(op("cancel", id), 1); /* already cancelled */
    cr_assert_eq(op("retry", id), 0);
    tacl_job_field(Q, id, "state", st, sizeof st);
    cr_assert(!strcmp(st, "running") || !strcmp(st, "queued"), "%s", st);
    cr_assert_eq(op("purge", id), 1); /* live: refused */
    cr_assert_eq(op("cancel", id), 0);
    int rc = op("purge", id);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    state_is(id, "");
    cr_assert_eq(op("cancel", id), 2); /* gone */
    const char *older[] = { "purge", "--older-than", "0", NULL };
    char buf[400];
    cr_assert_eq(tacl_vrctl(A.uv, A.pv, buf, sizeof buf, older), 0);
    cr_assert(strstr(buf, "0 jobs purged"), "%s", buf);

    /* no controller: vrctl says none answered (after 1 s, not its 30) */
    kill(D.ctl, SIGTERM);
    waitpid(D.ctl, NULL, 0);
    D.ctl = 0;
    char log[400];
    snprintf(log, sizeof log, "%s/cancel.err", D.r.dir);
    const char *bin = getenv("VR_BIN_DIR");
    cr_assert_eq(tsh("VR_TEST_ASK_WAIT_MS=1000 '%s/vrctl' cancel 20261129-000000-00000000 "
                     "--redis '%s' --redis-password-file '%s' 2>'%s'; test $? = 1",
                     bin ? bin : "bin", A.uv, A.pv, log), 0);
    cr_assert_eq(tsh("grep -q 'no controller answered within 1 s' '%s'", log), 0);
}

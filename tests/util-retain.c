/*
 * util-retain.c - the retention tests' fleet and first job (util-retain.h).
 */
#include "util-retain.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void tretain_start(struct tdist *d, struct rq **q, struct tretain *t)
{
    cr_assert_eq(tdist_start(d, 0, 30, 0, 1), 0);
    const char *args[] = { "--keep-jobs", "4s", NULL };
    memcpy(d->ctl_args, args, sizeof args);
    setenv("VR_TEST_RETAIN_EACH_AUDIT", "1", 1); /* a pass a second, not every fifth */
    pid_t ctl = tdist_controller(d);
    unsetenv("VR_TEST_RETAIN_EACH_AUDIT");
    cr_assert_gt(ctl, 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(d->r.url, 2000, q, &e), 0, "%s", e.msg);
    snprintf(t->in, sizeof t->in, "%s/in.mp4", d->r.dir);
    snprintf(t->out, sizeof t->out, "%s/out.mkv", d->r.dir);
    cr_assert_eq(tclip_make(t->in, 1, 160, 10, 0), 0);
    const char *copy[] = { "--chunking", "copy", NULL }; /* files under storage/jobs/<id> */
    cr_assert_eq(tdist_submit(d, t->in, t->out, copy, t->done_id, sizeof t->done_id), 0);
    cr_assert_eq(tdist_watch(d, t->done_id, 60000), 0);
    snprintf(t->dir, sizeof t->dir, "%s/jobs/%s", d->storage, t->done_id);
    cr_assert_eq(access(t->dir, F_OK), 0, "%s missing after the job", t->dir);
}

void tretain_no_worker(struct tdist *d)
{
    kill(d->w[0], SIGKILL);
    tproc_wait(d->w[0], 10000);
    d->w[0] = 0;
}

/*
 * t-cli-liveness.c - vrctl says when nothing would move a job (issue 28,
 * item 7): with no controller alive, `submit`, `status` and `watch` say
 * "no controller alive" (never seen, then "last seen N s ago" once one was
 * killed); with no worker, "no worker has been seen ..." (yet, then for N s
 * once the only one was killed); neither once both run. Real redis-server,
 * controller and CPU worker.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

TestSuite(cli_liveness, .fini = teardown, .timeout = 240);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* `vrctl ARGS --redis URL` (stdout and stderr) into out; its exit status. */
static int vrctl_all(char *out, size_t n, const char *args)
{
    return tsh_out(out, n, "timeout 60 '%s/vrctl' %s --redis '%s' 2>&1", getenv("VR_BIN_DIR"),
                   args, D.r.url);
}

/* `vrctl status ID` until its output holds `want` (and, when not NULL,
 * lacks `unwanted`) or `seconds` pass; the last output in out. */
static int status_until(const char *id, const char *want, const char *unwanted, double seconds,
                        char *out, size_t n)
{
    char args[128];
    snprintf(args, sizeof args, "status %s", id);
    for (double end = now_s() + seconds;; usleep(300000)) {
        vrctl_all(out, n, args);
        if (strstr(out, want) && !(unwanted && strstr(out, unwanted)))
            return 1;
        if (now_s() > end)
            return 0;
    }
}

Test(cli_liveness, status_watch_and_submit_say_who_is_missing)
{
    D.hb_ms = 300;
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char in[400], out[400], args[1024], buf[8192], id[64];
    snprintf(in, sizeof in, "%s/in.mp4", D.storage);
    snprintf(out, sizeof out, "%s/out.mp4", D.storage);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);

    /* nobody: submit says both, and the job still goes in */
    snprintf(args, sizeof args, "submit '%s' -o '%s' --profile fast --chunk-seconds 1", in, out);
    cr_assert_eq(vrctl_all(buf, sizeof buf, args), 0, "%s", buf);
    cr_assert(strstr(buf, "vrctl submit: note: no controller alive (none has been seen)"), "%s",
              buf);
    cr_assert(strstr(buf, "vrctl submit: note: no worker has been seen yet"), "%s", buf);
    snprintf(id, sizeof id, "%.*s", (int)strcspn(buf, "\n"), buf);
    cr_assert_gt(strlen(id), 10, "%s", buf);

    /* status and watch (no terminal: a warning line) say it too */
    cr_assert(status_until(id, "note: no controller alive", NULL, 10, buf, sizeof buf), "%s", buf);
    cr_assert(strstr(buf, "note: no worker has been seen yet"), "%s", buf);
    snprintf(args, sizeof args, "status %s --json", id);
    vrctl_all(buf, sizeof buf, args);
    cr_assert(strstr(buf, "\"hints\""), "%s", buf);
    /* the watch runs until both lines are out (60 s at most), not a fixed 4 s */
    char wlog[400];
    snprintf(wlog, sizeof wlog, "%s/watch.log", D.storage);
    tsh_out(buf, sizeof buf,
            "timeout 60 '%s/vrctl' watch %s --redis '%s' >'%s' 2>&1 & p=$!; "
            "for i in $(seq 600); do grep -q 'no controller alive' '%s' && "
            "grep -q 'no worker has been seen yet' '%s' && break; sleep 0.1; done; "
            "kill $p 2>/dev/null; wait $p; cat '%s'",
            getenv("VR_BIN_DIR"), id, D.r.url, wlog, wlog, wlog, wlog);
    cr_assert(strstr(buf, "no controller alive"), "%s", buf);
    cr_assert(strstr(buf, "no worker has been seen yet"), "%s", buf);

    /* a controller: only the worker is missing; its heartbeat key lapses
     * 3 s after it is killed, not 10 (beats 0.6 s apart) */
    setenv("VR_TEST_CTL_HB_TTL_MS", "3000", 1);
    pid_t ctl = tdist_controller(&D);
    unsetenv("VR_TEST_CTL_HB_TTL_MS");
    cr_assert_gt(ctl, 0);
    cr_assert(status_until(id, "no worker has been seen yet", "no controller alive", 60, buf,
                           sizeof buf), "%s", buf);

    /* a worker: nothing missing, and the job ends */
    pid_t w = tdist_worker(&D);
    cr_assert_gt(w, 0);
    cr_assert_eq(tdist_watch(&D, id, 180000), 0);

    /* the worker killed: "no worker has been seen for N s" on a live job */
    kill(w, SIGKILL);
    tproc_wait(w, 10000);
    D.w[0] = 0; /* reaped here */
    char id2[64];
    snprintf(out, sizeof out, "%s/out2.mp4", D.storage);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id2, sizeof id2), 0);
    cr_assert(status_until(id2, "note: no worker has been seen for ", "no controller alive", 60, buf,
                           sizeof buf), "%s", buf);
    cr_assert(strstr(buf, " s: chunks wait until one runs"), "%s", buf);

    /* the controller killed: no controller alive, last seen N s ago (its
     * heartbeat key lapses after VR_TEST_CTL_HB_TTL_MS) */
    kill(D.ctl, SIGKILL);
    tproc_wait(D.ctl, 10000);
    D.ctl = 0;
    cr_assert(status_until(id2, "note: no controller alive (the last one was seen ", NULL, 60, buf,
                           sizeof buf), "%s", buf);
}

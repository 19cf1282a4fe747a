/*
 * t-common-supervise.c - the one process supervisor (common/supervise.h) with
 * real processes: deaths are reaped and described, a child that ignores
 * SIGTERM is killed after the grace period, output goes to its log, a
 * missing program is a child that exits 127; and `vr-worker serve --gpu
 * all` reports each per-GPU worker that fails (two "GPUs" no host has,
 * through CUDA_VISIBLE_DEVICES).
 */
#include "clock.h"
#include "supervise.h"
#include "util-video.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int spawn_sh(struct sup *s, const char *name, const char *script, const char *log)
{
    char *argv[] = { "sh", "-c", (char *)script, NULL };
    vr_err e = { 0 };
    int i = sup_spawn(s, name, "/bin/sh", argv, log, 0, &e);
    cr_assert_geq(i, 0, "%s", e.msg);
    return i;
}

static int reap_within(struct sup *s, int ms)
{
    double end = clock_mono_ms() + ms;
    int i;
    while ((i = sup_reap(s, 0)) < 0 && clock_mono_ms() < end)
        usleep(10000);
    return i;
}

Test(common_supervise, deaths_are_reaped_and_described)
{
    struct sup s = { 0 };
    int ok = spawn_sh(&s, "ok", "exit 0", NULL);
    int three = spawn_sh(&s, "three", "exit 3", NULL);
    int killed = spawn_sh(&s, "killed", "kill -9 $$", NULL);
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        int i = reap_within(&s, 5000);
        cr_assert_geq(i, 0, "a child was not reaped");
        seen |= 1 << i;
    }
    cr_assert_eq(seen, 7);
    cr_assert_eq(sup_running(&s), 0);
    char how[96];
    sup_describe(s.child[ok].status, how, sizeof how);
    cr_assert_str_eq(how, "exited with status 0");
    sup_describe(s.child[three].status, how, sizeof how);
    cr_assert_str_eq(how, "exited with status 3");
    sup_describe(s.child[killed].status, how, sizeof how);
    cr_assert(strstr(how, "killed by signal 9"), "%s", how);
    sup_release(&s);
}

Test(common_supervise, stop_waits_for_sigterm_then_kills)
{
    struct sup s = { 0 };
    spawn_sh(&s, "polite", "trap 'exit 0' TERM; while :; do sleep 0.05; done", NULL);
    spawn_sh(&s, "stubborn", "trap '' TERM; while :; do sleep 0.05; done", NULL);
    usleep(200000); /* let the shells install their traps */
    pid_t stubborn = s.child[1].pid;
    double t0 = clock_mono_ms();
    sup_stop(&s, 600);
    double took = clock_mono_ms() - t0;
    cr_assert_eq(sup_running(&s), 0);
    cr_assert(WIFEXITED(s.child[0].status) && WEXITSTATUS(s.child[0].status) == 0,
              "the polite child did not exit on SIGTERM");
    cr_assert(WIFSIGNALED(s.child[1].status) && WTERMSIG(s.child[1].status) == SIGKILL,
              "the stubborn child was not killed");
    cr_assert(took >= 500 && took < 5000, "stop took %.0f ms for a 600 ms grace", took);
    cr_assert_neq(kill(stubborn, 0), 0, "the stubborn child still runs");
    sup_release(&s);
}

/* A child of its own process group is killed with what it started: `vrctl
 * run`'s `serve --gpu all` parent's workers would drain on, orphaned. */
Test(common_supervise, kill_takes_the_child_s_group_along)
{
    char dir[256], pidf[300], cmd[400], got[32] = "";
    tv_tmpdir(dir, sizeof dir);
    snprintf(pidf, sizeof pidf, "%s/grandchild.pid", dir);
    snprintf(cmd, sizeof cmd, "sleep 60 & echo $! > '%s'; wait", pidf);
    char *argv[] = { "sh", "-c", cmd, NULL };
    struct sup s = { 0 };
    vr_err e = { 0 };
    int i = sup_spawn(&s, "parent", "/bin/sh", argv, NULL, SUP_OWN_GROUP, &e);
    cr_assert_geq(i, 0, "%s", e.msg);
    for (int t = 0; t < 500 && !got[0]; t++) {
        FILE *f = fopen(pidf, "r");
        if (f && !fgets(got, sizeof got, f))
            got[0] = '\0';
        if (f)
            fclose(f);
        if (!got[0])
            usleep(10000);
    }
    pid_t grandchild = (pid_t)atoi(got);
    cr_assert_gt(grandchild, 0, "the child did not start its own");
    sup_kill(&s, i);
    cr_assert_eq(sup_wait(&s, i, 10000), 1, "the child outlived its kill");
    int gone = 0;
    for (int t = 0; t < 500 && !gone; t++) { /* reparented: its reaper is not us */
        char st[64] = "";
        snprintf(cmd, sizeof cmd, "/proc/%d/stat", (int)grandchild);
        FILE *f = fopen(cmd, "r");
        gone = !f || (fgets(st, sizeof st, f) && strstr(st, ") Z"));
        if (f)
            fclose(f);
        if (!gone)
            usleep(10000);
    }
    if (!gone)
        kill(grandchild, SIGKILL);
    sup_release(&s);
    tv_rmdir(dir);
    cr_assert(gone, "what the child started outlived the kill");
}

Test(common_supervise, output_goes_to_the_log_and_a_missing_program_exits_127)
{
    char dir[256], log[300], got[64] = "";
    tv_tmpdir(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/child.log", dir);
    struct sup s = { 0 };
    spawn_sh(&s, "talker", "echo hello; echo oops >&2", log);
    cr_assert_geq(reap_within(&s, 5000), 0);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    size_t k = fread(got, 1, sizeof got - 1, f);
    got[k] = '\0';
    fclose(f);
    cr_assert_str_eq(got, "hello\noops\n");
    char *argv[] = { "nothing-here", NULL };
    vr_err e = { 0 };
    int i = sup_spawn(&s, "missing", "/nonexistent/nothing-here", argv, NULL, 0, &e);
    cr_assert_geq(i, 0);
    cr_assert_eq(reap_within(&s, 5000), i);
    cr_assert_eq(WEXITSTATUS(s.child[i].status), 127);
    sup_release(&s);
    tv_rmdir(dir);
}

/* `serve --gpu all` on GPUs no host has: every GPU's worker process says
 * why it stopped, as a process a slot and as threads (the GPU default). */
Test(common_supervise, serve_gpu_all_reports_every_failed_gpu_worker)
{
    char dir[256], out[4096];
    tv_tmpdir(dir, sizeof dir);
    setenv("CUDA_VISIBLE_DEVICES", "97,98", 1); /* two GPUs no host has */
    int rc = tsh_out(out, sizeof out, "'%s/vr-worker' serve --gpu all --slots 2 --slot-mode processes "
                     "--redis unix:///nonexistent.sock --storage '%s' 2>&1", getenv("VR_BIN_DIR"), dir);
    cr_assert_neq(rc, 0, "serve --gpu all succeeded without a GPU: %s", out);
    cr_assert(strstr(out, "GPU 0 worker 0 exited with status 1"), "%s", out);
    cr_assert(strstr(out, "GPU 1 worker 1 exited with status 1"), "%s", out);
    rc = tsh_out(out, sizeof out, "'%s/vr-worker' serve --gpu all --slots 2 "
                 "--redis unix:///nonexistent.sock --storage '%s' 2>&1", getenv("VR_BIN_DIR"), dir);
    unsetenv("CUDA_VISIBLE_DEVICES");
    cr_assert_neq(rc, 0, "serve --gpu all (threads) succeeded without a GPU: %s", out);
    cr_assert(strstr(out, "GPU 0 workers exited with status 1"), "%s", out);
    cr_assert(strstr(out, "GPU 1 workers exited with status 1"), "%s", out);
    tv_rmdir(dir);
}

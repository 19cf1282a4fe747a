/*
 * supervise.c - spawn, watch and stop child processes (supervise.h).
 */
#define _GNU_SOURCE
#include "supervise.h"

#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks and execs child c (its name and log already set). */
static int sup_start(struct sup_child *c, const char *prog, char *const *argv, unsigned flags,
                     vr_err *err)
{
    const char *log = c->log[0] ? c->log : NULL;
    const char *name = c->name;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return vr_err_set(err, VR_EIO, "cannot start %s: %s", name, strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, (flags & SUP_DIE_WITH_PARENT) ? SIGKILL : SIGTERM);
        if (getppid() != parent) /* the parent died before prctl */
            _exit(127);
        if (flags & SUP_OWN_GROUP)
            setpgid(0, 0);
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
        }
        if (flags & SUP_SEARCH_PATH)
            execvp(prog, argv);
        else
            execv(prog, argv);
        fprintf(stderr, "cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    /* the group made here too, so a kill of it right after the fork finds it */
    if (flags & SUP_OWN_GROUP)
        setpgid(pid, pid);
    c->pid = pid;
    c->status = 0;
    c->group = (flags & SUP_OWN_GROUP) != 0;
    return 0;
}

int sup_spawn(struct sup *s, const char *name, const char *prog, char *const *argv,
              const char *log, unsigned flags, vr_err *err)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        void *p = realloc(s->child, (size_t)cap * sizeof *s->child);
        if (!p)
            return vr_err_set(err, VR_ENOMEM, "out of memory");
        s->child = p;
        s->cap = cap;
    }
    struct sup_child *c = &s->child[s->n];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->log, sizeof c->log, "%s", log ? log : "");
    int rc = sup_start(c, prog, argv, flags, err);
    return rc < 0 ? rc : s->n++;
}

int sup_respawn(struct sup *s, int i, const char *prog, char *const *argv, unsigned flags,
                vr_err *err)
{
    if (i < 0 || i >= s->n || s->child[i].pid > 0)
        return vr_err_set(err, VR_EINVAL, "child %d is not a reaped one", i);
    return sup_start(&s->child[i], prog, argv, flags, err);
}

int sup_reap(struct sup *s, int block)
{
    if (!block) { /* only our own: another supervisor may share the process */
        for (int i = 0; i < s->n; i++) {
            struct sup_child *c = &s->child[i];
            if (c->pid > 0 && waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
                c->pid = 0;
                return i;
            }
        }
        return -1;
    }
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, 0);
        if (p <= 0)
            return -1;
        for (int i = 0; i < s->n; i++)
            if (s->child[i].pid == p) {
                s->child[i].pid = 0;
                s->child[i].status = st;
                return i;
            }
        /* not one of ours: keep waiting */
    }
}

int sup_running(const struct sup *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++)
        k += s->child[i].pid > 0;
    return k;
}

void sup_describe(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
}

void sup_signal(struct sup *s, int sig)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (s->child[i].pid > 0)
            kill(s->child[i].pid, sig);
}

static volatile sig_atomic_t sup_hurried;

void sup_hurry(void)
{
    sup_hurried = 1;
}

void sup_stop(struct sup *s, int grace_ms)
{
    sup_signal(s, SIGTERM);
    double deadline = clock_mono_ms() + grace_ms;
    for (int i = s->n - 1; i >= 0; i--) {
        struct sup_child *c = &s->child[i];
        while (c->pid > 0 && clock_mono_ms() < deadline && !sup_hurried) {
            if (waitpid(c->pid, &c->status, WNOHANG) == c->pid)
                c->pid = 0;
            else
                usleep(5000);
        }
        if (c->pid > 0) {
            sup_kill(s, i);
            waitpid(c->pid, &c->status, 0);
            c->pid = 0;
        }
    }
}

void sup_kill(struct sup *s, int i)
{
    struct sup_child *c = &s->child[i];
    if (c->pid <= 0)
        return;
    if (c->group)
        kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL); /* its group may be gone (it left it): the child itself */
}

int sup_wait(struct sup *s, int i, int ms)
{
    struct sup_child *c = &s->child[i];
    double deadline = clock_mono_ms() + ms;
    while (c->pid > 0) {
        if (waitpid(c->pid, &c->status, WNOHANG) == c->pid)
            c->pid = 0;
        else if (clock_mono_ms() >= deadline || sup_hurried)
            return 0;
        else
            usleep(5000);
    }
    return 1;
}

void sup_release(struct sup *s)
{
    free(s->child);
    memset(s, 0, sizeof *s);
}

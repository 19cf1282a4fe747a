/*
 * t-controller-start-notes.c - a job's start writes its notes in one
 * call: a real vr-controller starts two jobs (a fixed chunk length with a
 * webhook, and an elastic one with the auto length) while `redis-cli
 * MONITOR` records every command Redis runs; each job's record then saw
 * one write outside the scripts (the notes' HSET) from the claim until it
 * runs, and that write holds every note of the start.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;
static pid_t Mon;

static void teardown(void)
{
    if (Mon > 0) {
        kill(Mon, SIGKILL);
        waitpid(Mon, NULL, 0);
        Mon = 0;
    }
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(controller_start_notes, .fini = teardown, .timeout = 180);

/* `redis-cli MONITOR` writing into path, once it has answered OK. */
static void monitor_start(const char *path)
{
    Mon = fork();
    cr_assert_geq(Mon, 0);
    if (Mon == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(127);
        execlp("redis-cli", "redis-cli", "-s", D.r.sock, "MONITOR", (char *)NULL);
        _exit(127);
    }
    char head[16] = "";
    for (int t = 0; t < 10000 && strncmp(head, "OK", 2); t += 20) {
        tslurp(path, head, sizeof head);
        tmsleep(20);
    }
    cr_assert_eq(strncmp(head, "OK", 2), 0, "redis-cli MONITOR never answered");
}

/* Waits until job id's state is `want`. */
static void wait_state(const char *id, const char *want)
{
    char jk[128], v[32] = "";
    rq_key_job(jk, sizeof jk, id);
    for (int t = 0; t < 60000 && strcmp(v, want); t += 20) {
        v[0] = '\0';
        rq_hget(Q, jk, "state", v, sizeof v, NULL);
        tmsleep(20);
    }
    if (strcmp(v, want))
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_str_eq(v, want, "job %s", id);
}

/* The writes to job id's record in the MONITOR file `path` that no script
 * made (a script's own commands are shown as from "lua"): how many, and
 * each one's command and first field into seen. */
static int record_writes(const char *path, const char *id, char *seen, size_t n)
{
    static const char *const writes[] = { "HSET", "HMSET", "HSETNX", "HDEL", "HINCRBY",
                                          "HINCRBYFLOAT", "DEL", "UNLINK", "PEXPIRE", "EXPIRE",
                                          NULL };
    char want[160], line[8192];
    snprintf(want, sizeof want, "\"vr:job:%s\"", id);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    int count = 0;
    seen[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *cmd = strstr(line, "] \"");
        if (!cmd || strstr(line, " lua]"))
            continue;
        cmd += 3;
        char *key = strchr(cmd, '"');
        if (!key || strncmp(key + 2, want, strlen(want)))
            continue;
        *key = '\0';
        for (int i = 0; writes[i]; i++)
            if (!strcasecmp(cmd, writes[i])) {
                count++;
                size_t l = strlen(seen);
                snprintf(seen + l, n - l, "%s %.60s; ", cmd, key + 2 + strlen(want));
            }
    }
    fclose(f);
    return count;
}

static void field_is(const char *id, const char *field, const char *want)
{
    char jk[128], v[1100] = "";
    rq_key_job(jk, sizeof jk, id);
    cr_assert_eq(rq_hget(Q, jk, field, v, sizeof v, NULL), 1, "job %s: no %s", id, field);
    if (want)
        cr_assert_str_eq(v, want, "job %s: %s", id, field);
}

Test(controller_start_notes, each_job_start_writes_its_record_once)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    char in[400], out[2][400], id[2][64], mon[400], seen[2048];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(mon, sizeof mon, "%s/monitor.txt", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 1), 0); /* an MP4's index: planned as ranges */
    for (int i = 0; i < 2; i++)
        snprintf(out[i], sizeof out[i], "%s/out%d.mkv", D.r.dir, i);
    const char *fixed[] = { "--notify", "http://127.0.0.1:9/hook", NULL };
    const char *elastic[] = { "--chunk-seconds", "auto", NULL };
    cr_assert_eq(tdist_submit(&D, in, out[0], fixed, id[0], sizeof id[0]), 0);
    cr_assert_eq(tdist_submit(&D, in, out[1], elastic, id[1], sizeof id[1]), 0);
    monitor_start(mon); /* after the submits: what follows is the controller's */
    cr_assert_gt(tdist_controller(&D), 0);
    wait_state(id[0], "running"); /* no worker: every chunk waits */
    wait_state(id[1], "running");
    tmsleep(300);
    for (int i = 0; i < 2; i++) {
        int n = record_writes(mon, id[i], seen, sizeof seen);
        cr_assert_eq(n, 1, "job %s (%s): %d writes to its record outside the scripts, not 1: "
                     "%s", id[i], i ? "elastic" : "fixed", n, seen);
        field_is(id[i], "started_ms", NULL);
        field_is(id[i], "layout", NULL);
        field_is(id[i], "chunking", "range");
        field_is(id[i], "chunks_planned", NULL);
    }
    field_is(id[0], "notify", "http://127.0.0.1:9/hook");
    field_is(id[1], "chunk_ms", NULL);
    field_is(id[1], "chunk_wave", "1");
    field_is(id[1], "pieces", NULL);
}

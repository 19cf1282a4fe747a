/*
 * t-dist-procs.c - `vr-worker serve --slots N` (what vr-worker@.service
 * uses to keep a GPU busy with several workers): one parent starts N
 * workers, each registers with Redis under its own name, and a SIGTERM to
 * the parent drains them all, exit 0; a worker killed with SIGKILL
 * mid-chunk is replaced and its chunk requeued at once, not after the lease.
 */
#include "rq.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

/* The live workers (names into `names`), or -1. */
static int live_workers(char *names, size_t n)
{
    int warming;
    return tdist_workers(&D, names, n, &warming);
}

/* Waits until `want` workers run: listed, and past the parent's "warming"
 * (their own heartbeat). */
static int running_workers(int want, char *names, size_t n)
{
    int k = -1, warming = 0;
    for (int i = 0; i < 600 && (k != want || warming); i++) {
        usleep(100000);
        k = tdist_workers(&D, names, n, &warming);
    }
    return warming ? -1 : k;
}

Test(dist_procs, one_parent_n_workers_one_sigterm, .fini = teardown, .timeout = 120)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    const char *argv[] = { "vr-worker", "serve", "--cpu", "--slots", "2", "--redis", D.r.url,
                           "--storage", D.storage, "--input-root", D.r.dir, "--heartbeat-ms",
                           "300", NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
    char names[1024] = "";
    int k = running_workers(2, names, sizeof names);
    if (k != 2)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_eq(k, 2, "live workers: %d (%s)", k, names);

    kill(p, SIGTERM);
    int rc = tproc_wait(p, 30000);
    D.w[0] = 0;
    if (rc != 0)
        tsh("tail -20 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "serve --slots 2 exit %d after SIGTERM", rc);
    cr_assert_eq(tsh("grep -c 'drained after' '%s' | grep -qx 2", D.log), 0,
                 "both workers did not drain");
}

/* HGET key field into v (size n); "" when absent. */
static void hget(struct rq *q, const char *key, const char *field, char *v, size_t n)
{
    v[0] = '\0';
    rq_hget(q, key, field, v, n, NULL);
}

Test(dist_procs, a_killed_slot_is_replaced_and_its_chunk_requeued_at_once, .fini = teardown,
     .timeout = 150)
{
    /* A 60 s lease: the chunk must be back long before it lapses. Chunks
     * made slow by the workers themselves (300 ms a frame, 20 frames: at
     * least 6 s each), so the kill lands mid-chunk whatever the machine. */
    cr_assert_eq(tdist_start(&D, 0, 60, 1, 0), 0);
    setenv("VR_TEST_FRAME_DELAY_MS", "300", 1);
    const char *argv[] = { "vr-worker", "serve", "--cpu", "--slots", "2", "--redis", D.r.url,
                           "--storage", D.storage, "--input-root", D.r.dir, "--heartbeat-ms",
                           "300", NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
    struct rq *q = NULL;
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &q, &e), 0, "%s", e.msg);

    char in[400], out[400], id[64], ck[128], dead[160] = "", v[256], names[1024];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 4, 160, 10, 0), 0);
    const char *two[] = { "--chunk-seconds", "2", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, two, id, sizeof id), 0);
    rq_key_chunk(ck, sizeof ck, id, 0);
    for (int t = 0; t < 600 && !dead[0]; t++) {
        hget(q, ck, "state", v, sizeof v);
        if (!strcmp(v, "running"))
            hget(q, ck, "worker", dead, sizeof dead);
        else
            tmsleep(100);
    }
    cr_assert(dead[0], "chunk 0 never ran");

    /* The parent logged which pid runs as that worker. */
    char pid_s[32] = "";
    tsh_out(pid_s, sizeof pid_s, "grep -o 'pid [0-9]*, worker %s$' '%s' | cut -d' ' -f2 | "
            "tr -d ,", dead, D.log);
    pid_t victim = (pid_t)atoi(pid_s);
    cr_assert_gt(victim, 0, "no pid logged for worker %s", dead);
    cr_assert_eq(kill(victim, SIGKILL), 0);

    /* The chunk is taken again, by a live worker, within seconds (the
     * lease would take 60). */
    char owner[160] = "";
    int t = 0;
    for (; t < 200; t++) {
        hget(q, ck, "attempts", v, sizeof v);
        hget(q, ck, "worker", owner, sizeof owner);
        if (atoi(v) >= 2 && strcmp(owner, dead))
            break;
        tmsleep(100);
    }
    if (t == 200)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_lt(t, 200, "chunk 0 not taken again 20 s after its worker died");
    hget(q, ck, "error", v, sizeof v);
    cr_assert(strstr(v, "killed by signal 9"), "chunk 0's error: '%s'", v);

    /* The node is back to two workers, the dead one gone from the list. */
    int k = -1;
    for (int i = 0; i < 300; i++) {
        k = live_workers(names, sizeof names);
        if (k == 2 && !strstr(names, dead))
            break;
        tmsleep(100);
    }
    cr_assert(k == 2 && !strstr(names, dead), "live workers: %d (%s), dead one %s", k, names,
              dead);

    int rc = tdist_watch(&D, id, 90000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0);
    char evs[8192];
    const char *eargs[] = { "events", id, NULL };
    tdist_vrctl(&D, evs, sizeof evs, eargs);
    cr_assert(!strstr(evs, "stopped renewing its lease"), "the lease reclaimed it: %s", evs);
    cr_assert(strstr(evs, "killed by signal 9 (Killed); requeued"), "%s", evs);

    /* The replacement dies young too: the next one waits twice as long. */
    tsh_out(pid_s, sizeof pid_s, "grep -o 'pid [0-9]*, worker ' '%s' | tail -1 | cut -d' ' -f2 | "
            "tr -d ,", D.log);
    victim = (pid_t)atoi(pid_s);
    cr_assert_gt(victim, 0);
    cr_assert_eq(kill(victim, SIGKILL), 0);
    int seen = 0;
    for (int i = 0; i < 100 && !seen; i++, tmsleep(100))
        seen = tsh("grep -q 'goes back to the queue; a new worker in 2 s' '%s'", D.log) == 0;
    if (!seen)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert(seen, "no doubled restart delay for a replacement that died young");
    rq_free(&q);
}

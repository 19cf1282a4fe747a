/*
 * t-dist-procs.c - `vr-worker serve --slots N` (what vr-worker@.service
 * uses to keep a GPU busy with several workers): one parent starts N
 * workers, each registers with Redis under its own name, and a SIGTERM to
 * the parent drains them all, exit 0.
 */
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

/* The live workers `vrctl workers --json` lists, or -1. */
static int live_workers(char *names, size_t n)
{
    char out[8192];
    const char *args[] = { "workers", "--json", NULL };
    if (tdist_vrctl(&D, out, sizeof out, args) != 0)
        return -1;
    json_t *arr = json_loads(out, 0, NULL);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return -1;
    }
    names[0] = '\0';
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(arr, i), "name"));
        strncat(names, name ? name : "?", n - strlen(names) - 2);
        strcat(names, " ");
    }
    int k = (int)json_array_size(arr);
    json_decref(arr);
    return k;
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
    int k = -1;
    for (int i = 0; i < 600 && k != 2; i++) {
        usleep(100000);
        k = live_workers(names, sizeof names);
    }
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

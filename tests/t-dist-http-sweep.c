/*
 * t-dist-http-sweep.c - the chunk objects of a fleet without shared
 * storage (--storage URL, issue 46) swept from a real nginx:
 * - a store whose DELETE hangs (a proxy in front of nginx holds it while a
 *   file of the test exists) holds no other job: the controller deletes
 *   chunk objects on a thread of its own, and a second job starts and
 *   finishes meanwhile; the held job's objects go once the store answers;
 * - a failed job and a cancelled one leave no object under jobs/<id>/,
 *   the temporary of an attempt killed between its PUT and MOVE included.
 */
#include "util-nginx.h"
#include "util-redis.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct tnginx N;
static char CFG[400]; /* FFV1 */

static void teardown(void)
{
    tnginx_stop(&N);
    tdist_stop(&D, 0);
}

TestSuite(dist_http_sweep, .fini = teardown, .timeout = 240);

static void start_store(void)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char nd[400];
    snprintf(nd, sizeof nd, "%s/nginx", D.r.dir);
    cr_assert_eq(tnginx_start(&N, nd), 0);
    snprintf(CFG, sizeof CFG, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CFG), 0);
}

static void start_controller(const char *store)
{
    const char *argv[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                           "--storage", store, "--input-root", D.r.dir, "--output-root",
                           D.r.dir, "--lease-seconds", "5", "--storage-allow-private", NULL };
    cr_assert_gt(D.ctl = tproc_spawn("vr-controller", argv, D.log), 0);
}

/* A worker with `--storage URL` alone, straight to nginx. */
static void start_worker(void)
{
    char store[128];
    snprintf(store, sizeof store, "%svr/", N.url);
    const char *argv[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", store,
                           "--input-root", D.r.dir, "--cpu", "--heartbeat-ms", "300",
                           "--storage-allow-private", NULL };
    pid_t p = tproc_spawn("vr-worker", argv, D.log);
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
}

static void submit(const char *clip, const char *name, char *id, size_t n)
{
    char out[400];
    snprintf(out, sizeof out, "%s/%s", D.r.dir, name);
    const char *extra[] = { "-c", CFG, "--chunk-seconds", "1", NULL };
    cr_assert_eq(tdist_submit(&D, clip, out, extra, id, n), 0);
}

/* Files nginx holds under vr/jobs/<id>/. */
static int objects_of(const char *id)
{
    char cmd[700], out[32] = "";
    snprintf(cmd, sizeof cmd, "find '%s/vr/jobs/%s' -type f 2>/dev/null | wc -l", N.www, id);
    FILE *f = popen(cmd, "r");
    if (f) {
        if (!fgets(out, sizeof out, f))
            out[0] = '\0';
        pclose(f);
    }
    return atoi(out);
}

/* Waits up to ms for job id's objects to be gone; 1 when they are. */
static int swept_within(const char *id, int ms)
{
    for (int t = 0; t < ms && objects_of(id) > 0; t += 100)
        tmsleep(100);
    if (objects_of(id) > 0) {
        tsh("find '%s/vr/jobs/%s' -type f >&2", N.www, id);
        tsh("grep -i 'chunk objects' '%s' >&2", D.log);
        return 0;
    }
    return 1;
}

Test(dist_http_sweep, a_hung_delete_holds_no_other_job)
{
    start_store();
    int port = tproxy_cut_start(N.port); /* the controller's way to the store */
    cr_assert_gt(port, 0);
    char gate[400], store[128], clip[400], ida[64], idb[64];
    snprintf(gate, sizeof gate, "%s/hold-deletes", D.r.dir);
    cr_assert_eq(tsh("touch '%s'", gate), 0);
    tproxy_hold("DELETE", gate);
    snprintf(store, sizeof store, "http://127.0.0.1:%d/vr/", port);
    start_controller(store);
    start_worker();
    start_worker();
    snprintf(clip, sizeof clip, "%s/clip.mp4", D.r.dir);
    cr_assert_eq(tclip_make(clip, 3, 160, 10, 0), 0);
    submit(clip, "a.mkv", ida, sizeof ida);
    cr_assert_eq(tdist_watch(&D, ida, 120000), 0);
    /* job A's DELETE reaches the store and hangs there */
    for (int t = 0; t < 30000 && tproxy_held_count() == 0; t += 100)
        tmsleep(100);
    cr_assert_gt(tproxy_held_count(), 0, "no DELETE came for job A's objects");
    /* job B is planned, run, stitched and published while it hangs */
    submit(clip, "b.mkv", idb, sizeof idb);
    int rc = tdist_watch(&D, idb, 60000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "job B did not finish while a DELETE hung (watch %d)", rc);
    cr_assert_gt(objects_of(ida), 0, "job A's objects went though the store never answered");
    cr_assert_eq(tsh("test -f '%s'", gate), 0, "the hold ended before job B did");
    /* the store answers: both jobs' objects go */
    cr_assert_eq(tsh("rm -f '%s'", gate), 0);
    cr_assert(swept_within(ida, 60000), "job A's chunk objects left");
    cr_assert(swept_within(idb, 60000), "job B's chunk objects left");
    char said[400];
    snprintf(said, sizeof said, "job %s: its chunk objects removed (http://127.0.0.1:%d/vr/jobs/%s/)",
             ida, port, ida);
    cr_assert_eq(tsh("grep -qF '%s' '%s'", said, D.log), 0, "not said: %s", said);
}

Test(dist_http_sweep, failed_and_cancelled_jobs_leave_no_chunk_object)
{
    start_store();
    char store[128], clean[400], bad[400], slow[400], idf[64], idc[64], move[160];
    snprintf(store, sizeof store, "%svr/", N.url);
    start_controller(store);
    setenv("VR_TEST_FRAME_DELAY_MS", "60", 1); /* chunks long enough to cancel mid-job */
    start_worker(); /* one: chunks run in order, the damaged one last */
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    snprintf(clean, sizeof clean, "%s/clean.mp4", D.r.dir);
    snprintf(bad, sizeof bad, "%s/bad.mp4", D.r.dir);
    snprintf(slow, sizeof slow, "%s/slow.mp4", D.r.dir);
    cr_assert_eq(tclip_make(clean, 3, 160, 10, 0), 0);
    cr_assert_eq(tv_damage_packet(clean, bad, 25), 0); /* in the third of three chunks */
    cr_assert_eq(tclip_make(slow, 6, 160, 10, 0), 0);

    /* failed: the last chunk cannot be decoded, after two went up */
    char out[400];
    snprintf(out, sizeof out, "%s/f.mkv", D.r.dir);
    const char *fail[] = { "-c", CFG, "--chunk-seconds", "1", "--on-decode-error", "fail", NULL };
    cr_assert_eq(tdist_submit(&D, bad, out, fail, idf, sizeof idf), 0);
    cr_assert_eq(tdist_watch(&D, idf, 120000), 1, "the damaged job did not fail");
    cr_assert_geq(objects_of(idf), 2, "no chunk object of the failed job went up");
    /* a killed attempt's temporary, left between its PUT and its MOVE */
    cr_assert_eq(tsh("echo x > '%s/vr/jobs/%s/out/00000.mkv.vrseg-part-4242-0'", N.www, idf),
                 0);

    /* cancelled: once its first chunk went up */
    submit(slow, "c.mkv", idc, sizeof idc);
    snprintf(move, sizeof move, "\"MOVE /vr/jobs/%s/out/", idc);
    for (int t = 0; t < 60000 && tnginx_count(&N, move) < 2; t += 50)
        tmsleep(50);
    cr_assert_geq(tnginx_count(&N, move), 2, "no chunk of the slow job went up");
    char buf[256];
    const char *cargs[] = { "cancel", idc, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, cargs), 0);
    cr_assert_eq(tdist_watch(&D, idc, 20000), 1);
    cr_assert_gt(objects_of(idc), 0);

    /* both swept, RQ_CLEANUP_ENDED_DELAY_MS (10 s) after their ends */
    cr_assert(swept_within(idf, 60000), "the failed job's chunk objects left");
    cr_assert(swept_within(idc, 60000), "the cancelled job's chunk objects left");
    cr_assert_eq(tsh("grep -q 'job %s: its chunk objects removed' '%s'", idf, D.log), 0);
    cr_assert_eq(tsh("grep -q 'job %s: its chunk objects removed' '%s'", idc, D.log), 0);
    /* the local chunk files stay for a retry, which computes the swept
     * chunks again: the cancelled job finishes */
    const char *rargs[] = { "retry", idc, NULL };
    cr_assert_eq(tdist_vrctl(&D, buf, sizeof buf, rargs), 0);
    int rc = tdist_watch(&D, idc, 120000);
    if (rc)
        tsh("tail -30 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "the retried job did not finish");
}

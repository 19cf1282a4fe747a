/*
 * t-dist-http-chunks.c - a fleet that shares no filesystem (issue 46):
 * workers started with `--storage URL` alone put each chunk's output and
 * sidecar into a real nginx by WebDAV (PUT to a temporary name, MOVE);
 * the controller (`--storage DIR --storage URL`) reads them back by range
 * GETs, checks them against their commits' sums and stitches them. The
 * stitched file is byte for byte one `vr-worker process` of the clip
 * (FFV1); a chunk's PUT cut mid-body is retried and its temporary object
 * never moved or stitched; the chunk objects are deleted after the stitch.
 * The last test runs the workers in a network namespace of their own, with
 * a tmpfs over the test's whole directory: everything they read and write
 * goes through HTTP (the source from nginx, Redis over TCP).
 */
#define _GNU_SOURCE /* unshare */
#include "util-nginx.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tdist D;
static struct tnginx N;
static char STORE[128];  /* the chunks' --storage URL: <nginx>/vr/ */
static char CLIP[400];   /* the source: a file, or a URL (netns) */
static char CFG[400];    /* FFV1 */
static char NS[64];      /* the workers' network namespace ("" none) */

static void teardown(void)
{
    tnginx_stop(&N);
    tdist_stop(&D, 0);
    if (NS[0])
        tsh("ip netns del %s 2>/dev/null", NS);
}

TestSuite(dist_http_chunks, .fini = teardown, .timeout = 240);

/* Redis, nginx on addr, a 3 s clip and FFV1's config. */
static void start_store(const char *addr)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char nd[400];
    snprintf(nd, sizeof nd, "%s/nginx", D.r.dir);
    cr_assert_eq(tnginx_start_on(&N, nd, addr), 0);
    snprintf(CLIP, sizeof CLIP, "%s/clip.mp4", D.r.dir);
    cr_assert_eq(tclip_make(CLIP, 3, 160, 10, 0), 0);
    snprintf(CFG, sizeof CFG, "%s/ffv1.json", D.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CFG), 0);
}

/* The controller: the test's storage DIR and the chunks' URL, its chunks
 * removed after the stitch (no --keep-chunks), sources under in_root. */
static void start_controller(const char *in_root)
{
    const char *argv[] = { "vr-controller", "run", "--redis", D.r.url, "--storage", D.storage,
                           "--storage", STORE, "--input-root", in_root, "--output-root",
                           D.r.dir, "--lease-seconds", "5", "--storage-allow-private", NULL };
    cr_assert_gt(D.ctl = tproc_spawn("vr-controller", argv, D.log), 0);
}

/* A worker with no storage directory: `--storage URL` alone. */
static void start_worker(const char *const *prefix, const char *redis, const char *store,
                         const char *in_root)
{
    const char *argv[] = { "vr-worker", "serve", "--redis", redis, "--storage", store,
                           "--input-root", in_root, "--cpu", "--heartbeat-ms", "300",
                           "--storage-allow-private", NULL };
    pid_t p = prefix ? tproc_spawn_under(prefix, "vr-worker", argv, D.log)
                     : tproc_spawn("vr-worker", argv, D.log);
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
}

static void run_job(const char *out, char *id, size_t n)
{
    const char *extra[] = { "-c", CFG, NULL };
    cr_assert_eq(tdist_submit(&D, CLIP, out, extra, id, n), 0);
    int rc = tdist_watch(&D, id, 150000);
    if (rc)
        tsh("tail -40 '%s' >&2", D.log);
    cr_assert_eq(rc, 0, "watch exit %d", rc);
}

/* The fleet's file equals one `process` of the clip (local), every byte. */
static void same_bytes_as_process(const char *got)
{
    char single[400], local[400];
    snprintf(local, sizeof local, "%s/clip.mp4", D.r.dir);
    snprintf(single, sizeof single, "%s/single.mkv", D.r.dir);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", CFG, local,
                           "-o", single, "-y", NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0);
    int rc = tsh("cmp '%s' '%s' >&2", got, single);
    if (rc)
        tsh("ls -l '%s' '%s' >&2", got, single);
    cr_assert_eq(rc, 0, "the fleet's file differs from process's");
}

/* The job's chunk objects went up (PUT, MOVE) and are gone after the
 * stitch (DELETE of its collection), with no temporary left. */
static void chunks_went_through_the_store(const char *id)
{
    char put[128], dir[512];
    snprintf(put, sizeof put, "\"PUT /vr/jobs/%s/out/", id);
    cr_assert_geq(tnginx_count(&N, put), 4, "chunks and sidecars PUT");
    snprintf(put, sizeof put, "\"MOVE /vr/jobs/%s/out/", id);
    cr_assert_geq(tnginx_count(&N, put), 4);
    snprintf(dir, sizeof dir, "%s/vr/jobs/%s", N.www, id);
    const char *left = "find '%s' -type f 2>/dev/null | grep -q .";
    for (int i = 0; i < 300 && tsh(left, dir) == 0; i++)
        usleep(50000); /* the cleanup comes RQ_CLEANUP_DELAY_MS after done */
    if (tsh(left, dir) == 0)
        tsh("grep -v ' \"GET ' '%s' | tail -5 >&2; grep -i 'delete\\|objects' '%s' >&2", N.access,
            D.log);
    cr_assert_neq(tsh(left, dir), 0, "chunk objects left after the stitch");
    snprintf(put, sizeof put, "\"DELETE /vr/jobs/%s/ HTTP", id); /* one, of the collection */
    cr_assert_eq(tnginx_count(&N, put), 1);
}

Test(dist_http_chunks, a_fleet_without_storage_puts_its_chunks_by_webdav_and_equals_process)
{
    start_store("127.0.0.1");
    snprintf(STORE, sizeof STORE, "%svr/", N.url);
    start_controller(D.r.dir);
    start_worker(NULL, D.r.url, STORE, D.r.dir);
    start_worker(NULL, D.r.url, STORE, D.r.dir);
    char out[400], id[64];
    snprintf(out, sizeof out, "%s/fleet.mkv", D.r.dir);
    run_job(out, id, sizeof id);
    same_bytes_as_process(out);
    chunks_went_through_the_store(id);
    /* the workers wrote nothing of the job beneath the storage directory:
     * what is there the controller read back (and removed with the job) */
    cr_assert_neq(tsh("grep -q 'cannot open the storage root' '%s'", D.log), 0);
    /* a --storage URL with user info: refused at the start, never echoed */
    char said[400];
    snprintf(said, sizeof said, "%s/said.txt", D.r.dir);
    const char *bin = getenv("VR_BIN_DIR");
    cr_assert_eq(tsh("'%s/vr-worker' serve --redis '%s' --cpu --storage "
                     "http://vr:davPw46Unsaid@127.0.0.1:%d/vr/ > '%s' 2>&1; test $? = 2",
                     bin && *bin ? bin : "bin", D.r.url, N.port, said), 0);
    cr_assert_eq(tsh("grep -q 'user info' '%s' && ! grep -q davPw46Unsaid '%s'", said, said), 0);
}

Test(dist_http_chunks, a_chunk_put_cut_mid_body_is_retried_and_never_stitched)
{
    start_store("127.0.0.1");
    int port = tproxy_cut_start(N.port); /* the workers' way to the store */
    cr_assert_gt(port, 0);
    snprintf(STORE, sizeof STORE, "%svr/", N.url);
    char wstore[128];
    snprintf(wstore, sizeof wstore, "http://127.0.0.1:%d/vr/", port);
    start_controller(D.r.dir);
    tproxy_cut_arm(1); /* the first request with a body over 1 KB: a chunk output's PUT */
    start_worker(NULL, D.r.url, wstore, D.r.dir);
    start_worker(NULL, D.r.url, wstore, D.r.dir);
    char out[400], id[64], put[128], move[128];
    snprintf(out, sizeof out, "%s/cut.mkv", D.r.dir);
    run_job(out, id, sizeof id);
    cr_assert_eq(tproxy_cut_count(), 1);
    /* the cut PUT reached nginx and was tried again whole: one PUT more
     * than MOVEs, the cut one's temporary never moved */
    snprintf(put, sizeof put, "\"PUT /vr/jobs/%s/out/", id);
    snprintf(move, sizeof move, "\"MOVE /vr/jobs/%s/out/", id);
    cr_assert_eq(tnginx_count(&N, put), tnginx_count(&N, move) + 1);
    same_bytes_as_process(out);
    chunks_went_through_the_store(id);
}

/* ---- two hosts: network namespaces ---- */

#define NET_A "10.46.0.1"
#define NET_B "10.46.0.2"

/* This test process (the controller's host: Redis, nginx, the controller)
 * moves to a network namespace of its own; the workers' host is a named
 * one, joined by a veth pair. 0, or -1 where namespaces cannot be made. */
static int two_hosts(void)
{
    snprintf(NS, sizeof NS, "vr46w%d", (int)getpid());
    if (unshare(CLONE_NEWNET) < 0 || tsh("ip link set lo up") != 0 ||
        tsh("ip netns add %s", NS) != 0) {
        NS[0] = tsh("ip netns list 2>/dev/null | grep -q '^%s'", NS) == 0 ? NS[0] : '\0';
        return -1;
    }
    return tsh("ip link add vr46a type veth peer name vr46b netns %s && "
               "ip addr add " NET_A "/24 dev vr46a && ip link set vr46a up && "
               "ip -n %s addr add " NET_B "/24 dev vr46b && ip -n %s link set vr46b up && "
               "ip -n %s link set lo up", NS, NS, NS, NS) == 0 ? 0 : -1;
}

Test(dist_http_chunks, two_hosts_in_network_namespaces_finish_a_job_from_http_alone)
{
    if (geteuid() != 0)
        cr_skip_test("the two-host test makes network namespaces: run it as root (CI does)");
    if (two_hosts() < 0)
        cr_skip_test("no network namespaces here (unshare(CLONE_NEWNET) or `ip netns add` "
                     "failed): the two-host test needs them");
    start_store(NET_A);
    int rport = tredis_tcp(&D.r, NET_A);
    cr_assert_gt(rport, 0);
    /* the workers come from another address: not loopback, no password */
    const char *open_up[] = { "CONFIG", "SET", "protected-mode", "no", NULL };
    cr_assert_eq(tredis_cmd(&D.r, open_up), 0);
    char redis[64], in_root[128];
    snprintf(redis, sizeof redis, "redis://" NET_A ":%d", rport);
    /* the source by URL from nginx too: the workers' host has no file of the test */
    snprintf(STORE, sizeof STORE, "%svr/", N.url);
    snprintf(in_root, sizeof in_root, "%sin/", N.url);
    cr_assert_eq(tsh("mkdir -p '%s/in' && cp '%s' '%s/in/clip.mp4'", N.www, CLIP, N.www), 0);
    snprintf(CLIP, sizeof CLIP, "%sclip.mp4", in_root);
    start_controller(in_root);
    /* the workers' host: its own network and a tmpfs over the test's
     * whole directory (storage, nginx's files, the clip): none of it
     * reachable but by HTTP */
    const char *prefix[] = { "ip", "netns", "exec", NS, "sh", "-c",
                             "mount -t tmpfs vr46 \"$0\" && exec \"$@\"", D.r.dir, NULL };
    start_worker(prefix, redis, STORE, in_root);
    start_worker(prefix, redis, STORE, in_root);
    char out[400], id[64];
    snprintf(out, sizeof out, "%s/hosts.mkv", D.r.dir);
    run_job(out, id, sizeof id);
    same_bytes_as_process(out);
    chunks_went_through_the_store(id);
    /* both workers' ranges came from the other host */
    cr_assert_eq(tsh("grep -q '^" NET_B " \"PUT /vr/jobs/' '%s'", N.access), 0);
    cr_assert_eq(tsh("grep -q '^" NET_B " \"GET /in/clip.mp4' '%s'", N.access), 0);
}

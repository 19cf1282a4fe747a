/*
 * c-redis.c - chaos: faults of Redis. kill -9 mid-job with AOF fsynced
 * every second (up to a second of acks lost: chunks recomputed, never
 * counted twice) and on every write; a host crash that loses the AOF's
 * unsynced tail, rolling a commit back after the controller saw it (the
 * chunk runs again: its copy-split input must still be there), or the
 * job's done (its chunk files must still be there); Redis down
 * at a chunk's commit (the
 * finished chunk is committed once it is back, not recomputed); maxmemory
 * full mid-job (writes refused: status says so, workers go "silent", and
 * the job finishes by itself once memory is raised, well within the lease)
 * and at a chunk's delivery (the read is let through, the start report is
 * refused: the worker keeps the chunk instead of leaving it to its lease)
 * or at its commit (the controller handles the done report again).
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <glob.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(chaos_redis, .fini = chaos_teardown, .timeout = 300);

static void config_set(const char *k, const char *v)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(CH.q, &e, "CONFIG SET %s %s", k, v);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET %s %s: %s", k, v, e.msg);
    freeReplyObject(r);
}

static void redis_kill9_restart(const char *fsync)
{
    kill(CH.d.r.pid, SIGKILL);
    waitpid(CH.d.r.pid, NULL, 0);
    CH.d.r.pid = 0;
    chaos_msleep(500);
    cr_assert_eq(tredis_restart(&CH.d.r), 0, "redis did not come back");
    chaos_reconnect();
    if (fsync)
        config_set("appendfsync", fsync);
}

static void kill9_mid_job(const char *fsync)
{
    chaos_up(1, 3, 2, 50, 100);
    config_set("appendfsync", fsync);
    const char *in = chaos_clip("in.mp4", 4, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job_min(id, "chunks_done", 1, 60000);
    redis_kill9_restart(fsync);
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
}

Test(chaos_redis, kill9_with_aof_everysec)
{
    kill9_mid_job("everysec");
}

Test(chaos_redis, kill9_with_aof_always)
{
    kill9_mid_job("always");
}

/* The AOF file Redis appends to now (Redis 7: appendonlydir/<name>.incr.aof). */
static void incr_aof(char *path, size_t n)
{
    char pat[400];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/appendonlydir/*.incr.aof", CH.d.r.dir);
    cr_assert_eq(glob(pat, 0, NULL, &g), 0, "no %s", pat);
    snprintf(path, n, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A host crash that loses what the AOF got after `before` bytes: Redis
 * killed, its AOF cut there, restarted (everysec again). */
static void host_crash(const char *aof, long long before)
{
    kill(CH.d.r.pid, SIGKILL);
    waitpid(CH.d.r.pid, NULL, 0);
    CH.d.r.pid = 0;
    cr_assert_eq(truncate(aof, before), 0, "cannot cut %s", aof);
    cr_assert_eq(tredis_restart(&CH.d.r), 0, "redis did not come back");
    chaos_reconnect();
    config_set("appendfsync", "everysec");
}

Test(chaos_redis, host_crash_rolls_back_a_commit)
{
    /* The crash of issue 26, finding 1: with appendfsync everysec a host
     * crash loses up to a second of the AOF; killing only the process
     * loses nothing (the page cache keeps it), so the loss is made by
     * hand: the AOF is cut back to its size just before the first commit,
     * once the controller has handled that commit. The chunk runs again
     * after the lease, and needs its copy-split input. The controller runs
     * with the defaults (no --keep-chunks). Chunks of 3 s (300 ms a
     * frame): the job is far from done when the AOF is cut. */
    chaos_up(1, 3, 2, 300, 100);
    config_set("appendfsync", "everysec");
    const char *in = chaos_clip("in.mp4", 4, 160);
    char id[64], out[400], ref[400], aof[500];
    chaos_ref(in, "ref.mkv", ref);
    const char *copy[] = { "--chunking", "copy", NULL };
    chaos_submit(in, "out.mkv", copy, id, out);
    incr_aof(aof, sizeof aof);
    /* The size read before every chunk still shows no commit precedes the
     * first commit: the worker's commit script writes the chunk's
     * `commits` in the same step as its AOF entry. (The job's chunks_done
     * is no mark for it: the controller counts a commit a little later, and
     * a size read meanwhile already holds it.) */
    long long before = -1;
    int idx = -1;
    for (int t = 0; t < 60000 && idx < 0; t += 2) {
        long long sz = file_size(aof);
        for (int i = 0; i < 4 && idx < 0; i++)
            if (chaos_chunk_ll(id, i, "commits") >= 1)
                idx = i;
        if (idx < 0) {
            before = sz;
            chaos_msleep(2);
        }
    }
    cr_assert_gt(before, 0, "nothing read before the first commit");
    cr_assert_geq(idx, 0, "no chunk was committed");
    char msg[64], input[600];
    snprintf(msg, sizeof msg, "chunk %d done", idx);
    cr_assert(chaos_event_seen(id, msg, 30000), "the controller never handled chunk %d's result",
              idx);
    /* where the controller removed a done chunk's input, it did so right
     * after that event */
    snprintf(input, sizeof input, "%s/jobs/%s/in/%05d.mkv", CH.d.storage, id, idx);
    for (int t = 0; t < 1000 && access(input, F_OK) == 0; t += 20)
        chaos_msleep(20);

    host_crash(aof, before);
    cr_assert_eq(chaos_chunk_ll(id, idx, "commits"), 0, "the cut AOF kept chunk %d's commit",
                 idx);
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 5000);
}

Test(chaos_redis, host_crash_rolls_back_the_done)
{
    /* The same crash one step later: the AOF loses the job's done after
     * the controller saw it. The job is back in its stitch, and its chunk
     * files must still be there: they go only once the done is durable
     * (the cleanup set, 3 s later). A copy split, whose chunks could not
     * be computed again without their inputs. */
    chaos_up(1, 3, 2, 0, 100);
    config_set("appendfsync", "everysec");
    const char *in = chaos_clip("in.mp4", 3, 160);
    char id[64], out[400], ref[400], aof[500], jk[128], state[32] = "", msg[500];
    chaos_ref(in, "ref.mkv", ref);
    const char *copy[] = { "--chunking", "copy", NULL };
    chaos_submit(in, "out.mkv", copy, id, out);
    incr_aof(aof, sizeof aof);
    rq_key_job(jk, sizeof jk, id);
    long long before = -1;
    for (int t = 0; t < 120000; t += 2) {
        long long sz = file_size(aof);
        chaos_hget(jk, "state", state, sizeof state);
        if (!strcmp(state, "done"))
            break;
        before = sz;
        chaos_msleep(2);
    }
    cr_assert_str_eq(state, "done");
    snprintf(msg, sizeof msg, "done: %s", out);
    cr_assert(chaos_event_seen(id, msg, 10000), "the controller never finished the job");
    chaos_msleep(1000); /* where the chunk files went at the done, they are gone now */

    host_crash(aof, before);
    chaos_hget(jk, "state", state, sizeof state);
    cr_assert_str_neq(state, "done", "the cut AOF kept the done");
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
    chaos_check_no_temps(out, 5000);
}

Test(chaos_redis, down_at_commit)
{
    /* Chunk 0's output is in place and its commit 1 s away when Redis dies;
     * it comes back well inside the 30 s lease. */
    chaos_up(1, 30, 0, 0, 100);
    chaos_worker(0, 1000);
    const char *in = chaos_clip("in.mp4", 2, 160);
    char id[64], out[400], ref[400], o0[600], needle[160];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    snprintf(o0, sizeof o0, "%s/jobs/%s/out/00000.mkv", CH.d.storage, id);
    chaos_wait_file(o0, 60000);
    kill(CH.d.r.pid, SIGKILL);
    waitpid(CH.d.r.pid, NULL, 0);
    CH.d.r.pid = 0;
    snprintf(needle, sizeof needle, "job %s chunk 0: cannot commit", id);
    int seen = chaos_log_has(needle, 30000);
    cr_assert_eq(tredis_restart(&CH.d.r), 0);
    chaos_reconnect();
    cr_assert(seen, "the worker never tried to commit while Redis was down");
    chaos_watch(id, 0, 25000); /* inside the lease: no reclaim */
    chaos_check_done(id, in, out, ref);
    cr_assert_eq(chaos_chunk_ll(id, 0, "attempts"), 1, "the finished chunk was recomputed");
    const char *ev = chaos_events(id);
    cr_assert(strstr(ev, "chunk 0     committed") && strstr(ev, "committed on try"), "%s", ev);
}

Test(chaos_redis, maxmemory_oom_mid_job)
{
    /* leases longer than the refusal lasts (up to ~80 s by the waits
     * below, on a loaded machine): the workers keep their chunks and commit
     * once Redis takes writes again. With 30 s leases a slow run saw them
     * expire and the chunks requeued instead (nothing lost, but not the
     * path this test checks). */
    chaos_up(0, 120, 2, 100, 200);
    const char *in = chaos_clip("in.mp4", 4, 160);
    char id[64], out[400], ref[400], buf[8192];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job_min(id, "chunks_done", 1, 60000);
    config_set("maxmemory", "1");
    cr_assert(chaos_log_has("OOM command not allowed", 60000), "no write was refused");

    /* What a user sees meanwhile: the stall and its cause, workers silent. */
    const char *sargs[] = { "status", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, sargs), 0);
    cr_assert(strstr(buf, "stalled: Redis is out of memory"), "%s", buf);
    /* issue 42: the workers are alive, their heartbeats refused: shown as
     * stalled by the out-of-memory Redis, never as gone or silent */
    int stalled = 0;
    for (int t = 0; t < 20000 && !stalled; t += 200) {
        const char *wargs[] = { "workers", NULL };
        cr_assert_eq(chaos_vrctl(buf, sizeof buf, wargs), 0);
        stalled = strstr(buf, "stalled") != NULL;
        if (!stalled)
            chaos_msleep(200);
    }
    cr_assert(stalled && !strstr(buf, "gone"),
              "workers whose heartbeats Redis refuses are not shown as stalled by it:\n%s", buf);
    /* Writes stay refused until a worker has tried to commit into them: on
     * a fast run every chunk could otherwise finish on either side of a
     * short refusal, and the commit path this test checks never run (CI,
     * stop 54: chunks 2 and 3 committed on their first try). */
    cr_assert(chaos_log_has("cannot commit", 60000), "no worker tried to commit while refused");

    config_set("maxmemory", "0");
    /* well within the 120 s lease: no chunk waits it out (a chunk handed
     * to a worker while writes were refused did, once: ci10) */
    chaos_watch(id, 0, 60000);
    chaos_check_done(id, in, out, ref);
    const char *ev = chaos_events(id);
    /* the refusal itself could not be recorded; the commit that followed
     * names it */
    cr_assert(strstr(ev, "committed on try") && strstr(ev, "OOM command not allowed"), "%s", ev);
    cr_assert(!strstr(ev, "requeued"), "a chunk waited out its lease:\n%s", ev);
}

/* Entries of vr:chunks pending to the workers' group: delivered, not acked. */
static long long chunks_pending(void)
{
    vr_err e = { 0 };
    redisReply *r = rq_cmd(CH.q, &e, "XPENDING %s %s", RQ_CHUNKS, RQ_G_WORKERS);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                  r->element[0]->type == REDIS_REPLY_INTEGER ? r->element[0]->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

Test(chaos_redis, maxmemory_oom_at_delivery)
{
    /* A worker idle while Redis refuses writes is handed chunks: XREADGROUP
     * is let through (the entry is pending under its claim), the start
     * report (XADD) is refused. The worker keeps the entry and reports it
     * once writes are taken again; before, it left it pending, took the
     * next one alike, and every chunk waited out its 120 s lease (ci10). */
    chaos_up(0, 120, 0, 0, 200);
    const char *in = chaos_clip("in.mp4", 4, 160);
    char id[64], out[400], ref[400];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_job(id, "state", "running", 60000); /* chunks enqueued, no worker yet */
    config_set("maxmemory", "1");
    chaos_worker(0, 0);
    long long pending = 0;
    for (int t = 0; t < 60000 && pending < 1; t += 50) {
        pending = chunks_pending();
        chaos_msleep(50);
    }
    cr_assert_geq(pending, 1, "no chunk was handed to the worker while writes were refused");
    cr_assert(chaos_log_has("OOM command not allowed", 60000), "no write was refused");
    chaos_msleep(1500); /* the refusal lasts: its start report is retried meanwhile */
    long long held = chunks_pending();
    config_set("maxmemory", "0");
    chaos_watch(id, 0, 60000); /* well within the lease */
    chaos_check_done(id, in, out, ref);
    const char *ev = chaos_events(id);
    cr_assert(!strstr(ev, "requeued"), "a chunk waited out its lease:\n%s", ev);
    cr_assert_eq(held, 1, "the worker took another chunk before its first one started");
    cr_assert(chaos_log_has("start reported on try", 1000), "the start was never retried");
}

Test(chaos_redis, maxmemory_oom_at_report)
{
    /* A done report sent just before Redis refuses writes and read by the
     * controller while it does (its read is let through, the commit
     * script's writes are not): the report stays pending and is handled
     * again once writes are taken. Before, it was acked unhandled: the
     * worker had moved on, and the chunk waited out its 120 s lease. */
    chaos_up(0, 120, 1, 0, 200);
    const char *in = chaos_clip("in.mp4", 1, 160); /* one chunk */
    char id[64], out[400], ref[400], needle[160];
    chaos_ref(in, "ref.mkv", ref);
    chaos_submit(in, "out.mkv", NULL, id, out);
    chaos_wait_chunk(id, 0, "state", "running", 60000);
    kill(CH.d.ctl, SIGSTOP); /* the report waits for the controller */
    snprintf(needle, sizeof needle, "job %s chunk 0: 10 frames in", id);
    int reported = chaos_log_has(needle, 60000);
    if (reported)
        config_set("maxmemory", "1");
    kill(CH.d.ctl, SIGCONT);
    cr_assert(reported, "the worker never reported its chunk done");
    int met = chaos_log_has("report: redis: OOM command not allowed", 30000);
    config_set("maxmemory", "0");
    cr_assert(met, "the controller never met the refusal at the commit");
    chaos_watch(id, 0, 60000); /* well within the lease */
    chaos_check_done(id, in, out, ref);
    const char *ev = chaos_events(id);
    cr_assert(!strstr(ev, "requeued"), "the chunk waited out its lease:\n%s", ev);
    cr_assert_eq(chaos_chunk_ll(id, 0, "attempts"), 1, "the finished chunk was recomputed");
}

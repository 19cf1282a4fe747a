/*
 * c-redis.c - chaos: faults of Redis. kill -9 mid-job with AOF fsynced
 * every second (up to a second of acks lost: chunks recomputed, never
 * counted twice) and on every write; Redis down at a chunk's commit (the
 * finished chunk is committed once it is back, not recomputed); maxmemory
 * full mid-job (writes refused: status says so, workers go "silent", and
 * the job finishes by itself once memory is raised).
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
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
    chaos_up(0, 120, 2, 50, 200);
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
    int silent = 0;
    for (int t = 0; t < 20000 && !silent; t += 200) {
        const char *wargs[] = { "workers", NULL };
        cr_assert_eq(chaos_vrctl(buf, sizeof buf, wargs), 0);
        silent = strstr(buf, "silent") != NULL;
        if (!silent)
            chaos_msleep(200);
    }
    cr_assert(silent, "workers whose heartbeats Redis refuses still look alive:\n%s", buf);

    config_set("maxmemory", "0");
    chaos_watch(id, 0, 180000);
    chaos_check_done(id, in, out, ref);
    const char *ev = chaos_events(id);
    /* the refusal itself could not be recorded; the commit that followed
     * names it */
    cr_assert(strstr(ev, "committed on try") && strstr(ev, "OOM command not allowed"), "%s", ev);
}

/*
 * t-cli-events.c - what vrctl shows of a job's life (issue 14, item 3):
 * `vrctl events` lists the job's events with time, chunk, kind, worker and
 * text (--json: one object a line); `status JOB` ends with the last ones;
 * a full maxmemory is reported as the stall it is ("stalled: Redis is out
 * of memory") instead of "running 0.0 fps"; a worker whose heartbeats
 * stopped is "silent" in `workers` before its key expires.
 */
#include "rq.h"
#include "rq_fleet.h"
#include "job.h"
#include "rq_jobs.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct tredis R;
static struct rq *Q;

static void setup(void)
{
    cr_assert_eq(tredis_start(&R, 0), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(R.url, 2000, &Q, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
    rq_free(&Q);
    tredis_stop(&R);
}

TestSuite(cli_events, .init = setup, .fini = teardown, .timeout = 60);

/* `vrctl a [b [c]] --redis URL` (b, c may be NULL); stdout into out. */
static int vrctl(char *out, size_t n, const char *a, const char *b, const char *c)
{
    const char *argv[8] = { "vrctl", a };
    int k = 2;
    if (b)
        argv[k++] = b;
    if (c)
        argv[k++] = c;
    argv[k++] = "--redis";
    argv[k++] = R.url;
    argv[k] = NULL;
    return tproc_run("vrctl", argv, out, n);
}

static void job_with_events(const char *id)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_job_submit(Q, id, "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    /* the kind comes from the words before the path (issue 26, finding 9:
     * this one read as `retry`) */
    rq_event(Q, id, "splitting /data/retry/failed/in.mp4 into ~1.0 s chunks");
    rq_event(Q, id, "chunk 0 done");
    rq_event(Q, id, "chunk 1: worker box:cpu:1a2b3c4d stopped renewing its lease (killed or "
                    "lost); requeued");
    rq_event(Q, id, "chunk 1: worker box:cpu:5e6f7a8b committed on try 3 after: OOM");
}

Test(cli_events, events_lists_time_chunk_kind_worker_and_text)
{
    static char out[16384];
    job_with_events("j-ev");
    cr_assert_eq(vrctl(out, sizeof out, "events", "j-ev", NULL), 0, "%s", out);
    cr_assert(strstr(out, "chunk 0     done"), "%s", out);
    const char *l = strstr(out, "stopped renewing");
    cr_assert(l, "%s", out);
    while (l > out && l[-1] != '\n')
        l--;
    cr_assert(strstr(l, "chunk 1 ") && strstr(l, "requeued ") && strstr(l, " box:cpu:1a2b3c4d "),
              "requeue line without its columns: %s", l);
    cr_assert(strstr(out, "committed    box:cpu:5e6f7a8b"), "%s", out);

    cr_assert_eq(vrctl(out, sizeof out, "events", "j-ev", "--json"), 0, "%s", out);
    cr_assert(strstr(out, "\"chunk\":1,\"worker\":\"box:cpu:1a2b3c4d\",\"event\":\"requeued\""),
              "%s", out);
    cr_assert(strstr(out, "\"chunk\":null,\"worker\":null,\"event\":\"splitting\""), "%s", out);
    int lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    cr_assert_eq(lines, 4, "one JSON object a line: %s", out);

    cr_assert_eq(vrctl(out, sizeof out, "events", "no-such-job", NULL), 2);
}

Test(cli_events, status_shows_the_last_events_and_a_full_maxmemory)
{
    static char out[16384];
    job_with_events("j-st");
    cr_assert_eq(vrctl(out, sizeof out, "status", "j-st", NULL), 0, "%s", out);
    cr_assert(strstr(out, "last events") && strstr(out, "stopped renewing"), "%s", out);
    cr_assert(!strstr(out, "stalled"), "%s", out);

    redisReply *r = rq_cmd(Q, NULL, "CONFIG SET maxmemory 1");
    cr_assert(r);
    freeReplyObject(r);
    cr_assert_eq(vrctl(out, sizeof out, "status", NULL, NULL), 0, "%s", out);
    cr_assert(strstr(out, "stalled: Redis is out of memory"), "%s", out);
    cr_assert_eq(vrctl(out, sizeof out, "status", "j-st", "--json"), 0, "%s", out);
    cr_assert(strstr(out, "\"stalled\": \"Redis is out of memory"), "%s", out);
    cr_assert(strstr(out, "\"events\": ["), "%s", out);
}

Test(cli_events, a_worker_whose_heartbeats_stopped_is_silent)
{
    static char out[4096];
    struct rq_worker_info w = { .hb_ms = 100, .chunks_done = 1 };
    snprintf(w.name, sizeof w.name, "box:cpu:00c0ffee");
    snprintf(w.gpu, sizeof w.gpu, "cpu");
    snprintf(w.state, sizeof w.state, "busy");
    snprintf(w.chunk, sizeof w.chunk, "j-w/0");
    cr_assert_eq(rq_worker_heartbeat(Q, &w, 30, NULL), 0);
    cr_assert_eq(vrctl(out, sizeof out, "workers", NULL, NULL), 0, "%s", out);
    cr_assert(strstr(out, "busy"), "%s", out);
    usleep(1200 * 1000); /* 3 heartbeats + 0.5 s, its key still has 28 s */
    cr_assert_eq(vrctl(out, sizeof out, "workers", NULL, NULL), 0, "%s", out);
    cr_assert(strstr(out, "silent") && !strstr(out, "busy"), "%s", out);

    /* status of its job names it, and the chunk it holds */
    vr_err e = { 0 };
    cr_assert_eq(rq_job_submit(Q, "j-w", "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    static char st[8192];
    cr_assert_eq(vrctl(st, sizeof st, "status", "j-w", NULL), 0, "%s", st);
    cr_assert(strstr(st, "worker box:cpu:00c0ffee holds chunk 0 but is silent"), "%s", st);
}

/* Text from Redis never drives the terminal (issue 27, finding 9): an
 * event, a job error, a worker's state written with escape sequences
 * (clear screen, set the title, BEL, a C1 CSI) come out with every control
 * character as '?', in `events`, `status` and `workers`. */
Test(cli_events, control_characters_from_redis_never_reach_the_terminal)
{
    static char out[16384];
    vr_err e = { 0 };
    const char *evil = "boom\x1b[2J\x1b]2;PWNED\x07 \xc2\x9b" "31m";
    cr_assert_eq(rq_job_submit(Q, "j-esc", "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    rq_event(Q, "j-esc", evil);
    char jk[128];
    rq_key_job(jk, sizeof jk, "j-esc");
    redisReply *r = rq_cmd(Q, NULL, "HSET %s error %s", jk, evil);
    cr_assert_not_null(r);
    freeReplyObject(r);
    struct rq_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.name, sizeof w.name, "box:0:1a2b3c4d");
    snprintf(w.gpu, sizeof w.gpu, "0");
    snprintf(w.state, sizeof w.state, "idle\x1b[2J");
    snprintf(w.chunk, sizeof w.chunk, "-");
    w.hb_ms = 1000;
    cr_assert_eq(rq_worker_heartbeat(Q, &w, 30, &e), 0, "%s", e.msg);
    static const char *const cmds[][2] = { { "events", "j-esc" }, { "status", "j-esc" },
                                           { "workers", NULL } };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cr_assert_eq(vrctl(out, sizeof out, cmds[i][0], cmds[i][1], NULL), 0, "%s", out);
        cr_assert_null(strchr(out, '\x1b'), "`vrctl %s` printed an ESC: %s", cmds[i][0], out);
        cr_assert_null(strchr(out, '\x07'), "`vrctl %s` printed a BEL", cmds[i][0]);
        cr_assert_null(strstr(out, "\xc2\x9b"), "`vrctl %s` printed a C1 CSI", cmds[i][0]);
    }
    cr_assert(strstr(out, "idle?[2J"), "the worker's state is not shown: %s", out);
}

/* Numbers read back from Redis are range-checked (issue 27, finding 11):
 * a job whose times a worker's user set to the ends of a 64-bit integer
 * shows a sane status (under `make asan` the overflow aborted it). */
Test(cli_events, numbers_from_redis_out_of_range_read_as_zero)
{
    static char out[16384];
    vr_err e = { 0 };
    cr_assert_eq(rq_job_submit(Q, "j-num", "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    char jk[128];
    rq_key_job(jk, sizeof jk, "j-num");
    redisReply *r = rq_cmd(Q, NULL, "HSET %s started_ms -9223372036854775808 finished_ms "
                           "9223372036854775807 frames_done 9223372036854775807 split_s nan", jk);
    cr_assert_not_null(r);
    freeReplyObject(r);
    cr_assert_eq(vrctl(out, sizeof out, "status", "j-num", NULL), 0, "%s", out);
    cr_assert_eq(vrctl(out, sizeof out, "status", "j-num", "--json"), 0, "%s", out);
    cr_assert_null(strstr(out, "922337203685477"), "a number out of range was used: %s", out);
    cr_assert_null(strstr(out, "nan"), "%s", out);
    cr_assert(strstr(out, "\"frames_done\": 0"), "%s", out);
}

/* Found by fuzz/fuzz_records.c: a byte of no valid UTF-8 in a job's record
 * made the status JSON fail whole (jansson refuses it); it reads as '?'. */
Test(cli_events, invalid_utf8_from_redis_still_gives_status_json)
{
    static char out[16384];
    vr_err e = { 0 };
    cr_assert_eq(rq_job_submit(Q, "j-utf", "{}", 1, 10, 0, &e), 0, "%s", e.msg);
    char jk[128];
    rq_key_job(jk, sizeof jk, "j-utf");
    static const char bad[] = "bad \xc7\xff byte \xed\xa0\x80."; /* a surrogate: 3 bytes */
    redisReply *r = rq_cmd(Q, NULL, "HSET %s error %b", jk, bad, sizeof bad - 1);
    cr_assert_not_null(r);
    freeReplyObject(r);
    cr_assert_eq(vrctl(out, sizeof out, "status", "j-utf", "--json"), 0, "%s", out);
    cr_assert(strstr(out, "\"error\": \"bad ?? byte ???.\""), "%s", out);
}

/* A job of input `in` recorded as vrctl submit records it, in state `state`. */
static void job_in_state(const char *id, const char *in, const char *state)
{
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.id, sizeof js.id, "%s", id);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "/data/out/%s.mkv", id);
    char *spec = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_submit(Q, id, spec, 1764227000000LL, 10, 0, &e), 0, "%s", e.msg);
    free(spec);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    const char *hs[] = { "HSET", jk, "state", state, NULL };
    cr_assert_eq(tredis_cmd(&R, hs), 0);
}

/* The job list has a header, each job's created time and input file, and
 * --state picks states (issue 28, item 12); workers has a header and its
 * --help names --json. */
Test(cli_events, status_list_header_input_created_and_state_filter)
{
    static char out[16384];
    job_in_state("20261127-070000-0000beef", "/data/clips/beach.mp4", "done");
    job_in_state("20261127-070001-0000cafe", "/data/clips/forest.mp4", "queued");
    cr_assert_eq(vrctl(out, sizeof out, "status", NULL, NULL), 0, "%s", out);
    cr_assert(!strncmp(out, "JOB ", 4) && strstr(out, "STATE") && strstr(out, "CREATED") &&
              strstr(out, "INPUT"), "no header: %s", out);
    cr_assert(strstr(out, "beach.mp4") && strstr(out, "forest.mp4"), "%s", out);
    cr_assert(!strstr(out, "/data/clips/"), "the list shows the file name: %s", out);
    char created[32];
    time_t t = 1764227000;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(created, sizeof created, "%Y-%m-%d %H:%M:%S", &tm);
    cr_assert(strstr(out, created), "no created time %s: %s", created, out);

    cr_assert_eq(vrctl(out, sizeof out, "status", "--state", "done"), 0, "%s", out);
    cr_assert(strstr(out, "beach.mp4") && !strstr(out, "forest.mp4"), "%s", out);
    cr_assert_eq(vrctl(out, sizeof out, "status", "--state", "failed,queued"), 0, "%s", out);
    cr_assert(!strstr(out, "beach.mp4") && strstr(out, "forest.mp4"), "%s", out);
    cr_assert_eq(vrctl(out, sizeof out, "status", "--state", "cancelled"), 0, "%s", out);
    cr_assert(strstr(out, "no cancelled jobs"), "%s", out);
    cr_assert_eq(vrctl(out, sizeof out, "status", "--state", "finished"), 2, "%s", out);

    const char *w[] = { "vrctl", "workers", "--help", NULL };
    cr_assert_eq(tproc_run("vrctl", w, out, sizeof out), 0);
    cr_assert(strstr(out, "--json"), "workers --help: %s", out);
    struct rq_worker_info wk = { .hb_ms = 5000, .chunks_done = 1, .frames_done = 1 };
    snprintf(wk.name, sizeof wk.name, "box:cpu:0000beef");
    snprintf(wk.gpu, sizeof wk.gpu, "cpu");
    snprintf(wk.state, sizeof wk.state, "idle");
    cr_assert_eq(rq_worker_heartbeat(Q, &wk, 30, NULL), 0);
    cr_assert_eq(vrctl(out, sizeof out, "workers", NULL, NULL), 0, "%s", out);
    cr_assert(!strncmp(out, "WORKER ", 7) && strstr(out, "STATE"), "no header: %s", out);
    cr_assert(strstr(out, "1 chunk, 1 frame\n"), "not singular: %s", out);
}

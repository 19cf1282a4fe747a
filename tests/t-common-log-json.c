/*
 * t-common-log-json.c - `--log-format json` gives log shippers one JSON object a
 * line: every line of vr-controller, vr-worker serve and vrctl watch,
 * running a real job on a real redis-server, parses (jansson) and has
 * time, level, component, job, chunk and worker; the worker's lines name
 * the chunk and the worker, the controller's the job. A message with
 * quotes, backslashes, newlines, control bytes and broken UTF-8 comes back
 * intact (the broken byte as U+FFFD). A bad format is bad usage.
 */
#include "log.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the logger itself ---- */

static const char *const keys[] = { "time", "level", "component", "job", "chunk", "worker",
                                    "message" };

/* Parses one line; asserts it is an object with every key (and no other). */
static json_t *parse_line(const char *line, size_t len, const char *where)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, 0, &je);
    cr_assert(o, "%s: not JSON (%s): %.*s", where, je.text, (int)len, line);
    cr_assert(json_is_object(o), "%s: not an object: %.*s", where, (int)len, line);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert(json_object_get(o, keys[i]), "%s: no '%s': %.*s", where, keys[i], (int)len,
                  line);
    cr_assert_eq(json_object_size(o), sizeof keys / sizeof *keys, "%s: %.*s", where, (int)len,
                 line);
    cr_assert(json_is_string(json_object_get(o, "time")));
    cr_assert(json_is_string(json_object_get(o, "message")));
    return o;
}

static void say_nasty(void)
{
    log_ctx_worker("host:cpu:1234abcd");
    log_ctx_process("20261124-000000-deadbeef", 7);
    log_warn("a \"quoted\" \\path\\ on\ntwo lines\tand \x01 bell \xff end é");
    log_ctx_thread("20261124-000000-0thread0", -1); /* the thread's wins */
    log_info("thread's job");
    log_ctx_thread(NULL, -1);
    log_ctx_process(NULL, -1);
    log_ctx_worker(NULL);
    log_say(LOG_ERROR, "vrctl: for a person\n");
}

Test(common_log_json, escaped_and_every_field)
{
    char out[8192];
    log_init("t-log");
    cr_assert_eq(log_set_format("xml"), -1);
    cr_assert_eq(log_set_format("json"), 0);
    tcapture_stderr(say_nasty, out, sizeof out);
    log_set_format("text");

    char *l1 = out, *l2 = strchr(l1, '\n');
    cr_assert(l2, "%s", out);
    char *l3 = strchr(++l2, '\n');
    cr_assert(l3, "%s", out);
    char *end = strchr(++l3, '\n');
    cr_assert(end && end[1] == '\0', "three lines wanted: %s", out);

    json_t *o = parse_line(l1, (size_t)(l2 - 1 - l1), "nasty");
    cr_expect_str_eq(json_string_value(json_object_get(o, "message")),
                     "a \"quoted\" \\path\\ on\ntwo lines\tand \x01 bell \xef\xbf\xbd end é");
    cr_expect_str_eq(json_string_value(json_object_get(o, "level")), "warn");
    cr_expect_str_eq(json_string_value(json_object_get(o, "component")), "t-log");
    cr_expect_str_eq(json_string_value(json_object_get(o, "job")), "20261124-000000-deadbeef");
    cr_expect_eq(json_integer_value(json_object_get(o, "chunk")), 7);
    cr_expect_str_eq(json_string_value(json_object_get(o, "worker")), "host:cpu:1234abcd");
    json_decref(o);

    o = parse_line(l2, (size_t)(l3 - 1 - l2), "thread");
    cr_expect_str_eq(json_string_value(json_object_get(o, "job")), "20261124-000000-0thread0");
    cr_expect(json_is_null(json_object_get(o, "chunk")));
    json_decref(o);

    o = parse_line(l3, (size_t)(end - l3), "say");
    cr_expect_str_eq(json_string_value(json_object_get(o, "message")), "vrctl: for a person");
    cr_expect_str_eq(json_string_value(json_object_get(o, "level")), "error");
    cr_expect(json_is_null(json_object_get(o, "job")));
    cr_expect(json_is_null(json_object_get(o, "worker")));
    json_decref(o);
}

/* Every control byte comes back as itself, and a message of 10 000 bytes
 * whole (lines were cut at 1024 bytes), in JSON and in text. */
static char long_msg[10001];

static void say_controls_and_long(void)
{
    char ctl[40];
    int k = 0;
    for (int c = 1; c < 0x20; c++)
        ctl[k++] = (char)c;
    ctl[k++] = 0x7f;
    ctl[k] = '\0';
    log_ctx_process("20261124-000000-deadbeef", 0);
    log_info("%s", ctl);
    log_info("%s", long_msg);
    log_say(LOG_WARN, "%s\n", long_msg);
    log_ctx_process(NULL, -1);
}

Test(common_log_json, control_bytes_and_long_messages_whole)
{
    static char out[65536];
    for (int i = 0; i < 10000; i++)
        long_msg[i] = (char)('a' + i % 26);
    long_msg[10000] = '\0';
    log_init("t-log");
    log_set_format("json");
    tcapture_stderr(say_controls_and_long, out, sizeof out);
    log_set_format("text");

    char *l1 = out, *l2 = strchr(l1, '\n');
    cr_assert(l2, "%.200s", out);
    char *l3 = strchr(++l2, '\n');
    cr_assert(l3, "%.200s", out);
    char *end = strchr(++l3, '\n');
    cr_assert(end && end[1] == '\0', "three lines wanted: %.300s", out);

    json_t *o = parse_line(l1, (size_t)(l2 - 1 - l1), "controls");
    const char *m = json_string_value(json_object_get(o, "message"));
    cr_assert_eq(strlen(m), 32, "%s", m);
    for (int c = 1; c < 0x20; c++)
        cr_expect_eq((unsigned char)m[c - 1], c, "byte %d", c);
    cr_expect_eq((unsigned char)m[31], 0x7f);
    cr_expect_eq(json_integer_value(json_object_get(o, "chunk")), 0, "chunk 0 is not null");
    json_decref(o);
    o = parse_line(l2, (size_t)(l3 - 1 - l2), "long");
    cr_expect_str_eq(json_string_value(json_object_get(o, "message")), long_msg);
    json_decref(o);
    o = parse_line(l3, (size_t)(end - l3), "long say");
    cr_expect_str_eq(json_string_value(json_object_get(o, "message")), long_msg);
    json_decref(o);

    tcapture_stderr(say_controls_and_long, out, sizeof out);
    cr_assert(strstr(out, long_msg), "the text line was cut");
}

/* ---- the three binaries on a real job ---- */

static struct tdist D;

static void teardown(void)
{
    tdist_stop(&D, 0);
}

struct seen {
    int lines, with_job, with_chunk, with_worker;
};

/* Every line of the file parses; counts those naming job `id`, a chunk, a worker. */
static struct seen check_file(const char *path, const char *id, const char *component)
{
    struct seen s = { 0 };
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    char line[16384];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        cr_assert(n > 0 && line[n - 1] == '\n', "%s: a line too long or cut", path);
        json_t *o = parse_line(line, n - 1, path);
        cr_expect_str_eq(json_string_value(json_object_get(o, "component")), component);
        const char *job = json_string_value(json_object_get(o, "job"));
        s.lines++;
        s.with_job += job && !strcmp(job, id);
        s.with_chunk += json_is_integer(json_object_get(o, "chunk"));
        s.with_worker += json_is_string(json_object_get(o, "worker"));
        json_decref(o);
    }
    fclose(f);
    return s;
}

Test(common_log_json, three_binaries_one_object_a_line, .fini = teardown, .timeout = 120)
{
    cr_assert_eq(tdist_start(&D, 0, 5, 0, 0), 0);
    char ctl_log[400], w_log[400], watch_log[400], in[400], out[400], id[64];
    snprintf(ctl_log, sizeof ctl_log, "%s/controller.log", D.r.dir);
    snprintf(w_log, sizeof w_log, "%s/worker.log", D.r.dir);
    snprintf(watch_log, sizeof watch_log, "%s/watch.log", D.r.dir);
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);

    /* the option before the command, after it, and with '=' */
    const char *ca[] = { "vr-controller", "--log-format", "json", "run", "--redis", D.r.url,
                         "--storage", D.storage, "--input-root", D.r.dir, "--output-root",
                         D.r.dir, "--lease-seconds", "5", NULL };
    D.ctl = tproc_spawn("vr-controller", ca, ctl_log);
    const char *wa[] = { "vr-worker", "serve", "--log-format=json", "--redis", D.r.url,
                         "--storage", D.storage, "--input-root", D.r.dir, "--cpu",
                         "--heartbeat-ms", "300", NULL };
    D.w[D.nw++] = tproc_spawn("vr-worker", wa, w_log);
    cr_assert(D.ctl > 0 && D.w[0] > 0);

    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    const char *va[] = { "vrctl", "watch", id, "--redis", D.r.url, "--log-format", "json", NULL };
    pid_t p = tproc_spawn("vrctl", va, watch_log);
    int rc = tproc_wait(p, 90000);
    if (rc != 0)
        tsh("tail -20 '%s' '%s' '%s' >&2", ctl_log, w_log, watch_log);
    cr_assert_eq(rc, 0, "watch exit %d", rc);

    /* the worker drains on SIGTERM and says so: its last lines too */
    kill(D.w[0], SIGTERM);
    cr_assert_eq(tproc_wait(D.w[0], 30000), 0);
    D.w[0] = 0;

    struct seen c = check_file(ctl_log, id, "vr-controller");
    struct seen w = check_file(w_log, id, "vr-worker");
    struct seen v = check_file(watch_log, id, "vrctl");
    cr_expect_gt(c.with_job, 0, "no controller line names job %s", id);
    cr_expect_gt(w.with_job, 0, "no worker line names job %s", id);
    cr_expect_gt(w.with_chunk, 0, "no worker line names a chunk");
    cr_expect_eq(w.with_worker, w.lines, "every serve line names the worker");
    cr_expect_gt(v.with_job, 0, "no vrctl watch line names job %s", id);
    /* the progress line has no bar in JSON, and "chunk 0 done" names chunk 0 */
    cr_expect_neq(tsh("grep -qE '\\[[#.]{5}' '%s'", watch_log), 0, "a bar in a JSON line");
    cr_expect_eq(tsh("grep -q '\"chunk\":0,.*chunk 0 done' '%s'", watch_log), 0,
                 "\"chunk 0 done\" without chunk 0");
}

Test(common_log_json, bad_format_is_bad_usage, .timeout = 30)
{
    const char *a[] = { "vrctl", "status", "--log-format", "yaml", NULL };
    cr_expect_eq(tproc_run("vrctl", a, NULL, 0), 2);
    const char *b[] = { "vr-worker", "info", "--log-format", NULL };
    cr_expect_eq(tproc_run("vr-worker", b, NULL, 0), 2);
}

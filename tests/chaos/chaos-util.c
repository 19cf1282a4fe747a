/*
 * chaos-util.c - the chaos suite's harness and end checks (chaos.h).
 */
#include "chaos.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct chaos CH;

void chaos_msleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

void chaos_teardown(void)
{
    rq_free(&CH.q);
    tdist_stop(&CH.d, 0);
}

static void chaos_show_log(void)
{
    tsh("tail -40 '%s' >&2", CH.d.log);
}

static void chaos_setenv(const char *name, int ms)
{
    char v[16];
    snprintf(v, sizeof v, "%d", ms);
    if (ms > 0)
        setenv(name, v, 1);
    else
        unsetenv(name);
}

pid_t chaos_worker(int frame_ms, int commit_ms)
{
    chaos_setenv("VR_TEST_FRAME_DELAY_MS", frame_ms);
    chaos_setenv("VR_TEST_COMMIT_DELAY_MS", commit_ms);
    pid_t p = tdist_worker(&CH.d);
    unsetenv("VR_TEST_FRAME_DELAY_MS");
    unsetenv("VR_TEST_COMMIT_DELAY_MS");
    cr_assert_gt(p, 0, "cannot start a worker");
    return p;
}

pid_t chaos_worker_replace(int slot, int frame_ms)
{
    cr_assert(slot >= 0 && slot < CH.d.nw, "no worker in slot %d", slot);
    chaos_kill9(&CH.d.w[slot]);
    int nw = CH.d.nw;
    CH.d.nw = slot; /* tdist_worker fills the next slot: this one */
    pid_t p = chaos_worker(frame_ms, 0);
    CH.d.nw = nw;
    return p;
}

pid_t chaos_controller_under(const char *const *prefix)
{
    /* tdist_controller always keeps the chunks: the defaults are built here */
    const char *keep = getenv("VR_CHAOS_KEEP_CHUNKS");
    char lease[32];
    snprintf(lease, sizeof lease, "%.2f", CH.d.lease_s);
    const char *argv[32] = { "vr-controller", "run", "--redis", CH.d.r.url, "--storage",
                             CH.d.storage, "--input-root", CH.d.r.dir, "--output-root",
                             CH.d.r.dir, "--lease-seconds", lease };
    int k = 12;
    if (keep && !strcmp(keep, "1"))
        argv[k++] = "--keep-chunks";
    for (int i = 0; i < 12 && CH.d.ctl_args[i]; i++)
        argv[k++] = CH.d.ctl_args[i];
    CH.d.ctl = tproc_spawn_under(prefix, "vr-controller", argv, CH.d.log);
    cr_assert_gt(CH.d.ctl, 0, "cannot start a controller");
    return CH.d.ctl;
}

pid_t chaos_controller(void)
{
    return chaos_controller_under(NULL);
}

void chaos_up(int aof, double lease_s, int workers, int frame_delay_ms, int hb_ms)
{
    cr_assert_eq(tdist_start(&CH.d, aof, lease_s, 0, 0), 0, "cannot start redis");
    chaos_controller();
    CH.d.hb_ms = hb_ms;
    for (int i = 0; i < workers; i++)
        chaos_worker(frame_delay_ms, 0);
    snprintf(CH.cfg, sizeof CH.cfg, "%s/lossless.json", CH.d.r.dir);
    cr_assert_eq(tsh("echo '{\"encoder\": \"ffv1\"}' > '%s'", CH.cfg), 0);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(CH.d.r.url, 2000, &CH.q, &e), 0, "%s", e.msg);
}

void chaos_reconnect(void)
{
    rq_free(&CH.q);
    vr_err e = { 0 };
    cr_assert_eq(rq_open(CH.d.r.url, 5000, &CH.q, &e), 0, "%s", e.msg);
}

const char *chaos_clip(const char *name, double seconds, int w)
{
    static char paths[4][400];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, 400, "%s/%s", CH.d.r.dir, name);
    cr_assert_eq(tclip_make(p, seconds, w, 10, 0), 0, "cannot make %s", p);
    return p;
}

void chaos_submit(const char *in, const char *outname, const char *const *extra, char *id,
                  char *out)
{
    const char *args[24] = { "-c", CH.cfg };
    int k = 2;
    for (int i = 0; extra && extra[i] && k < 23; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    snprintf(out, 400, "%s/%s", CH.d.r.dir, outname);
    int rc = tdist_submit(&CH.d, in, out, args, id, 64);
    cr_assert_eq(rc, 0, "submit of %s failed (%d)", in, rc);
}

void chaos_ref(const char *in, const char *refname, char *ref)
{
    snprintf(ref, 400, "%s/%s", CH.d.r.dir, refname);
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", "-c", CH.cfg,
                           in, "-o", ref, NULL };
    cr_assert_eq(tproc_run("vr-worker", argv, NULL, 0), 0, "the clean run of %s failed", in);
}

void chaos_hget(const char *key, const char *field, char *v, size_t n)
{
    v[0] = '\0';
    rq_hget(CH.q, key, field, v, n, NULL);
}

long long chaos_job_ll(const char *id, const char *field)
{
    char k[128], v[64];
    rq_key_job(k, sizeof k, id);
    chaos_hget(k, field, v, sizeof v);
    return atoll(v);
}

long long chaos_chunk_ll(const char *id, int idx, const char *field)
{
    char k[128], v[64];
    rq_key_chunk(k, sizeof k, id, idx);
    chaos_hget(k, field, v, sizeof v);
    return atoll(v);
}

static void chaos_wait_key(const char *key, const char *field, const char *want, long long min,
                           int timeout_ms)
{
    char v[256] = "";
    for (int t = 0; t <= timeout_ms; t += 20) {
        chaos_hget(key, field, v, sizeof v);
        if (want ? !strcmp(v, want) : (v[0] && atoll(v) >= min))
            return;
        chaos_msleep(20);
    }
    chaos_show_log();
    cr_assert_fail("%s %s is '%s' after %d ms (want %s)", key, field, v, timeout_ms,
                   want ? want : "a higher number");
}

void chaos_wait_chunk(const char *id, int idx, const char *field, const char *want, int timeout_ms)
{
    char k[128];
    rq_key_chunk(k, sizeof k, id, idx);
    chaos_wait_key(k, field, want, 0, timeout_ms);
}

void chaos_wait_job(const char *id, const char *field, const char *want, int timeout_ms)
{
    char k[128];
    rq_key_job(k, sizeof k, id);
    chaos_wait_key(k, field, want, 0, timeout_ms);
}

void chaos_wait_job_min(const char *id, const char *field, long long min, int timeout_ms)
{
    char k[128];
    rq_key_job(k, sizeof k, id);
    chaos_wait_key(k, field, NULL, min, timeout_ms);
}

void chaos_wait_file(const char *path, int timeout_ms)
{
    for (int t = 0; t <= timeout_ms; t += 10) {
        if (access(path, F_OK) == 0)
            return;
        chaos_msleep(10);
    }
    chaos_show_log();
    cr_assert_fail("%s did not appear within %d ms", path, timeout_ms);
}

int chaos_log_has(const char *needle, int timeout_ms)
{
    for (int t = 0;; t += 50) {
        if (tsh("grep -qF -- '%s' '%s'", needle, CH.d.log) == 0)
            return 1;
        if (t >= timeout_ms)
            return 0;
        chaos_msleep(50);
    }
}

void chaos_watch(const char *id, int want_rc, int timeout_ms)
{
    int rc = tdist_watch(&CH.d, id, timeout_ms);
    if (rc != want_rc)
        chaos_show_log();
    cr_assert_eq(rc, want_rc, "vrctl watch %s: exit %d, want %d", id, rc, want_rc);
}

int chaos_vrctl(char *out, size_t n, const char *const *args)
{
    return tdist_vrctl(&CH.d, out, n, args);
}

void chaos_kill9(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
    }
    *pid = 0;
}

void chaos_check_no_temps(const char *out, int timeout_ms)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    for (int t = 0;; t += 100) {
        /* the storage holds the output's directory's neighbours too: both */
        if (tsh("find '%s' '%s' -name '.*.tmp-*' | grep -q .", dir, CH.d.storage) != 0)
            return;
        if (t >= timeout_ms)
            break;
        chaos_msleep(100);
    }
    tsh("find '%s' '%s' -name '.*.tmp-*' >&2", dir, CH.d.storage);
    chaos_show_log();
    cr_assert_fail("temporary files left (above) %d ms after the job's end", timeout_ms);
}

int chaos_event_seen(const char *id, const char *msg, int timeout_ms)
{
    char ek[128];
    rq_key_events(ek, sizeof ek, id);
    for (int t = 0;; t += 20) {
        redisReply *r = rq_cmd(CH.q, NULL, "XRANGE %s - +", ek);
        int seen = tentries_with(r, "msg", msg) > 0;
        freeReplyObject(r);
        if (seen)
            return 1;
        if (t >= timeout_ms)
            return 0;
        chaos_msleep(20);
    }
}

const char *chaos_events(const char *id)
{
    static char buf[1 << 18];
    const char *args[] = { "events", id, NULL };
    cr_assert_eq(chaos_vrctl(buf, sizeof buf, args), 0, "vrctl events %s failed", id);
    return buf;
}

static int chaos_frames(const char *path)
{
    char b[64] = "";
    tsh_out(b, sizeof b, "ffprobe -v error -count_packets -select_streams v "
            "-show_entries stream=nb_read_packets -of csv=p=0 '%s'", path);
    return atoi(b);
}

/* md5 of every decoded frame of the video stream (lossless: the pixels). */
static void chaos_frames_md5(const char *path, char *out, size_t n)
{
    tsh_out(out, n, "ffmpeg -v error -i '%s' -map 0:v -f framemd5 - | grep -v '^#' | "
            "awk -F, '{print $NF}' | md5sum", path);
}

/* The commit script announces a chunk's `done` result once: no chunk of
 * the job has two in vr:results (trimming may drop some, never add; a
 * `dead` result before a retry is no commit) unless an `undone` result
 * (its output found missing or damaged, requeued) came between them. */
static void chaos_results_once(const char *id, long long total)
{
    static int seen[100000];
    memset(seen, 0, sizeof seen);
    redisReply *r = rq_cmd(CH.q, NULL, "XRANGE %s - +", RQ_RESULTS);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "cannot read %s", RQ_RESULTS);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *f = r->element[i]->element[1];
        const char *job = "", *kind = "";
        int idx = -1;
        for (size_t k = 0; k + 1 < f->elements; k += 2) {
            const char *name = f->element[k]->str, *v = f->element[k + 1]->str;
            if (!strcmp(name, "job"))
                job = v;
            else if (!strcmp(name, "idx"))
                idx = atoi(v);
            else if (!strcmp(name, "kind"))
                kind = v;
        }
        if (strcmp(job, id) || idx < 0 || idx >= total || idx >= 100000)
            continue;
        if (!strcmp(kind, "undone") && seen[idx] > 0)
            seen[idx]--;
        if (strcmp(kind, "done"))
            continue;
        cr_assert_eq(++seen[idx], 1, "chunk %d's done result was announced twice", idx);
    }
    freeReplyObject(r);
}

void chaos_check_done(const char *id, const char *in, const char *out, const char *ref)
{
    char jk[128], v[600];
    rq_key_job(jk, sizeof jk, id);
    chaos_hget(jk, "state", v, sizeof v);
    cr_assert_str_eq(v, "done", "job %s ended %s", id, v);
    chaos_hget(jk, "error", v, sizeof v);
    cr_assert_str_eq(v, "", "a done job carries an error: %s", v);
    long long total = chaos_job_ll(id, "chunks_total"), frames = chaos_job_ll(id, "frames_total");
    cr_assert_gt(total, 0);
    cr_assert_eq(chaos_job_ll(id, "chunks_done"), total, "lost or double-counted chunks");
    cr_assert_eq(chaos_job_ll(id, "frames_done"), frames, "lost or double-counted frames");
    long long sum = 0, slots = chaos_job_ll(id, "pieces"), present = 0;
    slots = slots > total ? slots : total; /* an elastic job's chunks: at their first piece */
    for (int i = 0; i < slots; i++) {
        char ck[128];
        rq_key_chunk(ck, sizeof ck, id, i);
        chaos_hget(ck, "state", v, sizeof v);
        if (!v[0] && slots > total)
            continue; /* a piece no chunk starts at */
        present++;
        cr_assert_str_eq(v, "done", "chunk %d is %s (lost)", i, v);
        long long commits = chaos_chunk_ll(id, i, "commits");
        cr_assert_eq(commits, 1, "chunk %d committed %lld times", i, commits);
        chaos_hget(ck, "error", v, sizeof v);
        cr_assert_str_eq(v, "", "chunk %d is done with a stale error: %s", i, v);
        /* a commit from an entry no start script counted (a zombie's after a
         * retry re-armed the chunk) left done chunks at attempts 0 */
        long long att = chaos_chunk_ll(id, i, "attempts");
        cr_assert_geq(att, 1, "chunk %d is done after %lld attempts", i, att);
        sum += chaos_chunk_ll(id, i, "frames");
    }
    cr_assert_eq(present, total, "%lld chunk records, chunks_total %lld", present, total);
    cr_assert_eq(sum, frames, "the chunks' frames add up to %lld of %lld", sum, frames);
    chaos_results_once(id, slots);
    int fin = chaos_frames(in), fout = chaos_frames(out);
    cr_assert_eq(fout, fin, "%s has %d frames, the source %d", out, fout, fin);
    char a[128], b[128];
    chaos_frames_md5(out, a, sizeof a);
    chaos_frames_md5(ref, b, sizeof b);
    cr_assert_str_eq(a, b, "%s differs from the clean run %s", out, ref);
    const char *ev = chaos_events(id);
    char want[500];
    snprintf(want, sizeof want, "done: %s", out);
    cr_assert(strstr(ev, want), "no '%s' event:\n%s", want, ev);
}

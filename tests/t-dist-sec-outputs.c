/*
 * t-dist-sec-outputs.c - an output replaces only what it may (issue 27,
 * findings 6 and 7; issue 28, item 11): a FIFO or a link to /dev/null at an
 * output's name is left alone (the commit refuses it too, for writers
 * checked nowhere else), a replaced file keeps its mode, `--metrics` and
 * `--trace` can neither be the input nor the matte, `report -o` never
 * replaces its job's video, an existing output needs -y, and a second
 * job submitted with the -o of one in flight is refused.
 */
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "storage.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_outputs, .fini = teardown, .timeout = 150);

static void rpath(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", D.r.dir, name);
}

static mode_t kind_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s is gone", path);
    return st.st_mode & S_IFMT;
}

static mode_t perms_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s is gone", path);
    return st.st_mode & 0777;
}

static void md5(const char *path, char *sum, size_t n)
{
    sum[0] = '\0';
    tsh_out(sum, n, "md5sum < '%s'", path);
    cr_assert(sum[0], "cannot read %s", path);
}

/* `vr-worker process --cpu --profile fast IN -o OUT [a b c d]`: its exit
 * status, its output in D.r.dir/process.log. */
static int process(const char *in, const char *out, const char *a, const char *b,
                   const char *c, const char *d)
{
    char log[400];
    rpath(log, sizeof log, "process.log");
    const char *argv[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", out,
                           a, b, c, d, NULL };
    return tproc_wait(tproc_spawn("vr-worker", argv, log), 90000);
}

static void log_says(const char *what)
{
    char log[400], text[16384];
    rpath(log, sizeof log, "process.log");
    tslurp(log, text, sizeof text);
    cr_assert(strstr(text, what), "no \"%s\" in: %s", what, text);
}

Test(dist_sec_outputs, the_commit_replaces_only_a_regular_file_and_keeps_its_mode)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char fifo[400], null_link[400], dir[400], priv[400];
    rpath(fifo, sizeof fifo, "fifo");
    rpath(null_link, sizeof null_link, "null");
    rpath(dir, sizeof dir, "dir");
    rpath(priv, sizeof priv, "private.json");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(symlink("/dev/null", null_link), 0);
    cr_assert_eq(mkdir(dir, 0700), 0);
    vr_err e = { 0 };
    cr_assert_eq(storage_write_atomic(fifo, "x", 1, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "a FIFO") && strstr(e.msg, "only a regular file"), "%s", e.msg);
    cr_assert_eq(kind_of(fifo), S_IFIFO);
    cr_assert_eq(storage_write_atomic(null_link, "x", 1, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "a character device"), "%s", e.msg);
    cr_assert_eq(kind_of("/dev/null"), S_IFCHR);
    cr_assert_eq(storage_write_atomic(dir, "x", 1, &e), VR_EINVAL);
    cr_assert(strstr(e.msg, "a directory"), "%s", e.msg);
    /* no temporary file is left beside them */
    cr_assert_eq(tsh("test -z \"$(ls -A '%s' | grep tmp-)\"", D.r.dir), 0);

    cr_assert_eq(storage_write_atomic(priv, "old", 3, &e), 0, "%s", e.msg);
    cr_assert_eq(chmod(priv, 0600), 0);
    cr_assert_eq(storage_write_atomic(priv, "new", 3, &e), 0, "%s", e.msg);
    cr_assert_eq(perms_of(priv), 0600, "a 0600 file became %o", perms_of(priv));
}

Test(dist_sec_outputs, process_outputs_are_never_an_input_or_each_other)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char in[400], out[400], hard[400], sum0[80], sum1[80];
    rpath(in, sizeof in, "a.mp4");
    rpath(out, sizeof out, "out.mkv");
    rpath(hard, sizeof hard, "hard.mp4");
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(link(in, hard), 0);
    md5(in, sum0, sizeof sum0);

    cr_assert_eq(process(in, out, "--metrics", in, NULL, NULL), 2);
    log_says("--metrics");
    cr_assert_eq(process(in, out, "-y", "--trace", hard, NULL), 2);
    log_says("is the input");
    cr_assert_eq(process(in, out, "--metrics", out, NULL, NULL), 2);
    log_says("are the same file");
    md5(in, sum1, sizeof sum1);
    cr_assert_str_eq(sum0, sum1, "the input changed");
    cr_assert_neq(access(out, F_OK), 0, "a refused run wrote %s", out);
}

Test(dist_sec_outputs, process_leaves_a_fifo_and_dev_null_alone)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char in[400], out[400], fifo[400], null_link[400];
    rpath(in, sizeof in, "a.mp4");
    rpath(out, sizeof out, "out.mkv");
    rpath(fifo, sizeof fifo, "fifo.mkv");
    rpath(null_link, sizeof null_link, "null.json");
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(symlink("/dev/null", null_link), 0);
    cr_assert_eq(process(in, fifo, "-y", NULL, NULL, NULL), 2);
    log_says("a FIFO");
    cr_assert_eq(kind_of(fifo), S_IFIFO);
    cr_assert_eq(process(in, out, "-y", "--trace", null_link, NULL), 2);
    log_says("a character device");
    cr_assert_eq(kind_of("/dev/null"), S_IFCHR);
}

Test(dist_sec_outputs, an_existing_output_needs_y_and_keeps_its_mode)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char in[400], out[400], met[400], sum0[80], sum1[80];
    rpath(in, sizeof in, "a.mp4");
    rpath(out, sizeof out, "out.mkv");
    rpath(met, sizeof met, "m.json");
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("echo keep > '%s'; echo keep > '%s'; chmod 600 '%s'", out, met, met), 0);
    md5(out, sum0, sizeof sum0);
    /* the default (and -n) refuses before any work */
    cr_assert_eq(process(in, out, NULL, NULL, NULL, NULL), 2);
    log_says("exists (-y replaces it)");
    cr_assert_eq(process(in, out, "-n", NULL, NULL, NULL), 2);
    md5(out, sum1, sizeof sum1);
    cr_assert_str_eq(sum0, sum1, "refused, yet %s changed", out);
    cr_assert_eq(process(in, out, "-y", "--metrics", met, NULL), 0);
    md5(out, sum1, sizeof sum1);
    cr_assert_str_neq(sum0, sum1, "-y did not replace %s", out);
    cr_assert_eq(perms_of(met), 0600, "--metrics made a 0600 file %o", perms_of(met));
}

/* A job record whose spec names in and out, as a finished job's does. */
static void job_of(const char *in, const char *out, char *id, size_t n)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s", out);
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    char *spec = NULL;
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_submit(Q, js.id, spec, js.created_ms, 10, 0, &e), 0, "%s", e.msg);
    free(spec);
    snprintf(id, n, "%s", js.id);
}

static int report(const char *id, const char *out, const char *yes)
{
    char log[400];
    rpath(log, sizeof log, "process.log");
    const char *argv[] = { "vrctl", "report", id, "-o", out, "--redis", D.r.url, yes, NULL };
    return tproc_wait(tproc_spawn("vrctl", argv, log), 30000);
}

Test(dist_sec_outputs, report_never_replaces_its_jobs_video_or_a_device)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char in[400], out[400], alias[400], page[400], null_link[400], id[64], sum0[80], sum1[80];
    rpath(in, sizeof in, "in.mp4");
    rpath(out, sizeof out, "out.mkv");
    rpath(alias, sizeof alias, "alias.mp4");
    rpath(page, sizeof page, "page.html");
    rpath(null_link, sizeof null_link, "null.html");
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tsh("cp '%s' '%s'", in, out), 0);
    cr_assert_eq(symlink(in, alias), 0);
    cr_assert_eq(symlink("/dev/null", null_link), 0);
    job_of(in, out, id, sizeof id);
    md5(in, sum0, sizeof sum0);

    cr_assert_eq(report(id, alias, "-y"), 2);
    log_says("is the job's input");
    cr_assert_eq(report(id, out, "-y"), 2);
    log_says("is the job's output");
    cr_assert_eq(report(id, null_link, "-y"), 2);
    log_says("a character device");
    cr_assert_eq(kind_of("/dev/null"), S_IFCHR);
    md5(in, sum1, sizeof sum1);
    cr_assert_str_eq(sum0, sum1, "the job's input changed");

    cr_assert_eq(report(id, page, NULL), 0);
    cr_assert_eq(chmod(page, 0600), 0);
    cr_assert_eq(report(id, page, NULL), 2);
    log_says("exists (-y replaces it)");
    cr_assert_eq(report(id, page, "-y"), 0);
    cr_assert_eq(perms_of(page), 0600, "report -o made a 0600 file %o", perms_of(page));
}

Test(dist_sec_outputs, a_second_job_with_the_same_output_is_refused_while_one_is_in_flight)
{
    /* no controller: the first job stays queued, in flight */
    cr_assert_eq(tdist_start(&D, 0, 30, 0, 0), 0);
    char in[400], out[400], other[400], id1[64], id2[64], log[400];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(other, sizeof other, "%s/other.mkv", D.r.dir);
    rpath(log, sizeof log, "process.log");
    cr_assert_eq(tclip_make(in, 1, 96, 5, 0), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id1, sizeof id1), 0);
    const char *argv[] = { "vrctl", "submit", in, "-o", out, "--redis", D.r.url, NULL };
    cr_assert_eq(tproc_wait(tproc_spawn("vrctl", argv, log), 30000), 1);
    log_says("still in flight");
    log_says(id1);
    /* another output is fine; once the first has ended, so is its output */
    cr_assert_eq(tdist_submit(&D, in, other, NULL, id2, sizeof id2), 0);
    const char *cancel[] = { "cancel", id1, NULL };
    char text[256];
    cr_assert_eq(tdist_vrctl(&D, text, sizeof text, cancel), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id2, sizeof id2), 0);
}

/*
 * t-dist-sec-paths.c - the controller and the workers are nobody's root shell
 * (issue 13, items 1, 2, 3, 5): a job's input and output must lie under the
 * controller's --input-root / --output-root (a spec from `vrctl submit` run
 * as nobody, or put straight into Redis with "..", or naming /etc/passwd,
 * fails with a message naming the root and option, and creates nothing);
 * a link planted at the stitch's old temporary name, or at a temp file's
 * name after its creation, is not written through; a chunk task naming
 * another job's out/ and a link inside the storage pointing out of it are
 * refused by the worker, whose messages keep the storage's names; `vr-worker process IN -o IN` refuses to destroy
 * its source. common/beneath's open is checked on both of its ways.
 */
#define _GNU_SOURCE
#include "beneath.h"
#include "job.h"
#include "rq.h"
#include "rq_jobs.h"
#include "storage.h"
#include "util-redis.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tdist D;
static struct rq *Q;

static void teardown(void)
{
    rq_free(&Q);
    tdist_stop(&D, 0);
}

TestSuite(dist_sec_paths, .fini = teardown, .timeout = 150);

static void connect_q(void)
{
    vr_err e = { 0 };
    cr_assert_eq(rq_open(D.r.url, 2000, &Q, &e), 0, "%s", e.msg);
}

/* Waits until job id's state is `want`; its error into err (n bytes). */
static void wait_state(const char *id, const char *want, char *err, size_t n, int timeout_ms)
{
    char key[128], v[64] = "";
    rq_key_job(key, sizeof key, id);
    for (int t = 0; t < timeout_ms; t += 20) {
        if (rq_hget(Q, key, "state", v, sizeof v, NULL) > 0 && !strcmp(v, want)) {
            if (err && rq_hget(Q, key, "error", err, n, NULL) <= 0)
                err[0] = '\0';
            return;
        }
        tmsleep(20);
    }
    tsh("tail -30 '%s' >&2", D.log);
    cr_assert_fail("job %s is '%s', not %s, after %d ms", id, v, want, timeout_ms);
}

/* Records a job with this input and output straight into Redis, as anyone
 * who can write Redis could, without vrctl's checks. */
static void submit_raw(const char *in, const char *out, char *id, size_t n)
{
    struct job_spec js;
    job_spec_defaults(&js);
    snprintf(js.input, sizeof js.input, "%s", in);
    snprintf(js.output, sizeof js.output, "%s", out);
    snprintf(js.profile, sizeof js.profile, "fast");
    js.chunk_seconds = 1;
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    char *spec = NULL;
    vr_err e = { 0 };
    cr_assert_eq(job_spec_to_json(&js, &spec, &e), 0, "%s", e.msg);
    cr_assert_eq(rq_job_submit(Q, js.id, spec, js.created_ms, 10, 0, &e), 0, "%s", e.msg);
    free(spec);
    snprintf(id, n, "%s", js.id);
}

/* Runs $VR_BIN_DIR/<bin> argv as nobody when the test runs as root (as
 * itself otherwise); returns its exit status. */
static int run_as_nobody(const char *bin, const char *const *argv)
{
    pid_t p = fork();
    if (p == 0) {
        int fd = open(D.log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
            _exit(127);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", getenv("VR_BIN_DIR"), bin);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* ---- the controller's roots ---- */

Test(dist_sec_paths, controller_refuses_paths_outside_its_roots)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    connect_q();
    char in[400], id[64], err[512];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    /* nobody may reach the clip and the Redis socket, as a user would */
    tsh("chmod 0755 '%s'; chmod 0777 '%s'", D.r.dir, D.r.sock);

    /* 1. vrctl submit, as nobody, of an output in /etc */
    const char *etc = "/etc/written-by-nobody.mkv";
    unlink(etc);
    const char *argv[] = { "vrctl", "submit", in, "-o", etc, "--profile", "fast", "--redis",
                           D.r.url, "--wait", NULL };
    cr_assert_eq(run_as_nobody("vrctl", argv), 1, "the job must fail");
    cr_assert(!exists(etc), "%s was created", etc);
    char status[4096];
    const char *sargs[] = { "status", "--json", NULL };
    tdist_vrctl(&D, status, sizeof status, sargs);
    cr_assert(strstr(status, "outside the output root") && strstr(status, "--output-root"),
              "%s", status);

    /* 2. ".." through the storage root, straight into Redis */
    char out[600], outside[400];
    snprintf(out, sizeof out, "%s/../OUTSIDE2/../dd.mkv", D.storage);
    snprintf(outside, sizeof outside, "%s/OUTSIDE2", D.r.dir);
    submit_raw(in, out, id, sizeof id);
    wait_state(id, "failed", err, sizeof err, 20000);
    cr_assert(strstr(err, "'..'") && strstr(err, "--output-root"), "%s", err);
    cr_assert(!exists(outside), "%s was created", outside);

    /* 3. an input outside the input root */
    snprintf(out, sizeof out, "%s/passwd.mkv", D.r.dir);
    submit_raw("/etc/passwd", out, id, sizeof id);
    wait_state(id, "failed", err, sizeof err, 20000);
    cr_assert(strstr(err, "/etc/passwd is outside the input root") &&
              strstr(err, "--input-root"), "%s", err);
    cr_assert(!exists(out));

    /* 4. a link inside the input root pointing out of it */
    char link[400];
    snprintf(link, sizeof link, "%s/link.mp4", D.r.dir);
    cr_assert_eq(symlink("/etc/passwd", link), 0);
    submit_raw(link, out, id, sizeof id);
    wait_state(id, "failed", err, sizeof err, 20000);
    cr_assert(strstr(err, "symbolic link"), "%s", err);
    char jobdir[600];
    snprintf(jobdir, sizeof jobdir, "%s/jobs/%s", D.storage, id);
    cr_assert(!exists(jobdir), "a refused job left %s", jobdir);
}

/* ---- temporary files ---- */

Test(dist_sec_paths, a_link_at_the_temp_name_is_not_written_through)
{
    /* the mechanism: storage_temp's descriptor reopened by its
     * /proc/self/fd name, after its name was swapped for a link */
    char dir[] = "/tmp/vr-sec-tmp-XXXXXX";
    cr_assert(mkdtemp(dir));
    char victim[400], out[400], tmp[STORAGE_PATH_MAX], fdp[BENEATH_FD_PATH_MAX];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(out, sizeof out, "%s/out.mkv", dir);
    int v = open(victim, O_WRONLY | O_CREAT, 0600);
    cr_assert(v >= 0 && write(v, "secret", 6) == 6);
    close(v);
    int fd;
    vr_err e = { 0 };
    cr_assert_eq(storage_temp(out, tmp, sizeof tmp, &fd, &e), 0, "%s", e.msg);
    unlink(tmp);
    cr_assert_eq(symlink(victim, tmp), 0);
    beneath_fd_path(fd, NULL, fdp, sizeof fdp);
    int w = open(fdp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(w >= 0 && write(w, "matte", 5) == 5);
    close(w);
    close(fd);
    char got[16] = "";
    FILE *f = fopen(victim, "r");
    cr_assert(f && fread(got, 1, sizeof got - 1, f) == 6);
    fclose(f);
    cr_assert_str_eq(got, "secret");
    tsh("rm -rf '%s'", dir);

    /* a whole job with links planted at <out>.part (the old stitch's
     * name) and at out.mkv's directory entries: the root-owned 0600 file
     * they point at is unchanged, the output is a new regular file */
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 1), 0);
    connect_q();
    char in[400], part[500], id[64];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    snprintf(part, sizeof part, "%s.part", out);
    snprintf(victim, sizeof victim, "%s/victim", D.r.dir);
    cr_assert_eq(tclip_make(in, 2, 160, 5, 0), 0);
    v = open(victim, O_WRONLY | O_CREAT, 0600);
    cr_assert(v >= 0 && write(v, "secret", 6) == 6);
    close(v);
    cr_assert_eq(symlink(victim, part), 0);
    cr_assert_eq(tdist_submit(&D, in, out, NULL, id, sizeof id), 0);
    wait_state(id, "done", NULL, 0, 90000);
    struct stat st;
    cr_assert_eq(stat(victim, &st), 0);
    cr_assert_eq(st.st_size, 6, "the link's target was written");
    cr_assert_eq(lstat(out, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
}

/* ---- the workers' tasks ---- */

Test(dist_sec_paths, worker_refuses_other_jobs_files_and_links_out_of_storage)
{
    /* a controller and no worker yet: the chunks wait in the queue. Three
     * jobs, one bad chunk each: a refused chunk is a permanent error that
     * fails its job at once, and the job's other chunks are then skipped */
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    connect_q();
    char in[400], out[3][400], id[3][64], other[64], err[512];
    snprintf(in, sizeof in, "%s/in.mp4", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    for (int j = 0; j < 3; j++) {
        snprintf(out[j], sizeof out[j], "%s/out%d.mkv", D.r.dir, j);
        /* chunk files (--chunking copy): their paths are what is attacked */
        const char *copy[] = { "--chunking", "copy", NULL };
        cr_assert_eq(tdist_submit(&D, in, out[j], copy, id[j], sizeof id[j]), 0);
        wait_state(id[j], "running", NULL, 0, 30000);
    }
    snprintf(other, sizeof other, "otherjob");

    /* job 0's chunk 0: its task rewritten to write into another job's out/ */
    char ck[128], task[4096];
    rq_key_chunk(ck, sizeof ck, id[0], 0);
    cr_assert(rq_hget(Q, ck, "task", task, sizeof task, NULL) > 0);
    char from[128], to[128], *p;
    snprintf(from, sizeof from, "jobs/%s/out/", id[0]);
    snprintf(to, sizeof to, "jobs/%s/out/", other);
    cr_assert((p = strstr(task, from)));
    char hijacked[4096];
    snprintf(hijacked, sizeof hijacked, "%.*s%s%s", (int)(p - task), task, to, p + strlen(from));
    cr_assert_eq(tsh("redis-cli -s '%s' HSET '%s' task '%s' >/dev/null", D.r.sock, ck, hijacked),
                 0);

    /* job 1's chunk 1: its input moved out of the storage root, a link left
     * in its place: followed, the chunk would succeed */
    char in1[600], outside[400];
    snprintf(in1, sizeof in1, "%s/jobs/%s/in/00001.mkv", D.storage, id[1]);
    snprintf(outside, sizeof outside, "%s/outside.mkv", D.r.dir);
    cr_assert_eq(tsh("mv '%s' '%s' && ln -s '%s' '%s'", in1, outside, outside, in1), 0);

    /* and job 2's chunk 2 garbage: its failure reads with the storage's
     * names, not the /proc/self/fd ones the decoder was given */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/jobs/%s/in/00002.mkv", D.storage, id[2]);
    cr_assert_eq(tsh("head -c 20000 /dev/urandom > '%s'", bad), 0);

    cr_assert(tdist_worker(&D) > 0);
    char e[3][512] = { "", "", "" };
    for (int j = 0; j < 3; j++) {
        wait_state(id[j], "failed", err, sizeof err, 60000);
        rq_key_chunk(ck, sizeof ck, id[j], j);
        rq_hget(Q, ck, "error", e[j], sizeof e[j], NULL);
    }
    cr_assert(strstr(e[0], "touches only its own job's chunks"), "job 0 chunk 0: %s", e[0]);
    cr_assert(strstr(e[1], "symbolic link"), "job 1 chunk 1: %s", e[1]);
    char in2[600];
    snprintf(in2, sizeof in2, "%s/jobs/%s/in/00002.mkv", D.storage, id[2]);
    cr_assert(strstr(e[2], in2) && !strstr(e[2], "/proc/self/fd"), "job 2 chunk 2: %s", e[2]);
    char other_dir[600];
    snprintf(other_dir, sizeof other_dir, "%s/jobs/%s", D.storage, other);
    cr_assert(!exists(other_dir), "%s was created", other_dir);
    char out1[600];
    snprintf(out1, sizeof out1, "%s/jobs/%s/out/00001.mkv", D.storage, id[1]);
    cr_assert(!exists(out1), "chunk 1 was processed through the link");
}

/* ---- range tasks: the source read in place ---- */

/* A controller, no worker, and one job over a fresh clip in the temp dir
 * (under the controller's --input-root), chunked as ranges: its chunks
 * wait in the queue, naming the clip. */
static void range_job(const char *name, char *in, size_t in_n, char *id, size_t id_n)
{
    cr_assert_eq(tdist_start(&D, 0, 30, 1, 0), 0);
    connect_q();
    char out[400], key[128], chunking[16] = "";
    snprintf(in, in_n, "%s/%s", D.r.dir, name);
    snprintf(out, sizeof out, "%s/out.mkv", D.r.dir);
    cr_assert_eq(tclip_make(in, 3, 160, 5, 0), 0);
    const char *range[] = { "--chunking", "range", NULL };
    cr_assert_eq(tdist_submit(&D, in, out, range, id, id_n), 0);
    wait_state(id, "running", NULL, 0, 30000);
    rq_key_job(key, sizeof key, id);
    rq_hget(Q, key, "chunking", chunking, sizeof chunking, NULL);
    cr_assert_str_eq(chunking, "range", "the job's chunks are not ranges");
    /* and vrctl status says so */
    char st[8192] = "";
    const char *sa[] = { "status", id, NULL };
    cr_assert_eq(tdist_vrctl(&D, st, sizeof st, sa), 0);
    cr_assert(strstr(st, "(chunks read in place: --chunking range)"), "status: %s", st);
    const char *sj[] = { "status", id, "--json", NULL };
    cr_assert_eq(tdist_vrctl(&D, st, sizeof st, sj), 0);
    cr_assert(strstr(st, "\"chunking\": \"range\""), "status --json: %s", st);
}

/* The error of job id's chunk 0 into e (n bytes). */
static void chunk0_error(const char *id, char *e, size_t n)
{
    char ck[128];
    e[0] = '\0';
    rq_key_chunk(ck, sizeof ck, id, 0);
    rq_hget(Q, ck, "error", e, n, NULL);
}

Test(dist_sec_paths, worker_refuses_a_range_source_outside_its_input_root)
{
    /* the help names the option */
    char help[8192] = "";
    const char *h[] = { "vr-worker", "serve", "--help", NULL };
    tproc_run("vr-worker", h, help, sizeof help);
    cr_assert(strstr(help, "--input-root DIR"), "serve --help: %s", help);

    char in[400], id[64], e[512], root[400], want[600];
    range_job("in.mp4", in, sizeof in, id, sizeof id);
    /* a worker whose input root is the storage alone: the clip lies beside
     * it. Its own environment, not the chunk's (issue 42, finding 2): the
     * chunk's error names the root, the fault is the worker's (faults, not
     * failures), the job goes on and the worker quarantines itself */
    snprintf(root, sizeof root, "%s", D.storage);
    const char *w[] = { "vr-worker", "serve", "--redis", D.r.url, "--storage", D.storage,
                        "--input-root", root, "--cpu", "--heartbeat-ms", "300", NULL };
    pid_t p = tproc_spawn("vr-worker", w, D.log);
    cr_assert_gt(p, 0);
    D.w[D.nw++] = p;
    char *real = realpath(root, NULL);
    cr_assert_not_null(real);
    snprintf(want, sizeof want, "chunk source %s is not under this worker's --input-root %s: "
             "give the worker that root, or submit the job with --chunking copy", in, real);
    free(real);
    char ck[128], faults[16] = "", failures[16] = "", state[32] = "";
    rq_key_chunk(ck, sizeof ck, id, 0);
    for (int t = 0; t < 30000; t += 100) {
        chunk0_error(id, e, sizeof e);
        rq_hget(Q, ck, "faults", faults, sizeof faults, NULL);
        if (strstr(e, want) && atoi(faults) >= 1)
            break;
        tmsleep(100);
    }
    cr_assert(strstr(e, want), "chunk 0: %s", e);
    cr_assert_geq(atoi(faults), 1, "the worker's blindness was not charged to it");
    rq_hget(Q, ck, "failures", failures, sizeof failures, NULL);
    cr_assert_eq(atoi(failures), 0, "the chunk's attempts were burned: failures %s", failures);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    rq_hget(Q, jk, "state", state, sizeof state, NULL);
    cr_assert_str_eq(state, "running", "a worker's blindness failed the job");
}

Test(dist_sec_paths, worker_refuses_a_range_source_with_dotdot)
{
    /* the task rewritten in Redis to name the same file through "..": it
     * resolves under the root, but names are checked, not resolved */
    char in[400], id[64], err[512], e[512], ck[128], task[8192], dotted[600];
    range_job("in.mp4", in, sizeof in, id, sizeof id);
    rq_key_chunk(ck, sizeof ck, id, 0);
    cr_assert(rq_hget(Q, ck, "task", task, sizeof task, NULL) > 0);
    char *p = strstr(task, in);
    cr_assert(p, "task has no source %s: %s", in, task);
    snprintf(dotted, sizeof dotted, "%s/storage/../in.mp4", D.r.dir);
    char hijacked[8192];
    snprintf(hijacked, sizeof hijacked, "%.*s%s%s", (int)(p - task), task, dotted,
             p + strlen(in));
    cr_assert_eq(tsh("redis-cli -s '%s' HSET '%s' task '%s' >/dev/null", D.r.sock, ck, hijacked),
                 0);
    cr_assert_gt(tdist_worker(&D), 0);
    wait_state(id, "failed", err, sizeof err, 60000);
    chunk0_error(id, e, sizeof e);
    cr_assert(strstr(e, dotted) && strstr(e, "not an absolute path without '..'"),
              "chunk 0: %s", e);
}

Test(dist_sec_paths, worker_refuses_a_source_changed_since_planning)
{
    char in[400], id[64], err[512], e[512];
    range_job("in.mp4", in, sizeof in, id, sizeof id);
    /* the source grows after the plan (same inode, new size and mtime):
     * its packets are no longer where the plan put them */
    cr_assert_eq(tsh("printf 'more' >> '%s'", in), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    wait_state(id, "failed", err, sizeof err, 60000);
    chunk0_error(id, e, sizeof e);
    char want[600];
    snprintf(want, sizeof want, "source %s changed since the job was planned", in);
    cr_assert(strstr(e, want) && strstr(e, "resubmit the job"), "chunk 0: %s", e);
    cr_assert(strstr(err, "changed since the job was planned"), "job: %s", err);
}

Test(dist_sec_paths, worker_does_not_follow_a_link_at_a_range_source)
{
    /* the source replaced by a link to a copy of itself outside the root:
     * followed, the fingerprint would not even be asked (a new inode), so
     * the refusal must be the link's */
    char in[400], id[64], err[512], e[512], outside[400];
    range_job("in.mp4", in, sizeof in, id, sizeof id);
    snprintf(outside, sizeof outside, "/tmp/vrseg-h3-outside-%d.mp4", (int)getpid());
    cr_assert_eq(tsh("mv '%s' '%s' && ln -s '%s' '%s'", in, outside, outside, in), 0);
    cr_assert_gt(tdist_worker(&D), 0);
    wait_state(id, "failed", err, sizeof err, 60000);
    unlink(outside);
    chunk0_error(id, e, sizeof e);
    cr_assert(strstr(e, "symbolic link") && strstr(e, in), "chunk 0: %s", e);
}

/* ---- vr-worker process ---- */

Test(dist_sec_paths, process_refuses_to_overwrite_its_input)
{
    cr_assert_eq(tredis_start(&D.r, 0), 0);
    char m[300], in[400], alias[500], sum0[80] = "", sum1[80] = "";
    snprintf(m, sizeof m, "%s/m", D.r.dir);
    snprintf(in, sizeof in, "%s/x.mp4", m);
    snprintf(alias, sizeof alias, "%s/../m/./x.mp4", m);
    cr_assert_eq(tsh("mkdir -p '%s'", m), 0);
    cr_assert_eq(tclip_make(in, 1, 160, 5, 0), 0);
    tsh_out(sum0, sizeof sum0, "md5sum < '%s'", in);
    const char *same[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o", in,
                           NULL };
    cr_assert_eq(tproc_run("vr-worker", same, NULL, 0), 2);
    const char *dotted[] = { "vr-worker", "process", "--cpu", "--profile", "fast", in, "-o",
                             alias, NULL };
    cr_assert_eq(tproc_run("vr-worker", dotted, NULL, 0), 2);
    tsh_out(sum1, sizeof sum1, "md5sum < '%s'", in);
    cr_assert_str_eq(sum0, sum1, "the source changed");
    cr_assert(sum0[0]);
}

/* ---- common/beneath ---- */

Test(dist_sec_paths, open_beneath_refuses_links_and_dotdot_both_ways)
{
    char dir[] = "/tmp/vr-sec-beneath-XXXXXX";
    cr_assert(mkdtemp(dir));
    cr_assert_eq(tsh("cd '%s' && mkdir -p r/a o && echo x > r/a/f && echo s > o/secret && "
                     "ln -s ../../o r/a/up && ln -s f r/a/lf && ln -s a r/la", dir), 0);
    char root[300];
    snprintf(root, sizeof root, "%s/r", dir);
    int rfd = open(root, O_RDONLY | O_DIRECTORY);
    cr_assert(rfd >= 0);
    int (*ways[])(int, const char *, int, mode_t) = { beneath_open, beneath_open_walk };
    for (int w = 0; w < 2; w++) {
        int fd = ways[w](rfd, "a/f", O_RDONLY, 0);
        cr_assert(fd >= 0, "way %d: a/f: %s", w, strerror(-fd));
        close(fd);
        fd = ways[w](rfd, "./a//f", O_RDONLY, 0);
        cr_assert(fd >= 0, "way %d: ./a//f", w);
        close(fd);
        cr_assert_eq(ways[w](rfd, "a/up/secret", O_RDONLY, 0) < 0, 1, "way %d: link up", w);
        cr_assert_eq(ways[w](rfd, "a/lf", O_RDONLY, 0), -ELOOP, "way %d: final link", w);
        cr_assert_lt(ways[w](rfd, "la/f", O_RDONLY, 0), 0, "way %d: link as a dir", w);
        cr_assert_eq(ways[w](rfd, "a/../a/f", O_RDONLY, 0), -EXDEV, "way %d: ..", w);
        cr_assert_eq(ways[w](rfd, "/etc/passwd", O_RDONLY, 0), -EXDEV, "way %d: absolute", w);
        /* creating through a final link is refused, the target untouched */
        cr_assert_lt(ways[w](rfd, "a/lf", O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
    }
    int d = beneath_mkdirs(rfd, "a/new/deeper", 0755);
    cr_assert(d >= 0, "%s", strerror(-d));
    close(d);
    cr_assert_lt(beneath_mkdirs(rfd, "a/up/made", 0755), 0);
    char made[400];
    snprintf(made, sizeof made, "%s/o/made", dir);
    cr_assert(!exists(made));
    close(rfd);

    char rel[256];
    cr_assert_eq(beneath_rel("/srv/vr", "/srv/vr/a/./b.mkv", rel, sizeof rel), 0);
    cr_assert_str_eq(rel, "a/b.mkv");
    cr_assert_eq(beneath_rel("/srv/vr", "/srv/vr2/b.mkv", rel, sizeof rel), VR_ENOENT);
    cr_assert_eq(beneath_rel("/srv/vr", "/srv/vr/../x", rel, sizeof rel), VR_EINVAL);
    cr_assert_eq(beneath_rel("/srv/vr", "srv/vr/x", rel, sizeof rel), VR_EINVAL);
    cr_assert_eq(beneath_rel("/", "/etc/passwd", rel, sizeof rel), 0);
    cr_assert_str_eq(rel, "etc/passwd");

    vr_err e;
    vr_err_set(&e, VR_EIO, "cannot read /proc/self/fd/7: x; /proc/self/fd/71 stays");
    beneath_unmask(&e, 7, "/data/in.mp4");
    cr_assert_str_eq(e.msg, "cannot read /data/in.mp4: x; /proc/self/fd/71 stays");
    tsh("rm -rf '%s'", dir);
}

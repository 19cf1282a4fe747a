/*
 * t-common-storage-atomic.c - the one atomic-file helper (common/storage.h): a
 * committed file is whole and the temporary gone; an aborted one leaves
 * nothing; temporary names are fresh, hidden and recognisable; a link
 * planted where a predictable temporary name would be is never written
 * through; a failed commit leaves the old file as it was; the start-up
 * sweep removes only dead or old temporaries.
 */
#include "storage.h"
#include "util-video.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char D[256];

static void setup(void)
{
    tv_tmpdir(D, sizeof D);
}

static void teardown(void)
{
    tv_rmdir(D);
}

TestSuite(common_storage_atomic, .init = setup, .fini = teardown);

static void read_all(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = '\0';
    fclose(f);
}

Test(common_storage_atomic, commit_publishes_the_whole_file_and_removes_the_temp)
{
    char path[512], tmp[600], got[64];
    snprintf(path, sizeof path, "%s/out.json", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_write_atomic(path, "{\"a\":1}", 7, &e), 0, "%s", e.msg);
    read_all(path, got, sizeof got);
    cr_assert_str_eq(got, "{\"a\":1}");
    int fd;
    cr_assert_eq(storage_temp(path, tmp, sizeof tmp, &fd, &e), 0, "%s", e.msg);
    cr_assert(strstr(tmp, "/.out.json" STORAGE_TEMP_MARK), "temp name %s", tmp);
    cr_assert_eq(write(fd, "new", 3), 3);
    close(fd);
    read_all(path, got, sizeof got);
    cr_assert_str_eq(got, "{\"a\":1}", "the old file changed before the commit");
    cr_assert_eq(storage_commit(tmp, path, &e), 0, "%s", e.msg);
    read_all(path, got, sizeof got);
    cr_assert_str_eq(got, "new");
    cr_assert_neq(access(tmp, F_OK), 0, "the temp file stayed");
    cr_assert_eq(tv_count_entries(D), 1, "only the file remains");
}

Test(common_storage_atomic, abort_leaves_nothing_and_names_are_fresh)
{
    char path[512], a[600], b[600];
    snprintf(path, sizeof path, "%s/m.mkv", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_temp(path, a, sizeof a, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(storage_temp(path, b, sizeof b, NULL, &e), 0, "%s", e.msg);
    cr_assert_str_neq(a, b, "two temps of one file share a name");
    storage_abort(a);
    storage_abort(b);
    storage_abort("");
    storage_abort(NULL);
    cr_assert_eq(tv_count_entries(D), 0);
}

Test(common_storage_atomic, a_planted_link_is_not_written_through)
{
    char path[512], victim[512], link[600], got[64];
    snprintf(path, sizeof path, "%s/out.mkv", D);
    snprintf(victim, sizeof victim, "%s/victim", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_write_atomic(victim, "precious", 8, &e), 0);
    /* the names the old writers used: <out>.part, <out>.tmp.<pid> */
    snprintf(link, sizeof link, "%s.part", path);
    cr_assert_eq(symlink(victim, link), 0);
    snprintf(link, sizeof link, "%s.tmp.%d", path, (int)getpid());
    cr_assert_eq(symlink(victim, link), 0);
    cr_assert_eq(storage_write_atomic(path, "matte", 5, &e), 0, "%s", e.msg);
    read_all(victim, got, sizeof got);
    cr_assert_str_eq(got, "precious", "a link at a temp name was written through");
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
}

Test(common_storage_atomic, a_failed_commit_keeps_the_old_file)
{
    char path[512], tmp[600], got[64];
    snprintf(path, sizeof path, "%s/keep", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_write_atomic(path, "old", 3, &e), 0);
    snprintf(tmp, sizeof tmp, "%s/.keep" STORAGE_TEMP_MARK "gone", D);
    cr_assert_lt(storage_commit(tmp, path, &e), 0, "committing a missing temp succeeded");
    read_all(path, got, sizeof got);
    cr_assert_str_eq(got, "old");
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/f", D);
    cr_assert_eq(storage_write_atomic(nodir, "x", 1, &e), VR_ENOENT, "%s", e.msg);
}

/* Makes an empty file at D/rel with its mtime `age_s` seconds ago. */
static void leftover(const char *rel, double age_s)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", D, rel);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    fputs("partial", f);
    fclose(f);
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= (time_t)age_s;
    tv[1] = tv[0];
    cr_assert_eq(utimes(p, tv), 0);
}

static int exists(const char *rel)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", D, rel);
    return access(p, F_OK) == 0;
}

/* The owners whose lease lives, as Redis would say (the controller asks
 * rq_owner_live; here the storage rule alone): "c:alive" and "w:busy". */
static int owners_live(void *ctx, const char *owner)
{
    (void)ctx;
    if (!strcmp(owner, "c:redis-away"))
        return -1;
    return !strcmp(owner, "c:alive") || !strcmp(owner, "w:busy");
}

/* Leftovers of ENOSPC or kill -9: a temp whose owner's lease has lapsed is
 * removed, whatever its age or pid; a live owner's temp is kept however
 * old and whatever its pid (another host's, or a dead one here), and so is
 * a temp without an owner, one whose owner cannot be asked, finished
 * files and look-alikes (issue 42, finding 3: no local pid, no local
 * clock). */
Test(common_storage_atomic, sweep_removes_lapsed_owners_temps_only)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    cr_assert_gt(child, 0);
    waitpid(child, NULL, 0); /* now a pid with no process behind it */
    char p[600], lapsed[128], live_dead_pid[128], live_ancient[128], no_owner[128], away[128];
    snprintf(p, sizeof p, "%s/jobs/j1/out", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_mkdirs(p, &e), 0, "%s", e.msg);
    snprintf(lapsed, sizeof lapsed, "jobs/j1/out/.00002.mkv" STORAGE_TEMP_MARK
             "%d-0000abcd@w:gone:gpu0", (int)getpid());
    snprintf(live_dead_pid, sizeof live_dead_pid, "jobs/j1/out/.00003.mkv" STORAGE_TEMP_MARK
             "%d-0000abce@w:busy", (int)child);
    snprintf(live_ancient, sizeof live_ancient, "jobs/j1/.manifest.json" STORAGE_TEMP_MARK
             "%d-00001234@c:alive", (int)child);
    snprintf(no_owner, sizeof no_owner, "jobs/j1/out/.00004.mkv" STORAGE_TEMP_MARK "%d-0000abcf",
             (int)child);
    snprintf(away, sizeof away, "jobs/j1/out/.00006.mkv" STORAGE_TEMP_MARK
             "%d-0000abc0@c:redis-away", (int)child);
    leftover(lapsed, 0);
    leftover(live_dead_pid, 600);
    leftover(live_ancient, 7200 * 24);
    leftover(no_owner, 7200 * 24);
    leftover(away, 7200);
    leftover("jobs/j1/out/00001.mkv", 7200);                      /* a finished output */
    leftover("jobs/j1/out/.notes" STORAGE_TEMP_MARK "x@c:gone", 7200); /* not our name */
    leftover("jobs/j1/out/00005.mkv" STORAGE_TEMP_MARK "1-0000abcd@c:gone", 7200); /* not hidden */

    long long removed = -1;
    snprintf(p, sizeof p, "%s/jobs", D);
    cr_assert_eq(storage_sweep_temps(p, owners_live, NULL, &removed, &e), 0, "%s", e.msg);
    cr_assert_eq(removed, 1);
    cr_assert(!exists(lapsed), "a lapsed owner's temp was kept");
    cr_assert(exists(live_dead_pid), "a live owner's temp was removed for its pid");
    cr_assert(exists(live_ancient), "a live owner's temp was removed for its age");
    cr_assert(exists(no_owner), "a temp without an owner was removed");
    cr_assert(exists(away), "a temp whose owner could not be asked was removed");
    cr_assert(exists("jobs/j1/out/00001.mkv"));
    cr_assert(exists("jobs/j1/out/.notes" STORAGE_TEMP_MARK "x@c:gone"));
    cr_assert(exists("jobs/j1/out/00005.mkv" STORAGE_TEMP_MARK "1-0000abcd@c:gone"));

    /* A root with no jobs yet is not an error. */
    snprintf(p, sizeof p, "%s/nothing-here", D);
    cr_assert_eq(storage_sweep_temps(p, owners_live, NULL, &removed, &e), 0, "%s", e.msg);
    cr_assert_eq(removed, 0);
}

/* The same rule for one output's temps in a user's directory (the
 * controller's start-up sweep, issue 26): only names made from that
 * output are looked at; the output itself and other names stay. */
Test(common_storage_atomic, sweep_of_one_name_keeps_everything_else)
{
    char p[600], old[128], fresh[128], other[128];
    snprintf(p, sizeof p, "%s/videos", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_mkdirs(p, &e), 0, "%s", e.msg);
    snprintf(old, sizeof old, "videos/.out.mkv" STORAGE_TEMP_MARK "1-0000abcd@c:gone");
    snprintf(fresh, sizeof fresh, "videos/.out.mkv" STORAGE_TEMP_MARK "1-0000abce@c:alive");
    snprintf(other, sizeof other, "videos/.other.mkv" STORAGE_TEMP_MARK "1-0000abcf@c:gone");
    leftover(old, 0);
    leftover(fresh, 7200);
    leftover(other, 7200);
    leftover("videos/out.mkv", 7200);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(storage_sweep_temps_of(fd, p, "out.mkv", owners_live, NULL), 1);
    close(fd);
    cr_assert(!exists(old), "a lapsed owner's temp was kept");
    cr_assert(exists(fresh), "a live owner's temp was removed");
    cr_assert(exists(other), "another name's temp was removed");
    cr_assert(exists("videos/out.mkv"), "the output itself was removed");
}

/* A process that names itself an owner puts the tag in its temp names. */
Test(common_storage_atomic, temp_names_carry_the_owner)
{
    char path[600], tmp[700];
    snprintf(path, sizeof path, "%s/a.bin", D);
    vr_err e = { 0 };
    cr_assert_eq(storage_temp_owner_set("bad owner"), VR_EINVAL);
    cr_assert_eq(storage_temp_owner_set("w:host:gpu0"), 0);
    cr_assert_eq(storage_temp(path, tmp, sizeof tmp, NULL, &e), 0, "%s", e.msg);
    size_t n = strlen(tmp);
    cr_assert(n > 12 && !strcmp(tmp + n - 12, "@w:host:gpu0"), "%s", tmp);
    unlink(tmp);
}

/* A file in a directory that does not exist: the message names the file
 * asked for and its missing directory, not the temp name beside it
 * (`vrctl report -o /tmp/nonexist/r.html` said ".r.html.tmp-123-..."). */
Test(common_storage_atomic, missing_directory_named_not_the_temp_file)
{
    vr_err e = { 0 };
    const char *path = "/tmp/vrtest-no-such-dir-3f1c/r.html";
    cr_assert_eq(storage_write_atomic(path, "x", 1, &e), VR_ENOENT, "%s", e.msg);
    cr_assert(strstr(e.msg, path) && strstr(e.msg, "/tmp/vrtest-no-such-dir-3f1c does not exist"),
              "%s", e.msg);
    cr_assert_null(strstr(e.msg, STORAGE_TEMP_MARK), "%s", e.msg);
}

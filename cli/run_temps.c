/*
 * run_temps.c - vrctl run's temporary directories and their reaping (see
 * run_temps.h).
 */
#include "run_temps.h"

#include "log.h"
#include "storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_TEMP_OWNER "owner"

/* The start time of process pid (field 22 of /proc/PID/stat, clock ticks
 * since boot), or -1 when there is no such process. */
static long long proc_start_time(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the name (field 2) may hold spaces and ')': fields count from the last ')' */
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    long long v = -1;
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (field == 22 && sscanf(p, "%lld", &v) != 1)
        v = -1;
    return v;
}

int run_temp_make(char *dir, size_t n, vr_err *err)
{
    if (snprintf(dir, n, "%sXXXXXX", RUN_TEMP_PREFIX) >= (int)n)
        return vr_err_set(err, VR_EINVAL, "temp dir name too long");
    if (!mkdtemp(dir))
        return vr_err_set(err, VR_EIO, "cannot make a temp dir under /tmp: %s", strerror(errno));
    char path[256], text[64];
    snprintf(path, sizeof path, "%s/" RUN_TEMP_OWNER, dir);
    long pid = (long)getpid();
    int len = snprintf(text, sizeof text, "%ld %lld\n", pid, proc_start_time(pid));
    int rc = storage_write_atomic(path, text, (size_t)len, err);
    if (rc < 0)
        run_temp_remove(dir);
    return rc;
}

int run_temp_remove(const char *dir)
{
    if (strncmp(dir, RUN_TEMP_PREFIX, strlen(RUN_TEMP_PREFIX)) != 0 || strstr(dir, ".."))
        return VR_EIO;
    return storage_rmtree(dir);
}

/* 1 when dir's owner file names a process that is gone, 0 when it runs
 * or the file is missing or unreadable. */
static int run_temp_orphaned(const char *dir)
{
    char path[320], text[64] = "";
    snprintf(path, sizeof path, "%s/" RUN_TEMP_OWNER, dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    long pid;
    long long started;
    if (got <= 0 || (text[got] = '\0', sscanf(text, "%ld %lld", &pid, &started)) != 2 ||
        pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return 1;
    long long now = proc_start_time(pid);
    return now >= 0 && started >= 0 && now != started; /* the pid was reused */
}

int run_temps_reap(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return 0;
    const char *base = RUN_TEMP_PREFIX + strlen("/tmp/");
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, base, strlen(base)) != 0 || strchr(de->d_name, '/'))
            continue;
        char dir[300];
        struct stat st;
        snprintf(dir, sizeof dir, "/tmp/%s", de->d_name);
        /* only our own real directories: not a link, not another user's */
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            !run_temp_orphaned(dir))
            continue;
        if (run_temp_remove(dir) == 0) {
            log_say(LOG_INFO, "vrctl run: removed %s, left by a run that was killed\n", dir);
            removed++;
        }
    }
    closedir(d);
    return removed;
}

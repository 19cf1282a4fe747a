/*
 * run_temps.c - the reaping of vrctl run's work directories (see
 * run_temps.h).
 */
#include "run_temps.h"

#include "log.h"
#include "storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 1 when no run holds dir (run_workdir_open flocks dir/lock while it lives). */
static int run_temp_unheld(const char *dir)
{
    char path[320];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 1; /* no lock file: nothing holds it */
    int free_ = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return free_;
}

int run_temps_reap(void)
{
    const char *root = run_workdir_base();
    DIR *d = opendir(root);
    if (!d)
        return 0;
    const char *base = RUN_WORKDIR_NAME;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, base, strlen(base)) != 0 || strchr(de->d_name, '/'))
            continue;
        char dir[300];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", root, de->d_name);
        /* only our own real directories: not a link, not another user's */
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            time(NULL) - st.st_mtime < RUN_TEMP_KEEP_S || !run_temp_unheld(dir))
            continue;
        if (storage_rmtree(dir) == 0) {
            log_say(LOG_INFO, "vrctl run: removed %s, left by a run that was stopped and not "
                    "resumed within a day\n", dir);
            removed++;
        }
    }
    closedir(d);
    return removed;
}

/*
 * ctl_retain_dirs.c - retention of storage/jobs/<id> directories whose job
 * record Redis no longer holds (a FLUSHALL, a lost AOF tail, a purge that
 * died between the record and the directory: issue 42). Such a directory
 * has no job left to purge it, so it stayed for ever.
 *
 * An orphan's first sighting is kept in Redis (vr:orphan-dirs, rq_orphans.h, a hash of id
 * -> ms by Redis's clock), so a restarted controller, another controller or
 * one whose clock is skewed counts the same grace; it is removed once it
 * has been an orphan longer than the grace: --keep-jobs, or an hour when
 * --keep-jobs is 0 (a job record kept for ever says nothing about a
 * directory with none). The directory is written only after its record
 * (vrctl submit writes the record, the controller's split the directory),
 * and a worker may still write a chunk into it after a purge: the grace
 * and the directory's own mtime (not touched within the grace) cover both.
 * A record seen again clears the sighting.
 */
#include "ctl.h"

#include "beneath.h"
#include "job.h"
#include "log.h"
#include "rq_orphans.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CTL_ORPHAN_FLOOR_MS (3600LL * 1000) /* the grace when --keep-jobs is 0 */
#define CTL_ORPHAN_SCAN     1000            /* directories looked at a pass */

/* Looks at one entry of storage/jobs (open at jobs): 1 when removed. */
static int ctl_orphan_dir(struct ctl *c, int jobs, const char *id, long long grace_ms)
{
    struct stat st;
    if (!job_id_valid(id) || fstatat(jobs, id, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISDIR(st.st_mode))
        return 0; /* a link, a file or a stranger's name: not ours */
    int has = rq_job_exists(c->q, id);
    if (has != 0) {
        if (has > 0)
            rq_orphan_dir_forget(c->q, id);
        return 0;
    }
    long long seen, now;
    if (rq_orphan_dir_seen(c->q, id, &seen, &now) < 0 || now - seen < grace_ms)
        return 0;
    /* written within the grace (a worker's late chunk): not yet */
    if ((long long)time(NULL) * 1000 - (long long)st.st_mtime * 1000 < grace_ms)
        return 0;
    if (rq_job_exists(c->q, id) != 0) /* a record restored meanwhile */
        return 0;
    char fdp[BENEATH_FD_PATH_MAX + JOB_ID_MAX + 2];
    beneath_fd_path(jobs, id, fdp, sizeof fdp);
    if (storage_rmtree(fdp) < 0) {
        log_warn("retention: storage/jobs/%s has no job record but could not be removed", id);
        return 0;
    }
    rq_orphan_dir_forget(c->q, id);
    log_info("retention: storage/jobs/%s removed: no job record in Redis for %.0f s", id,
             (now - seen) / 1000.0);
    return 1;
}

void ctl_retain_orphan_dirs(struct ctl *c)
{
    long long grace = c->keep_jobs_ms > 0 ? c->keep_jobs_ms : CTL_ORPHAN_FLOOR_MS;
    int root = open(c->storage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return;
    int jobs = beneath_open(root, "jobs", O_RDONLY | O_DIRECTORY, 0);
    close(root);
    if (jobs < 0)
        return;
    int dup_fd = dup(jobs);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        close(jobs);
        return;
    }
    char (*ids)[JOB_ID_MAX + 1] = malloc(CTL_ORPHAN_SCAN * sizeof *ids);
    int n = 0, removed = 0;
    struct dirent *de;
    while (ids && n < CTL_ORPHAN_SCAN && (de = readdir(d)))
        if (strlen(de->d_name) <= JOB_ID_MAX && job_id_valid(de->d_name))
            snprintf(ids[n++], sizeof *ids, "%s", de->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        removed += ctl_orphan_dir(c, jobs, ids[i], grace);
    free(ids);
    close(jobs);
    if (removed)
        log_info("retention: %d job director%s without a job record removed", removed,
                 removed == 1 ? "y" : "ies");
}

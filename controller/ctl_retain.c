/*
 * ctl_retain.c - retention: a job that ended more than --keep-jobs ago
 * (7 days by default) leaves Redis (its record, events and chunk records:
 * rq_job_purge) and the storage root (storage/jobs/<id>). Run by the deep
 * audit. A noeviction Redis otherwise grows with every job ever run; a live
 * job is never touched, and a retried one counts from its new end.
 */
#include "ctl.h"

#include "job.h"
#include "log.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>

#define CTL_RETAIN_SCAN 1000 /* jobs looked at a pass, oldest first */

void ctl_retain(struct ctl *c)
{
    ctl_retain_orphan_dirs(c); /* directories whose record is gone (ctl_retain_dirs.c) */
    if (c->keep_jobs_ms <= 0)
        return;
    long long before = rq_now_ms() - c->keep_jobs_ms;
    char (*ids)[48] = malloc(CTL_RETAIN_SCAN * sizeof *ids);
    if (!ids)
        return;
    /* a job that ended before `before` was created before it too */
    int n = rq_jobs_created_before(c->q, before, ids, CTL_RETAIN_SCAN, NULL), purged = 0;
    for (int i = 0; i < n; i++) {
        vr_err e = { 0 };
        if (!job_id_valid(ids[i]) || rq_job_purge(c->q, ids[i], before, NULL, 0, &e) != 1)
            continue;
        char dir[STORAGE_PATH_MAX];
        ctl_jobfiles_dir(dir, sizeof dir, ids[i], NULL);
        char path[STORAGE_PATH_MAX];
        if (storage_path(c->storage, dir, path, sizeof path, NULL) == 0)
            storage_rmtree(path);
        purged++;
    }
    free(ids);
    if (purged)
        log_info("retention: %d job%s that ended over %.1f days ago purged (--keep-jobs)", purged,
                 purged == 1 ? "" : "s", c->keep_jobs_ms / 86400000.0);
}

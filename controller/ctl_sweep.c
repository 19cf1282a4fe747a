/*
 * ctl_sweep.c - the controller's start-up sweep of the users' output
 * directories. The storage sweep (ctl_run.c) covers <storage>/jobs; a
 * stitch writes its temporary output beside the job's output instead, and a
 * controller killed mid-stitch (or one before issue 26, finding 5, which
 * kept failed and cancelled jobs' stitch-ahead open) left it there for
 * good. Only the recent jobs' outputs are looked at, and in each directory
 * only the temporary names of that job's output: nothing else there is
 * this product's to touch. A temp goes only when its owner's lease has
 * lapsed in Redis (storage.h, "temporaries owned"): a stitch-ahead temp
 * waits untouched while a slow chunk runs, for minutes.
 */
#include "ctl.h"

#include "log.h"
#include "rq_fleet.h"
#include "rq_stats.h"

#include <stdlib.h>
#include <unistd.h>

#define CTL_SWEEP_JOBS 1000 /* the newest jobs whose output directories are swept */

int ctl_temp_owner_live(void *ctx, const char *owner)
{
    struct ctl *c = ctx;
    return rq_owner_live(c->q, owner);
}

long long ctl_sweep_outputs(struct ctl *c)
{
    char (*ids)[48] = malloc(CTL_SWEEP_JOBS * sizeof *ids);
    if (!ids)
        return 0;
    long long removed = 0;
    int n = rq_job_list(c->q, ids, CTL_SWEEP_JOBS, NULL);
    for (int i = 0; i < n; i++) {
        struct job_spec js;
        char dir[JOB_PATH_MAX], base[JOB_PATH_MAX];
        if (ctl_jobfiles_spec(c, ids[i], &js, NULL) < 0)
            continue;
        int fd = ctl_output_dir_open(c, &js, dir, sizeof dir, base, sizeof base);
        if (fd < 0)
            continue; /* outside the root, or gone: nothing of ours there */
        removed += storage_sweep_temps_of(fd, dir, base, ctl_temp_owner_live, c);
        close(fd);
    }
    free(ids);
    if (removed)
        log_info("output directories: %lld leftover temporary outputs removed", removed);
    return removed;
}

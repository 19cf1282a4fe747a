/*
 * ctl_results.c - one worker result (vr:results) in the controller: a
 * dead-lettered chunk fails its job with the chunk's last error; a done
 * chunk drops its copy-split input, is stitched ahead and may end its job.
 */
#include "ctl.h"

#include "log.h"
#include "rq_jobs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A committed chunk is never decoded again (a retry re-arms unfinished
 * chunks only, a re-stitch reads the outputs), so its copy of the source
 * goes at once: a job's storage then peaks at the chunks in flight plus the
 * outputs, not at a second copy of the whole source. A worker that lost its
 * lease and still reads the file keeps its open descriptor. --keep-chunks
 * keeps them all. */
static void ctl_chunk_drop_input(struct ctl *c, const char *job, int idx)
{
    char ck[128], state[16] = "", path[STORAGE_PATH_MAX];
    if (c->keep_chunks)
        return;
    rq_key_chunk(ck, sizeof ck, job, idx);
    if (rq_hget(c->q, ck, "state", state, sizeof state, NULL) <= 0 || strcmp(state, "done"))
        return;
    ctl_chunk_path(c, job, "in", idx, path, sizeof path);
    if (unlink(path) < 0 && errno != ENOENT)
        log_warn("job %s chunk %d: cannot remove its input %s: %s", job, idx, path,
                 strerror(errno));
}

int ctl_result(struct ctl *c, const char *job, int idx, const char *kind)
{
    if (strcmp(kind, "dead") == 0) {
        char ck[128], err[400] = "", att[16] = "?", perm[4] = "";
        rq_key_chunk(ck, sizeof ck, job, idx);
        rq_hget(c->q, ck, "error", err, sizeof err, NULL);
        rq_hget(c->q, ck, "attempts", att, sizeof att, NULL);
        rq_hget(c->q, ck, "permanent", perm, sizeof perm, NULL);
        char reason[512];
        if (!strcmp(perm, "1"))
            snprintf(reason, sizeof reason, "chunk %d failed with a permanent error (attempt %s, "
                     "not retried): %s", idx, att, err);
        else
            snprintf(reason, sizeof reason, "chunk %d failed %s times, dead-lettered: %s", idx,
                     att, err);
        return ctl_job_fail(c, job, reason);
    }
    rq_event(c->q, job, "chunk %d done", idx);
    ctl_chunk_drop_input(c, job, idx);
    ctl_stitch_progress(c, job);
    return ctl_job_finish(c, job);
}


/*
 * ctl_stitch.c - a running job's output is stitched while its chunks
 * finish: as soon as chunk 0 is done the controller opens the output (under
 * a temporary name) and appends each chunk that is done in order, so the
 * stitch after the last chunk has only the tail left to copy and check.
 *
 * It is a head start, not a second source of truth: ctl_job_finish takes
 * the stitcher over once it has claimed the job, and does the whole stitch
 * itself when there is none (another controller followed the job, this one
 * restarted, or an append failed). Nothing is published until the end
 * checks the file, so a stitcher dropped at any point leaves no output.
 */
#include "ctl.h"

#include "log.h"
#include "remux.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_MAX_STITCHES 32 /* jobs stitched ahead at once; more wait for their end */

struct ctl_stitch {
    char id[JOB_ID_MAX];
    struct remux_stitcher *s;
    struct job_spec js;
    struct ctl_paths files; /* the input and the output's directory it writes through */
    struct job_manifest man;
    int gave_up;            /* an append failed: the end stitches the whole job */
};

static struct ctl_stitch *ctl_stitch_find(struct ctl *c, const char *id)
{
    for (int i = 0; i < c->nstitches; i++)
        if (!strcmp(c->stitches[i].id, id))
            return &c->stitches[i];
    return NULL;
}

static void ctl_stitch_remove(struct ctl *c, struct ctl_stitch *t)
{
    remux_stitch_abort(&t->s);
    ctl_paths_close(&t->files);
    job_manifest_release(&t->man);
    *t = c->stitches[--c->nstitches];
}

void ctl_stitch_drop(struct ctl *c, const char *id)
{
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    if (t)
        ctl_stitch_remove(c, t);
}

void ctl_stitch_drop_all(struct ctl *c)
{
    while (c->nstitches > 0)
        ctl_stitch_remove(c, &c->stitches[0]);
    free(c->stitches);
    c->stitches = NULL;
}

/* 1 when chunk idx is done and its output is on the storage. */
static int ctl_chunk_ready(struct ctl *c, const char *id, int idx)
{
    char ck[128], state[16] = "", path[STORAGE_PATH_MAX];
    rq_key_chunk(ck, sizeof ck, id, idx);
    if (rq_hget(c->q, ck, "state", state, sizeof state, NULL) <= 0 || strcmp(state, "done"))
        return 0;
    ctl_chunk_path(c, id, "out", idx, path, sizeof path);
    return access(path, R_OK) == 0;
}

/* A new entry for a running job whose chunk 0 is done, with its stitcher
 * begun; NULL when it cannot start yet (or there is no room). */
static struct ctl_stitch *ctl_stitch_start(struct ctl *c, const char *id)
{
    char rel[256], mpath[STORAGE_PATH_MAX];
    if (c->nstitches >= CTL_MAX_STITCHES || !ctl_chunk_ready(c, id, 0))
        return NULL;
    if (!c->stitches && !(c->stitches = calloc(CTL_MAX_STITCHES, sizeof *c->stitches)))
        return NULL;
    struct ctl_stitch *t = &c->stitches[c->nstitches];
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", id);
    t->files.in = t->files.out_dir = -1;
    c->nstitches++;
    vr_err e = { 0 };
    ctl_job_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, mpath, sizeof mpath, NULL);
    int rc = ctl_job_spec(c, id, &t->js, &e);
    if (rc == 0)
        rc = job_manifest_read(mpath, &t->man, &e);
    if (rc == 0)
        rc = ctl_paths_open(c, &t->js, CTL_PATHS_OUTPUT, &t->files, &e);
    if (rc == 0)
        rc = ctl_stitch_chunk(c, id, 0, &t->s, &t->js, &t->man, &t->files, &e);
    if (rc < 0) {
        log_warn("job %s: cannot stitch ahead (%s); the whole stitch waits for the last chunk",
                 id, e.msg);
        ctl_paths_close(&t->files);
        t->gave_up = 1;
    }
    return t;
}

void ctl_stitch_progress(struct ctl *c, const char *id)
{
    char state[32] = "";
    if (rq_job_state(c->q, id, state, sizeof state, NULL) < 0)
        return;
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    if (strcmp(state, "running")) {
        if (t)
            ctl_stitch_remove(c, t);
        return;
    }
    if (!t && !(t = ctl_stitch_start(c, id)))
        return;
    while (!t->gave_up && remux_stitch_added(t->s) < t->man.nchunks) {
        int next = remux_stitch_added(t->s);
        if (!ctl_chunk_ready(c, id, next))
            return;
        vr_err e = { 0 };
        if (ctl_stitch_chunk(c, id, next, &t->s, &t->js, &t->man, &t->files, &e) < 0) {
            log_warn("job %s: stitching ahead stopped at chunk %d (%s); the whole stitch waits "
                     "for the last chunk", id, next, e.msg);
            remux_stitch_abort(&t->s);
            ctl_paths_close(&t->files);
            t->gave_up = 1;
        }
    }
}

struct remux_stitcher *ctl_stitch_take(struct ctl *c, const char *id, struct ctl_paths *files)
{
    files->in = files->out_dir = -1;
    struct ctl_stitch *t = ctl_stitch_find(c, id);
    if (!t)
        return NULL;
    struct remux_stitcher *s = t->gave_up ? NULL : t->s;
    t->s = NULL;
    if (s) {
        *files = t->files; /* the stitcher writes through its output directory */
        t->files.in = t->files.out_dir = -1;
    }
    ctl_stitch_remove(c, t);
    return s;
}

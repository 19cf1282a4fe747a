/*
 * ctl_jobfiles.c - what every step of a job in the controller shares: the
 * job's files under the storage root (its directory, its chunks, its
 * manifest), its spec read back from Redis, and failing it with a reason.
 * Nothing here calls into another step, so the steps (ctl_job.c, ctl_plan.c,
 * ctl_split.c, ctl_stitch.c, ctl_results.c) form no circle.
 */
#include "ctl.h"

#include "beneath.h"
#include "job.h"
#include "log.h"
#include "remux.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(REMUX_MAX_CHUNKS == JOB_MAX_CHUNKS, "a split must fit a job manifest");

/* ---- paths ---- */

void ctl_jobfiles_dir(char *buf, size_t n, const char *id, const char *sub)
{
    if (sub)
        snprintf(buf, n, "jobs/%s/%s", id, sub);
    else
        snprintf(buf, n, "jobs/%s", id);
}

/* Chunk i's file under the job's `sub` ("in" or "out"), relative to the
 * storage root: the split's own naming (remux_chunk_name). */
void ctl_chunk_rel(char *buf, size_t n, const char *id, const char *sub, int i)
{
    char dir[256];
    ctl_jobfiles_dir(dir, sizeof dir, id, sub);
    if (remux_chunk_name(dir, i, buf, n, NULL) < 0)
        buf[0] = '\0';
}

void ctl_chunk_path(struct ctl *c, const char *id, const char *sub, int i, char *buf, size_t n)
{
    char rel[256];
    ctl_chunk_rel(rel, sizeof rel, id, sub, i);
    storage_path(c->storage, rel, buf, n, NULL);
}

void ctl_manifest_path(struct ctl *c, const char *id, char *buf, size_t n)
{
    char rel[256];
    ctl_jobfiles_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, buf, n, NULL);
}

int ctl_manifest_write(struct ctl *c, const char *id, const struct job_manifest *man,
                       vr_err *err)
{
    /* written through jobs/<id> opened beneath the storage root: a link
     * swapped in for the job's directory meanwhile is not followed */
    char jrel[256], jdir[BENEATH_FD_PATH_MAX], mfd[BENEATH_FD_PATH_MAX + 16];
    char jreal[STORAGE_PATH_MAX];
    ctl_jobfiles_dir(jrel, sizeof jrel, id, NULL);
    storage_path(c->storage, jrel, jreal, sizeof jreal, NULL);
    int jfd = ctl_storage_open(c, jrel, 1, jdir, sizeof jdir, NULL, err);
    if (jfd < 0)
        return jfd;
    snprintf(mfd, sizeof mfd, "%s/manifest.json", jdir);
    int rc = job_manifest_write(mfd, man, err);
    beneath_unmask(err, jfd, jreal);
    close(jfd);
    return rc;
}

/* ---- the spec ---- */

int ctl_jobfiles_spec(struct ctl *c, const char *id, struct job_spec *js, vr_err *err)
{
    return ctl_jobfiles_spec_via(c->q, id, js, err);
}

int ctl_jobfiles_spec_via(struct rq *q, const char *id, struct job_spec *js, vr_err *err)
{
    char *text = malloc(JOB_MAX_JSON + 1);
    if (!text)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = rq_job_spec(q, id, text, JOB_MAX_JSON + 1, err);
    if (rc == 0)
        rc = vr_err_set(err, VR_EFORMAT, "job %s has no spec", id);
    if (rc > 0)
        rc = job_spec_parse(text, strlen(text), js, err);
    free(text);
    /* A spec copied under another key would send its chunks and output to
     * the other job's files. */
    if (rc >= 0 && strcmp(js->id, id))
        rc = vr_err_set(err, VR_EFORMAT, "job %s: its spec names another id, '%.64s'; refused",
                        id, js->id);
    return rc < 0 ? rc : 0;
}

/* ---- an ended job's chunk files ---- */

/* Removes storage/jobs/<id>/{in,out} (the chunks; the manifest stays). */
static void ctl_drop_chunks(struct ctl *c, const char *id)
{
    static const char *const subs[] = { "in", "out" };
    for (int i = 0; i < 2; i++) {
        char rel[256], dir[STORAGE_PATH_MAX];
        snprintf(rel, sizeof rel, "jobs/%.*s/%s", JOB_ID_MAX, id, subs[i]); /* = ctl_jobfiles_dir */
        storage_path(c->storage, rel, dir, sizeof dir, NULL);
        storage_rmtree(dir);
    }
}

void ctl_cleanup_due(struct ctl *c)
{
    char ids[64][48];
    int n = rq_cleanup_due(c->q, ids, 64, NULL);
    for (int i = 0; i < n; i++) {
        char state[32] = "";
        if (!job_id_valid(ids[i]) || rq_job_state(c->q, ids[i], state, sizeof state, NULL) < 0)
            continue;
        if (c->keep_chunks) { /* the chunks of every job stay, on a store too */
            rq_cleanup_forget(c->q, ids[i], NULL);
            continue;
        }
        if (!strcmp(state, "done")) /* a failed or cancelled job's stay for its retry */
            ctl_drop_chunks(c, ids[i]);
        if (c->storage_url[0] && job_state_ended(state))
            ctl_chunk_gc_post(c, ids[i]); /* off the loop; the entry goes once they are gone */
        else
            rq_cleanup_forget(c->q, ids[i], NULL);
    }
}

/* ---- failing ---- */

int ctl_jobfiles_fail(struct ctl *c, const char *id, long long token, const char *reason)
{
    vr_err e = { 0 };
    int rc = rq_job_fail(c->q, id, c->name, token, reason, &e);
    if (rc == 2) {
        log_warn("job %s: not failed by this controller (%s): another controller took it over "
                 "meanwhile", id, reason);
        return 0;
    }
    if (rc < 0) {
        log_warn("job %s: not failed by this controller (%s): Redis: %s", id, reason, e.msg);
        return e.code;
    }
    if (rc == 0) { /* it had ended already (a cancel, another failure, another's stitch) */
        char state[32] = "";
        rq_job_state(c->q, id, state, sizeof state, NULL);
        log_warn("job %s: not failed by this controller (%s): it had ended meanwhile (%s)", id,
                 reason, state[0] ? state : "gone");
        return 0;
    }
    log_error("job %s failed: %s", id, reason);
    rq_event(c->q, id, "failed: %s", reason);
    return 0;
}


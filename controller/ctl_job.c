/*
 * ctl_job.c - a job's life in the controller: split and enqueue, fail with a
 * reason, stitch and record the figures. Each step starts with an atomic
 * claim on the job's state, so two controllers never split or stitch the
 * same job, and a step a dead controller left half done is redone from the
 * manifest (idempotent: chunk records are created only once, outputs are
 * renamed into place).
 */
#include "ctl.h"

#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux.h"
#include "rq_jobs.h"
#include "rq_stats.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(REMUX_MAX_CHUNKS == JOB_MAX_CHUNKS, "a split must fit a job manifest");

void ctl_job_dir(char *buf, size_t n, const char *id, const char *sub)
{
    if (sub)
        snprintf(buf, n, "jobs/%s/%s", id, sub);
    else
        snprintf(buf, n, "jobs/%s", id);
}

/* Chunk i's file under the job's `sub` ("in" or "out"), relative to the
 * storage root: the split's own naming (remux_chunk_name). */
static void ctl_chunk_rel(char *buf, size_t n, const char *id, const char *sub, int i)
{
    char dir[256];
    ctl_job_dir(dir, sizeof dir, id, sub);
    if (remux_chunk_name(dir, i, buf, n, NULL) < 0)
        buf[0] = '\0';
}

static int ctl_spec(struct ctl *c, const char *id, struct job_spec *js, vr_err *err)
{
    char *text = malloc(JOB_MAX_JSON + 1);
    if (!text)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    int rc = rq_job_spec(c->q, id, text, JOB_MAX_JSON + 1, err);
    if (rc == 0)
        rc = vr_err_set(err, VR_EFORMAT, "job %s has no spec", id);
    if (rc > 0)
        rc = job_spec_parse(text, strlen(text), js, err);
    free(text);
    return rc < 0 ? rc : 0;
}

/* ---- failing ---- */

int ctl_job_fail(struct ctl *c, const char *id, const char *reason)
{
    vr_err e = { 0 };
    int rc = rq_job_fail(c->q, id, c->name, reason, &e);
    if (rc <= 0)
        return rc < 0 ? e.code : 0; /* it had ended already (a cancel, another failure) */
    log_error("job %s failed: %s", id, reason);
    rq_event(c->q, id, "failed: %s", reason);
    return 0;
}

/* ---- split + enqueue ---- */

int ctl_job_start(struct ctl *c, const char *id)
{
    vr_err e = { 0 };
    int rc = rq_job_claim(c->q, id, "queued", "splitting", c->name, &e);
    if (rc <= 0)
        return rc < 0 ? rc : 0;
    struct job_spec js;
    if ((rc = ctl_spec(c, id, &js, &e)) < 0) {
        if (rc == VR_EREDIS)
            return rc;
        return ctl_job_fail(c, id, e.msg);
    }
    char rel[256], indir[STORAGE_PATH_MAX], mpath[STORAGE_PATH_MAX], now[32];
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    rq_job_note(c->q, id, "started_ms", now, NULL);
    struct ctl_decision dec;
    if ((rc = ctl_job_decide(&js, &dec, &e)) < 0)
        return ctl_job_fail(c, id, e.msg);
    rq_job_note(c->q, id, "layout", dec.layout, NULL);
    log_info("job %s: layout %s (%s); %d frames of warm-up a chunk", id, dec.layout, dec.why,
             dec.warmup);
    ctl_job_dir(rel, sizeof rel, id, "in");
    storage_path(c->storage, rel, indir, sizeof indir, NULL);
    ctl_job_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, mpath, sizeof mpath, NULL);

    struct job_manifest man = { 0 };
    if (job_manifest_read(mpath, &man, NULL) == 0) {
        log_info("job %s: resuming from its manifest (%d chunks)", id, man.nchunks);
    } else {
        rq_event(c->q, id, "splitting %s into ~%.1f s chunks", js.input, js.chunk_seconds);
        struct stat st;
        if (stat(js.input, &st) < 0) {
            vr_err_set(&e, VR_ENOENT, "input %s: no such file (on this controller)", js.input);
            return ctl_job_fail(c, id, e.msg);
        }
        char jobdir[STORAGE_PATH_MAX];
        ctl_job_dir(rel, sizeof rel, id, NULL);
        storage_path(c->storage, rel, jobdir, sizeof jobdir, NULL);
        if ((rc = storage_mkdirs(jobdir, &e)) < 0 ||
            (rc = storage_check_space(jobdir, (uint64_t)st.st_size + (16 << 20), &e)) < 0)
            return ctl_job_fail(c, id, e.msg);
        double t0 = clock_mono_s();
        struct remux_split sp;
        if ((rc = remux_split(js.input, indir, js.chunk_seconds, dec.warmup, &sp, &e)) < 0) {
            vr_err_prefix(&e, "split");
            return ctl_job_fail(c, id, e.msg);
        }
        man.nchunks = sp.nchunks;
        man.frames = sp.frames;
        man.duration_s = sp.duration_s;
        man.split_s = clock_mono_s() - t0;
        man.chunk_frames = calloc((size_t)sp.nchunks, sizeof *man.chunk_frames);
        man.chunk_preroll = calloc((size_t)sp.nchunks, sizeof *man.chunk_preroll);
        man.chunk_warmup = calloc((size_t)sp.nchunks, sizeof *man.chunk_warmup);
        if (!man.chunk_frames || !man.chunk_preroll || !man.chunk_warmup) {
            remux_split_release(&sp);
            job_manifest_release(&man);
            return ctl_job_fail(c, id, "out of memory");
        }
        int prerolls = 0;
        for (int i = 0; i < sp.nchunks; i++) {
            man.chunk_frames[i] = sp.chunks[i].frames;
            man.chunk_preroll[i] = sp.chunks[i].preroll_frames ? sp.chunks[i].preroll_until : 0;
            man.chunk_warmup[i] = sp.chunks[i].preroll_frames && sp.chunks[i].warmup_from != INT64_MAX
                                      ? sp.chunks[i].warmup_from : -1;
            prerolls += sp.chunks[i].preroll_frames > 0;
        }
        if (prerolls)
            log_info("job %s: %d chunks start with the GOP before them as a pre-roll (%s)", id,
                     prerolls, dec.warmup ? "the temporal filter's warm-up" : "open-GOP references");
        remux_split_release(&sp);
        if ((rc = job_manifest_write(mpath, &man, &e)) < 0) {
            job_manifest_release(&man);
            return ctl_job_fail(c, id, e.msg);
        }
        log_info("job %s: %lld frames in %d chunks, split in %.2f s", id, man.frames,
                 man.nchunks, man.split_s);
    }
    for (int i = 0; i < man.nchunks; i++) {
        struct chunk_task t = { 0 };
        snprintf(t.job, sizeof t.job, "%s", id);
        t.idx = i;
        ctl_chunk_rel(t.in, sizeof t.in, id, "in", i);
        ctl_chunk_rel(t.out, sizeof t.out, id, "out", i);
        snprintf(t.profile, sizeof t.profile, "%s", js.profile);
        snprintf(t.output_kind, sizeof t.output_kind, "%s", js.output_kind);
        t.frames = man.chunk_frames[i];
        t.preroll_until = man.chunk_preroll[i];
        t.warmup_from = man.chunk_warmup[i] >= 0 ? man.chunk_warmup[i] : t.preroll_until;
        snprintf(t.layout, sizeof t.layout, "%s", dec.layout);
        snprintf(t.config, sizeof t.config, "%s", js.config);
        char *task = NULL;
        if ((rc = chunk_task_to_json(&t, &task, &e)) < 0 ||
            (rc = rq_chunk_create(c->q, id, i, task, js.max_attempts, js.priority, &e)) < 0) {
            free(task);
            job_manifest_release(&man);
            return rc == VR_EREDIS ? rc : ctl_job_fail(c, id, e.msg);
        }
        free(task);
    }
    rc = rq_job_running(c->q, id, c->name, man.nchunks, man.frames, man.split_s, &e);
    job_manifest_release(&man);
    if (rc <= 0) {
        if (rc == 0)
            log_info("job %s: no longer this controller's split (cancelled or taken over)", id);
        return rc < 0 ? e.code : 0;
    }
    rq_event(c->q, id, "running: chunks enqueued");
    return 1;
}

/* ---- stitch ---- */

int ctl_job_finish(struct ctl *c, const char *id)
{
    vr_err e = { 0 };
    long long done = 0, total = 0;
    if (rq_job_number(c->q, id, "chunks_done", &done, &e) < 0 ||
        rq_job_number(c->q, id, "chunks_total", &total, &e) < 0)
        return e.code;
    if (total <= 0 || done < total)
        return 0;
    int rc = rq_job_claim(c->q, id, "running", "stitching", c->name, &e);
    if (rc <= 0)
        return rc;
    struct job_spec js;
    if ((rc = ctl_spec(c, id, &js, &e)) < 0)
        return rc == VR_EREDIS ? rc : ctl_job_fail(c, id, e.msg);
    char rel[256], mpath[STORAGE_PATH_MAX];
    ctl_job_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, mpath, sizeof mpath, NULL);
    struct job_manifest man;
    if ((rc = job_manifest_read(mpath, &man, &e)) < 0)
        return ctl_job_fail(c, id, e.msg);
    char (*paths)[STORAGE_PATH_MAX] = calloc((size_t)man.nchunks, sizeof *paths);
    const char **pp = calloc((size_t)man.nchunks, sizeof *pp);
    int missing = 0;
    if (!paths || !pp) {
        rc = ctl_job_fail(c, id, "out of memory");
        goto out;
    }
    /* The manifest, not the stream, says what must exist: a committed chunk
     * whose output vanished is run again. */
    for (int i = 0; i < man.nchunks; i++) {
        ctl_chunk_rel(rel, sizeof rel, id, "out", i);
        storage_path(c->storage, rel, paths[i], sizeof paths[i], NULL);
        pp[i] = paths[i];
        if (access(paths[i], R_OK) < 0) {
            log_warn("job %s: chunk %d is marked done but its output %s is missing; requeued",
                     id, i, paths[i]);
            if ((rc = rq_chunk_requeue_lost(c->q, id, i, 1, &e)) < 0)
                goto out;
            missing++;
        }
    }
    if (missing) {
        rc = rq_job_reopen(c->q, id, c->name, &e) < 0 ? e.code : 0;
        goto out;
    }
    rq_event(c->q, id, "stitching %d chunks into %s", man.nchunks, js.output);
    char odir[STORAGE_PATH_MAX];
    snprintf(odir, sizeof odir, "%s", js.output);
    if ((rc = storage_mkdirs(dirname(odir), &e)) < 0) {
        rc = ctl_job_fail(c, id, e.msg);
        goto out;
    }
    double t0 = clock_mono_s();
    rc = remux_stitch(js.input, pp, man.nchunks, man.chunk_frames, js.output, &e);
    double stitch_s = clock_mono_s() - t0;
    if (rc < 0) {
        vr_err_prefix(&e, "stitch");
        rc = ctl_job_fail(c, id, e.msg);
        goto out;
    }
    /* Final figures: merged histograms of every chunk. */
    struct rq_job_status *st = malloc(sizeof *st);
    char *mjson = NULL;
    if (st && rq_job_status(c->q, id, 1, st, NULL) == 0 && st->have_metrics)
        mjson = metrics_to_string(&st->merged);
    free(st);
    /* The output is in place; done is decided on the server: a cancel (or
     * a failure) that came first wins, and then the output must not stay. */
    rc = rq_job_done(c->q, id, c->name, stitch_s, mjson, &e);
    free(mjson);
    if (rc <= 0) {
        if (rc == 0) {
            char state[32] = "";
            rq_job_state(c->q, id, state, sizeof state, NULL);
            log_warn("job %s was %s during its stitch; %s removed", id, state, js.output);
            unlink(js.output);
        }
        rc = rc < 0 ? e.code : 0;
        goto out;
    }
    log_info("job %s: done: %s (%lld frames, stitched in %.2f s)", id, js.output, man.frames,
             stitch_s);
    rq_event(c->q, id, "done: %s", js.output);
    if (!c->keep_chunks) {
        char jobdir[STORAGE_PATH_MAX];
        ctl_job_dir(rel, sizeof rel, id, "in");
        storage_path(c->storage, rel, jobdir, sizeof jobdir, NULL);
        storage_rmtree(jobdir);
        ctl_job_dir(rel, sizeof rel, id, "out");
        storage_path(c->storage, rel, jobdir, sizeof jobdir, NULL);
        storage_rmtree(jobdir);
    }
    rc = 1;
out:
    free(paths);
    free(pp);
    job_manifest_release(&man);
    return rc;
}

/*
 * ctl_plan.c - a job's chunks as ranges of its source (media/remux_range.h):
 * the plan reads the container's keyframe index in milliseconds and writes
 * nothing; every chunk's record and queue entry names the source, its
 * fingerprint and the range, and the workers read it in place. The
 * manifest (ranges = 1) is written before the first chunk is queued, so a
 * controller that takes a half-planned job over plans it again and
 * creates only the records that are missing.
 */
#include "ctl.h"
#include "ctl_cut.h"

#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux_range.h"
#include "rq_jobs.h"
#include "text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Creates chunk i's record and queue entry (idempotent). */
static int ctl_enqueue_range(struct ctl *c, const char *id, const struct job_spec *js,
                             const struct ctl_decision *d, int i, const struct chunk_range *r,
                             const char *fp, vr_err *err)
{
    char *task = NULL;
    int rc = ctl_range_task_json(id, js, d->layout, i, r, fp, &task, err);
    if (rc == 0)
        rc = rq_chunk_create(c->q, id, i, task, js->max_attempts, js->priority, err);
    free(task);
    return rc < 0 ? rc : 0;
}

/* The manifest of a plan: chunk frames where the index counted them
 * (-1 elsewhere), no pre-roll times (a range carries its own). */
static int ctl_manifest_of_plan(const struct remux_plan *pl, double secs,
                                struct job_manifest *man, vr_err *err)
{
    man->ranges = 1;
    if (job_manifest_alloc(man, pl->nchunks, pl->frames, pl->duration_s, secs) < 0)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    for (int i = 0; i < pl->nchunks; i++)
        man->chunk_frames[i] = pl->chunks[i].frames;
    return 0;
}

/* ctl_plan of an elastic job, its pieces planned in pl (released here):
 * the manifest lists the pieces (frames -1: a chunk's bound comes from its
 * commit), the chunks are queued, the plan kept for the cuts (ctl_cut.c). */
static int ctl_plan_elastic(struct ctl *c, const char *id, const struct job_spec *js,
                            const struct ctl_decision *d, const struct ctl_paths *p,
                            struct remux_plan *pl, double secs, struct ctl_notes *nt,
                            struct job_manifest *man, vr_err *err)
{
    char fp[REMUX_FP_MAX];
    int *starts = NULL, rc;
    int n = remux_plan_groups(pl, js->chunk_seconds, &starts);
    if (n < 0)
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    else if ((rc = remux_fingerprint(p->in, fp, sizeof fp, err)) == 0 &&
             (rc = ctl_manifest_of_plan(pl, secs, man, err)) == 0) {
        for (int i = 0; i < man->nchunks; i++)
            man->chunk_frames[i] = -1;
        man->live_chunks = n;
        rc = ctl_manifest_write(c, id, man, err);
    }
    /* the plan's notes with the start's, in one call; pieces: the chunk
     * indices the audit walks */
    if (rc == 0) {
        ctl_note_ll(nt, "chunks_planned", n);
        ctl_note_ll(nt, "piece_ms", (long long)(d->piece_s * 1000 + 0.5));
        ctl_note_ll(nt, "piece_warmup", d->warmup);
        ctl_note_ll(nt, "pieces", pl->nchunks);
        ctl_note(nt, "chunking", "range");
        rc = ctl_notes_write(c, id, nt, err);
    }
    for (int k = 0; rc == 0 && k < n; k++) {
        struct chunk_range r;
        ctl_range_merge(pl, starts[k], starts[k + 1], &r);
        rc = ctl_enqueue_range(c, id, js, d, starts[k], &r, fp, err);
    }
    free(starts);
    if (rc == 0) {
        log_info("job %s: planned %d chunks of %d pieces of %.2f s from the %s in %.3f s; "
                 "chunks are cut again as workers come free", id, n, pl->nchunks, d->piece_s,
                 pl->method, secs);
        rq_event(c->q, id, "planned %d chunk%s as ranges of the source (%s, %.3f s); cut again "
                 "for idle workers", n, text_plural(n), pl->method, secs);
        ctl_cut_keep(c, id, pl, fp); /* takes the plan */
        ctl_cut_idle_restart(); /* its chunks go to the idle: no wait for a cut yet */
        return 0;
    }
    remux_plan_release(pl);
    return rc;
}

int ctl_plan(struct ctl *c, const char *id, const struct job_spec *js,
             const struct ctl_decision *d, const struct ctl_paths *p, struct ctl_notes *nt,
             struct job_manifest *man, vr_err *err)
{
    double t0 = clock_mono_s();
    struct remux_plan pl;
    const struct remux_plan_opts o = { .chunk_seconds = d->piece_s > 0 ? d->piece_s
                                                                        : js->chunk_seconds,
                                       .warmup = d->warmup,
                                       .wave_slots = d->piece_s > 0 ? 0 : d->wave_slots };
    int rc = remux_plan(p->in_path, &o, &pl, err);
    if (rc == 0 && d->piece_s > 0)
        return ctl_plan_elastic(c, id, js, d, p, &pl, clock_mono_s() - t0, nt, man, err);
    ctl_paths_unmask(p, js, err);
    if (rc < 0)
        return rc;
    double secs = clock_mono_s() - t0;
    char fp[REMUX_FP_MAX];
    if (p->in < 0) /* a URL: the object's identity as the plan's reads pinned it */
        snprintf(fp, sizeof fp, "%s", pl.fingerprint);
    if ((rc = p->in >= 0 ? remux_fingerprint(p->in, fp, sizeof fp, err) : 0) == 0 &&
        (rc = ctl_manifest_of_plan(&pl, secs, man, err)) == 0)
        rc = ctl_manifest_write(c, id, man, err);
    if (rc == 0) { /* status shows the whole count while the chunks are queued; with the
                    * start's notes, in one call */
        ctl_note_ll(nt, "chunks_planned", pl.nchunks);
        ctl_note(nt, "chunking", "range");
        rc = ctl_notes_write(c, id, nt, err);
    }
    int prerolls = 0;
    unsigned delay = clock_test_delay_ms("VR_TEST_SPLIT_DELAY_MS"); /* a slow plan, for tests */
    for (int i = 0; rc == 0 && i < pl.nchunks; i++) {
        prerolls += pl.chunks[i].preroll;
        rc = ctl_enqueue_range(c, id, js, d, i, &pl.chunks[i], fp, err);
        if (delay)
            usleep(delay * 1000u);
    }
    if (rc == 0) {
        log_info("job %s: planned %d ranges from the %s in %.3f s, %lld KB read; nothing copied",
                 id, pl.nchunks, pl.method, secs, pl.bytes_read >> 10);
        if (prerolls) /* the copy split's words: the same pre-rolls */
            log_info("job %s: %d chunks start with the GOP before them as a pre-roll (%s)", id,
                     prerolls, d->warmup ? "the temporal filter's warm-up" : "open-GOP references");
        rq_event(c->q, id, "planned %d chunk%s as ranges of the source (%s, %.3f s)", pl.nchunks,
                 text_plural(pl.nchunks), pl.method, secs);
    }
    remux_plan_release(&pl);
    return rc;
}

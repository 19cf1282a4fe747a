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

_Static_assert(sizeof(((struct chunk_range *)0)->fingerprint) >= REMUX_FP_MAX,
               "a task holds a fingerprint");
_Static_assert(sizeof(((struct chunk_range *)0)->demuxer) >=
               sizeof(((struct remux_range *)0)->demuxer), "a task holds a demuxer name");

/* The task's numbers of a planned range (INT64_MIN / INT64_MAX keep their
 * meaning: LLONG_MIN / LLONG_MAX). */
static void ctl_range_task(const struct remux_range *r, const char *source, const char *fp,
                           struct chunk_range *t)
{
    snprintf(t->source, sizeof t->source, "%s", source);
    snprintf(t->fingerprint, sizeof t->fingerprint, "%s", fp);
    snprintf(t->demuxer, sizeof t->demuxer, "%s", r->demuxer);
    t->seek = r->seek;
    t->first_pts = r->first.pts;
    t->first_dts = r->first.dts;
    t->start_pts = r->start.pts;
    t->start_dts = r->start.dts;
    t->end_pts = r->has_end ? r->end.pts : LLONG_MIN;
    t->end_dts = r->has_end ? r->end.dts : LLONG_MIN;
    t->has_end = r->has_end;
    t->preroll = r->preroll;
    t->warmup = r->warmup;
    t->own_from = r->own_from;
    t->own_to = r->own_to;
    t->vs = r->vs;
    t->tb_num = r->tb_num;
    t->tb_den = r->tb_den;
}

/* Creates chunk i's record and queue entry (idempotent). */
static int ctl_enqueue_range(struct ctl *c, const char *id, const struct job_spec *js,
                             const struct ctl_decision *d, int i, const struct remux_range *r,
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

void ctl_range_merge(const struct remux_plan *pl, int a, int b, struct remux_range *out)
{
    *out = pl->chunks[a];
    const struct remux_range *last = &pl->chunks[b - 1];
    out->end = last->end;
    out->has_end = last->has_end;
    out->own_to = last->own_to;
    out->frames = 0;
    for (int i = a; i < b && out->frames >= 0; i++)
        out->frames = pl->chunks[i].frames < 0 ? -1 : out->frames + pl->chunks[i].frames;
}

int ctl_range_task_json(const char *id, const struct job_spec *js, const char *layout,
                        int idx, const struct remux_range *r, const char *fp, char **task,
                        vr_err *err)
{
    struct chunk_task *t = calloc(1, sizeof *t);
    if (!t)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    t->idx = idx;
    t->frames = r->frames;
    t->is_range = 1;
    snprintf(t->job, sizeof t->job, "%s", id);
    ctl_chunk_rel(t->out, sizeof t->out, id, "out", idx);
    snprintf(t->profile, sizeof t->profile, "%s", js->profile);
    snprintf(t->output_kind, sizeof t->output_kind, "%s", js->output_kind);
    snprintf(t->alpha_area, sizeof t->alpha_area, "%s", js->alpha_area);
    snprintf(t->layout, sizeof t->layout, "%s", layout);
    snprintf(t->config, sizeof t->config, "%s", js->config);
    snprintf(t->on_decode_error, sizeof t->on_decode_error, "%s", js->on_decode_error);
    ctl_range_task(r, js->input, fp, &t->range);
    int rc = chunk_task_to_json(t, task, err);
    free(t);
    return rc;
}

/* An elastic plan's chunks: whole pieces about chunk_seconds long, each
 * indexed by its first piece; *starts (owned, n+1 entries, the last the
 * pieces' count) gets where each starts. Returns how many. */
static int ctl_plan_groups(const struct remux_plan *pl, double chunk_s, int **starts)
{
    int n = 0;
    if (!(*starts = malloc(((size_t)pl->nchunks + 1) * sizeof **starts)))
        return VR_ENOMEM;
    for (int i = 0; i < pl->nchunks; i++)
        if (i == 0 || pl->chunks[i].start_s - pl->chunks[(*starts)[n - 1]].start_s >=
                          chunk_s - 1e-6)
            (*starts)[n++] = i;
    (*starts)[n] = pl->nchunks;
    return n;
}

/* ctl_plan of an elastic job, its pieces planned in pl (released here):
 * the manifest lists the pieces (frames -1: a chunk's bound comes from its
 * commit), the chunks are queued, the plan kept for the cuts (ctl_cut.c). */
static int ctl_plan_elastic(struct ctl *c, const char *id, const struct job_spec *js,
                            const struct ctl_decision *d, const struct ctl_paths *p,
                            struct remux_plan *pl, double secs, struct job_manifest *man,
                            vr_err *err)
{
    char fp[REMUX_FP_MAX], v[32];
    int *starts = NULL, rc;
    int n = ctl_plan_groups(pl, js->chunk_seconds, &starts);
    if (n < 0)
        rc = vr_err_set(err, VR_ENOMEM, "out of memory");
    else if ((rc = remux_fingerprint(p->in, fp, sizeof fp, err)) == 0 &&
             (rc = ctl_manifest_of_plan(pl, secs, man, err)) == 0) {
        for (int i = 0; i < man->nchunks; i++)
            man->chunk_frames[i] = -1;
        man->live_chunks = n;
        rc = ctl_manifest_write(c, id, man, err);
    }
    snprintf(v, sizeof v, "%d", n);
    if (rc == 0 && (rc = rq_job_note(c->q, id, "chunks_planned", v, err)) == 0) {
        snprintf(v, sizeof v, "%lld", (long long)(d->piece_s * 1000 + 0.5));
        rc = rq_job_note(c->q, id, "piece_ms", v, err);
    }
    snprintf(v, sizeof v, "%d", d->warmup);
    if (rc == 0)
        rc = rq_job_note(c->q, id, "piece_warmup", v, err);
    snprintf(v, sizeof v, "%d", pl->nchunks); /* the chunk indices the audit walks */
    if (rc == 0)
        rc = rq_job_note(c->q, id, "pieces", v, err);
    for (int k = 0; rc == 0 && k < n; k++) {
        struct remux_range r;
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
        return 0;
    }
    remux_plan_release(pl);
    return rc;
}

int ctl_plan(struct ctl *c, const char *id, const struct job_spec *js,
             const struct ctl_decision *d, const struct ctl_paths *p,
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
        return ctl_plan_elastic(c, id, js, d, p, &pl, clock_mono_s() - t0, man, err);
    ctl_paths_unmask(p, js, err);
    if (rc < 0)
        return rc;
    double secs = clock_mono_s() - t0;
    char fp[REMUX_FP_MAX], planned[16];
    if ((rc = remux_fingerprint(p->in, fp, sizeof fp, err)) == 0 &&
        (rc = ctl_manifest_of_plan(&pl, secs, man, err)) == 0)
        rc = ctl_manifest_write(c, id, man, err);
    snprintf(planned, sizeof planned, "%d", pl.nchunks);
    if (rc == 0) /* status shows the whole count while the chunks are queued */
        rc = rq_job_note(c->q, id, "chunks_planned", planned, err);
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

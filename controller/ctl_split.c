/*
 * ctl_split.c - the copy split, for sources that cannot be read by range
 * (ctl_plan.c says which): the source is cut into chunk files under
 * storage/jobs/<id>/in/ and each chunk is queued as soon as its file is
 * committed, so workers start while the rest is still being cut. Between
 * chunks the loop's hook (struct ctl.between_chunks) handles the results
 * already waiting. A split a dead controller left half done is redone, or
 * resumed from its manifest.
 */
#include "ctl.h"

#include "beneath.h"
#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux.h"
#include "rq_jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A split under way: what each chunk's queue entry is made of. */
struct ctl_split_job {
    struct ctl *c;
    const char *id;
    const struct job_spec *js;
    const struct ctl_decision *dec;
    const struct ctl_paths *p;  /* the input, open beneath the input root */
    double t0;              /* monotonic start of the split */
};

/* A chunk as the manifest keeps it: its frames, the end of its pre-roll (0:
 * none) and where its warm-up starts (-1: none). */
static void ctl_chunk_plan(const struct remux_chunk *k, long long *frames, long long *preroll,
                           long long *warmup)
{
    *frames = k->frames;
    *preroll = k->preroll_frames ? k->preroll_until : 0;
    *warmup = k->preroll_frames && k->warmup_from != INT64_MAX ? k->warmup_from : -1;
}

/* The manifest from a split's result (the per-chunk arrays owned by man). */
static int ctl_manifest_of(const struct remux_split *sp, double split_s, struct job_manifest *man)
{
    if (job_manifest_alloc(man, sp->nchunks, sp->frames, sp->duration_s, split_s) < 0)
        return VR_ENOMEM;
    for (int i = 0; i < sp->nchunks; i++)
        ctl_chunk_plan(&sp->chunks[i], &man->chunk_frames[i], &man->chunk_preroll[i],
                       &man->chunk_warmup[i]);
    return 0;
}

/* Creates chunk i's record and queue entry (idempotent: a resumed split
 * creates only the missing ones). */
static int ctl_enqueue_chunk(const struct ctl_split_job *s, int i, long long frames,
                             long long preroll, long long warmup, vr_err *err)
{
    struct chunk_task t = { .idx = i, .frames = frames, .preroll_until = preroll,
                            .warmup_from = warmup >= 0 ? warmup : preroll };
    snprintf(t.job, sizeof t.job, "%s", s->id);
    ctl_chunk_rel(t.in, sizeof t.in, s->id, "in", i);
    ctl_chunk_rel(t.out, sizeof t.out, s->id, "out", i);
    snprintf(t.profile, sizeof t.profile, "%s", s->js->profile);
    snprintf(t.output_kind, sizeof t.output_kind, "%s", s->js->output_kind);
    snprintf(t.alpha_area, sizeof t.alpha_area, "%s", s->js->alpha_area);
    snprintf(t.layout, sizeof t.layout, "%s", s->dec->layout);
    snprintf(t.config, sizeof t.config, "%s", s->js->config);
    snprintf(t.on_decode_error, sizeof t.on_decode_error, "%s", s->js->on_decode_error);
    char *task = NULL;
    int rc = chunk_task_to_json(&t, &task, err);
    if (rc == 0)
        rc = rq_chunk_create(s->c->q, s->id, i, task, s->js->max_attempts, s->js->priority, err);
    free(task);
    return rc < 0 ? rc : 0;
}

/* remux_split's chunk_ready: queues each chunk as soon as its file is
 * committed, so workers start while the rest of a long source is still
 * being cut; stops the split once the job is no longer splitting (a
 * cancel). VR_TEST_SPLIT_DELAY_MS (tests only) slows each chunk down. */
static int ctl_split_chunk_ready(void *ctx, int idx, const struct remux_chunk *k, vr_err *err)
{
    const struct ctl_split_job *s = ctx;
    char state[32] = "";
    int rc = rq_job_state(s->c->q, s->id, state, sizeof state, err);
    if (rc < 0)
        return rc;
    if (strcmp(state, "splitting"))
        return vr_err_set(err, VR_ECANCELED, "the job is %s", state[0] ? state : "gone");
    long long frames, preroll, warmup;
    ctl_chunk_plan(k, &frames, &preroll, &warmup);
    if ((rc = ctl_enqueue_chunk(s, idx, frames, preroll, warmup, err)) < 0)
        return rc;
    if (idx == 0) {
        log_info("job %s: first chunk queued %.2f s into the split", s->id,
                 clock_mono_s() - s->t0);
        rq_event(s->c->q, s->id, "first chunk queued; splitting goes on");
    }
    char planned[16];
    snprintf(planned, sizeof planned, "%d", idx + 1);
    rq_job_note(s->c->q, s->id, "chunks_planned", planned, NULL); /* status sees it at once */
    unsigned delay = clock_test_delay_ms("VR_TEST_SPLIT_DELAY_MS");
    if (delay)
        usleep(delay * 1000u);
    if (s->c->between_chunks)
        s->c->between_chunks(s->c);
    log_ctx_thread(s->id, -1); /* the results handled set their own */
    return 0;
}

/* Splits the source into storage/jobs/<id>/in/, queueing chunks as they are
 * cut, and writes the manifest that the stitch and a restarted controller
 * go by. VR_ECANCELED: the job stopped splitting meanwhile. */
static int ctl_split_run(struct ctl_split_job *s, struct job_manifest *man, vr_err *err)
{
    struct ctl *c = s->c;
    const char *id = s->id;
    const struct job_spec *js = s->js;
    rq_event(c->q, id, "splitting %s into ~%.1f s chunks", js->input, js->chunk_seconds);
    struct stat st;
    if (s->p->in < 0) /* a URL: its container gave no index to read ranges by */
        return vr_err_set(err, VR_ENOTSUP, "%s cannot be read by ranges and a URL source is "
                          "not split by copy (not yet): give it a container with an index "
                          "(MP4, Matroska with Cues)", js->input);
    if (fstat(s->p->in, &st) < 0)
        return storage_errno(errno, "cannot stat", js->input, err);
    /* jobs/<id>/in created and opened beneath the storage root, and the
     * split writes through that descriptor: no link there is followed */
    char rel[256], indir[BENEATH_FD_PATH_MAX], indir_real[STORAGE_PATH_MAX];
    ctl_jobfiles_dir(rel, sizeof rel, id, "in");
    storage_path(c->storage, rel, indir_real, sizeof indir_real, NULL);
    int dfd = ctl_storage_open(c, rel, 1, indir, sizeof indir, NULL, err);
    if (dfd < 0)
        return dfd;
    int rc = storage_check_space(indir, (uint64_t)st.st_size + (16 << 20), err);
    if (rc < 0) {
        close(dfd);
        return rc;
    }
    s->t0 = clock_mono_s();
    const struct remux_split_opts so = { .chunk_seconds = js->chunk_seconds,
                                         .warmup = s->dec->warmup,
                                         .chunk_ready = ctl_split_chunk_ready, .ctx = s };
    struct remux_split sp;
    rc = remux_split(s->p->in_path, indir, &so, &sp, err);
    beneath_unmask(err, dfd, indir_real);
    ctl_paths_unmask(s->p, js, err);
    close(dfd);
    if (rc < 0)
        return rc == VR_ECANCELED ? rc : vr_err_prefix(err, "split");
    rc = ctl_manifest_of(&sp, clock_mono_s() - s->t0, man);
    int prerolls = 0;
    for (int i = 0; i < sp.nchunks; i++)
        prerolls += sp.chunks[i].preroll_frames > 0;
    remux_split_release(&sp);
    if (rc < 0)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    if (prerolls)
        log_info("job %s: %d chunks start with the GOP before them as a pre-roll (%s)", id,
                 prerolls, s->dec->warmup ? "the temporal filter's warm-up" : "open-GOP references");
    if ((rc = ctl_manifest_write(c, id, man, err)) < 0)
        return rc;
    log_info("job %s: %lld frames in %d chunks, split in %.2f s", id, man->frames, man->nchunks,
             man->split_s);
    return 0;
}

/* Queues every chunk of the manifest (a split finished before, by this or
 * a controller that died before the job ran): only the missing ones. */
static int ctl_enqueue(const struct ctl_split_job *s, const struct job_manifest *man, vr_err *err)
{
    for (int i = 0; i < man->nchunks; i++) {
        int rc = ctl_enqueue_chunk(s, i, man->chunk_frames[i], man->chunk_preroll[i],
                                   man->chunk_warmup[i], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}


int ctl_split(struct ctl *c, const char *id, const struct job_spec *js,
              const struct ctl_decision *dec, const struct ctl_paths *p,
              struct job_manifest *man, vr_err *err)
{
    struct ctl_split_job sj = { .c = c, .id = id, .js = js, .dec = dec, .p = p };
    char mpath[STORAGE_PATH_MAX];
    ctl_manifest_path(c, id, mpath, sizeof mpath);
    if (job_manifest_read(mpath, man, NULL) == 0 && !man->ranges) {
        log_info("job %s: resuming from its manifest (%d chunks)", id, man->nchunks);
        return ctl_enqueue(&sj, man, err);
    }
    job_manifest_release(man);
    return ctl_split_run(&sj, man, err);
}

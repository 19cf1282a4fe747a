/*
 * ctl_job.c - a job's life in the controller: split and enqueue, fail with a
 * reason, stitch and record the figures. Each step starts with an atomic
 * claim on the job's state, so two controllers never split or stitch the
 * same job, and a step a dead controller left half done is redone from the
 * manifest (idempotent: chunk records are created only once, outputs are
 * renamed into place).
 */
#include "ctl.h"

#include "beneath.h"
#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux.h"
#include "rq_fleet.h"
#include "rq_fleetstats.h"
#include "rq_jobs.h"
#include "rq_stats.h"

#include <errno.h>
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

void ctl_chunk_path(struct ctl *c, const char *id, const char *sub, int i, char *buf, size_t n)
{
    char rel[256];
    ctl_chunk_rel(rel, sizeof rel, id, sub, i);
    storage_path(c->storage, rel, buf, n, NULL);
}

int ctl_job_spec(struct ctl *c, const char *id, struct job_spec *js, vr_err *err)
{
    return ctl_job_spec_via(c->q, id, js, err);
}

int ctl_job_spec_via(struct rq *q, const char *id, struct job_spec *js, vr_err *err)
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
    man->nchunks = sp->nchunks;
    man->frames = sp->frames;
    man->duration_s = sp->duration_s;
    man->split_s = split_s;
    man->chunk_frames = calloc((size_t)sp->nchunks, sizeof *man->chunk_frames);
    man->chunk_preroll = calloc((size_t)sp->nchunks, sizeof *man->chunk_preroll);
    man->chunk_warmup = calloc((size_t)sp->nchunks, sizeof *man->chunk_warmup);
    if (!man->chunk_frames || !man->chunk_preroll || !man->chunk_warmup)
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
    snprintf(t.layout, sizeof t.layout, "%s", s->dec->layout);
    snprintf(t.config, sizeof t.config, "%s", s->js->config);
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
    unsigned delay = clock_test_delay_ms("VR_TEST_SPLIT_DELAY_MS");
    if (delay)
        usleep(delay * 1000u);
    ctl_poll_results(s->c);
    log_ctx_thread(s->id, -1); /* the results handled set their own */
    return 0;
}

/* Splits the source into storage/jobs/<id>/in/, queueing chunks as they are
 * cut, and writes the manifest (mpath) that the stitch and a restarted
 * controller go by. VR_ECANCELED: the job stopped splitting meanwhile. */
static int ctl_split(struct ctl_split_job *s, const char *mpath, struct job_manifest *man,
                     vr_err *err)
{
    struct ctl *c = s->c;
    const char *id = s->id;
    const struct job_spec *js = s->js;
    rq_event(c->q, id, "splitting %s into ~%.1f s chunks", js->input, js->chunk_seconds);
    struct stat st;
    if (fstat(s->p->in, &st) < 0)
        return storage_errno(errno, "cannot stat", js->input, err);
    /* jobs/<id>/in created and opened beneath the storage root, and the
     * split writes through that descriptor: no link there is followed */
    char rel[256], indir[BENEATH_FD_PATH_MAX], indir_real[STORAGE_PATH_MAX];
    ctl_job_dir(rel, sizeof rel, id, "in");
    storage_path(c->storage, rel, indir_real, sizeof indir_real, NULL);
    int dfd = ctl_storage_open(c, rel, 1, indir, sizeof indir, err);
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
    /* written through jobs/<id> opened beneath the storage root: a link
     * swapped in for the job's directory meanwhile is not followed */
    char jrel[256], jdir[BENEATH_FD_PATH_MAX], mfd[BENEATH_FD_PATH_MAX + 16];
    char jreal[STORAGE_PATH_MAX];
    ctl_job_dir(jrel, sizeof jrel, id, NULL);
    storage_path(c->storage, jrel, jreal, sizeof jreal, NULL);
    int jfd = ctl_storage_open(c, jrel, 1, jdir, sizeof jdir, err);
    if (jfd < 0)
        return jfd;
    snprintf(mfd, sizeof mfd, "%s/%s", jdir, strrchr(mpath, '/') + 1);
    rc = job_manifest_write(mfd, man, err);
    beneath_unmask(err, jfd, jreal);
    close(jfd);
    if (rc < 0)
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

/* A job submitted with chunk length "auto" gets one decided from the
 * workers alive now and the source's duration, stored in its record
 * (chunk_ms) before the split, so a split resumed by another controller
 * cuts at the same places whatever the fleet is by then. */
static int ctl_chunk_length(struct ctl *c, const char *id, struct job_spec *js, const char *in,
                            vr_err *err)
{
    long long ms = 0;
    int rc = rq_job_number(c->q, id, "chunk_ms", &ms, err);
    if (rc < 0 || js->chunk_seconds > 0)
        return rc < 0 ? rc : 0;
    if (ms <= 0) {
        struct remux_info info;
        struct rq_worker_info w[128];
        int n = rq_workers_list(c->q, w, 128, NULL);
        double dur = remux_probe(in, &info, NULL) == 0 ? info.duration_s : 0;
        double s = job_auto_chunk_seconds(dur, n > 0 ? n : 1);
        ms = (long long)(s * 1000 + 0.5);
        char v[32];
        snprintf(v, sizeof v, "%lld", ms);
        if ((rc = rq_job_note(c->q, id, "chunk_ms", v, err)) < 0)
            return rc;
        log_info("job %s: chunks of %.2f s (auto: %.1f s over %d workers alive)", id, s, dur,
                 n > 0 ? n : 1);
    }
    js->chunk_seconds = ms / 1000.0;
    return 0;
}

static int ctl_job_start_with(struct ctl *c, const char *id, const struct job_spec *js_,
                              const struct ctl_paths *paths);

int ctl_job_start(struct ctl *c, const char *id)
{
    vr_err e = { 0 };
    int rc = rq_job_claim(c->q, id, "queued", "splitting", c->name, &e);
    if (rc <= 0)
        return rc < 0 ? rc : 0;
    struct job_spec js;
    rc = ctl_job_spec(c, id, &js, &e);
    if (rc == VR_EREDIS)
        return rc;
    /* the job's webhooks, checked: an invalid spec's own URL is dropped, so
     * its failure goes to this controller's --notify only */
    vr_err ne = { 0 };
    if (ctl_notify_urls(c, id, rc < 0 ? NULL : &js, &ne) < 0)
        return ne.code == VR_EREDIS ? ne.code : ctl_job_fail(c, id, ne.msg);
    if (rc < 0)
        return ctl_job_fail(c, id, e.msg);
    /* the spec's paths lie under the roots, or nothing is touched */
    struct ctl_paths paths;
    if (ctl_paths_open(c, &js, 0, &paths, &e) < 0)
        return ctl_job_fail(c, id, e.msg);
    rc = ctl_job_start_with(c, id, &js, &paths);
    ctl_paths_close(&paths);
    return rc;
}

/* ctl_job_start once the spec's input is open beneath the input root. */
static int ctl_job_start_with(struct ctl *c, const char *id, const struct job_spec *js_,
                              const struct ctl_paths *paths)
{
    struct job_spec js = *js_;
    vr_err e = { 0 };
    int rc;
    char now[32], rel[256], mpath[STORAGE_PATH_MAX];
    snprintf(now, sizeof now, "%lld", rq_now_ms());
    rq_job_note(c->q, id, "started_ms", now, NULL);
    if ((rc = ctl_chunk_length(c, id, &js, paths->in_path, &e)) < 0)
        return rc;
    struct ctl_decision dec;
    if ((rc = ctl_job_decide(&js, paths->in_path, &dec, &e)) < 0) {
        ctl_paths_unmask(paths, &js, &e);
        return ctl_job_fail(c, id, e.msg);
    }
    rq_job_note(c->q, id, "layout", dec.layout, NULL);
    log_info("job %s: layout %s (%s); %d frames of warm-up a chunk", id, dec.layout, dec.why,
             dec.warmup);
    ctl_job_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, mpath, sizeof mpath, NULL);
    struct job_manifest man = { 0 };
    struct ctl_split_job sj = { .c = c, .id = id, .js = &js, .dec = &dec, .p = paths };
    if (job_manifest_read(mpath, &man, NULL) == 0) {
        log_info("job %s: resuming from its manifest (%d chunks)", id, man.nchunks);
        rc = ctl_enqueue(&sj, &man, &e);
    } else if ((rc = ctl_split(&sj, mpath, &man, &e)) < 0) {
        job_manifest_release(&man);
        if (rc == VR_ECANCELED) {
            log_info("job %s: split stopped: %s", id, e.msg);
            return 0;
        }
        return rc == VR_EREDIS ? rc : ctl_job_fail(c, id, e.msg);
    }
    double split_s = man.split_s;
    if (rc == 0)
        rc = rq_job_running(c->q, id, c->name, man.nchunks, man.frames, split_s, &e);
    job_manifest_release(&man);
    if (rc < 0)
        return rc == VR_EREDIS ? rc : ctl_job_fail(c, id, e.msg);
    if (rc == 0) {
        log_info("job %s: no longer this controller's split (cancelled or taken over)", id);
        return 0;
    }
    rq_event(c->q, id, "running: chunks enqueued");
    rq_fleetstats_note(c->q, RQ_NOTE_SPLIT, split_s, NULL);
    /* chunks that finished while the split went on (their results were
     * read then): stitched ahead now, and a job already complete ends */
    ctl_stitch_progress(c, id);
    ctl_job_finish(c, id);
    return 1;
}

/* ---- stitch ---- */

/* The chunk outputs' paths; each missing one (a committed chunk whose
 * output vanished: the manifest, not the stream, says what must exist) is
 * queued again. Returns how many were missing, or <0. */
static int ctl_chunk_outputs(struct ctl *c, const char *id, int n, char (*paths)[STORAGE_PATH_MAX],
                             vr_err *err)
{
    int missing = 0;
    for (int i = 0; i < n; i++) {
        char rel[256];
        ctl_chunk_rel(rel, sizeof rel, id, "out", i);
        storage_path(c->storage, rel, paths[i], sizeof paths[i], NULL);
        if (access(paths[i], R_OK) == 0)
            continue;
        log_warn("job %s: chunk %d is marked done but its output %s is missing; requeued", id,
                 i, paths[i]);
        int rc = rq_chunk_requeue_lost(c->q, id, i, 1, err);
        if (rc < 0)
            return rc;
        missing++;
    }
    return missing;
}

/* Records done with the merged metrics, unless a cancel or a failure came
 * first: then the output it published is removed. 1 done, 0 not, <0. */
static int ctl_record_done(struct ctl *c, const char *id, const char *output,
                           const char *out_path, double stitch_s, vr_err *err)
{
    struct rq_job_status *st = malloc(sizeof *st);
    char *mjson = NULL;
    if (st && rq_job_status(c->q, id, 1, st, NULL) == 0 && st->have_metrics)
        mjson = metrics_to_string(&st->merged);
    free(st);
    int rc = rq_job_done(c->q, id, c->name, stitch_s, mjson, err);
    free(mjson);
    if (rc == 0) {
        char state[32] = "";
        rq_job_state(c->q, id, state, sizeof state, NULL);
        log_warn("job %s was %s during its stitch; %s removed", id, state, output);
        unlink(out_path); /* through the directory opened beneath the output root */
    }
    return rc;
}

/* Removes storage/jobs/<id>/{in,out} (the chunks; the manifest stays). */
static void ctl_drop_chunks(struct ctl *c, const char *id)
{
    static const char *const subs[] = { "in", "out" };
    for (int i = 0; i < 2; i++) {
        char rel[256], dir[STORAGE_PATH_MAX];
        ctl_job_dir(rel, sizeof rel, id, subs[i]);
        storage_path(c->storage, rel, dir, sizeof dir, NULL);
        storage_rmtree(dir);
    }
}

int ctl_stitch_chunk(struct ctl *c, const char *id, int i, struct remux_stitcher **s,
                     const struct job_spec *js, const struct job_manifest *man,
                     const struct ctl_paths *p, vr_err *err)
{
    char rel[256], fdp[BENEATH_FD_PATH_MAX], real[STORAGE_PATH_MAX];
    ctl_chunk_rel(rel, sizeof rel, id, "out", i);
    storage_path(c->storage, rel, real, sizeof real, NULL);
    int fd = ctl_storage_open(c, rel, 0, fdp, sizeof fdp, err);
    if (fd < 0)
        return fd;
    int rc = *s ? remux_stitch_add(*s, fdp, err)
                : remux_stitch_begin(p->in_path, fdp, man->chunk_frames, man->nchunks,
                                     p->out_path, s, err);
    beneath_unmask(err, fd, real);
    ctl_paths_unmask(p, js, err);
    close(fd);
    return rc;
}

/* Stitches what the stitcher taken over from ctl_stitch.c has not yet (the
 * whole job when there is none) and publishes the checked output; *ahead
 * gets the chunks that were in already. *p is the job's files, or those the
 * stitcher was begun with (taken over with it). */
static int ctl_stitch_rest(struct ctl *c, const char *id, const struct job_spec *js,
                           const struct job_manifest *man, struct ctl_paths *p, int *ahead,
                           vr_err *err)
{
    struct ctl_paths taken;
    struct remux_stitcher *s = ctl_stitch_take(c, id, &taken);
    int rc = 0;
    if (s) {
        ctl_paths_close(p);
        *p = taken;
    } else if ((rc = ctl_stitch_chunk(c, id, 0, &s, js, man, p, err)) < 0) {
        return rc;
    }
    *ahead = remux_stitch_added(s);
    for (int i = *ahead; rc == 0 && i < man->nchunks; i++)
        rc = ctl_stitch_chunk(c, id, i, &s, js, man, p, err);
    if (rc == 0) {
        rc = remux_stitch_end(&s, err);
        ctl_paths_unmask(p, js, err);
        return rc;
    }
    remux_stitch_abort(&s);
    return rc;
}

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
    if ((rc = ctl_job_spec(c, id, &js, &e)) < 0)
        return rc == VR_EREDIS ? rc : ctl_job_fail(c, id, e.msg);
    char rel[256], mpath[STORAGE_PATH_MAX];
    ctl_job_dir(rel, sizeof rel, id, "manifest.json");
    storage_path(c->storage, rel, mpath, sizeof mpath, NULL);
    struct job_manifest man;
    if ((rc = job_manifest_read(mpath, &man, &e)) < 0)
        return ctl_job_fail(c, id, e.msg);
    struct ctl_paths files = { .in = -1, .out_dir = -1 };
    char (*paths)[STORAGE_PATH_MAX] = calloc((size_t)man.nchunks, sizeof *paths);
    if (!paths) {
        rc = ctl_job_fail(c, id, "out of memory");
        goto out;
    }
    if ((rc = ctl_chunk_outputs(c, id, man.nchunks, paths, &e)) != 0) {
        ctl_stitch_drop(c, id);
        rc = rc < 0 ? rc : rq_job_reopen(c->q, id, c->name, &e) < 0 ? e.code : 0;
        goto out;
    }
    rq_event(c->q, id, "stitching %d chunks into %s", man.nchunks, js.output);
    unsigned delay = clock_test_delay_ms("VR_TEST_STITCH_DELAY_MS"); /* tests only */
    if (delay)
        usleep(delay * 1000u);
    double t0 = clock_mono_s();
    int ahead = 0;
    if ((rc = ctl_paths_open(c, &js, CTL_PATHS_OUTPUT, &files, &e)) == 0) {
        /* this controller holds the stitch now: another's temporary output
         * (a controller killed mid-stitch, or one that lost its claim) is
         * abandoned, and nothing else would ever remove it */
        char base[JOB_PATH_MAX];
        snprintf(base, sizeof base, "%s", js.output);
        storage_drop_temps_of(files.out_dir, basename(base));
        rc = ctl_stitch_rest(c, id, &js, &man, &files, &ahead, &e);
    }
    if (rc < 0) {
        vr_err_prefix(&e, "stitch");
        rc = ctl_job_fail(c, id, e.msg);
        goto out;
    }
    double stitch_s = clock_mono_s() - t0;
    if ((rc = ctl_record_done(c, id, js.output, files.out_path, stitch_s, &e)) <= 0) {
        rc = rc < 0 ? e.code : 0;
        goto out;
    }
    log_info("job %s: done: %s (%lld frames; %d of %d chunks stitched ahead, the rest in %.2f s)",
             id, js.output, man.frames, ahead, man.nchunks, stitch_s);
    rq_event(c->q, id, "done: %s", js.output);
    rq_fleetstats_note(c->q, RQ_NOTE_STITCH, stitch_s, NULL);
    if (!c->keep_chunks)
        ctl_drop_chunks(c, id);
    rc = 1;
out:
    ctl_paths_close(&files);
    free(paths);
    job_manifest_release(&man);
    return rc;
}

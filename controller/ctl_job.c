/*
 * ctl_job.c - a job's start in the controller: claim it, check its spec
 * and paths, decide its chunk length, layout and config, then chunk it:
 * ranges of the source planned in place (ctl_plan.c), or the copy split
 * (ctl_split.c) where ranges cannot be read. Each step starts with an
 * atomic claim on the job's state, so two controllers never chunk the same
 * job, and one a dead controller left half done is redone (idempotent:
 * chunk records are created only once).
 */
#include "ctl.h"

#include "clock.h"
#include "job.h"
#include "log.h"
#include "remux.h"
#include "rq_fleet.h"
#include "rq_fleetstats.h"
#include "rq_jobs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Issue 41, finding 9: a short --chunk-seconds on a long or all-intra
 * source (0.2 s: 20 000 chunks, 10.7 s of the loop queueing them) is
 * widened to duration / c->max_chunks (less for a submitter with a chunk
 * limit: what its other live jobs leave, ctl_submitter_chunk_cap, noted as
 * chunk_cap), so no job has more than about that many chunks, whoever
 * submits it. The same source and limit give the same length, so a split
 * resumed by another controller cuts alike. */
static void ctl_chunk_bound(struct ctl *c, const char *id, struct job_spec *js,
                            const struct ctl_probe *p, struct ctl_notes *nt)
{
    int most = ctl_submitter_chunk_cap(c, id);
    if (most < c->max_chunks)
        ctl_note_ll(nt, "chunk_cap", most); /* a submitter's live share: kept for a resume */
    if (p->rc < 0 || !(p->info.duration_s > 0) || most <= 0)
        return; /* the split says what is wrong with the source */
    double least = ceil(p->info.duration_s * 1000 / most) / 1000;
    if (js->chunk_seconds >= least)
        return;
    log_info("job %s: chunks of %.3f s, not %.3f s: %.1f s of source in at most %d chunks "
             "(%s)", id, least, js->chunk_seconds, p->info.duration_s, most,
             most < c->max_chunks ? "its submitter's chunk limit" : "--max-chunks");
    rq_event(c->q, id, "chunk length widened to %.3f s (at most %d chunks a job)", least, most);
    js->chunk_seconds = least;
}

/* ---- the notes a job's start writes ----
 * The fields of its record the start decides (notify, started_ms, the
 * auto chunk length and wave, the layout, then the chunking and the plan's
 * counts) are gathered in a struct ctl_notes and written in one call
 * (ctl_notes.c) before the job's first chunk is queued: a split resumed by
 * another controller reads chunk_ms and chunk_wave back. A start that
 * fails writes them first, so its failure goes to the job's own webhook. */

static int ctl_start_fail(struct ctl *c, const char *id, long long token,
                          struct ctl_notes *nt, const char *reason)
{
    vr_err ne = { 0 };
    if (ctl_notes_write(c, id, nt, &ne) == VR_EREDIS)
        return VR_EREDIS;
    return ctl_jobfiles_fail(c, id, token, reason);
}

/* A job submitted with chunk length "auto" gets one decided from the
 * workers alive now and the source's duration, and its last wave graded
 * over those workers (*wave, remux_plan_opts.wave_slots), both noted for
 * its record (chunk_ms, chunk_wave, in nt) before the split, so a split resumed
 * by another controller cuts at the same places whatever the fleet is by
 * then. A length the job asks for is kept as it is, not graded. */
static int ctl_chunk_length(struct ctl *c, const char *id, struct job_spec *js,
                            const struct ctl_probe *p, int *wave, struct ctl_notes *nt,
                            vr_err *err)
{
    long long ms = 0, w = 0, noted = 0;
    *wave = js->chunk_wave; /* vrctl run's, with the length it chose */
    int rc = rq_job_number(c->q, id, "chunk_ms", &ms, err);
    if (rc < 0 || js->chunk_seconds > 0) {
        if (rc >= 0)
            ctl_chunk_bound(c, id, js, p, nt);
        return rc < 0 ? rc : 0;
    }
    if (ms <= 0) {
        struct rq_worker_info w[128];
        int n = rq_workers_list(c->q, w, 128, NULL);
        double dur = p->rc == 0 ? p->info.duration_s : 0;
        int picture = job_output_is_picture(js->output_kind);
        double s = job_auto_chunk_seconds(dur, n > 0 ? n : 1, picture);
        ms = (long long)(s * 1000 + 0.5);
        char v[32];
        snprintf(v, sizeof v, "%d", n > 0 ? n : 1);
        ctl_note(nt, "chunk_wave", v);
        snprintf(v, sizeof v, "%lld", ms);
        ctl_note(nt, "chunk_ms", v);
        log_info("job %s: chunks of %.2f s (auto: %.1f s over %d workers alive%s)", id, s, dur,
                 n > 0 ? n : 1, picture ? "; a picture output: at least 4 chunks a worker" : "");
        noted = n > 0 ? n : 1; /* not in the record until the notes go */
    }
    js->chunk_seconds = ms / 1000.0;
    ctl_chunk_bound(c, id, js, p, nt);
    w = noted;
    if (!w && (rc = rq_job_number(c->q, id, "chunk_wave", &w, err)) < 0)
        return rc;
    *wave = w > 0 && w <= JOB_WAVE_SLOTS_MAX ? (int)w : 0;
    return 0;
}

/* Chunks job id: ranges where the plan can read them (unless the job asks
 * for a copy), else the copy split; the path taken and why go to the log,
 * the events and the job's `chunking` field. */
static int ctl_chunk(struct ctl *c, const char *id, const struct job_spec *js,
                     const struct ctl_decision *dec, const struct ctl_paths *p,
                     struct ctl_notes *nt, struct job_manifest *man, vr_err *err)
{
    int rc = VR_ENOTSUP;
    char why[sizeof err->msg] = "the job asked for a copy (--chunking copy)";
    if (strcmp(js->chunking, "copy")) {
        if ((rc = ctl_plan(c, id, js, dec, p, nt, man, err)) != VR_ENOTSUP)
            return rc; /* the plan wrote the notes, chunking "range" among them */
        if (!strcmp(js->chunking, "range"))
            return vr_err_prefix(err, "--chunking range");
        snprintf(why, sizeof why, "%s", err->msg);
    }
    log_info("job %s: copy split: %s", id, why);
    rq_event(c->q, id, "copy split: %s", why);
    ctl_note(nt, "chunking", "copy");
    if ((rc = ctl_notes_write(c, id, nt, err)) < 0) /* the start's notes, in one call */
        return rc;
    return ctl_split(c, id, js, dec, p, man, err);
}

static int ctl_job_start_with(struct ctl *c, const char *id, long long token,
                              const struct job_spec *js_, const struct ctl_paths *paths,
                              struct ctl_notes *nt);

int ctl_job_start(struct ctl *c, const char *id)
{
    vr_err e = { 0 };
    long long token = 0;
    int rc = rq_job_claim(c->q, id, "queued", "splitting", c->name, &token, &e);
    if (rc <= 0)
        return rc < 0 ? rc : 0;
    struct job_spec js;
    rc = ctl_jobfiles_spec(c, id, &js, &e);
    if (rc == VR_EREDIS)
        return rc;
    /* the job's webhooks, checked: an invalid spec's own URL is dropped, so
     * its failure goes to this controller's --notify only */
    struct ctl_notes nt = { 0 };
    ctl_notify_urls(rc < 0 ? NULL : &js, &nt);
    struct ctl_paths paths;
    /* the spec's paths lie under the roots, or nothing is touched */
    if (rc < 0 || (rc = ctl_paths_open(c, &js, 0, &paths, &e)) < 0)
        return rc == VR_EREDIS ? rc : ctl_start_fail(c, id, token, &nt, e.msg);
    rc = ctl_job_start_with(c, id, token, &js, &paths, &nt);
    ctl_paths_close(&paths);
    return rc;
}

/* ctl_job_start once the spec's input is open beneath the input root;
 * token: this controller's claim of the split. */
static int ctl_job_start_with(struct ctl *c, const char *id, long long token,
                              const struct job_spec *js_, const struct ctl_paths *paths,
                              struct ctl_notes *nt)
{
    struct job_spec js = *js_;
    vr_err e = { 0 };
    int rc;
    ctl_note_ll(nt, "started_ms", rq_now_ms());
    /* --chunk-seconds N is never cut; a length chosen for a wave of workers
     * (auto, or vrctl run's: chunk_wave set) is, so a run's slots that warm
     * late take the tails of the early ones' chunks (issue 43). A URL's
     * chunks are whole: its cuts would need the plan pinned by a
     * descriptor (an auto-length URL job failed "cannot stat the source") */
    int wave, elastic = (!(js.chunk_seconds > 0) || js.chunk_wave > 0) && paths->in >= 0;
    struct ctl_probe probe = { 0 }; /* the source probed once for the steps below */
    probe.rc = remux_probe(paths->in_path, &probe.info, &probe.err);
    if ((rc = ctl_chunk_length(c, id, &js, &probe, &wave, nt, &e)) < 0)
        return rc;
    struct ctl_decision dec;
    if (ctl_decide(&js, paths->in_path, &probe, &dec, &e) < 0) {
        ctl_paths_unmask(paths, &js, &e);
        return ctl_start_fail(c, id, token, nt, e.msg);
    }
    ctl_note(nt, "layout", dec.layout);
    dec.wave_slots = wave;
    /* an elastic job: pieces of half a second, half a chunk for short
     * ones, longer for a source that long pieces would plan past the limit */
    dec.piece_s = elastic ? job_cut_piece_seconds(js.chunk_seconds, dec.duration_s) : 0;
    log_info("job %s: layout %s (%s); %d frames of warm-up a chunk", id, dec.layout, dec.why,
             dec.warmup);
    struct job_manifest man = { 0 };
    if ((rc = ctl_chunk(c, id, &js, &dec, paths, nt, &man, &e)) < 0) {
        job_manifest_release(&man);
        if (rc == VR_ECANCELED) {
            log_info("job %s: split stopped: %s", id, e.msg);
            return 0;
        }
        return rc == VR_EREDIS ? rc : ctl_start_fail(c, id, token, nt, e.msg);
    }
    double split_s = man.split_s;
    long long frames = man.frames;
    if (frames < 0) /* a range plan from Matroska Cues: the estimate submit recorded */
        rq_job_number(c->q, id, "frames_total", &frames, NULL);
    if (rc == 0)
        rc = rq_job_running(c->q, id, c->name, token,
                            man.live_chunks > 0 ? man.live_chunks : man.nchunks, frames,
                            split_s, &e);
    job_manifest_release(&man);
    if (rc < 0)
        return rc == VR_EREDIS ? rc : ctl_jobfiles_fail(c, id, token, e.msg);
    if (rc == 0) {
        log_info("job %s: no longer this controller's split (cancelled or taken over)", id);
        return 0;
    }
    rq_event(c->q, id, "running: chunks enqueued");
    rq_fleetstats_note(c->q, RQ_NOTE_SPLIT, split_s, NULL);
    /* chunks that finished while the split went on (their results were
     * read then): stitched ahead now, and a job already complete ends */
    ctl_stitcher_post(c, id, 1);
    return 1;
}


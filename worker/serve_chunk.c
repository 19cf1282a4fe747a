/*
 * serve_chunk.c - one chunk in a worker: check the entry is still the
 * chunk's and report it started (the controller counts the attempt), run
 * pipeline_run() on it, make the output durable, then report it done (the
 * controller commits it while the claim holds the entry) or failed (the
 * controller requeues or dead-letters it). The worker's Redis user writes
 * no chunk state itself (rq_claim.h).
 */
#include "serve.h"

#include "beneath.h"
#include "cmdtable.h"
#include "clock.h"
#include "job.h"
#include "output_kinds.h"
#include "log.h"
#include "remux_range.h"
#include "remux_ts.h"
#include "test_gate.h"
#include "url_root.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum pipe_output serve_output(const char *kind)
{
    int k = output_kind_parse(kind); /* the spec was validated at submit */
    return k < 0 ? PIPE_OUT_MASK : (enum pipe_output)k;
}

static void serve_set_busy(struct serve *s, const struct rq_held *h, int busy)
{
    pthread_mutex_lock(&s->mu);
    s->busy = busy;
    if (busy) {
        s->held = *h;
        s->started_ms = rq_now_ms();
        __atomic_store_n(&s->chunk_frames, 0, __ATOMIC_RELAXED);
        s->cancel = 0;
        s->lost = 0;
        s->job_ended = 0;
    }
    if (busy) {
        pthread_mutex_unlock(&s->mu);
        serve_cut_reset(s);
        pthread_mutex_lock(&s->mu);
    } else {
        serve_aside_begin(s); /* before a heartbeat could say idle */
    }
    s->committing = 0;
    pthread_mutex_unlock(&s->mu);
}

/* ---- a task's files ----
 *
 * A task comes from Redis, which more than the controller can write: its
 * paths must be its own job's chunk files (jobs/<job>/in/<name>,
 * jobs/<job>/out/<name>), and are opened beneath the storage root without
 * following any link, so neither another job's out/ nor a link out of the
 * root can be reached through them. */

/* Checks that rel is jobs/<t->job>/<sub>/<one name>. */
static int serve_task_rel(const struct chunk_task *t, const char *rel, const char *sub,
                          vr_err *err)
{
    char want[160];
    snprintf(want, sizeof want, "jobs/%s/%s/", t->job, sub);
    size_t wl = strlen(want);
    const char *name = rel + wl;
    if (strncmp(rel, want, wl) || !*name || strchr(name, '/') || !strcmp(name, ".") ||
        !strcmp(name, ".."))
        return vr_err_set(err, VR_EINVAL, "chunk task: %s path '%s' is not a file of %s (a task "
                          "touches only its own job's chunks)", sub, rel, want);
    return 0;
}

/* The task's files, open beneath the storage root (the source of a range
 * task beneath the input root). */
struct serve_files {
    int root, in, out_dir;                   /* descriptors, -1 when closed */
    char in_path[JOB_PATH_MAX];              /* /proc/self/fd/<in>, or the source's URL */
    char in_real[STORAGE_PATH_MAX];          /* its name, for messages */
    char out_path[BENEATH_FD_PATH_MAX];      /* /proc/self/fd/<out_dir>/<name> */
    char ts_path[BENEATH_FD_PATH_MAX + 8];   /* the output's sidecar (range tasks) */
    char out_dir_real[STORAGE_PATH_MAX];     /* <storage>/jobs/<job>/out, for messages */
    int env;                                 /* 1: what failed is this worker's own view
                                              * of the files (its input root, its storage
                                              * mount), not the task (issue 42, finding 2) */
    int storage;                             /* 1: ... and it was the storage's side */
    int staged;                              /* 1: out_dir_real is a staging directory
                                              * of its own (--storage URL), removed */
};

static void serve_files_close(struct serve_files *f)
{
    int *fds[] = { &f->root, &f->in, &f->out_dir };
    for (int i = 0; i < 3; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
    if (f->staged) /* what went up by HTTP, or failed to */
        storage_rmtree(f->out_dir_real);
    f->staged = 0;
}

/* A range task's source: named under the input root, opened beneath it
 * without following links, a regular file, and the one planned (its
 * fingerprint); each failure is permanent and says what to do. */
static int serve_source_open(const struct serve *s, const struct chunk_task *t,
                             struct serve_files *f, vr_err *err)
{
    char rel[JOB_PATH_MAX], fp[REMUX_FP_MAX];
    snprintf(f->in_real, sizeof f->in_real, "%s", t->source);
    if (url_root_is_url(t->source)) { /* the decoder opens it, checking the plan's identity */
        int rc = url_root_check(t->source, s->input_url_root, "vr-worker serve --input-root",
                                err);
        f->env = rc < 0 && !s->input_url_root[0];
        snprintf(f->in_path, sizeof f->in_path, "%s", t->source);
        return rc;
    }
    if (!s->input_root[0]) { /* --storage URL alone, no --input-root: URL sources only */
        f->env = 1;
        return vr_err_set(err, VR_EINVAL, "chunk source %s is a file, and this worker has no "
                          "--input-root (its --storage is a URL): give it one, or submit the "
                          "source by URL", t->source);
    }
    int rc = beneath_rel(s->input_root, t->source, rel, sizeof rel);
    f->env = rc == VR_ENOENT;
    if (rc == VR_ENOENT)
        return vr_err_set(err, VR_EINVAL, "chunk source %s is not under this worker's "
                          "--input-root %s: give the worker that root, or submit the job with "
                          "--chunking copy", t->source, s->input_root);
    if (rc < 0) /* a task from Redis, not the controller's: it plans absolute, clean names */
        return vr_err_set(err, VR_EINVAL, "chunk source %s: not an absolute path without '..' "
                          "(it must lie under this worker's --input-root %s)", t->source,
                          s->input_root);
    f->env = 1; /* the input root, and the source as this worker sees it */
    int root = open(s->input_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return storage_errno(errno, "cannot open the input root", s->input_root, err);
    f->in = beneath_open_file(root, rel, "chunk source", t->source, s->input_root, NULL, err);
    close(root);
    if (f->in < 0) {
        /* missing, unreadable or I/O: this worker's mount; a link, a path
         * leaving the root or no regular file: the source's, the chunk's */
        f->env = f->in == VR_ENOENT || f->in == VR_EACCES || f->in == VR_EIO;
        return f->in;
    }
    f->env = 0;
    if ((rc = remux_fingerprint(f->in, fp, sizeof fp, err)) < 0)
        return rc;
    if (strcmp(fp, t->range.fingerprint))
        return vr_err_set(err, VR_EFORMAT, "source %s changed since the job was planned (inode, "
                          "size or mtime differ: %s, planned %s): resubmit the job", t->source,
                          fp, t->range.fingerprint);
    return 0;
}

/* The descriptors' names once out_dir is open: the output and its sidecar
 * beneath it, the input by its descriptor. */
static int serve_files_name(const struct chunk_task *t, struct serve_files *f, vr_err *err)
{
    const char *name = strrchr(t->out, '/') + 1; /* serve_task_rel: one name after out/ */
    if (f->in >= 0)
        beneath_fd_path(f->in, NULL, f->in_path, sizeof f->in_path);
    beneath_fd_path(f->out_dir, name, f->out_path, sizeof f->out_path);
    return t->is_range ? remux_ts_name(f->out_path, f->ts_path, sizeof f->ts_path, err) : 0;
}

/* --storage URL: no storage directory; the output is staged here and put
 * up after its sum (serve_url.c). */
static int serve_files_stage(const struct serve *s, const struct chunk_task *t,
                             struct serve_files *f, vr_err *err)
{
    if (!t->is_range)
        return vr_err_set(err, VR_ENOTSUP, "chunk %d: a copied chunk's input lies on the shared "
                          "storage, which a worker with --storage URL does not read: not yet "
                          "(submit with --chunking ranges)", t->idx);
    int rc = serve_source_open(s, t, f, err);
    if (rc < 0)
        return rc;
    if ((f->out_dir = serve_url_stage(f->out_dir_real, sizeof f->out_dir_real, err)) < 0) {
        f->env = 1; /* this worker's $TMPDIR */
        return f->out_dir;
    }
    f->staged = 1;
    return serve_files_name(t, f, err);
}

static int serve_files_open(const struct serve *s, const struct chunk_task *t,
                            struct serve_files *f, vr_err *err)
{
    f->root = f->in = f->out_dir = -1;
    f->env = f->storage = f->staged = 0;
    int rc;
    if ((!t->is_range && (rc = serve_task_rel(t, t->in, "in", err)) < 0) ||
        (rc = serve_task_rel(t, t->out, "out", err)) < 0)
        return rc;
    if (s->storage_url[0])
        return serve_files_stage(s, t, f, err);
    if ((f->root = open(s->storage, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        f->env = f->storage = 1;
        return storage_errno(errno, "cannot open the storage root", s->storage, err);
    }
    char odir[STORAGE_PATH_MAX];
    snprintf(f->in_real, sizeof f->in_real, "%.3000s/%.1000s", s->storage, t->in);
    if (t->is_range)
        rc = serve_source_open(s, t, f, err);
    else /* a regular file only, opened without waiting: a FIFO there would hold the
          * chunk (and its renewed lease) for good (issue 41, finding 2) */
        if ((f->in = beneath_open_file(f->root, t->in, "chunk input", f->in_real, s->storage,
                                       NULL, err)) < 0)
            rc = f->in;
    if (rc < 0)
        return rc;
    snprintf(odir, sizeof odir, "%s", t->out);
    const char *name = strrchr(t->out, '/') + 1; /* serve_task_rel: one name after out/ */
    odir[name - 1 - t->out] = '\0';
    snprintf(f->out_dir_real, sizeof f->out_dir_real, "%.3000s/%.1000s", s->storage, odir);
    if ((f->out_dir = beneath_mkdirs(f->root, odir, 0755)) < 0) {
        f->storage = f->out_dir == -EACCES || f->out_dir == -EROFS || f->out_dir == -EIO ||
                     f->out_dir == -EPERM;
        return beneath_err(f->out_dir, "chunk output directory", f->out_dir_real, s->storage,
                           err);
    }
    return serve_files_name(t, f, err);
}

/* The checksum of a chunk's output (and its sidecar, range tasks) as the
 * worker wrote them, recorded with the commit and checked by the stitch. */
static int serve_output_sum(const struct chunk_task *t, const struct serve_files *f,
                            char sum[STORAGE_SUM_LEN], vr_err *err)
{
    int fds[2] = { -1, -1 }, n = t->is_range ? 2 : 1, rc = 0;
    const char *paths[2] = { f->out_path, f->ts_path };
    for (int i = 0; i < n && rc == 0; i++) /* what was renamed there may be swapped since */
        if ((fds[i] = beneath_open_file(f->out_dir, strrchr(paths[i], '/') + 1,
                                        "cannot open chunk output in", f->out_dir_real,
                                        f->out_dir_real, NULL, err)) < 0)
            rc = fds[i];
    if (rc == 0)
        rc = storage_sum_fds(fds, n, sum, err);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

/* Runs the pipeline on the task; fills m, the output's checksum and err. */
static int serve_process(struct serve *s, const struct chunk_task *t, struct metrics *m,
                         char sum[STORAGE_SUM_LEN], char *end, size_t endn, vr_err *err)
{
    struct pipe_opts o;
    memset(&o, 0, sizeof o);
    s->env_fault = s->storage_fault = 0;
    int rc = config_load_profile(&o.cfg, t->profile, err);
    if (rc == 0 && t->config[0])
        rc = config_apply_text(&o.cfg, t->config, "the job's config", err);
    if (rc < 0)
        return rc;
    o.backend = s->backend;
    o.gpu = s->gpu;
    o.encode_threads = s->encode_threads;
    o.host_encoders = s->host_slots;
    /* the job's layout, decided once from the whole source (a chunk file
     * has neither its name nor, always, its metadata) */
    o.layout = t->layout[0] ? seg_layout_parse(t->layout) : -1;
    o.output = serve_output(t->output_kind);
    o.alpha_corners = !strcmp(t->alpha_area, "corners");
    o.cancel = &s->cancel;
    o.warm = s->cold ? NULL : &s->warm;
    o.preroll_until_ms = t->preroll_until;
    o.warmup_from_ms = t->warmup_from;
    o.fail_on_decode_error = job_decode_error_fail(t->on_decode_error) == 1;
    o.frames_live = &s->chunk_frames;
    struct chunk_range range;
    if (t->is_range) {
        range = t->range; /* the task's numbers; what it does not carry, cleared: */
        range.frames = -1;
        if (!url_root_is_url(t->source)) /* a file's is checked by its descriptor, before */
            range.fingerprint[0] = '\0';
        range.cut = &s->cut; /* a cut heard while it runs moves its end */
        o.range = &range;
    }
    struct serve_files f;
    rc = serve_files_open(s, t, &f, err);
    s->env_fault = f.env;
    if (rc == 0) {
        o.ts_path = t->is_range ? f.ts_path : NULL;
        rc = pipeline_run(&o, f.in_path, f.out_path, m, err);
        if (rc == 0 && t->is_range && f.in >= 0)
            serve_warm_note(s, f.in_real); /* the host's next workers warm for it */
    }
    if (rc == 0)
        rc = storage_sync_file(f.out_path, err); /* durable before Redis hears of it */
    if (rc == 0)
        rc = serve_output_sum(t, &f, sum, err);
    if (rc == 0 && f.staged && (rc = serve_url_put(s, t->out, f.out_path, f.ts_path, err)) < 0)
        f.storage = 1; /* the store's side, as every worker sees it */
    /* a source opened, then a write refused (a read-only or unwritable
     * storage): the storage's side, as every worker sees it */
    s->storage_fault = f.storage || (rc == VR_EACCES && f.in >= 0 && f.out_dir >= 0);
    if (rc < 0) {
        beneath_unmask(err, f.in, f.in_real);
        beneath_unmask(err, f.out_dir, f.out_dir_real);
    }
    serve_files_close(&f);
    long long frames = t->frames;
    if (serve_cut_end(s, t, end, endn, &frames) == 1 && rc == 0)
        log_info("job %s chunk %d: stopped at its cut (%s)", t->job, t->idx, end);
    if (rc < 0)
        return rc;
    /* a packet the decoder refused is a frame missing (concealed: counted) */
    long long missing = frames - (long long)m->frames;
    if (frames >= 0 && (missing < 0 || missing > (long long)m->concealed))
        return vr_err_set(err, VR_EFORMAT, "%s: %llu frames written, the chunk has %lld",
                          t->out, (unsigned long long)m->frames, frames);
    return 0;
}

/* Whether another attempt, here or on another worker, would fail alike:
 * the input itself is bad or unsupported (corrupt bitstream, a frame size
 * the engine cannot take). Running out of memory or disk, I/O, CUDA,
 * Redis and codec set-up failures (an encoder a busy GPU refuses) are
 * worth retrying. */
static int serve_error_permanent(int code)
{
    return code == VR_EFORMAT || code == VR_ENOTSUP || code == VR_EINVAL;
}

/* Whether a failure names this worker's own environment, not the chunk:
 * its input root or storage mount (serve_files.env), a file it may not
 * read or write (a read-only mount, permissions), its GPU. Another worker
 * would likely succeed: the failure is charged to this one (RQ_FAIL_WORKER),
 * and the chunk keeps its attempts. */
static int serve_error_mine(const struct serve *s, int code)
{
    return s->env_fault || s->storage_fault || code == VR_EACCES || code == VR_ECUDA;
}

/* A codec failure (VR_ECODEC: a decoder or encoder that libav* or NVDEC
 * would not open or run) is this worker's while the chunk has not failed
 * on workers' turns SERVE_CODEC_FAULTS times yet: a source the others
 * decode goes to them at once, and a worker whose decoder is broken
 * quarantines itself as a blind one does. Past that the source is what
 * nobody decodes, and the failure is the chunk's: its attempts run out and
 * the job ends with the reason, instead of every worker quarantining in
 * turn until RQ_MAX_FAULTS; and the worker's streak of faults ends, as it
 * was not its own. A chunk record that cannot be read: this
 * worker's (the chunk keeps its attempts). */
static int serve_codec_mine(struct serve *s, const struct rq_held *h, long long *faults)
{
    char ck[160];
    rq_key_chunk(ck, sizeof ck, h->job, h->idx);
    *faults = 0;
    return rq_hget_ll(s->q, ck, "faults", faults, NULL) < 0 || *faults < SERVE_CODEC_FAULTS;
}

/* A failure of this worker's own: counted; SERVE_QUARANTINE_AFTER in a row
 * and it quarantines itself (takes no work until its probe, after a
 * backoff that doubles at each failed probe: serve_loop). The reason gets
 * the worker's name, and what it does now, for the job's events. */
static void serve_fault(struct serve *s, char *reason, size_t n, const char *msg)
{
    s->faults_in_row++;
    if (s->faults_in_row < SERVE_QUARANTINE_AFTER) {
        snprintf(reason, n, "worker %.128s: %.300s", s->name, msg);
        return;
    }
    double wait = s->quarantine_s > 0 ? 2 * s->quarantine_s : SERVE_PROBE_FIRST_S;
    s->quarantine_s = wait < SERVE_PROBE_MAX_S ? wait : SERVE_PROBE_MAX_S;
    s->probe_at = clock_mono_s() + s->quarantine_s;
    pthread_mutex_lock(&s->mu);
    s->quarantined = 1;
    pthread_mutex_unlock(&s->mu);
    snprintf(reason, n, "worker %.128s: %.300s (its %d%s failure of its own in a row: "
             "quarantined, probing again in %.0f s)", s->name, msg, s->faults_in_row,
             s->faults_in_row == 3 ? "rd" : "th", s->quarantine_s);
    log_error("alert: worker %s quarantined: %d chunks in a row failed on its own environment "
              "(last: %s); it takes no work, probing again in %.0f s", s->name, s->faults_in_row,
              msg, s->quarantine_s);
}

/* A chunk done: the environment works; a quarantine ends. */
static void serve_fault_clear(struct serve *s)
{
    if (s->quarantined)
        log_info("worker %s: back in service after its probe", s->name);
    s->faults_in_row = 0;
    s->quarantine_s = 0;
    pthread_mutex_lock(&s->mu);
    s->quarantined = 0;
    pthread_mutex_unlock(&s->mu);
}

int serve_claim_next(struct serve *s, vr_err *err)
{
    return rq_claim_make(s->name, s->claim_key, s->claims, &s->claim, err);
}

/* ---- one chunk, step by step ---- */

/* The task read and checked, then run: 0 with m and sum filled, or the
 * failure in e. rc on entry: 1, or VR_EFORMAT for a task that cannot be
 * read (it fails the chunk at once, instead of running to its lease). */
static int serve_chunk_run(struct serve *s, struct rq_held *h, const struct rq_start *st,
                           int rc, struct metrics *m, char sum[STORAGE_SUM_LEN], vr_err *e)
{
    const char *job = h->job;
    long idx = h->idx;
    struct chunk_task t;
    if (rc > 0)
        rc = chunk_task_parse(st->task, strlen(st->task), &t, e);
    if (rc == 0 && (strcmp(t.job, job) || t.idx != idx))
        rc = vr_err_set(e, VR_EFORMAT, "chunk task names job %s chunk %d, entry %s/%ld",
                        t.job, t.idx, job, idx);
    /* VR_TEST_CODEC_BROKEN (tests only): this worker's decoder fails to
     * open, as a broken libav* build or NVDEC would */
    if (rc == 0 && getenv("VR_TEST_CODEC_BROKEN"))
        rc = vr_err_set(e, VR_ECODEC, "chunk %ld: cannot open the decoder "
                        "(VR_TEST_CODEC_BROKEN)", idx);
    if (rc == 0)
        rc = serve_process(s, &t, m, sum, h->end, sizeof h->end, e);
    return rc;
}

/* The chunk done: its output committed while the claim holds the entry,
 * and counted. 0, or the commit's failure. */
static int serve_chunk_done(struct serve *s, struct rq_held *h, const struct metrics *m,
                            const char *sum, double secs, vr_err *e)
{
    const char *job = h->job;
    long idx = h->idx;
    /* VR_TEST_COMMIT_DELAY_MS (tests only): the output is renamed into
     * place and not yet committed; a kill lands between the two. */
    unsigned delay = clock_test_delay_ms("VR_TEST_COMMIT_DELAY_MS");
    if (delay)
        usleep(delay * 1000u);
    test_gate("VR_TEST_COMMIT_GATE", "the commit"); /* tests only: held as long as a test needs */
    char *mj = metrics_to_string(m);
    double fps = secs > 0 ? m->frames / secs : 0;
    char note[96] = "";
    if (m->concealed) { /* --on-decode-error conceal: the job goes on, and says so */
        log_warn("job %s chunk %ld: %llu decode errors concealed", job, idx,
                 (unsigned long long)m->concealed);
        snprintf(note, sizeof note, "%llu decode errors concealed (damaged packets)",
                 (unsigned long long)m->concealed);
    }
    int rc = serve_commit(s, h, (long long)m->frames, fps, mj, sum, note, e);
    free(mj);
    if (rc == 1) {
        serve_fault_clear(s);
        log_info("job %s chunk %ld: %llu frames in %.2f s (%.1f fps)", job, idx,
                 (unsigned long long)m->frames, secs, fps);
        pthread_mutex_lock(&s->mu);
        s->chunks_done++;
        s->frames_done += (long long)m->frames;
        s->last_fps = fps;
        s->last_gpu_util = metrics_gpu_util(m);
        s->last_gpu_mem = (long long)m->gpu_mem_peak;
        pthread_mutex_unlock(&s->mu);
        rc = 0;
    } else if (rc == 0) {
        log_warn("job %s chunk %ld: lease lost before commit; result dropped", job, idx);
    } else if (rc == RQ_COMMIT_JOB_ENDED) {
        log_info("job %s chunk %ld: job ended before commit; result dropped", job, idx);
        rc = 0;
    } else {
        log_error("job %s chunk %ld: cannot commit, gave up: %s", job, idx, e->msg);
    }
    return rc;
}

/* The chunk failed (rc, e): reported, charged to the chunk (its attempts)
 * or to this worker (its faults, its quarantine). The report's result. */
static int serve_chunk_failed(struct serve *s, struct rq_held *h, int attempt, int rc,
                              const vr_err *e)
{
    const char *job = h->job;
    long idx = h->idx;
    log_error("job %s chunk %ld attempt %d: %s", job, idx, attempt, e->msg);
    char reason[1024];
    const char *msg = e->msg[0] ? e->msg : vr_err_name(rc);
    /* the job's error and events name the worker that saw it (issue 42) */
    snprintf(reason, sizeof reason, "worker %.128s: %.800s", s->name, msg);
    vr_err fe = { 0 };
    int perm = serve_error_permanent(rc);
    long long faults = 0;
    if (serve_error_mine(s, rc) || (rc == VR_ECODEC && serve_codec_mine(s, h, &faults))) {
        perm = s->storage_fault ? RQ_FAIL_STORAGE : RQ_FAIL_WORKER;
        serve_fault(s, reason, sizeof reason, msg);
    } else if (rc == VR_ECODEC) {
        serve_fault_clear(s); /* the source's fault, not this worker's: no quarantine */
        snprintf(reason, sizeof reason, "worker %.128s: %.300s (the chunk's: it failed on "
                 "workers' turns %lld times before; no worker decodes it)", s->name, msg,
                 faults);
    }
    rc = rq_report_fail(s->q, h, reason, perm, &fe);
    if (rc == 0 && perm == 1)
        log_error("job %s chunk %ld: a permanent error: reported, not to be retried", job,
                  idx);
    return rc;
}

/* What the run's rc becomes: nothing when the lease was lost, the job's
 * end when it ended meanwhile, else the commit or the failure's report. */
static int serve_chunk_outcome(struct serve *s, struct rq_held *h, const struct rq_start *st,
                               int rc, const struct metrics *m, const char *sum, double secs,
                               vr_err *e)
{
    const char *job = h->job;
    long idx = h->idx;
    pthread_mutex_lock(&s->mu);
    int lost = s->lost, ended = s->job_ended;
    pthread_mutex_unlock(&s->mu);
    if (lost) {
        /* Another worker owns the chunk now: no result, no XACK. */
        log_warn("job %s chunk %ld: lease lost; dropped without acknowledging", job, idx);
        rc = 0;
    } else if (ended) {
        /* Cancelled or failed meanwhile: never commit, even if the pipeline
         * finished before it saw the cancel; the fail script acks the entry
         * of an ended job without touching its counters. */
        log_info("job %s chunk %ld: job ended; chunk abandoned, not committed (%s)", job, idx,
                 rc < 0 ? e->msg : "it had finished");
        vr_err fe = { 0 };
        rc = rq_report_fail(s->q, h, "job ended", 0, &fe);
    } else if (rc == 0) {
        rc = serve_chunk_done(s, h, m, sum, secs, e);
    } else {
        rc = serve_chunk_failed(s, h, st->attempt, rc, e);
    }
    return rc;
}

int serve_chunk(struct serve *s, const struct rq_msg *msg, const struct rq_claim *claim)
{
    const char *job = rq_msg_get(msg, "job"), *idxs = rq_msg_get(msg, "idx");
    char bad[128];
    long idx = -1;
    struct rq_held h = { .claim = *claim, .idx = -1 };
    snprintf(h.stream, sizeof h.stream, "%s", msg->stream);
    snprintf(h.id, sizeof h.id, "%s", msg->id);
    if (!job || !job_id_valid(job) || !idxs ||
        cli_parse_long("idx", idxs, 0, 99999, &idx, bad, sizeof bad) < 0) {
        log_error("%s %s: not a chunk entry (job/idx missing or bad); skipped", msg->stream,
                  msg->id);
        return rq_report_skip(s->q, &h, "not a chunk entry", NULL);
    }
    snprintf(h.job, sizeof h.job, "%s", job);
    h.idx = (int)idx;
    log_ctx_process(job, (int)idx); /* every thread's lines name the chunk */
    struct rq_start *st = calloc(1, sizeof *st);
    struct metrics *m = calloc(1, sizeof *m);
    vr_err e = { 0 };
    int rc = 0;
    if (!st || !m) {
        rc = VR_ENOMEM;
        goto out;
    }
    char why[128] = "";
    rc = serve_start(s, &h, st, why, sizeof why, &e);
    if (rc == RQ_HELD_LOST || rc == RQ_HELD_JOB_ENDED) {
        log_info("job %s chunk %ld: skipped (%s)", job, idx, why);
        rc = rq_report_skip(s->q, &h, why, &e);
        goto out;
    }
    /* a task that cannot be read (missing, too long) fails the chunk
     * below, at once, instead of leaving it running to its lease */
    if (rc < 0 && rc != VR_EFORMAT)
        goto out;
    serve_set_busy(s, &h, 1);
    log_info("job %s chunk %ld: attempt %d", job, idx, st->attempt);
    double t0 = clock_mono_s();
    char sum[STORAGE_SUM_LEN] = "";
    rc = serve_chunk_run(s, &h, st, rc, m, sum, &e);
    double secs = clock_mono_s() - t0;
    rc = serve_chunk_outcome(s, &h, st, rc, m, sum, secs, &e);
    serve_set_busy(s, NULL, 0);
out:
    log_ctx_process(NULL, -1);
    free(st);
    free(m);
    return rc;
}

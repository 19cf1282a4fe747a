/*
 * serve_chunk.c - one chunk in a worker: take it (attempt counted in its
 * record), run pipeline_run() on it, make the output durable, then commit
 * (result + XACK, only while the lease is still ours) or report the failure
 * (requeue or dead-letter, decided atomically in Redis).
 */
#include "serve.h"

#include "clock.h"
#include "job.h"
#include "output_kinds.h"
#include "log.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum pipe_output serve_output(const char *kind)
{
    int k = output_kind_parse(kind); /* the spec was validated at submit */
    return k < 0 ? PIPE_OUT_MASK : (enum pipe_output)k;
}

static void serve_set_busy(struct serve *s, const struct rq_msg *m, const char *job, int idx,
                           int busy)
{
    pthread_mutex_lock(&s->mu);
    s->busy = busy;
    if (busy) {
        snprintf(s->id, sizeof s->id, "%s", m->id);
        snprintf(s->stream, sizeof s->stream, "%s", m->stream);
        snprintf(s->job, sizeof s->job, "%s", job);
        s->idx = idx;
        s->started_ms = rq_now_ms();
        s->cancel = 0;
        s->lost = 0;
        s->job_ended = 0;
    }
    pthread_mutex_unlock(&s->mu);
}

/* Runs the pipeline on the task; fills m and err. */
static int serve_process(struct serve *s, const struct chunk_task *t, struct metrics *m,
                         vr_err *err)
{
    struct pipe_opts o;
    memset(&o, 0, sizeof o);
    int rc = config_load_profile(&o.cfg, t->profile, err);
    if (rc == 0 && t->config[0])
        rc = config_apply_text(&o.cfg, t->config, "the job's config", err);
    if (rc < 0)
        return rc;
    o.backend = s->backend;
    o.gpu = s->gpu;
    o.encode_threads = s->encode_threads;
    /* the job's layout, decided once from the whole source (a chunk file
     * has neither its name nor, always, its metadata) */
    o.layout = t->layout[0] ? seg_layout_parse(t->layout) : -1;
    o.output = serve_output(t->output_kind);
    o.cancel = &s->cancel;
    o.warm = s->cold ? NULL : &s->warm;
    o.preroll_until_ms = t->preroll_until;
    o.warmup_from_ms = t->warmup_from;
    char in[STORAGE_PATH_MAX], out[STORAGE_PATH_MAX], dir[STORAGE_PATH_MAX];
    if ((rc = storage_path(s->storage, t->in, in, sizeof in, err)) < 0 ||
        (rc = storage_path(s->storage, t->out, out, sizeof out, err)) < 0)
        return rc;
    snprintf(dir, sizeof dir, "%s", out);
    if ((rc = storage_mkdirs(dirname(dir), err)) < 0)
        return rc;
    if ((rc = pipeline_run(&o, in, out, m, err)) < 0)
        return rc;
    /* Commit order: the output is durable before Redis hears of it. */
    if ((rc = storage_sync_file(out, err)) < 0)
        return rc;
    if ((long long)m->frames != t->frames)
        return vr_err_set(err, VR_EFORMAT, "%s: %llu frames written, the chunk has %lld",
                          t->out, (unsigned long long)m->frames, t->frames);
    return 0;
}

int serve_chunk(struct serve *s, const struct rq_msg *msg)
{
    const char *job = rq_msg_get(msg, "job"), *idxs = rq_msg_get(msg, "idx");
    char *end = NULL;
    long idx = idxs ? strtol(idxs, &end, 10) : -1;
    if (!job || !job_id_valid(job) || !end || *end || idx < 0 || idx >= 100000) {
        log_error("%s %s: not a chunk entry (job/idx missing or bad); acknowledged and skipped",
                  msg->stream, msg->id);
        return rq_ack(s->q, msg->stream, RQ_G_WORKERS, msg->id, NULL);
    }
    log_ctx_process(job, (int)idx); /* every thread's lines name the chunk */
    struct rq_start *st = malloc(sizeof *st);
    struct metrics *m = calloc(1, sizeof *m);
    vr_err e = { 0 };
    int rc = 0;
    if (!st || !m) {
        rc = VR_ENOMEM;
        goto out;
    }
    char why[128] = "";
    rc = rq_chunk_start(s->q, msg->stream, s->name, msg->id, job, (int)idx, st, why, sizeof why, &e);
    if (rc <= 0) {
        if (rc == 0)
            log_info("job %s chunk %ld: skipped (%s)", job, idx, why);
        else
            log_warn("job %s chunk %ld: cannot start: %s", job, idx, e.msg);
        goto out;
    }
    struct chunk_task t;
    serve_set_busy(s, msg, job, (int)idx, 1);
    log_info("job %s chunk %ld: attempt %d", job, idx, st->attempt);
    double t0 = clock_mono_s();
    rc = chunk_task_parse(st->task, strlen(st->task), &t, &e);
    if (rc == 0 && (strcmp(t.job, job) || t.idx != idx))
        rc = vr_err_set(&e, VR_EFORMAT, "chunk task names job %s chunk %d, entry %s/%ld",
                        t.job, t.idx, job, idx);
    if (rc == 0)
        rc = serve_process(s, &t, m, &e);
    double secs = clock_mono_s() - t0;

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
                 rc < 0 ? e.msg : "it had finished");
        vr_err fe = { 0 };
        rc = rq_chunk_fail(s->q, msg->stream, s->name, msg->id, job, (int)idx, "job ended", 0, &fe);
        rc = rc < 0 ? rc : 0;
    } else if (rc == 0) {
        char *mj = metrics_to_string(m);
        double fps = secs > 0 ? m->frames / secs : 0;
        rc = serve_commit(s, msg, job, (int)idx, (long long)m->frames, fps, mj, &e);
        free(mj);
        if (rc == 1) {
            log_info("job %s chunk %ld: %llu frames in %.2f s (%.1f fps)", job, idx,
                     (unsigned long long)m->frames, secs, fps);
            pthread_mutex_lock(&s->mu);
            s->chunks_done++;
            s->frames_done += (long long)m->frames;
            s->last_fps = fps;
            pthread_mutex_unlock(&s->mu);
            rc = 0;
        } else if (rc == 0) {
            log_warn("job %s chunk %ld: lease lost before commit; result dropped", job, idx);
        } else if (rc == RQ_COMMIT_JOB_ENDED) {
            log_info("job %s chunk %ld: job ended before commit; result dropped", job, idx);
            rc = 0;
        } else {
            log_error("job %s chunk %ld: cannot commit, gave up: %s", job, idx, e.msg);
        }
    } else {
        log_error("job %s chunk %ld attempt %d: %s", job, idx, st->attempt, e.msg);
        char reason[sizeof e.msg];
        snprintf(reason, sizeof reason, "%s", e.msg[0] ? e.msg : vr_err_name(rc));
        vr_err fe = { 0 };
        rc = rq_chunk_fail(s->q, msg->stream, s->name, msg->id, job, (int)idx, reason, 0, &fe);
        if (rc == 2)
            log_error("job %s chunk %ld: dead-lettered after %d attempts", job, idx, st->attempt);
        rc = rc < 0 ? rc : 0;
    }
    serve_set_busy(s, NULL, NULL, 0, 0);
out:
    log_ctx_process(NULL, -1);
    free(st);
    free(m);
    return rc;
}

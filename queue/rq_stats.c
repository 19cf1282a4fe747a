/*
 * rq_stats.c - reads a job's figures from its hash and chunk records and
 * merges the chunks' histograms (see rq_stats.h).
 */
#include "rq_stats.h"

#include "job.h"
#include "rq_fleet.h"
#include "text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ---- */

static void rq_stats_worker(struct rq_job_status *st, const char *name, long long frames,
                            double busy_s)
{
    int i;
    for (i = 0; i < st->nworkers; i++)
        if (strcmp(st->workers[i].name, name) == 0)
            break;
    if (i == st->nworkers) {
        if (st->nworkers == RQ_STATS_MAX_WORKERS)
            return;
        st->nworkers++;
        snprintf(st->workers[i].name, sizeof st->workers[i].name, "%.127s", name);
        text_strip_controls(st->workers[i].name);
    }
    st->workers[i].chunks++;
    st->workers[i].frames += frames;
    st->workers[i].busy_s += busy_s;
}

static int rq_stats_chunks(struct rq *q, struct rq_job_status *st, vr_err *err)
{
    struct metrics *m = malloc(sizeof *m);
    if (!m)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    metrics_reset(&st->merged);
    int rc = 0;
    for (long long i = 0; i < st->chunk_slots && rc == 0; i++) {
        char ck[128];
        rq_key_chunk(ck, sizeof ck, st->id, (int)i);
        redisReply *r = rq_cmd(q, err, "HMGET %s state worker frames started_ms done_ms metrics", ck);
        if (!r) {
            rc = err ? err->code : VR_EREDIS;
            break;
        }
        char v[5][160];
        for (int k = 0; k < 5; k++)
            if (r->type != REDIS_REPLY_ARRAY || r->elements != 6 ||
                rq_reply_str(r->element[k], v[k], sizeof v[k], NULL) < 0)
                v[k][0] = '\0';
        /* an ended job's chunks run no more, whatever their records say
         * (a failed job showed "chunks running 2": issue 26, finding 9) */
        if (strcmp(v[0], "running") == 0 && job_state_ended(st->state))
            st->chunks_queued++;
        else if (strcmp(v[0], "running") == 0)
            st->chunks_running++;
        else if (strcmp(v[0], "dead") == 0)
            st->chunks_dead++;
        else if (strcmp(v[0], "queued") == 0)
            st->chunks_queued++;
        else if (strcmp(v[0], "done") == 0) {
            long long fr = rq_record_ll(v[2]);
            st->chunk_frames_sum += fr;
            rq_stats_worker(st, v[1], fr, (rq_record_ll(v[4]) - rq_record_ll(v[3])) / 1000.0);
            const redisReply *mj = r->element[5];
            if (mj->type == REDIS_REPLY_STRING && mj->len > 2 && mj->len <= METRICS_MAX_JSON &&
                metrics_from_string(m, mj->str, mj->len, NULL) == 0) {
                metrics_merge(&st->merged, m);
                st->have_metrics = 1;
            }
        }
        freeReplyObject(r);
    }
    free(m);
    return rc;
}

/* Whether chunk "<job>/<idx>" (a heartbeat's chunk field) is still running
 * by its own record: a worker's heartbeat goes on naming the chunk it just
 * committed until its next beat, and those frames are in frames_done
 * already (counted twice, the count then fell back: issue 45, item 8). */
static int rq_chunk_still_running(struct rq *q, const char *id, const char *chunk)
{
    long long idx = rq_record_ll(chunk + strlen(id) + 1);
    char ck[128], state[16];
    if (idx < 0 || idx > 100000)
        return 0;
    rq_key_chunk(ck, sizeof ck, id, (int)idx);
    return rq_hget(q, ck, "state", state, sizeof state, NULL) > 0 && !strcmp(state, "running");
}

/* The frames live workers have encoded so far of job id's running chunks
 * (their heartbeats' chunk_frames): progress before any chunk commits. */
static long long rq_frames_running(struct rq *q, const char *id)
{
    enum { MAX = 1024 };
    struct rq_worker_info *w = malloc(MAX * sizeof *w);
    if (!w)
        return 0;
    int n = rq_workers_list(q, w, MAX, NULL);
    size_t len = strlen(id);
    long long sum = 0, now = rq_server_ms(q);
    for (int i = 0; i < n; i++)
        if (!strncmp(w[i].chunk, id, len) && w[i].chunk[len] == '/' &&
            !rq_worker_silent(&w[i], now) && w[i].chunk_frames > 0 &&
            rq_chunk_still_running(q, id, w[i].chunk))
            sum += w[i].chunk_frames;
    free(w);
    return sum;
}

int rq_job_status_fill(struct rq_job_status *st, const redisReply *r, vr_err *err)
{
    const char *id = st->id;
    long long planned = 0, pieces = 0;
    long long stopped = 0; /* stopped: ms the job spent stopped (vrctl run) */
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 || r->elements > 2 * 64)
        return vr_err_set(err, VR_EFORMAT, "job %s: unexpected reply", id);
    if (r->elements == 0)
        return vr_err_set(err, VR_ENOENT, "no job '%s'", id);
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        char k[32], v[1024];
        if (rq_reply_str(r->element[i], k, sizeof k, NULL) <= 0)
            continue;
        if (strcmp(k, "spec") == 0) {
            struct job_spec js;
            const redisReply *e = r->element[i + 1];
            if (e->type == REDIS_REPLY_STRING && job_spec_parse(e->str, e->len, &js, NULL) == 0) {
                snprintf(st->input, sizeof st->input, "%s", js.input);
                snprintf(st->output, sizeof st->output, "%s", js.output);
                snprintf(st->output_kind, sizeof st->output_kind, "%s", js.output_kind);
            }
            continue;
        }
        if (rq_reply_str(r->element[i + 1], v, sizeof v, NULL) <= 0)
            continue;
        if (strcmp(k, "state") == 0) snprintf(st->state, sizeof st->state, "%.15s", v);
        else if (strcmp(k, "error") == 0) snprintf(st->error, sizeof st->error, "%.511s", v);
        else if (strcmp(k, "frames_total") == 0) st->frames_total = rq_record_ll(v);
        else if (strcmp(k, "frames_done") == 0) st->frames_done = rq_record_ll(v);
        else if (strcmp(k, "chunks_total") == 0) st->chunks_total = rq_record_ll(v);
        else if (strcmp(k, "chunks_done") == 0) st->chunks_done = rq_record_ll(v);
        else if (strcmp(k, "chunks_planned") == 0) planned = rq_record_ll(v);
        else if (strcmp(k, "cuts") == 0) st->cuts = rq_record_ll(v);
        else if (strcmp(k, "pieces") == 0) pieces = rq_record_ll(v);
        else if (strcmp(k, "created_ms") == 0) st->created_ms = rq_record_ll(v);
        else if (strcmp(k, "started_ms") == 0) st->started_ms = rq_record_ll(v);
        else if (strcmp(k, "finished_ms") == 0) st->finished_ms = rq_record_ll(v);
        else if (strcmp(k, "stopped_ms") == 0) stopped = rq_record_ll(v);
        else if (strcmp(k, "split_s") == 0) st->split_s = rq_record_double(v);
        else if (strcmp(k, "stitch_s") == 0) st->stitch_s = rq_record_double(v);
    }
    /* text anyone with Redis access (or a file name) may have written:
     * nothing in it drives the terminal that shows it */
    text_strip_controls(st->state);
    text_strip_controls(st->error);
    text_strip_controls(st->input);
    text_strip_controls(st->output);
    /* while the job is planned or split, the chunks queued so far (a range
     * plan: all of them at once), so status moves from the first moment */
    if (st->chunks_total <= 0 && planned > 0)
        st->chunks_total = planned;
    if (st->chunks_total < 0 || st->chunks_total > 100000)
        return vr_err_set(err, VR_EFORMAT, "job %s: chunks_total %lld out of range", id, st->chunks_total);
    st->chunk_slots = pieces > st->chunks_total && pieces <= 100000 ? pieces : st->chunks_total;
    long long t0 = st->started_ms ? st->started_ms : st->created_ms;
    long long t1 = st->finished_ms ? st->finished_ms : rq_now_ms();
    if (stopped < 0 || stopped >= t1 - t0) /* vrctl run --resume's pauses, range-checked */
        stopped = 0;
    st->wall_s = t0 ? (t1 - t0 - stopped) / 1000.0 : 0;
    st->fps = st->wall_s > 0 ? st->frames_done / st->wall_s : 0;
    st->eta_s = -1; /* none for a job that ended */
    if (st->fps > 0 && st->frames_total > 0 && !job_state_ended(st->state))
        st->eta_s = (st->frames_total - st->frames_done) / st->fps;
    return 0;
}

int rq_job_status(struct rq *q, const char *id, int with_chunks, struct rq_job_status *st,
                  vr_err *err)
{
    memset(st, 0, sizeof *st);
    if (!job_id_valid(id))
        return vr_err_set(err, VR_EINVAL, "'%s' is not a job id", id);
    snprintf(st->id, sizeof st->id, "%s", id);
    char jk[128];
    rq_key_job(jk, sizeof jk, id);
    redisReply *r = rq_cmd(q, err, "HGETALL %s", jk);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int rc = rq_job_status_fill(st, r, err);
    freeReplyObject(r);
    if (rc < 0)
        return rc;
    if (!strcmp(st->state, "running")) {
        /* the frames in flight count from the first second: committed
         * frames alone gave 0.0 fps and no ETA for the whole first wave */
        st->frames_running = rq_frames_running(q, id);
        long long shown = st->frames_done + st->frames_running;
        st->fps = st->wall_s > 0 ? shown / st->wall_s : 0;
        st->eta_s = -1;
        if (st->fps > 0 && st->frames_total > shown)
            st->eta_s = (st->frames_total - shown) / st->fps;
        else if (st->fps > 0 && st->frames_total > 0)
            st->eta_s = 0;
    }
    if (!with_chunks)
        return 0;
    st->have_chunks = 1;
    return rq_stats_chunks(q, st, err);
}

/* ---- output ---- */

/* Milliseconds are the figures' resolution; more digits are noise. */
static double rq_r3(double v)
{
    return round(v * 1000) / 1000;
}

json_t *rq_job_status_json(const struct rq_job_status *st)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f}",
                          "id", st->id, "state", st->state, "error", st->error,
                          "input", st->input, "output", st->output,
                          "frames", (json_int_t)st->frames_total,
                          "frames_done", (json_int_t)st->frames_done,
                          "frames_running", (json_int_t)st->frames_running,
                          "chunks_total", (json_int_t)st->chunks_total,
                          "chunks_done", (json_int_t)st->chunks_done,
                          "fps", rq_r3(st->fps), "wall_s", rq_r3(st->wall_s),
                          "split_s", rq_r3(st->split_s), "stitch_s", rq_r3(st->stitch_s),
                          "eta_s", rq_r3(st->eta_s));
    if (o)
        json_object_set_new(o, "cuts", json_integer(st->cuts));
    if (!o || !st->have_chunks)
        return o;
    /* Only the chunk records know these: without them they would be zeros
     * that look like figures. */
    json_object_set_new(o, "chunks_running", json_integer(st->chunks_running));
    json_object_set_new(o, "chunks_dead", json_integer(st->chunks_dead));
    json_object_set_new(o, "chunk_frames_sum", json_integer(st->chunk_frames_sum));
    json_t *w = json_object();
    for (int i = 0; w && i < st->nworkers; i++) {
        const struct rq_worker_stat *ws = &st->workers[i];
        json_object_set_new(w, ws->name, json_pack("{s:I, s:I, s:f, s:f}",
                            "chunks", (json_int_t)ws->chunks, "frames", (json_int_t)ws->frames,
                            "busy_s", rq_r3(ws->busy_s),
                            "fps", rq_r3(ws->busy_s > 0 ? ws->frames / ws->busy_s : 0.0)));
    }
    json_object_set_new(o, "workers", w ? w : json_null());
    if (st->have_metrics) {
        json_t *s = json_object();
        for (int k = 0; s && k < MET_NSTAGES; k++) {
            const struct hist *h = &st->merged.stage[k];
            if (!h->count)
                continue;
            json_object_set_new(s, metrics_stage_name(k), json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}",
                                "n", (json_int_t)h->count, "total_s", rq_r3(h->sum_ns / 1e9),
                                "mean_us", rq_r3(hist_mean(h)),
                                "p50_us", rq_r3(hist_percentile(h, 50)),
                                "p95_us", rq_r3(hist_percentile(h, 95)),
                                "p99_us", rq_r3(hist_percentile(h, 99))));
        }
        json_object_set_new(o, "stages", s ? s : json_null());
    }
    return o;
}

int rq_job_list(struct rq *q, char (*ids)[48], int max, vr_err *err)
{
    redisReply *r = rq_cmd(q, err, "ZREVRANGE %s 0 %d", RQ_INDEX, max - 1);
    if (!r)
        return err ? err->code : VR_EREDIS;
    int n = 0;
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements && n < max; i++)
            if (rq_reply_str(r->element[i], ids[n], 48, NULL) > 0)
                n++;
    freeReplyObject(r);
    return n;
}

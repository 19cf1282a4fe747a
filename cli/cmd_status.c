/*
 * cmd_status.c - `vrctl status`, `vrctl metrics`, `vrctl workers` and
 * `vrctl watch`: read-only views of jobs and workers.
 */
#include "vrctl.h"

#include "cmdtable.h"
#include "job.h"
#include "rq_events.h"
#include "rq_fleet.h"
#include "rq_stats.h"
#include "text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { VRCTL_STATUS_EVENTS = 5 };

/* The job's last `max` events under `status JOB` (5), or under a live
 * job of the list (1). */
static void vrctl_status_events(struct rq *q, const char *id, int max)
{
    struct rq_event_entry ev[VRCTL_STATUS_EVENTS];
    int n = rq_events_read(q, id, NULL, ev, max, NULL);
    if (n > 0 && max > 1)
        printf("  last events (vrctl events %s for all):\n", id);
    if (n > 0 && max == 1)
        printf("  last event:\n");
    for (int i = 0; i < n; i++) {
        printf("    ");
        vrctl_event_print(&ev[i], 0, stdout);
    }
}

/* Workers that hold a chunk of job `id` (leased, counted as running) but
 * stopped sending heartbeats: killed, stopped, or refused by Redis. Their
 * chunks go back to the queue when the lease lapses. */
static void vrctl_status_silent(struct rq *q, const char *id)
{
    enum { MAXW = 1000 };
    struct rq_worker_info *w = calloc(MAXW, sizeof *w);
    int n = w ? rq_workers_list(q, w, MAXW, NULL) : 0;
    long long now = rq_server_ms(q);
    size_t len = strlen(id);
    char full[512] = "";
    rq_memory_full(q, full, sizeof full, NULL);
    for (int i = 0; i < n; i++) {
        if (strncmp(w[i].chunk, id, len) || w[i].chunk[len] != '/' || !rq_worker_silent(&w[i], now))
            continue;
        if (full[0]) /* alive: Redis refuses its heartbeats (issue 42) */
            printf("  worker %s holds chunk %s, stalled %.1f s: Redis is out of memory and "
                   "refuses its heartbeats\n", w[i].name, w[i].chunk + len + 1,
                   (now - w[i].seen_ms) / 1000.0);
        else
            printf("  worker %s holds chunk %s but is silent for %.1f s (requeued when its lease "
                   "lapses)\n", w[i].name, w[i].chunk + len + 1, (now - w[i].seen_ms) / 1000.0);
    }
    free(w);
}

/* The same as a JSON array of the event objects `events --json` prints. */
static json_t *vrctl_events_json(struct rq *q, const char *id)
{
    struct rq_event_entry ev[VRCTL_STATUS_EVENTS];
    json_t *arr = json_array();
    int n = rq_events_read(q, id, NULL, ev, VRCTL_STATUS_EVENTS, NULL);
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:I, s:o, s:o, s:s}", "id", ev[i].id,
                              "time_ms", (json_int_t)ev[i].ms, "chunk",
                              ev[i].chunk >= 0 ? json_integer(ev[i].chunk) : json_null(),
                              "worker", ev[i].worker[0] ? json_string(ev[i].worker) : json_null(),
                              "msg", ev[i].msg));
    return arr;
}

/* "2026-11-27 07:20:01", local time; "-" for none. */
static void vrctl_local_time(long long ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !localtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, n, "-");
}

/* One job of the list under its header (vrctl_list_header): the input by
 * its file name, the whole path is under `status JOB`. */
static void vrctl_list_header(void)
{
    printf("%-26s %-10s %-19s %11s %15s %7s %8s  %s\n", "JOB", "STATE", "CREATED", "CHUNKS",
           "FRAMES", "FPS", "WALL", "INPUT");
}

static void vrctl_list_job(const struct rq_job_status *st)
{
    char created[32], chunks[32], frames[48];
    vrctl_local_time(st->created_ms, created, sizeof created);
    snprintf(chunks, sizeof chunks, "%lld/%lld", st->chunks_done, st->chunks_total);
    /* the frames `status JOB` and watch show: the list said 0/901 while
     * `status JOB` said 139/901 (issue 45, item 8) */
    snprintf(frames, sizeof frames, "%lld/%lld", st->frames_done + st->frames_running,
             st->frames_total);
    const char *slash = strrchr(st->input, '/');
    printf("%-26s %-10s %-19s %11s %15s %7.1f %7.1fs  %s\n", st->id, st->state, created, chunks,
           frames, st->fps, st->wall_s, slash ? slash + 1 : st->input);
}

/* Whether state is one of the comma-separated `filter` ("" or NULL: all). */
static int vrctl_state_wanted(const char *filter, const char *state)
{
    if (!filter || !filter[0])
        return 1;
    size_t len = strlen(state);
    for (const char *p = filter; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && !strncmp(p, state, n))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static void vrctl_print_job(const struct rq_job_status *st)
{
    printf("%-26s %-10s chunks %lld/%lld  frames %lld/%lld  %.1f fps  %.1f s\n", st->id, st->state,
           st->chunks_done, st->chunks_total, st->frames_done + st->frames_running,
           st->frames_total, st->fps, st->wall_s);
}

/* ---- one job, step by step ---- */

/* One job's object for --json: its status, how it is chunked, a full
 * Redis, the fleet's hints while it waits, and (one job asked) its events. */
static json_t *status_job_json(struct rq *q, const struct rq_job_status *st, const char *id,
                               const char *chunking, const char *full, char hint[][200],
                               int nh)
{
    json_t *o = rq_job_status_json(st);
    if (chunking[0])
        json_object_set_new(o, "chunking", json_string(chunking));
    if (full[0])
        json_object_set_new(o, "stalled", json_string(full));
    json_t *h = json_array();
    for (int k = 0; h && k < nh && !job_state_ended(st->state); k++)
        json_array_append_new(h, json_string(hint[k]));
    if (h && json_array_size(h))
        json_object_set(o, "hints", h);
    json_decref(h);
    if (id)
        json_object_set_new(o, "events", vrctl_events_json(q, id));
    return o;
}

/* The lines of one job asked by id, below its summary. */
static void status_job_detail(struct rq *q, const struct rq_job_status *st, const char *id,
                              const char *chunking)
{
    char created[32];
    vrctl_local_time(st->created_ms, created, sizeof created);
    printf("  created %s\n", created);
    printf("  input  %s%s\n  output %s\n", st->input,
           !strcmp(chunking, "range") ? " (chunks read in place: --chunking range)"
           : !strcmp(chunking, "copy") ? " (chunks cut into files: --chunking copy)"
           : "", st->output);
    const char *step = vrctl_chunk_step(chunking);
    if (job_state_ended(st->state)) /* nothing runs or waits any more */
        printf("  %s %.2f s, stitch %.2f s; chunks unfinished %lld, dead %lld\n", step,
               st->split_s, st->stitch_s, st->chunks_queued, st->chunks_dead);
    else
        printf("  %s %.2f s, stitch %.2f s; chunks running %lld, queued %lld, "
               "dead %lld\n", step, st->split_s, st->stitch_s, st->chunks_running,
               st->chunks_queued, st->chunks_dead);
    for (int w = 0; w < st->nworkers; w++)
        printf("  worker %-40s %lld chunk%s %lld frame%s %.1f fps\n",
               st->workers[w].name, st->workers[w].chunks,
               text_plural(st->workers[w].chunks), st->workers[w].frames,
               text_plural(st->workers[w].frames),
               st->workers[w].busy_s > 0 ? st->workers[w].frames / st->workers[w].busy_s : 0);
    vrctl_status_silent(q, id);
    if (st->error[0])
        printf("  error: %s\n", st->error);
    vrctl_status_events(q, id, VRCTL_STATUS_EVENTS);
}

/* What one `vrctl status` shows, gathered over its jobs. */
struct status_run {
    struct rq *q;
    const struct vrctl_session *v;
    struct rq_job_status *st;
    char full[512];               /* a full maxmemory, why ("" none) */
    char hint[2][200];
    int nh, live, shown;
    json_t *arr;                  /* --json: each job's object */
};

/* Each job of ids[n] (those of the state asked): a line, the details of
 * one asked by id, or its JSON into r->arr. 0, or the exit status when one
 * cannot be read. */
static int status_jobs(struct status_run *r, char (*ids)[48], int n)
{
    const char *id = r->v->id;
    struct rq_job_status *st = r->st;
    vr_err e = { 0 };
    for (int i = 0; i < n; i++) {
        if (rq_job_status(r->q, ids[i], id != NULL, st, &e) < 0) {
            char entry[64];
            if (id && e.code == VR_ENOENT && vrctl_asked(r->q, id, entry) > 0) {
                if (r->v->json)
                    json_array_append_new(r->arr, json_pack("{s:s, s:s}", "id", id, "state", "asked"));
                else
                    printf("%s  asked, not recorded yet: no controller has taken it\n", id);
                return 0;
            }
            if (id && e.code == VR_ENOENT)
                return vrctl_no_job(id);
            fprintf(stderr, "vrctl status: %s\n", e.msg);
            return 1;
        }
        if (!vrctl_state_wanted(r->v->state, st->state))
            continue;
        char chunking[16];
        vrctl_job_chunking(r->q, ids[i], chunking, sizeof chunking);
        r->live |= !job_state_ended(st->state);
        if (!r->v->json && !id && !r->shown)
            vrctl_list_header();
        r->shown++;
        if (r->v->json) {
            json_array_append_new(r->arr, status_job_json(r->q, st, id, chunking, r->full,
                                                          r->hint, r->nh));
        }
        else {
            if (id)
                vrctl_print_job(st);
            else
                vrctl_list_job(st);
            if (!id && !job_state_ended(st->state))
                vrctl_status_events(r->q, ids[i], 1);
            if (id)
                status_job_detail(r->q, st, id, chunking);
        }
    }
    return 0;
}

/* After the jobs: the JSON document, or "no jobs"; the notes where a job
 * waits on them. */
static void status_end(const struct status_run *r)
{
    if (r->v->json) {
        json_t *doc = r->v->id ? json_incref(json_array_get(r->arr, 0)) : json_incref(r->arr);
        char *s = json_dumps(doc, VRCTL_JSON_FLAGS);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(doc);
    } else if (r->shown == 0) {
        printf(r->v->state ? "no %s jobs\n" : "no jobs\n", r->v->state);
    }
    for (int k = 0; !r->v->json && r->live && k < r->nh; k++) /* only where a job waits */
        printf("note: %s\n", r->hint[k]);
}

int cmd_status(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_MAY_ID | VRCTL_WANT_JSON | VRCTL_WANT_STATE, &v);
    if (rc)
        return rc;
    struct status_run r = { .q = v.q, .v = &v, .st = malloc(sizeof *r.st) };
    char (*ids)[48] = calloc(50, 48);
    vr_err e = { 0 };
    int n = 0;
    rc = 1;
    if (!r.st || !ids)
        goto out;
    if (v.id) {
        snprintf(ids[0], 48, "%s", v.id);
        n = 1;
    } else if ((n = vrctl_job_list(v.q, ids, 50, &e)) < 0) {
        fprintf(stderr, "vrctl status: %s\n", e.msg);
        goto out;
    }
    /* A full maxmemory stalls every job silently: say so first. */
    rq_memory_full(v.q, r.full, sizeof r.full, NULL);
    if (r.full[0] && !v.json)
        printf("stalled: %s\n", r.full);
    r.nh = n > 0 ? vrctl_liveness_hints(v.q, r.hint) : 0;
    r.arr = json_array();
    if ((rc = status_jobs(&r, ids, n)) == 0)
        status_end(&r);
    json_decref(r.arr);
out:
    free(r.st);
    free(ids);
    vrctl_end(&v);
    return rc;
}

int cmd_metrics(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_ID | VRCTL_WANT_JSON, &v);
    if (rc)
        return rc;
    struct rq_job_status *st = malloc(sizeof *st);
    vr_err e = { 0 };
    rc = 1;
    if (!st || rq_job_status(v.q, v.id, 1, st, &e) < 0) {
        if (st && e.code == VR_ENOENT)
            rc = vrctl_no_job(v.id);
        else
            fprintf(stderr, "vrctl metrics: %s\n", st ? e.msg : "out of memory");
        goto out;
    }
    if (v.json) {
        json_t *o = rq_job_status_json(st);
        char *s = json_dumps(o, VRCTL_JSON_FLAGS);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        vrctl_print_job(st);
        double wall = st->wall_s > 0 ? st->wall_s : 1;
        char chunking[16];
        vrctl_job_chunking(v.q, v.id, chunking, sizeof chunking);
        printf("%s %.2f s (%.1f%% of the job), stitch %.2f s (%.1f%%)\n",
               vrctl_chunk_step(chunking), st->split_s, 100 * st->split_s / wall, st->stitch_s, 100 * st->stitch_s / wall);
        printf("%-12s %10s %10s %10s %10s %10s %10s\n", "stage (ms)", "frames", "p50", "p95", "p99",
               "mean", "total_s");
        for (int k = 0; st->have_metrics && k < MET_NSTAGES; k++) {
            const struct hist *h = &st->merged.stage[k];
            if (!h->count)
                continue;
            printf("%-12s %10llu %10.3f %10.3f %10.3f %10.3f %10.2f\n", metrics_stage_name(k),
                   (unsigned long long)h->count, hist_percentile(h, 50) / 1e3,
                   hist_percentile(h, 95) / 1e3, hist_percentile(h, 99) / 1e3, hist_mean(h) / 1e3,
                   h->sum_ns / 1e9);
        }
        for (int w = 0; w < st->nworkers; w++)
            printf("worker %-40s %lld chunk%s %lld frame%s %.1f fps\n", st->workers[w].name,
                   st->workers[w].chunks, text_plural(st->workers[w].chunks),
                   st->workers[w].frames, text_plural(st->workers[w].frames),
                   st->workers[w].busy_s > 0 ? st->workers[w].frames / st->workers[w].busy_s : 0);
    }
    rc = 0;
out:
    free(st);
    vrctl_end(&v);
    return rc;
}

int cmd_watch(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_MAY_ID, &v);
    if (rc)
        return rc;
    char entry[64];
    int asked = v.id ? vrctl_asked(v.q, v.id, entry) : 0;
    if (asked > 0) {
        fprintf(stderr, "vrctl: job %s is asked for and not recorded yet; waiting for a "
                "controller to take it\n", v.id);
        asked = vrctl_wait_recorded(v.q, v.id, entry);
    }
    rc = asked < 0 ? cli_fail(1, "Redis failed while job %s waited to be recorded", v.id) : asked;
    if (rc == 0)
        rc = v.id ? vrctl_watch(v.q, v.id, NULL, 1) : vrctl_watch_all(v.q, NULL);
    vrctl_end(&v);
    return rc;
}

int cmd_workers(int argc, char **argv)
{
    struct vrctl_session v;
    int rc = vrctl_begin(argc, argv, VRCTL_WANT_JSON, &v);
    if (rc)
        return rc;
    enum { MAXW = 10000 };
    struct rq_worker_info *w = calloc(MAXW, sizeof *w);
    vr_err e = { 0 };
    int n = w ? rq_workers_list(v.q, w, MAXW, &e) : vr_err_set(&e, VR_ENOMEM, "out of memory");
    if (n < 0) {
        fprintf(stderr, "vrctl workers: %s\n", e.msg);
        free(w);
        vrctl_end(&v);
        return 1;
    }
    json_t *arr = json_array();
    long long now = rq_server_ms(v.q); /* the heartbeats are stamped by Redis's clock */
    /* Out of memory, Redis refuses the heartbeats: the workers are alive,
     * stalled, not gone (issue 42) */
    char full[512] = "";
    rq_memory_full(v.q, full, sizeof full, NULL);
    if (full[0] && !v.json)
        printf("stalled: %s\n", full);
    if (!v.json && n)
        printf("%-40s %-8s %-8s %-40s %10s  %s\n", "WORKER", "GPU", "STATE", "CHUNK",
               "LAST FPS", "DONE");
    for (int i = 0; i < n; i++) {
        /* a worker silent for 3 heartbeats is not busy, whatever its key says */
        if (rq_worker_silent(&w[i], now))
            snprintf(w[i].state, sizeof w[i].state, "%s", full[0] ? "stalled" : "silent");
        if (v.json)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I}", "name",
                                  w[i].name, "gpu", w[i].gpu, "state", w[i].state, "chunk",
                                  w[i].chunk, "fps", round(w[i].fps * 1000) / 1000, "chunks_done",
                                  (json_int_t)w[i].chunks_done, "frames_done",
                                  (json_int_t)w[i].frames_done));
        else
            printf("%-40s %-8s %-8s %-40s %10.1f  %lld chunk%s, %lld frame%s\n", w[i].name,
                   w[i].gpu, w[i].state, w[i].chunk[0] ? w[i].chunk : "-", w[i].fps,
                   w[i].chunks_done, text_plural(w[i].chunks_done), w[i].frames_done,
                   text_plural(w[i].frames_done));
    }
    if (v.json) {
        char *s = json_dumps(arr, VRCTL_JSON_FLAGS);
        if (s)
            printf("%s\n", s);
        free(s);
    } else if (!n) {
        printf("no live workers\n");
    }
    json_decref(arr);
    free(w);
    vrctl_end(&v);
    return 0;
}

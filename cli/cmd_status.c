/*
 * cmd_status.c - `vrctl status`, `vrctl metrics`, `vrctl workers` and
 * `vrctl watch`: read-only views of jobs and workers.
 */
#include "vrctl.h"

#include "cli.h"
#include "job.h"
#include "rq_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses [--redis URL] [--json] [ID]; returns 0 or a usage exit code. */
static void vrctl_print_job(const struct rq_job_status *st)
{
    printf("%-26s %-10s chunks %lld/%lld  frames %lld/%lld  %.1f fps  %.1f s\n", st->id, st->state,
           st->chunks_done, st->chunks_total, st->frames_done, st->frames_total, st->fps,
           st->wall_s);
}

int cmd_status(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int json = 0;
    int rc = vrctl_args(argc, argv, &redis, &json, &id, 0);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    struct rq_job_status *st = malloc(sizeof *st);
    char (*ids)[48] = calloc(50, 48);
    vr_err e = { 0 };
    int n = 0;
    rc = 1;
    if (!st || !ids)
        goto out;
    if (id) {
        snprintf(ids[0], 48, "%s", id);
        n = 1;
    } else if ((n = rq_job_list(q, ids, 50, &e)) < 0) {
        fprintf(stderr, "vrctl status: %s\n", e.msg);
        goto out;
    }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        if (rq_job_status(q, ids[i], id != NULL, st, &e) < 0) {
            fprintf(stderr, "vrctl status: %s\n", e.msg);
            json_decref(arr);
            goto out;
        }
        if (json)
            json_array_append_new(arr, rq_job_status_json(st));
        else {
            vrctl_print_job(st);
            if (id) {
                printf("  input  %s\n  output %s\n", st->input, st->output);
                printf("  split %.2f s, stitch %.2f s; chunks running %lld, queued %lld, dead %lld\n",
                       st->split_s, st->stitch_s, st->chunks_running, st->chunks_queued,
                       st->chunks_dead);
                for (int w = 0; w < st->nworkers; w++)
                    printf("  worker %-40s %lld chunks %lld frames %.1f fps\n", st->workers[w].name,
                           st->workers[w].chunks, st->workers[w].frames,
                           st->workers[w].busy_s > 0 ? st->workers[w].frames / st->workers[w].busy_s : 0);
                if (st->error[0])
                    printf("  error: %s\n", st->error);
            }
        }
    }
    if (json) {
        json_t *doc = id ? json_incref(json_array_get(arr, 0)) : json_incref(arr);
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(doc);
    } else if (n == 0) {
        printf("no jobs\n");
    }
    json_decref(arr);
    rc = 0;
out:
    free(st);
    free(ids);
    rq_free(&q);
    return rc;
}

int cmd_metrics(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int json = 0;
    int rc = vrctl_args(argc, argv, &redis, &json, &id, 1);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    struct rq_job_status *st = malloc(sizeof *st);
    vr_err e = { 0 };
    rc = 1;
    if (!st || rq_job_status(q, id, 1, st, &e) < 0) {
        fprintf(stderr, "vrctl metrics: %s\n", st ? e.msg : "out of memory");
        goto out;
    }
    if (json) {
        json_t *o = rq_job_status_json(st);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        vrctl_print_job(st);
        double wall = st->wall_s > 0 ? st->wall_s : 1;
        printf("split %.2f s (%.1f%% of the job), stitch %.2f s (%.1f%%)\n", st->split_s,
               100 * st->split_s / wall, st->stitch_s, 100 * st->stitch_s / wall);
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
            printf("worker %-40s %lld chunks %lld frames %.1f fps\n", st->workers[w].name,
                   st->workers[w].chunks, st->workers[w].frames,
                   st->workers[w].busy_s > 0 ? st->workers[w].frames / st->workers[w].busy_s : 0);
    }
    rc = 0;
out:
    free(st);
    rq_free(&q);
    return rc;
}

int cmd_watch(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int rc = vrctl_args(argc, argv, &redis, NULL, &id, 1);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    rc = vrctl_watch(q, id, NULL);
    rq_free(&q);
    return rc;
}

int cmd_workers(int argc, char **argv)
{
    const char *redis = NULL, *id;
    int json = 0;
    int rc = vrctl_args(argc, argv, &redis, &json, &id, 0);
    if (rc)
        return rc;
    struct rq *q = vrctl_connect(redis);
    if (!q)
        return 1;
    vr_err e = { 0 };
    redisReply *r = rq_cmd(q, &e, "SMEMBERS %s", RQ_WORKERS);
    if (!r) {
        fprintf(stderr, "vrctl workers: %s\n", e.msg);
        rq_free(&q);
        return 1;
    }
    json_t *arr = json_array();
    int live = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && i < 10000; i++) {
        char name[160], key[200], v[6][64];
        static const char *const f[6] = { "gpu", "state", "chunk", "fps", "chunks_done", "frames_done" };
        if (rq_reply_str(r->element[i], name, sizeof name, NULL) <= 0)
            continue;
        snprintf(key, sizeof key, "vr:worker:%s", name);
        int found = 0;
        for (int k = 0; k < 6; k++) {
            v[k][0] = '\0';
            found |= rq_hget(q, key, f[k], v[k], sizeof v[k], NULL) > 0;
        }
        if (!found) { /* heartbeat expired: the worker is gone */
            redisReply *d = rq_cmd(q, NULL, "SREM %s %s", RQ_WORKERS, name);
            if (d)
                freeReplyObject(d);
            continue;
        }
        live++;
        if (json)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I}", "name", name,
                                  "gpu", v[0], "state", v[1], "chunk", v[2], "fps", atof(v[3]),
                                  "chunks_done", (json_int_t)atoll(v[4]),
                                  "frames_done", (json_int_t)atoll(v[5])));
        else
            printf("%-40s gpu %-4s %-8s chunk %-34s %6.1f fps  %s chunks, %s frames\n", name, v[0],
                   v[1], v[2], atof(v[3]), v[4], v[5]);
    }
    freeReplyObject(r);
    if (json) {
        char *s = json_dumps(arr, JSON_INDENT(2));
        if (s)
            printf("%s\n", s);
        free(s);
    } else if (!live) {
        printf("no live workers\n");
    }
    json_decref(arr);
    rq_free(&q);
    return 0;
}

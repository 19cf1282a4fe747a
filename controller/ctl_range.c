/*
 * ctl_range.c - a chunk's task of a planned range (media/remux_range.h):
 * the numbers of the range in the task's terms, and the range of whole
 * pieces of an elastic job's plan (ctl_plan.c plans, ctl_cut.c cuts).
 */
#include "ctl.h"

#include "job.h"
#include "remux_range.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void ctl_range_merge(const struct remux_plan *pl, int a, int b, struct remux_range *out)
{
    *out = pl->chunks[a];
    const struct remux_range *last = &pl->chunks[b - 1];
    out->end = last->end;
    out->has_end = last->has_end;
    out->own_to = last->own_to;
    out->frames = out->frames_est = 0;
    for (int i = a; i < b && out->frames >= 0; i++)
        out->frames = pl->chunks[i].frames < 0 ? -1 : out->frames + pl->chunks[i].frames;
    for (int i = a; i < b && out->frames_est >= 0; i++)
        out->frames_est = pl->chunks[i].frames_est < 0 ? -1
                                                       : out->frames_est + pl->chunks[i].frames_est;
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

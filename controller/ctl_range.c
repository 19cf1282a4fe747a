/*
 * ctl_range.c - a chunk's task of a planned range (media/remux_range.h;
 * the task holds the same struct chunk_range), and the range of whole
 * pieces of an elastic job's plan (ctl_plan.c plans, ctl_cut.c cuts).
 */
#include "ctl.h"

#include "job.h"
#include "remux_range.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_range_merge(const struct remux_plan *pl, int a, int b, struct chunk_range *out)
{
    *out = pl->chunks[a];
    const struct chunk_range *last = &pl->chunks[b - 1];
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
                        int idx, const struct chunk_range *r, const char *fp, char **task,
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
    snprintf(t->source, sizeof t->source, "%s", js->input);
    t->range = *r; /* the numbers the task carries (job.c); the rest is not written */
    snprintf(t->range.fingerprint, sizeof t->range.fingerprint, "%s", fp);
    if (!t->range.has_end) /* as older tasks said it: no end */
        t->range.end = (struct chunk_key){ INT64_MIN, INT64_MIN };
    int rc = chunk_task_to_json(t, task, err);
    free(t);
    return rc;
}

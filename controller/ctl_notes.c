/*
 * ctl_notes.c - the notes a job's start writes in its record (its notify
 * URL, started_ms, the auto chunk length and wave, the layout, how it is
 * chunked and the plan's counts), gathered along the start and written in
 * one round trip (rq_job_notes): just before its first chunk is queued, so
 * a start resumed by another controller finds chunk_ms and chunk_wave
 * wherever a chunk exists, or before the start fails, so the failure goes
 * to the job's own webhook.
 */
#include "ctl.h"

#include "rq_jobs.h"

#include <stdio.h>
#include <string.h>

void ctl_note(struct ctl_notes *nt, const char *field, const char *value)
{
    size_t len = strlen(value) + 1;
    if (nt->n >= CTL_NOTES_MAX || len > sizeof nt->text - nt->used) {
        nt->lost = 1; /* ctl_notes_write refuses: a note is never dropped silently */
        return;
    }
    nt->field[nt->n] = field;
    nt->off[nt->n++] = nt->used;
    memcpy(nt->text + nt->used, value, len);
    nt->used += len;
}

void ctl_note_ll(struct ctl_notes *nt, const char *field, long long v)
{
    char s[24];
    snprintf(s, sizeof s, "%lld", v);
    ctl_note(nt, field, s);
}

int ctl_notes_write(struct ctl *c, const char *id, struct ctl_notes *nt, vr_err *err)
{
    if (nt->lost)
        return vr_err_set(err, VR_EINVAL, "job %s: more start notes than fit in one call (%d)",
                          id, CTL_NOTES_MAX);
    if (!nt->n)
        return 0;
    const char *values[CTL_NOTES_MAX];
    for (int i = 0; i < nt->n; i++)
        values[i] = nt->text + nt->off[i];
    int rc = rq_job_notes(c->q, id, nt->field, values, nt->n, err);
    if (rc == 0)
        nt->n = 0, nt->used = 0; /* written: a later call writes nothing again */
    return rc;
}

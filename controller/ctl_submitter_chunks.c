/*
 * ctl_submitter_chunks.c - a submitter's chunks in flight, a live count
 * (issue 41, finding 9): `--submitter NAME:MAX:CHUNKS` keeps the chunks
 * NAME's live jobs hold at once (queued or running: a job's chunks_total
 * less its chunks_done) at CHUNKS at most, whatever --chunk-seconds NAME
 * asks and however the elastic cuts split its chunks (ctl_cut.c asks
 * ctl_submitter_may_add_chunks before each cut).
 *
 * A job about to be chunked gets what its submitter's other live jobs
 * leave, less one chunk kept for each of its MAX jobs not live yet (so
 * every job it may still have gets one chunk at least; CHUNKS >= MAX is
 * checked at the option). A live job not chunked yet holds its noted cap
 * (chunk_cap in its record), or one. The cap a job got is noted in its
 * record before its first chunk, so a split resumed by another controller
 * cuts alike whatever the others hold by then. Two controllers chunking
 * two of one submitter's jobs at the same moment may each count the other
 * as one chunk: the limit holds for one controller at a time.
 */
#include "ctl.h"

#include "job.h"
#include "log.h"
#include "rq_jobs.h"
#include "rq_submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_OWNED_SCAN 4096 /* live jobs of a submitter looked at, at most */

/* The submitter with a chunk limit that owns job id, or NULL. */
static const struct ctl_submitter *ctl_chunk_limited_owner(struct ctl *c, const char *id)
{
    char owner[RQ_SUBMITTER_MAX + 1] = "", jk[128];
    if (c->nsubmitters == 0)
        return NULL;
    rq_key_job(jk, sizeof jk, id);
    if (rq_hget(c->q, jk, "owner", owner, sizeof owner, NULL) <= 0)
        return NULL;
    for (int i = 0; i < c->nsubmitters; i++)
        if (!strcmp(c->submitters[i].name, owner) && c->submitters[i].max_chunks > 0)
            return &c->submitters[i];
    return NULL;
}

/* The chunks job id holds: its chunks not done, at least one; a job not
 * chunked yet, its noted cap. 0 when it has ended; <0 Redis failed. */
static long long ctl_job_held(struct ctl *c, const char *id)
{
    char st[32] = "";
    long long total = 0, done = 0, cap = 0;
    vr_err e = { 0 };
    int rc = rq_job_state(c->q, id, st, sizeof st, &e);
    if (rc <= 0 || job_state_ended(st))
        return rc < 0 ? rc : 0;
    if ((rc = rq_job_number(c->q, id, "chunks_total", &total, &e)) < 0 ||
        (rc = rq_job_number(c->q, id, "chunks_done", &done, &e)) < 0 ||
        (rc = rq_job_number(c->q, id, "chunk_cap", &cap, &e)) < 0)
        return rc;
    long long held = total > 0 ? total - done : cap;
    return held > 0 ? held : 1;
}

/* s's live jobs other than `except` (NULL: all) into *jobs, the chunks
 * they hold into *held. 0, or <0 when Redis failed. */
static int ctl_submitter_holds(struct ctl *c, const struct ctl_submitter *s, const char *except,
                               int *jobs, long long *held)
{
    vr_err e = { 0 };
    *jobs = 0;
    *held = 0;
    long long live = rq_owned_live(c->q, s->name, &e); /* prunes ended ones */
    if (live < 0)
        return (int)live;
    char (*ids)[48] = calloc(CTL_OWNED_SCAN, sizeof *ids);
    if (!ids)
        return VR_ENOMEM;
    int n = rq_owned_list(c->q, s->name, ids, CTL_OWNED_SCAN, &e), rc = n < 0 ? n : 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (except && !strcmp(ids[i], except))
            continue;
        long long h = ctl_job_held(c, ids[i]);
        if (h < 0)
            rc = (int)h;
        else if (h > 0) {
            (*jobs)++;
            *held += h;
        }
    }
    free(ids);
    return rc;
}

int ctl_submitter_chunk_cap(struct ctl *c, const char *id)
{
    const struct ctl_submitter *s = ctl_chunk_limited_owner(c, id);
    long long noted = 0, held = 0;
    int others = 0;
    if (!s)
        return c->max_chunks;
    if (rq_job_number(c->q, id, "chunk_cap", &noted, NULL) > 0 && noted > 0)
        return noted < c->max_chunks ? (int)noted : c->max_chunks; /* a resumed split */
    if (ctl_submitter_holds(c, s, id, &others, &held) < 0)
        return s->max_chunks / s->max_live; /* Redis failed: the share no one can exceed */
    /* one chunk kept for each job s may still start, this one aside */
    long long unborn = s->max_live - 1 - others;
    long long left = s->max_chunks - held - (unborn > 0 ? unborn : 0);
    if (left < 1)
        left = 1;
    return left < c->max_chunks ? (int)left : c->max_chunks;
}

int ctl_submitter_may_add_chunks(struct ctl *c, const char *id, int n)
{
    const struct ctl_submitter *s = ctl_chunk_limited_owner(c, id);
    long long held = 0;
    int jobs = 0;
    if (!s)
        return 1;
    if (ctl_submitter_holds(c, s, NULL, &jobs, &held) < 0)
        return 0; /* unknown: no cut this turn */
    long long unborn = s->max_live - jobs;
    if (held + n + (unborn > 0 ? unborn : 0) <= s->max_chunks)
        return 1;
    log_debug("job %s: no cut: submitter %s's live jobs hold %lld chunks (at most %d: "
             "vr-controller --submitter)", id, s->name, held, s->max_chunks);
    return 0;
}

/*
 * rq_jstate.h - a job's state on its own (issue 41: workers' reads
 * narrowed). A worker needs only whether a chunk's job still runs, not
 * the job record (the spec's paths, options and webhook URL), so every
 * script that writes a job's `state` writes it also to
 *
 *   vr:jstate:<id>   string: the same state
 *
 * which is all the workers' Redis user reads of a job (%R~vr:jstate:*).
 * The purge deletes it with the record. A job recorded by an older
 * controller gets it from rq_jstate_backfill, which a controller runs at
 * its start.
 */
#ifndef VR_RQ_JSTATE_H
#define VR_RQ_JSTATE_H

#include "rq.h"

#define RQ_JSTATE_PREFIX "vr:jstate:"

/* Lua: jstate(jk, st) sets the state key of job key jk ("vr:job:<id>"). */
#define LUA_JSTATE                                                                      \
    "local function jstate(jk, st)\n"                                                   \
    "  redis.call('SET', '" RQ_JSTATE_PREFIX "' .. string.sub(jk, 8), st)\n"             \
    "end\n"

void rq_key_jstate(char *buf, size_t n, const char *job);

/* Job id's state as a worker reads it into buf (n bytes): 1, 0 absent
 * (the job is gone), <0 error. */
int rq_jstate_get(struct rq *q, const char *id, char *buf, size_t n, vr_err *err);

/* Writes the state key of each job in the active set whose record has a
 * state and no state key yet (jobs recorded before the key existed).
 * Returns how many, or <0. */
long long rq_jstate_backfill(struct rq *q, vr_err *err);

#endif

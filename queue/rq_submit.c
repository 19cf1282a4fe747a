/*
 * rq_submit.c - a submitter's own stream and its live jobs (see
 * rq_submit.h). The controller reads the streams with the stream helpers
 * (rq_stream.h) under its group; this file names the keys and keeps the
 * live set.
 */
#include "rq_submit.h"

#include "job.h"
#include "rq_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rq_submitter_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n >= RQ_SUBMITTER_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_' || name[i] == '-'))
            return 0;
    return 1;
}

int rq_submitter_of_user(const char *user, char *name, size_t n)
{
    size_t p = strlen(RQ_SUBMITTER_USER);
    if (strncmp(user, RQ_SUBMITTER_USER, p) || !rq_submitter_name_valid(user + p))
        return 0;
    snprintf(name, n, "%s", user + p);
    return 1;
}

void rq_submit_key(const char *name, char *key, size_t n)
{
    snprintf(key, n, "%s%s", RQ_SUBMIT_PREFIX, name);
}

int rq_submit_as(struct rq *q, const char *name, const char *id, const char *spec_json,
                 long long frames_est, int priority, vr_err *err)
{
    char key[64], fe[32], pr[16], cap[16];
    rq_submit_key(name, key, sizeof key);
    snprintf(fe, sizeof fe, "%lld", frames_est);
    snprintf(pr, sizeof pr, "%d", priority);
    snprintf(cap, sizeof cap, "%d", RQ_SUBMIT_STREAM_MAX);
    const char *argv[] = { "XADD", key, "MAXLEN", "~", cap, "*", "id", id, "spec", spec_json,
                           "frames_est", fe, "priority", pr };
    redisReply *r = rq_cmdargv(q, err, 14, argv, NULL);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

void rq_submit_trim(struct rq *q, const char *name)
{
    char key[64];
    rq_submit_key(name, key, sizeof key);
    freeReplyObject(rq_cmd(q, NULL, "XTRIM %s MAXLEN ~ %d", key, RQ_SUBMIT_STREAM_MAX));
}

long long rq_owned_live(struct rq *q, const char *name, vr_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", RQ_OWNED_PREFIX, name);
    redisReply *r = rq_cmd(q, err, "SMEMBERS %s", key);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    long long live = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        char id[48], st[32] = "";
        int ok = rq_reply_str(r->element[i], id, sizeof id, NULL) > 0 && job_id_valid(id);
        int found = ok ? rq_job_state(q, id, st, sizeof st, err) : 0;
        if (found < 0) {
            freeReplyObject(r);
            return found;
        }
        if (!found || job_state_ended(st)) { /* ended, gone, or no job id at all */
            redisReply *d = rq_cmd(q, NULL, "SREM %s %b", key, r->element[i]->str,
                                   r->element[i]->len);
            freeReplyObject(d);
            continue;
        }
        live++;
    }
    freeReplyObject(r);
    return live;
}

int rq_owned_add(struct rq *q, const char *name, const char *id, vr_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", RQ_OWNED_PREFIX, name);
    redisReply *r = rq_cmd(q, err, "SADD %s %s", key, id);
    if (!r)
        return err && err->code ? err->code : VR_EREDIS;
    freeReplyObject(r);
    return 0;
}

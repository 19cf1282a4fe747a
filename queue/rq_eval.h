/*
 * rq_eval.h - running a Lua script on the server (private to queue/: no
 * other room sends Redis commands). The scripts themselves live beside the
 * verbs they implement (rq_scripts.c, rq_jobs.c, rq_fleet.c).
 */
#ifndef VR_RQ_EVAL_H
#define VR_RQ_EVAL_H

#include "rq.h"

/* EVAL `lua` with the first nkeys of kv as KEYS and the rest as ARGV (at
 * most 32 in all). Returns the reply (the caller frees it) or NULL with err. */
redisReply *rq_eval(struct rq *q, vr_err *err, const char *lua, int nkeys, const char **kv,
                    int nkv);

/* The same for a script that returns an integer, into *out. Returns 0 or
 * VR_E*. */
int rq_eval_int(struct rq *q, vr_err *err, const char *lua, int nkeys, const char **kv,
                int nkv, long long *out);

/* A chunk record's task (reply t) into st->task: 1, or VR_EFORMAT naming
 * chunk job/idx when it is missing, not text, or over st->task's size. */
int rq_task_copy(const redisReply *t, const char *job, int idx, struct rq_start *st,
                 vr_err *err);

#endif

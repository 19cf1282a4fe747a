/*
 * rq_submit.h - submitters who act as themselves (issue 41, findings 3
 * and 9). A submitter with its own Redis user `vrsub-<name>`
 * (deploy/redis-submitter.acl.in) may write one key only, its stream
 *
 *   vr:submit:<name>   stream: {id, spec, frames_est, priority} a job asked for
 *
 * so an entry there was written by that user: the stream's name is the
 * evidence of who submitted, which Redis itself enforces (a Lua script
 * cannot see its caller's user; a field in a record is whatever the
 * writer wrote). A controller configured with the submitter
 * (`--submitter <name>:<max>`) reads the stream, checks the job against
 * the submitter's own roots and limit, and records it itself (owner
 * `<name>` in the job hash), or records it failed, saying why. The jobs a
 * submitter has live are kept in the set vr:owned:<name> (pruned as they
 * end), which the limit counts.
 *
 * The same stream carries a submitter's cancel and retry, entries
 * {cmd: cancel | retry, id}: the controller does either only for a job
 * whose `owner` is the stream's submitter, and answers in
 *
 *   vr:reply:<name>:<entry id>   hash {text: "<exit code> <what>"}, 10 min
 *
 * which vrctl, logged in as vrsub-<name>, waits for.
 */
#ifndef VR_RQ_SUBMIT_H
#define VR_RQ_SUBMIT_H

#include "rq.h"

#define RQ_SUBMIT_PREFIX    "vr:submit:"
#define RQ_OWNED_PREFIX     "vr:owned:"
#define RQ_SUBMITTER_USER   "vrsub-"   /* a submitter's Redis user: vrsub-<name> */
#define RQ_SUBMITTER_MAX    32         /* bytes of a name, with its NUL */
#define RQ_SUBMIT_STREAM_MAX 1000      /* entries a stream keeps (XADD MAXLEN ~) */
#define RQ_REPLY_PREFIX     "vr:reply:"
#define RQ_REPLY_TTL_MS     600000     /* an answer is kept this long */

/* The shared operator's user `vrctl` (RQ_OPERATOR_USER) asks the same way
 * for submit, cancel, retry and purge, under the name RQ_OPERATOR (no
 * submitter's name: '@' is none of a-z0-9_-): its stream vr:submit:@ops, its answers
 * vr:reply:@ops:<entry>; any job, whoever owns it. Purge entries: {cmd:
 * purge, id} one ended job, {cmd: purge-before, id: <ms>} every job ended
 * before then (vrctl purge --older-than). Job entries {id, spec,
 * frames_est, priority} as a submitter's, answered (the id, or why not);
 * the job has no owner. */
#define RQ_OPERATOR         "@ops"
#define RQ_OPERATOR_USER    "vrctl"

/* 1 when name is 1..31 of [a-z0-9_-]. */
int rq_submitter_name_valid(const char *name);

/* The submitter name of a Redis user "vrsub-<name>" into name (n bytes):
 * 1, or 0 when user is no submitter's. */
int rq_submitter_of_user(const char *user, char *name, size_t n);

/* As submitter `name` (or RQ_OPERATOR): asks for job id with spec_json;
 * the entry's id, which the controller's answer is kept under, into entry
 * (n bytes; NULL: not wanted). 0 or VR_E*. */
int rq_submit_as(struct rq *q, const char *name, const char *id, const char *spec_json,
                 long long frames_est, int priority, char *entry, size_t n, vr_err *err);

/* As submitter `name`: asks a controller for cmd ("cancel" | "retry") on
 * job id; the entry's id, which the answer is kept under, into entry (n
 * bytes). 0 or VR_E*. */
int rq_submit_cmd(struct rq *q, const char *name, const char *cmd, const char *id, char *entry,
                  size_t n, vr_err *err);

/* The controller's answer to entry `entry` of name's stream: "<code>
 * <text>", code the exit status vrctl gives (0 done, 1 refused or
 * failed, 2 no such job of name's). Errors are logged by the caller's
 * next command. */
void rq_submit_answer(struct rq *q, const char *name, const char *entry, int code,
                      const char *text);

/* 1 when name's stream holds a job entry for id (asked for; a controller
 * may not have recorded it yet), its entry id into entry (n bytes); 0 when
 * it holds none or this user may not read it (a submitter's user made
 * before it could); <0 Redis failed. */
int rq_submit_asked(struct rq *q, const char *name, const char *id, char *entry, size_t n,
                    vr_err *err);

/* The answer to entry of name's (rq_submit_answer), its code into *code
 * and its text into text (n bytes): 1, 0 none yet, <0 error. */
int rq_submit_answer_get(struct rq *q, const char *name, const char *entry, int *code,
                         char *text, size_t n, vr_err *err);

/* Records job id asked for by submitter `owner` (the controller's half of
 * its submit) in one script, so no controller sees the job before its
 * owner is written: the hash (spec, state queued, counters, owner) and the
 * index; admitted (refusal ""), the active set, owner's live jobs and
 * vr:jobs too; refused, the refusal in its `error` and nothing a
 * controller takes a job from, for the caller to fail it. Owner "": the
 * operator's job, with no owner and no live set. Returns 1 recorded; 2
 * this owner's already, with this spec (an entry handled twice: a
 * controller died before its ack); 3 the same, but refused and not
 * failed yet (its refusal into refusal_out, rn bytes); 0 the id is
 * another job's; <0. */
int rq_submit_record(struct rq *q, const char *owner, const char *id, const char *spec_json,
                     long long frames_est, int priority, const char *refusal,
                     char *refusal_out, size_t rn, vr_err *err);

/* The stream of submitter name into key (n bytes). */
void rq_submit_key(const char *name, char *key, size_t n);

/* Trims name's stream to about RQ_SUBMIT_STREAM_MAX entries (the writer
 * may leave out XADD's MAXLEN). Errors are left to the next read. */
void rq_submit_trim(struct rq *q, const char *name);

/* Submitter name's live jobs (vr:owned:<name>, the ended and gone ones
 * removed on the way): the count, or <0. */
long long rq_owned_live(struct rq *q, const char *name, vr_err *err);

/* A submitter's job ids begin with its name and RQ_SUBMITTER_ID_MARK, an
 * upper-case letter no name holds, so the glob vr:job:<name>S* of its
 * Redis user matches its jobs and no other submitter's (issue 41: reads
 * narrowed). A new id of name's into buf (n >= JOB_ID_MAX): the name, the
 * mark, and the tail of job_new_id cut to fit JOB_ID_MAX (its random part
 * kept first; 7 characters at least). */
#define RQ_SUBMITTER_ID_MARK 'S'
void rq_submit_new_id(const char *name, char *buf, size_t n);

/* 1 when job id is one of submitter name's (rq_submit_new_id's form). */
int rq_submit_id_of(const char *name, const char *id);

/* Submitter name's live jobs' ids (vr:owned:<name>, as recorded) into
 * ids: the count, or <0. */
int rq_owned_list(struct rq *q, const char *name, char (*ids)[48], int max, vr_err *err);

/* Adds job id to name's live jobs. 0 or <0. */
int rq_owned_add(struct rq *q, const char *name, const char *id, vr_err *err);

#endif

/*
 * util-acl.h - a test fleet under deploy/redis-users.acl: the redis-server
 * of a tdist takes the file's exact `user` lines (passwords pw-<role> from
 * files of mode 600), the default user is turned off, and the controller,
 * the workers and vrctl each log in as their own user. What the security
 * tests (t-dist-sec-*) start an attacker's role against.
 */
#ifndef VR_UTIL_ACL_H
#define VR_UTIL_ACL_H

#include "util-redis.h"

#include <stddef.h>
#include <sys/types.h>

struct rq;

struct tacl {
    int port;                       /* the server's TCP port on 127.0.0.1 */
    char uc[128], uw[128], uv[128]; /* redis://<user>@127.0.0.1:<port>: controller, worker, vrctl */
    char pc[320], pw[320], pv[320]; /* their password files */
};

/* ACL SETUSER for every `user NAME RULES...` line of the file at path, each
 * ">CHANGE-ME-<role>" password made ">pw-<role>". Returns the users set. */
int tacl_load_file(struct tdist *d, const char *path);

/* Redis with deploy/redis-users.acl's users, an admin user for the test's
 * own looks (tacl_admin), the default user off. Starts d (no controller,
 * no worker) when it is not started yet. */
void tacl_start(struct tdist *d, struct tacl *a);

/* Redis (AOF on) started from deploy/redis-users.acl itself as its
 * `aclfile` (passwords pw-<role>, an admin user added), as an operator
 * sets it up: a restart (tredis_restart) loads the same file and the AOF.
 * Starts d (no controller, no worker); d must not be started yet. */
void tacl_start_aclfile(struct tdist *d, struct tacl *a);

/* A connection as the test's admin user (rq_free it). */
struct rq *tacl_admin(const struct tacl *a);

/* A controller as the controller's user (roots: d's dir, lease 5 s,
 * webhooks tried once, private addresses allowed), with `extra` options
 * (NULL-terminated, may be NULL); its pid in d->ctl, once its heartbeat
 * shows it alive (30 s at most, else the test fails). */
pid_t tacl_controller(struct tdist *d, const struct tacl *a, const char *const *extra);

/* One more CPU worker as the worker's user; its pid. */
pid_t tacl_worker(struct tdist *d, const struct tacl *a);

/* vrctl ARGS as the vrctl user (pass the worker's url and password file
 * for another role); stdout into out; the exit status. */
int tacl_vrctl(const char *url, const char *pw, char *out, size_t n, const char *const *args);

/* `vrctl submit IN -o OUT --profile fast [extra...]` as the vrctl user;
 * the job's id into id (n bytes). Returns vrctl's exit status. */
int tacl_submit(const struct tacl *a, const char *in, const char *out, const char *const *extra,
                char *id, size_t n);

/* A job whose spec names in and out (profile fast, the defaults else: it
 * may not replace an existing output), asked for as the vrctl user may
 * (an entry of vr:submit:@ops, which a controller records) with no vrctl
 * check on the way; its id into id (n bytes). */
void tacl_spec_by_hand(const struct tacl *a, const char *in, const char *out, char *id, size_t n);

/* argv sent as user (password pw) to a's server: 1 when the ACL refused
 * it (NOPERM), 0 when Redis answered; any other error fails the test. */
int tacl_refused(const struct tacl *a, const char *user, const char *pw, int argc,
                 const char **argv);

/* The command given (words) must be refused to the vrctl user of a. */
#define TACL_VRCTL_REFUSED(a, ...)                                                      \
    do {                                                                                \
        const char *av_[] = { __VA_ARGS__ };                                            \
        cr_assert(tacl_refused(a, "vrctl", "pw-vrctl", sizeof av_ / sizeof *av_, av_),  \
                  "vrctl may run %s %s", av_[0], av_[1]);                               \
    } while (0)

/* tacl_start and an admin connection (rq_free it, or tacl_down): the
 * set-up every t-dist-sec-* test begins with. */
struct rq *tacl_up(struct tdist *d, struct tacl *a);

/* A test's teardown: frees *q (may be NULL) and stops d. */
void tacl_down(struct tdist *d, struct rq **q);

/* A connection as the worker's user, as an attacker holding it would
 * make (rq_free it). */
struct rq *tacl_as_worker(const struct tacl *a);

/* Field `field` of job id's record into out ("" when absent). */
void tacl_job_field(struct rq *q, const char *id, const char *field, char *out, size_t n);

/* Waits up to timeout_ms for job id to reach `state` (or any ended state
 * when state is NULL); the state it ended in into st (n bytes). Shows the
 * fleet's log when it did not. */
void tacl_wait_state(struct rq *q, const struct tdist *d, const char *id, const char *state,
                     int timeout_ms, char *st, size_t n);

#endif

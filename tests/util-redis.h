/*
 * util-redis.h - test harness: a real, throwaway redis-server on a unix
 * socket in a mktemp directory (after hiredis' test.sh), plus helpers that
 * start the project's binaries from $VR_BIN_DIR. The server dies with the
 * test process (PR_SET_PDEATHSIG) and tredis_stop() removes the directory,
 * so a failing test leaves nothing running.
 */
#ifndef VR_UTIL_REDIS_H
#define VR_UTIL_REDIS_H

#include <sys/types.h>

struct tredis {
    pid_t pid;          /* 0 when stopped */
    int aof;            /* appendonly yes (for restart tests) */
    char dir[256];      /* mktemp -d; also a scratch dir for the test */
    char sock[300];
    char url[320];      /* unix://<sock> */
    char aclfile[320];  /* set before tredis_restart: --aclfile (users from a file) */
    int port;           /* set before tredis_restart: --port on 127.0.0.1 (else 0: none) */
};

/* Starts redis-server (--save '' --appendonly no|yes, noeviction) and waits
 * until it answers PING. Returns 0 or -1 (message on stderr). */
int tredis_start(struct tredis *t, int aof);

/* Stops the server (SIGTERM, then SIGKILL) but keeps the directory. */
void tredis_kill(struct tredis *t);

/* Starts the server again on the same directory and socket (AOF reload). */
int tredis_restart(struct tredis *t);

/* Stops the server and removes the directory; safe to call twice. */
void tredis_stop(struct tredis *t);

/* A TCP port free on `bind` ("127.0.0.1", "::1") a moment ago (the kernel's
 * pick for port 0), or -1. */
int tfree_port(const char *bind);

/* Opens a TCP port too (CONFIG SET bind/port: Redis 7 takes both live) on
 * `bind` ("127.0.0.1", "::1"), a free one; returns it or -1. */
int tredis_tcp(struct tredis *t, const char *bind);

/* Runs one command (argv, NULL-terminated) as the default user over the
 * unix socket; returns 0 unless Redis answered an error or was unreachable
 * (the error on stderr). */
int tredis_cmd(struct tredis *t, const char *const *argv);

/* Forks and execs $VR_BIN_DIR/<bin> with argv (NULL-terminated, argv[0] is
 * ignored), stdout/stderr appended to `log` when non-NULL. The child dies with
 * the test. Returns the pid or -1. */
pid_t tproc_spawn(const char *bin, const char *const *argv, const char *log);
/* tproc_spawn run under a wrapper command (prefix, NULL-terminated, found
 * on PATH): `unshare --pid --fork --mount-proc --kill-child`. Leading
 * NAME=VALUE entries of prefix are set in the child's environment instead
 * (an LD_PRELOAD before one already there), as with env(1). */
pid_t tproc_spawn_under(const char *const *prefix, const char *bin, const char *const *argv,
                        const char *log);
/* A prefix for tproc_spawn_under that runs the binary with its clock
 * `offset` off ("+2h", "-2h"): libfaketime preloaded into the binary itself.
 * Not the faketime wrapper: it forks the binary as its child, which
 * outlived a SIGKILL of the pid returned (the wrapper's). NULL when
 * libfaketime is not installed. Static storage: one at a time. */
const char *const *tfaketime(const char *offset);

/* The number of processes running $VR_BIN_DIR/<bin> with `arg` within one
 * of their arguments (a test's own directory): what a test left running. */
int tproc_left(const char *bin, const char *arg);

/* Runs $VR_BIN_DIR/<bin> to completion; stdout into out (size n, may be
 * NULL). Returns the exit status (or -1). */
int tproc_run(const char *bin, const char *const *argv, char *out, size_t n);

/* Waits up to timeout_ms for pid; returns its exit status, or -1 on timeout
 * (the process is then killed). */
int tproc_wait(pid_t pid, int timeout_ms);

/* Runs a shell command (ffmpeg, ffprobe) and returns its exit status. */
int tsh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sleeps ms milliseconds. */
void tmsleep(int ms);

/* Runs fn with this process's stderr going into buf (NUL-terminated). */
void tcapture_stderr(void (*fn)(void), char *buf, size_t n);

/* Runs a shell command and captures its stdout (NUL-terminated). */
int tsh_out(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The start of a text file (at most n - 1 bytes) into buf, "" when it
 * cannot be read: a process's log, to look for its words. */
void tslurp(const char *path, char *buf, size_t n);

struct redisReply;
/* 1 when the stream entry e (an element of an XRANGE or XREADGROUP reply:
 * its id, then [field, value, ...]) has `field` equal to `value`. */
int tentry_has(const struct redisReply *e, const char *field, const char *value);
/* The entries of the XRANGE reply r with `field` equal to `value` (0 when
 * r is NULL or not an array). */
int tentries_with(const struct redisReply *r, const char *field, const char *value);

/* Makes a small H.264 test clip from opencv's vtest.avi (10 fps): `seconds`
 * long, width w (4:3), a keyframe every `gop` frames (closed GOPs), with a
 * 440 Hz AAC track when `audio`. Returns 0 or the ffmpeg status. */
int tclip_make(const char *path, double seconds, int w, int gop, int audio);

/* tclip_make's 2 s, 160-wide MP4 with 0xff over 6 KB of its first frames'
 * slice data (the header and the index, at the end, stay intact: the file
 * probes and splits; the decoder refuses some of those frames). */
int tclip_make_damaged_head(const char *path);

/* ---- a whole system for integration tests ---- */

struct tdist {
    struct tredis r;
    char storage[300];   /* <r.dir>/storage */
    char log[300];       /* <r.dir>/procs.log: every process's output */
    double lease_s;
    int hb_ms;           /* workers' --heartbeat-ms (0 = 300) */
    pid_t ctl;
    pid_t w[8];
    int nw;
    const char *ctl_args[12]; /* more options for tdist_controller, NULL-terminated (set
                               * after tdist_start, which clears them) */
};

/* Redis (AOF when aof), the storage dir, a controller with the given lease
 * (when ctl) and `workers` CPU workers. Returns 0 or -1. */
int tdist_start(struct tdist *d, int aof, double lease_s, int ctl, int workers);

/* Starts one more CPU worker / a controller (with d->ctl_args); returns its pid. */
pid_t tdist_worker(struct tdist *d);
pid_t tdist_controller(struct tdist *d);

/* `vrctl submit IN -o OUT --profile fast --chunk-seconds 1 [extra...]`;
 * writes the job id into id. Returns vrctl's exit status. */
int tdist_submit(struct tdist *d, const char *in, const char *out, const char *const *extra,
                 char *id, size_t n);

/* `vrctl watch ID` with a timeout; returns its exit status or -1. */
int tdist_watch(struct tdist *d, const char *id, int timeout_ms);

/* `vrctl <cmd> [args] --redis URL` with stdout into out; returns the status. */
int tdist_vrctl(struct tdist *d, char *out, size_t n, const char *const *args);

/* The workers `vrctl workers --json` lists: their count (or -1), names
 * (space-separated) into names, how many say "warming" into *warming
 * (a `serve --slots` parent lists its workers so as it starts them, until
 * their own first heartbeat). */
int tdist_workers(struct tdist *d, char *names, size_t n, int *warming);

/* Field f (a string or an integer) of `vrctl status ID --json` into out
 * ("" when absent); 0, or -1 when vrctl failed or f is absent. */
int tdist_status_field(struct tdist *d, const char *id, const char *f, char *out, size_t n);

/* Stops everything (workers, controller, redis) and removes the dir; prints
 * the processes' log tail when `show_log`. */
void tdist_stop(struct tdist *d, int show_log);

#endif

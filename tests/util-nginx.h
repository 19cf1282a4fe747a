/*
 * util-nginx.h - test harness: a real, throwaway nginx (Debian's, with
 * libnginx-mod-http-dav-ext) serving a directory on a free loopback port:
 * range GETs with ETag and Last-Modified, WebDAV PUT, DELETE and MOVE.
 * While the file <dir>/storm exists it answers 503 to every request (a
 * storm the test ends when it has seen enough of it in the access log).
 * The server dies with the test process (PR_SET_PDEATHSIG).
 */
#ifndef VR_UTIL_NGINX_H
#define VR_UTIL_NGINX_H

#include <sys/types.h>

struct tnginx {
    pid_t pid;          /* 0 when stopped */
    int port;
    char dir[300];      /* its config, logs and temp files */
    char www[320];      /* <dir>/www: what it serves */
    char addr[32];      /* the address it listens on (127.0.0.1) */
    char url[80];       /* http://<addr>:<port>/ */
    char access[320];   /* <dir>/access.log */
};

/* Starts nginx in dir (made if missing) and waits until it answers.
 * Returns 0 or -1 (message on stderr). */
int tnginx_start(struct tnginx *n, const char *dir);
/* The same on IPv4 address addr (one of a network namespace's). */
int tnginx_start_on(struct tnginx *n, const char *dir, const char *addr);

/* Lines of the access log holding `what` (" 503 ", "PUT "). */
int tnginx_count(const struct tnginx *n, const char *what);

/* Lines of the file at path holding `what` (any server's request log). */
int tlog_count(const char *path, const char *what);

/* Stops it; safe to call twice. */
void tnginx_stop(struct tnginx *n);

/* A proxy on a free loopback port in front of `port`, one request per
 * connection, that cuts the next `truncate` responses (tproxy_cut_arm)
 * with a body of more than 1 KB at half their body (a truncated response,
 * as a dying server or middlebox sends), or requests (a PUT's) with such a
 * body: half of it reaches nginx, then both connections are dropped.
 * Returns its port, or -1. Runs in a thread for the rest of the test
 * process. */
int tproxy_cut_start(int port);
void tproxy_cut_arm(int truncate);

/* Responses the proxy cut so far. */
int tproxy_cut_count(void);

/* The proxy holds every request of `method` ("DELETE") that comes while
 * the file `gate` exists, forwarding it only once the file is gone (a
 * hung store); NULL method: none. Counts them from 0. */
void tproxy_hold(const char *method, const char *gate);
int tproxy_held_count(void);

#endif

/*
 * ctl_http.h - the controller's small HTTP server (/metrics, /healthz): one
 * thread polling a bounded set of non-blocking connections, each with a
 * deadline, so a slow or silent client can hold neither the thread nor a
 * slot for long and a probe is answered while others dawdle.
 *
 * Only what a scraper and a probe need: a request head of at most
 * CTL_HTTP_MAX_HEAD bytes, GET and HEAD, no body, one answer per connection
 * (Connection: close). The server never blocks on anything but poll(): an
 * answer that is not ready yet (the handler returns CTL_HTTP_WAIT) parks
 * its connection until ctl_http_wake() says something changed.
 */
#ifndef VR_CTL_HTTP_H
#define VR_CTL_HTTP_H

#include "vr_err.h"

#include <stddef.h>

#define CTL_HTTP_MAX_CONNS 32     /* open connections; the oldest goes for a new one */
#define CTL_HTTP_MAX_HEAD  4096   /* request line and headers */
#define CTL_HTTP_HEAD_MS   5000   /* a request head must arrive within this of accept */
#define CTL_HTTP_WAIT_MS   10000  /* a parked request is answered 503 after this */
#define CTL_HTTP_SEND_MS   10000  /* an answer must be taken within this */

enum { CTL_HTTP_DONE, CTL_HTTP_WAIT };

/* One answer. body is malloc'd and consumed by the server (NULL: empty). */
struct ctl_http_answer {
    int status;
    const char *type;             /* Content-Type; static storage */
    char *body;
    size_t len;
};

/* Called on the server's thread for a request that arrived at since_ms
 * (monotonic ms) and again after each ctl_http_wake() while it returns
 * CTL_HTTP_WAIT. Fills *a and returns CTL_HTTP_DONE, or CTL_HTTP_WAIT. It
 * must not block. method and path (query cut off) are valid for the call. */
typedef int (*ctl_http_fn)(void *arg, const char *method, const char *path, double since_ms,
                           struct ctl_http_answer *a);

struct ctl_http;

/* Listens on the address (a struct sockaddr of addrlen bytes) and starts
 * the thread. Returns 0 and *out, or VR_EIO (cannot bind) / VR_ENOMEM. */
int ctl_http_start(const void *addr, unsigned addrlen, ctl_http_fn fn, void *arg,
                   struct ctl_http **out, vr_err *err);

/* Makes the server call the handler again for every parked request. Safe
 * from any thread. */
void ctl_http_wake(struct ctl_http *h);

/* Stops the thread, closes every connection and frees; accepts NULL and
 * clears the pointer. */
void ctl_http_stop(struct ctl_http **h);

#endif

/*
 * ctl_http.c - the controller's small HTTP server (ctl_http.h): a poll loop
 * over the listening socket, a wake pipe and at most CTL_HTTP_MAX_CONNS
 * connections. Every connection has a deadline that only moves forward
 * (head, then wait, then send), never reset by a byte of traffic: a client
 * that trickles a header line every few seconds is closed at the head
 * deadline all the same. When every slot is taken, a new connection takes
 * the slot of the oldest one, so a flood of idle sockets cannot keep a
 * probe out either.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "ctl_http.h"

#include "clock.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum conn_phase { PH_FREE, PH_HEAD, PH_PARKED, PH_SEND };

struct ctl_http_conn {
    int fd;
    enum conn_phase phase;
    double accepted_ms;           /* monotonic: the request's "since" */
    double deadline_ms;           /* monotonic: closed (or answered 503) at this time */
    char head[CTL_HTTP_MAX_HEAD + 1];
    size_t hlen;
    char method[8];
    char path[128];
    char *out;                    /* status line, headers and body */
    size_t olen, off;
};

struct ctl_http {
    int lfd;
    int wake[2];                  /* a byte on wake[1] wakes the poll */
    atomic_int stop;
    pthread_t th;
    int started;
    ctl_http_fn fn;
    void *arg;
    struct ctl_http_conn c[CTL_HTTP_MAX_CONNS];
};

/* ---- one connection ---- */

static void conn_close(struct ctl_http_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->phase = PH_FREE;
}

static const char *conn_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    default: return "Service Unavailable";
    }
}

/* Turns an answer into the bytes to send (consuming a->body) and moves the
 * connection to its send phase. */
static void conn_answer(struct ctl_http_conn *c, struct ctl_http_answer *a)
{
    char hdr[256];
    int hn = snprintf(hdr, sizeof hdr, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n", a->status,
                      conn_reason(a->status), a->type ? a->type : "text/plain", a->len);
    size_t blen = strcmp(c->method, "HEAD") ? a->len : 0;
    c->out = malloc((size_t)hn + blen);
    if (c->out) {
        memcpy(c->out, hdr, (size_t)hn);
        if (blen)
            memcpy(c->out + hn, a->body, blen);
        c->olen = (size_t)hn + blen;
    }
    free(a->body);
    a->body = NULL;
    c->off = 0;
    c->phase = PH_SEND;
    c->deadline_ms = clock_mono_ms() + CTL_HTTP_SEND_MS;
    if (!c->out)
        conn_close(c);
}

static void conn_plain(struct ctl_http_conn *c, int status, const char *text)
{
    struct ctl_http_answer a = { status, "text/plain; charset=utf-8", strdup(text), strlen(text) };
    if (!a.body)
        a.len = 0;
    conn_answer(c, &a);
}

/* Asks the handler; parks the connection when it is not ready. */
static void conn_dispatch(struct ctl_http *h, struct ctl_http_conn *c)
{
    struct ctl_http_answer a = { 0 };
    if (h->fn(h->arg, c->method, c->path, c->accepted_ms, &a) == CTL_HTTP_DONE) {
        conn_answer(c, &a);
        return;
    }
    if (c->phase != PH_PARKED) {
        c->phase = PH_PARKED;
        c->deadline_ms = clock_mono_ms() + CTL_HTTP_WAIT_MS;
    }
}

/* The request line of a complete head: "METHOD SP TARGET SP HTTP/x.y". */
static void conn_parse(struct ctl_http *h, struct ctl_http_conn *c)
{
    char target[sizeof c->path + 1];
    if (sscanf(c->head, "%7[A-Z] %128[^ \r\n] HTTP/1.%*1[01]", c->method, target) != 2) {
        conn_plain(c, 400, "bad request\n");
        return;
    }
    if (strlen(target) >= sizeof c->path) {
        conn_plain(c, 404, "not found (/metrics, /healthz)\n");
        return;
    }
    target[strcspn(target, "?")] = '\0';
    snprintf(c->path, sizeof c->path, "%s", target);
    conn_dispatch(h, c);
}

static void conn_read(struct ctl_http *h, struct ctl_http_conn *c)
{
    ssize_t n = recv(c->fd, c->head + c->hlen, CTL_HTTP_MAX_HEAD - c->hlen, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(c);
        return;
    }
    if (n < 0)
        return;
    c->hlen += (size_t)n;
    c->head[c->hlen] = '\0';
    if (strstr(c->head, "\r\n\r\n") || strstr(c->head, "\n\n"))
        conn_parse(h, c);
    else if (c->hlen == CTL_HTTP_MAX_HEAD)
        conn_plain(c, 431, "request head too large\n");
}

static void conn_write(struct ctl_http_conn *c)
{
    ssize_t n = send(c->fd, c->out + c->off, c->olen - c->off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || (c->off += (size_t)n) == c->olen)
        conn_close(c);
}

/* ---- the loop ---- */

static void http_accept(struct ctl_http *h)
{
    for (;;) {
        int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct ctl_http_conn *slot = NULL, *oldest = NULL;
        for (int i = 0; i < CTL_HTTP_MAX_CONNS && !slot; i++) {
            if (h->c[i].phase == PH_FREE)
                slot = &h->c[i];
            else if (!oldest || h->c[i].accepted_ms < oldest->accepted_ms)
                oldest = &h->c[i];
        }
        if (!slot) {
            conn_close(oldest);
            slot = oldest;
        }
        slot->fd = fd;
        slot->phase = PH_HEAD;
        slot->accepted_ms = clock_mono_ms();
        slot->deadline_ms = slot->accepted_ms + CTL_HTTP_HEAD_MS;
    }
}

/* Closes or answers every connection past its deadline; returns the ms
 * until the next deadline (at most 1000). */
static int http_deadlines(struct ctl_http_conn *cs)
{
    double now = clock_mono_ms(), next = now + 1000;
    for (int i = 0; i < CTL_HTTP_MAX_CONNS; i++) {
        struct ctl_http_conn *c = &cs[i];
        if (c->phase == PH_PARKED && now >= c->deadline_ms)
            conn_plain(c, 503, "figures not ready in time (is Redis slow?)\n");
        else if (c->phase != PH_FREE && now >= c->deadline_ms)
            conn_close(c);
        if (c->phase != PH_FREE && c->deadline_ms < next)
            next = c->deadline_ms;
    }
    return next > now ? (int)(next - now) + 1 : 0;
}

static void *http_main(void *arg)
{
    struct ctl_http *h = arg;
    struct pollfd pf[CTL_HTTP_MAX_CONNS + 2];
    int who[CTL_HTTP_MAX_CONNS + 2];
    while (!atomic_load(&h->stop)) {
        int timeout = http_deadlines(h->c);
        int n = 0;
        pf[n++] = (struct pollfd){ .fd = h->wake[0], .events = POLLIN };
        pf[n++] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
        for (int i = 0; i < CTL_HTTP_MAX_CONNS; i++) {
            short ev = h->c[i].phase == PH_HEAD ? POLLIN : h->c[i].phase == PH_SEND ? POLLOUT : 0;
            if (ev) {
                who[n] = i;
                pf[n++] = (struct pollfd){ .fd = h->c[i].fd, .events = ev };
            }
        }
        if (poll(pf, (nfds_t)n, timeout) <= 0)
            continue;
        if (pf[0].revents) {
            char buf[64];
            while (read(h->wake[0], buf, sizeof buf) > 0)
                ;
            for (int i = 0; i < CTL_HTTP_MAX_CONNS; i++)
                if (h->c[i].phase == PH_PARKED)
                    conn_dispatch(h, &h->c[i]);
        }
        for (int k = 2; k < n; k++) {
            struct ctl_http_conn *c = &h->c[who[k]];
            if (!pf[k].revents || c->fd != pf[k].fd)
                continue;           /* answered or replaced meanwhile */
            if (c->phase == PH_HEAD)
                conn_read(h, c);
            else if (c->phase == PH_SEND)
                conn_write(c);
        }
        if (pf[1].revents)
            http_accept(h);
    }
    return NULL;
}

/* ---- lifecycle ---- */

int ctl_http_start(const void *addr, unsigned addrlen, ctl_http_fn fn, void *arg,
                   struct ctl_http **out, vr_err *err)
{
    *out = NULL;
    struct ctl_http *h = calloc(1, sizeof *h);
    if (!h)
        return vr_err_set(err, VR_ENOMEM, "out of memory");
    h->fn = fn;
    h->arg = arg;
    h->wake[0] = h->wake[1] = -1;
    for (int i = 0; i < CTL_HTTP_MAX_CONNS; i++)
        h->c[i].fd = -1;
    const struct sockaddr *sa = addr;
    int one = 1;
    h->lfd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (h->lfd < 0 || setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(h->lfd, sa, addrlen) < 0 || listen(h->lfd, 64) < 0 ||
        pipe2(h->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
        int e = errno;
        ctl_http_stop(&h);
        return vr_err_set(err, VR_EIO, "%s", strerror(e));
    }
    if (pthread_create(&h->th, NULL, http_main, h) != 0) {
        ctl_http_stop(&h);
        return vr_err_set(err, VR_ENOMEM, "cannot start a thread");
    }
    h->started = 1;
    *out = h;
    return 0;
}

void ctl_http_wake(struct ctl_http *h)
{
    if (h && write(h->wake[1], "w", 1) < 0) {
        /* the pipe is full: a wake is pending already */
    }
}

void ctl_http_stop(struct ctl_http **hp)
{
    struct ctl_http *h = hp ? *hp : NULL;
    if (!h)
        return;
    atomic_store(&h->stop, 1);
    if (h->started) {
        ctl_http_wake(h);
        pthread_join(h->th, NULL);
    }
    for (int i = 0; i < CTL_HTTP_MAX_CONNS; i++)
        conn_close(&h->c[i]);
    if (h->lfd >= 0)
        close(h->lfd);
    for (int i = 0; i < 2; i++)
        if (h->wake[i] >= 0)
            close(h->wake[i]);
    free(h);
    *hp = NULL;
}

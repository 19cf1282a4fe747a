/*
 * util-nginx.c - a throwaway nginx for the storage-over-HTTP tests, and a
 * proxy that truncates responses (util-nginx.h).
 */
#define _GNU_SOURCE /* memmem, accept4 */
#include "util-nginx.h"
#include "util-redis.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TNGINX_DAV "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"

static int tnginx_conf(const struct tnginx *n, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "load_module " TNGINX_DAV ";\n"
            "user root;\ndaemon off;\nmaster_process off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log;\n"
            "events { worker_connections 256; }\n"
            "http {\n  log_format vr '$remote_addr \"$request\" $status $body_bytes_sent "
            "\"$http_range\" host=$http_host date=$http_x_amz_date "
            "sha=$http_x_amz_content_sha256 auth=\"$http_authorization\"';\n"
            "  access_log %s vr;\n  client_body_temp_path %s/tmp;\n"
            "  proxy_temp_path %s/tmp;\n  fastcgi_temp_path %s/tmp;\n  uwsgi_temp_path %s/tmp;\n"
            "  scgi_temp_path %s/tmp;\n  default_type application/octet-stream;\n"
            "  server {\n    listen %s:%d;\n    root %s;\n"
            "    location / {\n      if (-f %s/storm) { return 503; }\n"
            "      dav_methods PUT DELETE MOVE;\n      create_full_put_path on;\n"
            "      client_max_body_size 0;\n    }\n  }\n}\n",
            n->dir, n->dir, n->access, n->dir, n->dir, n->dir, n->dir, n->dir, n->addr, n->port, n->www,
            n->dir);
    return fclose(f);
}

int tnginx_start(struct tnginx *n, const char *dir)
{
    return tnginx_start_on(n, dir, "127.0.0.1");
}

int tnginx_start_on(struct tnginx *n, const char *dir, const char *addr)
{
    memset(n, 0, sizeof *n);
    snprintf(n->addr, sizeof n->addr, "%s", addr);
    snprintf(n->dir, sizeof n->dir, "%s", dir);
    snprintf(n->www, sizeof n->www, "%s/www", dir);
    snprintf(n->access, sizeof n->access, "%s/access.log", dir);
    char conf[400], tmp[400];
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    mkdir(dir, 0755);
    mkdir(n->www, 0755);
    mkdir(tmp, 0755);
    if ((n->port = tfree_port(n->addr)) < 0 || tnginx_conf(n, conf) < 0) {
        fprintf(stderr, "tnginx: cannot write %s\n", conf);
        return -1;
    }
    snprintf(n->url, sizeof n->url, "http://%s:%d/", n->addr, n->port);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("nginx", "nginx", "-c", conf, "-p", dir, "-e", "stderr", (char *)NULL);
        _exit(127);
    }
    n->pid = pid;
    for (int t = 0; t < 500; t++) {
        if (tsh("curl -s -o /dev/null -w '%%{http_code}' %s | grep -qv 000", n->url) == 0)
            return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            n->pid = 0;
            fprintf(stderr, "tnginx: nginx exited (is it installed? deploy/install-deps.sh --test)\n");
            return -1;
        }
        tmsleep(20);
    }
    fprintf(stderr, "tnginx: no answer on %s\n", n->url);
    tnginx_stop(n);
    return -1;
}

int tnginx_count(const struct tnginx *n, const char *what)
{
    return tlog_count(n->access, what);
}

int tlog_count(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    int c = 0;
    while (f && fgets(line, sizeof line, f))
        c += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return c;
}

void tnginx_stop(struct tnginx *n)
{
    if (n->pid > 0) {
        kill(n->pid, SIGTERM);
        if (tproc_wait(n->pid, 5000) == -1) {
            kill(n->pid, SIGKILL);
            waitpid(n->pid, NULL, 0);
        }
    }
    n->pid = 0;
}

/* ---- a proxy that cuts responses short ---- */

static int cut_port, cut_left, cut_done;
static pthread_mutex_t cut_mu = PTHREAD_MUTEX_INITIALIZER;
static char hold_method[16], hold_gate[400]; /* tproxy_hold's */
static int hold_seen;

/* A request of the held method waits while the gate file exists: a store
 * that takes it and answers nothing meanwhile. */
static void cut_hold(const char *req)
{
    pthread_mutex_lock(&cut_mu);
    size_t m = strlen(hold_method);
    int hold = m && !strncmp(req, hold_method, m) && req[m] == ' ';
    if (hold)
        hold_seen++;
    pthread_mutex_unlock(&cut_mu);
    while (hold && access(hold_gate, F_OK) == 0)
        usleep(50000);
}

static int cut_connect(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void cut_write(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* A request's body (Content-Length; `have` bytes of it came with the
 * head, at `got`) forwarded to u, or half of it when cutting: -1 then. */
static int cut_body(int c, int u, const char *req, const char *got, size_t have)
{
    const char *cl = strcasestr(req, "\r\nContent-Length:");
    long long len = cl ? atoll(cl + 17) : 0, sent = 0, stop = len;
    if (len <= 0)
        return 0;
    pthread_mutex_lock(&cut_mu);
    if (len > 1024 && cut_left > 0) {
        cut_left--;
        cut_done++;
        stop = len / 2;
    }
    pthread_mutex_unlock(&cut_mu);
    char buf[65536];
    size_t k = have < (size_t)stop ? have : (size_t)stop;
    cut_write(u, got, k);
    sent = (long long)k;
    while (sent < stop) {
        ssize_t r = recv(c, buf, (size_t)(stop - sent) < sizeof buf ? (size_t)(stop - sent)
                                                                      : sizeof buf, 0);
        if (r <= 0)
            return -1;
        cut_write(u, buf, (size_t)r);
        sent += r;
    }
    return stop < len ? -1 : 0;
}

/* One connection: its request (its head, and its body when it has one) to
 * nginx with Connection: close, nginx's whole answer back, or half its
 * body when cutting; a request body cut instead drops the connection. */
static void cut_serve(int c)
{
    char req[16384];
    size_t n = 0;
    char *end = NULL;
    while (!end && n + 1 < sizeof req) {
        ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
        if (r <= 0)
            return;
        n += (size_t)r;
        req[n] = '\0';
        end = strstr(req, "\r\n\r\n");
    }
    if (!end)
        return;
    cut_hold(req);
    int u = cut_connect(cut_port);
    if (u < 0)
        return;
    cut_write(u, req, (size_t)(end - req));
    cut_write(u, "\r\nConnection: close\r\n\r\n", 23);
    if (cut_body(c, u, req, end + 4, n - (size_t)(end + 4 - req)) < 0) {
        close(u); /* a request cut mid-body: both sides dropped */
        return;
    }
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while (buf && (r = recv(u, buf + len, cap - len, 0)) > 0)
        if ((len += (size_t)r) == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                break;
            buf = nb;
        }
    close(u);
    if (!buf)
        return;
    char *body = memmem(buf, len, "\r\n\r\n", 4);
    size_t head = body ? (size_t)(body + 4 - buf) : len, send_len = len;
    pthread_mutex_lock(&cut_mu);
    if (len - head > 1024 && cut_left > 0) {
        cut_left--;
        cut_done++;
        send_len = head + (len - head) / 2;
    }
    pthread_mutex_unlock(&cut_mu);
    cut_write(c, buf, send_len);
    free(buf);
}

static void *cut_conn_main(void *arg)
{
    int c = (int)(intptr_t)arg;
    cut_serve(c);
    close(c);
    return NULL;
}

static void *cut_main(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, cut_conn_main, (void *)(intptr_t)c) == 0)
            pthread_detach(t);
        else
            close(c);
    }
    return NULL;
}

void tproxy_cut_arm(int truncate)
{
    pthread_mutex_lock(&cut_mu);
    cut_left = truncate;
    cut_done = 0;
    pthread_mutex_unlock(&cut_mu);
}

int tproxy_cut_start(int port)
{
    cut_port = port;
    tproxy_cut_arm(0);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 64) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) < 0)
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, cut_main, (void *)(intptr_t)ls) != 0)
        return -1;
    pthread_detach(t);
    return ntohs(a.sin_port);
}

int tproxy_cut_count(void)
{
    pthread_mutex_lock(&cut_mu);
    int n = cut_done;
    pthread_mutex_unlock(&cut_mu);
    return n;
}

void tproxy_hold(const char *method, const char *gate)
{
    pthread_mutex_lock(&cut_mu);
    snprintf(hold_method, sizeof hold_method, "%s", method ? method : "");
    snprintf(hold_gate, sizeof hold_gate, "%s", gate ? gate : "");
    hold_seen = 0;
    pthread_mutex_unlock(&cut_mu);
}

int tproxy_held_count(void)
{
    pthread_mutex_lock(&cut_mu);
    int n = hold_seen;
    pthread_mutex_unlock(&cut_mu);
    return n;
}

/*
 * util-redis.c - a throwaway redis-server per test and helpers to run the
 * project's binaries (see util-redis.h).
 */
#include "util-redis.h"

#include <hiredis/hiredis.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* bind(2) on the loopback address of ss's family, port 0 (the kernel picks). */
static int bind_any(int fd, struct sockaddr_storage *ss, socklen_t len)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
    else
        ((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return bind(fd, (struct sockaddr *)ss, len);
}

static void tsleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* ---- redis-server ---- */

static int tredis_spawn(struct tredis *t)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char port[16];
        snprintf(port, sizeof port, "%d", t->port);
        const char *av[32] = { "redis-server", "--port", port, "--bind", "127.0.0.1",
                               "--unixsocket", t->sock, "--unixsocketperm", "700",
                               "--dir", t->dir, "--save", "", "--appendonly",
                               t->aof ? "yes" : "no", "--appendfsync", "always",
                               "--maxmemory-policy", "noeviction", "--daemonize", "no",
                               /* as README says to run it: no argument over 1 MB, no command over 4 MB */
                               "--proto-max-bulk-len", "1mb", "--client-query-buffer-limit", "4mb",
                               "--loglevel", "warning" };
        int k = 0;
        while (av[k])
            k++;
        if (t->aclfile[0]) {
            av[k++] = "--aclfile";
            av[k++] = t->aclfile;
        }
        av[k] = NULL;
        execvp("redis-server", (char *const *)av);
        _exit(127);
    }
    t->pid = pid;
    for (int i = 0; i < 200; i++) {
        redisContext *c = redisConnectUnix(t->sock);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            /* NOAUTH: up, with its default user off (an aclfile) */
            int ok = r && (r->type == REDIS_REPLY_STATUS ||
                           (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOAUTH", 6)));
            if (r)
                freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        } else if (c) {
            redisFree(c);
        }
        tsleep_ms(25);
    }
    fprintf(stderr, "util-redis: redis-server did not start on %s\n", t->sock);
    tredis_kill(t);
    return -1;
}

int tredis_start(struct tredis *t, int aof)
{
    memset(t, 0, sizeof *t);
    t->aof = aof;
    snprintf(t->dir, sizeof t->dir, "/tmp/vrtest-XXXXXX");
    if (!mkdtemp(t->dir)) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(t->sock, sizeof t->sock, "%s/redis.sock", t->dir);
    snprintf(t->url, sizeof t->url, "unix://%s", t->sock);
    if (tredis_spawn(t) < 0) {
        tredis_stop(t);
        return -1;
    }
    return 0;
}

void tredis_kill(struct tredis *t)
{
    if (t->pid <= 0)
        return;
    kill(t->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
            t->pid = 0;
            return;
        }
        tsleep_ms(20);
    }
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
}

int tredis_restart(struct tredis *t)
{
    tredis_kill(t);
    unlink(t->sock);
    return tredis_spawn(t);
}

void tredis_stop(struct tredis *t)
{
    tredis_kill(t);
    if (t->dir[0] && strncmp(t->dir, "/tmp/vrtest-", 12) == 0) {
        tsh("rm -rf '%s'", t->dir);
        t->dir[0] = '\0';
    }
}

int tfree_port(const char *bind)
{
    int six = strchr(bind, ':') != NULL;
    int fd = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    struct sockaddr_storage ss;
    socklen_t len = six ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memset(&ss, 0, sizeof ss);
    ss.ss_family = six ? AF_INET6 : AF_INET;
    int port = -1;
    if (fd >= 0 && bind_any(fd, &ss, len) == 0 && getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(six ? ((struct sockaddr_in6 *)&ss)->sin6_port
                         : ((struct sockaddr_in *)&ss)->sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int tredis_tcp(struct tredis *t, const char *bind)
{
    int port = tfree_port(bind);
    if (port < 0)
        return -1;
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    const char *b[] = { "CONFIG", "SET", "bind", bind, NULL };
    const char *pp[] = { "CONFIG", "SET", "port", p, NULL };
    return tredis_cmd(t, b) == 0 && tredis_cmd(t, pp) == 0 ? port : -1;
}

int tredis_cmd(struct tredis *t, const char *const *argv)
{
    int n = 0;
    while (argv[n])
        n++;
    redisContext *c = redisConnectUnix(t->sock);
    if (!c || c->err) {
        fprintf(stderr, "util-redis: cannot reach %s\n", t->sock);
        if (c)
            redisFree(c);
        return -1;
    }
    redisReply *r = redisCommandArgv(c, n, (const char **)argv, NULL);
    int rc = r && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (rc)
        fprintf(stderr, "util-redis: %s: %s\n", argv[0], r ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

/* ---- processes ---- */

static void tproc_path(const char *bin, char *out, size_t n)
{
    const char *dir = getenv("VR_BIN_DIR");
    snprintf(out, n, "%s/%s", dir && *dir ? dir : "bin", bin);
}

pid_t tproc_spawn_under(const char *const *prefix, const char *bin, const char *const *argv,
                        const char *log)
{
    char path[512];
    tproc_path(bin, path, sizeof path);
    const char *av[64];
    int n = 0;
    for (int i = 0; prefix && prefix[i] && n < 32; i++)
        av[n++] = prefix[i];
    av[n++] = path;
    for (int i = 1; argv && argv[i] && n < 63; i++)
        av[n++] = argv[i];
    av[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* leading NAME=VALUE entries go to the environment, as env(1) does;
         * an LD_PRELOAD goes before one already set */
        int first = 0;
        for (; av[first] && strchr(av[first], '=') && av[first][0] != '/'; first++) {
            char *kv = strdup(av[first]), *eq = strchr(kv, '=');
            *eq = '\0';
            const char *had = getenv(kv);
            char joined[1024];
            if (!strcmp(kv, "LD_PRELOAD") && had && *had) {
                snprintf(joined, sizeof joined, "%s:%s", eq + 1, had);
                setenv(kv, joined, 1);
            } else {
                setenv(kv, eq + 1, 1);
            }
        }
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
        }
        execvp(av[first], (char *const *)av + first);
        _exit(127);
    }
    return pid;
}

const char *const *tfaketime(const char *offset)
{
    static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                                        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                                        "/usr/lib/faketime/libfaketime.so.1",
                                        "/usr/local/lib/faketime/libfaketime.so.1" };
    static char preload[300], fake[64];
    static const char *prefix[3];
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++)
        if (access(libs[i], R_OK) == 0) {
            snprintf(preload, sizeof preload, "LD_PRELOAD=%s", libs[i]);
            snprintf(fake, sizeof fake, "FAKETIME=%s", offset);
            prefix[0] = preload;
            prefix[1] = fake;
            prefix[2] = NULL;
            return prefix;
        }
    return NULL;
}

int tproc_left(const char *bin, const char *arg)
{
    char path[512];
    tproc_path(bin, path, sizeof path);
    DIR *dir = opendir("/proc");
    if (!dir)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char f[300], cmd[8192];
        snprintf(f, sizeof f, "/proc/%s/cmdline", de->d_name);
        int fd = open(f, O_RDONLY);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t len = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (len <= 0)
            continue; /* a zombie: no command line */
        cmd[len] = '\0';
        int runs = 0, has = 0;
        for (char *a = cmd; a < cmd + len; a += strlen(a) + 1) {
            runs |= !strcmp(a, path);
            has |= strstr(a, arg) != NULL;
        }
        n += runs && has;
    }
    closedir(dir);
    return n;
}

pid_t tproc_spawn(const char *bin, const char *const *argv, const char *log)
{
    return tproc_spawn_under(NULL, bin, argv, log);
}

int tproc_wait(pid_t pid, int timeout_ms)
{
    int st;
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        tsleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

int tproc_run(const char *bin, const char *const *argv, char *out, size_t n)
{
    char path[512];
    tproc_path(bin, path, sizeof path);
    int pfd[2];
    if (pipe(pfd) < 0)
        return -1;
    const char *av[64];
    int k = 0;
    av[k++] = path;
    for (int i = 1; argv && argv[i] && k < 63; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pfd[1], 1);
        close(pfd[0]);
        execv(path, (char *const *)av);
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    char tmp[4096];
    ssize_t r;
    while ((r = read(pfd[0], tmp, sizeof tmp)) > 0) {
        if (out && got + 1 < n) {
            size_t c = (size_t)r < n - 1 - got ? (size_t)r : n - 1 - got;
            memcpy(out + got, tmp, c);
            got += c;
        }
    }
    if (out && n)
        out[got] = '\0';
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tsh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tsh_out(char *out, size_t n, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t got = fread(out, 1, n - 1, p);
    out[got] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- clips ---- */

int tclip_make(const char *path, double seconds, int w, int gop, int audio)
{
    const char *src = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
    int h = (w * 3 / 4) & ~1;
    if (audio)
        return tsh("ffmpeg -v error -y -i %s -f lavfi -i sine=frequency=440:sample_rate=48000 "
                   "-t %.3f -map 0:v -map 1:a -vf scale=%d:%d -c:v libx264 -preset ultrafast "
                   "-g %d -keyint_min %d -sc_threshold 0 -pix_fmt yuv420p -c:a aac -b:a 64k "
                   "-shortest '%s'", src, seconds, w, h, gop, gop, path);
    return tsh("ffmpeg -v error -y -i %s -t %.3f -vf scale=%d:%d -c:v libx264 -preset ultrafast "
               "-g %d -keyint_min %d -sc_threshold 0 -pix_fmt yuv420p '%s'",
               src, seconds, w, h, gop, gop, path);
}

int tclip_make_damaged_head(const char *path)
{
    if (tclip_make(path, 2, 160, 5, 0) != 0)
        return -1;
    return tsh("head -c 6000 /dev/zero | tr '\\0' '\\377' | "
               "dd of='%s' bs=1 seek=3000 conv=notrunc status=none", path);
}

/* ---- whole system ---- */

pid_t tdist_worker(struct tdist *d)
{
    char hb[16];
    snprintf(hb, sizeof hb, "%d", d->hb_ms > 0 ? d->hb_ms : 300);
    /* the tests' inputs lie beside the storage (the controller's
     * --input-root): chunks read in place are read there */
    const char *argv[] = { "vr-worker", "serve", "--redis", d->r.url, "--storage", d->storage,
                           "--input-root", d->r.dir, "--cpu", "--heartbeat-ms", hb, NULL };
    pid_t p = tproc_spawn("vr-worker", argv, d->log);
    if (p > 0 && d->nw < 8)
        d->w[d->nw++] = p;
    return p;
}

pid_t tdist_controller(struct tdist *d)
{
    char lease[32];
    snprintf(lease, sizeof lease, "%.2f", d->lease_s);
    /* the tests' inputs and outputs lie beside the storage, in the temp dir */
    const char *argv[32] = { "vr-controller", "run", "--redis", d->r.url, "--storage", d->storage,
                             "--input-root", d->r.dir, "--output-root", d->r.dir,
                             "--lease-seconds", lease, "--keep-chunks" };
    for (int i = 0, k = 13; i < 12 && d->ctl_args[i]; i++)
        argv[k++] = d->ctl_args[i];
    d->ctl = tproc_spawn("vr-controller", argv, d->log);
    return d->ctl;
}

int tdist_start(struct tdist *d, int aof, double lease_s, int ctl, int workers)
{
    memset(d, 0, sizeof *d);
    if (tredis_start(&d->r, aof) < 0)
        return -1;
    d->lease_s = lease_s;
    snprintf(d->storage, sizeof d->storage, "%s/storage", d->r.dir);
    snprintf(d->log, sizeof d->log, "%s/procs.log", d->r.dir);
    if (tsh("mkdir -p '%s'", d->storage) != 0)
        return -1;
    if (ctl && tdist_controller(d) < 0)
        return -1;
    for (int i = 0; i < workers; i++)
        if (tdist_worker(d) < 0)
            return -1;
    return 0;
}

int tdist_vrctl(struct tdist *d, char *out, size_t n, const char *const *args)
{
    const char *argv[40];
    int k = 0;
    argv[k++] = "vrctl";
    for (int i = 0; args[i] && k < 36; i++)
        argv[k++] = args[i];
    argv[k++] = "--redis";
    argv[k++] = d->r.url;
    argv[k] = NULL;
    return tproc_run("vrctl", argv, out, n);
}

int tdist_workers(struct tdist *d, char *names, size_t n, int *warming)
{
    char out[8192];
    const char *args[] = { "workers", "--json", NULL };
    *warming = 0;
    if (tdist_vrctl(d, out, sizeof out, args) != 0)
        return -1;
    json_t *arr = json_loads(out, 0, NULL);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return -1;
    }
    names[0] = '\0';
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *w = json_array_get(arr, i);
        const char *name = json_string_value(json_object_get(w, "name"));
        const char *st = json_string_value(json_object_get(w, "state"));
        strncat(names, name ? name : "?", n - strlen(names) - 2);
        strcat(names, " ");
        *warming += st && !strcmp(st, "warming");
    }
    int k = (int)json_array_size(arr);
    json_decref(arr);
    return k;
}

int tdist_submit(struct tdist *d, const char *in, const char *out, const char *const *extra,
                 char *id, size_t n)
{
    const char *args[40] = { "submit", in, "-o", out, "--profile", "fast", "--chunk-seconds", "1" };
    int k = 8;
    for (int i = 0; extra && extra[i] && k < 38; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    char buf[256] = "";
    int rc = tdist_vrctl(d, buf, sizeof buf, args);
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(id, n, "%s", buf);
    return rc;
}

int tdist_watch(struct tdist *d, const char *id, int timeout_ms)
{
    const char *argv[] = { "vrctl", "watch", id, "--redis", d->r.url, NULL };
    pid_t p = tproc_spawn("vrctl", argv, d->log);
    return p < 0 ? -1 : tproc_wait(p, timeout_ms);
}

void tdist_stop(struct tdist *d, int show_log)
{
    for (int i = 0; i < d->nw; i++)
        if (d->w[i] > 0) {
            kill(d->w[i], SIGKILL);
            waitpid(d->w[i], NULL, 0);
        }
    if (d->ctl > 0) {
        kill(d->ctl, SIGKILL);
        waitpid(d->ctl, NULL, 0);
    }
    if (show_log && d->log[0])
        tsh("echo '---- processes:'; tail -n 40 '%s' >&2", d->log);
    tredis_stop(&d->r);
}

/* ---- small helpers ---- */

void tmsleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

void tcapture_stderr(void (*fn)(void), char *buf, size_t n)
{
    char path[] = "/tmp/vrtest-stderr-XXXXXX";
    int fd = mkstemp(path);
    buf[0] = '\0';
    if (fd < 0)
        return;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t got = pread(fd, buf, n - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
}

int tentry_has(const redisReply *e, const char *field, const char *value)
{
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 2)
        return 0;
    const redisReply *f = e->element[1];
    for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
        if (f->element[k]->str && f->element[k + 1]->str &&
            !strcmp(f->element[k]->str, field) && !strcmp(f->element[k + 1]->str, value))
            return 1;
    return 0;
}

int tentries_with(const redisReply *r, const char *field, const char *value)
{
    int n = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        n += tentry_has(r->element[i], field, value);
    return n;
}

void tslurp(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    buf[fread(buf, 1, n - 1, f)] = '\0';
    fclose(f);
}

int tdist_status_field(struct tdist *d, const char *id, const char *f, char *out, size_t n)
{
    const char *args[] = { "status", id, "--json", NULL };
    static char js[1 << 16];
    out[0] = '\0';
    if (tdist_vrctl(d, js, sizeof js, args) != 0)
        return -1;
    json_t *o = json_loads(js, 0, NULL);
    json_t *v = o ? json_object_get(o, f) : NULL;
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
    json_decref(o);
    return v ? 0 : -1;
}

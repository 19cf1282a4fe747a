/*
 * cmd_run.c - `vrctl run`: the whole system on one machine. A private
 * redis-server on a unix socket in a temp dir, a controller, workers (one
 * per GPU through `vr-worker serve --gpu all`, or N CPU workers), all
 * fork/exec'd from the binaries next to vrctl; the progress bar; and a
 * cleanup that runs on success, failure and Ctrl-C alike.
 */
#include "vrctl.h"

#include "cli.h"
#include "gpus.h"
#include "job.h"

#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_MAX_PROCS 66

static volatile int run_stop;
static char run_dead[256];  /* why the job cannot finish (set before run_stop) */

static void run_on_signal(int sig)
{
    (void)sig;
    run_stop = 1;
}

struct run {
    char dir[64];                 /* mktemp -d */
    char exe_dir[4096];
    char url[160];
    char storage[128];
    pid_t redis;
    pid_t procs[RUN_MAX_PROCS];
    char logs[RUN_MAX_PROCS][128];
    int nprocs;
};

/* ---- processes ---- */

static pid_t run_spawn(struct run *r, const char *prog, char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        setpgid(0, 0); /* Ctrl-C goes to vrctl only; it stops the others in order */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(prog, argv);
        _exit(127);
    }
    (void)r;
    return pid;
}

static int run_add(struct run *r, const char *bin, char *const *args, const char *logname)
{
    if (r->nprocs >= RUN_MAX_PROCS)
        return -1;
    char prog[4200];
    snprintf(prog, sizeof prog, "%s/%s", r->exe_dir, bin);
    if (access(prog, X_OK) < 0) {
        fprintf(stderr, "vrctl run: %s not found next to vrctl\n", prog);
        return -1;
    }
    char *argv[32];
    int k = 0;
    argv[k++] = prog;
    for (int i = 0; args[i] && k < 31; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    char dir[sizeof r->dir];
    memcpy(dir, r->dir, sizeof dir);
    snprintf(r->logs[r->nprocs], sizeof r->logs[0], "%.63s/%.32s.log", dir, logname);
    pid_t p = run_spawn(r, prog, argv, r->logs[r->nprocs]);
    if (p < 0)
        return -1;
    r->procs[r->nprocs++] = p;
    return 0;
}

static int run_wait_pid(pid_t p, int ms)
{
    for (int t = 0; t < ms; t += 20) {
        int st;
        if (waitpid(p, &st, WNOHANG) == p)
            return 0;
        usleep(20000);
    }
    return -1;
}

static int run_redis(struct run *r)
{
    char sock[96], log[96];
    snprintf(sock, sizeof sock, "%s/redis.sock", r->dir);
    snprintf(r->url, sizeof r->url, "unix://%s", sock);
    snprintf(log, sizeof log, "%s/redis.log", r->dir);
    char *argv[] = { "redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                     "--dir", r->dir, "--save", "", "--appendonly", "no", "--maxmemory-policy",
                     "noeviction", "--daemonize", "no", NULL };
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        /* A bundle ships its own redis-server next to vrctl; else PATH. */
        char own[4200];
        snprintf(own, sizeof own, "%s/redis-server", r->exe_dir);
        if (access(own, X_OK) == 0)
            execv(own, argv);
        execvp("redis-server", argv);
        _exit(127);
    }
    r->redis = pid;
    for (int i = 0; i < 200; i++) {
        if (access(sock, F_OK) == 0) {
            struct rq *q = NULL;
            if (rq_open(r->url, 1000, &q, NULL) == 0) {
                rq_free(&q);
                return 0;
            }
            rq_free(&q);
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            r->redis = 0;
            fprintf(stderr, "vrctl run: redis-server exited (is it installed? see %s)\n", log);
            return -1;
        }
        usleep(25000);
    }
    fprintf(stderr, "vrctl run: redis-server did not start (see %s)\n", log);
    return -1;
}

static void run_tail(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char lines[8][512];
    int n = 0;
    while (fgets(lines[n % 8], sizeof lines[0], f))
        n++;
    fclose(f);
    if (!n)
        return;
    fprintf(stderr, "---- %s (last lines)\n", path);
    for (int i = n > 8 ? n - 8 : 0; i < n; i++)
        fputs(lines[i % 8], stderr);
}

/* ---- children that die during the run ---- */

/* Reaps the controller and workers as they exit: each death is reported
 * with its log; when the controller or the last worker is gone the job can
 * no longer finish, so the watch stops instead of waiting forever. Runs
 * until *stop; procs[] entries it reaps become 0 (run_cleanup skips them). */
struct run_monitor {
    struct run *r;
    volatile int stop;
};

static void *run_monitor_main(void *arg)
{
    struct run_monitor *m = arg;
    struct run *r = m->r;
    while (!m->stop && !run_dead[0]) {
        int workers_left = 0;
        for (int i = 0; i < r->nprocs; i++) {
            int st;
            if (r->procs[i] > 0 && waitpid(r->procs[i], &st, WNOHANG) == r->procs[i]) {
                r->procs[i] = 0;
                char how[64];
                if (WIFSIGNALED(st))
                    snprintf(how, sizeof how, "killed by signal %d (%s)", WTERMSIG(st),
                             strsignal(WTERMSIG(st)));
                else
                    snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
                fprintf(stderr, "vrctl run: %s %s; its log: %s\n", i == 0 ? "the controller" : "a worker",
                        how, r->logs[i]);
                if (i == 0)
                    snprintf(run_dead, sizeof run_dead, "the controller %s", how);
            }
            if (i > 0 && r->procs[i] > 0)
                workers_left++;
        }
        if (!run_dead[0] && !workers_left)
            snprintf(run_dead, sizeof run_dead, "no worker is left (all %d exited)", r->nprocs - 1);
        if (run_dead[0])
            run_stop = 1;
        usleep(200 * 1000);
    }
    return NULL;
}

/* Stops workers first (SIGTERM drains), then the controller, then Redis;
 * removes the temp dir unless keep. */
static void run_cleanup(struct run *r, int keep, int show_logs)
{
    for (int i = r->nprocs - 1; i >= 0; i--)
        if (r->procs[i] > 0)
            kill(r->procs[i], SIGTERM);
    for (int i = r->nprocs - 1; i >= 0; i--) {
        if (r->procs[i] <= 0)
            continue;
        if (run_wait_pid(r->procs[i], 10000) < 0) {
            kill(r->procs[i], SIGKILL);
            waitpid(r->procs[i], NULL, 0);
        }
    }
    if (r->redis > 0) {
        kill(r->redis, SIGTERM);
        if (run_wait_pid(r->redis, 5000) < 0) {
            kill(r->redis, SIGKILL);
            waitpid(r->redis, NULL, 0);
        }
    }
    if (show_logs)
        for (int i = 0; i < r->nprocs; i++)
            run_tail(r->logs[i]);
    if (keep) {
        fprintf(stderr, "vrctl run: kept %s (logs, storage)\n", r->dir);
        return;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (strncmp(r->dir, "/tmp/vrctl-run-", 15) == 0 && system(cmd) != 0)
        fprintf(stderr, "vrctl run: could not remove %s\n", r->dir);
}

/* ---- command ---- */

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "workers", required_argument, 0, 'n' },
        { "cpu", no_argument, 0, 'U' },
        { "profile", required_argument, 0, VRCTL_OPT_PROFILE },
        { "output", required_argument, 0, VRCTL_OPT_OUTPUT },
        { "chunk-seconds", required_argument, 0, VRCTL_OPT_CHUNK },
        { "layout", required_argument, 0, VRCTL_OPT_LAYOUT },
        { "lease-seconds", required_argument, 0, 'l' },
        { "keep-temp", no_argument, 0, 'K' },
        { "per-gpu", required_argument, 0, 'g' },
        { 0, 0, 0, 0 }
    };
    struct job_spec js;
    job_spec_defaults(&js);
    js.chunk_seconds = 5;
    const char *out = NULL, *lease = "30";
    /* One NVDEC session decodes 8K HEVC at ~60-75 fps: several chunks in
     * flight per GPU is what keeps an H100 ahead of real time. */
    int workers = 0, cpu = 0, keep = 0, per_gpu = 3, o;
    while ((o = getopt_long(argc, argv, VRCTL_OPTSTRING, opts, NULL)) != -1) {
        int spec = vrctl_spec_option(o, optarg, &js);
        if (spec > 1)
            return spec;
        if (spec)
            continue;
        switch (o) {
        case 'o': out = optarg; break;
        case 'n':
            workers = atoi(optarg);
            if (workers < 1 || workers > 64)
                return cli_usage_error("--workers must be 1..64");
            break;
        case 'U': cpu = 1; break;
        case 'l': lease = optarg; break;
        case 'K': keep = 1; break;
        case 'g':
            per_gpu = atoi(optarg);
            if (per_gpu < 1 || per_gpu > 8)
                return cli_usage_error("--per-gpu must be 1..8");
            break;
        default: return cli_usage_error("unknown option");
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("expected one input video");
    if (!out)
        return cli_usage_error("missing -o OUT");
    long long frames_est;
    if (vrctl_prepare(argv[optind], out, &js, &frames_est) < 0)
        return 1;
    int gpus = cpu ? 0 : vr_gpu_count();
    if (!cpu && gpus == 0) {
        fprintf(stderr, "vrctl run: no NVIDIA GPU found; using the CPU engine (slow)\n");
        cpu = 1;
    }
    if (cpu && !workers)
        workers = 1;

    struct run r;
    memset(&r, 0, sizeof r);
    ssize_t len = readlink("/proc/self/exe", r.exe_dir, sizeof r.exe_dir - 1);
    if (len <= 0) {
        fprintf(stderr, "vrctl run: cannot find my own binary\n");
        return 1;
    }
    r.exe_dir[len] = '\0';
    *strrchr(r.exe_dir, '/') = '\0';
    snprintf(r.dir, sizeof r.dir, "/tmp/vrctl-run-XXXXXX");
    if (!mkdtemp(r.dir)) {
        perror("vrctl run: mkdtemp");
        return 1;
    }
    snprintf(r.storage, sizeof r.storage, "%s/storage", r.dir);
    struct sigaction sa = { 0 };
    sa.sa_handler = run_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    int rc = 1;
    struct rq *q = NULL;
    if (mkdir(r.storage, 0755) < 0 || run_redis(&r) < 0)
        goto out;
    char *cargs[] = { "run", "--redis", r.url, "--storage", r.storage, "--lease-seconds",
                      (char *)lease, NULL };
    if (run_add(&r, "vr-controller", cargs, "controller") < 0)
        goto out;
    if (cpu) {
        for (int i = 0; i < workers; i++) {
            char name[32];
            snprintf(name, sizeof name, "worker-cpu%d", i);
            char *wargs[] = { "serve", "--redis", r.url, "--storage", r.storage, "--cpu", NULL };
            if (run_add(&r, "vr-worker", wargs, name) < 0)
                goto out;
        }
    } else {
        for (int g = 0; g < gpus; g++)
            for (int k = 0; k < per_gpu; k++) {
                char gpu[16], name[32];
                snprintf(gpu, sizeof gpu, "%d", g);
                snprintf(name, sizeof name, "worker-gpu%d-%d", g, k);
                char *wargs[] = { "serve", "--redis", r.url, "--storage", r.storage, "--gpu", gpu,
                                  NULL };
                if (run_add(&r, "vr-worker", wargs, name) < 0)
                    goto out;
            }
    }
    fprintf(stderr, "vrctl run: %s workers: %d, temp dir %s\n", cpu ? "CPU" : "GPU",
            cpu ? workers : gpus * per_gpu, r.dir);
    q = vrctl_connect(r.url);
    if (!q)
        goto out;
    vr_err e = { 0 };
    job_new_id(js.id, sizeof js.id);
    js.created_ms = rq_now_ms();
    if (vrctl_enqueue(q, &js, frames_est, &e) < 0) {
        fprintf(stderr, "vrctl run: %s\n", e.msg);
        goto out;
    }
    struct run_monitor mon = { .r = &r, .stop = 0 };
    pthread_t mt;
    int mon_ok = pthread_create(&mt, NULL, run_monitor_main, &mon) == 0;
    rc = vrctl_watch(q, js.id, &run_stop);
    mon.stop = 1;
    if (mon_ok)
        pthread_join(mt, NULL);
    if (rc == 3 && run_dead[0]) {
        fprintf(stderr, "vrctl run: job %s cannot finish: %s (logs below)\n", js.id, run_dead);
        rc = 1;
    } else if (rc == 3) {
        fprintf(stderr, "vrctl run: interrupted; stopping workers, controller and redis\n");
        rc = 130;
    }
out:
    rq_free(&q);
    run_cleanup(&r, keep, rc != 0 && rc != 130);
    return rc;
}

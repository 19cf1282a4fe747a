/*
 * cmd_run.c - `vrctl run`: the whole system on one machine. A private
 * redis-server on a unix socket in a temp dir, a controller, workers (one
 * per GPU through `vr-worker serve --gpu all`, or N CPU workers), all
 * fork/exec'd from the binaries next to vrctl; the progress bar; and a
 * cleanup that runs on success, failure and Ctrl-C alike. Ctrl-C (and kill
 * -9) keep the work dir, its Redis (AOF) and the committed chunks: the same
 * command with --resume carries on from them (run_workdir.h).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "vrctl.h"

#include "clock.h"
#include "cmdtable.h"
#include "gpus.h"
#include "job.h"
#include "http_io.h"
#include "log.h"
#include "out_dest.h"
#include "rq_fleet.h"
#include "rq_jobs.h"
#include "rq_notify.h"
#include "run_workdir.h"
#include "storage.h"
#include "run_temps.h"
#include "supervise.h"
#include "text.h"
#include "url_root.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t run_stop;
static char run_dead[256];  /* why the job cannot finish (set before run_stop) */

static void run_on_signal(int sig)
{
    (void)sig;
    if (run_stop) { /* the second: no more waiting for anyone */
        static const char m[] = "vrctl run: interrupted again; stopping at once\n";
        sup_hurry();
        if (write(STDERR_FILENO, m, sizeof m - 1) < 0) { /* nothing left to tell */ }
    }
    run_stop = 1;
}

/* ---- parse ---- */

/* What `vrctl run` was asked to do. */
struct run_opts {
    struct job_spec js;           /* the job, checked by vrctl_prepare */
    struct remux_info info;       /* the input's, from vrctl_prepare */
    const char *lease;            /* --lease-seconds, passed to the controller */
    char secret[4096];            /* --notify-secret-file, absolute, passed to the controller;
                                   * "" = none (VR_NOTIFY_SECRET_FILE still reaches it) */
    int workers;                  /* CPU workers */
    int cpu;                      /* the CPU engine */
    int per_gpu;                  /* GPU workers (serve slots) per GPU */
    int gpus;                     /* GPUs to use (0 with cpu) */
    int encode_threads;           /* each worker's CPU encoder threads; 0 = one per core */
    const char *slot_mode;        /* --slot-mode for the GPUs' serve; NULL = serve's default */
    int keep;                     /* keep the temp dir */
    int allow_private;            /* --notify-allow-private, passed to the controller */
    int replace;                  /* -y: OUT may replace an existing file */
    int resume;                   /* --resume: carry on with the job its work dir keeps */
    struct out_dest dest;         /* -o: a file, or a WebDAV URL by way of a local copy */
};

/* CPU workers when --workers is not given: one per core this process may
 * run on (its affinity: a container's or taskset's share, not the host's),
 * at most RUN_CPU_WORKERS_MAX. A CPU worker keeps one core busy: one worker
 * on two cores took twice as long (issue 45, item 7). */
enum { RUN_CPU_WORKERS_MAX = 16 };

static int run_cpu_workers(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > RUN_CPU_WORKERS_MAX ? RUN_CPU_WORKERS_MAX : n;
}

/* Options into *o; returns 0 or the exit code (2 usage, 1 bad job). */
/* What the user left to the fleet: chunks in flight per GPU
 * (vr_gpu_auto_slots), and the chunk length: a whole number of waves over
 * those workers. */
static void run_auto(struct run_opts *o)
{
    if (!o->cpu && !o->per_gpu)
        o->per_gpu = vr_gpu_auto_slots(o->gpus, !o->slot_mode || !strcmp(o->slot_mode, "threads"));
    int slots = o->cpu ? o->workers : o->gpus * o->per_gpu;
    int picture = job_output_is_picture(o->js.output_kind);
    if (o->js.chunk_seconds == 0) {
        o->js.chunk_seconds = job_auto_chunk_seconds(o->info.duration_s, slots, picture);
        o->js.chunk_wave = slots;
        log_say(LOG_INFO, "vrctl run: chunks of %.2f s (%.1f s over %d worker%s%s)\n",
                o->js.chunk_seconds, o->info.duration_s, slots, text_plural(slots),
                picture ? "; the picture is re-encoded: at least 4 chunks a worker, so every "
                          "core works to the end" : "");
    }
}

static int run_parse(int argc, char **argv, struct run_opts *o)
{
    static const struct option opts[] = {
        { "workers", required_argument, 0, 'W' },
        { "cpu", no_argument, 0, 'U' },
        VRCTL_SPEC_LONGOPTS,
        { "lease-seconds", required_argument, 0, 'l' },
        { "keep-temp", no_argument, 0, 'K' },
        { "resume", no_argument, 0, 'Z' },
        { "per-gpu", required_argument, 0, 'g' },
        { "notify-secret-file", required_argument, 0, 'S' },
        { "encode-threads", required_argument, 0, 'E' },
        { "slot-mode", required_argument, 0, 'M' },
        { "notify-allow-private", no_argument, 0, 'P' },
        { 0, 0, 0, 0 }
    };
    memset(o, 0, sizeof *o);
    job_spec_defaults(&o->js);
    o->lease = "30";
    o->per_gpu = 0; /* auto, below */
    const char *out = NULL;
    int c;
    while ((c = cli_getopt(argc, argv, VRCTL_OPTSTRING, opts)) != -1) {
        int spec = vrctl_spec_option(c, optarg, &o->js);
        if (spec > 1)
            return spec;
        if (spec)
            continue;
        switch (c) {
        case 'o': out = optarg; break;
        case 'y': o->replace = 1; break;
        case 'n': o->replace = 0; break;
        case 'W':
            if (cli_opt_int("--workers", optarg, 1, 64, &o->workers))
                return 2;
            break;
        case 'U': o->cpu = 1; break;
        case 'l': { /* checked here, before any process starts; passed on as text */
            double lease;
            if (cli_opt_double("--lease-seconds", optarg, 0.5, 86400, &lease))
                return 2;
            o->lease = optarg;
            break;
        }
        case 'K': o->keep = 1; break;
        case 'Z': o->resume = 1; break;
        case 'g':
            if (cli_opt_int("--per-gpu", optarg, 1, 16, &o->per_gpu))
                return 2;
            break;
        case 'M': /* checked here, so a typo is said before anything starts */
            if (strcmp(optarg, "threads") && strcmp(optarg, "processes"))
                return cli_usage_error("--slot-mode takes threads or processes");
            o->slot_mode = optarg;
            break;
        case 'E':
            if (cli_opt_int("--encode-threads", optarg, 1, 256, &o->encode_threads))
                return 2;
            break;
        case 'S': { /* read now, so a bad file is said before anything starts */
            char secret[1024];
            vr_err e = { 0 };
            int ok = storage_read_secret(optarg, secret, sizeof secret, &e) > 0;
            explicit_bzero(secret, sizeof secret);
            if (!ok)
                return cli_usage_error("--notify-secret-file %s", e.msg);
            if (!realpath(optarg, o->secret))
                return cli_usage_error("--notify-secret-file %s: cannot resolve", optarg);
            break;
        }
        case 'P': o->allow_private = 1; break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (o->secret[0] && !o->js.notify[0])
        return cli_usage_error("--notify-secret-file signs the --notify POST: give --notify URL");
    if (argc - optind != 1)
        return cli_usage_error("expected one input video");
    if (!out)
        return cli_usage_error("missing -o OUT");
    if (url_root_is_url(out) && o->resume)
        return cli_usage_error("--resume with -o URL: not yet (its local copy is not kept)");
    vr_err de = { 0 };
    http_io_configure_private(1); /* the operator's own URLs, as vr-worker process's */
    if (out_dest_begin(&o->dest, out, o->replace, &de) < 0) {
        log_say(LOG_ERROR, "vrctl run: %s\n", de.msg);
        return 1;
    }
    int rc = vrctl_prepare(argv[optind], o->dest.local, o->replace, &o->js, &o->info);
    if (rc) {
        out_dest_end(&o->dest);
        return rc;
    }
    o->gpus = o->cpu ? 0 : vr_gpu_count();
    if (!o->cpu && o->gpus == 0) {
        log_say(LOG_WARN, "vrctl run: no NVIDIA GPU found; using the CPU engine (slow)\n");
        o->cpu = 1;
    }
    if (o->cpu && !o->workers)
        o->workers = run_cpu_workers();
    run_auto(o);
    return 0;
}

/* ---- spawn ---- */

/* The processes of one run and where they keep their files. */
struct run {
    struct run_workdir wd;        /* the work dir (dir below is its path) */
    char job[JOB_ID_MAX];         /* the job resumed, or "" (a new one)  */
    int keep_workdir;             /* a resume that could not start: leave it as it was */
    char dir[RUN_WORKDIR_MAX];    /* the work dir: redis socket and AOF, storage, logs */
    char exe_dir[4096];           /* where vrctl is: the other binaries are there */
    char url[160];
    char storage[128];
    struct sup infra;             /* redis-server: stopped last */
    struct sup procs;             /* [0] the controller, then the workers */
    double t0_ms;                 /* when the command began (monotonic) */
};

/* Starts `bin` (next to vrctl) with args, its output in <dir>/<name>.log. */
static int run_add(struct run *r, struct sup *s, const char *bin, char *const *args,
                   const char *name)
{
    char prog[4200], log[160];
    snprintf(prog, sizeof prog, "%s/%s", r->exe_dir, bin);
    /* Ctrl-C reaches vrctl only: it stops the others in order; a kill -9
     * of vrctl kills them (their temp dir is reaped by the next run) */
    unsigned flags = SUP_OWN_GROUP | SUP_DIE_WITH_PARENT;
    if (access(prog, X_OK) < 0) {
        if (strcmp(bin, "redis-server")) {
            log_say(LOG_ERROR, "vrctl run: %s not found next to vrctl\n", prog);
            return -1;
        }
        snprintf(prog, sizeof prog, "%s", bin); /* a bundle ships its own, else PATH */
        flags |= SUP_SEARCH_PATH;
    }
    char *argv[32];
    int k = 0;
    argv[k++] = prog;
    for (int i = 0; args[i] && k < 31; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    snprintf(log, sizeof log, "%.79s/%.32s.log", r->dir, name);
    vr_err e = { 0 };
    if (sup_spawn(s, name, prog, argv, log, flags, &e) < 0) {
        log_say(LOG_ERROR, "vrctl run: %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* A private redis-server on a unix socket, waited for until it answers. */
static int run_redis(struct run *r)
{
    char sock[108]; /* sun_path */
    snprintf(sock, sizeof sock, "%.95s/redis.sock", r->dir);
    snprintf(r->url, sizeof r->url, "unix://%s", sock);
    char *args[] = { "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                     "--dir", r->dir, "--save", "", "--appendonly", "yes", "--appendfsync",
                     "everysec", "--maxmemory-policy", "noeviction",
                     /* a worker's append is bounded (issue 41, finding 8) */
                     "--proto-max-bulk-len", "1mb", "--client-query-buffer-limit", "4mb",
                     "--daemonize", "no", NULL };
    if (run_add(r, &r->infra, "redis-server", args, "redis") < 0)
        return -1;
    for (int i = 0; i < 1000; i++) { /* 5 s, looked at every 5 ms: the fleet waits on it */
        if (access(sock, F_OK) == 0) {
            struct rq *q = NULL;
            int up = rq_open(r->url, 1000, &q, NULL) == 0;
            rq_free(&q);
            if (up)
                return 0;
        }
        if (sup_reap(&r->infra, 0) >= 0) {
            log_say(LOG_ERROR, "vrctl run: redis-server exited (is it installed? see %s)\n",
                    r->infra.child[0].log);
            return -1;
        }
        usleep(5000);
    }
    log_say(LOG_ERROR, "vrctl run: redis-server did not start (see %s)\n", r->infra.child[0].log);
    return -1;
}

/* The controller, then the workers: CPU workers, or per_gpu per GPU. The
 * job is enqueued right after (run_supervise): the plan and the workers'
 * start-up and warm-up overlap. */
static int run_spawn_all(struct run *r, const struct run_opts *o)
{
    /* the private controller may touch the input's directory and the
     * output's, nothing else: the roots of its one job (realpath'd by
     * vrctl_prepare, so no link is left in either) */
    char in_root[JOB_PATH_MAX], out_root[JOB_PATH_MAX];
    snprintf(in_root, sizeof in_root, "%s", o->js.input);
    snprintf(out_root, sizeof out_root, "%s", o->js.output);
    char *in_dir = dirname(in_root); /* the workers read the input in place there too */
    char *cargs[16] = { "run", "--redis", r->url, "--storage", r->storage, "--input-root",
                        in_dir, "--output-root", dirname(out_root), "--lease-seconds",
                        (char *)o->lease };
    int nc = 11;
    /* a URL source is the operator's own request here, as for vr-worker
     * process: its host may be on the local network */
    int url = url_root_is_url(o->js.input);
    if (url)
        cargs[nc++] = "--storage-allow-private";
    if (o->allow_private)
        cargs[nc++] = "--notify-allow-private";
    if (o->secret[0]) {
        cargs[nc++] = "--notify-secret-file";
        cargs[nc++] = (char *)o->secret;
    }
    if (run_add(r, &r->procs, "vr-controller", cargs, "controller") < 0)
        return -1;
    int n = o->cpu ? o->workers : o->gpus * o->per_gpu;
    /* The GPUs' workers: one `serve --gpu all --slots per_gpu`, which runs
     * them the way a serve fleet does (its slot mode, its restarts), so
     * that `run` measures what `serve` does. CPU workers: a process each. */
    int procs = o->cpu ? n : 1;
    for (int i = 0; i < procs; i++) {
        char name[48], per[16], threads[16], host[16];
        if (o->cpu)
            snprintf(name, sizeof name, "worker-cpu%d", i);
        else
            snprintf(name, sizeof name, "workers-gpu");
        snprintf(per, sizeof per, "%d", o->per_gpu);
        /* Each worker's encoder keeps a thread per core unless told: its
         * encodes come in bursts between decodes, and sharing the cores out
         * measured slower on the H100 (docs/PERF.md) */
        snprintf(threads, sizeof threads, "%d", o->encode_threads);
        snprintf(host, sizeof host, "%d", n);
        /* --warm-from the source: each worker makes its decoder, engine and
         * encoder probe for it (one after another on the host) while the
         * controller plans the job, instead of inside its first chunk */
        char *wargs[20] = { "serve", "--redis", r->url, "--storage", r->storage,
                            "--input-root", in_dir, "--host-slots", host };
        int k = 9;
        if (url) { /* the warm-up probes a file; a URL's first chunk warms it */
            wargs[k++] = "--storage-allow-private";
        } else {
            wargs[k++] = "--warm-from";
            wargs[k++] = (char *)o->js.input;
        }
        if (o->cpu) {
            wargs[k++] = "--cpu";
        } else {
            wargs[k++] = "--gpu";
            wargs[k++] = "all";
            wargs[k++] = "--slots";
            wargs[k++] = per;
            if (o->slot_mode) {
                wargs[k++] = "--slot-mode";
                wargs[k++] = (char *)o->slot_mode;
            }
        }
        if (o->encode_threads) {
            wargs[k++] = "--encode-threads";
            wargs[k++] = threads;
        }
        if (run_add(r, &r->procs, "vr-worker", wargs, name) < 0)
            return -1;
    }
    log_say(LOG_INFO, "vrctl run: %d %s worker%s, temp dir %s; started %.0f ms into the run\n", n,
            o->cpu ? "CPU" : "GPU", text_plural(n), r->dir, clock_mono_ms() - r->t0_ms);
    return 0;
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
    log_say(LOG_INFO, "---- %s (last lines)\n", path);
    for (int i = n > 8 ? n - 8 : 0; i < n; i++)
        fputs(lines[i % 8], stderr);
}

/* How long a done run waits for its controller to stop before it kills
 * it too. */
#define RUN_DONE_CTL_WAIT_MS 5000

/* The job is done: its output stitched, fsync'd and renamed, complete and
 * durable. No drain is worth waiting for now: the controller and workers
 * are told to stop (SIGTERM: each may still log its figures) and woken
 * from their reads (which block 0.5 s), the controller is waited for, and
 * the workers still going then are killed with the processes they
 * started, so that their release of decoders, engines and GPU contexts
 * (about 2 s on 2 H200s, docs/PERF.md) is not `vrctl run`'s time; Redis
 * stops meanwhile, and everyone is reaped. */
static void run_stop_done(struct run *r)
{
    struct sup *p = &r->procs;
    sup_signal(p, SIGTERM);
    struct rq *q = NULL;
    rq_open(r->url, 1000, &q, NULL);
    /* woken more than once: a read begun before the signal was handled
     * blocks again */
    for (int t = 0; p->n > 0 && t < RUN_DONE_CTL_WAIT_MS / 20 && !sup_wait(p, 0, 20); t++)
        if (q)
            rq_unblock_all(q, NULL);
    if (p->n > 0 && !sup_wait(p, 0, 0))
        sup_kill(p, 0);
    for (int i = 1; i < p->n; i++)
        sup_kill(p, i);
    if (q) /* Redis too (its AOF written), now */
        rq_server_shutdown(q);
    rq_free(&q);
    sup_stop(p, 5000); /* reaps them: every one is stopped or killed */
}

/* Stops workers first (SIGTERM drains; interrupted: 2 s, their chunks run
 * again on --resume), then the controller, then Redis (its AOF written);
 * a done job's fleet at once (run_stop_done). Removes the work dir unless
 * keep. */
static void run_cleanup(struct run *r, int keep, int show_logs, int interrupted, int done)
{
    if (done) { /* its time said: what a done run adds after the job (docs/PERF.md) */
        double t0 = clock_mono_ms();
        run_stop_done(r);
        log_say(LOG_INFO, "vrctl run: its fleet stopped in %.0f ms\n", clock_mono_ms() - t0);
    } else
        sup_stop(&r->procs, interrupted ? 2000 : 10000);
    sup_stop(&r->infra, 5000);
    for (int i = 0; show_logs && i < r->procs.n; i++)
        run_tail(r->procs.child[i].log);
    sup_release(&r->procs);
    sup_release(&r->infra);
    if (interrupted)
        log_say(LOG_INFO, "vrctl run: committed chunks kept in %s; the same command with "
                "--resume carries on\n", r->dir);
    else if (keep)
        log_say(LOG_INFO, "vrctl run: kept %s (logs, storage)\n", r->dir);
    run_workdir_close(&r->wd, keep || interrupted || r->keep_workdir);
}

/* A resumed run, before any worker starts: the job must still be there and
 * live (or done), and the chunks the stopped run's workers held go back
 * to the queue. Returns 0 or 1 (said why). */
static int run_resume_check(struct run *r)
{
    struct rq *q = NULL;
    if (vrctl_connect(r->url, &q))
        return 1;
    char state[32] = "";
    long long done = 0, total = 0;
    vr_err e = { 0 };
    int rc;
    /* Redis answers LOADING while it replays its AOF */
    for (int i = 0; (rc = rq_job_state(q, r->job, state, sizeof state, &e)) < 0 &&
                    strstr(e.msg, "LOADING") && i < 600 && !run_stop; i++)
        usleep(50000);
    if (rc <= 0 || !strcmp(state, "failed") || !strcmp(state, "cancelled")) {
        log_say(LOG_ERROR, "vrctl run: cannot resume job %s: %s; run without --resume to start "
                "afresh\n", r->job, rc < 0 ? e.msg : rc == 0 ? "gone from its Redis" : state);
        rq_free(&q);
        r->keep_workdir = 1;
        return 1;
    }
    /* the time it was stopped is no time the job ran: "done in" leaves it out */
    long long stopped = 0, gap = r->wd.stopped_ms ? rq_now_ms() - r->wd.stopped_ms : 0;
    if (gap > 0 && rq_job_number(q, r->job, "stopped_ms", &stopped, NULL) >= 0) {
        char v[32];
        snprintf(v, sizeof v, "%lld", stopped + gap);
        rq_job_note(q, r->job, "stopped_ms", v, NULL);
    }
    int back = run_release_dead(q, &e);
    rq_job_number(q, r->job, "chunks_done", &done, NULL);
    rq_job_number(q, r->job, "chunks_total", &total, NULL);
    log_say(LOG_INFO, "vrctl run: resuming job %s (%s): %lld of %lld chunks done, %d requeued "
            "from the stopped run\n", r->job, state, done, total, back > 0 ? back : 0);
    rq_free(&q);
    return 0;
}

/* ---- supervise ---- */

/* Reaps the controller and workers as they exit: each death is reported
 * with its log; when the controller or the last worker is gone the job can
 * no longer finish, so the watch stops instead of waiting forever. */
struct run_monitor {
    struct run *r;
    volatile int stop;
};

static void *run_monitor_main(void *arg)
{
    struct run_monitor *m = arg;
    struct sup *s = &m->r->procs;
    while (!m->stop && !run_dead[0]) {
        int i;
        while ((i = sup_reap(s, 0)) >= 0) {
            char how[96];
            sup_describe(s->child[i].status, how, sizeof how);
            log_say(LOG_ERROR, "vrctl run: %s %s; its log: %s\n",
                    i == 0 ? "the controller" : "a worker", how, s->child[i].log);
            if (i == 0)
                snprintf(run_dead, sizeof run_dead, "the controller %s", how);
        }
        int workers_left = sup_running(s) - (s->child[0].pid > 0);
        if (!run_dead[0] && !workers_left)
            snprintf(run_dead, sizeof run_dead, "no worker is left (all %d exited)", s->n - 1);
        if (run_dead[0])
            run_stop = 1;
        for (int t = 0; t < 10 && !m->stop; t++) /* the run's end waits for this thread */
            usleep(20 * 1000);
    }
    return NULL;
}

/* A job with a webhook: its delivery goes out from this run's controller,
 * which stops with the run, so the run waits for it (at most
 * RUN_NOTIFY_WAIT_S; Ctrl-C stops waiting) and says how it went. The first
 * failed attempt ends the wait: its retries would come after the run has
 * stopped the controller (a closed port held a 0.4 s job for 61 s). */
#define RUN_NOTIFY_WAIT_S 60

static void run_wait_notify(struct rq *q, const char *id)
{
    char state[32] = "", why[512] = "";
    for (int i = 0; i < RUN_NOTIFY_WAIT_S * 10 && !run_stop && !run_dead[0]; i++) {
        if (rq_notify_state(q, id, state, sizeof state, why, sizeof why, NULL) > 0 &&
            (strcmp(state, "pending") || why[0]))
            break;
        if (i == 10)
            log_say(LOG_INFO, "vrctl run: waiting for the webhook delivery...\n");
        usleep(100000);
    }
    if (!strcmp(state, "delivered"))
        log_say(LOG_INFO, "vrctl run: webhook delivered\n");
    else
        log_say(LOG_WARN, "vrctl run: webhook not delivered%s%s\n", why[0] ? ": " : "", why);
}

/* Enqueues the job and shows its progress while the monitor watches the
 * processes. Returns vrctl's exit code. */
static int run_supervise(struct run *r, struct run_opts *o)
{
    struct rq *q = NULL;
    if (vrctl_connect(r->url, &q))
        return 1;
    vr_err e = { 0 };
    if (r->job[0]) {
        snprintf(o->js.id, sizeof o->js.id, "%s", r->job);
    } else {
        vrctl_new_id(o->js.id, sizeof o->js.id);
        o->js.created_ms = rq_now_ms();
        if (vrctl_enqueue(q, &o->js, o->info.frames_est, &e) != 0 ||
            run_workdir_save_job(&r->wd, o->js.id, &e) < 0) {
            log_say(LOG_ERROR, "vrctl run: %s\n", e.msg);
            rq_free(&q);
            return 1;
        }
    }
    struct run_monitor mon = { .r = r, .stop = 0 };
    pthread_t mt;
    int mon_ok = pthread_create(&mt, NULL, run_monitor_main, &mon) == 0;
    int rc = vrctl_watch(q, o->js.id, &run_stop, 0);
    if ((rc == 0 || rc == 1) && o->js.notify[0])
        run_wait_notify(q, o->js.id);
    mon.stop = 1;
    if (mon_ok)
        pthread_join(mt, NULL);
    if (rc == 3 && run_dead[0]) {
        log_say(LOG_ERROR, "vrctl run: job %s cannot finish: %s (logs below)\n", o->js.id, run_dead);
        rc = 1;
    } else if (rc == 3) {
        log_say(LOG_WARN, "vrctl run: interrupted; stopping workers, controller and redis\n");
        rc = 130;
    }
    if (vrctl_flags.json)
        vrctl_print_result(q, o->js.id, rc);
    rq_free(&q);
    return rc;
}

/* ---- command ---- */

int cmd_run(int argc, char **argv)
{
    double t0 = clock_mono_ms();
    struct run_opts o;
    int rc = run_parse(argc, argv, &o);
    if (rc)
        return rc;
    /* The private redis-server has no password: a file meant for a fleet's
     * Redis must not reach this run's controller and workers. */
    unsetenv("VR_REDIS_PASSWORD_FILE");
    struct run r;
    memset(&r, 0, sizeof r);
    r.t0_ms = t0;
    ssize_t len = readlink("/proc/self/exe", r.exe_dir, sizeof r.exe_dir - 1);
    if (len <= 0) {
        log_say(LOG_ERROR, "vrctl run: cannot find my own binary\n");
        out_dest_end(&o.dest);
        return 1;
    }
    r.exe_dir[len] = '\0';
    *strrchr(r.exe_dir, '/') = '\0';
    run_temps_reap();
    vr_err we = { 0 };
    if (run_workdir_open(&o.js, o.resume, &r.wd, &we) < 0) {
        log_say(LOG_ERROR, "vrctl run: %s\n", we.msg);
        out_dest_end(&o.dest);
        return 1;
    }
    if (o.resume && !r.wd.resuming)
        log_say(LOG_INFO, "vrctl run: nothing to resume for this job; starting afresh\n");
    snprintf(r.dir, sizeof r.dir, "%s", r.wd.dir);
    if (r.wd.resuming)
        snprintf(r.job, sizeof r.job, "%s", r.wd.job);
    snprintf(r.storage, sizeof r.storage, "%s/storage", r.dir);
    struct sigaction sa = { 0 };
    sa.sa_handler = run_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    rc = 1;
    if ((mkdir(r.storage, 0755) == 0 || (r.job[0] && errno == EEXIST)) && run_redis(&r) == 0 &&
        (!r.job[0] || run_resume_check(&r) == 0) && run_spawn_all(&r, &o) == 0)
        rc = run_supervise(&r, &o);
    run_cleanup(&r, o.keep, rc != 0 && rc != 130, rc == 130, rc == 0);
    if (rc == 0 && o.dest.url && out_dest_commit(&o.dest, o.replace, &we) < 0) {
        log_say(LOG_ERROR, "vrctl run: %s: the output is not uploaded\n", we.msg);
        rc = 1;
    }
    out_dest_end(&o.dest);
    return rc;
}

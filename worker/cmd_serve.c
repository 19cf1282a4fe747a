/*
 * cmd_serve.c - `vr-worker serve`: options, `--gpu all` and `--slots N`
 * (worker child processes, N on each GPU or N CPU workers, each exec'd
 * afresh so CUDA is initialised once per process), the Redis connection
 * with backoff, and the pull loop. SIGTERM drains: the chunk in hand is
 * finished and committed, nothing more is taken.
 */
#include "commands.h"
#include "serve.h"

#include "cmdtable.h"
#include "gpus.h"
#include "log.h"
#include "paths.h"
#include "pipeline_cuda.h"
#include "supervise.h"

#include <getopt.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t serve_drain;

static void serve_on_signal(int sig)
{
    (void)sig;
    serve_drain = 1;
}

/* ---- several worker processes: --gpu all, --slots N ---- */

/* The child's argv: this one's options, then `--gpu g` (unless g is NULL:
 * --cpu) and `--slots 1`, which win over the earlier ones as getopt reads
 * them, so a child never spawns again however the options were spelled.
 * av: argc + 6 slots. */
static void serve_argv_for(int argc, char **argv, const char *exe, const char *g, char **av)
{
    int k = 0;
    av[k++] = (char *)exe;
    av[k++] = "serve";
    for (int i = 1; i < argc; i++)
        av[k++] = argv[i];
    if (g) {
        av[k++] = "--gpu";
        av[k++] = (char *)g;
    }
    av[k++] = "--slots";
    av[k++] = "1";
    av[k] = NULL;
}

/* `slots` worker processes on each GPU (`--gpu all`: every GPU, else GPU
 * `gpu`; gpu < 0: the CPU engine), each exec'd afresh (CUDA initialised
 * once per process); SIGTERM/SIGINT are passed on (each drains); exits 0
 * only when every worker did. slots 0: auto (vr_gpu_auto_slots). */
static int serve_children(int argc, char **argv, int all, int gpu, int slots)
{
    int first = gpu, n = 1;
    if (all) {
        first = 0;
        n = vr_gpu_count();
        if (n <= 0) {
            log_say(LOG_ERROR, "vr-worker serve: --gpu all: no NVIDIA GPU found; use --cpu\n");
            return 1;
        }
    }
    int automatic = slots <= 0;
    if (automatic)
        slots = vr_gpu_auto_slots(n);
    if (gpu >= 0 || all)
        log_info("%d worker%s per GPU on %d GPU%s%s", slots, slots > 1 ? "s" : "", n,
                 n > 1 ? "s" : "", automatic ? " (--slots auto: half the cores per GPU, 2..8)" : "");
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        log_say(LOG_ERROR, "vr-worker serve: cannot find my own binary\n");
        return 1;
    }
    exe[len] = '\0';
    char **av = calloc((size_t)argc + 6, sizeof *av);
    if (!av)
        return 1;
    struct sigaction sa = { 0 }; /* no SA_RESTART: a signal ends the wait below */
    sa.sa_handler = serve_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sup sup = { 0 };
    int bad = 0;
    for (int k = 0; k < n * slots && !bad; k++) {
        int g = first + k / slots;
        char gs[16], name[48];
        snprintf(gs, sizeof gs, "%d", g);
        if (gpu >= 0 || all)
            snprintf(name, sizeof name, "GPU %d worker %d", g, k % slots);
        else
            snprintf(name, sizeof name, "CPU worker %d", k);
        serve_argv_for(argc, argv, exe, gpu >= 0 || all ? gs : NULL, av);
        vr_err e = { 0 };
        int i = sup_spawn(&sup, name, exe, av, NULL, 0, &e);
        if (i < 0) {
            log_error("%s", e.msg);
            bad = 1;
        } else {
            log_info("%s: pid %d", name, (int)sup.child[i].pid);
        }
    }
    int passed_on = 0;
    while (sup_running(&sup) > 0) {
        int i = sup_reap(&sup, 1);
        if (i < 0) {
            if (serve_drain && !passed_on) {
                sup_signal(&sup, SIGTERM);
                passed_on = 1;
            }
            continue;
        }
        int st = sup.child[i].status;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            char how[96];
            sup_describe(st, how, sizeof how);
            log_warn("%s %s", sup.child[i].name, how);
            bad = 1;
        }
    }
    sup_release(&sup);
    free(av);
    return bad;
}

/* ---- the loop ---- */

static int serve_loop(struct serve *s)
{
    const char *hi[] = { RQ_CHUNKS_HI }, *normal[] = { RQ_CHUNKS };
    long long taken = 0;
    int down = 0;
    log_info("worker %s: ready (storage %s)", s->name, s->storage);
    while (!serve_drain && (!s->max_chunks || taken < s->max_chunks)) {
        struct rq_msg m;
        vr_err e = { 0 };
        /* Priority jobs first (a non-blocking look), then the normal stream;
         * BLOCK stays well below the 10 s command timeout, and bounds how
         * long a new priority chunk waits for an idle worker. One stream per
         * read: a read of both could deliver two entries at once. */
        int rc = rq_read(s->q, RQ_G_WORKERS, s->name, hi, 1, 0, &m, &e);
        if (rc == 0)
            rc = rq_read(s->q, RQ_G_WORKERS, s->name, normal, 1, 500, &m, &e);
        if (rc < 0) {
            if (!down)
                log_warn("%s; retrying", e.msg);
            down = 1;
            rq_backoff(s->q);
            if (strstr(e.msg, "NOGROUP")) {
                rq_group_ensure(s->q, RQ_CHUNKS_HI, RQ_G_WORKERS, NULL);
                rq_group_ensure(s->q, RQ_CHUNKS, RQ_G_WORKERS, NULL);
            }
            continue;
        }
        down = 0;
        if (rc == 0) { /* idle: the next chunk is likely another source's */
            pipe_warm_drop_input(&s->warm);
            continue;
        }
        taken++;
        if (serve_chunk(s, &m) < 0)
            rq_backoff(s->q);
        rq_msg_release(&m);
    }
    log_info("worker %s: %s after %lld chunks", s->name,
             serve_drain ? "drained" : "stopping", s->chunks_done);
    return 0;
}

/* Lines the benchmark reads: Redis round trips of the pull loop per chunk
 * and of the heartbeat thread per second; how often the engine stayed warm. */
static void serve_report(struct serve *s, double secs)
{
    long long main_trips = rq_round_trips(s->q);
    log_info("worker %s: redis round trips: %lld in the pull loop (%.1f per chunk over %lld "
             "chunks), %lld heartbeat (%.1f per second)", s->name, main_trips,
             s->chunks_done ? (double)main_trips / s->chunks_done : 0.0, s->chunks_done,
             s->hb_trips, secs > 0 ? s->hb_trips / secs : 0.0);
    if (s->cold)
        log_info("worker %s: engine built for every chunk (VR_WARM_ENGINE=0)", s->name);
    else
        log_info("worker %s: engine built %lld times, reused for %lld chunks", s->name,
                 s->warm.built, s->warm.reused);
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        { "redis", required_argument, 0, 'r' },
        { "redis-password-file", required_argument, 0, 'R' },
        { "storage", required_argument, 0, 's' },
        { "input-root", required_argument, 0, 'i' },
        { "gpu", required_argument, 0, 'g' },
        { "cpu", no_argument, 0, 'c' },
        { "heartbeat-ms", required_argument, 0, 'h' },
        { "max-chunks", required_argument, 0, 'm' },
        { "encode-threads", required_argument, 0, 'e' },
        { "slots", required_argument, 0, 'S' },
        { 0, 0, 0, 0 }
    };
    struct serve s;
    memset(&s, 0, sizeof s);
    const char *redis = NULL, *storage = NULL, *gpu = NULL, *input_root = NULL;
    int cpu = 0, slots = -1, o; /* -1: 1 for --gpu N and --cpu, auto for --gpu all */
    s.hb_ms = 1000;
    s.last_gpu_util = -1;
    while ((o = cli_getopt(argc, argv, "", opts)) != -1) {
        switch (o) {
        case 'r': redis = optarg; break;
        case 'R': rq_password_file(optarg); break;
        case 's': storage = optarg; break;
        case 'i': input_root = optarg; break;
        case 'g': gpu = optarg; break;
        case 'c': cpu = 1; break;
        case 'h':
            if (cli_opt_int("--heartbeat-ms", optarg, 100, 60000, &s.hb_ms))
                return 2;
            break;
        case 'm':
            if (cli_opt_long("--max-chunks", optarg, 0, 1000000000L, &s.max_chunks))
                return 2;
            break;
        case 'e':
            if (cli_opt_int("--encode-threads", optarg, 1, 256, &s.encode_threads))
                return 2;
            break;
        case 'S': {
            char *end;
            slots = strcmp(optarg, "auto") ? (int)strtol(optarg, &end, 10) : 0;
            if (strcmp(optarg, "auto") && (*end || end == optarg || slots < 1 || slots > 16))
                return cli_usage_error("--slots takes 1..16 or auto");
            break;
        }
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if (!!gpu + cpu != 1)
        return cli_usage_error("give exactly one of --gpu N, --gpu all, --cpu");
    redis = rq_url_pick(redis);
    vr_err ue = { 0 }; /* a malformed address is bad usage, said before anything starts */
    if (rq_url_check(redis, &ue) < 0)
        return cli_usage_error("%s", ue.msg);
    if (!storage)
        return cli_usage_error("--storage DIR is required");
    int all = gpu && !strcmp(gpu, "all");
    if (gpu && !all && cli_opt_int("--gpu", gpu, 0, 63, &s.gpu))
        return 2; /* or 'all' (--help says so) */
    if (slots < 0)
        slots = all ? 0 : 1;
    if (cpu && slots == 0)
        return cli_usage_error("--slots auto is for GPU workers: give --cpu a number");
    if (all || slots != 1)
        return serve_children(argc, argv, all, gpu ? s.gpu : -1, slots);
    if (gpu) {
        s.backend = SEG_CUDA;
    } else {
        s.backend = SEG_CPU;
    }
    /* A worker that cannot process anything must not take chunks: each one
     * it took would burn an attempt of a good chunk. */
    vr_err ce = { 0 };
    if (s.backend == SEG_CUDA && pcuda_check(s.gpu, &ce) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg);
        return 1;
    }
    struct vr_config cfg;
    char model[4096];
    if (config_load_profile(&cfg, "balanced", &ce) < 0 ||
        vr_data_path(cfg.model, model, sizeof model) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg[0] ? ce.msg : "model not found");
        if (!ce.msg[0])
            log_say(LOG_ERROR, "vr-worker serve: cannot find %s (set VR_DATA_DIR to the directory "
                               "holding models/ and configs/)\n", cfg.model);
        return 1;
    }
    struct stat stt;
    if (stat(storage, &stt) < 0 || !S_ISDIR(stt.st_mode) || !realpath(storage, s.storage)) {
        log_say(LOG_ERROR, "vr-worker serve: storage root %s is not a directory\n", storage);
        return 1;
    }
    /* chunks read in place come from the sources under it (the controller's
     * --input-root, which also defaults to the storage) */
    if (!input_root)
        input_root = storage;
    if (stat(input_root, &stt) < 0 || !S_ISDIR(stt.st_mode) ||
        !realpath(input_root, s.input_root)) {
        log_say(LOG_ERROR, "vr-worker serve: input root %s is not a directory\n", input_root);
        return 1;
    }
    snprintf(s.url, sizeof s.url, "%s", redis);
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    unsigned char r[4] = { 0 };
    if (getrandom(r, sizeof r, 0) != sizeof r)
        r[0] = (unsigned char)getpid();
    char dev[16];
    if (s.backend == SEG_CUDA)
        snprintf(dev, sizeof dev, "gpu%d", s.gpu);
    else
        snprintf(dev, sizeof dev, "cpu");
    snprintf(s.name, sizeof s.name, "%s:%s:%02x%02x%02x%02x", host, dev, r[0], r[1], r[2], r[3]);
    log_ctx_worker(s.name);
    s.drain = &serve_drain;
    const char *warm = getenv("VR_WARM_ENGINE");
    s.cold = warm && !strcmp(warm, "0");
    pthread_mutex_init(&s.mu, NULL);
    av_log_set_level(AV_LOG_FATAL);
    struct sigaction sa = { 0 };
    sa.sa_handler = serve_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (rq_ready(&s.q, s.url, &serve_drain, NULL) < 0) {
        rq_free(&s.q);
        return 1;
    }
    long long t_start = rq_now_ms();
    pthread_t hb;
    int hb_ok = pthread_create(&hb, NULL, serve_hb_main, &s) == 0;
    int rc = serve_loop(&s);
    pthread_mutex_lock(&s.mu);
    s.stop_hb = 1;
    pthread_mutex_unlock(&s.mu);
    if (hb_ok)
        pthread_join(hb, NULL);
    serve_report(&s, (rq_now_ms() - t_start) / 1000.0);
    pipe_warm_drop(&s.warm);
    rq_free(&s.q);
    pthread_mutex_destroy(&s.mu);
    return rc;
}

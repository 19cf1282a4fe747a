/*
 * cmd_serve.c - `vr-worker serve`: options, the Redis connection with
 * backoff, and the pull loop (`--gpu all` and `--slots N`: serve_slots.c). SIGTERM drains: the chunk in hand is
 * finished and committed, nothing more is taken.
 */
#include "commands.h"
#include "serve.h"

#include "clock.h"
#include "cmdtable.h"
#include "http_io.h"
#include "log.h"
#include "pipeline_cuda.h"
#include "rq_opts.h"
#include "storage.h"

#include <getopt.h>
#include <libavutil/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t serve_drain;

static void serve_on_signal(int sig)
{
    (void)sig;
    serve_drain = 1;
}

/* A worker name given with --name: it becomes a Redis key and a consumer
 * name, and is shown in lists. */
int serve_name_valid(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 100 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._-") == n;
}

/* ---- the loop ---- */

static int serve_loop(struct serve *s)
{
    const char *hi[] = { RQ_CHUNKS_HI }, *normal[] = { RQ_CHUNKS };
    long long taken = 0;
    int down = 0, idle = 0, halt = 0; /* halt: this worker alone stops */
    log_info("worker %s: ready (storage %s)", s->name, s->storage_url[0] ? s->storage_url
                                                                          : s->storage);
    while (!*s->drain && !halt && (!s->max_chunks || taken < s->max_chunks)) {
        struct rq_msg m;
        vr_err e = { 0 };
        if (s->quarantined && clock_mono_s() < s->probe_at) {
            usleep(100000); /* quarantined: no work until the probe (serve.h) */
            continue;
        }
        pthread_mutex_lock(&s->mu);
        int paused = s->fleet_paused;
        pthread_mutex_unlock(&s->mu);
        if (paused) {
            usleep(100000); /* the fleet's pause (rq_pause.h): no work until it ends */
            continue;
        }
        /* Priority jobs first (a non-blocking look), then the normal stream;
         * BLOCK stays well below the 10 s command timeout, and bounds how
         * long a new priority chunk waits for an idle worker. One stream per
         * read: a read of both could deliver two entries at once. A
         * straggler steps aside from the priority stream (serve_aside.c). */
        int rc = serve_aside(s) ? 0 : rq_read(s->q, RQ_G_WORKERS, s->claim.consumer, hi, 1, 0,
                                              &m, &e);
        if (rc == 0)
            rc = rq_read(s->q, RQ_G_WORKERS, s->claim.consumer, normal, 1, 500, &m, &e);
        if (rc == VR_EINVAL) {
            /* its ACL user may not read the chunks (NOPERM), or the password
             * went: waiting will not help (issue 45, item 6: it idled) */
            log_error("worker %s: %s; stopping", s->name, e.msg);
            return 1;
        }
        if (rc < 0) {
            /* NOGROUP: no controller has made the groups yet (or Redis came
             * back empty); the worker's user may not, and waits */
            if (!down)
                log_warn("%s; retrying%s", e.msg,
                         strstr(e.msg, "NOGROUP") ? " (until a controller creates the group)"
                                                  : "");
            down = 1;
            rq_backoff(s->q);
            continue;
        }
        down = 0;
        if (rc == 0) {
            /* idle: the source's file goes (the next chunk is likely
             * another source's), its decoder stays for the next job's
             * first chunk however long the wait: creating one cost 4-15 s
             * with 32 chunks starting on a host (issue 43); it goes when
             * a chunk's stream no longer fits it, or when the worker stops */
            if (++idle == 1)
                pipe_warm_idle(&s->warm);
            continue;
        }
        idle = 0;
        taken++;
        /* the claim is spent on this entry: the next read makes a new one
         * (an empty read keeps it, so idle reads add no consumers) */
        struct rq_claim claim = s->claim;
        s->claims++;
        if (serve_claim_next(s, &e) < 0) {
            log_error("%s", e.msg);
            halt = 1;
        }
        if (serve_chunk(s, &m, &claim) < 0)
            rq_backoff(s->q);
        rq_msg_release(&m);
    }
    log_info("worker %s: %s after %lld chunks", s->name,
             *s->drain ? "drained" : "stopping", s->chunks_done);
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
        log_info("worker %s: engine built %lld times, reused for %lld chunks; inputs opened "
                 "with a new decoder %lld times, a kept one %lld", s->name, s->warm.built,
                 s->warm.reused, s->warm.dec_new, s->warm.dec_kept);
}

/* ---- the command, step by step ---- */

/* What the options gave, before it is checked and resolved. */
struct serve_args {
    struct rq_opts ro; /* --redis, --storage, --input-root, ... (rq_opts.h) */
    const char *gpu, *name, *warm_from;
    const char *slot_names; /* --slot-names: this process runs them as threads */
    char first_name[101];   /* ... the first of them: the process's own name */
    int cpu, slots; /* slots -1: 1 for --gpu N and --cpu, auto for --gpu all */
    enum serve_slot_mode mode;
};

/* --slot-names (a `serve --slot-mode threads` parent's, for its child):
 * 0 when it holds 1..SERVE_SLOTS_MAX valid names, the first into *first
 * (the process's own name: its logs' and temporaries' outside a worker's
 * threads); -1 not. */
static int serve_names_check(const char *list, char *first, size_t fn)
{
    char buf[SERVE_SLOT_NAMES_LEN], *save = NULL;
    if (strlen(list) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
        if (n >= SERVE_SLOTS_MAX || !serve_name_valid(t))
            return -1;
    if (n < 1 || list[0] == ',' || strstr(list, ",,") || list[strlen(list) - 1] == ',')
        return -1;
    snprintf(first, fn, "%.*s", (int)strcspn(list, ","), list);
    return 0;
}

/* The options into s and a: 0, or the exit code (the usage error said). */
static int serve_options(int argc, char **argv, struct serve *s, struct serve_args *a)
{
    static const struct option opts[] = {
        RQ_LONGOPTS_REDIS,
        RQ_LONGOPTS_STORAGE,
        { "gpu", required_argument, 0, 'g' },
        { "cpu", no_argument, 0, 'c' },
        { "heartbeat-ms", required_argument, 0, 'h' },
        { "max-chunks", required_argument, 0, 'm' },
        { "encode-threads", required_argument, 0, 'e' },
        { "slots", required_argument, 0, 'S' },
        { "host-slots", required_argument, 0, 'H' },
        { "name", required_argument, 0, 'n' },
        { "warm-from", required_argument, 0, 'w' },
        { "warm-together", required_argument, 0, 'W' },
        { "slot-mode", required_argument, 0, 'M' },
        { "slot-names", required_argument, 0, 'N' },
        { 0, 0, 0, 0 }
    };
    int o;
    while ((o = cli_getopt(argc, argv, "", opts)) != -1) {
        int taken = rq_opts_take(&a->ro, o, optarg);
        if (taken > 1)
            return taken;
        if (taken)
            continue;
        switch (o) {
        case 'g': a->gpu = optarg; break;
        case 'c': a->cpu = 1; break;
        case 'h':
            if (cli_opt_int("--heartbeat-ms", optarg, 100, 60000, &s->hb_ms))
                return 2;
            break;
        case 'm':
            if (cli_opt_long("--max-chunks", optarg, 0, 1000000000L, &s->max_chunks))
                return 2;
            break;
        case 'e':
            if (cli_opt_int("--encode-threads", optarg, 1, 256, &s->encode_threads))
                return 2;
            break;
        case 'H':
            if (cli_opt_int("--host-slots", optarg, 1, 4096, &s->host_slots))
                return 2;
            break;
        case 'S': {
            char *end;
            a->slots = strcmp(optarg, "auto") ? (int)strtol(optarg, &end, 10) : 0;
            if (strcmp(optarg, "auto") && (*end || end == optarg || a->slots < 1 || a->slots > 16))
                return cli_usage_error("--slots takes 1..16 or auto");
            break;
        }
        case 'n':
            if (!serve_name_valid(optarg))
                return cli_usage_error("--name takes 1..100 letters, digits and ':._-'");
            a->name = optarg;
            break;
        case 'w': a->warm_from = optarg; break;
        case 'M':
            if (strcmp(optarg, "threads") && strcmp(optarg, "processes"))
                return cli_usage_error("--slot-mode takes threads or processes");
            a->mode = strcmp(optarg, "threads") ? SERVE_SLOTS_PROCESSES : SERVE_SLOTS_THREADS;
            break;
        case 'N':
            if (serve_names_check(optarg, a->first_name, sizeof a->first_name))
                return cli_usage_error("--slot-names takes 1..%d worker names, comma-separated",
                                       SERVE_SLOTS_MAX);
            a->slot_names = optarg;
            a->name = a->first_name;
            break;
        case 'W':
            if (cli_opt_int("--warm-together", optarg, 1, 16, &s->warm_together))
                return 2;
            break;
        default: return 2; /* '?': cli_getopt said why */
        }
    }
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if (!!a->gpu + a->cpu != 1)
        return cli_usage_error("give exactly one of --gpu N, --gpu all, --cpu");
    if (a->ro.allow_private)
        http_io_configure_private(1);
    snprintf(s->input_url_root, sizeof s->input_url_root, "%s", a->ro.input_url_root);
    snprintf(s->storage_url, sizeof s->storage_url, "%s", a->ro.storage_url);
    return rq_opts_check(&a->ro, RQ_NEED_DIR_OR_URL);
}

/* The device, the model and the roots, checked before any chunk is taken:
 * 0, or 1 with the reason logged. */
static int serve_resolve(struct serve *s, const struct serve_args *a)
{
    const char *storage = a->ro.storage, *input_root = a->ro.input_root;
    /* A worker that cannot process anything must not take chunks: each one
     * it took would burn an attempt of a good chunk. */
    vr_err ce = { 0 };
    if (s->backend == SEG_CUDA && pcuda_check(s->gpu, &ce) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg);
        return 1;
    }
    struct vr_config cfg;
    char model[4096];
    if (config_load_profile(&cfg, "balanced", &ce) < 0 ||
        config_model_file(&cfg, model, sizeof model, &ce) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg);
        return 1;
    }
    struct stat stt;
    if (storage && (stat(storage, &stt) < 0 || !S_ISDIR(stt.st_mode) ||
                    !realpath(storage, s->storage))) {
        log_say(LOG_ERROR, "vr-worker serve: storage root %s is not a directory\n", storage);
        return 1;
    }
    /* chunks read in place come from the sources under it (the controller's
     * --input-root, which also defaults to the storage) */
    if (!input_root)
        input_root = storage;
    /* --storage URL alone: chunk outputs by HTTP, sources by URL only */
    if (input_root && (stat(input_root, &stt) < 0 || !S_ISDIR(stt.st_mode) ||
        !realpath(input_root, s->input_root))) {
        log_say(LOG_ERROR, "vr-worker serve: input root %s is not a directory\n", input_root);
        return 1;
    }
    if (a->warm_from && !realpath(a->warm_from, s->warm_from)) {
        log_say(LOG_ERROR, "vr-worker serve: --warm-from %s: no such file\n", a->warm_from);
        return 1;
    }
    return 0;
}

/* The worker's name, its temporaries' owner and its claim key: 0, or 1
 * with the reason logged. */
static int serve_identity(struct serve *s, const struct serve_args *a)
{
    vr_err ce = { 0 };
    snprintf(s->url, sizeof s->url, "%s", a->ro.redis);
    char dev[16];
    if (s->backend == SEG_CUDA)
        snprintf(dev, sizeof dev, "gpu%d", s->gpu);
    else
        snprintf(dev, sizeof dev, "cpu");
    if (a->name)
        snprintf(s->name, sizeof s->name, "%s", a->name);
    else
        serve_name_make(s->name, sizeof s->name, dev);
    log_ctx_worker(s->name);
    char owner[sizeof s->name + 2];
    snprintf(owner, sizeof owner, "w:%s", s->name);
    if (storage_temp_owner_set(owner) < 0) /* a host name of other characters */
        log_warn("worker %s: its temporary files carry no owner and are never swept", s->name);
    /* a `serve --slots` parent hands its child the claim key, so that it
     * can release the child's chunks if it is killed (rq_report_died) */
    const char *ck = getenv(SERVE_CLAIM_KEY_ENV);
    if (ck && rq_claim_key_valid(ck))
        snprintf(s->claim_key, sizeof s->claim_key, "%s", ck);
    else if (rq_claim_key_new(s->claim_key, &ce) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg);
        return 1;
    }
    unsetenv(SERVE_CLAIM_KEY_ENV);
    if (serve_claim_next(s, &ce) < 0) {
        log_say(LOG_ERROR, "vr-worker serve: %s\n", ce.msg);
        return 1;
    }
    return 0;
}

/* The process's: libav quiet, SIGTERM/SIGINT drain every worker in it. */
static void serve_process_setup(struct serve *s)
{
    s->drain = &serve_drain;
    const char *warm = getenv("VR_WARM_ENGINE");
    s->cold = warm && !strcmp(warm, "0");
    av_log_set_level(AV_LOG_FATAL);
    struct sigaction sa = { 0 };
    sa.sa_handler = serve_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* VR_TEST_SERVE_EXIT_DELAY_MS (tests only, up to 60000): a worker slow to
 * exit once it has drained, as a GPU worker releasing its decoders,
 * engines and context is; the whole time, whatever signals come. */
static void serve_test_exit_delay(void)
{
    const char *v = getenv("VR_TEST_SERVE_EXIT_DELAY_MS");
    int ms = v ? atoi(v) : 0;
    if (ms <= 0 || ms > 60000)
        return;
    log_info("test hook: %d ms before the process exits", ms);
    double end = clock_mono_ms() + ms;
    for (double now; (now = clock_mono_ms()) < end;)
        usleep((useconds_t)((end - now) * 1000));
}

/* Redis, the heartbeat thread, the warm-up and the pull loop, then the
 * report and the teardown: the loop's exit code. */
int serve_run(struct serve *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->cut.mu, NULL);
    if (rq_ready(&s->q, s->url, RQ_G_WORKERS, s->drain, NULL) < 0) {
        rq_free(&s->q);
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->cut.mu);
        return 1;
    }
    long long t_start = rq_now_ms();
    s->warming = !s->cold; /* the first heartbeat already says so */
    pthread_t hb;
    int hb_ok = pthread_create(&hb, NULL, serve_hb_main, s) == 0;
    serve_warmup(s);
    int rc = serve_loop(s);
    pthread_mutex_lock(&s->mu);
    s->stop_hb = 1;
    pthread_mutex_unlock(&s->mu);
    if (hb_ok)
        pthread_join(hb, NULL);
    serve_report(s, (rq_now_ms() - t_start) / 1000.0);
    pipe_warm_release(&s->warm, s->name);
    rq_free(&s->q);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->cut.mu);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    struct serve s;
    memset(&s, 0, sizeof s);
    struct serve_args a = { .slots = -1, .mode = SERVE_SLOTS_DEFAULT };
    s.hb_ms = 1000;
    s.last_gpu_util = -1;
    int rc = serve_options(argc, argv, &s, &a);
    if (rc)
        return rc;
    int all = a.gpu && !strcmp(a.gpu, "all");
    if (a.gpu && !all && cli_opt_int("--gpu", a.gpu, 0, 63, &s.gpu))
        return 2; /* or 'all' (--help says so) */
    if (a.slots < 0)
        a.slots = all ? 0 : 1;
    if (a.cpu && a.slots == 0)
        return cli_usage_error("--slots auto is for GPU workers: give --cpu a number");
    if (a.slot_names && (all || a.slots != 1))
        return cli_usage_error("--slot-names is a worker process's own: give it --gpu N or "
                               "--cpu, and --slots 1");
    if (a.mode == SERVE_SLOTS_DEFAULT)
        a.mode = SERVE_SLOT_MODE_DEFAULT(a.gpu != NULL);
    if (all || a.slots != 1)
        return serve_slots(argc, argv, all, a.gpu ? s.gpu : -1, a.slots, a.mode, a.ro.redis);
    s.backend = a.gpu ? SEG_CUDA : SEG_CPU;
    if (serve_resolve(&s, &a) || serve_identity(&s, &a))
        return 1;
    serve_process_setup(&s);
    const char *delay = getenv("VR_TEST_SERVE_START_DELAY_MS"); /* tests: a slow start */
    int delay_ms = delay ? atoi(delay) : 0;
    if (delay_ms > 0 && delay_ms <= 60000)
        usleep((useconds_t)delay_ms * 1000);
    rc = a.slot_names ? serve_threads(&s, a.slot_names, serve_run) : serve_run(&s);
    serve_test_exit_delay();
    return rc;
}

/*
 * serve_slots.c - `vr-worker serve --gpu all` and `--slots N`: worker child
 * processes, N on each GPU or N CPU workers, each exec'd afresh so CUDA is
 * initialised once per process, and workers' names. With --slot-mode
 * threads a child runs a GPU's N workers (or all CPU workers) as threads
 * (serve_threads.c): one child a GPU, which the parent tends the same way,
 * reporting each of its workers died when it dies.
 *
 * The parent tends its slots: a worker killed by a signal (a crash, the
 * OOM killer, kill -9) is replaced, after a restart delay that doubles
 * while replacements keep dying young, so a crash loop does not spin; and
 * the chunk it held is requeued at once by the controller, as the lease
 * reclaim would do only when the lease lapsed: the parent reports it died
 * with the claim key it gave the child (rq_report_died), which proves the
 * claims were the child's. A worker that
 * exits with a status chose to (it cannot work here: no GPU, a bad storage
 * root) and is not replaced. SIGTERM/SIGINT are passed on: each drains.
 */
#include "serve.h"

#include "clock.h"
#include "gpus.h"
#include "log.h"
#include "rq_fleet.h"
#include "supervise.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

/* Restart delays: the first, the cap, and how long a worker must live for
 * the delay to start again from the first. */
#define SLOT_RESTART_FIRST_MS 1000.0
#define SLOT_RESTART_MAX_MS   60000.0
#define SLOT_HEALTHY_MS       30000.0

static volatile sig_atomic_t slots_drain;

static void slots_on_signal(int sig)
{
    (void)sig;
    slots_drain = 1;
}

void serve_name_make(char *buf, size_t n, const char *dev)
{
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    unsigned char r[4] = { 0 };
    if (getrandom(r, sizeof r, 0) != sizeof r)
        r[0] = (unsigned char)getpid();
    snprintf(buf, n, "%s:%s:%02x%02x%02x%02x", host, dev, r[0], r[1], r[2], r[3]);
}

/* One slot (a worker process): what it runs as, and when its replacement
 * is due. */
struct slot {
    char gpu[16];          /* "--gpu" argument, "" for --cpu */
    int workers;           /* workers it runs: 1, or its threads (--slot-mode threads) */
    char worker[SERVE_SLOTS_MAX][128]; /* their names in Redis (--name, --slot-names) */
    char names[SERVE_SLOT_NAMES_LEN]; /* threads: the names, comma-separated */
    char key[RQ_CLAIM_KEY_HEX]; /* its claim key (SERVE_CLAIM_KEY_ENV) */
    double started_ms;     /* monotonic */
    double delay_ms;       /* the next restart delay */
    double due_ms;         /* > 0: a replacement starts then */
    char host_slots[16];   /* every slot this parent runs: they share the cores */
};

/* The child's argv: this one's options, then `--gpu g` (unless --cpu),
 * `--slots 1` and `--name` (threads: `--slot-names`), which win over the
 * earlier ones as getopt reads them, so a child never spawns again however
 * the options were spelled; `--host-slots`, so each encoder knows how many
 * share the cores. av: argc + 10 entries. */
static void slot_argv(int argc, char **argv, const char *exe, const struct slot *sl, char **av)
{
    int k = 0;
    av[k++] = (char *)exe;
    av[k++] = "serve";
    for (int i = 1; i < argc; i++)
        av[k++] = argv[i];
    if (sl->gpu[0]) {
        av[k++] = "--gpu";
        av[k++] = (char *)sl->gpu;
    }
    av[k++] = "--slots";
    av[k++] = "1";
    av[k++] = sl->workers > 1 ? "--slot-names" : "--name";
    av[k++] = sl->workers > 1 ? (char *)sl->names : (char *)sl->worker[0];
    av[k++] = "--host-slots";
    av[k++] = (char *)sl->host_slots;
    av[k] = NULL;
}

/* Starts slot i (its entry in sup, new or reaped) under fresh names. */
static int slot_start(struct sup *sup, int i, struct slot *sl, int argc, char **argv,
                      const char *exe, char **av, const char *label)
{
    char dev[24] = "cpu";
    if (sl->gpu[0])
        snprintf(dev, sizeof dev, "gpu%s", sl->gpu);
    size_t at = 0;
    sl->names[0] = '\0';
    for (int w = 0; w < sl->workers; w++) {
        serve_name_make(sl->worker[w], sizeof sl->worker[w], dev);
        if (at < sizeof sl->names) /* 16 names of at most 80 bytes fit */
            at += (size_t)snprintf(sl->names + at, sizeof sl->names - at, "%s%s", w ? "," : "",
                                   sl->worker[w]);
    }
    slot_argv(argc, argv, exe, sl, av);
    vr_err e = { 0 };
    if (rq_claim_key_new(sl->key, &e) < 0) {
        log_error("%s", e.msg);
        return e.code;
    }
    setenv(SERVE_CLAIM_KEY_ENV, sl->key, 1); /* the child inherits it, and drops it */
    int rc = i < sup->n ? sup_respawn(sup, i, exe, av, 0, &e)
                        : sup_spawn(sup, label, exe, av, NULL, 0, &e);
    unsetenv(SERVE_CLAIM_KEY_ENV);
    if (rc < 0) {
        log_error("%s", e.msg);
        return rc;
    }
    sl->started_ms = clock_mono_ms();
    sl->due_ms = 0;
    log_info("%s: pid %d, worker%s %s", sup->child[i].name, (int)sup->child[i].pid,
             sl->workers > 1 ? "s" : "", sl->workers > 1 ? sl->names : sl->worker[0]);
    return 0;
}

/* The workers of a slot just started, listed as "warming" at once with a
 * short TTL (their own first heartbeat, a moment later, takes over): a job
 * submitted as the fleet starts is planned over every slot coming, not
 * over the one or two workers that have registered by then (the first job
 * on a fresh 2-GPU fleet was cut in chunks for 1 worker). */
#define SLOT_ANNOUNCE_TTL_S 15
static int slot_announce(const struct slot *sl, struct rq **q, const char *url)
{
    if (!*q && rq_open(url, 2000, q, NULL) < 0)
        return -1; /* Redis away: the workers register themselves when it is back */
    for (int w = 0; w < sl->workers; w++) {
        struct rq_worker_info info = { .gpu_util = -1, .hb_ms = 1000 };
        snprintf(info.name, sizeof info.name, "%s", sl->worker[w]);
        snprintf(info.gpu, sizeof info.gpu, "%s", sl->gpu[0] ? sl->gpu : "cpu");
        snprintf(info.state, sizeof info.state, "warming");
        snprintf(info.chunk, sizeof info.chunk, "-");
        if (rq_worker_heartbeat(*q, &info, SLOT_ANNOUNCE_TTL_S, NULL) < 0)
            return -1;
    }
    return 0;
}

/* The slot's workers off the list now (they announced or had no time to
 * register), not when their records' TTL ends. */
static void slot_unlist(const struct slot *sl, struct rq *q)
{
    for (int w = 0; q && w < sl->workers; w++)
        rq_worker_gone(q, sl->worker[w], NULL);
}

/* Slot i's worker process died of a signal: the chunk each of its workers
 * held back to the queue now (their claims were made under the key the
 * process was given), its replacement scheduled. */
static void slot_died(struct sup *sup, int i, struct slot *sl, struct rq **q, const char *url)
{
    char how[96], reason[256];
    sup_describe(sup->child[i].status, how, sizeof how);
    double now = clock_mono_ms();
    if (now - sl->started_ms >= SLOT_HEALTHY_MS || sl->delay_ms <= 0)
        sl->delay_ms = SLOT_RESTART_FIRST_MS;
    vr_err e = { 0 };
    int rc = VR_EINVAL;
    for (int w = 0; w < sl->workers; w++) {
        snprintf(reason, sizeof reason, "worker %s %s", sl->worker[w], how);
        if (!*q)
            rq_open(url, 5000, q, &e); /* unreachable: *q set all the same, and retried */
        if (*q && (rc = rq_report_died(*q, sl->worker[w], sl->key, reason, &e)) == 0)
            rq_worker_gone(*q, sl->worker[w], NULL); /* off the list now, not at its TTL */
    }
    /* a process of threads held a chunk a worker */
    char held[64] = "its chunk", anew[32] = "a new worker";
    if (sl->workers > 1) {
        snprintf(held, sizeof held, "the chunks its %d workers held", sl->workers);
        snprintf(anew, sizeof anew, "%d new workers", sl->workers);
    }
    if (rc < 0)
        log_warn("%s %s; %s %s left to the lease reclaim (%s)", sup->child[i].name, how, held,
                 sl->workers > 1 ? "are" : "is", e.msg);
    else
        log_warn("%s %s; %s %s back to the queue; %s in %.0f s", sup->child[i].name, how, held,
                 sl->workers > 1 ? "go" : "goes", anew, sl->delay_ms / 1000);
    sl->due_ms = now + sl->delay_ms;
    sl->delay_ms = sl->delay_ms * 2 < SLOT_RESTART_MAX_MS ? sl->delay_ms * 2 : SLOT_RESTART_MAX_MS;
}

int serve_slots(int argc, char **argv, int all, int gpu, int slots, enum serve_slot_mode mode,
                const char *url)
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
        slots = vr_gpu_auto_slots(n, mode == SERVE_SLOTS_THREADS);
    if (gpu >= 0 || all)
        log_info("%d worker%s per GPU on %d GPU%s%s", slots, slots > 1 ? "s" : "", n,
                 n > 1 ? "s" : "", !automatic ? ""
                 : mode == SERVE_SLOTS_THREADS ? " (--slots auto: a core a slot, 2..10 per GPU as threads)"
                                               : " (--slots auto: a core a slot, 2..16 per GPU as processes)");
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        log_say(LOG_ERROR, "vr-worker serve: cannot find my own binary\n");
        return 1;
    }
    exe[len] = '\0';
    char **av = calloc((size_t)argc + 10, sizeof *av);
    /* threads: a child a GPU (one for the CPU workers), running its slots */
    int threads = mode == SERVE_SLOTS_THREADS && slots > 1;
    int per_child = threads ? slots : 1, children = n * slots / per_child;
    if (threads)
        log_info("--slot-mode threads: the %d workers of each %s are threads of one process",
                 slots, gpu >= 0 || all ? "GPU" : "host");
    struct slot *sl = calloc((size_t)children, sizeof *sl);
    if (!av || !sl) {
        free(av);
        free(sl);
        return 1;
    }
    struct sigaction sa = { 0 }; /* no SA_RESTART: a signal ends the sleep below */
    sa.sa_handler = slots_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sup sup = { 0 };
    struct rq *q = NULL;
    int bad = 0, total = n * slots;
    for (int k = 0; k < children && !bad; k++) {
        char label[48];
        snprintf(sl[k].host_slots, sizeof sl[k].host_slots, "%d", total);
        sl[k].workers = per_child;
        if ((gpu >= 0 || all) && threads) {
            snprintf(sl[k].gpu, sizeof sl[k].gpu, "%d", first + k);
            snprintf(label, sizeof label, "GPU %s workers", sl[k].gpu);
        } else if (gpu >= 0 || all) {
            snprintf(sl[k].gpu, sizeof sl[k].gpu, "%d", first + k / slots);
            snprintf(label, sizeof label, "GPU %s worker %d", sl[k].gpu, k % slots);
        } else if (threads) {
            snprintf(label, sizeof label, "CPU workers");
        } else {
            snprintf(label, sizeof label, "CPU worker %d", k);
        }
        bad = slot_start(&sup, k, &sl[k], argc, argv, exe, av, label) < 0;
    }
    /* after every spawn, the children starting meanwhile; the first failure
     * ends it (Redis away: one wait, not one a slot) */
    for (int k = 0; k < sup.n && slot_announce(&sl[k], &q, url) == 0; k++)
        ;
    int passed_on = 0;
    for (;;) {
        int pending = 0;
        for (int k = 0; k < sup.n; k++)
            pending += sl[k].due_ms > 0;
        if (sup_running(&sup) == 0 && (!pending || slots_drain))
            break;
        if (slots_drain && !passed_on) {
            sup_signal(&sup, SIGTERM);
            passed_on = 1;
        }
        int i = sup_reap(&sup, 0);
        if (i < 0) {
            double now = clock_mono_ms();
            for (int k = 0; k < sup.n && !slots_drain; k++)
                if (sl[k].due_ms > 0 && now >= sl[k].due_ms) {
                    if (slot_start(&sup, k, &sl[k], argc, argv, exe, av, NULL) < 0)
                        sl[k].due_ms = now + SLOT_RESTART_MAX_MS;
                    else
                        slot_announce(&sl[k], &q, url);
                }
            usleep(100000);
            continue;
        }
        int st = sup.child[i].status;
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && slots_drain) {
            /* the SIGTERM passed on reached it before it set its handler
             * (it had only just started): stopped, holding nothing */
            log_info("%s stopped before it started", sup.child[i].name);
            slot_unlist(&sl[i], q);
        } else if (WIFSIGNALED(st) && !slots_drain) {
            slot_died(&sup, i, &sl[i], &q, url);
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            char how[96];
            sup_describe(st, how, sizeof how);
            log_warn("%s %s", sup.child[i].name, how);
            slot_unlist(&sl[i], q);
            bad = 1;
        }
    }
    rq_free(&q);
    sup_release(&sup);
    free(sl);
    free(av);
    return bad;
}

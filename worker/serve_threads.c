/*
 * serve_threads.c - `serve --slot-mode threads`: a worker process runs its
 * GPU's slots (or all CPU slots) as threads, each a whole worker: its own
 * name, Redis connections, heartbeat, claims, kept decoder and engine,
 * log lines and temporaries' owner. They share the process's CUDA context
 * (16 NVDEC sessions as threads of one process decoded 8K HEVC at 382 fps,
 * as 16 processes at 296: issue 43) and its claim key, which the parent
 * shows for each of their names when the process dies (serve_slots.c).
 * SIGTERM drains them all (one flag, the process's).
 */
#include "serve.h"

#include "log.h"
#include "storage.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct serve_thread {
    struct serve s;
    int (*run)(struct serve *);
    pthread_t tid;
    int started;
    int rc;
};

static void *serve_thread_main(void *arg)
{
    struct serve_thread *t = arg;
    struct serve *s = &t->s;
    log_ctx_use(s->logctx);
    log_ctx_worker(s->name);
    char owner[sizeof s->name + 2];
    snprintf(owner, sizeof owner, "w:%s", s->name);
    if (storage_temp_owner_set_thread(owner) < 0)
        log_warn("worker %s: its temporary files carry no owner and are never swept", s->name);
    t->rc = t->run(s);
    return NULL;
}

int serve_threads(const struct serve *base, const char *names, int (*run)(struct serve *))
{
    char buf[SERVE_SLOT_NAMES_LEN], *save = NULL;
    snprintf(buf, sizeof buf, "%s", names);
    struct serve_thread *t = calloc(SERVE_SLOTS_MAX, sizeof *t);
    if (!t) {
        log_error("worker threads: out of memory");
        return 1;
    }
    /* the process's own lines (this thread's, and those of threads that
     * join no worker's group: libav's, the CPU engine's lanes) are no one
     * worker's: they named the first, whose --name the options set */
    log_ctx_worker(NULL);
    int n = 0, rc = 0;
    for (char *name = strtok_r(buf, ",", &save); name && n < SERVE_SLOTS_MAX;
         name = strtok_r(NULL, ",", &save), n++) {
        struct serve *s = &t[n].s;
        *s = *base; /* nothing of a run yet: no connection, no engine, no lock */
        snprintf(s->name, sizeof s->name, "%s", name);
        s->claims = 0;
        t[n].run = run;
        vr_err e = { 0 };
        if (!(s->logctx = log_ctx_new()) || serve_claim_next(s, &e) < 0) {
            log_error("worker %s: %s", name, s->logctx ? e.msg : "out of memory");
            rc = 1;
            n++;
            break;
        }
        t[n].started = pthread_create(&t[n].tid, NULL, serve_thread_main, &t[n]) == 0;
        if (!t[n].started) {
            log_error("worker %s: cannot start its thread", name);
            rc = 1;
        }
    }
    log_info("%d workers as threads of process %d", n, (int)getpid());
    for (int i = 0; i < n; i++) {
        if (t[i].started) {
            pthread_join(t[i].tid, NULL);
            rc = rc || t[i].rc;
        }
        log_ctx_free(t[i].s.logctx);
    }
    free(t);
    return rc;
}

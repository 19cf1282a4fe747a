/*
 * serve_warmup.c - a serve worker warmed before its first chunk (issue 43):
 * the first job on a fresh fleet paid 15 s a chunk before its first frame
 * while 32 workers created their decoders at once. The worker makes its
 * decoder, engine and encoder probe for the format the fleet expects
 * (--warm-from FILE, else the source its host's last job read: vr:warm:
 * <host>, queue/rq_warm.h) before it takes a chunk, saying "warming" in its
 * heartbeat. The workers of one GPU warm one after another, under that
 * GPU's lock file (flock), so that their creations, which the GPU's driver
 * context serializes anyway, do not all wait on each other at once; the
 * first ones ready take chunks. Different GPUs warm side by side: one host
 * lock made a fresh 4-GPU fleet of 32 slots warm one slot at a time (the
 * first job 31% slower than the next, docs/PERF.md). CPU workers share one
 * lock ("cpu").
 */
#include "serve.h"

#include "beneath.h"
#include "clock.h"
#include "log.h"
#include "pipeline_cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "pci" and the bus id's hex digits ("0000:17:00.0" -> "pci000017000"),
 * lower case: a file name part with nothing to escape. */
static void warm_lane_pci(const char *pci, char *lane, size_t n)
{
    size_t k = (size_t)snprintf(lane, n, "pci");
    for (const char *c = pci; *c && k + 1 < n; c++)
        if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))
            lane[k++] = *c;
        else if (*c >= 'A' && *c <= 'F')
            lane[k++] = (char)(*c - 'A' + 'a');
    lane[k] = '\0';
}

/* The device whose warm-ups queue behind each other: "pci<bus id>" (the GPU
 * itself: two serve processes given different GPUs by CUDA_VISIBLE_DEVICES
 * both call theirs GPU 0, and queued behind each other when the lane was
 * named by index), "gpu<N>" where the bus id is not known, or "cpu". Tests
 * without a GPU pretend to be on one with VR_TEST_WARM_LANE (letters and
 * digits, at most 15), so that two CPU workers can stand for two GPUs. */
static void warm_lane(const struct serve *s, char *lane, size_t n)
{
    const char *t = getenv("VR_TEST_WARM_LANE");
    size_t len = t ? strlen(t) : 0;
    int ok = len > 0 && len < 16 && len < n;
    for (size_t i = 0; ok && i < len; i++)
        ok = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9');
    char pci[32];
    if (ok)
        snprintf(lane, n, "%s", t);
    else if (s->backend == SEG_CUDA && pcuda_pci_id(s->gpu, pci, sizeof pci) == 0 && pci[0])
        warm_lane_pci(pci, lane, n);
    else if (s->backend == SEG_CUDA)
        snprintf(lane, n, "gpu%d", s->gpu);
    else
        snprintf(lane, n, "cpu");
}

/* How many of a lane's warm-ups run at once: --warm-together, else 4 on a
 * GPU (an H200's warm-up took 0.96 s alone and 2.3 s four at once: its 16
 * slots ready in ~8 s instead of ~15, docs/PERF.md) and 1 for CPU workers,
 * whose warm-ups share the cores they would run on. */
static int serve_warm_together(const struct serve *s)
{
    if (s->warm_together > 0)
        return s->warm_together;
    return s->backend == SEG_CUDA ? 4 : 1;
}

/* One of the device's warm-up locks: under $XDG_RUNTIME_DIR (the user's
 * own) when set, else /tmp with the uid in the name; never through a link.
 * With `together` > 1 the lane has that many (".k" added), so that many
 * warm-ups run at once. -1 when it cannot be opened. */
static int warm_lock_open(const char *lane, int k, int together)
{
    char path[512], suffix[16] = "";
    if (together > 1)
        snprintf(suffix, sizeof suffix, ".%d", k);
    const char *run = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (run && run[0] == '/' && stat(run, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/vrseg-warm-%s%s.lock", run, lane, suffix);
    else
        snprintf(path, sizeof path, "/tmp/vrseg-warm-%u-%s%s.lock", (unsigned)getuid(), lane,
                 suffix);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        log_warn("warm-up lock %s: %s; warming without it", path, strerror(errno));
    return fd;
}

static long serve_tid(void)
{
    return (long)syscall(SYS_gettid);
}

/* A warm-up lock of the device, held: the first of its `together` locks
 * free, else (all taken) the wait on one of them, by thread id. Returns the
 * locked descriptor, or -1 (no lock: warm anyway). */
static int warm_lock(const char *lane, int together, long long *waited_ms)
{
    double t0 = clock_mono_ms();
    *waited_ms = 0;
    for (int k = 0; together > 1 && k < together; k++) {
        int fd = warm_lock_open(lane, k, together);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
    }
    /* by thread id: the pid in a worker process, each worker's own among
     * threads (--slot-mode threads), so they spread over the lane's locks;
     * each opens its own descriptor, and flock locks belong to it: threads
     * exclude each other as processes do (fcntl locks would not) */
    int fd = warm_lock_open(lane, (int)(serve_tid() % (together > 1 ? together : 1)), together);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            log_warn("warm-up lock of %s: %s; warming without it", lane, strerror(errno));
            break;
        }
    }
    *waited_ms = (long long)(clock_mono_ms() - t0);
    return fd;
}

/* The source to warm for, under the input root: its descriptor's name in
 * path (the caller closes *fd), 0; or <0 with err saying why not. */
static int warm_source_open(const struct serve *s, const char *src, int *fd, char *path,
                            size_t n, vr_err *err)
{
    char rel[STORAGE_PATH_MAX];
    int rc = beneath_rel(s->input_root, src, rel, sizeof rel);
    if (rc < 0)
        return vr_err_set(err, VR_EINVAL, "%s is not under this worker's --input-root %s", src,
                          s->input_root);
    int root = open(s->input_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return storage_errno(errno, "cannot open the input root", s->input_root, err);
    /* non-blocking, no link followed, a regular file (beneath.h) */
    *fd = beneath_open_file(root, rel, "warm-up source", src, s->input_root, NULL, err);
    close(root);
    if (*fd < 0) {
        int e = *fd;
        *fd = -1;
        return e;
    }
    beneath_fd_path(*fd, NULL, path, n);
    return 0;
}

/* This host's name as a key may hold it, or "" (then nothing is shared). */
static void warm_host(struct serve *s)
{
    char h[256] = "";
    gethostname(h, sizeof h - 1);
    if (rq_warm_host_valid(h))
        snprintf(s->host, sizeof s->host, "%s", h);
}

static void warming_done(struct serve *s)
{
    pthread_mutex_lock(&s->mu);
    s->warming = 0;
    pthread_mutex_unlock(&s->mu);
}

/* Which source: --warm-from, else the host's last job's (with the format it
 * had then, which it must still have). 1 found, 0 none. */
static int warm_pick(struct serve *s, char *src, size_t ns, char *want, size_t nw,
                     const char **from)
{
    if (s->warm_from[0]) {
        snprintf(src, ns, "%s", s->warm_from);
        *from = "--warm-from";
        return 1;
    }
    if (!s->host[0])
        return 0;
    vr_err e = { 0 };
    int rc = rq_warm_recall(s->q, s->host, src, ns, want, nw, &e);
    if (rc <= 0 && e.msg[0])
        log_warn("worker %s: no warm-up from Redis: %s", s->name, e.msg);
    *from = "this host's last job";
    return rc > 0;
}

void serve_warmup(struct serve *s)
{
    warm_host(s);
    char src[RQ_WARM_SOURCE_MAX], want[RQ_WARM_FORMAT_MAX] = "", fd_path[BENEATH_FD_PATH_MAX];
    const char *from = "";
    if (s->cold || !warm_pick(s, src, sizeof src, want, sizeof want, &from)) {
        warming_done(s);
        return;
    }
    vr_err e = { 0 };
    int fd = -1, rc = warm_source_open(s, src, &fd, fd_path, sizeof fd_path, &e);
    long long waited = 0;
    double t0 = 0;
    int lock = -1;
    char lane[24];
    warm_lane(s, lane, sizeof lane);
    char fmt[RQ_WARM_FORMAT_MAX] = "";
    double took[3] = { 0, 0, 0 }; /* decoder, engine, NVENC probe */
    if (rc == 0) {
        lock = warm_lock(lane, serve_warm_together(s), &waited);
        t0 = clock_mono_ms();
        unsigned delay = clock_test_delay_ms("VR_TEST_WARM_DELAY_MS"); /* tests: a slow warm-up */
        if (delay)
            usleep(delay * 1000u);
        struct pipe_opts o;
        memset(&o, 0, sizeof o);
        o.backend = s->backend;
        o.gpu = s->gpu;
        o.layout = -1;
        o.warm = &s->warm;
        /* the fleet's default profile: a job of another one rebuilds the
         * engine, as it would have anyway; the decoder serves either way */
        rc = config_load_profile(&o.cfg, "balanced", &e);
        if (rc == 0 && !*s->drain)
            rc = pipeline_warm_up(&o, fd_path, src, want[0] ? want : NULL, fmt, sizeof fmt, took,
                                  &e);
        if (lock >= 0)
            close(lock); /* the next worker of this GPU may warm */
    }
    if (fd >= 0) {
        beneath_unmask(&e, fd, src); /* messages name the source, not the descriptor */
        close(fd);
    }
    if (rc == 1) {
        log_info("worker %s: warmed for %s from %s (%s) in %.0f ms, after waiting %lld ms for "
                 "the %s warm-up lock (decoder %.0f, engine %.0f, NVENC probe %.0f ms)", s->name,
                 fmt, src, from, clock_mono_ms() - t0, waited, lane, took[0], took[1], took[2]);
        snprintf(s->warm_src, sizeof s->warm_src, "%s", src);
        snprintf(s->warm_fmt, sizeof s->warm_fmt, "%s", fmt);
    } else {
        log_warn("worker %s: not warmed for %s (%s): %s", s->name, src, from,
                 e.msg[0] ? e.msg : "draining");
    }
    warming_done(s);
}

void serve_warm_note(struct serve *s, const char *source)
{
    if (s->cold || !s->warm.in || !s->host[0])
        return;
    char fmt[RQ_WARM_FORMAT_MAX];
    pipeline_format(s->warm.in, fmt, sizeof fmt);
    if (!strcmp(fmt, s->warm_fmt) && !strcmp(source, s->warm_src))
        return;
    vr_err e = { 0 };
    if (rq_warm_remember(s->q, s->host, source, fmt, &e) < 0) {
        log_warn("worker %s: %s", s->name, e.msg);
        return;
    }
    snprintf(s->warm_src, sizeof s->warm_src, "%s", source);
    snprintf(s->warm_fmt, sizeof s->warm_fmt, "%s", fmt);
}

/*
 * trace.c - in-memory Chrome trace events written as JSON at close (see
 * trace.h). One mutex guards the event array; thread ids are the kernel's.
 */
#include "trace.h"
#include "clock.h"
#include "storage.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef VR_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

/* ---- storage ---- */

enum ev_kind { EV_SPAN, EV_COUNTER, EV_THREAD };

struct ev {
    enum ev_kind kind;
    const char *name;   /* static, or owned (EV_THREAD: strdup'd) */
    int tid;
    double ts, dur;     /* µs; dur is the value for EV_COUNTER */
    int64_t frame;
};

struct trace {
    pthread_mutex_t lock;
    char *path;
    struct ev *ev;
    size_t n, cap;
    uint64_t dropped;   /* events past TRACE_MAX_EVENTS */
};

int trace_create(const char *path, struct trace **out, vr_err *err)
{
    *out = NULL;
    struct trace *t = calloc(1, sizeof *t);
    if (!t)
        return vr_err_set(err, VR_ENOMEM, "trace: out of memory");
    pthread_mutex_init(&t->lock, NULL);
    t->path = strdup(path);
    if (!t->path)
        goto fail;
    *out = t;
    return 0;
fail:
    trace_free(&t);
    return vr_err_set(err, VR_ENOMEM, "trace: out of memory");
}

double trace_now_us(void)
{
    return clock_mono_us();
}

static void add(struct trace *t, const struct ev *e)
{
    pthread_mutex_lock(&t->lock);
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        struct ev *nv = t->n < TRACE_MAX_EVENTS ? realloc(t->ev, cap * sizeof *nv) : NULL;
        if (!nv) {
            t->dropped++;
            pthread_mutex_unlock(&t->lock);
            if (e->kind == EV_THREAD)
                free((char *)e->name);
            return;
        }
        t->ev = nv;
        t->cap = cap;
    }
    t->ev[t->n++] = *e;
    pthread_mutex_unlock(&t->lock);
}

static int my_tid(void)
{
    return (int)syscall(SYS_gettid);
}

/* ---- recording ---- */

void trace_thread_name(struct trace *t, const char *name)
{
    if (!t)
        return;
    char *copy = strdup(name);
    if (!copy)
        return;
    struct ev e = { EV_THREAD, copy, my_tid(), 0, 0, -1 };
    add(t, &e);
}

void trace_span(struct trace *t, const char *name, double ts_us, double dur_us, int64_t frame)
{
    if (!t)
        return;
    struct ev e = { EV_SPAN, name, my_tid(), ts_us, dur_us, frame };
    add(t, &e);
}

void trace_counter(struct trace *t, const char *name, double ts_us, double value)
{
    if (!t)
        return;
    struct ev e = { EV_COUNTER, name, my_tid(), ts_us, value, -1 };
    add(t, &e);
}

void trace_nvtx_push(const char *name)
{
#ifdef VR_HAVE_CUDA
    nvtxRangePushA(name);
#else
    (void)name;
#endif
}

void trace_nvtx_pop(void)
{
#ifdef VR_HAVE_CUDA
    nvtxRangePop();
#endif
}

/* ---- writing ---- */

/* Names are ours (literals, thread names we chose), but escape anyway so the
 * file always parses. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static int write_events(struct trace *t, FILE *f)
{
    int pid = (int)getpid();
    double t0 = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].kind != EV_THREAD && (t0 == 0 || t->ev[i].ts < t0))
            t0 = t->ev[i].ts;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%" PRIu64 "},"
               "\"traceEvents\":[\n", t->dropped);
    for (size_t i = 0; i < t->n; i++) {
        const struct ev *e = &t->ev[i];
        if (i)
            fputs(",\n", f);
        switch (e->kind) {
        case EV_THREAD:
            fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                       "\"args\":{\"name\":", pid, e->tid);
            put_str(f, e->name);
            fputs("}}", f);
            break;
        case EV_SPAN:
            fprintf(f, "{\"ph\":\"X\",\"name\":");
            put_str(f, e->name);
            fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", pid, e->tid,
                    e->ts - t0, e->dur);
            if (e->frame >= 0)
                fprintf(f, ",\"args\":{\"frame\":%" PRId64 "}", e->frame);
            fputc('}', f);
            break;
        case EV_COUNTER:
            fprintf(f, "{\"ph\":\"C\",\"name\":");
            put_str(f, e->name);
            fprintf(f, ",\"pid\":%d,\"ts\":%.3f,\"args\":{\"value\":%.6g}}", pid, e->ts - t0,
                    e->dur);
            break;
        }
    }
    fputs("\n]}\n", f);
    return ferror(f) ? -1 : 0;
}

int trace_close(struct trace **tp, vr_err *err)
{
    struct trace *t = tp ? *tp : NULL;
    if (!t)
        return 0;
    char tmp[STORAGE_PATH_MAX];
    int fd, rc = storage_temp(t->path, tmp, sizeof tmp, &fd, err);
    if (rc < 0)
        goto out;
    pthread_mutex_lock(&t->lock);
    FILE *f = fdopen(fd, "w");
    int wr = f ? write_events(t, f) : -1;
    if (f ? fclose(f) != 0 : close(fd) != 0)
        wr = -1;
    pthread_mutex_unlock(&t->lock);
    if (wr < 0) {
        storage_abort(tmp);
        rc = vr_err_set(err, VR_EIO, "trace: cannot write %s", t->path);
    } else if ((rc = storage_commit(tmp, t->path, err)) < 0) {
        vr_err_prefix(err, "trace");
    }
out:
    trace_free(tp);
    return rc;
}

void trace_free(struct trace **tp)
{
    struct trace *t = tp ? *tp : NULL;
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].kind == EV_THREAD)
            free((char *)t->ev[i].name);
    free(t->ev);
    free(t->path);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *tp = NULL;
}

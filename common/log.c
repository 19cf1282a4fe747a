/*
 * log.c - leveled logging to stderr, as text lines or JSON objects (see
 * log.h). A JSON line is written by jansson (escaping, numbers, null);
 * messages are formatted on the stack and only a long one (up to
 * LOG_LINE_MAX bytes) on the heap.
 */
#include "log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_LINE_MAX (64 * 1024) /* longer messages are cut (a bound, not a size) */
#define LOG_CTX_MAX  128  /* job ids and worker names are far shorter */

static const char *log_prog = "vrseg";
static enum log_level log_level_now = LOG_INFO;
static enum log_format log_format_now = LOG_TEXT;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* the context (log.h): the process's, or the group's a thread joined
 * (log_ctx_use), under ctx_mu; the thread's its own */
struct log_ctx {
    char worker[LOG_CTX_MAX], job[LOG_CTX_MAX];
    int chunk;
};
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static struct log_ctx ctx_proc = { .chunk = -1 };
static _Thread_local struct log_ctx *ctx_group; /* NULL: the process's */
static _Thread_local char ctx_tjob[LOG_CTX_MAX];
static _Thread_local int ctx_tchunk = -1;

void log_init(const char *prog)
{
    if (prog) {
        const char *slash = strrchr(prog, '/');
        log_prog = slash ? slash + 1 : prog;
    }
    const char *fmt = getenv("VR_LOG_FORMAT");
    if (fmt)
        log_set_format(fmt);
    const char *env = getenv("VR_LOG");
    if (!env)
        return;
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(env, level_names[i]) == 0)
            log_level_now = (enum log_level)i;
}

void log_set_level(enum log_level lvl) { log_level_now = lvl; }
enum log_level log_get_level(void) { return log_level_now; }

int log_set_format(const char *name)
{
    if (!strcmp(name, "text"))
        log_format_now = LOG_TEXT;
    else if (!strcmp(name, "json"))
        log_format_now = LOG_JSON;
    else
        return -1;
    return 0;
}

enum log_format log_get_format(void) { return log_format_now; }

static struct log_ctx *ctx_now(void)
{
    return ctx_group ? ctx_group : &ctx_proc;
}

struct log_ctx *log_ctx_new(void)
{
    struct log_ctx *c = calloc(1, sizeof *c);
    if (c)
        c->chunk = -1;
    return c;
}

void log_ctx_free(struct log_ctx *c)
{
    free(c);
}

void log_ctx_use(struct log_ctx *c)
{
    ctx_group = c;
}

struct log_ctx *log_ctx_current(void)
{
    return ctx_group;
}

void log_ctx_worker(const char *name)
{
    pthread_mutex_lock(&ctx_mu);
    snprintf(ctx_now()->worker, sizeof ctx_now()->worker, "%s", name ? name : "");
    pthread_mutex_unlock(&ctx_mu);
}

void log_ctx_process(const char *job, int chunk)
{
    pthread_mutex_lock(&ctx_mu);
    struct log_ctx *c = ctx_now();
    snprintf(c->job, sizeof c->job, "%s", job ? job : "");
    c->chunk = job ? chunk : -1;
    pthread_mutex_unlock(&ctx_mu);
}

void log_ctx_thread(const char *job, int chunk)
{
    snprintf(ctx_tjob, sizeof ctx_tjob, "%s", job ? job : "");
    ctx_tchunk = job ? chunk : -1;
}

/* ---- JSON ---- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (bad lead or continuation byte, overlong form, surrogate, > U+10FFFF). */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0], cp;
    int n;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

/* s as a jansson string: jansson refuses invalid UTF-8, so each byte that
 * is not part of a valid sequence becomes U+FFFD first, and every line
 * parses whatever libav printed. NULL for "" (the key's null) or no memory. */
static json_t *log_json_text(const char *s)
{
    if (!s[0])
        return json_null();
    size_t len = strlen(s);
    char *clean = malloc(len * 3 + 1); /* a bad byte (1) becomes 3 */
    if (!clean)
        return NULL;
    size_t k = 0;
    for (const unsigned char *u = (const unsigned char *)s; *u;) {
        int n = utf8_len(u);
        if (n == 0) {
            memcpy(clean + k, "\xef\xbf\xbd", 3);
            k += 3;
            u++;
            continue;
        }
        memcpy(clean + k, u, (size_t)n);
        k += (size_t)n;
        u += n;
    }
    json_t *v = json_stringn(clean, k);
    free(clean);
    return v;
}

/* ---- lines ---- */

/* ISO 8601, local time with its offset, to the millisecond: lines of a
 * controller and several workers can be put side by side. */
static void log_stamp(char *out, size_t n)
{
    struct timespec ts;
    struct tm tm;
    char stamp[32], zone[8];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm); /* +hhmm; ISO 8601 extended wants +hh:mm */
    snprintf(out, n, "%s.%03d%.3s:%.2s", stamp, (int)(ts.tv_nsec / 1000000), zone, zone + 3);
}

static void log_json(enum log_level lvl, const char *stamp, const char *msg)
{
    char job[LOG_CTX_MAX], worker[LOG_CTX_MAX];
    int chunk;
    pthread_mutex_lock(&ctx_mu);
    const struct log_ctx *c = ctx_now();
    snprintf(worker, sizeof worker, "%s", c->worker);
    snprintf(job, sizeof job, "%s", ctx_tjob[0] ? ctx_tjob : c->job);
    chunk = ctx_tjob[0] ? ctx_tchunk : c->chunk;
    pthread_mutex_unlock(&ctx_mu);

    /* "o" steals each value (json_pack fails, freeing the rest, on a NULL) */
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "time", stamp, "level",
                          level_names[lvl], "component", log_json_text(log_prog), "job",
                          log_json_text(job), "chunk",
                          job[0] && chunk >= 0 ? json_integer(chunk) : json_null(), "worker",
                          log_json_text(worker), "message", log_json_text(msg));
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line)
        fprintf(stderr, "%s\n", line);
    else /* out of memory: a line that still parses */
        fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"component\":null,"
                "\"job\":null,\"chunk\":null,\"worker\":null,\"message\":null}\n",
                stamp, level_names[lvl]);
    free(line);
    json_decref(o);
}

/* The message of fmt: in buf (n bytes) when it fits, else in a heap copy
 * of at most LOG_LINE_MAX bytes (*heap, which the caller frees). */
static const char *log_format_msg(char *buf, size_t n, char **heap, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(buf, n, fmt, ap);
    *heap = NULL;
    if (len >= 0 && (size_t)len >= n) {
        size_t want = (size_t)len < LOG_LINE_MAX ? (size_t)len + 1 : LOG_LINE_MAX;
        if ((*heap = malloc(want)))
            vsnprintf(*heap, want, fmt, again);
    }
    va_end(again);
    return *heap ? *heap : buf;
}

/* A text line; a thread of a group (one of several workers in one process)
 * names its worker, so that their lines can be told apart. */
static void log_text(enum log_level lvl, const char *stamp, const char *msg)
{
    char worker[LOG_CTX_MAX] = "";
    if (ctx_group) {
        pthread_mutex_lock(&ctx_mu);
        snprintf(worker, sizeof worker, "%s", ctx_group->worker);
        pthread_mutex_unlock(&ctx_mu);
    }
    fprintf(stderr, "%s %s: %s: %s%s%s%s\n", stamp, log_prog, level_names[lvl],
            worker[0] ? "[" : "", worker, worker[0] ? "] " : "", msg);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    if (lvl > log_level_now)
        return;
    char buf[1024], stamp[64], *heap;
    va_list ap;
    va_start(ap, fmt);
    const char *line = log_format_msg(buf, sizeof buf, &heap, fmt, ap);
    va_end(ap);
    log_stamp(stamp, sizeof stamp);
    if (log_format_now == LOG_JSON)
        log_json(lvl, stamp, line);
    else
        log_text(lvl, stamp, line);
    free(heap);
}

void log_say(enum log_level lvl, const char *fmt, ...)
{
    char buf[1024], stamp[64], *heap;
    va_list ap;
    va_start(ap, fmt);
    char *line = (char *)log_format_msg(buf, sizeof buf, &heap, fmt, ap);
    va_end(ap);
    if (log_format_now == LOG_TEXT) {
        fputs(line, stderr);
    } else {
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        log_stamp(stamp, sizeof stamp);
        log_json(lvl, stamp, line);
    }
    free(heap);
}

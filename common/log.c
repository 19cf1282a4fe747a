/*
 * log.c - leveled logging to stderr, as text lines or JSON objects (see
 * log.h). A JSON line is built in one bounded buffer: the message (at most
 * LOG_LINE_MAX bytes) grows at most sixfold when escaped, so it always fits.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_LINE_MAX 1024 /* longer messages are cut */
#define LOG_CTX_MAX  128  /* job ids and worker names are far shorter */

static const char *log_prog = "vrseg";
static enum log_level log_level_now = LOG_INFO;
static enum log_format log_format_now = LOG_TEXT;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* the context (log.h): the process's under ctx_mu, the thread's its own */
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static char ctx_worker[LOG_CTX_MAX], ctx_job[LOG_CTX_MAX];
static int ctx_chunk = -1;
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

void log_ctx_worker(const char *name)
{
    pthread_mutex_lock(&ctx_mu);
    snprintf(ctx_worker, sizeof ctx_worker, "%s", name ? name : "");
    pthread_mutex_unlock(&ctx_mu);
}

void log_ctx_process(const char *job, int chunk)
{
    pthread_mutex_lock(&ctx_mu);
    snprintf(ctx_job, sizeof ctx_job, "%s", job ? job : "");
    ctx_chunk = job ? chunk : -1;
    pthread_mutex_unlock(&ctx_mu);
}

void log_ctx_thread(const char *job, int chunk)
{
    snprintf(ctx_tjob, sizeof ctx_tjob, "%s", job ? job : "");
    ctx_tchunk = job ? chunk : -1;
}

/* ---- JSON ---- */

struct jbuf {
    char *p;
    size_t n, cap; /* cap includes room for the final '\0' */
};

static void jb_put(struct jbuf *b, const char *s, size_t n)
{
    if (b->n + n >= b->cap)
        n = b->cap - 1 - b->n;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void jb_puts(struct jbuf *b, const char *s) { jb_put(b, s, strlen(s)); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (bad lead or continuation byte, overlong form, surrogate, > U+10FFFF):
 * such bytes become U+FFFD, so every line parses whatever libav printed. */
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

/* s as a JSON string, quotes included. */
static void jb_str(struct jbuf *b, const char *s)
{
    jb_put(b, "\"", 1);
    for (const unsigned char *u = (const unsigned char *)s; *u;) {
        char esc[8];
        int n = utf8_len(u);
        if (n == 0) {
            jb_puts(b, "\\ufffd");
            u++;
            continue;
        }
        if (*u == '"' || *u == '\\') {
            esc[0] = '\\', esc[1] = (char)*u;
            jb_put(b, esc, 2);
        } else if (*u == '\n') {
            jb_puts(b, "\\n");
        } else if (*u == '\t') {
            jb_puts(b, "\\t");
        } else if (*u == '\r') {
            jb_puts(b, "\\r");
        } else if (*u < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *u);
            jb_puts(b, esc);
        } else {
            jb_put(b, (const char *)u, (size_t)n);
        }
        u += n;
    }
    jb_put(b, "\"", 1);
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
    snprintf(worker, sizeof worker, "%s", ctx_worker);
    snprintf(job, sizeof job, "%s", ctx_tjob[0] ? ctx_tjob : ctx_job);
    chunk = ctx_tjob[0] ? ctx_tchunk : ctx_chunk;
    pthread_mutex_unlock(&ctx_mu);

    char out[LOG_LINE_MAX * 6 + LOG_CTX_MAX * 12 + 256], num[16];
    struct jbuf b = { out, 0, sizeof out };
    out[0] = '\0';
    jb_puts(&b, "{\"time\":");
    jb_str(&b, stamp);
    jb_puts(&b, ",\"level\":");
    jb_str(&b, level_names[lvl]);
    jb_puts(&b, ",\"component\":");
    jb_str(&b, log_prog);
    jb_puts(&b, ",\"job\":");
    if (job[0])
        jb_str(&b, job);
    else
        jb_puts(&b, "null");
    jb_puts(&b, ",\"chunk\":");
    snprintf(num, sizeof num, "%d", chunk);
    jb_puts(&b, job[0] && chunk >= 0 ? num : "null");
    jb_puts(&b, ",\"worker\":");
    if (worker[0])
        jb_str(&b, worker);
    else
        jb_puts(&b, "null");
    jb_puts(&b, ",\"message\":");
    jb_str(&b, msg);
    fprintf(stderr, "%s}\n", out);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    if (lvl > log_level_now)
        return;
    char line[LOG_LINE_MAX], stamp[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_stamp(stamp, sizeof stamp);
    if (log_format_now == LOG_JSON)
        log_json(lvl, stamp, line);
    else
        fprintf(stderr, "%s %s: %s: %s\n", stamp, log_prog, level_names[lvl], line);
}

void log_say(enum log_level lvl, const char *fmt, ...)
{
    char line[LOG_LINE_MAX], stamp[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (log_format_now == LOG_TEXT) {
        fputs(line, stderr);
        return;
    }
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    log_stamp(stamp, sizeof stamp);
    log_json(lvl, stamp, line);
}

/*
 * log.c - leveled logging to stderr (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_prog = "vrseg";
static enum log_level log_level_now = LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(const char *prog)
{
    if (prog) {
        const char *slash = strrchr(prog, '/');
        log_prog = slash ? slash + 1 : prog;
    }
    const char *env = getenv("VR_LOG");
    if (!env)
        return;
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(env, level_names[i]) == 0)
            log_level_now = (enum log_level)i;
}

void log_set_level(enum log_level lvl) { log_level_now = lvl; }
enum log_level log_get_level(void) { return log_level_now; }

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    if (lvl > log_level_now)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* ISO 8601, local time with its offset, to the millisecond: lines of a
     * controller and several workers can be put side by side. */
    struct timespec ts;
    struct tm tm;
    char stamp[40], zone[8];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm); /* +hhmm; ISO 8601 extended wants +hh:mm */
    fprintf(stderr, "%s.%03ld%.3s:%.2s %s: %s: %s\n", stamp, ts.tv_nsec / 1000000, zone, zone + 3,
            log_prog, level_names[lvl], line);
}

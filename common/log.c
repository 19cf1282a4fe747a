/*
 * log.c - leveled logging to stderr (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    fprintf(stderr, "%s: %s: %s\n", log_prog, level_names[lvl], line);
}

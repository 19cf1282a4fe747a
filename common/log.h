/*
 * log.h - leveled logging to stderr.
 *
 * Lines look like "2026-11-24T18:17:00.123+01:00 vr-worker: warn: chunk 3:
 * retrying" (local time, to the ms). The level comes from
 * VR_LOG (error|warn|info|debug, default info) or log_set_level(); the program
 * name from log_init(). Thread-safe: each line is written with one fprintf.
 */
#ifndef VR_LOG_H
#define VR_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the program name shown in front of each line and reads VR_LOG. */
void log_init(const char *prog);
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);

void log_msg(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
